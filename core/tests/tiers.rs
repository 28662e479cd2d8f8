//! Per-key tiers on core's fixed keyed table (SPEC §18): random schedules that flood a small
//! table with keys and move keys between tiers at random points, against the shared reference
//! model (`ritmo-test-support`'s `TieredModel`, written from SPEC §18 and issue 21's words); and
//! the rules pinned with numbers: an upgrade is a reconfigure of that key alone, an unknown tier
//! is a clear refusal, and a table of one config does not grow.

use core::cell::RefCell;
use core::time::Duration;

use proptest::prelude::*;
use ritmo_core::keyed::{KeyedLimiter, Tier, Tiers};
use ritmo_core::{AcquireError, Clock, Config, ManualClock, Reason, const_config};
use ritmo_test_support::{TieredModel, TieredStep, Units, run_tiered, tiered_schedule};

/// Slots of the table: far fewer than the keys, so that new keys flood it.
const CAP: usize = 4;
/// Keys the property tests use.
const KEYS: u8 = 12;
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
    KeyedLimiter<u8, &'a ManualClock<HZ>, CAP, Tiers<u8, TIERS, usize>>;

struct Table<'a, const HZ: u64> {
    limiter: Limiter<'a, HZ>,
    clock: &'a ManualClock<HZ>,
}

ritmo_test_support::keyed_subject!([const HZ: u64] Table<'_, HZ>);

fn run<const HZ: u64>(
    configs: Vec<Config>,
    seed: u128,
    steps: Vec<TieredStep>,
) -> Result<(), TestCaseError> {
    PLAN.with(|p| *p.borrow_mut() = [0; 256]);
    let tiers: [Tier<usize>; TIERS] = core::array::from_fn(|i| Tier::of(i, NAMES[i], configs[i]));
    let clock = ManualClock::<HZ>::with_reading(0);
    let table = Table::<HZ> {
        limiter: KeyedLimiter::tiered_with_clock("tiers", Tiers::new(tiers, plan), &clock, seed),
        clock: &clock,
    };
    let model = TieredModel::new(Units::new(HZ), configs, CAP);
    // Tier configs change live only with the feature `reconfigure` (the schedule has none without).
    let set_config = |tier: usize, config: Config| {
        #[cfg(feature = "reconfigure")]
        table.limiter.set_tier_config(NAMES[tier], config).unwrap();
        let _ = (tier, config);
    };
    run_tiered(&table, model, KEYS, steps, set_plan, set_config).map_err(TestCaseError::fail)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Keys switching tiers at random points in a table flooded with new keys.
    #[test]
    fn the_tiered_table_matches_the_reference_model(
        seed in any::<u128>(),
        (configs, steps) in tiered_schedule(TIERS, Units::NANOS, KEYS, 300, cfg!(feature = "reconfigure")),
    ) {
        run::<1_000_000_000>(configs, seed, steps)?;
    }

    /// The same on a 32 kHz clock (units are fractions of a tick).
    #[test]
    fn the_tiered_table_matches_the_reference_model_on_a_32_khz_clock(
        seed in any::<u128>(),
        (configs, steps) in tiered_schedule(TIERS, Units::new(32_768), KEYS, 300, cfg!(feature = "reconfigure")),
    ) {
        run::<32_768>(configs, seed, steps)?;
    }
}

/// Customers 100 and above pay.
fn paid_from_100(key: &u32) -> &'static str {
    if *key >= 100 { "paid" } else { "free" }
}

static CLOCK: ManualClock = ManualClock::new();
static API: KeyedLimiter<u32, &ManualClock, 8, Tiers<u32, 2>> = KeyedLimiter::tiered(
    "api",
    Tiers::new(
        [
            Tier::new("free", const_config!(2, Duration::from_secs(60))),
            Tier::new("paid", const_config!(100, Duration::from_secs(60))),
        ],
        paid_from_100,
    ),
    &CLOCK,
    0x5eed,
);

/// A `static` tiered table: each key its own tier's quota.
#[test]
fn a_static_tiered_table_gives_each_key_its_tiers_quota() {
    for _ in 0..2 {
        API.try_acquire(&7).unwrap();
    }
    assert_eq!(
        API.try_acquire(&7).unwrap_err().reason(),
        Reason::NoPermitInTime
    );
    API.try_acquire_n(&100, 100).unwrap();
    assert!(API.try_acquire(&100).is_err());
    assert!(matches!(
        API.try_acquire_n(&8, 3),
        Err(AcquireError::InvalidPermits(_))
    ));
    assert_eq!(API.tier(&100).map(Tier::name), Some("paid"));
}

thread_local! {
    static UPGRADED: RefCell<bool> = const { RefCell::new(false) };
}

/// Key 1 is on the paid tier once upgraded.
fn upgraded(key: &u8) -> usize {
    usize::from(*key == 1 && UPGRADED.with(|u| *u.borrow()))
}

/// An upgrade is a `reconfigure` of that key alone (SPEC §14, §18): no fresh burst (an exhausted
/// free key stays exhausted, then earns permits at the paid rate), nothing lost (available
/// permits carry over, capped at the paid tier's), other keys untouched.
#[test]
fn an_upgrade_reconfigures_that_key_alone_without_a_fresh_burst() {
    let clock = ManualClock::new();
    let tiers = Tiers::new(
        [
            Tier::of(0, "free", Config::new(2, Duration::from_secs(60)).unwrap()),
            Tier::of(1, "paid", Config::new(60, Duration::from_secs(60)).unwrap()),
        ],
        upgraded,
    );
    let l: KeyedLimiter<u8, _, 8, _> = KeyedLimiter::tiered_with_clock("api", tiers, &clock, 1);
    l.try_acquire_n(&1, 2).unwrap();
    l.try_acquire(&2).unwrap();
    assert_eq!(l.retry_after(&1), Duration::from_secs(30));
    UPGRADED.with(|u| *u.borrow_mut() = true);
    // No fresh burst: still nothing available, and the next permit no later than before.
    assert_eq!(l.available_permits(&1), 0);
    assert_eq!(
        l.try_acquire(&1).unwrap_err().reason(),
        Reason::NoPermitInTime
    );
    assert!(l.retry_after(&1) <= Duration::from_secs(1));
    clock.advance(Duration::from_secs(1));
    l.try_acquire(&1).unwrap(); // the paid rate: one a second
    assert_eq!(l.available_permits(&2), 1); // key 2 untouched
    // A downgrade keeps min(available, 2).
    clock.advance(Duration::from_secs(30));
    assert_eq!(l.available_permits(&1), 30);
    UPGRADED.with(|u| *u.borrow_mut() = false);
    assert_eq!(l.available_permits(&1), 2);
    l.try_acquire_n(&1, 2).unwrap();
    assert!(l.try_acquire(&1).is_err());
}

/// A reservation made before an upgrade gives nothing back once the key has been carried over
/// to another tier's numbers (here by a refused call: the carry-over happens whatever the
/// call's outcome); before that, it goes back by the tail rule. A read changes nothing.
#[test]
fn a_reservation_goes_back_only_on_its_own_tier() {
    PLAN.with(|p| *p.borrow_mut() = [0; 256]);
    let clock = ManualClock::new();
    let c = |n| Config::new(n, Duration::from_secs(2)).unwrap();
    let tiers = Tiers::new(
        [
            Tier::of(0, "a", c(2)),
            Tier::of(1, "b", c(4)),
            Tier::of(2, "c", c(1)),
        ],
        plan as fn(&u8) -> usize,
    );
    let l: Limiter<'_, 1_000_000_000> = KeyedLimiter::tiered_with_clock("t", tiers, &clock, 1);
    let r = l.reserve(&1).unwrap();
    set_plan(1, 1);
    assert_eq!(l.available_permits(&1), 1); // min(1, 4), as a call now would find it
    assert!(r.cancel()); // not carried over yet: back by the tail rule
    assert_eq!(l.available_permits(&1), 4); // idle again: b's full burst
    set_plan(1, 0);
    let r = l.reserve(&1).unwrap();
    set_plan(1, 1);
    assert!(l.try_acquire_n(&1, 3).is_err()); // carried over to b: 1 available
    assert!(!r.cancel());
    assert_eq!(l.available_permits(&1), 1);
}

fn out_of_range(key: &u8) -> usize {
    usize::from(*key)
}

/// A tier function that answers a plan no tier has gets a refusal that says so, and
/// `retry_after` "never"; nothing panics and nothing changes.
#[test]
fn an_unknown_tier_is_a_clear_refusal_never_a_panic() {
    let tiers = Tiers::new(
        [Tier::of(
            0,
            "only",
            Config::new(1, Duration::from_secs(1)).unwrap(),
        )],
        out_of_range,
    );
    let l: KeyedLimiter<u8, _, 4, _> =
        KeyedLimiter::tiered_with_clock("api", tiers, ManualClock::new(), 1);
    let e = l.try_acquire(&3).unwrap_err();
    assert_eq!(e.reason(), Reason::UnknownTier);
    assert!(e.retry_after() > Duration::from_secs(3600 * 24 * 365 * 100));
    assert!(e.to_string().contains("no tier"), "{e}");
    assert!(
        matches!(l.reserve_n(&3, 1), Err(AcquireError::RateLimited(e)) if e.reason() == Reason::UnknownTier)
    );
    assert_eq!(l.available_permits(&3), 0);
    assert!(l.retry_after(&3) > Duration::from_secs(3600 * 24 * 365 * 100));
    assert_eq!(l.keys_held(), 0);
    assert!(l.try_acquire(&0).is_ok());
}

/// A keyed table of one config keeps no tier: a slot, and the whole table, are the size they
/// were (a `u32` key: 16 bytes a slot on a 64-bit host).
#[test]
fn a_table_of_one_config_does_not_grow() {
    type One = KeyedLimiter<u32, &'static ManualClock, 8>;
    type Two = KeyedLimiter<u32, &'static ManualClock, 8, Tiers<u32, 2>>;
    let one = core::mem::size_of::<One>();
    let two = core::mem::size_of::<Two>();
    // 8 slots of a u32 key and a u64 state: 16 bytes each; the tiered table spends 8 more each
    // (a byte, padded), and its tier set.
    assert!(two >= one + 8 * 8, "{one} {two}");
    assert_eq!(
        core::mem::size_of::<KeyedLimiter<u32, &'static ManualClock, 16>>() - one,
        8 * 16
    );
}
