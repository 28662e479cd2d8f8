//! Core's fixed keyed table at 1024 slots, where a quarter of the slots stays empty and the
//! soonest key is found from bounds per block (`keyed/table.rs`), against the shared reference
//! model (`ritmo-test-support`, from SPEC §10 and §14 alone): the table filled to its capacity
//! first, then random calls on more keys than it holds, so that new keys are refused with the
//! exact `retry_after`, idle keys make room, and keys are used, refunded and reconfigured after
//! the bounds were taken. Every answer, two keys' peeks and the number of live keys compared at
//! each step.

use core::time::Duration;

use proptest::prelude::*;
use ritmo_core::keyed::{Keyed, KeyedLimiter, KeyedReservation};
use ritmo_core::{AcquireError, Config, ManualClock};
use ritmo_test_support::{KeyedModel, KeyedTicket, Op, Outcome, Units, ops};

/// Slots of the table: the least that keeps spare slots.
const SLOTS: usize = 1024;
/// Keys the calls use: more than the table holds.
const KEYS: u16 = 1000;

type Table<'a> = KeyedLimiter<u16, &'a ManualClock, SLOTS>;

fn reserved(
    result: &Result<KeyedReservation<'_, u16, &ManualClock, SLOTS>, AcquireError>,
) -> Outcome {
    match result {
        Ok(r) => Outcome::Reserved {
            wait: r.wait_time(),
            slot: r.slot(),
        },
        Err(e) => Outcome::of_error(e),
    }
}

/// A config of whole seconds (so that keys stay live while the table fills), the advances
/// between the keys that fill it, and the calls after.
fn schedule() -> impl Strategy<Value = (Config, Vec<u64>, Vec<(u16, Op)>)> {
    (ops::config(4, Duration::from_secs(10)), 1u64..=10).prop_flat_map(|(c, secs)| {
        let c = Config::new(c.permits(), Duration::from_secs(secs))
            .expect("a valid config")
            .with_max_wait(c.max_wait());
        // The whole fill within half of one permit's time: every key is still live after it.
        let step = secs * 1_000_000_000 / u64::from(c.permits()) / 2 / SLOTS as u64;
        let changes = prop_oneof![
            1 => Just(c),
            3 => ops::config(4, Duration::from_secs(10)),
        ]
        .boxed();
        (
            Just(c),
            prop::collection::vec(0..=step, SLOTS),
            prop::collection::vec(
                // Half on the keys put in first, the soonest to be idle: used again, they leave
                // the bounds taken before below every state in their block.
                (
                    prop_oneof![0..16u16, 0..KEYS],
                    ops::op(c, Units::NANOS, Some(changes)).prop_map(crowded),
                ),
                1..300,
            ),
        )
    })
}

/// `op` with its advance cut to a 32nd: the table stays full for most of the calls, and its keys
/// go idle a few at a time.
fn crowded(op: Op) -> Op {
    match op {
        Op::Advance(d) => Op::Advance(d / 32),
        op => op,
    }
}

fn run(config: Config, seed: u128, fill: Vec<u64>, calls: Vec<(u16, Op)>) -> Result<(), String> {
    let clock = ManualClock::new();
    let table: Table<'_> = KeyedLimiter::with_clock("spare", config, &clock, seed);
    let units = Units::NANOS;
    let capacity = table.capacity();
    let mut model = KeyedModel::new(units, config, capacity);
    let now = || ritmo_core::Clock::now(&&clock);
    for (key, advance) in fill.iter().take(capacity).enumerate() {
        clock.advance_ticks(*advance);
        let key = key as u16;
        let expected = model.try_acquire(&key, now(), 1);
        expected
            .check(&Outcome::of_try(table.try_acquire(&key)), &units)
            .map_err(|e| format!("filling, key {key}: {e}"))?;
    }
    if model.live_keys(now()).len() != capacity || table.len() != capacity {
        return Err(format!("not full after the fill: {} live", table.len()));
    }
    let mut open: Vec<(
        KeyedReservation<'_, u16, &ManualClock, SLOTS>,
        KeyedTicket<u16>,
    )> = Vec::new();
    for (step, (key, op)) in calls.into_iter().enumerate() {
        let at_now = now();
        let at = |e: String| format!("step {step} ({op:?} on key {key}) at {at_now}: {e}");
        match op {
            Op::Advance(d) => clock.advance_ticks(d),
            Op::TryOne | Op::TryAcquire(_) => {
                let k = if let Op::TryAcquire(k) = op { k } else { 1 };
                let expected = model.try_acquire(&key, at_now, k);
                let got = Outcome::of_try(table.try_acquire_n(&key, k));
                expected.check(&got, &units).map_err(at)?;
            }
            Op::Reserve(k) | Op::ReserveWithin(k, _) => {
                let (result, (expected, ticket)) = match op {
                    Op::ReserveWithin(_, max_wait) => (
                        table.reserve_n_within(&key, k, max_wait),
                        model.reserve_within(&key, at_now, k, max_wait),
                    ),
                    _ => (table.reserve_n(&key, k), model.reserve(&key, at_now, k)),
                };
                expected.check(&reserved(&result), &units).map_err(at)?;
                if let (Ok(r), Some(t)) = (result, ticket) {
                    open.push((r, t));
                }
            }
            Op::Cancel(i) | Op::Drop(i) | Op::Commit(i) if !open.is_empty() => {
                let (r, ticket) = open.remove(i % open.len());
                match op {
                    Op::Commit(_) => r.commit(),
                    // Cancelled rather than dropped: once the config changed, the tail rule
                    // leaves a choice a dropped reservation would hide.
                    _ => model.cancel(&ticket, at_now, r.cancel()).map_err(at)?,
                }
            }
            #[cfg(feature = "reconfigure")]
            Op::Reconfigure(config) => {
                table.reconfigure(config);
                model.reconfigure(at_now, config);
            }
            _ => {}
        }
        let now = now();
        for key in [key, (key + 1) % KEYS] {
            let at = |e: String| format!("after step {step}, key {key} at {now}: {e}");
            let (available, expected) = (table.available_permits(&key), model.available(&key, now));
            if available != expected {
                return Err(at(format!(
                    "available_permits {available}, the model says {expected}"
                )));
            }
            let expected = model.retry_after(&key, now);
            let got = table.retry_after(&key);
            let got = match expected {
                Outcome::NoRoom { .. } => Outcome::NoRoom { retry_after: got },
                _ => Outcome::Rejected { retry_after: got },
            };
            expected.check(&got, &units).map_err(at)?;
        }
        let live = model.live_keys(now).len();
        if table.len() != live {
            return Err(format!(
                "after step {step}: len() {}, the model has {live} live keys",
                table.len()
            ));
        }
        if table.keys_held() > capacity {
            return Err(format!(
                "after step {step}: {} keys held",
                table.keys_held()
            ));
        }
    }
    for (r, _) in open {
        r.commit();
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// SPEC §10 and §14 on a table with spare slots, full: refusals name the soonest live key's
    /// instant, an idle key anywhere makes room, no live key is dropped.
    #[test]
    fn a_full_table_with_spare_slots_matches_the_reference_model(
        seed in any::<u128>(),
        (config, fill, calls) in schedule(),
    ) {
        run(config, seed, fill, calls).map_err(TestCaseError::fail)?;
    }
}

/// Three quarters of the slots keys hash to: 1024 slots hold 743 keys, 8 slots 8.
#[test]
fn a_table_of_1024_slots_or_more_keeps_a_quarter_spare() {
    let config = Config::new(1, Duration::from_secs(1)).unwrap();
    let clock = ManualClock::new();
    let small: KeyedLimiter<u16, _, 8> = KeyedLimiter::with_clock("s", config, &clock, 1);
    let table: Table<'_> = KeyedLimiter::with_clock("t", config, &clock, 1);
    assert_eq!((small.capacity(), table.capacity()), (8, 743));
    for key in 0..743 {
        table.try_acquire(&key).unwrap();
    }
    let err = table.try_acquire(&743).unwrap_err();
    assert_eq!(err.reason(), ritmo_core::Reason::KeyCapacity);
    assert_eq!(err.retry_after(), Duration::from_secs(1));
    assert_eq!(table.snapshot().capacity, 743);
}
