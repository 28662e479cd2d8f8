//! Per-key quotas (SPEC §18): a keyed limiter whose keys each follow the config of their tier.

use core::time::Duration;
use std::collections::BTreeMap;

use proptest::prelude::*;
use ritmo_core::Config;

use crate::gcra::Gcra;
use crate::keyed::KeyedTicket;
use crate::ops::{KeyedOp, Op};
use crate::outcome::Outcome;
use crate::subject::{KeyedHeld, KeyedSubject, reserved};
use crate::units::Units;
use crate::{Use, window_bound};

/// A keyed limiter with tiers, written from SPEC §18 and issue 21's words:
///
/// - A key's config is that of the tier its tier function answers now ([`set_tier`] moves a key
///   to another tier: the function answers another index from then on). An index with no tier
///   is an error for that call ([`Outcome::UnknownTier`]) that changes nothing.
/// - A key whose tier changed behaves as a `reconfigure` of that key alone (SPEC §14, with
///   [`Gcra::reconfigure`]): no fresh burst, nothing lost. The limiter learns of the change when
///   a call for the key takes permits (a valid `try_acquire_n` or `reserve_n`): the key is
///   reconfigured at that call's reading, whatever its outcome. A read (`available_permits`,
///   `retry_after`) tells what such a call would find at its reading, and changes nothing.
/// - A tier's config changed live ([`set_tier_config`], SPEC §14 and §18) is a `reconfigure` of
///   every key whose state is on that tier, at the change's reading: a key not idle keeps
///   `min(available, new permits)` and what it owes; an idle key, or any key of a disabled tier,
///   starts afresh with the new config's full burst (idle is new). Keys on other tiers do not
///   change, and their reservations give back as before.
/// - A call on a disabled tier passes and counts nothing (SPEC §3): it needs no room, and the
///   limiter does not learn of the key's tier from it.
/// - Exact eviction and room per §10, with each key's state under its own tier: a key is live
///   while `tat > now`, and a new key finds no room when `capacity` other keys are live.
///
/// [`set_tier`]: TieredModel::set_tier
/// [`set_tier_config`]: TieredModel::set_tier_config
#[derive(Debug, Clone)]
pub struct TieredModel<K> {
    units: Units,
    tiers: Vec<Config>,
    capacity: usize,
    /// The tier each key's function answers now (0 if never set).
    plan: BTreeMap<K, usize>,
    /// Each key's state, and the tier it is on.
    keys: BTreeMap<K, (Gcra, usize)>,
}

impl<K: Ord + Clone + core::fmt::Debug> TieredModel<K> {
    /// A keyed limiter of `tiers` (index 0, 1, ...) with room for `capacity` live keys, every key
    /// on tier 0 until [`set_tier`](Self::set_tier) moves it.
    pub fn new(units: Units, tiers: Vec<Config>, capacity: usize) -> TieredModel<K> {
        TieredModel {
            units,
            tiers,
            capacity,
            plan: BTreeMap::new(),
            keys: BTreeMap::new(),
        }
    }

    /// The clock.
    pub fn units(&self) -> Units {
        self.units
    }

    /// The tiers.
    pub fn tiers(&self) -> &[Config] {
        &self.tiers
    }

    /// From now on the tier function answers `tier` for `key` (which may be out of range).
    pub fn set_tier(&mut self, key: &K, tier: usize) {
        self.plan.insert(key.clone(), tier);
    }

    /// The config of tier `tier` becomes `config` at `now`, live: every key whose state is on
    /// that tier is reconfigured then ([`Gcra::reconfigure`]: idle is new), and the tier's keys
    /// follow `config` from then on.
    pub fn set_tier_config(&mut self, tier: usize, config: Config, now: u64) {
        for (state, on) in self.keys.values_mut() {
            if *on == tier {
                state.reconfigure(now, config);
            }
        }
        self.tiers[tier] = config;
    }

    /// The tier the function answers for `key` now.
    pub fn tier_of(&self, key: &K) -> usize {
        self.plan.get(key).copied().unwrap_or(0)
    }

    /// `key`'s state as a call at `now` on the tier `tier` finds it: reconfigured to the tier's
    /// config if it was on another one; a fresh state if never seen, or if it was on another
    /// tier and is idle (SPEC §10: an idle key decides like a key never seen, so it starts afresh
    /// on its new tier, as the keyed model's `reconfigure` does).
    fn state_at(&self, key: &K, tier: usize, now: u64) -> Gcra {
        let config = self.tiers[tier];
        match self.keys.get(key) {
            None => Gcra::new(self.units, config),
            Some((state, on)) if *on == tier => state.clone(),
            Some(_) if !self.is_live(key, now) => Gcra::new(self.units, config),
            Some((state, _)) => {
                let mut state = state.clone();
                state.reconfigure(now, config);
                state
            }
        }
    }

    /// Whether `key`'s state is live at `now` (`tat > now`), on whichever tier it is.
    fn is_live(&self, key: &K, now: u64) -> bool {
        self.keys
            .get(key)
            .is_some_and(|(g, _)| g.config().enabled() && g.tat() > self.units.from_ticks(now))
    }

    /// How many keys are live at `now`.
    pub fn live_count(&self, now: u64) -> usize {
        self.keys.keys().filter(|k| self.is_live(k, now)).count()
    }

    /// `Some(retry_after)` if a call for `key` at `now` finds no room (as [`KeyedModel`]).
    ///
    /// [`KeyedModel`]: crate::KeyedModel
    pub fn no_room(&self, key: &K, now: u64) -> Option<Duration> {
        if self.is_live(key, now) {
            return None;
        }
        let live: Vec<u128> = self
            .keys
            .iter()
            .filter(|(k, _)| self.is_live(k, now))
            .map(|(_, (g, _))| g.tat())
            .collect();
        if live.len() < self.capacity {
            return None;
        }
        let soonest = live.iter().copied().min().unwrap_or(0);
        let ticks = self
            .units
            .ticks_ceil(soonest)
            .saturating_sub(u128::from(now));
        Some(self.units.duration(ticks))
    }

    /// The tier of a call for `key`, or its outcome if it has none.
    fn tier_for_call(&self, key: &K) -> Result<usize, Outcome> {
        let tier = self.tier_of(key);
        if tier < self.tiers.len() {
            Ok(tier)
        } else {
            Err(Outcome::UnknownTier)
        }
    }

    /// Puts `key`'s state as of a taking call at `now` on `tier` in place.
    fn settle(&mut self, key: &K, tier: usize, now: u64) -> &mut Gcra {
        let state = self.state_at(key, tier, now);
        let entry = self
            .keys
            .entry(key.clone())
            .or_insert((state.clone(), tier));
        *entry = (state, tier);
        &mut entry.0
    }

    /// `try_acquire_n(key, k)` at `now`.
    pub fn try_acquire(&mut self, key: &K, now: u64, k: u32) -> Outcome {
        let tier = match self.tier_for_call(key) {
            Ok(tier) => tier,
            Err(outcome) => return outcome,
        };
        if !Gcra::new(self.units, self.tiers[tier]).valid(k) {
            return Outcome::Invalid;
        }
        if !self.tiers[tier].enabled() {
            return Outcome::Admitted; // a disabled tier: every call passes, nothing is counted
        }
        if let Some(retry_after) = self.no_room(key, now) {
            return Outcome::NoRoom { retry_after };
        }
        self.settle(key, tier, now).try_acquire(now, k)
    }

    /// `reserve_n_within(key, k, max_wait)` at `now` (`None`: the tier's `max_wait`).
    pub fn reserve_within(
        &mut self,
        key: &K,
        now: u64,
        k: u32,
        max_wait: Option<Duration>,
    ) -> (Outcome, Option<KeyedTicket<K>>) {
        let tier = match self.tier_for_call(key) {
            Ok(tier) => tier,
            Err(outcome) => return (outcome, None),
        };
        let config = self.tiers[tier];
        let mut fresh = Gcra::new(self.units, config);
        if !fresh.valid(k) {
            return (Outcome::Invalid, None);
        }
        if !config.enabled() {
            // A disabled tier: every call passes, nothing is counted (a ticket of nothing).
            let (outcome, ticket) = fresh.reserve_within(now, k, Duration::ZERO);
            let key = key.clone();
            return (outcome, ticket.map(|ticket| KeyedTicket { key, ticket }));
        }
        if let Some(retry_after) = self.no_room(key, now) {
            return (Outcome::NoRoom { retry_after }, None);
        }
        let max_wait = max_wait.unwrap_or(config.max_wait());
        let (outcome, ticket) = self.settle(key, tier, now).reserve_within(now, k, max_wait);
        let ticket = ticket.map(|ticket| KeyedTicket {
            key: key.clone(),
            ticket,
        });
        (outcome, ticket)
    }

    /// Cancels `ticket` at `now`; `returned` is the limiter's answer (the tail rule while the key
    /// is live, on the key's state as it is: a change of tier since the reservation was a
    /// reconfigure, and [`Gcra::cancel`] knows what that allows; any answer once it is idle).
    pub fn cancel(
        &mut self,
        ticket: &KeyedTicket<K>,
        now: u64,
        returned: bool,
    ) -> Result<(), String> {
        let live = self.is_live(&ticket.key, now);
        let Some((state, _)) = self.keys.get_mut(&ticket.key) else {
            return Ok(());
        };
        if !live {
            if returned && state.refund(&ticket.ticket) == crate::Refund::Returned {
                state.drop_ticket(&ticket.ticket);
            }
            return Ok(());
        }
        state
            .cancel(&ticket.ticket, returned)
            .map_err(|e| format!("key {:?}: {e}", ticket.key))
    }

    /// Drops (or interrupts) `ticket`.
    pub fn drop_ticket(&mut self, ticket: &KeyedTicket<K>) -> bool {
        match self.keys.get_mut(&ticket.key) {
            Some((state, _)) => state.drop_ticket(&ticket.ticket),
            None => true,
        }
    }

    /// `available_permits(key)` at `now`: 0 when there is no room for it or it has no tier.
    pub fn available(&self, key: &K, now: u64) -> u32 {
        let Ok(tier) = self.tier_for_call(key) else {
            return 0;
        };
        if !self.tiers[tier].enabled() {
            return self.tiers[tier].permits();
        }
        if self.no_room(key, now).is_some() {
            return 0;
        }
        self.state_at(key, tier, now).available(now)
    }

    /// `retry_after(key)` at `now`: as [`KeyedModel::retry_after`](crate::KeyedModel::retry_after),
    /// on the key's tier; `None` when it has no tier (the limiter says "never").
    pub fn retry_after(&self, key: &K, now: u64) -> Option<Outcome> {
        let tier = self.tier_for_call(key).ok()?;
        if !self.tiers[tier].enabled() {
            let retry_after = Duration::ZERO;
            return Some(Outcome::Rejected { retry_after });
        }
        Some(match self.no_room(key, now) {
            Some(retry_after) => Outcome::NoRoom { retry_after },
            None => Outcome::Rejected {
                retry_after: self.state_at(key, tier, now).retry_after(now, 1),
            },
        })
    }
}

/// One step of a tiered schedule: an operation on a key, or a key moved to another tier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TieredStep {
    /// An operation on a key.
    Op(KeyedOp),
    /// From now on the tier function answers `tier` for `key` (an upgrade, a downgrade, or an
    /// index with no tier).
    SetTier {
        /// The key (modulo the keys in use).
        key: u8,
        /// Its tier from now on.
        tier: usize,
    },
    /// The config of a tier changes live.
    SetTierConfig {
        /// The tier.
        tier: usize,
        /// Its config from now on.
        config: Config,
    },
}

/// Runs `steps` (keys taken modulo `keys`) on `subject` and on `model`; `set_tier` moves a key
/// to another tier in the subject's tier function, and `set_config` changes a tier's config in
/// the subject. Compares every answer and, after every step,
/// the number of live keys and the step's key's `available_permits` and `retry_after` (and the
/// next key's); at the end, the window bound of every key that stayed on one tier. `Err` says
/// where they first differ.
pub fn run_tiered<S: KeyedSubject>(
    subject: &S,
    mut model: TieredModel<u8>,
    keys: u8,
    steps: Vec<TieredStep>,
    mut set_tier: impl FnMut(u8, usize),
    mut set_config: impl FnMut(usize, Config),
) -> Result<(), String> {
    let units: Units = model.units();
    let keys = keys.max(1);
    let mut open: Vec<(Box<dyn KeyedHeld + '_>, KeyedTicket<u8>)> = Vec::new();
    let mut uses: Vec<Vec<Use>> = vec![Vec::new(); usize::from(keys)];
    let mut moved = vec![false; usize::from(keys)];
    for (step, s) in steps.into_iter().enumerate() {
        let (key, op) = match s {
            TieredStep::SetTier { key, tier } => {
                let key = key % keys;
                set_tier(key, tier);
                model.set_tier(&key, tier);
                moved[usize::from(key)] = true;
                (key, Op::Peek)
            }
            TieredStep::SetTierConfig { tier, config } => {
                set_config(tier, config);
                model.set_tier_config(tier, config, subject.now());
                // Its keys' calls ran under several configs: the steps compared each.
                moved.iter_mut().for_each(|m| *m = true);
                (0, Op::Peek)
            }
            TieredStep::Op(KeyedOp { key, op }) => (key % keys, op),
        };
        let now = subject.now();
        let at = |e: String| format!("step {step} ({op:?} on key {key}) at {now}: {e}");
        match op {
            Op::Advance(d) => subject.advance(d),
            Op::TryOne | Op::TryAcquire(_) => {
                let k = if let Op::TryAcquire(k) = op { k } else { 1 };
                let expected = model.try_acquire(&key, now, k);
                let got = Outcome::of_try(subject.try_acquire_n(&key, k));
                expected.check(&got, &units).map_err(at)?;
                if got == Outcome::Admitted {
                    uses[usize::from(key)].push(Use::at_reading(&units, now, k));
                }
            }
            Op::Reserve(k) | Op::ReserveWithin(k, _) => {
                let (result, (expected, ticket)) = match op {
                    Op::ReserveWithin(_, max_wait) => (
                        subject.reserve_n_within(&key, k, max_wait),
                        model.reserve_within(&key, now, k, Some(max_wait)),
                    ),
                    _ => (
                        subject.reserve_n(&key, k),
                        model.reserve_within(&key, now, k, None),
                    ),
                };
                expected.check(&reserved(&result), &units).map_err(at)?;
                if let (Ok(r), Some(t)) = (result, ticket) {
                    open.push((r, t));
                }
            }
            Op::Cancel(i) | Op::Drop(i) | Op::Commit(i) if !open.is_empty() => {
                let (r, ticket) = open.remove(i % open.len());
                match op {
                    Op::Cancel(_) => model.cancel(&ticket, now, r.cancel()).map_err(at)?,
                    Op::Drop(_) => {
                        drop(r);
                        model.drop_ticket(&ticket);
                    }
                    _ => {
                        r.commit();
                        uses[usize::from(ticket.key)].push(ticket.ticket.used());
                    }
                }
            }
            Op::Cancel(_) | Op::Drop(_) | Op::Commit(_) | Op::Peek | Op::Reconfigure(_) => {}
        }
        let now = subject.now();
        for key in [key, (key + 1) % keys] {
            let at = |e: String| format!("after step {step}, key {key} at {now}: {e}");
            let (available, expected) =
                (subject.available_permits(&key), model.available(&key, now));
            if available != expected {
                return Err(at(format!(
                    "available_permits {available}, the model says {expected}"
                )));
            }
            let got = subject.retry_after(&key);
            match model.retry_after(&key, now) {
                // No tier: a call never passes.
                None if got >= Duration::from_secs(u64::from(u32::MAX)) => {}
                None => return Err(at(format!("retry_after {got:?} for a key with no tier"))),
                Some(expected) => {
                    let got = match expected {
                        Outcome::NoRoom { .. } => Outcome::NoRoom { retry_after: got },
                        _ => Outcome::Rejected { retry_after: got },
                    };
                    expected.check(&got, &units).map_err(at)?;
                }
            }
        }
        let live = model.live_count(now);
        if subject.live_key_count() != live {
            return Err(format!(
                "after step {step} at {now}: len() {}, the model has {live} live keys",
                subject.live_key_count()
            ));
        }
    }
    for (r, ticket) in open {
        r.commit();
        uses[usize::from(ticket.key)].push(ticket.ticket.used());
    }
    for (key, uses) in uses.iter().enumerate() {
        if moved[key] {
            continue; // its calls ran under several configs: the steps compared each
        }
        let c = model.tiers()[0];
        window_bound(uses, c.permits(), c.period(), &units)
            .map_err(|e| format!("key {key}: {e}"))?;
    }
    Ok(())
}

/// `tiers` tiers (1 to 12; each of a different number of permits, so that no two share their
/// numbers) and a schedule of keyed steps on `keys` keys that floods the limiter with keys (long
/// periods, few advances) and moves keys between tiers at random points, now and then to an index
/// with no tier; with `live`, it also changes a tier's config now and then (to more permits than
/// any tier had, a period of its own, disabled now and then).
pub fn tiered_schedule(
    tiers: usize,
    units: Units,
    keys: u8,
    len: usize,
    live: bool,
) -> impl Strategy<Value = (Vec<Config>, Vec<TieredStep>)> {
    let keys = keys.max(1);
    let tiers = tiers.clamp(1, 12);
    (
        prop::collection::btree_set(1u32..=12, tiers..=tiers),
        1u64..=4,
        any::<u64>(),
    )
        .prop_flat_map(move |(permits, secs, wait)| {
            let period = Duration::from_secs(secs);
            let tiers: Vec<Config> = permits
                .iter()
                .rev()
                .map(|&n| {
                    Config::new(n, period)
                        .expect("a valid config")
                        .with_max_wait(Duration::from_nanos(wait % (2 * period.as_nanos() as u64)))
                })
                .collect();
            let widest = permits.iter().copied().max().unwrap_or(1);
            let ticks = u64::try_from(units.ticks_floor(period).max(1)).unwrap_or(u64::MAX);
            let count = tiers.len();
            let op = prop_oneof![
                3 => (0..=(ticks / 6).max(1)).prop_map(Op::Advance),
                6 => (0..=widest + 1).prop_map(Op::TryAcquire),
                2 => Just(Op::TryOne),
                3 => (1..=widest).prop_map(Op::Reserve),
                1 => (1..=widest, 0..=ticks).prop_map(move |(k, w)| Op::ReserveWithin(k, units.duration(u128::from(w)))),
                2 => any::<usize>().prop_map(Op::Cancel),
                1 => any::<usize>().prop_map(Op::Drop),
                1 => any::<usize>().prop_map(Op::Commit),
            ];
            let step = prop_oneof![
                12 => (0..keys, op).prop_map(|(key, op)| TieredStep::Op(KeyedOp { key, op })),
                2 => (0..keys, 0..count).prop_map(|(key, tier)| TieredStep::SetTier { key, tier }),
                1 => (0..keys).prop_map(move |key| TieredStep::SetTier { key, tier: count }),
                u32::from(live) => (0..count, 0u32..5, 1u64..=4, any::<u64>(), 0u8..4).prop_map(
                    move |(tier, extra, secs, wait, off)| {
                        // Permits of its own (13 and up, none shared between tiers).
                        let period = Duration::from_secs(secs);
                        let config = Config::new(13 + 5 * tier as u32 + extra, period)
                            .expect("a valid config")
                            .with_max_wait(Duration::from_nanos(wait % (2 * period.as_nanos() as u64)))
                            .with_enabled(off != 0);
                        TieredStep::SetTierConfig { tier, config }
                    }
                ),
            ];
            (Just(tiers), prop::collection::vec(step, 1..len.max(2)))
        })
}
