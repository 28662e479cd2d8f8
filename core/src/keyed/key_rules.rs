//! [`KeyRules`]: what every key of a keyed limiter follows, whatever store holds the keys: the
//! config in the clock's units ([`KeyRate`]), the tiers, the listeners, and the one rule of a call
//! on a key's state word ([`KeyCell`]). A [`KeyedStore`](super::KeyedStore) finds or inserts a
//! key and hands its cell to these; it never decides anything itself.

use core::fmt;

use super::KeyListener;
use super::rate::{KeyRate, Settled};
use super::rules::{Taken, TierRules};
use super::state::KeyCell;
use super::tiers::{OneTier, TierSet, Tiers};
use crate::clock::{Clock, FixedRateClock};
use crate::config::Config;
use crate::error::{RateLimitExceeded, Reason};
use crate::event::{Event, Listener};

/// The rules every key of one keyed limiter follows: its id, config and clock, its tiers, its
/// listeners, and the decisions a call makes on a key's [`KeyCell`]. A keyed store holds one and
/// hands it its keys' cells: the rules live here, the store only keeps the keys.
///
/// ```
/// use core::time::Duration;
/// use ritmo::{Config, ManualClock};
/// use ritmo::keyed::{KeyCell, KeyRules};
/// let rules: KeyRules<u32, _> =
///     KeyRules::with_clock("api", Config::new(1, Duration::from_secs(1))?, ManualClock::new());
/// let cell = KeyCell::new(); // a key never seen: its full burst
/// assert!(rules.decide(&cell, (), 0, 1, 0).is_ok());
/// assert!(rules.decide(&cell, (), 0, 1, 0).is_err()); // its permit is spent
/// assert_eq!(cell.tat(), 1_000_000_000); // idle again 1 s on
/// # Ok::<(), ritmo::ConfigError>(())
/// ```
pub struct KeyRules<K: 'static, C, P = OneTier> {
    pub(crate) rate: KeyRate<C>,
    pub(crate) tiers: P,
    pub(crate) key_listener: Option<&'static dyn KeyListener<K>>,
}

impl<K, C, P> fmt::Debug for KeyRules<K, C, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyRules")
            .field("rate", &self.rate)
            .field("has_key_listener", &self.key_listener.is_some())
            .finish_non_exhaustive()
    }
}

impl<K, C: FixedRateClock> KeyRules<K, C> {
    const_fn! {
    /// The rules of a limiter named `id` giving every key `config`, on `clock`; in a `const`
    /// context if need be.
    pub fn new(id: &'static str, config: Config, clock: C) -> Self {
        KeyRules {
            rate: KeyRate::new(id, config, clock),
            tiers: OneTier,
            key_listener: None,
        }
    }
    }
}

impl<K, C: Clock> KeyRules<K, C> {
    /// [`new`](Self::new) on a clock whose tick rate is known only at run time.
    pub fn with_clock(id: &'static str, config: Config, clock: C) -> Self {
        KeyRules {
            rate: KeyRate::with_clock(id, config, clock),
            tiers: OneTier,
            key_listener: None,
        }
    }
}

impl<K, C: FixedRateClock, const T: usize, P, F> KeyRules<K, C, Tiers<K, T, P, F>> {
    const_fn! {
    /// The rules of a limiter named `id` giving each key the config of its tier in `tiers`, on
    /// `clock`; in a `const` context if need be. Its own config is tier 0's.
    pub fn tiered(id: &'static str, tiers: Tiers<K, T, P, F>, clock: C) -> Self {
        let config = tiers.tiers()[0].config();
        KeyRules {
            rate: KeyRate::new(id, config, clock),
            tiers: tiers.in_units(C::TICK_RATE),
            key_listener: None,
        }
    }
    }
}

impl<K, C: Clock, const T: usize, P, F> KeyRules<K, C, Tiers<K, T, P, F>> {
    /// [`tiered`](Self::tiered) on a clock whose tick rate is known only at run time.
    pub fn tiered_with_clock(id: &'static str, tiers: Tiers<K, T, P, F>, clock: C) -> Self {
        let config = tiers.tiers()[0].config();
        let tick = clock.tick_rate();
        KeyRules {
            rate: KeyRate::with_clock(id, config, clock),
            tiers: tiers.in_units(tick),
            key_listener: None,
        }
    }
}

impl<K, C, P> KeyRules<K, C, P> {
    /// The same rules, reporting rejections and released reservations to `listener` (which
    /// hears the limiter's id, never the key).
    #[must_use]
    pub const fn with_listener(mut self, listener: &'static dyn Listener) -> Self {
        self.rate.set_listener(listener);
        self
    }

    /// The same rules, also reporting each event with its key to `listener`.
    #[must_use]
    pub const fn with_key_listener(mut self, listener: &'static dyn KeyListener<K>) -> Self {
        self.key_listener = Some(listener);
        self
    }

    /// The config in the clock's units, the id, the clock, the counts.
    #[inline(always)]
    pub const fn key_rate(&self) -> &KeyRate<C> {
        &self.rate
    }

    /// The tiers keys are put on ([`OneTier`] for one config).
    #[inline(always)]
    pub const fn tiers(&self) -> &P {
        &self.tiers
    }

    /// The listener told about events with their key, if any.
    #[inline(always)]
    pub const fn key_listener(&self) -> Option<&'static dyn KeyListener<K>> {
        self.key_listener
    }
}

impl<K, C: Clock, P: TierSet<K>> KeyRules<K, C, P> {
    /// Decides a call for `k` permits (already checked) on `tier` that may wait `max_wait`
    /// units on the key whose state is `cell`, made under `tier` (a known key, read under a lock
    /// that keeps it in the store): one compare-and-swap, again if another call changed the key
    /// first. What the call took, or its refusal (the reason and the wait it would have had);
    /// a refusal changes nothing.
    #[inline(always)]
    pub fn decide(
        &self,
        cell: &KeyCell,
        tier: P::Index,
        now: u64,
        k: u32,
        max_wait: u64,
    ) -> Result<Taken, (Reason, u64)> {
        let decision = match self.tiers.rules(tier, false) {
            None => cell.apply(&self.rate, now, k, max_wait),
            // The numbers read at each try, after the state: a change (of a tier too) converts
            // the states first, so numbers read after one is seen are the ones it published.
            Some(_) => cell.apply_rules(|| self.rules(tier), now, k, max_wait),
        };
        Taken::of(decision, now)
    }

    /// [`decide`](Self::decide) under a lock that a change of the numbers needs to convert
    /// the key (a new key's insertion, a key whose tier changed): `held` is the tier `cell` was
    /// made under, carried over to `tier` first if it differs (the reconfigure rule, idle is
    /// new); `settled` was taken with [`KeyRate::settled`] before the lock. `None`, with
    /// nothing done, if a change began since: let the lock go and call again.
    // The cell and its tier, the numbers taken before the lock, and the call itself.
    #[allow(clippy::too_many_arguments)]
    pub fn decide_locked(
        &self,
        cell: &KeyCell,
        held: &mut P::Index,
        tier: P::Index,
        settled: &Settled,
        now: u64,
        k: u32,
        max_wait: u64,
    ) -> Option<Result<Taken, (Reason, u64)>> {
        if !self.rate.still(settled) {
            return None;
        }
        if *held != tier {
            let (from, to) = (self.rules_held(*held), self.rules_held(tier));
            cell.convert(&|tat| from.carry(tat, now, &to));
            *held = tier;
        }
        let decision = match self.tiers.rules(tier, false) {
            None => cell.apply_settled(&self.rate, settled, now, k, max_wait),
            Some(_) => cell.apply_rules(|| self.rules_held(tier), now, k, max_wait),
        };
        Some(Taken::of(decision, now))
    }

    /// The numbers of `tier` as built, if no change of config or tiers ever began: what a
    /// store's one-permit fast path decides with ([`take_unchanged`](Self::take_unchanged)).
    /// `None` after a change: decide with [`decide`](Self::decide).
    #[inline(always)]
    pub fn unchanged_rules(&self, tier: P::Index) -> Option<TierRules> {
        let config = self.rate.unchanged_rules()?;
        Some(self.tiers.rules(tier, false).unwrap_or(config))
    }

    /// One permit now on `cell` with `rules` from [`unchanged_rules`](Self::unchanged_rules)
    /// (enabled), one load and one compare-and-swap: `Some(Ok)` taken, `Some(Err(wait))`
    /// refused; `None`, with nothing done, if a change has begun or the compare-and-swap lost:
    /// decide then with [`decide`](Self::decide).
    #[inline(always)]
    pub fn take_unchanged(
        &self,
        cell: &KeyCell,
        rules: &TierRules,
        now: u64,
    ) -> Option<Result<(), u64>> {
        cell.try_take_unchanged(&self.rate, rules, now)
    }

    /// Gives back, on `cell`, a reservation that wrote `written` and added `increment`, if
    /// nothing changed the key since (the tail rule); whether the permits went back.
    pub fn refund(&self, cell: &KeyCell, written: u64, increment: u64) -> bool {
        cell.refund(&self.rate, written, increment)
    }

    /// A key's state `tat`, made under `held`, as of a call on `tier` (numbers `to`) at `now`:
    /// carried over to `tier` if it differs.
    #[inline(always)]
    pub fn carried(
        &self,
        tat: u64,
        held: P::Index,
        tier: P::Index,
        to: &TierRules,
        now: u64,
    ) -> u64 {
        if held == tier {
            tat
        } else {
            self.rules(held).carry(tat, now, to)
        }
    }

    /// The numbers of `tier` now (for one tier, the config in force), once no change of them is
    /// being written.
    #[inline(always)]
    pub fn rules(&self, tier: P::Index) -> TierRules {
        // Tested before the numbers are read, so that a call that needs one of them (`enabled`)
        // reads that one alone.
        if self.tiers.rules(tier, false).is_some() && self.rate.generation() != 0 {
            return self.rules_changed(tier);
        }
        match self.tiers.rules(tier, false) {
            Some(rules) => rules,
            None => self.rate.rules(),
        }
    }

    /// Whether `tier` limits now: [`rules`](Self::rules)`.enabled()`, reading one word of them.
    #[inline(always)]
    pub fn enabled(&self, tier: P::Index) -> bool {
        if self.tiers.rules(tier, false).is_some() && self.rate.generation() != 0 {
            return self.rules_changed(tier).enabled();
        }
        match self.tiers.rules(tier, false) {
            Some(rules) => rules.enabled(),
            None => self.rate.enabled(),
        }
    }

    /// [`rules`](Self::rules) of a limiter changed live: out of line, off the hot path.
    #[cold]
    #[inline(never)]
    fn rules_changed(&self, tier: P::Index) -> TierRules {
        self.rate.consistent(|| self.rules_held(tier))
    }

    /// The numbers of `tier` now, read by a store that holds a lock a change of them would
    /// need (so none is being written).
    #[inline]
    pub fn rules_held(&self, tier: P::Index) -> TierRules {
        let changed = self.rate.generation() != 0;
        match self.tiers.rules(tier, changed) {
            Some(rules) => rules,
            None => self.rate.rules(),
        }
    }

    /// The tier `key` is on now, or the counted and published refusal of a call whose tier
    /// function answers no tier.
    #[inline(always)]
    pub fn pick(&self, key: &K) -> Result<P::Index, RateLimitExceeded> {
        match self.tiers.pick(key) {
            Some(tier) => Ok(tier),
            None => Err(self.refused(key, Reason::UnknownTier, u64::MAX)),
        }
    }

    /// Counts and publishes a refusal of a call on `key` for `reason` that would have waited
    /// `wait` units.
    #[inline]
    pub fn refused(&self, key: &K, reason: Reason, wait: u64) -> RateLimitExceeded {
        self.rate.count_rejected(reason);
        let error = self.rate.rejected(reason, wait);
        // The event built only where someone listens.
        if self.rate.listener().is_some() || self.key_listener.is_some() {
            self.publish(key, &Event::Rejected(error));
        }
        error
    }

    /// Counts a call's outcome `taken` (`Err`: refused for `reason`, the wait it would have had).
    #[inline(always)]
    pub fn granted(
        &self,
        key: &K,
        taken: Result<Taken, (Reason, u64)>,
    ) -> Result<Taken, RateLimitExceeded> {
        match taken {
            Ok(taken) => {
                self.rate.count_granted(taken.wait);
                Ok(taken)
            }
            Err((reason, wait)) => Err(self.refused(key, reason, wait)),
        }
    }

    /// Tells the listeners, if there are any, about `event` on `key`.
    #[inline]
    pub fn publish_key(&self, key: &K, event: Event) {
        if self.rate.listener().is_some() || self.key_listener.is_some() {
            self.publish(key, &event);
        }
    }

    /// Tells the listeners about `event` on `key`: out of line on servers, so that a limiter
    /// without listeners builds no event (built eagerly, it cost the map's refusal 10
    /// instructions); on microcontrollers, where flash counts, as the compiler sees fit.
    #[cfg_attr(target_has_atomic = "64", cold, inline(never))]
    fn publish(&self, key: &K, event: &Event) {
        if let Some(listener) = self.rate.listener() {
            listener.on_event(event);
        }
        if let Some(listener) = self.key_listener {
            listener.on_event(key, event);
        }
    }
}
