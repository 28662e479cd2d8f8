//! Core's fixed keyed table at 1024 slots, where a quarter of the slots stays empty and the
//! soonest key is found from bounds per block (`keyed/table.rs`), against the shared reference
//! model (`ritmo-test-support`, from SPEC §10 and §14 alone): the table filled to its capacity
//! first, then random calls on more keys than it holds, so that new keys are refused with the
//! exact `retry_after`, idle keys make room, and keys are used, refunded and reconfigured after
//! the bounds were taken. Every answer, two keys' peeks and the number of live keys compared at
//! each step.

use core::time::Duration;

use proptest::prelude::*;
use ritmo_core::keyed::KeyedLimiter;
use ritmo_core::{Clock, Config, ManualClock};
use ritmo_test_support::{KeyedModel, KeyedOp, Op, Outcome, Units, ops, run_keyed_with_changes};

/// Slots of the table: the least that keeps spare slots.
const SLOTS: usize = 1024;
/// Keys the calls use: more than the table holds.
const KEYS: u16 = 1000;

type Table<'a> = KeyedLimiter<u16, &'a ManualClock, SLOTS>;

/// The table under test, on the clock the test moves.
struct Spare<'a> {
    limiter: Table<'a>,
    clock: &'a ManualClock,
}

ritmo_test_support::keyed_subject!([] Spare<'_>, u16);

/// A config of whole seconds (so that keys stay live while the table fills), the advances
/// between the keys that fill it, and the calls after.
fn schedule() -> impl Strategy<Value = (Config, Vec<u64>, Vec<KeyedOp<u16>>)> {
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
                )
                    .prop_map(|(key, op)| KeyedOp { key, op }),
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

/// Fills the table to its capacity, then runs `calls` on it and on the model with the shared
/// driver (every answer, two keys' peeks, the live keys and the keys held compared at each step).
fn run(config: Config, seed: u128, fill: Vec<u64>, calls: Vec<KeyedOp<u16>>) -> Result<(), String> {
    let clock = ManualClock::new();
    let spare = Spare {
        limiter: KeyedLimiter::with_clock("spare", config, &clock, seed),
        clock: &clock,
    };
    let units = Units::NANOS;
    let capacity = spare.limiter.capacity();
    let mut model = KeyedModel::new(units, config, capacity);
    for (key, advance) in fill.iter().take(capacity).enumerate() {
        clock.advance_ticks(*advance);
        let key = key as u16;
        let expected = model.try_acquire(&key, clock.now(), 1);
        expected
            .check(&Outcome::of_try(spare.limiter.try_acquire(&key)), &units)
            .map_err(|e| format!("filling, key {key}: {e}"))?;
    }
    if model.live_keys(clock.now()).len() != capacity || spare.limiter.len() != capacity {
        return Err(format!(
            "not full after the fill: {} live",
            spare.limiter.len()
        ));
    }
    #[cfg(feature = "reconfigure")]
    let reconfigure: Option<ritmo_test_support::Reconfigure<'_, Spare<'_>>> =
        Some(&|spare, config| spare.limiter.reconfigure(config));
    #[cfg(not(feature = "reconfigure"))]
    let reconfigure = None;
    run_keyed_with_changes(&spare, model, KEYS, calls, reconfigure)
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
