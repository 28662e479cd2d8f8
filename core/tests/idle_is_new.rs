//! SPEC §14, "idle is new", on every kind in core: a limiter, band or key whose burst is full
//! under the config in force carries nothing a new one lacks, so a `reconfigure` starts it afresh
//! under the new config (its full burst), and enabling a disabled one does too; no decision
//! depends on whether the keyed table kept or dropped an idle key. Each test is the exact
//! scenario that failed before the rule held (see the commit that added it).
#![cfg(feature = "reconfigure")]

use core::time::Duration;

use proptest::prelude::*;
use ritmo_core::keyed::KeyedLimiter;
use ritmo_core::{Bands, Clock, Config, ManualClock, RateLimiter};
use ritmo_test_support::{KeyedModel, KeyedOp, Units, ops, run_keyed_with_changes};

fn cfg(n: u32, ms: u64) -> Config {
    Config::new(n, Duration::from_millis(ms)).unwrap()
}

/// How the table may have treated the idle keys 1 and 3 before the change.
#[derive(Debug, Clone, Copy)]
enum Reclaim {
    /// Kept them.
    None,
    /// Dropped them for two other keys while enabled (a two-slot table reuses idle slots).
    BeforeDisable,
    /// Dropped them for two other keys while disabled.
    WhileDisabled,
}

/// 2 per 1 s; keys 1 and 3 take one each; 2 s pass; disable; enable at 4 per 1 s: keys 1, 2
/// (never seen) and 3 each have the new config's full burst, 4, whether or not the table kept
/// keys 1 and 3 (it answered 2, 4, 2 while it kept them).
#[test]
fn keyed_table_enabling_a_disabled_config_starts_idle_keys_afresh() {
    for reclaim in [
        Reclaim::None,
        Reclaim::BeforeDisable,
        Reclaim::WhileDisabled,
    ] {
        let clock = ManualClock::new();
        let two = cfg(2, 1000);
        let t: KeyedLimiter<u8, _, 2> = KeyedLimiter::with_clock("k", two, &clock, 7);
        t.try_acquire(&1).unwrap();
        t.try_acquire(&3).unwrap();
        clock.advance(Duration::from_secs(2));
        if let Reclaim::BeforeDisable = reclaim {
            t.try_acquire(&5).unwrap();
            t.try_acquire(&6).unwrap();
        }
        t.reconfigure(two.with_enabled(false));
        if let Reclaim::WhileDisabled = reclaim {
            t.try_acquire(&5).unwrap();
            t.try_acquire(&6).unwrap();
        }
        t.reconfigure(cfg(4, 1000));
        let available = [1u8, 2, 3].map(|key| t.available_permits(&key));
        assert_eq!(available, [4, 4, 4], "{reclaim:?}");
    }
}

/// A key still limited when the limiter was disabled starts afresh too when it is enabled: while
/// disabled it admitted everything, so nothing is escaped.
#[test]
fn keyed_table_enabling_starts_a_key_limited_before_the_disable_afresh() {
    let clock = ManualClock::new();
    let t: KeyedLimiter<u8, _, 4> = KeyedLimiter::with_clock("k", cfg(2, 1000), &clock, 7);
    t.try_acquire_n(&1, 2).unwrap();
    t.reconfigure(cfg(2, 1000).with_enabled(false));
    t.reconfigure(cfg(4, 1000));
    assert_eq!(t.available_permits(&1), 4);
}

/// A reconfigure starts an idle key afresh under the new config: 2 per 1 s, key 1 takes one and
/// is idle 1 s later; 4 per 1 s then gives it 4, as key 2 (never seen).
#[test]
fn keyed_table_reconfigure_starts_an_idle_key_afresh() {
    let clock = ManualClock::new();
    let t: KeyedLimiter<u8, _, 4> = KeyedLimiter::with_clock("k", cfg(2, 1000), &clock, 7);
    t.try_acquire(&1).unwrap();
    clock.advance(Duration::from_secs(1));
    t.reconfigure(cfg(4, 1000));
    assert_eq!([1u8, 2].map(|key| t.available_permits(&key)), [4, 4]);
}

/// Enabling a disabled 2 per 250 ms limiter as 4 per 250 ms leaves 4 available (it left 2).
#[test]
fn single_limiter_enabling_a_disabled_config_starts_it_afresh() {
    let clock = ManualClock::new();
    let l = RateLimiter::new("one", cfg(2, 250), &clock);
    l.reconfigure(cfg(2, 250).with_enabled(false));
    l.reconfigure(cfg(4, 250));
    assert_eq!(l.available_permits(), 4);
    // Limited before the disable: afresh all the same.
    let l = RateLimiter::new("two", cfg(2, 250), &clock);
    l.try_acquire_n(2).unwrap();
    l.reconfigure(cfg(2, 250).with_enabled(false));
    l.reconfigure(cfg(4, 250));
    assert_eq!(l.available_permits(), 4);
}

/// A reconfigure of an idle single limiter starts it afresh: 2 per 250 ms, one taken, idle
/// 250 ms later; 4 per 250 ms then leaves 4 available (it left 2). The first change of a limiter
/// and a later one (the two paths of the reconfigured limiter) alike.
#[test]
fn single_limiter_reconfigure_starts_an_idle_limiter_afresh() {
    let clock = ManualClock::new();
    let l = RateLimiter::new("one", cfg(2, 250), &clock);
    l.try_acquire().unwrap();
    clock.advance(Duration::from_millis(250));
    l.reconfigure(cfg(4, 250));
    assert_eq!(l.available_permits(), 4);
    l.try_acquire().unwrap();
    clock.advance(Duration::from_millis(250));
    l.reconfigure(cfg(8, 250));
    assert_eq!(l.available_permits(), 8);
}

/// Bands: each band idle under its config starts afresh; a band still limited keeps
/// `min(available, new permits)`; enabling disabled bands starts every band afresh.
#[test]
fn bands_reconfigure_starts_idle_bands_afresh() {
    let clock = ManualClock::new();
    let b = Bands::new("b", [cfg(2, 250), cfg(10, 10_000)], &clock);
    b.try_acquire().unwrap();
    clock.advance(Duration::from_millis(250));
    // The 250 ms band is idle again; the 10 s band has 9 and is still limited.
    b.reconfigure([cfg(4, 250), cfg(20, 10_000)]);
    assert_eq!(b.available_permits_per_band(), [4, 9]);
    b.try_acquire_n(4).unwrap();
    b.reconfigure([
        cfg(4, 250).with_enabled(false),
        cfg(20, 10_000).with_enabled(false),
    ]);
    b.reconfigure([cfg(8, 250), cfg(30, 10_000)]);
    assert_eq!(b.available_permits_per_band(), [8, 30]);
}

/// The table and the clock it reads.
struct Table<'a, const HZ: u64, const N: usize> {
    limiter: KeyedLimiter<u8, &'a ManualClock<HZ>, N>,
    clock: &'a ManualClock<HZ>,
}

ritmo_test_support::keyed_subject!([const HZ: u64, const N: usize] Table<'_, HZ, N>);

/// Runs `ops` with changes of config on a table of 3 slots for 8 keys, against the model.
fn run_with_changes<const HZ: u64>(
    config: Config,
    seed: u128,
    ops: Vec<KeyedOp>,
) -> Result<(), TestCaseError> {
    let clock = ManualClock::<HZ>::with_reading(0);
    let table = Table::<HZ, 3> {
        limiter: KeyedLimiter::with_clock("keyed", config, &clock, seed),
        clock: &clock,
    };
    let model = KeyedModel::new(Units::new(HZ), config, 3);
    let reconfigure = |t: &Table<'_, HZ, 3>, c: Config| t.limiter.reconfigure(c);
    run_keyed_with_changes(&table, model, 8, ops, Some(&reconfigure)).map_err(TestCaseError::fail)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// The table under changes of config (disabled and enabled again among them), every answer,
    /// peek and live-key count compared with the model (SPEC §14: idle keys afresh, live keys
    /// `min(available, n')`). Failed before idle was new for a disabled config.
    #[test]
    fn keyed_table_reconfigure_matches_the_reference_model(
        seed in any::<u128>(),
        (config, ops) in ops::keyed_schedule_with_changes(6, Duration::from_secs(2), Units::NANOS, 8, 200),
    ) {
        run_with_changes::<1_000_000_000>(config, seed, ops)?;
    }

    /// The same on a 32768 Hz clock.
    #[test]
    fn keyed_table_reconfigure_matches_the_reference_model_on_a_coarse_clock(
        seed in any::<u128>(),
        (config, ops) in ops::keyed_schedule_with_changes(6, Duration::from_secs(2), Units::new(32_768), 8, 200),
    ) {
        run_with_changes::<32_768>(config, seed, ops)?;
    }
}
