//! The [`FixedTable`] of a [`KeyedLimiter`](super::KeyedLimiter) as a [`KeyedStore`]: each call one critical section, a
//! key that changed tier carried over.

use core::hash::Hash;

use super::rules::TierRules;
use super::store::{KeyedStore, KeysChange, Peek, Peeked};
use super::table::Probe;
use super::table::{Slot, Table};
use super::{FixedTable, KeyRules, KeySnapshot, Taken, TierSet};
use crate::clock::Clock;
use crate::error::{RateLimitExceeded, Reason};

impl<K: Hash + Eq + Clone, C: Clock, const N: usize, P: TierSet<K>> FixedTable<K, C, N, P> {
    /// The state of the key in `slot` as of a call on `tier` (whose numbers are `rules`) at
    /// `now`: carried over to `tier` if the key changed tier since its state was made.
    #[inline(always)]
    fn view(
        key_rules: &KeyRules<K, C, P>,
        slot: &Slot<K, P::Index>,
        tier: P::Index,
        rules: &TierRules,
        now: u64,
    ) -> u64 {
        key_rules.carried(slot.tat, slot.tier, tier, rules, now)
    }
}

/// The fixed table as a keyed store: each call one critical section.
impl<K: Hash + Eq + Clone, C: Clock, const N: usize, P: TierSet<K>> KeyedStore<K>
    for FixedTable<K, C, N, P>
{
    type Clock = C;
    type Tiers = P;
    type LiveKeys = heapless::Vec<KeySnapshot<K>, N>;

    /// Scans the table.
    fn live_count(&self, rules: &KeyRules<K, C, P>) -> usize {
        let reading = rules.rate.now();
        self.table.with(|t| {
            let now = t.observe(reading);
            t.slots
                .iter()
                .filter(|s| s.key.is_some() && s.tat > now)
                .count()
        })
    }

    fn held_count(&self) -> usize {
        self.table.with(|t| t.held)
    }

    fn key_capacity(&self) -> usize {
        Table::<K, N, P::Index>::CAP
    }

    fn drop_idle(&self, rules: &KeyRules<K, C, P>) -> usize {
        let reading = rules.rate.now();
        self.table.with(|t| {
            let now = t.observe(reading);
            t.reclaim(now)
        })
    }

    /// Runs one call on `tier` for `k` permits (already checked) that may wait `max_wait` units.
    fn live_keys(&self, rules: &KeyRules<K, C, P>) -> heapless::Vec<KeySnapshot<K>, N> {
        let reading = rules.rate.now();
        self.table.with(|t| {
            let now = t.observe(reading);
            let mut out = heapless::Vec::new();
            for slot in &t.slots {
                if let Some(key) = &slot.key
                    && slot.tat > now
                {
                    // At most N slots: always fits.
                    let _ = out.push(KeySnapshot {
                        key: key.clone(),
                        available_permits: rules.rules(slot.tier).available(slot.tat, now),
                    });
                }
            }
            out
        })
    }

    fn change(&self, rules: &KeyRules<K, C, P>, change: &mut KeysChange<'_>) {
        let reading = rules.rate.now();
        self.table.with(|t| {
            let now = t.observe(reading);
            // Keys not held that a restore left spent are converted as held ones are.
            let fresh = t.fresh(&rules.rate.rules());
            let mut fresh_after = None;
            change(now, &mut |tier, convert| {
                for slot in t.slots.iter_mut() {
                    if slot.key.is_some() && tier.is_none_or(|tier| P::position(slot.tier) == tier)
                    {
                        slot.tat = convert(slot.tat);
                    }
                }
                if tier.is_none() {
                    fresh_after = Some(convert(fresh));
                }
            });
            t.rebound();
            if let Some(fresh) = fresh_after {
                t.spent = super::persist::spent_for(fresh, &rules.rate.rules(), now);
            }
        });
    }

    #[inline]
    fn take(
        &self,
        key_rules: &KeyRules<K, C, P>,
        key: &K,
        tier: P::Index,
        k: u32,
        max_wait: u64,
    ) -> Result<Taken, RateLimitExceeded> {
        let reading = key_rules.rate.now();
        let result = self.table.with(|t| {
            let now = t.observe(reading);
            let rules = key_rules.rules(tier);
            let (tat, at) = match t.probe(key, now) {
                Probe::Found(i) => {
                    if t.slots[i].tier != tier {
                        // The key changed tier: reconfigured now, alone, whatever this call's
                        // outcome; never below where a key not held starts on its new tier.
                        let fresh = t.fresh(&rules);
                        let slot = &mut t.slots[i];
                        slot.tat = Self::view(key_rules, slot, tier, &rules, now).max(fresh);
                        slot.tier = tier;
                        t.lowered(i);
                    }
                    (t.slots[i].tat, Ok(i))
                }
                Probe::Vacant(i) => (t.fresh(&rules), Err(i)),
                Probe::Full { soonest } => return Err((Reason::KeyCapacity, soonest - now)),
            };
            let (new_tat, wait) = match rules.decide(tat, now, k, max_wait) {
                super::Decision::Now { new_tat } => (new_tat, 0),
                super::Decision::Wait { new_tat, wait } => (new_tat, wait),
                super::Decision::Reject { wait } => return Err((Reason::NoPermitInTime, wait)),
            };
            match at {
                Ok(i) => t.slots[i].tat = new_tat,
                Err(i) => t.insert_at(i, key.clone(), new_tat, tier),
            }
            Ok(Taken {
                written: new_tat,
                slot: now.saturating_add(wait),
                wait,
            })
        });
        key_rules.granted(key, result)
    }

    fn peek(&self, key_rules: &KeyRules<K, C, P>, key: &K, tier: P::Index) -> Peek {
        let reading = key_rules.rate.now();
        self.table.with(|t| {
            let now = t.observe(reading);
            // The numbers under the table's lock: a reconfigure converts the keys under it.
            let rules = key_rules.rules(tier);
            let key = match t.probe(key, now) {
                Probe::Found(i) => {
                    let slot = &t.slots[i];
                    let tat = Self::view(key_rules, slot, tier, &rules, now);
                    if slot.tier == tier {
                        Peeked::State(tat)
                    } else {
                        // as a call would carry it over (`take`)
                        Peeked::State(tat.max(t.fresh(&rules)))
                    }
                }
                Probe::Vacant(_) => match t.fresh(&rules) {
                    0 => Peeked::Absent,
                    fresh => Peeked::State(fresh),
                },
                Probe::Full { soonest } => Peeked::NoRoom(soonest - now),
            };
            Peek { rules, now, key }
        })
    }

    /// Gives back what a reservation on tier `tier` took, if the key was not changed since.
    fn refund_key(
        &self,
        rules: &KeyRules<K, C, P>,
        key: &K,
        written: u64,
        increment: u64,
        tier: u8,
    ) -> bool {
        let reading = rules.rate.now();
        self.table.with(|t| {
            let now = t.observe(reading);
            match t.probe(key, now) {
                // Changed tier since: its state was carried over, the reservation's slot with it.
                Probe::Found(i) if !rules.tiers.refundable(t.slots[i].tier, tier) => false,
                Probe::Found(i) => match rules.rate.refund(t.slots[i].tat, written, increment) {
                    Some(back) => {
                        // Never below where a key not held starts (after a restore).
                        let fresh = t.fresh(&rules.rules(t.slots[i].tier));
                        t.slots[i].tat = back.max(fresh);
                        t.lowered(i);
                        true
                    }
                    None => false,
                },
                // Reclaimed: it was idle, its permits all back already.
                Probe::Vacant(_) | Probe::Full { .. } => written <= now,
            }
        })
    }
}
