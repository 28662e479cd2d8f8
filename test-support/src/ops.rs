//! Random schedules: configs, and the operations a test applies to a limiter and the model alike.

use core::time::Duration;

use proptest::prelude::*;
use ritmo_core::Config;

use crate::units::Units;

/// One step of a schedule. Indices into the open reservations are taken modulo their number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// Move the clock forward by this many ticks.
    Advance(u64),
    /// `try_acquire()`.
    TryOne,
    /// `try_acquire_n(k)` (`k` may be 0 or above `permits`: an error).
    TryAcquire(u32),
    /// `reserve_n(k)` with the limiter's `max_wait`.
    Reserve(u32),
    /// `reserve_n_within(k, max_wait)`.
    ReserveWithin(u32, Duration),
    /// `cancel()` an open reservation.
    Cancel(usize),
    /// Drop an open reservation (or interrupt it): its permits go back by the tail rule.
    Drop(usize),
    /// `commit()` an open reservation: its call runs at its slot.
    Commit(usize),
    /// `reconfigure(config)`.
    Reconfigure(Config),
    /// Read `available_permits()` and `retry_after()` only (every step does, this one nothing else).
    Peek,
}

/// A step on a keyed limiter: an [`Op`] for one key (`u8` unless said).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyedOp<K = u8> {
    /// The key (tests take it modulo the keys they use).
    pub key: K,
    /// What happens to it.
    pub op: Op,
}

/// A valid config of `1..=max_permits` permits per period of at least 1 ns per permit and at most
/// `max_period`, waiting up to three periods (or 0); enabled.
pub fn config(max_permits: u32, max_period: Duration) -> impl Strategy<Value = Config> {
    let max_period = max_period.as_nanos().clamp(1, u128::from(u64::MAX)) as u64;
    (
        1..=max_permits.max(1),
        1..=max_period,
        0u64..=3,
        any::<u64>(),
    )
        .prop_map(|(n, period, waits, frac)| {
            let period = period.max(u64::from(n));
            let max_wait = match waits {
                0 => 0,
                w => frac % period.saturating_mul(w).max(1),
            };
            Config::new(n, Duration::from_nanos(period))
                .expect("at least 1 ns per permit")
                .with_max_wait(Duration::from_nanos(max_wait))
        })
}

/// A period in ticks of `units` (at least 1).
fn period_ticks(units: &Units, period: Duration) -> u64 {
    u64::try_from(units.ticks_floor(period).max(1)).unwrap_or(u64::MAX)
}

/// One operation on a limiter of `config` on a clock of `units`: advances from a tick to twice
/// the period, `k` in `0..=permits + 1`, reservations with the limiter's `max_wait` or their own,
/// cancels, drops and commits. `reconfigure` adds changes to configs from `changes`.
pub fn op(
    config: Config,
    units: Units,
    changes: Option<BoxedStrategy<Config>>,
) -> BoxedStrategy<Op> {
    let n = config.permits();
    let period = period_ticks(&units, config.period());
    let max_wait = config.max_wait().as_nanos().min(u128::from(u64::MAX)) as u64;
    let steps = prop_oneof![
        3 => (0..=(period / 2).max(1)).prop_map(Op::Advance),
        1 => (0..=period.saturating_mul(2).max(2)).prop_map(Op::Advance),
        3 => (0..=n + 1).prop_map(Op::TryAcquire),
        2 => Just(Op::TryOne),
        3 => (0..=n + 1).prop_map(Op::Reserve),
        1 => (0..=n + 1, 0..=max_wait.saturating_mul(2)).prop_map(|(k, w)| Op::ReserveWithin(k, Duration::from_nanos(w))),
        2 => any::<usize>().prop_map(Op::Cancel),
        1 => any::<usize>().prop_map(Op::Drop),
        1 => any::<usize>().prop_map(Op::Commit),
        1 => Just(Op::Peek),
    ];
    match changes {
        None => steps.boxed(),
        Some(changes) => prop_oneof![
            10 => steps,
            2 => changes.prop_map(Op::Reconfigure),
        ]
        .boxed(),
    }
}

/// A config and a schedule of `1..len` operations for it (no reconfigure).
pub fn schedule(
    max_permits: u32,
    max_period: Duration,
    units: Units,
    len: usize,
) -> impl Strategy<Value = (Config, Vec<Op>)> {
    config(max_permits, max_period).prop_flat_map(move |c| {
        (
            Just(c),
            prop::collection::vec(op(c, units, None), 1..len.max(2)),
        )
    })
}

/// A config and a schedule with reconfigures to configs like it mixed in.
pub fn schedule_with_changes(
    max_permits: u32,
    max_period: Duration,
    units: Units,
    len: usize,
) -> impl Strategy<Value = (Config, Vec<Op>)> {
    config(max_permits, max_period).prop_flat_map(move |c| {
        let changes = prop_oneof![
            // Only max_wait changes: the state must not move at all.
            1 => (0..=c.period().as_nanos().min(u128::from(u64::MAX)) as u64)
                .prop_map(move |w| c.with_max_wait(Duration::from_nanos(w))),
            1 => Just(c),
            3 => config(max_permits, max_period),
            // Disabled, and enabled again by a later change (SPEC §14: afresh).
            1 => config(max_permits, max_period).prop_map(|c| c.with_enabled(false)),
        ]
        .boxed();
        (
            Just(c),
            prop::collection::vec(op(c, units, Some(changes)), 1..len.max(2)),
        )
    })
}

/// Up to `max_bands` band configs (each with its own `max_wait`) and a schedule for them; the
/// schedule's `k` goes up to the largest band's permits + 1.
pub fn bands_schedule(
    max_bands: usize,
    max_permits: u32,
    max_period: Duration,
    units: Units,
    len: usize,
) -> impl Strategy<Value = (Vec<Config>, Vec<Op>)> {
    bands_ops(max_bands, max_permits, max_period, units, len, false)
}

/// [`bands_schedule`] with changes mixed in: each [`Op::Reconfigure`] carries a config like the
/// bands' (the test picks the band it replaces, and may disable it), or one of the bands' own
/// configs (then, on that band, nothing changes).
pub fn bands_schedule_with_changes(
    max_bands: usize,
    max_permits: u32,
    max_period: Duration,
    units: Units,
    len: usize,
) -> impl Strategy<Value = (Vec<Config>, Vec<Op>)> {
    bands_ops(max_bands, max_permits, max_period, units, len, true)
}

fn bands_ops(
    max_bands: usize,
    max_permits: u32,
    max_period: Duration,
    units: Units,
    len: usize,
    changes: bool,
) -> impl Strategy<Value = (Vec<Config>, Vec<Op>)> {
    prop::collection::vec(config(max_permits, max_period), 1..=max_bands.max(1)).prop_flat_map(
        move |configs| {
            let longest = configs
                .iter()
                .map(|c| c.period())
                .max()
                .unwrap_or(Duration::from_secs(1));
            let widest = configs.iter().map(|c| c.permits()).max().unwrap_or(1);
            let waits = configs
                .iter()
                .map(|c| c.max_wait())
                .max()
                .unwrap_or(Duration::ZERO);
            let shape = Config::new(widest, longest)
                .expect("a valid config")
                .with_max_wait(waits);
            let changes = changes.then(|| {
                prop_oneof![
                    1 => prop::sample::select(configs.clone()),
                    3 => config(max_permits, max_period),
                ]
                .boxed()
            });
            (
                Just(configs),
                prop::collection::vec(op(shape, units, changes), 1..len.max(2)),
            )
        },
    )
}

/// A config and a schedule of keyed steps on `keys` keys (`key % keys`).
pub fn keyed_schedule(
    max_permits: u32,
    max_period: Duration,
    units: Units,
    keys: u8,
    len: usize,
) -> impl Strategy<Value = (Config, Vec<KeyedOp>)> {
    let keys = keys.max(1);
    config(max_permits, max_period).prop_flat_map(move |c| {
        let step = (0..keys, op(c, units, None)).prop_map(|(key, op)| KeyedOp { key, op });
        (Just(c), prop::collection::vec(step, 1..len.max(2)))
    })
}

/// [`keyed_schedule`] with changes of the config of every key mixed in ([`Op::Reconfigure`]'s
/// key is ignored): configs like the first, the same config, only its `max_wait` changed, and
/// disabled ones (enabled again by a later change).
pub fn keyed_schedule_with_changes(
    max_permits: u32,
    max_period: Duration,
    units: Units,
    keys: u8,
    len: usize,
) -> impl Strategy<Value = (Config, Vec<KeyedOp>)> {
    let keys = keys.max(1);
    config(max_permits, max_period).prop_flat_map(move |c| {
        let changes = prop_oneof![
            1 => (0..=c.period().as_nanos().min(u128::from(u64::MAX)) as u64)
                .prop_map(move |w| c.with_max_wait(Duration::from_nanos(w))),
            1 => Just(c),
            3 => config(max_permits, max_period),
            1 => config(max_permits, max_period).prop_map(|c| c.with_enabled(false)),
        ]
        .boxed();
        let step = (0..keys, op(c, units, Some(changes))).prop_map(|(key, op)| KeyedOp { key, op });
        (Just(c), prop::collection::vec(step, 1..len.max(2)))
    })
}

/// [`keyed_schedule`] shaped to fill a table: long periods (1 to 10 s), most steps taking
/// permits, few and short advances, so that every slot is often live and new keys are refused.
pub fn crowded_keyed_schedule(
    max_permits: u32,
    units: Units,
    keys: u8,
    len: usize,
) -> impl Strategy<Value = (Config, Vec<KeyedOp>)> {
    let keys = keys.max(1);
    (config(max_permits, Duration::from_secs(10)), 1u64..=10).prop_flat_map(move |(c, secs)| {
        let c = Config::new(c.permits(), Duration::from_secs(secs))
            .expect("a valid config")
            .with_max_wait(c.max_wait());
        let period = period_ticks(&units, c.period());
        let n = c.permits();
        let op = prop_oneof![
            2 => (0..=(period / 8).max(1)).prop_map(Op::Advance),
            6 => (1..=n).prop_map(Op::TryAcquire),
            2 => Just(Op::TryOne),
            3 => (1..=n).prop_map(Op::Reserve),
            2 => any::<usize>().prop_map(Op::Cancel),
            1 => any::<usize>().prop_map(Op::Drop),
            1 => any::<usize>().prop_map(Op::Commit),
        ];
        let step = (0..keys, op).prop_map(|(key, op)| KeyedOp { key, op });
        (Just(c), prop::collection::vec(step, 1..len.max(2)))
    })
}
