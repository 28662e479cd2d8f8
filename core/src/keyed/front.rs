//! The keyed front, written once for every keyed store (ritmo-core's fixed table and ritmo-std's
//! sharded map): a call's tier picked, its permits checked, a disabled limiter passed, a
//! reservation made, a refusal counted and published. A store supplies only where its keys live:
//! [`take`](KeyedStore::take) (find or insert a key and update its state, one decision of
//! [`KeyRate`]'s rules) and [`refund_key`](KeyedStore::refund_key) (the tail rule on its state).

use core::hash::Hash;
use core::time::Duration;

use super::KeyListener;
use super::rate::KeyRate;
use super::reservation::{KeyReservation, Taken};
use super::tiers::{TierRules, TierSet};
use crate::clock::Clock;
use crate::error::{AcquireError, InvalidPermits, RateLimitExceeded, Reason};
use crate::event::Event;

/// A keyed limiter's store of key states, under the front every keyed limiter shares. Implemented
/// by ritmo-core's [`KeyedLimiter`](super::KeyedLimiter) and ritmo-std's `KeyedRateLimiter`;
/// public only so that both share the one front and the one reservation type.
#[doc(hidden)]
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

    /// The numbers of `tier` now (for one tier, the config in force).
    #[inline(always)]
    fn rules(&self, tier: <Self::Tiers as TierSet<K>>::Index) -> TierRules {
        match self.tiers().rules(tier) {
            Some(rules) => rules,
            None => self.key_rate().rules(),
        }
    }
}

/// What a keyed store holds for a key now: the numbers of its tier, the instant, and the key's
/// state or why it has none.
#[doc(hidden)]
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
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub enum Peeked {
    /// Held: its state, carried over to the tier asked about.
    State(u64),
    /// Not held, and there is room for it: it would start with a full burst.
    Absent,
    /// Not held, and no room for it for this many units.
    NoRoom(u64),
}

/// `available_permits` of every keyed limiter: calls of one permit `key` would pass now.
#[doc(hidden)]
pub fn available_permits<K: 'static, S: KeyedStore<K>>(store: &S, key: &K) -> u32 {
    let Some(tier) = store.tiers().pick(key) else {
        return 0;
    };
    let rules = store.rules(tier);
    if !rules.enabled() {
        return rules.permits();
    }
    let peek = store.peek(key, tier);
    match peek.key {
        Peeked::State(tat) => peek.rules.available(tat, peek.now),
        Peeked::Absent => peek.rules.permits(),
        Peeked::NoRoom(_) => 0,
    }
}

/// `retry_after_n` of every keyed limiter: how long until `k` permits for `key` would pass at
/// once; for a key whose tier function answers no tier, as long as a wait can be.
#[doc(hidden)]
pub fn retry_after_n<K: 'static, S: KeyedStore<K>>(
    store: &S,
    key: &K,
    k: u32,
) -> Result<Duration, InvalidPermits> {
    let rate = store.key_rate();
    let Some(tier) = store.tiers().pick(key) else {
        return Ok(rate.duration(u64::MAX));
    };
    let rules = store.rules(tier);
    rules.check_permits(rate.id(), k)?;
    if !rules.enabled() {
        return Ok(Duration::ZERO);
    }
    let peek = store.peek(key, tier);
    let fresh = peek.rules.wait(0, peek.now, k);
    let wait = match peek.key {
        Peeked::State(tat) => peek.rules.wait(tat, peek.now, k),
        Peeked::Absent => fresh,
        Peeked::NoRoom(room) => room.max(fresh),
    };
    Ok(rate.duration(wait))
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

/// `try_acquire` of every keyed limiter: one permit for `key` if it is there now.
#[doc(hidden)]
#[inline]
pub fn try_acquire<K: 'static, S: KeyedStore<K>>(
    store: &S,
    key: &K,
) -> Result<(), RateLimitExceeded> {
    let tier = store.pick(key)?;
    if !store.rules(tier).enabled() {
        return Ok(());
    }
    store.take(key, tier, 1, 0).map(|_| ())
}

/// `try_acquire_n` of every keyed limiter: `k` permits for `key` as one unit if they are all
/// there now.
#[doc(hidden)]
pub fn try_acquire_n<K: 'static, S: KeyedStore<K>>(
    store: &S,
    key: &K,
    k: u32,
) -> Result<(), AcquireError> {
    let tier = store.pick(key)?;
    let rules = store.rules(tier);
    rules.check_permits(store.key_rate().id(), k)?;
    if !rules.enabled() {
        return Ok(());
    }
    store.take(key, tier, k, 0)?;
    Ok(())
}

/// `reserve` of every keyed limiter: one permit for `key`, now or within the config's (the
/// tier's) `max_wait`.
#[doc(hidden)]
pub fn reserve<'a, K: Hash + Eq + Clone + 'static, S: KeyedStore<K>>(
    store: &'a S,
    key: &K,
) -> Result<KeyReservation<'a, K, S>, RateLimitExceeded> {
    let tier = store.pick(key)?;
    reserve_valid(store, key, tier, 1, store.rules(tier).max_wait())
}

/// `reserve_n` (`max_wait` `None`: the config's, the tier's) and `reserve_n_within` of every
/// keyed limiter: `k` permits for `key` as one unit.
#[doc(hidden)]
pub fn reserve_n<'a, K: Hash + Eq + Clone + 'static, S: KeyedStore<K>>(
    store: &'a S,
    key: &K,
    k: u32,
    max_wait: Option<Duration>,
) -> Result<KeyReservation<'a, K, S>, AcquireError> {
    let tier = store.pick(key)?;
    let rules = store.rules(tier);
    rules.check_permits(store.key_rate().id(), k)?;
    let max_wait = match max_wait {
        Some(max_wait) => store.key_rate().units(max_wait),
        None => rules.max_wait(),
    };
    Ok(reserve_valid(store, key, tier, k, max_wait)?)
}

/// A reservation of `k` permits (already checked) for `key` on `tier` within `max_wait` units.
fn reserve_valid<'a, K: Hash + Eq + Clone + 'static, S: KeyedStore<K>>(
    store: &'a S,
    key: &K,
    tier: <S::Tiers as TierSet<K>>::Index,
    k: u32,
    max_wait: u64,
) -> Result<KeyReservation<'a, K, S>, RateLimitExceeded> {
    if !store.rules(tier).enabled() {
        let now = store.key_rate().now();
        return Ok(KeyReservation::of(
            store,
            key.clone(),
            Taken::uncounted(now),
            0,
            k,
            0,
            0,
        ));
    }
    // Read before the decision: a change after it makes the refund return nothing.
    let generation = store.key_rate().generation();
    let taken = store.take(key, tier, k, max_wait)?;
    // The numbers the call was decided with (a reconfigure may have come since the check).
    Ok(KeyReservation::of(
        store,
        key.clone(),
        taken,
        store.rules(tier).increment(k),
        k,
        <S::Tiers as TierSet<K>>::position(tier),
        generation,
    ))
}
