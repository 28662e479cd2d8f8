//! Taking permits from a [`KeyedRateLimiter`]: a known key under its shard's read lock (one
//! compare-and-swap), a key that changed tier carried over under the write lock, a new key put in
//! within `max_keys`; a reservation given back.

use std::hash::Hash;
use std::sync::atomic::Ordering;

use ritmo_core::keyed::{Decision, KeyedStore, Taken, TierRules, TierSet};
use ritmo_core::{Clock, RateLimitExceeded, Reason};

use super::reclaim::Room;
use super::{KeyEntry, KeyedRateLimiter};

impl<K: Hash + Eq + Clone, C: Clock, P: TierSet<K>> KeyedRateLimiter<K, C, P> {
    /// Runs one call on `tier` for `k` permits (already checked) that may wait `max_wait` units.
    #[inline]
    pub(super) fn take_key(
        &self,
        key: &K,
        tier: P::Index,
        k: u32,
        max_wait: u64,
    ) -> Result<Taken, RateLimitExceeded> {
        let now = self.rate.now();
        // A known key: the shard's read lock, held across one compare-and-swap, so that no
        // removal (which takes the write lock) can drop the key between our read and our write.
        match self.map.read_hashed(key, |state| {
            (state.tier == tier).then(|| self.apply(state, tier, now, k, max_wait))
        }) {
            Ok(Some(decision)) => self.granted(key, Taken::of(decision, now)),
            Ok(None) => self.take_moved(key, tier, now, k, max_wait),
            Err(hash) => self.take_new(key, Some(hash), tier, k, now, max_wait),
        }
    }

    /// The state of `entry` as of a call on `tier` (numbers `rules`) at `now`: carried over to
    /// `tier` if its key changed tier since its state was made.
    #[inline(always)]
    pub(super) fn view(
        &self,
        entry: &KeyEntry<P::Index>,
        tier: P::Index,
        rules: &TierRules,
        now: u64,
    ) -> u64 {
        if entry.tier == tier {
            entry.tat()
        } else {
            self.rules(entry.tier).carry(entry.tat(), now, rules)
        }
    }

    /// Decides a call on `tier` for the key whose state is `state`.
    #[inline(always)]
    pub(super) fn apply(
        &self,
        state: &KeyEntry<P::Index>,
        tier: P::Index,
        now: u64,
        k: u32,
        max_wait: u64,
    ) -> Decision {
        match self.tiers.rules(tier, false) {
            None => state.apply(&self.rate, now, k, max_wait),
            // The numbers read at each try, after the state: a change (of a tier too) converts
            // the states first, so numbers read after one is seen are the ones it published.
            Some(_) => state.apply_rules(|| self.rules(tier), now, k, max_wait),
        }
    }

    /// A call for a known key whose tier changed (or a new key, if it is gone meanwhile).
    #[cold]
    fn take_moved(
        &self,
        key: &K,
        tier: P::Index,
        now: u64,
        k: u32,
        max_wait: u64,
    ) -> Result<Taken, RateLimitExceeded> {
        match self.take_changed(key, tier, now, k, max_wait) {
            Some(decision) => self.granted(key, Taken::of(decision, now)),
            None => self.take_new(key, None, tier, k, now, max_wait),
        }
    }

    /// A known key whose tier changed: carried over to `tier` (the single limiter's
    /// `reconfigure` rule, at `now`) under its shard's write lock, and the call decided there.
    /// `None` if the key is gone (dropped as idle meanwhile).
    #[cold]
    fn take_changed(
        &self,
        key: &K,
        tier: P::Index,
        now: u64,
        k: u32,
        max_wait: u64,
    ) -> Option<Decision> {
        // The numbers before the write lock, as for a new key: a change converting the keys
        // needs that lock, so under it the numbers are read as they are. The state afterwards is
        // noted by the map: the key may be idle sooner than it last knew (a faster tier).
        loop {
            let settled = self.rate.settled();
            let decided = self.map.write(key, |entry| {
                if !self.rate.still(&settled) {
                    return None;
                }
                let to = self.rules_held(tier);
                if entry.tier != tier {
                    let from = self.rules_held(entry.tier);
                    entry.convert(&|tat| from.carry(tat, now, &to));
                    entry.tier = tier;
                }
                Some(entry.apply_rules(|| to, now, k, max_wait))
            })?;
            if let Some(decision) = decided {
                return Some(decision);
            }
        }
    }

    /// A key not in the map: make room for it if need be, then put it in. `hash` is the key's
    /// hash in the map if the caller has it.
    #[cold]
    fn take_new(
        &self,
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
                let settled = self.rate.settled();
                let decision = self.map.upsert(key, hash, |held| {
                    if !self.rate.still(&settled) {
                        // A reconfigure started meanwhile: decide again with its numbers.
                        self.held.fetch_sub(1, Ordering::AcqRel);
                        return (None, None);
                    }
                    // With the shard locked, no earlier than any instant a key was dropped at: a
                    // key dropped after our clock read gets a fresh state that never starts
                    // before the old one ended.
                    let now = now.max(self.evicted_at.load(Ordering::SeqCst));
                    let decide = |state: &KeyEntry<P::Index>| match self.tiers.rules(tier, false) {
                        None => state.apply_settled(&self.rate, &settled, now, k, max_wait),
                        Some(_) => state.apply_rules(|| self.rules_held(tier), now, k, max_wait),
                    };
                    match held {
                        Some(state) => {
                            // Another thread put it in meanwhile.
                            self.held.fetch_sub(1, Ordering::AcqRel);
                            if state.tier != tier {
                                // On another tier: carried over, under the shard's write lock.
                                let (from, to) =
                                    (self.rules_held(state.tier), self.rules_held(tier));
                                state.convert(&|tat| from.carry(tat, now, &to));
                                state.tier = tier;
                            }
                            (None, Some((decide(state), now)))
                        }
                        None => {
                            let state = KeyEntry::new(tier);
                            let decision = decide(&state);
                            if let Decision::Reject { .. } = decision {
                                self.held.fetch_sub(1, Ordering::AcqRel);
                                (None, Some((decision, now)))
                            } else {
                                (Some(state), Some((decision, now)))
                            }
                        }
                    }
                });
                match decision {
                    Some((decision, now)) => return self.granted(key, Taken::of(decision, now)),
                    None => continue,
                }
            }
            match self.make_room(false, Some(key)) {
                Room::Yes => continue,
                Room::No(wait) => return Err(self.refused(key, Reason::KeyCapacity, wait)),
            }
        }
    }

    /// One permit for `key` on `tier` now ([`KeyedStore::take_one`]): the read lock held across
    /// one compare-and-swap while no change of the numbers has begun.
    ///
    /// [`KeyedStore::take_one`]: crate::ritmo::keyed::KeyedStore::take_one
    #[inline]
    pub(super) fn take_one_key(&self, key: &K, tier: P::Index) -> Result<(), RateLimitExceeded> {
        // Reconfigured (or a tier changed live): decide with the numbers in force at each try.
        let Some(config) = self.rate.unchanged_rules() else {
            return self.try_acquire_changed(key, tier);
        };
        let rules = self.tiers.rules(tier, false).unwrap_or(config);
        if !rules.enabled() {
            return Ok(());
        }
        let now = self.rate.now();
        // The read lock held across one compare-and-swap, as in `take`.
        match self.map.read_hashed(key, |state| {
            (state.tier == tier).then(|| state.try_take_unchanged(&self.rate, &rules, now))
        }) {
            Ok(Some(Some(Ok(())))) => {
                self.rate.count_granted(0);
                Ok(())
            }
            Ok(Some(Some(Err(wait)))) => Err(self.refused(key, Reason::NoPermitInTime, wait)),
            // Changed meanwhile, or lost a race: the path that reads the numbers afresh.
            Ok(Some(None)) => self.try_acquire_changed(key, tier),
            Ok(None) => self.take_moved(key, tier, now, 1, 0).map(|_| ()),
            Err(hash) => self.take_new(key, Some(hash), tier, 1, now, 0).map(|_| ()),
        }
    }

    /// [`take_one_key`](Self::take_one_key) on a limiter a `reconfigure` changed.
    #[cold]
    fn try_acquire_changed(&self, key: &K, tier: P::Index) -> Result<(), RateLimitExceeded> {
        if !self.rules(tier).enabled() {
            return Ok(());
        }
        self.take_key(key, tier, 1, 0).map(|_| ())
    }

    /// Gives back what a reservation on tier `tier` took, if the key was not changed since.
    pub(super) fn refund(&self, key: &K, written: u64, increment: u64, tier: u8) -> bool {
        let held = self.map.read_lowering(key, |state| {
            // Changed tier since: its state was carried over, the reservation's slot with it.
            if !self.tiers.refundable(state.tier, tier) {
                return (false, None);
            }
            let back = state.refund(&self.rate, written, increment);
            // The key may now be idle sooner than the map last knew.
            (back, back.then(|| state.tat()))
        });
        // Not held: dropped as idle, its permits were all back already.
        held.unwrap_or_else(|| self.rate.is_idle(written, self.rate.now()))
    }
}
