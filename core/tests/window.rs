//! SPEC §24: a config from `Config::at_most(cap, window, burst)` admits at most `cap` permits in
//! ANY window of length `window`, on every kind (single limiter, bands, keyed table), on a
//! nanosecond clock and on a 32768 Hz one, whatever the schedule: greedy senders, bursts after
//! quiet times, frames of random sizes.
//!
//! The checker is SPEC's sentence, not the GCRA bound: every record of admissions is searched
//! for a window of length `window` holding more than `cap` permits. A window is measured as the
//! clock measures time: two readings are in one window when they are at most `window` apart, that
//! is `floor(window * hz)` ticks (the limiter sees nothing finer). Checking the windows that start
//! at an admission is enough: any window holding admissions can be slid forward to its first one
//! without losing any.

use core::time::Duration;

use proptest::prelude::*;
use ritmo_core::keyed::KeyedLimiter;
use ritmo_core::{Bands, Config, ManualClock, RateLimiter};

/// The most permits any window of `window_ticks` ticks holds in `uses` (reading, permits).
fn busiest_window(uses: &[(u64, u32)], window_ticks: u64) -> u64 {
    let mut uses = uses.to_vec();
    uses.sort_by_key(|u| u.0);
    let mut most = 0;
    for (i, &(start, _)) in uses.iter().enumerate() {
        let held: u64 = uses[i..]
            .iter()
            .take_while(|u| u.0 - start <= window_ticks)
            .map(|u| u64::from(u.1))
            .sum();
        most = most.max(held);
    }
    most
}

/// `window` in whole ticks of a `HZ` clock, rounded down: the longest distance between two
/// readings that lie in one window of that length.
fn ticks_in<const HZ: u64>(window: Duration) -> u64 {
    u64::try_from(window.as_nanos() * u128::from(HZ) / 1_000_000_000).unwrap()
}

/// One step of a schedule: let time pass, then ask for `k` permits (for `key`, on a table).
#[derive(Debug, Clone, Copy)]
struct Step {
    advance: u64,
    k: u32,
    key: u8,
}

/// A window config and a schedule for it.
#[derive(Debug, Clone)]
struct Case {
    cap: u32,
    burst: u32,
    window_ticks: u64,
    steps: Vec<Step>,
}

impl Case {
    /// The window as a duration on a `HZ` clock (rounded down to the nanosecond).
    fn window<const HZ: u64>(&self) -> Duration {
        let ns = u128::from(self.window_ticks) * 1_000_000_000 / u128::from(HZ);
        Duration::from_nanos(u64::try_from(ns).unwrap())
    }
}

/// A case: a cap, a burst below it, a window of `64..20_000` ticks, and 400 steps of one of three
/// shapes: greedy (asks again before a permit can be back), bursty (quiet for one to three
/// windows, then a rush), or random gaps up to a window. Frames are one permit, the whole burst,
/// or of random size up to the burst.
fn case(keys: u8) -> impl Strategy<Value = Case> {
    (2u32..=64, 64u64..=20_000)
        .prop_flat_map(|(cap, window_ticks)| {
            (Just(cap), 1..cap, Just(window_ticks), 0u8..3, 0u8..3)
        })
        .prop_flat_map(move |(cap, burst, window_ticks, shape, frames)| {
            let gap = window_ticks / u64::from(cap);
            let advance = match shape {
                0 => (0..=gap.max(1)).boxed(),
                1 => prop_oneof![
                    8 => Just(0u64),
                    1 => window_ticks..=3 * window_ticks,
                ]
                .boxed(),
                _ => (0..=window_ticks).boxed(),
            };
            let k = match frames {
                0 => Just(1u32).boxed(),
                1 => Just(burst).boxed(),
                _ => (1..=burst).boxed(),
            };
            let steps = prop::collection::vec(
                (advance, k, 0..keys).prop_map(|(advance, k, key)| Step { advance, k, key }),
                400,
            );
            (Just(cap), Just(burst), Just(window_ticks), steps)
        })
        .prop_map(|(cap, burst, window_ticks, steps)| Case {
            cap,
            burst,
            window_ticks,
            steps,
        })
}

/// A single limiter of the case's window config on a `HZ` clock: no window over the cap.
fn single<const HZ: u64>(case: &Case) -> Result<(), TestCaseError> {
    let window = case.window::<HZ>();
    let config = Config::at_most(case.cap, window, case.burst).unwrap();
    let clock = ManualClock::<HZ>::with_reading(1_000);
    let limiter = RateLimiter::with_clock("window", config, &clock);
    let mut uses = Vec::new();
    for step in &case.steps {
        clock.advance_ticks(step.advance);
        if limiter.try_acquire_n(step.k).is_ok() {
            uses.push((ritmo_core::Clock::now(&clock), step.k));
        }
    }
    let most = busiest_window(&uses, ticks_in::<HZ>(window));
    prop_assert!(
        most <= u64::from(case.cap),
        "{most} permits in one window, cap {}",
        case.cap
    );
    Ok(())
}

/// Two bands, each a window config (the case's, and twice the cap over three windows): each
/// band's windows within its own cap.
fn bands<const HZ: u64>(case: &Case) -> Result<(), TestCaseError> {
    let window = case.window::<HZ>();
    let long = window * 3;
    let configs = [
        Config::at_most(case.cap, window, case.burst).unwrap(),
        Config::at_most(2 * case.cap, long, case.burst).unwrap(),
    ];
    let clock = ManualClock::<HZ>::with_reading(1_000);
    let bands = Bands::with_clock("window", configs, &clock);
    let mut uses = Vec::new();
    for step in &case.steps {
        clock.advance_ticks(step.advance);
        if bands.try_acquire_n(step.k).is_ok() {
            uses.push((ritmo_core::Clock::now(&clock), step.k));
        }
    }
    let first = busiest_window(&uses, ticks_in::<HZ>(window));
    let second = busiest_window(&uses, ticks_in::<HZ>(long));
    prop_assert!(first <= u64::from(case.cap), "{first} in one window");
    prop_assert!(
        second <= u64::from(2 * case.cap),
        "{second} in three windows"
    );
    Ok(())
}

/// A keyed table of the case's window config, four keys in four slots: each key's windows
/// within the cap.
fn keyed<const HZ: u64>(case: &Case) -> Result<(), TestCaseError> {
    let window = case.window::<HZ>();
    let config = Config::at_most(case.cap, window, case.burst).unwrap();
    let clock = ManualClock::<HZ>::with_reading(1_000);
    let table: KeyedLimiter<u8, _, 4> = KeyedLimiter::with_clock("window", config, &clock, 7);
    let mut uses = vec![Vec::new(); 4];
    for step in &case.steps {
        clock.advance_ticks(step.advance);
        if table.try_acquire_n(&step.key, step.k).is_ok() {
            uses[usize::from(step.key)].push((ritmo_core::Clock::now(&clock), step.k));
        }
    }
    for (key, uses) in uses.iter().enumerate() {
        let most = busiest_window(uses, ticks_in::<HZ>(window));
        prop_assert!(
            most <= u64::from(case.cap),
            "key {key}: {most} in one window"
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn a_single_window_config_never_exceeds_its_cap_in_any_window(case in case(1)) {
        single::<1_000_000_000>(&case)?;
        single::<32_768>(&case)?;
    }

    #[test]
    fn window_config_bands_never_exceed_a_cap_in_any_window(case in case(1)) {
        bands::<1_000_000_000>(&case)?;
        bands::<32_768>(&case)?;
    }

    #[test]
    fn a_keyed_window_config_never_exceeds_its_cap_in_any_window(case in case(4)) {
        keyed::<1_000_000_000>(&case)?;
        keyed::<32_768>(&case)?;
    }
}

/// One-second frames sent as often as the limiter allows for three hours: the busiest closed
/// hour (both ends in it) and the busiest hour without its end.
fn greedy_hour<const HZ: u64>(config: Config) -> (u64, u64) {
    let clock = ManualClock::<HZ>::with_reading(0);
    let limiter = RateLimiter::with_clock("greedy", config, &clock);
    let second = ticks_in::<HZ>(Duration::from_secs(1));
    let mut uses = Vec::new();
    for _ in 0..3 * 3600 {
        if limiter.try_acquire().is_ok() {
            uses.push((ritmo_core::Clock::now(&clock), 1));
        }
        clock.advance_ticks(second);
    }
    let hour = ticks_in::<HZ>(Duration::from_secs(3600));
    (busiest_window(&uses, hour), busiest_window(&uses, hour - 1))
}

/// The checker finds what SPEC §24 says: "36 per hour" lets 71 one-second frames start in some
/// hour (1.97 % on air; 72 counting a frame at each end), and the window config of the same cap
/// exactly 36 even counting both ends, on both clocks.
#[test]
fn a_greedy_sender_gets_twice_the_cap_from_a_per_period_config_and_the_cap_from_a_window_config() {
    let hour = Duration::from_secs(3600);
    let per_period = Config::new(36, hour).unwrap();
    assert_eq!(greedy_hour::<1_000_000_000>(per_period), (72, 71));
    assert_eq!(greedy_hour::<32_768>(per_period), (72, 71));
    // Burst 1 spaces frames 102.9 s apart, which a sender trying once a second meets at 103 s:
    // 35 in the hour. Bursts of 18 (one every 200 s) and 35 (one every hour) fill the cap.
    for (burst, most) in [(1, 35), (18, 36), (35, 36)] {
        let window = Config::at_most(36, hour, burst).unwrap();
        assert_eq!(
            greedy_hour::<1_000_000_000>(window).0,
            most,
            "burst {burst}"
        );
        assert_eq!(greedy_hour::<32_768>(window).0, most, "burst {burst}");
    }
}

/// `max_in_window` is the bound the limiter keeps, and what a window config promises.
#[test]
fn max_in_window_states_the_bound() {
    let hour = Duration::from_secs(3600);
    assert_eq!(Config::new(36, hour).unwrap().max_in_window(hour), 72);
    for (cap, burst) in [
        (36, 1),
        (36, 18),
        (36, 35),
        (36_000, 2_000),
        (1_000_000, 999_999),
    ] {
        let config = Config::at_most(cap, hour, burst).unwrap();
        assert_eq!(config.permits(), burst);
        assert!(config.max_in_window(hour) <= u64::from(cap));
        // and no needless loss: the cap less at most one permit of rounding
        assert!(
            config.max_in_window(hour) + 1 >= u64::from(cap),
            "{cap} {burst}"
        );
    }
}

/// Bad window configs are errors with their codes.
#[test]
fn bad_window_configs_are_errors() {
    use ritmo_core::ErrorCode;
    let s = Duration::from_secs(1);
    assert_eq!(
        Config::at_most(10, s, 0).unwrap_err().code(),
        ErrorCode::InvalidPermits
    );
    assert_eq!(
        Config::at_most(10, s, 10).unwrap_err().code(),
        ErrorCode::BurstNotBelowCap
    );
    assert_eq!(
        Config::at_most(10, s, 11).unwrap_err().code(),
        ErrorCode::BurstNotBelowCap
    );
    assert_eq!(
        Config::at_most(0, s, 1).unwrap_err().code(),
        ErrorCode::BurstNotBelowCap
    );
    assert_eq!(
        Config::at_most(10, Duration::ZERO, 1).unwrap_err().code(),
        ErrorCode::ZeroPeriod
    );
    // T is rounded up to a whole nanosecond: never faster than the cap, never "too fast".
    let nano = Duration::from_nanos(10);
    assert_eq!(
        Config::at_most(100, nano, 1).unwrap().max_in_window(nano),
        11
    );
    assert_eq!(
        Config::at_most(u32::MAX, Duration::MAX, 1)
            .unwrap()
            .max_in_window(Duration::MAX),
        u64::from(u32::MAX) - 1
    );
}

/// The `const_window_config!(cap, Duration::from_secs(s), burst)` calls a guide shows (its window
/// a literal), read from its text, with the `max_wait` it gives them (`with_max_wait(Duration::from_secs(w))`).
fn duty_cycles_in(path: &str) -> Vec<(u32, u64, u32, u64)> {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let text = std::fs::read_to_string(format!("{root}/{path}")).unwrap();
    let number = |s: &str| s.trim().replace('_', "").parse::<u64>().unwrap();
    let mut found = Vec::new();
    for line in text.lines() {
        let Some(at) = line.find("const_window_config!(") else {
            continue;
        };
        let rest = &line[at + "const_window_config!(".len()..];
        let (cap, rest) = rest.split_once(',').unwrap();
        // The airtime example (`HOUR`, frames of many sizes) checks every window in its own
        // doctest; this test takes the one-second-frame examples.
        let Some(rest) = rest.trim().strip_prefix("Duration::from_secs(") else {
            continue;
        };
        let (secs, rest) = rest.split_once(')').unwrap();
        let (burst, rest) = rest.trim_start_matches(',').split_once(')').unwrap();
        let wait = rest
            .split_once("with_max_wait(Duration::from_secs(")
            .map_or(0, |(_, w)| number(w.split_once(')').unwrap().0));
        found.push((
            u32::try_from(number(cap)).unwrap(),
            number(secs),
            u32::try_from(number(burst)).unwrap(),
            wait,
        ));
    }
    found
}

/// A sender of one-second frames under `config` for four windows: it reserves (waiting up to the
/// config's `max_wait`), sends at its slot, and tries again `try_every` ticks later (with
/// `try_every == 1`, as soon as a slot is within reach). Returns the busiest window.
fn waiting_sender<const HZ: u64>(config: Config, window: Duration, try_every: u64) -> u64 {
    let clock = ManualClock::<HZ>::with_reading(5);
    let limiter = RateLimiter::with_clock("guide", config, &clock);
    let end = ticks_in::<HZ>(window) * 4;
    let mut uses = Vec::new();
    while ritmo_core::Clock::now(&clock) < end {
        match limiter.reserve() {
            Ok(r) => {
                let slot = r.slot();
                let now = ritmo_core::Clock::now(&clock);
                clock.advance_ticks(slot.saturating_sub(now));
                r.commit();
                uses.push((slot, 1));
                clock.advance_ticks(try_every);
            }
            // refused: tries again after `try_every`, or (greedy, `try_every == 1`) as soon as
            // its slot is within reach
            Err(e) if try_every == 1 => {
                let reach = e.retry_after().saturating_sub(config.max_wait());
                clock.advance_ticks(ticks_in::<HZ>(reach).max(1));
            }
            Err(_) => clock.advance_ticks(try_every),
        }
    }
    busiest_window(&uses, ticks_in::<HZ>(window))
}

/// The duty-cycle examples of the guides (the firmware guide, the Embassy adapter's README and its
/// crate docs) use the window config, and their own numbers keep the cap in every window: a sender
/// that waits for its slots, trying as often as it can or once in a while, on both clocks.
#[test]
fn the_guides_duty_cycle_examples_keep_their_cap_in_every_window() {
    let mut seen = 0;
    for path in [
        "src/guide/firmware.md",
        "embassy-adapter/README.md",
        "embassy-adapter/src/lib.rs",
    ] {
        let found = duty_cycles_in(path);
        assert!(!found.is_empty(), "{path} shows no window config");
        for (cap, secs, burst, wait) in found {
            let window = Duration::from_secs(secs);
            let config = Config::at_most(cap, window, burst)
                .unwrap()
                .with_max_wait(Duration::from_secs(wait));
            let second = 1_000_000_000;
            for try_every in [1, second, 7 * second] {
                let ns = waiting_sender::<1_000_000_000>(config, window, try_every);
                assert!(
                    ns <= u64::from(cap),
                    "{path}: {ns} in one window, cap {cap}"
                );
                let rtc = waiting_sender::<32_768>(config, window, try_every * 32_768 / second + 1);
                assert!(
                    rtc <= u64::from(cap),
                    "{path}: {rtc} in one window, cap {cap}"
                );
            }
            // and the cap is reached: the example gives what it promises
            assert_eq!(
                waiting_sender::<1_000_000_000>(config, window, 1),
                u64::from(cap)
            );
            seen += 1;
        }
    }
    // the firmware guide's radio and per-device downlinks (state across resets), the Embassy
    // adapter's README and crate docs
    assert_eq!(seen, 4);
}
