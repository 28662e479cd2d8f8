//! `Bands::reconfigure` against the shared reference model (`ritmo-test-support`, from SPEC
//! alone): SPEC §14 and §17 for every band at once. In each band whose config changes, the
//! permits available become `min(available, new permits)` and permits owed stay owed; a band
//! whose config is the same keeps its state exactly, and a change to the configs in force changes
//! nothing. Random schedules of calls, reservations and changes on a nanosecond clock and on
//! coarse ones, every answer and peek compared, then each band's window bound within each config
//! and after each change.

use core::time::Duration;

use proptest::prelude::*;
use ritmo_core::{AcquireError, Bands, BandsReservation, Clock, Config, ManualClock};
use ritmo_test_support::{
    BandsModel, BandsTicket, Op, Outcome, Units, Use, bound_after_change, ops, window_bound,
};

/// What a `reserve_n` answered, as an [`Outcome`].
fn reserved<C: Clock, const B: usize>(
    result: &Result<BandsReservation<'_, C, B>, AcquireError>,
) -> Outcome {
    match result {
        Ok(r) => Outcome::Reserved {
            wait: r.wait_time(),
            slot: r.slot(),
        },
        Err(e) => Outcome::of_error(e),
    }
}

/// The configs in force from `at` (units) on, and each band's permits kept at the change.
struct Epoch {
    at: u128,
    configs: Vec<Config>,
    kept: Vec<u32>,
}

/// Each band's bound within each epoch, and after each change never more than what the band
/// kept at the change plus its new rate.
fn check_bounds(uses: &[(Use, u32)], epochs: &[Epoch], units: &Units) -> Result<(), String> {
    for (e, epoch) in epochs.iter().enumerate() {
        let mine: Vec<Use> = uses
            .iter()
            .filter(|(_, of)| *of == e as u32)
            .map(|(u, _)| *u)
            .collect();
        for (b, c) in epoch.configs.iter().enumerate() {
            if !c.enabled() {
                continue;
            }
            window_bound(&mine, c.permits(), c.period(), units)
                .map_err(|m| format!("epoch {e}, band {b}: {m}"))?;
            if e > 0 {
                bound_after_change(
                    &mine,
                    epoch.at,
                    epoch.kept[b],
                    c.permits(),
                    c.period(),
                    units,
                )
                .map_err(|m| format!("epoch {e}, band {b}: {m}"))?;
            }
        }
    }
    Ok(())
}

/// The configs after `Op::Reconfigure(new)`: `new` replaces the band its period picks; a config
/// whose period is an odd number of nanoseconds above 2 s disables that band instead, if another
/// band stays enabled (so that bands are turned off and back on too).
fn changed(current: &[Config], new: Config) -> Vec<Config> {
    let nanos = new.period().as_nanos();
    let band = (nanos % current.len() as u128) as usize;
    let others = (0..current.len()).any(|i| i != band && current[i].enabled());
    let mut configs = current.to_vec();
    configs[band] = if others && nanos > 2_000_000_000 && nanos % 2 == 1 {
        new.with_enabled(false)
    } else {
        new
    };
    configs
}

/// Runs `ops` (with reconfigures) on `Bands` of `spec` on a `ManualClock::<HZ>` and on the model.
fn run<const HZ: u64, const B: usize>(spec: &[Config], ops: Vec<Op>) -> Result<(), TestCaseError> {
    let units = Units::new(HZ);
    let clock = ManualClock::<HZ>::with_reading(0);
    let configs: [Config; B] = core::array::from_fn(|i| spec[i]);
    let bands = Bands::with_clock("model", configs, &clock);
    let mut model = BandsModel::new(units, spec, BandsModel::default_max_wait(spec));
    let mut epochs = vec![Epoch {
        at: 0,
        configs: spec.to_vec(),
        kept: spec.iter().map(|c| c.permits()).collect(),
    }];
    let mut open: Vec<(BandsReservation<'_, &ManualClock<HZ>, B>, BandsTicket)> = Vec::new();
    let mut uses: Vec<(Use, u32)> = Vec::new();
    let fail = TestCaseError::fail;

    for op in ops {
        let now = clock.now();
        let epoch = (epochs.len() - 1) as u32;
        match op {
            Op::Advance(d) => clock.advance_ticks(d),
            Op::TryOne | Op::TryAcquire(_) => {
                let k = if let Op::TryAcquire(k) = op { k } else { 1 };
                let expected = model.try_acquire(now, k);
                let got = Outcome::of_try(bands.try_acquire_n(k));
                expected.check(&got, &units).map_err(fail)?;
                if got == Outcome::Admitted {
                    uses.push((Use::at_reading(&units, now, k), epoch));
                }
            }
            Op::Reserve(k) | Op::ReserveWithin(k, _) => {
                let (result, (expected, ticket)) = match op {
                    Op::ReserveWithin(_, max_wait) => (
                        bands.reserve_n_within(k, max_wait),
                        model.reserve_within(now, k, max_wait),
                    ),
                    _ => (bands.reserve_n(k), model.reserve(now, k)),
                };
                expected.check(&reserved(&result), &units).map_err(fail)?;
                if let (Ok(r), Some(t)) = (result, ticket) {
                    open.push((r, t));
                }
            }
            Op::Cancel(i) | Op::Drop(i) | Op::Commit(i) if !open.is_empty() => {
                let (r, ticket) = open.remove(i % open.len());
                match op {
                    Op::Cancel(_) => model.cancel(&ticket, r.cancel()).map_err(fail)?,
                    Op::Drop(_) => {
                        drop(r);
                        model.drop_ticket(&ticket);
                    }
                    _ => {
                        r.commit();
                        uses.push((ticket.used(), ticket.epoch));
                    }
                }
            }
            Op::Reconfigure(new) => {
                let configs = changed(model.configs(), new);
                let array: [Config; B] = core::array::from_fn(|i| configs[i]);
                bands.reconfigure(array);
                let max_wait = BandsModel::default_max_wait(&configs);
                if let Some(before) = model.reconfigure(now, &configs, max_wait) {
                    epochs.push(Epoch {
                        at: units.from_ticks(now),
                        kept: before
                            .iter()
                            .zip(&configs)
                            .map(|(a, c)| (*a).min(c.permits()))
                            .collect(),
                        configs: configs.clone(),
                    });
                }
                prop_assert_eq!(bands.configs(), array);
                prop_assert_eq!(
                    bands.max_wait(),
                    units.duration(units.ticks_floor(max_wait))
                );
            }
            Op::Cancel(_) | Op::Drop(_) | Op::Commit(_) | Op::Peek => {}
        }
        let now = clock.now();
        prop_assert_eq!(
            bands.available_permits_per_band().to_vec(),
            model.available_per_band(now),
            "at {}",
            now
        );
        prop_assert_eq!(
            bands.available_permits(),
            model.available(now),
            "at {}",
            now
        );
        prop_assert_eq!(bands.retry_after(), model.retry_after(now, 1), "at {}", now);
    }
    for (r, ticket) in open {
        r.commit();
        uses.push((ticket.used(), ticket.epoch));
    }
    check_bounds(&uses, &epochs, &units).map_err(fail)
}

/// `run` with the number of bands as a const generic.
fn run_bands<const HZ: u64>(spec: &[Config], ops: Vec<Op>) -> Result<(), TestCaseError> {
    match spec.len() {
        1 => run::<HZ, 1>(spec, ops),
        2 => run::<HZ, 2>(spec, ops),
        _ => run::<HZ, 3>(spec, ops),
    }
}

/// The coarse clocks of the property test, as a `match` below runs them.
const COARSE: [u64; 4] = [1, 3, 32_768, 1_000_000];

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Up to three bands of 1..=10 permits per 1 ns..3 s, with changes mixed in.
    #[test]
    fn reconfigured_bands_match_the_reference_model(
        (spec, ops) in ops::bands_schedule_with_changes(3, 10, Duration::from_secs(3), Units::NANOS, 120)
    ) {
        run_bands::<1_000_000_000>(&spec, ops)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    /// The same on clocks slower than 1 GHz.
    #[test]
    fn reconfigured_bands_match_the_reference_model_on_coarse_clocks(
        (which, (spec, ops)) in (0usize..COARSE.len()).prop_flat_map(|i| {
            (Just(i), ops::bands_schedule_with_changes(3, 10, Duration::from_secs(3), Units::new(COARSE[i]), 120))
        }),
    ) {
        match which {
            0 => run_bands::<1>(&spec, ops)?,
            1 => run_bands::<3>(&spec, ops)?,
            2 => run_bands::<32_768>(&spec, ops)?,
            _ => run_bands::<1_000_000>(&spec, ops)?,
        }
    }
}

fn cfg(permits: u32, period: Duration) -> Config {
    Config::new(permits, period).expect("a valid config")
}

/// SPEC §17: a change that does not change the configs changes nothing, however often; a change
/// of one band leaves the others' states as they were (here with permits owed in both).
#[test]
fn a_change_to_the_same_configs_changes_nothing() {
    let clock = ManualClock::new();
    let fast = cfg(10, Duration::from_secs(1)).with_max_wait(Duration::from_secs(10));
    let slow = cfg(20, Duration::from_secs(60));
    let bands = Bands::new("same", [fast, slow], &clock);
    bands.try_acquire_n(4).unwrap();
    for _ in 0..5 {
        bands.reconfigure([fast, slow]);
        assert_eq!(bands.available_permits_per_band(), [6, 16]);
    }
    bands.try_acquire_n(6).unwrap();
    let owed = bands.reserve_n(3).unwrap();
    assert_eq!(owed.wait_time(), Duration::from_millis(300));
    owed.commit();
    let before = bands.retry_after();
    // Only the slow band's max_wait changes: no band's state moves.
    bands.reconfigure([fast, slow.with_max_wait(Duration::from_secs(1))]);
    bands.reconfigure([fast, slow.with_max_wait(Duration::from_secs(2))]);
    assert_eq!(bands.retry_after(), before);
    assert_eq!(bands.available_permits_per_band(), [0, 7]);
    assert!(!bands.reserve().unwrap().cancel() || bands.retry_after() == before);
}

/// SPEC §14 for bands: a tighter band keeps `min(available, new permits)`, a looser one hands out
/// no fresh burst, a reservation keeps its slot, and the next call queues after it at the new
/// spacing; calls wait at most the new configs' longest `max_wait`.
#[test]
fn a_change_keeps_what_is_owed_and_hands_out_no_burst() {
    let clock = ManualClock::new();
    let per_second = cfg(2, Duration::from_secs(1)).with_max_wait(Duration::from_secs(5));
    let per_minute = cfg(10, Duration::from_secs(60));
    let bands = Bands::new("api", [per_second, per_minute], &clock);
    bands.try_acquire_n(2).unwrap();
    let queued = bands.reserve().unwrap();
    assert_eq!(queued.wait_time(), Duration::from_millis(500));
    // 1 per second now: the slot at 0.5 s stays, the next one 1 s after it.
    let slower = cfg(1, Duration::from_secs(1)).with_max_wait(Duration::from_secs(5));
    bands.reconfigure([slower, per_minute]);
    assert_eq!(queued.slot(), 500_000_000);
    let next = bands.reserve().unwrap();
    assert_eq!(next.wait_time(), Duration::from_millis(1500));
    next.commit();
    queued.commit();
    assert_eq!(bands.available_permits_per_band(), [0, 6]);
    // A looser per-second band and a tighter minute: min(6, 3) in the minute band, no burst.
    clock.advance(Duration::from_secs(10));
    bands.reconfigure([
        cfg(100, Duration::from_secs(1)),
        cfg(3, Duration::from_secs(60)),
    ]);
    assert_eq!(bands.available_permits_per_band(), [1, 3]);
    assert_eq!(bands.available_permits(), 1);
    assert_eq!(bands.configs()[1].permits(), 3);
    // The new configs wait at most their longest max_wait: none.
    bands.try_acquire().unwrap();
    assert_eq!(bands.max_wait(), Duration::ZERO);
    assert!(bands.reserve().is_err());
    // k above the smallest band's new permits is invalid.
    assert!(matches!(
        bands.try_acquire_n(4),
        Err(AcquireError::InvalidPermits(_))
    ));
}

/// A reservation made before a change gives nothing back after it: its charge moved into the
/// new numbers with the state (SPEC §17: a refund returns nothing, never more).
#[test]
fn a_reservation_from_before_a_change_returns_nothing() {
    let clock = ManualClock::new();
    let one = cfg(1, Duration::from_secs(1)).with_max_wait(Duration::from_secs(5));
    let bands = Bands::new("old", [one, cfg(5, Duration::from_secs(10))], &clock);
    let r = bands.reserve().unwrap();
    bands.reconfigure([one, cfg(4, Duration::from_secs(10))]);
    assert_eq!(bands.available_permits_per_band(), [0, 4]);
    assert!(!r.cancel());
    assert_eq!(bands.available_permits_per_band(), [0, 4]);
}

/// A band disabled by a change is left out of every decision; enabled again it comes back with
/// `min(its permits while disabled, new permits)` and no fresh burst beyond that.
#[test]
fn a_band_turned_off_and_on() {
    let clock = ManualClock::new();
    let daily = cfg(3, Duration::from_secs(86_400));
    let bands = Bands::new("switch", [cfg(100, Duration::from_secs(1)), daily], &clock);
    bands.try_acquire_n(3).unwrap();
    assert!(bands.try_acquire().is_err());
    bands.reconfigure([cfg(100, Duration::from_secs(1)), daily.with_enabled(false)]);
    for _ in 0..10 {
        bands.try_acquire().unwrap();
    }
    assert_eq!(bands.available_permits_per_band(), [87, 3]);
    bands.reconfigure([
        cfg(100, Duration::from_secs(1)),
        cfg(2, Duration::from_secs(86_400)),
    ]);
    assert_eq!(bands.available_permits_per_band(), [87, 2]);
}

/// Calls on real threads while the configs change: no band ever lets more through than the
/// configs in force allowed, and nothing is lost or double-counted in a sequential tail.
#[test]
fn racing_calls_and_changes_stay_within_every_bound() {
    use std::sync::atomic::{AtomicU32, Ordering};
    let clock = ManualClock::new();
    let wide = cfg(40, Duration::from_secs(1));
    let narrow = cfg(10, Duration::from_secs(1));
    let bands = Bands::new("race", [wide, cfg(1000, Duration::from_secs(60))], &clock);
    let admitted = AtomicU32::new(0);
    std::thread::scope(|s| {
        for _ in 0..3 {
            s.spawn(|| {
                for _ in 0..200 {
                    if bands.try_acquire().is_ok() {
                        admitted.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
        s.spawn(|| {
            for i in 0..50 {
                let first = if i % 2 == 0 { narrow } else { wide };
                bands.reconfigure([first, cfg(1000, Duration::from_secs(60))]);
            }
        });
    });
    // The clock never moves: at most the first band's widest burst, 40.
    let admitted = admitted.load(Ordering::Relaxed);
    assert!(admitted <= 40, "{admitted} admitted");
    let [first, second] = bands.available_permits_per_band();
    assert_eq!(second, 1000 - admitted);
    assert!(first <= 40 - admitted.min(40));
}
