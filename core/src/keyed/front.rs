//! The keyed front, written once for every keyed store (ritmo-core's fixed table and ritmo-std's
//! sharded map): a call's tier picked, its permits checked, a disabled limiter passed, a
//! reservation made, a refusal counted and published. A store supplies only where its keys live:
//! [`take`](KeyedStore::take) (find or insert a key and update its state, one decision of
//! [`KeyRate`](super::KeyRate)'s rules) and [`refund_key`](KeyedStore::refund_key) (the tail rule on its state).

use core::hash::Hash;
use core::time::Duration;

use super::reservation::KeyReservation;
pub use super::store::{KeyedStore, Peek, Peeked, Taken};
use super::tiers::TierSet;
use crate::error::{AcquireError, InvalidPermits, RateLimitExceeded};

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

/// `try_acquire` of every keyed limiter: one permit for `key` if it is there now.
#[doc(hidden)]
#[inline]
pub fn try_acquire<K: 'static, S: KeyedStore<K>>(
    store: &S,
    key: &K,
) -> Result<(), RateLimitExceeded> {
    let tier = store.pick(key)?;
    if !store.enabled(tier) {
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
