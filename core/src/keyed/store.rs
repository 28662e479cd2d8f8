//! [`KeyedStore`]: where a keyed limiter's key states live (ritmo-core's fixed table, ritmo-std's
//! sharded map), and what a store answers: [`Taken`] for a call, [`Peek`] for a read.

use super::KeyListener;
use super::rate::KeyRate;
use super::rules::{Decision, TierRules};
use super::tiers::TierSet;
use crate::clock::Clock;
use crate::error::{RateLimitExceeded, Reason};
use crate::event::Event;

/// Where a keyed limiter's key states live, under the verbs every keyed limiter shares
/// ([`Keyed`](super::Keyed), implemented for every store). Implemented by ritmo-core's fixed
/// [`KeyedLimiter`](super::KeyedLimiter) and ritmo-std's sharded `KeyedRateLimiter`.
///
/// A store finds or inserts a key and decides a call on its state with the rules of
/// [`KeyRate`] and [`TierRules`] ([`take`](Self::take)), gives a reservation back
/// ([`refund_key`](Self::refund_key)), reads a key's state ([`peek`](Self::peek)), and counts
/// and drops the keys it holds. The provided methods are the shared mechanism the verbs are
/// built from: picking a key's tier, reading a tier's numbers, counting and publishing an
/// outcome.
pub trait KeyedStore<K: 'static> {
    /// The clock the limiter reads.
    type Clock: Clock;
    /// How a key's tier is picked (`OneTier` for one config).
    type Tiers: TierSet<K>;
    /// The rules every key follows.
    fn key_rate(&self) -> &KeyRate<Self::Clock>;
    /// The tiers keys are put on.
    fn tiers(&self) -> &Self::Tiers;
    /// The listener told about events with their key, if any.
    fn key_listener(&self) -> Option<&'static dyn KeyListener<K>>;
    /// Decides one call for `k` permits (already checked) on `tier` that may wait `max_wait`
    /// units, on `key`'s state (found or put in), and writes what it took.
    fn take(
        &self,
        key: &K,
        tier: <Self::Tiers as TierSet<K>>::Index,
        k: u32,
        max_wait: u64,
    ) -> Result<Taken, RateLimitExceeded>;
    /// Gives back what a reservation on tier `tier` (0 for one tier) wrote (`written`, having
    /// added `increment`) if `key` was not changed since; whether it went back.
    fn refund_key(&self, key: &K, written: u64, increment: u64, tier: u8) -> bool;
    /// What the store holds for `key` on `tier` now, changing no state (a store may reclaim idle
    /// keys meanwhile: that changes no decision).
    fn peek(&self, key: &K, tier: <Self::Tiers as TierSet<K>>::Index) -> Peek;
    /// Keys being limited right now (not idle): [`Keyed::len`](super::Keyed::len).
    fn live_count(&self) -> usize;
    /// Keys held, live or idle and not yet reclaimed: [`Keyed::keys_held`](super::Keyed::keys_held).
    fn held_count(&self) -> usize;
    /// The most keys it holds at once: [`Keyed::capacity`](super::Keyed::capacity).
    fn key_capacity(&self) -> usize;
    /// Drops every idle key; the keys left: [`Keyed::reclaim_idle`](super::Keyed::reclaim_idle).
    fn drop_idle(&self) -> usize;

    /// One permit for `key` on `tier` now (the call `try_acquire` makes once its tier is
    /// picked); a store may answer it by a faster path of its own, deciding as
    /// [`take`](Self::take) would.
    #[inline]
    fn take_one(
        &self,
        key: &K,
        tier: <Self::Tiers as TierSet<K>>::Index,
    ) -> Result<(), RateLimitExceeded> {
        if !self.enabled(tier) {
            return Ok(());
        }
        self.take(key, tier, 1, 0).map(|_| ())
    }

    /// Tells the limiter's listeners, if it has any, about `event` on `key`.
    #[inline]
    fn publish_key(&self, key: &K, event: Event) {
        if self.key_rate().listener().is_some() || self.key_listener().is_some() {
            publish(self, key, &event);
        }
    }

    /// Counts and publishes a refusal of a call on `key` for `reason` that would have waited
    /// `wait` units.
    #[inline]
    fn refused(&self, key: &K, reason: Reason, wait: u64) -> RateLimitExceeded {
        let rate = self.key_rate();
        rate.count_rejected(reason);
        let error = rate.rejected(reason, wait);
        // The event built only where someone listens.
        if rate.listener().is_some() || self.key_listener().is_some() {
            publish(self, key, &Event::Rejected(error));
        }
        error
    }

    /// Counts a call's outcome `taken` (`Err`: refused for `reason`, the wait it would have had).
    #[inline(always)]
    fn granted(
        &self,
        key: &K,
        taken: Result<Taken, (Reason, u64)>,
    ) -> Result<Taken, RateLimitExceeded> {
        match taken {
            Ok(taken) => {
                self.key_rate().count_granted(taken.wait);
                Ok(taken)
            }
            Err((reason, wait)) => Err(self.refused(key, reason, wait)),
        }
    }

    /// The tier `key` is on now, or the refusal of a call whose tier function answers no tier.
    #[inline(always)]
    fn pick(&self, key: &K) -> Result<<Self::Tiers as TierSet<K>>::Index, RateLimitExceeded> {
        match self.tiers().pick(key) {
            Some(tier) => Ok(tier),
            None => Err(self.refused(key, Reason::UnknownTier, u64::MAX)),
        }
    }

    /// The numbers of `tier` now (for one tier, the config in force), once no change of them is
    /// being written.
    #[inline(always)]
    fn rules(&self, tier: <Self::Tiers as TierSet<K>>::Index) -> TierRules {
        let rate = self.key_rate();
        // Tested before the numbers are read, so that a call that needs one of them (`enabled`)
        // reads that one alone.
        if self.tiers().rules(tier, false).is_some() && rate.generation() != 0 {
            return self.rules_changed(tier);
        }
        match self.tiers().rules(tier, false) {
            Some(rules) => rules,
            None => rate.rules(),
        }
    }

    /// Whether `tier` limits now: [`rules`](Self::rules)`.enabled()`, reading one word of them.
    #[inline(always)]
    fn enabled(&self, tier: <Self::Tiers as TierSet<K>>::Index) -> bool {
        let rate = self.key_rate();
        if self.tiers().rules(tier, false).is_some() && rate.generation() != 0 {
            return self.rules_changed(tier).enabled();
        }
        match self.tiers().rules(tier, false) {
            Some(rules) => rules.enabled(),
            None => rate.enabled(),
        }
    }

    /// [`rules`](Self::rules) of a limiter changed live: out of line, off the hot path.
    #[cold]
    #[inline(never)]
    fn rules_changed(&self, tier: <Self::Tiers as TierSet<K>>::Index) -> TierRules {
        self.key_rate().consistent(|| self.rules_held(tier))
    }

    /// The numbers of `tier` now, read by a store that holds a lock a change of them would
    /// need (so none is being written).
    #[inline]
    fn rules_held(&self, tier: <Self::Tiers as TierSet<K>>::Index) -> TierRules {
        let changed = self.key_rate().generation() != 0;
        match self.tiers().rules(tier, changed) {
            Some(rules) => rules,
            None => self.key_rate().rules(),
        }
    }
}

/// What a keyed store holds for a key now: the numbers of its tier, the instant, and the key's
/// state or why it has none.
#[derive(Debug, Clone, Copy)]
pub struct Peek {
    /// The numbers of the key's tier, as the store read them.
    pub rules: TierRules,
    /// The clock's reading, in units.
    pub now: u64,
    /// The key's state.
    pub key: Peeked,
}

/// A key's state in a [`Peek`].
#[derive(Debug, Clone, Copy)]
pub enum Peeked {
    /// Held: its state, carried over to the tier asked about.
    State(u64),
    /// Not held, and there is room for it: it would start with a full burst.
    Absent,
    /// Not held, and no room for it for this many units.
    NoRoom(u64),
}

/// What a call did to its key: the state it wrote, when its permits arrive, and how long that is.
#[derive(Debug, Clone, Copy)]
pub struct Taken {
    /// The key's state after the call.
    pub written: u64,
    /// When its permits are there, in units.
    pub slot: u64,
    /// How long until then, in units.
    pub wait: u64,
}

impl Taken {
    /// A call that passes uncounted (a disabled limiter) at `now`.
    #[inline]
    pub const fn uncounted(now: u64) -> Taken {
        Taken {
            written: 0,
            slot: now,
            wait: 0,
        }
    }

    /// What `decision`, made at `now`, took; `Err` if it was a refusal, with the wait it would
    /// have had.
    #[inline]
    pub const fn of(decision: Decision, now: u64) -> Result<Taken, (Reason, u64)> {
        match decision {
            Decision::Now { new_tat } => Ok(Taken {
                written: new_tat,
                slot: now,
                wait: 0,
            }),
            Decision::Wait { new_tat, wait } => Ok(Taken {
                written: new_tat,
                slot: now.saturating_add(wait),
                wait,
            }),
            Decision::Reject { wait } => Err((Reason::NoPermitInTime, wait)),
        }
    }
}

/// Tells `store`'s listeners about `event` on `key`: out of line on servers, so that a limiter
/// without listeners builds no event (built eagerly, it cost the map's refusal 10 instructions);
/// on microcontrollers, where flash counts, as the compiler sees fit.
#[cfg_attr(target_has_atomic = "64", cold, inline(never))]
fn publish<K: 'static, S: KeyedStore<K> + ?Sized>(store: &S, key: &K, event: &Event) {
    if let Some(listener) = store.key_rate().listener() {
        listener.on_event(event);
    }
    if let Some(listener) = store.key_listener() {
        listener.on_event(key, event);
    }
}
