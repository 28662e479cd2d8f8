//! Per-key tiers on the std sharded map (SPEC §18): random schedules that flood the map with new
//! keys and move keys between tiers at random points, against the shared reference model
//! (`ritmo-test-support`'s `TieredModel`, written from SPEC §18 and issue 21's words), in little
//! room and in more keys than the map remembers after a scan; and threads racing an upgrade.

use core::cell::RefCell;
use core::time::Duration;
use std::sync::atomic::{AtomicUsize, Ordering};

use proptest::prelude::*;
use ritmo_core::keyed::{Tier, Tiers};
use ritmo_core::{AcquireError, Clock, Config, ManualClock, Reason};
use ritmo_std::KeyedRateLimiter;
use ritmo_test_support::{TieredModel, TieredStep, Units, run_tiered, tiered_schedule};

/// Tiers of the property tests, and their names.
const TIERS: usize = 3;
const NAMES: [&str; TIERS] = ["a", "b", "c"];

thread_local! {
    /// The tier each key is on in this thread's test case: what [`plan`] answers.
    static PLAN: RefCell<[usize; 256]> = const { RefCell::new([0; 256]) };
}

/// The tier function: a plain `fn`, reading the plan the test changes.
fn plan(key: &u8) -> usize {
    PLAN.with(|p| p.borrow()[usize::from(*key)])
}

fn set_plan(key: u8, tier: usize) {
    PLAN.with(|p| p.borrow_mut()[usize::from(key)] = tier);
}

type Limiter<'a, const HZ: u64> =
    KeyedRateLimiter<u8, &'a ManualClock<HZ>, Tiers<u8, TIERS, usize>>;

struct Map<'a, const HZ: u64> {
    limiter: Limiter<'a, HZ>,
    clock: &'a ManualClock<HZ>,
}

ritmo_test_support::keyed_subject!([const HZ: u64] Map<'_, HZ>);

fn run<const HZ: u64>(
    configs: Vec<Config>,
    max_keys: usize,
    keys: u8,
    steps: Vec<TieredStep>,
) -> Result<(), TestCaseError> {
    PLAN.with(|p| *p.borrow_mut() = [0; 256]);
    let tiers: [Tier<usize>; TIERS] = core::array::from_fn(|i| Tier::of(i, NAMES[i], configs[i]));
    let clock = ManualClock::<HZ>::with_reading(0);
    let map = Map::<HZ> {
        limiter: KeyedRateLimiter::tiered_with_clock(
            "tiers",
            Tiers::new(tiers, plan),
            max_keys,
            &clock,
        ),
        clock: &clock,
    };
    let model = TieredModel::new(Units::new(HZ), configs, max_keys);
    let set_config = |tier: usize, config: Config| {
        map.limiter.set_tier_config(NAMES[tier], config).unwrap();
    };
    run_tiered(&map, model, keys, steps, set_plan, set_config).map_err(TestCaseError::fail)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Four slots for twelve keys switching tiers.
    #[test]
    fn the_tiered_std_map_matches_the_reference_model(
        (configs, steps) in tiered_schedule(TIERS, Units::NANOS, 12, 300, true),
    ) {
        run::<1_000_000_000>(configs, 4, 12, steps)?;
    }

    /// More keys than the map remembers after a scan (40 slots, 56 keys), on a 32 kHz clock.
    #[test]
    fn the_crowded_tiered_std_map_matches_the_reference_model(
        (configs, steps) in tiered_schedule(TIERS, Units::new(32_768), 56, 500, true),
    ) {
        run::<32_768>(configs, 40, 56, steps)?;
    }
}

/// Key 1's tier, changed by the test while threads call.
static KEY_ONE_TIER: AtomicUsize = AtomicUsize::new(0);

fn key_one_moves(key: &u8) -> usize {
    if *key == 1 {
        KEY_ONE_TIER.load(Ordering::SeqCst)
    } else {
        0
    }
}

/// Threads hammer a key that spent its free burst while it is upgraded and downgraded: with the
/// clock standing still, no change of tier hands out a permit (`min(0, new permits)` = 0), however
/// the calls and the changes interleave.
#[test]
fn an_upgrade_racing_calls_hands_out_no_fresh_burst() {
    let clock = ManualClock::new();
    let tiers = Tiers::new(
        [
            Tier::of(0, "free", Config::new(10, Duration::from_secs(60)).unwrap()),
            Tier::of(
                1,
                "paid",
                Config::new(1000, Duration::from_secs(60)).unwrap(),
            ),
        ],
        key_one_moves,
    );
    let l = KeyedRateLimiter::tiered_with_clock("api", tiers, 100, &clock);
    l.try_acquire_n(&1, 10).unwrap();
    let admitted = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..200 {
                    if l.try_acquire(&1).is_ok() {
                        admitted.fetch_add(1, Ordering::SeqCst);
                    }
                }
            });
        }
        s.spawn(|| {
            for tier in [1, 0, 1] {
                KEY_ONE_TIER.store(tier, Ordering::SeqCst);
                std::thread::yield_now();
            }
        });
    });
    assert_eq!(admitted.load(Ordering::SeqCst), 0);
    assert_eq!(l.available_permits(&1), 0);
    assert_eq!(l.tier(&1).map(Tier::name), Some("paid"));
}

/// Threads hammer keys that spent their burst while their tier's config changes live, back and
/// forth: with the clock standing still, no change hands out a permit (`min(0, new permits)` =
/// 0), however the calls and the conversions interleave; a key of the other tier is untouched.
#[test]
fn a_live_tier_change_racing_calls_hands_out_no_permit() {
    let clock = ManualClock::new();
    let minute = Duration::from_secs(60);
    let tiers = Tiers::new(
        [
            Tier::new("free", Config::new(10, minute).unwrap()),
            Tier::new("paid", Config::new(20, minute).unwrap()),
        ],
        |key: &u8| if *key < 100 { "free" } else { "paid" },
    );
    let l = KeyedRateLimiter::tiered_with_clock("api", tiers, 100, &clock);
    for key in 0..4 {
        l.try_acquire_n(&key, 10).unwrap();
    }
    l.try_acquire_n(&100, 5).unwrap();
    let admitted = AtomicUsize::new(0);
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        for t in 0..4u8 {
            let (l, admitted, done) = (&l, &admitted, &done);
            s.spawn(move || {
                while !done.load(Ordering::SeqCst) {
                    if l.try_acquire(&t).is_ok() {
                        admitted.fetch_add(1, Ordering::SeqCst);
                    }
                }
            });
        }
        s.spawn(|| {
            // A key spent under one config holds a state the other would admit from: a call
            // that mixed the two (old numbers on a converted state, or new on an unconverted
            // one) would pass.
            let second = Duration::from_secs(1);
            for _ in 0..100 {
                for (permits, period) in [(1000, second), (10, minute)] {
                    l.set_tier_config("free", Config::new(permits, period).unwrap())
                        .unwrap();
                    std::thread::yield_now();
                }
            }
            done.store(true, Ordering::SeqCst);
        });
    });
    assert_eq!(admitted.load(Ordering::SeqCst), 0);
    assert_eq!(l.available_permits(&0), 0);
    assert_eq!(l.available_permits(&100), 15);
    assert_eq!(l.tiers().config_of(0).permits(), 10);
}

/// A tier function that answers an index with no tier: a clear refusal, never a panic.
#[test]
fn an_unknown_tier_is_a_clear_refusal() {
    let tiers = Tiers::new(
        [Tier::of(
            0,
            "only",
            Config::new(1, Duration::from_secs(1)).unwrap(),
        )],
        |key: &u8| usize::from(*key),
    );
    let l = KeyedRateLimiter::tiered_with_clock("api", tiers, 10, ManualClock::new());
    assert_eq!(l.try_acquire(&2).unwrap_err().reason(), Reason::UnknownTier);
    assert!(matches!(
        l.try_acquire_n(&2, 1),
        Err(AcquireError::RateLimited(e)) if e.reason() == Reason::UnknownTier
    ));
    assert_eq!(l.available_permits(&2), 0);
    assert_eq!(l.keys_held(), 0);
    assert!(l.try_acquire(&0).is_ok());
}
