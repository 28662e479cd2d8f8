//! SPEC §14, "idle is new", on the std sharded map: a `reconfigure` starts an idle key afresh
//! under the new config, and enabling a disabled map starts every key afresh; no decision depends
//! on whether the map kept or dropped an idle key (`reclaim_idle` between, or not).

use core::time::Duration;

use proptest::prelude::*;
use ritmo_core::{Clock, Config, ManualClock};
use ritmo_std::KeyedRateLimiter;
use ritmo_test_support::{KeyedModel, KeyedOp, Units, ops, run_keyed_with_changes};

fn cfg(n: u32, ms: u64) -> Config {
    Config::new(n, Duration::from_millis(ms)).unwrap()
}

/// When the map drops idle keys before the change, if ever.
#[derive(Debug, Clone, Copy)]
enum Reclaim {
    None,
    BeforeDisable,
    WhileDisabled,
}

/// 2 per 1 s; keys 1 and 3 take one each; 2 s pass; disable; enable at 4 per 1 s: keys 1, 2
/// (never seen) and 3 each have 4 (the map answered 2, 4, 2 while it kept keys 1 and 3).
#[test]
fn std_map_enabling_a_disabled_config_starts_idle_keys_afresh() {
    for reclaim in [
        Reclaim::None,
        Reclaim::BeforeDisable,
        Reclaim::WhileDisabled,
    ] {
        let clock = ManualClock::new();
        let two = cfg(2, 1000);
        let map = KeyedRateLimiter::with_clock("k", two, 100, &clock);
        map.try_acquire(&1u8).unwrap();
        map.try_acquire(&3).unwrap();
        clock.advance(Duration::from_secs(2));
        if let Reclaim::BeforeDisable = reclaim {
            map.reclaim_idle();
        }
        map.reconfigure(two.with_enabled(false));
        if let Reclaim::WhileDisabled = reclaim {
            map.reclaim_idle();
        }
        map.reconfigure(cfg(4, 1000));
        let available = [1u8, 2, 3].map(|key| map.available_permits(&key));
        assert_eq!(available, [4, 4, 4], "{reclaim:?}");
    }
}

/// A key still limited when the map was disabled starts afresh too when it is enabled.
#[test]
fn std_map_enabling_starts_a_key_limited_before_the_disable_afresh() {
    let clock = ManualClock::new();
    let map = KeyedRateLimiter::with_clock("k", cfg(2, 1000), 100, &clock);
    map.try_acquire_n(&1u8, 2).unwrap();
    map.reconfigure(cfg(2, 1000).with_enabled(false));
    map.reconfigure(cfg(4, 1000));
    assert_eq!(map.available_permits(&1), 4);
    assert_eq!(map.len(), 0, "no key is live");
}

/// A reconfigure starts an idle key afresh, kept or reclaimed: 2 per 1 s, key 1 takes one and
/// is idle 1 s later; 4 per 1 s gives it 4.
#[test]
fn std_map_reconfigure_starts_an_idle_key_afresh() {
    for reclaim in [false, true] {
        let clock = ManualClock::new();
        let map = KeyedRateLimiter::with_clock("k", cfg(2, 1000), 100, &clock);
        map.try_acquire(&1u8).unwrap();
        clock.advance(Duration::from_secs(1));
        if reclaim {
            map.reclaim_idle();
        }
        map.reconfigure(cfg(4, 1000));
        assert_eq!([1u8, 2].map(|key| map.available_permits(&key)), [4, 4]);
    }
}

/// The map and the clock it reads.
struct Map<'a, const HZ: u64> {
    limiter: KeyedRateLimiter<u8, &'a ManualClock<HZ>>,
    clock: &'a ManualClock<HZ>,
}

ritmo_test_support::keyed_subject!([const HZ: u64] Map<'_, HZ>);

/// Runs `ops` with changes of config on a map of 3 keys' room for 8 keys, against the model;
/// with `reclaim`, the map drops every idle key after every change (no decision may differ).
fn run_with_changes<const HZ: u64>(
    config: Config,
    reclaim: bool,
    ops: Vec<KeyedOp>,
) -> Result<(), TestCaseError> {
    let clock = ManualClock::<HZ>::with_reading(0);
    let map = Map::<HZ> {
        limiter: KeyedRateLimiter::with_clock("keyed", config, 3, &clock),
        clock: &clock,
    };
    let model = KeyedModel::new(Units::new(HZ), config, 3);
    let reconfigure = |m: &Map<'_, HZ>, c: Config| {
        m.limiter.reconfigure(c);
        if reclaim {
            m.limiter.reclaim_idle();
        }
    };
    run_keyed_with_changes(&map, model, 8, ops, Some(&reconfigure)).map_err(TestCaseError::fail)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// The map under changes of config (disabled and enabled again among them), every answer,
    /// peek and live-key count compared with the model, with and without dropping idle keys
    /// after each change. Failed before idle was new for a disabled config.
    #[test]
    fn std_map_reconfigure_matches_the_reference_model(
        reclaim in any::<bool>(),
        (config, ops) in ops::keyed_schedule_with_changes(6, Duration::from_secs(2), Units::NANOS, 8, 200),
    ) {
        run_with_changes::<1_000_000_000>(config, reclaim, ops)?;
    }

    /// The same on a 32768 Hz clock.
    #[test]
    fn std_map_reconfigure_matches_the_reference_model_on_a_coarse_clock(
        reclaim in any::<bool>(),
        (config, ops) in ops::keyed_schedule_with_changes(6, Duration::from_secs(2), Units::new(32_768), 8, 200),
    ) {
        run_with_changes::<32_768>(config, reclaim, ops)?;
    }
}
