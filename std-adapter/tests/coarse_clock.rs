//! `CoarseClock`: late, never early, and what that costs a limiter.
//!
//! - A deterministic property test plays the upkeep thread by hand: a fake inner clock moves,
//!   and the coarse reading is refreshed at moments the script picks (never more than `R` of
//!   inner time apart, like an upkeep thread with resolution `R`). After every step it checks
//!   that the reading never leads the inner clock and never goes back, that a limiter on it
//!   decides exactly as a limiter on a fake clock set to the lagged reading would, that every
//!   waiter wakes at or after its slot and less than `R` after it, that the bound
//!   `n + floor(w / T)` holds in the readings the limiter saw, and that in inner (real) time
//!   any window `w` sees at most `n + floor((w + R) / T)`.
//! - Hostile inner clocks (stepping back, sticking, jumping to `u64::MAX`): the reading holds the
//!   largest one taken, nothing panics, the bound holds in the readings.
//! - Real threads on the real clock: bounds and accounting, never a rate.

use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::Duration;

use proptest::prelude::*;
use ritmo_core::{Clock, Config, ManualClock, RateLimiter};
use ritmo_std::{CoarseClock, InstantClock, ParkWait};

/// `(time, permits)` of each admission.
type Admissions = Vec<(u64, u32)>;

/// `n + floor(w / T)` in every window of `(time, permits)` admissions, widened by `slack`.
fn assert_bound(admissions: &[(u64, u32)], n: u64, t: u64, slack: u64, what: &str) {
    let mut sorted = admissions.to_vec();
    sorted.sort_unstable();
    for i in 0..sorted.len() {
        let mut taken = 0u64;
        for j in i..sorted.len() {
            taken += u64::from(sorted[j].1);
            let w = sorted[j].0 - sorted[i].0;
            let bound = n + (w + slack) / t;
            assert!(
                taken <= bound,
                "{what}: {taken} permits in a window of {w} (+{slack}) ticks, bound {bound}: {sorted:?}"
            );
        }
    }
}

#[derive(Debug, Clone)]
enum Op {
    /// The inner clock moves by this much; the simulated upkeep refreshes on its way.
    Advance(u64),
    /// An extra refresh now (a `refresh()` by hand).
    Refresh,
    /// `try_acquire_n(k)`.
    Try(u32),
    /// `reserve_n(k)`, then wait for the slot on the coarse reading.
    Reserve(u32),
}

fn op(n: u32, t: u64) -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..3 * t).prop_map(Op::Advance),
        1 => Just(Op::Refresh),
        4 => (1..=n).prop_map(Op::Try),
        2 => (1..=n).prop_map(Op::Reserve),
    ]
}

fn case() -> impl Strategy<Value = (u32, u64, u64, Vec<u64>, Vec<Op>)> {
    // n permits per n*T ticks; upkeep resolution R; the gaps the upkeep leaves (1..=R).
    (1u32..6, 5u64..200, 1u64..300).prop_flat_map(|(n, t, r)| {
        (
            Just(n),
            Just(t),
            Just(r),
            prop::collection::vec(1..=r, 1..32),
            prop::collection::vec(op(n, t), 1..120),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn late_never_early_and_the_bound_holds((n, t, r, gaps, ops) in case()) {
        let inner = ManualClock::new();
        let coarse = CoarseClock::manual(&inner);
        let period = Duration::from_nanos(t * u64::from(n));
        let config = Config::new(n, period).unwrap().with_max_wait(period * 2);
        let limiter = RateLimiter::new("coarse", config, coarse.clone());
        // The same decisions, on a fake clock set to what the coarse clock reads.
        let lagged = ManualClock::new();
        let reference = RateLimiter::new("reference", config, &lagged);

        let mut next_gap = gaps.iter().copied().cycle();
        let mut next_refresh = next_gap.next().unwrap();
        let mut last_reading = coarse.now();
        // (inner time, permits) and (reading the limiter decided on, permits) of each admission.
        let mut real = Vec::new();
        let mut seen = Vec::new();
        // Reservations waiting for their slot: (slot, permits).
        let mut waiting: Vec<(u64, u32)> = Vec::new();

        for op in ops {
            match op {
                Op::Advance(d) => {
                    let end = inner.now() + d;
                    while next_refresh <= end {
                        inner.set(next_refresh);
                        coarse.refresh();
                        // Each waiter re-reads the clock when it wakes: those whose slot came
                        // run now, at this inner time.
                        waiting.retain(|&(slot, k)| {
                            if coarse.now() >= slot {
                                let woke = inner.now();
                                assert!(woke >= slot, "woke at {woke}, before its slot {slot}");
                                assert!(woke - slot < r, "woke {} after its slot, resolution {r}", woke - slot);
                                real.push((woke, k));
                                false
                            } else {
                                true
                            }
                        });
                        next_refresh += next_gap.next().unwrap();
                    }
                    inner.set(end);
                }
                Op::Refresh => {
                    coarse.refresh();
                }
                Op::Try(k) => {
                    lagged.set(coarse.now());
                    let got = limiter.try_acquire_n(k).is_ok();
                    prop_assert_eq!(got, reference.try_acquire_n(k).is_ok());
                    if got {
                        real.push((inner.now(), k));
                        seen.push((coarse.now(), k));
                    }
                }
                Op::Reserve(k) => {
                    lagged.set(coarse.now());
                    let mine = limiter.reserve_n(k);
                    let theirs = reference.reserve_n(k);
                    match (mine, theirs) {
                        (Ok(mine), Ok(theirs)) => {
                            prop_assert_eq!(mine.slot(), theirs.slot());
                            seen.push((mine.slot(), k));
                            if mine.is_ready() {
                                real.push((inner.now(), k));
                            } else {
                                waiting.push((mine.slot(), k));
                            }
                            mine.commit();
                            theirs.commit();
                        }
                        (Err(_), Err(_)) => {}
                        (mine, theirs) => prop_assert!(false, "coarse {:?}, reference {:?}", mine.is_ok(), theirs.is_ok()),
                    }
                }
            }
            let reading = coarse.now();
            prop_assert!(reading <= inner.now(), "the coarse clock leads: {} > {}", reading, inner.now());
            prop_assert!(reading >= last_reading, "the coarse clock went back");
            prop_assert!(inner.now() - reading <= r, "lag {} over the resolution {}", inner.now() - reading, r);
            last_reading = reading;
        }
        // Exact in the readings the limiter saw; in real time, widened by at most the lag.
        assert_bound(&seen, u64::from(n), t, 0, "readings");
        assert_bound(&real, u64::from(n), t, r, "inner time");
    }

    #[test]
    fn a_hostile_inner_clock_never_moves_the_reading_back(
        readings in prop::collection::vec(
            prop_oneof![Just(0u64), Just(u64::MAX), Just(u64::MAX - 1), any::<u64>(), 0u64..1_000],
            1..60,
        ),
        calls in prop::collection::vec(1u32..4, 1..60),
    ) {
        let inner = ManualClock::new();
        let coarse = CoarseClock::manual(&inner);
        let config = Config::new(3, Duration::from_nanos(300)).unwrap();
        let limiter = RateLimiter::new("hostile", config, coarse.clone());
        let mut largest = 0u64;
        let mut last = coarse.now();
        let mut seen = Vec::new();
        for (reading, k) in readings.into_iter().zip(calls.into_iter().cycle()) {
            inner.set(reading); // backwards, stuck or to the end of the range
            largest = largest.max(reading);
            prop_assert_eq!(coarse.refresh(), largest);
            let now = coarse.now();
            prop_assert!(now >= last && now == largest);
            last = now;
            if limiter.try_acquire_n(k).is_ok() {
                seen.push((now, k));
            }
        }
        assert_bound(&seen, 3, 100, 0, "readings");
    }
}

#[test]
fn real_threads_on_the_upkeep_thread_keep_the_bound_and_the_accounting() {
    // 20 permits per 100 ms (T = 5 ms), 4 threads for about 300 ms of real time.
    let clock = CoarseClock::with_resolution(Duration::from_micros(200)).unwrap();
    let limiter = &RateLimiter::with_clock(
        "threads",
        Config::new(20, Duration::from_millis(100)).unwrap(),
        clock.clone(),
    );
    let clock = &clock;
    let attempts = &AtomicU64::new(0);
    let start = InstantClock.now();
    // Per thread: (admissions at real time, admitted, rejected, largest lag around a call).
    let per_thread: Vec<(Admissions, u64, u64, u64)> = thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(move || {
                    let mut real = Vec::new();
                    let (mut admitted, mut rejected, mut lag) = (0u64, 0u64, 0u64);
                    while InstantClock.now() - start < 300_000_000 {
                        attempts.fetch_add(1, Ordering::Relaxed);
                        let before = clock.now();
                        let got = limiter.try_acquire().is_ok();
                        let after = InstantClock.now();
                        assert!(clock.now() <= InstantClock.now(), "the coarse clock leads");
                        if got {
                            admitted += 1;
                            real.push((after, 1));
                            lag = lag.max(after - before);
                        } else {
                            rejected += 1;
                        }
                        thread::yield_now();
                    }
                    (real, admitted, rejected, lag)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let (mut real, mut admitted, mut rejected, mut lag) = (Vec::new(), 0, 0, 0);
    for (r, a, j, l) in per_thread {
        real.extend(r);
        admitted += a;
        rejected += j;
        lag = lag.max(l);
    }
    assert_eq!(admitted + rejected, attempts.load(Ordering::Relaxed));
    assert_eq!(admitted, real.len() as u64);
    assert!(admitted >= 20, "the burst was not admitted: {admitted}");
    // Each admission was decided on a reading at or after `before`, so in real time (`after`)
    // a window `w` holds at most 20 + floor((w + lag) / T), `lag` the largest `after - before`.
    assert_bound(&real, 20, 5_000_000, lag, "real time");
}

#[test]
fn a_blocked_waiter_on_the_upkeep_thread_never_wakes_before_its_slot() {
    // One permit per 10 ms, waits up to a second: 2 threads × 5 calls all wait in turn.
    let clock = CoarseClock::with_resolution(Duration::from_micros(500)).unwrap();
    let config = Config::new(1, Duration::from_millis(10))
        .unwrap()
        .with_max_wait(Duration::from_secs(1));
    let limiter = &RateLimiter::with_clock("waits", config, clock);
    let woke: Vec<(u64, u64)> = thread::scope(|s| {
        let handles: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(move || {
                    (0..5)
                        .map(|_| {
                            let reservation = limiter.reserve().unwrap();
                            let slot = reservation.slot();
                            reservation.wait_with(&mut ParkWait::new()).unwrap();
                            (slot, InstantClock.now())
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    assert_eq!(woke.len(), 10);
    let mut slots: Vec<u64> = woke.iter().map(|&(slot, _)| slot).collect();
    slots.sort_unstable();
    slots.dedup();
    assert_eq!(slots.len(), 10, "two waiters shared a slot");
    for (slot, at) in woke {
        // The slot is a reading of the coarse clock, which is nanoseconds of InstantClock.
        assert!(at >= slot, "woke at {at}, {} ns before its slot", slot - at);
    }
}
