//! `Bands` (several limits at once) against a slow reference model: one exact GCRA per band in
//! `u128`, a call admitted only if every band admits it, then every band charged; refunds by the
//! tail rule per band. Plus each band's window bound, sequentially and with real threads, and the
//! over-rejection real threads cause (printed with `--nocapture`).

use core::time::Duration;
use std::sync::{Barrier, Mutex};

use proptest::prelude::*;
use ritmo_core::{AcquireError, Bands, BandsReservation, Clock, Config, ManualClock};

/// One band, literally: `T = ceil(P / n)` ns, `tau = (n - 1) * T`.
#[derive(Debug, Clone)]
struct Band {
    n: u128,
    t: u128,
    tau: u128,
    tat: u128,
}

impl Band {
    fn new(n: u32, period: u128) -> Self {
        let n = n as u128;
        let t = period.div_ceil(n);
        Band {
            n,
            t,
            tau: (n - 1) * t,
            tat: 0,
        }
    }

    /// The wait until `k` permits would be admitted at `now`: 0 if they are now.
    fn wait(&self, now: u128, k: u128) -> u128 {
        let start = self.tat.max(now);
        let last = start + (k - 1) * self.t;
        (last).saturating_sub(now + self.tau)
    }
}

/// Several bands, all or nothing.
#[derive(Debug)]
struct Model {
    bands: Vec<Band>,
    max_wait: u128,
}

#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    Admitted { wait: u128 },
    Rejected { retry_after: u128 },
    Invalid,
}

impl Model {
    fn max_k(&self) -> u128 {
        self.bands.iter().map(|b| b.n).min().unwrap()
    }

    /// A call of `k` permits at `now` that may wait `max_wait`: it runs at the slowest band's slot
    /// and every band is charged for a call at that instant. Returns each band's written `tat`.
    fn call(&mut self, now: u128, k: u128, max_wait: u128) -> (Outcome, Vec<u128>) {
        if k == 0 || k > self.max_k() {
            return (Outcome::Invalid, vec![]);
        }
        let wait = self.bands.iter().map(|b| b.wait(now, k)).max().unwrap();
        if wait > max_wait {
            return (Outcome::Rejected { retry_after: wait }, vec![]);
        }
        let at = now + wait;
        let mut written = vec![];
        for b in &mut self.bands {
            assert_eq!(b.wait(at, k), 0, "every band admits the call at its slot");
            b.tat = b.tat.max(at) + k * b.t;
            written.push(b.tat);
        }
        (Outcome::Admitted { wait }, written)
    }

    /// The tail rule, band by band.
    fn cancel(&mut self, written: &[u128], k: u128) -> bool {
        let mut all = true;
        for (b, w) in self.bands.iter_mut().zip(written) {
            if b.tat == *w {
                b.tat -= k * b.t;
            } else {
                all = false;
            }
        }
        all
    }

    fn available(&self, now: u128) -> u32 {
        (1..=self.max_k())
            .take_while(|k| self.bands.iter().all(|b| b.wait(now, *k) == 0))
            .count() as u32
    }
}

#[derive(Debug, Clone)]
enum Op {
    Advance(u64),
    TryAcquire(u32),
    Reserve(u32),
    Cancel(usize),
    Commit(usize),
}

/// Up to three bands of 1..=12 permits per 1 ns..5 s, with their own max_waits.
fn scenario() -> impl Strategy<Value = (Vec<(u32, u64, u64)>, Vec<Op>)> {
    prop::collection::vec(
        (1u32..=12, 1u64..=5_000_000_000, 0u64..=10_000_000_000),
        1..=3,
    )
    .prop_flat_map(|bands| {
        let longest = bands.iter().map(|b| b.1).max().unwrap();
        let op = prop_oneof![
            3 => (0..=longest / 4).prop_map(Op::Advance),
            1 => (0..=longest * 2).prop_map(Op::Advance),
            4 => (0u32..=13).prop_map(Op::TryAcquire),
            3 => (0u32..=13).prop_map(Op::Reserve),
            2 => any::<usize>().prop_map(Op::Cancel),
            1 => any::<usize>().prop_map(Op::Commit),
        ];
        (Just(bands), prop::collection::vec(op, 1..150))
    })
}

/// In any window `[a, b]`, a band admits at most `n + floor((b - a) / T)` permits.
fn check_window_bound(uses: &[(u128, u128)], band: &Band) -> Result<(), TestCaseError> {
    let mut uses = uses.to_vec();
    uses.sort();
    for i in 0..uses.len() {
        let mut count = 0;
        for u in &uses[i..] {
            count += u.1;
            let w = u.0 - uses[i].0;
            prop_assert!(
                count <= band.n + w / band.t,
                "{} permits in a window of {} ns (n = {}, T = {})",
                count,
                w,
                band.n,
                band.t
            );
        }
    }
    Ok(())
}

type Open<'a, const B: usize> = Vec<(
    BandsReservation<'a, &'a ManualClock, B>,
    Vec<u128>,
    u128,
    u128,
)>;

fn run<const B: usize>(spec: &[(u32, u64, u64)], ops: Vec<Op>) -> Result<(), TestCaseError> {
    let clock = ManualClock::new();
    let configs: [Config; B] = core::array::from_fn(|i| {
        Config::new(spec[i].0, Duration::from_nanos(spec[i].1))
            .unwrap()
            .with_max_wait(Duration::from_nanos(spec[i].2))
    });
    let bands = Bands::new("model", configs, &clock);
    let mut model = Model {
        bands: spec.iter().map(|b| Band::new(b.0, b.1 as u128)).collect(),
        max_wait: spec.iter().map(|b| b.2 as u128).max().unwrap(),
    };
    // Open reservations: (reservation, written tats, k, slot).
    let mut open: Open<'_, B> = Vec::new();
    // Permits in use: (instant the call runs, k), released ones removed on a returned cancel.
    let mut uses: Vec<(u128, u128)> = Vec::new();

    for op in ops {
        let now = clock.now() as u128;
        match op {
            Op::Advance(d) => clock.advance_ticks(d),
            Op::TryAcquire(k) => {
                let (expected, _) = model.call(now, k as u128, 0);
                let expected = match expected {
                    // A try never waits: a wait of 0 within a max_wait of 0.
                    Outcome::Admitted { wait } => Outcome::Admitted { wait },
                    other => other,
                };
                let got = match bands.try_acquire_n(k) {
                    Ok(()) => Outcome::Admitted { wait: 0 },
                    Err(AcquireError::RateLimited(e)) => Outcome::Rejected {
                        retry_after: e.retry_after().as_nanos(),
                    },
                    Err(AcquireError::InvalidPermits(_)) => Outcome::Invalid,
                    Err(e) => panic!("unexpected {e:?}"),
                };
                prop_assert_eq!(&got, &expected);
                if let Outcome::Admitted { .. } = got {
                    uses.push((now, k as u128));
                }
            }
            Op::Reserve(k) => {
                let (expected, written) = model.call(now, k as u128, model.max_wait);
                let got = match bands.reserve_n(k) {
                    Ok(r) => {
                        let wait = r.wait_time().as_nanos();
                        prop_assert_eq!(r.slot() as u128, now + wait);
                        open.push((r, written, k as u128, now + wait));
                        Outcome::Admitted { wait }
                    }
                    Err(AcquireError::RateLimited(e)) => Outcome::Rejected {
                        retry_after: e.retry_after().as_nanos(),
                    },
                    Err(AcquireError::InvalidPermits(_)) => Outcome::Invalid,
                    Err(e) => panic!("unexpected {e:?}"),
                };
                prop_assert_eq!(&got, &expected);
            }
            Op::Cancel(i) if !open.is_empty() => {
                let (r, written, k, _) = open.remove(i % open.len());
                let expected = model.cancel(&written, k);
                prop_assert_eq!(r.cancel(), expected);
            }
            Op::Commit(i) if !open.is_empty() => {
                let (r, _, k, slot) = open.remove(i % open.len());
                r.commit();
                uses.push((slot, k));
            }
            Op::Cancel(_) | Op::Commit(_) => {}
        }
        let now = clock.now() as u128;
        prop_assert_eq!(bands.available_permits(), model.available(now));
        let per_band = bands.available_permits_per_band();
        for (i, b) in model.bands.iter().enumerate() {
            let alone = (1..=b.n).take_while(|k| b.wait(now, *k) == 0).count() as u32;
            prop_assert_eq!(per_band[i], alone);
        }
        let expected_retry = model.bands.iter().map(|b| b.wait(now, 1)).max().unwrap();
        prop_assert_eq!(bands.retry_after().as_nanos(), expected_retry);
    }
    // Reservations still open run at their slots.
    for (r, _, k, slot) in open {
        r.commit();
        uses.push((slot, k));
    }
    for band in &model.bands {
        check_window_bound(&uses, band)?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 768, ..ProptestConfig::default() })]

    #[test]
    fn bands_match_the_reference_model((spec, ops) in scenario()) {
        match spec.len() {
            1 => run::<1>(&spec, ops)?,
            2 => run::<2>(&spec, ops)?,
            _ => run::<3>(&spec, ops)?,
        }
    }
}

/// A call refused by one band takes nothing from the others: a throttled caller never drains the
/// shared daily quota.
#[test]
fn a_refused_call_charges_no_band() {
    let clock = ManualClock::new();
    let b = Bands::new(
        "api",
        [
            Config::new(1, Duration::from_secs(1)).unwrap(),
            Config::new(5, Duration::from_secs(86_400)).unwrap(),
        ],
        &clock,
    );
    b.try_acquire().unwrap();
    for _ in 0..1000 {
        assert!(b.try_acquire().is_err());
    }
    assert_eq!(b.available_permits_per_band(), [0, 4]);
}

/// The wait is the longest band's, and the refund of a cancelled reservation follows the tail
/// rule in each band separately.
#[test]
fn the_wait_is_the_longest_bands_and_refunds_follow_the_tail_rule() {
    let clock = ManualClock::new();
    let b = Bands::new(
        "api",
        [
            Config::new(2, Duration::from_secs(1)).unwrap(),
            Config::new(2, Duration::from_secs(10)).unwrap(),
        ],
        &clock,
    )
    .with_max_wait(Duration::from_secs(60));
    b.try_acquire_n(2).unwrap();
    // band 0 frees a permit in 0.5 s, band 1 in 5 s: the call waits 5 s.
    let first = b.reserve().unwrap();
    assert_eq!(first.wait_time(), Duration::from_secs(5));
    let second = b.reserve().unwrap();
    assert_eq!(second.wait_time(), Duration::from_secs(10));
    // `second` was charged after `first` in both bands: `first`'s slot stays unused.
    assert!(!first.cancel());
    assert!(second.cancel());
    assert_eq!(b.reserve().unwrap().wait_time(), Duration::from_secs(10));
}

/// A disabled band is left out; invalid `k` is an error, not a rejection.
#[test]
fn disabled_bands_and_invalid_permits() {
    let clock = ManualClock::new();
    let b = Bands::new(
        "api",
        [
            Config::new(1, Duration::from_secs(1))
                .unwrap()
                .with_enabled(false),
            Config::new(3, Duration::from_secs(1)).unwrap(),
        ],
        &clock,
    );
    assert!(b.try_acquire_n(1).is_ok());
    assert!(matches!(
        b.try_acquire_n(2),
        Err(AcquireError::InvalidPermits(_))
    ));
    assert!(matches!(
        b.try_acquire_n(0),
        Err(AcquireError::InvalidPermits(_))
    ));
    assert!(b.try_acquire().is_ok());
    assert!(b.try_acquire().is_ok());
    assert!(b.try_acquire().is_err());
}

/// Real threads race on two bands while a driver steps a shared fake clock: every band stays
/// within its window bound, and the calls refused that a sequential run of the same attempts at
/// the same instants would have admitted are counted (over-rejection, printed).
fn race(label: &str, configs: [Config; 2], threads: usize, attempts: usize, rounds: usize) {
    let step = 10_000_000u64; // 10 ms per round
    let clock = ManualClock::new();
    let bands = Bands::new("race", configs, &clock);
    let twin_clock = ManualClock::new();
    let twin = Bands::new("sequential", configs, &twin_clock);
    let barrier = Barrier::new(threads + 1);
    let admitted_at = Mutex::new(Vec::new());
    let mut sequential = 0u64;
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                let mut mine = Vec::new();
                for _ in 0..rounds {
                    barrier.wait();
                    for _ in 0..attempts {
                        if bands.try_acquire().is_ok() {
                            mine.push(clock.now());
                        }
                    }
                    barrier.wait();
                }
                admitted_at.lock().unwrap().extend(mine);
            });
        }
        for _ in 0..rounds {
            barrier.wait(); // the workers race at this instant
            for _ in 0..threads * attempts {
                sequential += u64::from(twin.try_acquire().is_ok());
            }
            barrier.wait();
            clock.advance_ticks(step);
            twin_clock.advance_ticks(step);
        }
    });
    let uses: Vec<(u128, u128)> = admitted_at
        .into_inner()
        .unwrap()
        .into_iter()
        .map(|t| (t as u128, 1))
        .collect();
    let concurrent = uses.len() as u64;
    for c in configs {
        check_window_bound(&uses, &Band::new(c.permits(), c.period().as_nanos())).unwrap();
    }
    assert!(concurrent > 0 && sequential > 0);
    let over = sequential.saturating_sub(concurrent) as f64 / sequential as f64;
    eprintln!(
        "bands, {label}, {threads} threads x {attempts} attempts per 10 ms round: {concurrent} \
         admitted vs {sequential} sequentially ({:.3}% over-rejection)",
        over * 100.0
    );
}

#[test]
fn real_threads_keep_every_band_within_its_bound() {
    // The slow band binds almost always: about one permit per round.
    race(
        "20/100ms + 100/s",
        [
            Config::new(20, Duration::from_millis(100)).unwrap(),
            Config::new(100, Duration::from_secs(1)).unwrap(),
        ],
        4,
        8,
        1_000,
    );
    // Both bands near their limits every round (16 and 12 permits per round, bursts 16 and
    // 1200): the most rollbacks.
    race(
        "16/10ms + 1200/s",
        [
            Config::new(16, Duration::from_millis(10)).unwrap(),
            Config::new(1200, Duration::from_secs(1)).unwrap(),
        ],
        4,
        8,
        1_000,
    );
}

/// Three bands in a `static`: per second, per minute and per day, built at compile time.
#[test]
fn three_bands_in_a_static() {
    use ritmo_core::const_config;
    static CLOCK: ManualClock = ManualClock::new();
    static QUOTA: Bands<&ManualClock, 3> = Bands::new(
        "quota",
        [
            const_config!(5, Duration::from_secs(1)),
            const_config!(20, Duration::from_secs(60)),
            const_config!(30, Duration::from_secs(86_400)),
        ],
        &CLOCK,
    );
    let mut admitted = 0;
    for _ in 0..120 {
        for _ in 0..10 {
            admitted += u32::from(QUOTA.try_acquire().is_ok());
        }
        CLOCK.advance(Duration::from_secs(1));
    }
    // Over 120 s the per-day band (30, no refill within the run) binds.
    assert_eq!(admitted, 30);
    assert_eq!(QUOTA.available_permits_per_band()[2], 0);
}
