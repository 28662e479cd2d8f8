//! Hostile clocks against every API of a limiter (and of a limiter the registry hands out):
//! readings that jump backwards and forwards by any amount, that stick, that sit at or near
//! `u64::MAX`, and waiters that lie about the time. Random scripts of calls check after each
//! step that:
//! - nothing panics;
//! - the permits kept never beat the bound, each counted at the clock reading it was
//!   admitted at (or its slot, for a reservation): at most `n + floor(w / T)` in any window `w`;
//! - the peeks agree with what a call would get: `available_permits() >= k` exactly when
//!   `retry_after_n(k)` is zero, and exactly when `try_acquire_n(k)` then succeeds;
//! - `available_permits` stays in `0..=n` and the snapshot says the same.

use core::time::Duration;

use proptest::prelude::*;
use ritmo_core::{
    AcquireError, AdvanceClock, Clock, Config, Interrupted, ManualClock, ManualTime, RateLimiter,
    Registry, Reservation, Wait,
};

mod support;
use support::{InterruptAtOnce, bound_holds};

/// How the script moves the clock.
#[derive(Debug, Clone)]
enum Move {
    /// Set to any reading: near 0, near `u64::MAX`, anywhere.
    Set(u64),
    /// Step back by this much (saturating at 0).
    Back(u64),
    /// Step forward by this much (saturating at `u64::MAX`).
    Forward(u64),
    /// Stay put: a stuck clock.
    Stuck,
}

/// How a pending reservation ends.
#[derive(Debug, Clone)]
enum End {
    Commit,
    Cancel,
    Drop,
    Interrupted,
    /// Wait for it by advancing the fake clock (the honest waiter).
    WaitAdvance,
    /// A waiter that sets the clock to `reading` and then says the slot came (`true`) or that it
    /// was interrupted (`false`), whatever the clock says.
    WaitLiar(u64, bool),
}

#[derive(Debug, Clone)]
enum Op {
    Clock(Move),
    TryAcquireN(u32),
    Reserve(u32),
    ReserveWithin(u32, u64),
    Settle(usize, End),
    AcquireN(u32),
    Peek(u32),
}

fn reading() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        Just(u64::MAX),
        (0u64..1_000).prop_map(|d| u64::MAX - d),
        (0u64..1_000_000_000).prop_map(|d| u64::MAX / 2 + d),
        0u64..10_000_000_000,
        any::<u64>(),
    ]
}

fn amount() -> impl Strategy<Value = u64> {
    prop_oneof![
        4 => 0u64..2_000_000_000,
        1 => any::<u64>(),
        1 => Just(u64::MAX),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let k = 1u32..=10;
    prop_oneof![
        2 => prop_oneof![
            reading().prop_map(Move::Set),
            amount().prop_map(Move::Back),
            amount().prop_map(Move::Forward),
            Just(Move::Stuck),
        ]
        .prop_map(Op::Clock),
        3 => k.clone().prop_map(Op::TryAcquireN),
        2 => k.clone().prop_map(Op::Reserve),
        1 => (k.clone(), amount()).prop_map(|(k, w)| Op::ReserveWithin(k, w)),
        3 => (
            0usize..4,
            prop_oneof![
                Just(End::Commit),
                Just(End::Cancel),
                Just(End::Drop),
                Just(End::Interrupted),
                Just(End::WaitAdvance),
                (reading(), any::<bool>()).prop_map(|(r, ok)| End::WaitLiar(r, ok)),
            ],
        )
            .prop_map(|(i, end)| Op::Settle(i, end)),
        1 => k.clone().prop_map(Op::AcquireN),
        2 => k.prop_map(Op::Peek),
    ]
}

struct Liar<'a> {
    clock: &'a ManualClock,
    reading: u64,
    ok: bool,
}

impl Wait<&ManualClock> for Liar<'_> {
    fn wait_until(&mut self, _clock: &&ManualClock, _deadline: u64) -> Result<(), Interrupted> {
        self.clock.set(self.reading);
        if self.ok { Ok(()) } else { Err(Interrupted) }
    }
}

fn run_script(
    l: &RateLimiter<&ManualClock>,
    clock: &ManualClock,
    n: u32,
    period: u64,
    ops: &[Op],
) -> Result<(), TestCaseError> {
    let mut uses: Vec<(u64, u32)> = Vec::new();
    let mut pending: Vec<Reservation<'_, &ManualClock>> = Vec::new();
    for op in ops {
        match op.clone() {
            Op::Clock(Move::Set(r)) => clock.set(r),
            Op::Clock(Move::Back(d)) => clock.set(clock.now().saturating_sub(d)),
            Op::Clock(Move::Forward(d)) => clock.advance_ticks(d),
            Op::Clock(Move::Stuck) => {}
            Op::TryAcquireN(k) => {
                let k = k.min(n);
                let now = clock.now();
                let before = l.available_permits();
                let taken = l.try_acquire_n(k).is_ok();
                prop_assert_eq!(taken, before >= k, "available {} for {}", before, k);
                if taken {
                    uses.push((now, k));
                    let after = l.available_permits();
                    prop_assert!(after <= before - k);
                    // Exactly k fewer, away from the end of the range and with a window
                    // `n * T` that fits a u64 (beyond, the arithmetic saturates: fewer).
                    if now < u64::MAX / 2 && period < u64::MAX / 2 {
                        prop_assert_eq!(after, before - k);
                    }
                }
            }
            Op::Reserve(k) | Op::ReserveWithin(k, _) => {
                let k = k.min(n);
                let result = match op {
                    Op::ReserveWithin(_, w) => l.reserve_n_within(k, Duration::from_nanos(*w)),
                    _ => l.reserve_n(k),
                };
                match result {
                    Ok(r) => {
                        prop_assert!(r.slot() >= clock.now());
                        prop_assert_eq!(r.is_ready(), r.remaining().is_zero());
                        prop_assert!(r.wait_time() >= r.remaining());
                        pending.push(r);
                    }
                    Err(AcquireError::RateLimited(e)) => prop_assert!(!e.retry_after().is_zero()),
                    Err(e) => prop_assert!(false, "{:?} for k = {} of {}", e, k, n),
                }
            }
            Op::Settle(i, end) => {
                if pending.is_empty() {
                    continue;
                }
                let r = pending.remove(i % pending.len());
                let (slot, k) = (r.slot(), r.permits());
                let kept = match end {
                    End::Commit => {
                        r.commit();
                        true
                    }
                    End::Cancel => {
                        r.cancel();
                        false
                    }
                    End::Drop => {
                        drop(r);
                        false
                    }
                    // A waiter interrupted at once: a permit there already is kept, one still
                    // to come goes back.
                    End::Interrupted => match r.wait_with(&mut InterruptAtOnce) {
                        Ok(()) => true,
                        Err(e) => {
                            prop_assert_eq!(e.reason(), ritmo_core::Reason::Interrupted);
                            false
                        }
                    },
                    End::WaitAdvance => r.wait_with(&mut AdvanceClock).is_ok(),
                    End::WaitLiar(reading, ok) => {
                        let mut liar = Liar { clock, reading, ok };
                        r.wait_with(&mut liar).is_ok()
                    }
                };
                if kept {
                    uses.push((slot, k));
                }
            }
            Op::AcquireN(k) => {
                let k = k.min(n);
                if l.acquire_n_advancing(k).is_ok() {
                    // Immediately, or after advancing the clock to the slot.
                    uses.push((clock.now(), k));
                }
            }
            Op::Peek(k) => {
                let k = k.min(n);
                let available = l.available_permits();
                let wait = l.retry_after_n(k).expect("valid k");
                prop_assert_eq!(
                    available >= k,
                    wait.is_zero(),
                    "available {}, wait {:?}",
                    available,
                    wait
                );
                prop_assert_eq!(l.retry_after().is_zero(), available >= 1);
                prop_assert!(l.retry_after_n(n + 1).is_err());
                for r in &pending {
                    let _ = (r.slot(), r.remaining(), r.is_ready(), r.wait_time());
                }
            }
        }
        let snapshot = l.snapshot();
        prop_assert!(snapshot.available_permits <= n);
        prop_assert_eq!(snapshot.permits, n);
        prop_assert_eq!(snapshot.available_permits, l.available_permits());
        // A permit the peek promises is really there: try it and give it back (the tail rule
        // returns it, since nothing else happened in between). Not near the end of the range,
        // where taking it saturates the state and a saturated state cannot be stepped back.
        if snapshot.available_permits > 0 && clock.now() < u64::MAX / 2 && period < u64::MAX / 2 {
            let r = l
                .reserve_n_within(1, Duration::ZERO)
                .expect("a permit was available");
            prop_assert!(r.is_ready());
            prop_assert!(r.cancel());
            prop_assert_eq!(l.available_permits(), snapshot.available_permits);
        }
    }
    for r in pending {
        let (slot, k) = (r.slot(), r.permits());
        r.commit();
        uses.push((slot, k));
    }
    let uses: Vec<(u128, u128)> = uses.iter().map(|&(at, k)| (at.into(), k.into())).collect();
    bound_holds(&uses, n.into(), period.into())
}

fn config(n: u32, period: u64, max_wait: u64) -> Config {
    Config::new(n, Duration::from_nanos(period))
        .expect("valid config")
        .with_max_wait(Duration::from_nanos(max_wait))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1_500, ..ProptestConfig::default() })]

    /// A limiter of its own on a hostile clock.
    #[test]
    fn every_api_survives_a_hostile_clock(
        n in 1u32..=10,
        period in prop_oneof![10u64..10_000, 1_000_000u64..10_000_000_000, Just(u64::MAX)],
        max_wait in amount(),
        start in reading(),
        ops in prop::collection::vec(op(), 1..60),
    ) {
        let period = period.max(u64::from(n));
        let clock = ManualClock::starting_at(start);
        let l = RateLimiter::new("hostile", config(n, period, max_wait), &clock);
        run_script(&l, &clock, n, period, &ops)?;
    }

    /// The same through a registry: the handle it returns, its snapshot, and a second
    /// registration of the same id while the clock misbehaves.
    #[test]
    fn a_registry_handle_survives_a_hostile_clock(
        n in 1u32..=10,
        period in prop_oneof![10u64..10_000, 1_000_000u64..10_000_000_000],
        max_wait in amount(),
        start in reading(),
        ops in prop::collection::vec(op(), 1..40),
    ) {
        let period = period.max(u64::from(n));
        let clock = ManualClock::starting_at(start);
        let registry: Registry<&ManualClock, 2> = Registry::new(&clock);
        let cfg = config(n, period, max_wait);
        let l = registry.get_or_create("hostile", cfg).expect("room for one");
        run_script(l, &clock, n, period, &ops)?;
        clock.set(start ^ u64::MAX);
        let again = registry.get_or_create("hostile", cfg).expect("same id, same config");
        prop_assert!(core::ptr::eq(l, again));
        let all = registry.snapshot();
        prop_assert_eq!(all.as_slice(), [l.snapshot()]);
        prop_assert_eq!(registry.get("hostile").map(|l| l.id()), Ok("hostile"));
    }
}

/// A stuck clock: the burst passes, then nothing more however often one asks, and waiting for a
/// slot on an honest waiter moves the fake clock exactly to it.
#[test]
fn a_stuck_clock_admits_the_burst_then_nothing() {
    let clock = ManualClock::starting_at(u64::MAX / 3);
    let l = RateLimiter::new("stuck", config(3, 3_000, 10_000), &clock);
    l.try_acquire_n(3).unwrap();
    for _ in 0..1_000 {
        assert!(l.try_acquire().is_err());
        assert_eq!(l.available_permits(), 0);
        assert_eq!(l.retry_after(), Duration::from_nanos(1_000));
    }
    let r = l.reserve().unwrap();
    assert_eq!(r.slot(), u64::MAX / 3 + 1_000);
    r.wait_with(&mut AdvanceClock).unwrap();
    assert_eq!(clock.now(), u64::MAX / 3 + 1_000);
    clock.advance_to(0); // an honest waiter never moves the clock back
    assert_eq!(clock.now(), u64::MAX / 3 + 1_000);
}

/// The end of the clock's range: the state saturates at `u64::MAX` and from then on nothing is
/// admitted, reserved or waited for, whatever the clock reads afterwards (the documented limit).
#[test]
fn a_saturated_state_admits_nothing_more() {
    let clock = ManualClock::starting_at(u64::MAX - 10);
    let l = RateLimiter::new("end", config(2, 100, u64::MAX), &clock);
    l.try_acquire().unwrap(); // the state saturates: MAX - 10 + 50 does not fit
    let mut admitted = 1;
    while l.try_acquire().is_ok() {
        admitted += 1;
    }
    assert!(admitted <= 2);
    clock.set(u64::MAX);
    assert!(l.reserve().is_err());
    assert!(l.acquire_advancing().is_err());
    assert_eq!(l.available_permits(), 0);
    assert_eq!(l.retry_after(), Duration::from_nanos(u64::MAX));
    clock.set(0);
    assert!(l.try_acquire().is_err());
    assert_eq!(l.snapshot().available_permits, 0);
}

/// Found by the script above: a reservation whose increment saturated the state at `u64::MAX`
/// must not be stepped back by that increment on cancel, or the state lands below where it was
/// before the reservation and two calls share one slot.
#[test]
fn a_reservation_that_saturated_the_state_is_not_refunded() {
    let t = 878_615_045;
    let clock = ManualClock::starting_at(u64::MAX - t - 1);
    let l = RateLimiter::new("end", config(1, t, t), &clock);
    l.try_acquire().unwrap(); // the state is now MAX - 1
    let r = l.reserve().unwrap(); // MAX - 1 + T saturates at MAX
    assert_eq!(r.slot(), u64::MAX - 1);
    assert!(!r.cancel());
    assert!(l.reserve().is_err());
    assert!(l.try_acquire().is_err());
}

/// Found by the script above: with a window `n * T` past `u64::MAX`, a fresh limiter admits its
/// whole burst at once, and `available_permits` says so.
#[test]
fn a_saturated_window_still_reports_the_whole_burst() {
    let clock = ManualClock::new();
    let l = RateLimiter::new("long", config(2, u64::MAX, 0), &clock);
    assert_eq!(l.available_permits(), 2);
    assert_eq!(l.retry_after_n(2), Ok(Duration::ZERO));
    l.try_acquire_n(2).unwrap();
    assert_eq!(l.available_permits(), 0);
}
