//! Behaviours of core's rules that no other test pinned (each found by mutation testing: a
//! change to the rule that every other test let through). One test per behaviour, named for it.

use core::time::Duration;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::vec::Vec;

use ritmo_core::keyed::KeyedLimiter;
use ritmo_core::{
    AcquireError, AdvanceClock, Bands, Clock, Config, Event, Listener, ManualClock, RateLimiter,
    Reason,
};

/// Records every event it hears; wants `Waiting` events too.
#[derive(Default)]
struct Recorder(Mutex<Vec<Event>>);

impl Listener for Recorder {
    fn on_event(&self, event: &Event) {
        self.0.lock().unwrap().push(*event);
    }
    fn wants_waiting(&self) -> bool {
        true
    }
}

impl Recorder {
    fn leak() -> &'static Recorder {
        Box::leak(Box::default())
    }
    fn take(&self) -> Vec<Event> {
        std::mem::take(&mut self.0.lock().unwrap())
    }
    fn waiting(&self) -> usize {
        self.take()
            .iter()
            .filter(|e| matches!(e, Event::Waiting { .. }))
            .count()
    }
}

fn per_second(n: u32) -> Config {
    Config::new(n, Duration::from_secs(1)).unwrap()
}

/// Threads racing on one limiter under a frozen clock: exactly `permits` calls pass, however the
/// compare-and-swaps interleave, and every refusal reaches the listener.
/// Runs `body` on `threads` threads released together by a spin (a blocking barrier wakes them
/// microseconds apart, longer than a call), so that they collide on a limiter's state word: this
/// thread and `threads - 1` others, so that no thread that only waits holds a core. As many
/// threads as a small machine has cores (2), each making thousands of calls: more threads than
/// cores mostly take turns instead of colliding.
fn collide(threads: u32, body: impl Fn() + Sync) {
    // One race at a time: two tests racing at once on two cores would take turns, not collide.
    static ONE_RACE: Mutex<()> = Mutex::new(());
    let _one_race = ONE_RACE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let (ready, go) = (AtomicU32::new(0), std::sync::atomic::AtomicBool::new(false));
    std::thread::scope(|s| {
        for _ in 1..threads {
            s.spawn(|| {
                ready.fetch_add(1, Ordering::AcqRel);
                while !go.load(Ordering::Acquire) {
                    std::hint::spin_loop();
                }
                body();
            });
        }
        while ready.load(Ordering::Acquire) < threads - 1 {
            std::hint::spin_loop();
        }
        go.store(true, Ordering::Release);
        body();
    });
}

#[test]
fn racing_threads_admit_exactly_the_burst_and_report_every_refusal() {
    struct Count(AtomicU32);
    impl Listener for Count {
        fn on_event(&self, event: &Event) {
            if let Event::Rejected(_) = event {
                self.0.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    // Rounds on a fresh limiter, the threads released together ([`collide`]) and calling twice
    // as often as it has permits between them: thousands of calls lose the state word's
    // compare-and-swap and decide again (admitted, or refused at the end) after the backoff.
    let (threads, permits) = (2, 4_096);
    for round in 0..50 {
        let rejected: &'static Count = Box::leak(Box::new(Count(AtomicU32::new(0))));
        let clock = ManualClock::new();
        let limiter = RateLimiter::new("race", per_second(permits), &clock).with_listener(rejected);
        let (admitted, refused) = (AtomicU32::new(0), AtomicU32::new(0));
        collide(threads, || {
            for _ in 0..2 * permits / threads {
                match limiter.try_acquire() {
                    Ok(()) => admitted.fetch_add(1, Ordering::Relaxed),
                    Err(_) => refused.fetch_add(1, Ordering::Relaxed),
                };
            }
        });
        assert_eq!(admitted.into_inner(), permits, "round {round}");
        assert_eq!(refused.load(Ordering::Relaxed), permits);
        assert_eq!(
            rejected.0.load(Ordering::Relaxed),
            refused.into_inner(),
            "round {round}"
        );
    }
}

/// At the very end of the clock's range a call is rate limited, never "invalid permits".
#[test]
fn the_end_of_the_clock_range_is_a_rate_limit() {
    let clock = ManualClock::starting_at(u64::MAX);
    let limiter = RateLimiter::new("end", per_second(5), &clock);
    assert!(matches!(
        limiter.try_acquire_n(1),
        Err(AcquireError::RateLimited(_))
    ));
}

/// A call's own `max_wait` longer than the clock's units can count (2^63 s on a 1 Hz clock, whose
/// readings are shifted into finer units) bounds nothing: the call waits its 1 s. Its bound in
/// units saturates; it never wraps to a few units, which would refuse the call.
#[test]
fn a_max_wait_beyond_the_clocks_units_bounds_nothing() {
    let clock = ManualClock::<1>::with_reading(0);
    let limiter = RateLimiter::new("slow", per_second(1), &clock);
    limiter.try_acquire().unwrap();
    let r = limiter
        .reserve_n_within(1, Duration::from_secs(1 << 63))
        .expect("a 1 s wait is within 2^63 s");
    assert_eq!(r.wait_time(), Duration::from_secs(1));
    let bands = Bands::new("slow", [per_second(1), per_second(2)], &clock);
    bands.try_acquire().unwrap();
    let r = bands
        .reserve_n_within(1, Duration::from_secs(1 << 63))
        .expect("a 1 s wait is within 2^63 s");
    assert_eq!(r.wait_time(), Duration::from_secs(1));
}

#[test]
fn bands_name_themselves_in_their_errors() {
    let clock = ManualClock::new();
    let bands = Bands::new("radio", [per_second(1), per_second(2)], &clock);
    assert_eq!(bands.id(), "radio");
    bands.try_acquire().unwrap();
    assert_eq!(bands.try_acquire().unwrap_err().id(), "radio");
}

#[cfg(feature = "counters")]
#[test]
fn bands_count_admitted_calls() {
    let clock = ManualClock::new();
    let bands = Bands::new("radio", [per_second(2), per_second(5)], &clock);
    bands.try_acquire().unwrap();
    bands.try_acquire().unwrap();
    assert!(bands.try_acquire().is_err());
    assert_eq!(bands.admitted_count(), 2);
}

/// A call that waits is published as `Waiting` (and not counted as admitted at once); one that
/// does not wait is not.
#[test]
fn bands_publish_waiting_calls() {
    let recorder = Recorder::leak();
    let clock = ManualClock::new();
    let bands = Bands::new("radio", [per_second(1), per_second(10)], &clock)
        .with_max_wait(Duration::from_secs(2))
        .with_listener(recorder);
    bands.reserve().unwrap().commit();
    assert_eq!(recorder.waiting(), 0);
    let r = bands.reserve_n(1).unwrap();
    assert_eq!(r.permits(), 1);
    assert_eq!(
        recorder.take(),
        [Event::Waiting {
            id: "radio",
            permits: 1,
            wait: Duration::from_secs(1)
        }]
    );
    r.commit();
}

#[test]
fn bands_wait_for_several_permits_within_max_wait() {
    let clock = ManualClock::new();
    let bands = Bands::new(
        "radio",
        [
            per_second(2),
            Config::new(10, Duration::from_secs(60)).unwrap(),
        ],
        &clock,
    )
    .with_max_wait(Duration::from_secs(5));
    bands.acquire_n_advancing(2).unwrap();
    bands.acquire_n_advancing(2).unwrap();
    assert_eq!(clock.now(), 1_000_000_000);
    assert!(matches!(
        bands.acquire_n_advancing(3),
        Err(AcquireError::InvalidPermits(_))
    ));
    assert!(matches!(bands.acquire_n_with(2, &mut AdvanceClock), Ok(())));
    // 6 of the 10 per minute are spent: 4 more come a second apart; the next pair would wait
    // 8 s for the per-minute band (its 11th permit comes 6 s per permit after the first),
    // beyond max_wait.
    for _ in 0..2 {
        bands.acquire_n_advancing(2).unwrap();
    }
    assert!(matches!(
        bands.acquire_n_advancing(2),
        Err(AcquireError::RateLimited(e)) if e.reason() == Reason::NoPermitInTime
    ));
}

#[test]
fn a_bands_reservation_knows_its_permits_and_when_it_is_ready() {
    let clock = ManualClock::new();
    let bands = Bands::new("radio", [per_second(2), per_second(4)], &clock)
        .with_max_wait(Duration::from_secs(1));
    bands.try_acquire_n(2).unwrap();
    let r = bands.reserve_n(2).unwrap();
    assert_eq!(r.permits(), 2);
    assert!(!r.is_ready());
    clock.advance(Duration::from_millis(999));
    assert!(!r.is_ready());
    clock.advance(Duration::from_millis(1));
    assert!(r.is_ready());
    r.commit();
}

/// Dropping an uncommitted bands reservation returns its permits to every band.
#[test]
fn a_dropped_bands_reservation_returns_its_permits() {
    let recorder = Recorder::leak();
    let clock = ManualClock::new();
    let bands = Bands::new("radio", [per_second(2), per_second(4)], &clock)
        .with_max_wait(Duration::from_secs(1))
        .with_listener(recorder);
    bands.try_acquire().unwrap();
    let before = bands.available_permits_per_band();
    {
        let _r = bands.reserve_n(2).unwrap();
    }
    assert_eq!(bands.available_permits_per_band(), before);
    assert!(recorder.take().contains(&Event::Released {
        id: "radio",
        permits: 2,
        reason: Reason::Cancelled,
        returned: true
    }));
}

#[cfg(feature = "reconfigure")]
mod reconfigured {
    use super::*;

    /// Every kind turned off the moment its permits were spent, then on again with the same
    /// numbers, comes back with all its permits: off, it counted nothing and had them available
    /// (SPEC §14: idle is new, enabling starts it afresh), whatever its state said before.
    #[test]
    fn off_and_on_again_gives_every_kind_its_permits() {
        let clock = ManualClock::new();
        let limiter = RateLimiter::new("one", per_second(3), &clock);
        limiter.try_acquire_n(3).unwrap();
        limiter.reconfigure(per_second(3).with_enabled(false));
        limiter.reconfigure(per_second(3));
        assert_eq!(limiter.available_permits(), 3);
        let keyed: KeyedLimiter<u8, _, 4> =
            KeyedLimiter::with_clock("keyed", per_second(3), &clock, 7);
        keyed.try_acquire_n(&1, 3).unwrap();
        keyed.reconfigure(per_second(3).with_enabled(false));
        keyed.reconfigure(per_second(3));
        assert_eq!(keyed.available_permits(&1), 3);
        let bands = Bands::new("bands", [per_second(3), per_second(5)], &clock);
        bands.try_acquire_n(3).unwrap();
        bands.reconfigure([per_second(3).with_enabled(false), per_second(5)]);
        bands.reconfigure([per_second(3), per_second(5)]);
        assert_eq!(bands.available_permits_per_band(), [3, 2]);
    }

    /// A burst spent to the last permit (nothing owed beyond it) and changed to a slower rate:
    /// none available now, and the progress towards the next permit carries over, capped at the
    /// new interval (SPEC §14; test-support's model, which says so, agrees). 10 per second spent
    /// at 0, changed to 2 per second: the next permit at 100 ms, not at 500 ms, for a single
    /// limiter and for a key alike (the boundary where the state is exactly a window ahead).
    #[test]
    fn a_burst_spent_to_the_last_permit_carries_its_progress_into_a_slower_rate() {
        use ritmo_test_support::{Gcra, Units};
        let clock = ManualClock::new();
        let limiter = RateLimiter::new("one", per_second(10), &clock);
        let keyed: KeyedLimiter<u8, _, 4> =
            KeyedLimiter::with_clock("keyed", per_second(10), &clock, 7);
        let mut model = Gcra::new(Units::NANOS, per_second(10));
        limiter.try_acquire_n(10).unwrap();
        keyed.try_acquire_n(&1, 10).unwrap();
        let _ = model.try_acquire(0, 10);
        limiter.reconfigure(per_second(2));
        keyed.reconfigure(per_second(2));
        let _ = model.reconfigure(0, per_second(2));
        assert_eq!(
            (limiter.available_permits(), keyed.available_permits(&1)),
            (0, 0)
        );
        clock.advance(Duration::from_millis(100));
        assert_eq!(model.available(100_000_000), 1);
        assert_eq!(
            (limiter.available_permits(), keyed.available_permits(&1)),
            (1, 1)
        );
    }

    #[test]
    fn permits_and_the_reconfigured_flag_follow_the_change() {
        let limiter = RateLimiter::new("api", per_second(5), ManualClock::new());
        assert!(!limiter.is_reconfigured());
        assert_eq!(limiter.permits(), 5);
        limiter.reconfigure(per_second(5));
        assert!(
            !limiter.is_reconfigured(),
            "the same config changes nothing"
        );
        limiter.reconfigure(per_second(7));
        assert!(limiter.is_reconfigured());
        assert_eq!(limiter.permits(), 7);
    }

    /// On a 32768 Hz clock a reconfigure converts the new config into that clock's ticks: twice
    /// the permits, half the spacing.
    #[test]
    fn a_reconfigure_on_a_slow_clock_spaces_calls_in_its_ticks() {
        let clock = ManualClock::<32_768>::with_reading(0);
        let limiter = RateLimiter::new("rtc", per_second(4), &clock);
        limiter.try_acquire_n(4).unwrap();
        limiter.reconfigure(per_second(8));
        assert!(limiter.try_acquire().is_err());
        clock.set(32_768 / 8);
        limiter.try_acquire().unwrap();
        assert!(limiter.try_acquire().is_err());
        clock.set(2 * 32_768 / 8);
        limiter.try_acquire().unwrap();
    }

    /// On the reconfigured path too, only a call that waits is published as `Waiting`, and only
    /// one that does not is counted as admitted.
    #[test]
    fn reconfigured_reservations_publish_waits_and_count_admissions() {
        let recorder = Recorder::leak();
        let clock = ManualClock::new();
        let limiter = RateLimiter::new("api", per_second(2), &clock).with_listener(recorder);
        limiter.reconfigure(per_second(2).with_max_wait(Duration::from_secs(1)));
        limiter.reserve().unwrap().commit();
        limiter.reserve().unwrap().commit();
        assert_eq!(recorder.waiting(), 0);
        #[cfg(feature = "counters")]
        assert_eq!(limiter.admitted_count(), 2);
        let r = limiter.reserve().unwrap();
        assert_eq!(recorder.waiting(), 1);
        #[cfg(feature = "counters")]
        assert_eq!(limiter.admitted_count(), 2);
        r.commit();
    }

    /// Threads racing on a reconfigured limiter admit exactly its burst.
    #[test]
    fn racing_threads_on_a_reconfigured_limiter_admit_exactly_the_burst() {
        for round in 0..50 {
            let clock = ManualClock::new();
            let limiter = RateLimiter::new("race", per_second(4_096), &clock);
            // One taken: not idle (an idle limiter would start afresh with 8192).
            limiter.try_acquire().unwrap();
            limiter.reconfigure(per_second(8_192));
            let admitted = AtomicU32::new(0);
            super::collide(2, || {
                for _ in 0..4_096 {
                    if limiter.try_acquire().is_ok() {
                        admitted.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
            // 4095 available when it changed: min(4095, 8192) stay available, and no more.
            assert_eq!(admitted.into_inner(), 4_095, "round {round}");
        }
    }
}

/// A keyed table on a 32768 Hz counter refills in that clock's ticks: its burst, one period of
/// ticks later (the emission interval rounds up, so the first whole tick after it), its burst
/// again.
#[test]
fn a_keyed_table_on_a_slow_clock_refills_each_period() {
    let clock = ManualClock::<32_768>::with_reading(0);
    let peers: KeyedLimiter<u8, _, 4> = KeyedLimiter::new("peers", per_second(3), &clock, 7);
    peers.try_acquire_n(&1, 3).unwrap();
    assert!(peers.try_acquire(&1).is_err());
    // One permit every 32768 / 3 = 10922.67 ticks: the next at tick 10923.
    clock.set(10_922);
    assert!(peers.try_acquire(&1).is_err());
    clock.set(10_923);
    assert!(peers.try_acquire(&1).is_ok());
    assert!(peers.try_acquire(&1).is_err());
    clock.set(10_923 + 32_768);
    peers.try_acquire_n(&1, 3).unwrap();
    assert!(peers.try_acquire(&1).is_err());
}

/// A keyed reservation given up is reported to whichever listener the limiter has: a plain one
/// alone, a key listener alone (with its key), and neither when it holds nothing (a disabled
/// limiter).
#[test]
fn a_released_keyed_reservation_reaches_each_listener() {
    struct Keys(Mutex<Vec<(u8, Event)>>);
    impl ritmo_core::keyed::KeyListener<u8> for Keys {
        fn on_event(&self, key: &u8, event: &Event) {
            self.0.lock().unwrap().push((*key, *event));
        }
    }
    let released = |returned| Event::Released {
        id: "peers",
        permits: 1,
        reason: Reason::Cancelled,
        returned,
    };

    let plain = Recorder::leak();
    let l: KeyedLimiter<u8, _, 4> =
        KeyedLimiter::with_clock("peers", per_second(1), ManualClock::new(), 0)
            .with_listener(plain);
    assert!(l.reserve(&7).unwrap().cancel());
    assert_eq!(plain.take(), [released(true)]);

    let keys: &'static Keys = Box::leak(Box::new(Keys(Mutex::new(Vec::new()))));
    let l: KeyedLimiter<u8, _, 4> =
        KeyedLimiter::with_clock("peers", per_second(1), ManualClock::new(), 0)
            .with_key_listener(keys);
    drop(l.reserve(&9).unwrap());
    assert_eq!(*keys.0.lock().unwrap(), [(9, released(true))]);

    let disabled = Recorder::leak();
    let off = Config::new(1, Duration::from_secs(1))
        .unwrap()
        .with_enabled(false);
    let l: KeyedLimiter<u8, _, 4> =
        KeyedLimiter::with_clock("peers", off, ManualClock::new(), 0).with_listener(disabled);
    assert!(l.reserve(&7).unwrap().cancel());
    assert_eq!(disabled.take(), []);
}

/// Every kind's reservation says how long is left to its slot, rounded up to the whole tick as
/// its wait is: bands too (one reservation type for every kind).
#[test]
fn every_kind_of_reservation_counts_down_to_its_slot() {
    let clock = ManualClock::<32_768>::with_reading(0);
    let wait = Duration::from_secs(1);
    let single = RateLimiter::new("one", per_second(1).with_max_wait(wait), &clock);
    let bands = Bands::new("radio", [per_second(1), per_second(2)], &clock).with_max_wait(wait);
    let keyed: KeyedLimiter<u8, _, 4> =
        KeyedLimiter::with_clock("peers", per_second(1).with_max_wait(wait), &clock, 0);
    single.try_acquire().unwrap();
    bands.try_acquire().unwrap();
    keyed.try_acquire(&1).unwrap();
    let (a, b, c) = (
        single.reserve().unwrap(),
        bands.reserve().unwrap(),
        keyed.reserve(&1).unwrap(),
    );
    clock.advance(Duration::from_millis(250)); // 8192 ticks
    // 1 s is 32768 ticks: 24576 are left, 750 ms exactly.
    for left in [a.remaining(), b.remaining(), c.remaining()] {
        assert_eq!(left, Duration::from_millis(750));
    }
    clock.advance(Duration::from_millis(750));
    assert_eq!(
        [a.remaining(), b.remaining(), c.remaining()],
        [Duration::ZERO; 3]
    );
    assert!(a.is_ready() && b.is_ready() && c.is_ready());
    a.commit();
    b.commit();
    c.commit();
}

/// A reservation's `Debug` names its kind, its limiter, its permits, its slot and its wait.
#[test]
fn every_kind_of_reservation_shows_itself_in_debug() {
    let clock = ManualClock::new();
    let single = RateLimiter::new("one", per_second(2), &clock);
    let bands = Bands::new("radio", [per_second(2), per_second(4)], &clock);
    let keyed: KeyedLimiter<u8, _, 4> = KeyedLimiter::with_clock("peers", per_second(2), &clock, 0);
    let shown = [
        format!("{:?}", single.reserve_n(2).unwrap()),
        format!("{:?}", bands.reserve_n(2).unwrap()),
        format!("{:?}", keyed.reserve_n(&1, 2).unwrap()),
    ];
    let expected = [
        "Reservation { limiter: \"one\", permits: 2, slot: 0, wait: 0ns }",
        "BandsReservation { limiter: \"radio\", permits: 2, slot: 0, wait: 0ns }",
        "KeyedReservation { limiter: \"peers\", permits: 2, slot: 0, wait: 0ns }",
    ];
    assert_eq!(shown, expected);
}

/// A disabled limiter's reservation holds nothing: cancelling it says its permits went back, and
/// no listener hears of it (there was nothing to give back).
#[test]
fn a_disabled_limiters_reservation_goes_back_without_a_word() {
    let recorder = Recorder::leak();
    let off = per_second(1).with_enabled(false);
    let single = RateLimiter::new("one", off, ManualClock::new()).with_listener(recorder);
    assert!(single.reserve().unwrap().cancel());
    drop(single.reserve_n(1).unwrap());
    assert_eq!(recorder.take(), []);
}

/// The keyed rules' `Debug` (what ritmo-std's map and the fixed table decide with) names the
/// limiter and its config.
#[test]
fn the_keyed_rules_debug_names_the_limiter_and_its_config() {
    let clock = ManualClock::new();
    let rate = ritmo_core::keyed::KeyRate::new("peers", per_second(4), &clock);
    let debug = format!("{rate:?}");
    assert!(debug.starts_with("KeyRate"), "{debug}");
    assert!(debug.contains("\"peers\""), "{debug}");
    assert!(debug.contains("permits: 4"), "{debug}");
}

/// A keyed limiter counts its refusals by reason, each as often as it refused for it.
#[cfg(feature = "counters")]
#[test]
fn keyed_refusals_are_counted_by_reason() {
    let clock = ManualClock::new();
    let limiter: KeyedLimiter<u8, _, 2> =
        KeyedLimiter::with_clock("peers", per_second(1), &clock, 7);
    limiter.try_acquire(&1).unwrap();
    limiter.try_acquire(&2).unwrap();
    for _ in 0..3 {
        assert!(limiter.try_acquire(&1).is_err());
    }
    assert_eq!(limiter.rejected_count(Reason::NoPermitInTime), 3);
    assert_eq!(limiter.rejected_count(Reason::KeyCapacity), 0);
    assert!(limiter.try_acquire(&3).is_err());
    assert!(limiter.try_acquire(&4).is_err());
    assert_eq!(limiter.rejected_count(Reason::KeyCapacity), 2);
    assert_eq!(limiter.rejected_count(Reason::UnknownTier), 0);
    assert_eq!(limiter.admitted_count(), 2);
}

/// A limiter's `Debug` names it, with its config.
#[test]
fn a_limiters_debug_names_it_and_its_config() {
    // 4 per second: a whole number of nanoseconds per permit, so the config reads back as given
    // with or without `reconfigure` (without it, the limiter rebuilds its config from its units).
    let l = RateLimiter::new("uart", per_second(4), ManualClock::new());
    let text = format!("{l:?}");
    assert!(text.starts_with("RateLimiter"), "{text}");
    assert!(text.contains("\"uart\""), "{text}");
    assert!(text.contains(&format!("{:?}", per_second(4))), "{text}");
}

/// The window arithmetic saturates rather than wraps: a cap over a window too long to express
/// as a period is an error, and the most a config admits in the longest window is `u64::MAX`.
#[test]
fn window_arithmetic_saturates_instead_of_wrapping() {
    assert!(Config::at_most(u32::MAX, Duration::MAX, u32::MAX - 1).is_err());
    let fastest = Config::new(1, Duration::from_nanos(1)).unwrap();
    assert_eq!(fastest.max_in_window(Duration::MAX), u64::MAX);
}

/// Bands waited on take their permits at the slot every band allows: the fake clock advanced
/// to it (2 per 10 s binds the third call: 5 s after the first).
#[test]
fn bands_waited_on_take_their_permits_at_the_slot_every_band_allows() {
    let clock = ManualClock::new();
    let long = Config::new(2, Duration::from_secs(10))
        .unwrap()
        .with_max_wait(Duration::from_secs(10));
    let b = Bands::new(
        "radio",
        [per_second(1).with_max_wait(Duration::from_secs(1)), long],
        &clock,
    );
    b.acquire_advancing().unwrap();
    b.acquire_advancing().unwrap();
    assert_eq!(clock.now(), 1_000_000_000);
    b.acquire_with(&mut AdvanceClock).unwrap();
    assert_eq!(clock.now(), 5_000_000_000);
    assert!(b.try_acquire().is_err());
}

/// Bands reconfigured keep `min(available, new permits)` in each band, and every later call
/// reads the states the reconfigure converted, over two reconfigures in a row.
#[cfg(feature = "reconfigure")]
#[test]
fn bands_reconfigured_twice_read_the_converted_states() {
    let clock = ManualClock::new();
    let b = Bands::new("radio", [per_second(3)], &clock);
    b.try_acquire().unwrap();
    assert_eq!(b.available_permits(), 2);
    b.reconfigure([per_second(1)]);
    assert_eq!(b.available_permits(), 1);
    b.try_acquire().unwrap();
    b.reconfigure([per_second(3)]);
    assert_eq!(b.available_permits(), 0);
    assert!(b.try_acquire().is_err());
}

/// A reservation held by a handle on its own limiter (an `Arc` of it) is owned and cancels back
/// into it; a handle on another limiter is refused and the reservation comes back unchanged.
/// Only a doctest and ritmo-std's owned permits called `with_handle` before.
#[test]
fn a_reservation_is_held_only_by_a_handle_on_its_own_limiter() {
    use std::sync::Arc;
    let clock = ManualClock::new();
    let l = Arc::new(RateLimiter::new("one", per_second(1), &clock));
    let other = Arc::new(RateLimiter::new("other", per_second(1), &clock));
    let refused = l.reserve().unwrap().with_handle(Arc::clone(&other));
    let Err(back) = refused else {
        panic!("a handle on another limiter is refused");
    };
    assert_eq!(l.available_permits(), 0);
    let Ok(owned) = back.with_handle(Arc::clone(&l)) else {
        panic!("a handle on its own limiter holds it");
    };
    assert!(owned.cancel());
    assert_eq!((l.available_permits(), other.available_permits()), (1, 1));
}

/// A `Duration` given where a duration value is read (`DurationValue`) is that duration.
#[test]
fn a_duration_read_as_a_duration_value_is_itself() {
    use ritmo_core::DurationValue;
    assert_eq!(
        Duration::from_millis(1500).to_duration(),
        Ok(Duration::from_millis(1500))
    );
}
