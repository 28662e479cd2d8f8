//! Taking permits from a [`KeyedRateLimiter`]: a known key under its shard's read lock (one
//! compare-and-swap), a key that changed tier carried over under the write lock, a new key put in
//! within `max_keys`; a reservation given back. Every decision is ritmo-core's
//! ([`KeyRules`](crate::ritmo::keyed::KeyRules)), made on the cell the map finds or puts in.

use std::hash::Hash;
use std::sync::atomic::Ordering;

use ritmo_core::keyed::{KeyRules, Taken, TierSet};
use ritmo_core::{Clock, RateLimitExceeded, Reason};

use super::reclaim::Room;
use super::{KeyEntry, ShardedMap};

impl<K: Hash + Eq + Clone, C: Clock, P: TierSet<K>> ShardedMap<K, C, P> {
    /// Runs one call on `tier` for `k` permits (already checked) that may wait `max_wait` units.
    #[inline]
    pub(super) fn take_key(
        &self,
        key_rules: &KeyRules<K, C, P>,
        key: &K,
        tier: P::Index,
        k: u32,
        max_wait: u64,
    ) -> Result<Taken, RateLimitExceeded> {
        let now = key_rules.key_rate().now();
        // A known key: the shard's read lock, held across one compare-and-swap, so that no
        // removal (which takes the write lock) can drop the key between our read and our write.
        match self.map.read_hashed(key, |entry| {
            (entry.tier == tier).then(|| key_rules.decide(entry, tier, now, k, max_wait))
        }) {
            Ok(Some(taken)) => key_rules.granted(key, taken),
            Ok(None) => self.take_moved(key_rules, key, tier, now, k, max_wait),
            Err(hash) => self.take_new(key_rules, key, Some(hash), tier, k, now, max_wait),
        }
    }

    /// A known key whose tier changed: carried over to `tier` under its shard's write lock, and
    /// the call decided there; a new key if it is gone (dropped as idle meanwhile).
    #[cold]
    fn take_moved(
        &self,
        key_rules: &KeyRules<K, C, P>,
        key: &K,
        tier: P::Index,
        now: u64,
        k: u32,
        max_wait: u64,
    ) -> Result<Taken, RateLimitExceeded> {
        // The numbers before the write lock, as for a new key: a change converting the keys
        // needs that lock. The state afterwards is noted by the map: the key may be idle sooner
        // than it last knew (a faster tier).
        loop {
            let settled = key_rules.key_rate().settled();
            let decided = self.map.write(key, |entry| {
                let mut held = entry.tier;
                let decided =
                    key_rules.decide_locked(entry, &mut held, tier, &settled, now, k, max_wait);
                entry.tier = held;
                decided
            });
            match decided {
                Some(Some(taken)) => return key_rules.granted(key, taken),
                Some(None) => continue,
                None => return self.take_new(key_rules, key, None, tier, k, now, max_wait),
            }
        }
    }

    /// A key not in the map: make room for it if need be, then put it in. `hash` is the key's
    /// hash in the map if the caller has it.
    #[cold]
    #[allow(clippy::too_many_arguments)] // the call's own numbers, passed on as `take` got them
    fn take_new(
        &self,
        key_rules: &KeyRules<K, C, P>,
        key: &K,
        hash: Option<u64>,
        tier: P::Index,
        k: u32,
        now: u64,
        max_wait: u64,
    ) -> Result<Taken, RateLimitExceeded> {
        loop {
            if self.claim() {
                // The config's numbers before the shard's write lock: a reconfigure converting
                // the keys needs that lock, so under it this call must not wait for one.
                let settled = key_rules.key_rate().settled();
                let decided = self.map.upsert(key, hash, |held| {
                    // With the shard locked, no earlier than any instant a key was dropped at: a
                    // key dropped after our clock read gets a fresh state that never starts
                    // before the old one ended.
                    let now = now.max(self.evicted_at.load(Ordering::SeqCst));
                    let rules = key_rules;
                    match held {
                        Some(entry) => {
                            // Another thread put it in meanwhile (on another tier: carried over).
                            self.held.fetch_sub(1, Ordering::AcqRel);
                            let mut on = entry.tier;
                            let decided = rules
                                .decide_locked(entry, &mut on, tier, &settled, now, k, max_wait);
                            entry.tier = on;
                            (None, decided)
                        }
                        None => {
                            let entry = KeyEntry::new(tier);
                            let mut on = tier;
                            match rules
                                .decide_locked(&entry, &mut on, tier, &settled, now, k, max_wait)
                            {
                                Some(Ok(taken)) => (Some(entry), Some(Ok(taken))),
                                // Refused, or a reconfigure started meanwhile: not put in.
                                decided => {
                                    self.held.fetch_sub(1, Ordering::AcqRel);
                                    (None, decided)
                                }
                            }
                        }
                    }
                });
                match decided {
                    Some(taken) => return key_rules.granted(key, taken),
                    // A reconfigure started meanwhile: decide again with its numbers.
                    None => continue,
                }
            }
            match self.make_room(key_rules, false, Some(key)) {
                Room::Yes => continue,
                Room::No(wait) => return Err(key_rules.refused(key, Reason::KeyCapacity, wait)),
            }
        }
    }

    /// One permit for `key` on `tier` now ([`KeyedStore::take_one`]): the read lock held across
    /// one compare-and-swap while no change of the numbers has begun.
    ///
    /// [`KeyedStore::take_one`]: crate::ritmo::keyed::KeyedStore::take_one
    #[inline]
    pub(super) fn take_one_key(
        &self,
        key_rules: &KeyRules<K, C, P>,
        key: &K,
        tier: P::Index,
    ) -> Result<(), RateLimitExceeded> {
        // Reconfigured (or a tier changed live): decide with the numbers in force at each try.
        let Some(rules) = key_rules.unchanged_rules(tier) else {
            return self.try_acquire_changed(key_rules, key, tier);
        };
        if !rules.enabled() {
            return Ok(());
        }
        let now = key_rules.key_rate().now();
        // The read lock held across one compare-and-swap, as in `take`.
        match self.map.read_hashed(key, |entry| {
            (entry.tier == tier).then(|| key_rules.take_unchanged(entry, &rules, now))
        }) {
            Ok(Some(Some(Ok(())))) => {
                key_rules.key_rate().count_granted(0);
                Ok(())
            }
            Ok(Some(Some(Err(wait)))) => Err(key_rules.refused(key, Reason::NoPermitInTime, wait)),
            // Changed meanwhile, or lost a race: the path that reads the numbers afresh.
            Ok(Some(None)) => self.try_acquire_changed(key_rules, key, tier),
            Ok(None) => self.take_moved(key_rules, key, tier, now, 1, 0).map(|_| ()),
            Err(hash) => self
                .take_new(key_rules, key, Some(hash), tier, 1, now, 0)
                .map(|_| ()),
        }
    }

    /// [`take_one_key`](Self::take_one_key) on a limiter a `reconfigure` changed.
    #[cold]
    fn try_acquire_changed(
        &self,
        key_rules: &KeyRules<K, C, P>,
        key: &K,
        tier: P::Index,
    ) -> Result<(), RateLimitExceeded> {
        if !key_rules.rules(tier).enabled() {
            return Ok(());
        }
        self.take_key(key_rules, key, tier, 1, 0).map(|_| ())
    }

    /// Gives back what a reservation on tier `tier` took, if the key was not changed since.
    pub(super) fn refund(
        &self,
        key_rules: &KeyRules<K, C, P>,
        key: &K,
        written: u64,
        increment: u64,
        tier: u8,
    ) -> bool {
        let held = self.map.read_lowering(key, |entry| {
            // Changed tier since: its state was carried over, the reservation's slot with it.
            if !key_rules.tiers().refundable(entry.tier, tier) {
                return (false, None);
            }
            let back = key_rules.refund(entry, written, increment);
            // The key may now be idle sooner than the map last knew.
            (back, back.then(|| entry.tat()))
        });
        // Not held: dropped as idle, its permits were all back already.
        held.unwrap_or_else(|| {
            key_rules
                .key_rate()
                .is_idle(written, key_rules.key_rate().now())
        })
    }
}
