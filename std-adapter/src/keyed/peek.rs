//! What a [`KeyedRateLimiter`] reports without taking anything: a key's state, the live keys.

use std::hash::Hash;
use std::sync::atomic::Ordering;

use ritmo_core::keyed::{KeyRules, Peek, Peeked, TierSet};
use ritmo_core::{Clock, KeySnapshot};

use super::ShardedMap;
use super::reclaim::Room;

impl<K: Hash + Eq + Clone, C: Clock, P: TierSet<K>> ShardedMap<K, C, P> {
    /// What the map holds for `key` on `tier` now ([`KeyedStore::peek`]): a key not held has
    /// room if the map is below `max_keys` or idle keys can be dropped for it.
    ///
    /// [`KeyedStore::peek`]: crate::ritmo::keyed::KeyedStore::peek
    pub(super) fn peek_key(&self, key_rules: &KeyRules<K, C, P>, key: &K, tier: P::Index) -> Peek {
        let now = key_rules.key_rate().now();
        let rules = key_rules.rules(tier);
        if let Ok(tat) = self.map.read_hashed(key, |entry| {
            key_rules.carried(entry.tat(), entry.tier, tier, &rules, now)
        }) {
            return Peek {
                rules,
                now,
                key: Peeked::State(tat),
            };
        }
        let key = if self.held.load(Ordering::Acquire) < self.max_keys {
            Peeked::Absent
        } else {
            match self.make_room(key_rules, false, Some(key)) {
                Room::Yes => Peeked::Absent,
                Room::No(wait) => Peeked::NoRoom(wait),
            }
        };
        Peek { rules, now, key }
    }

    /// The keys being limited right now, each with the permits it would pass now on the tier its
    /// state was last made under (in no particular order).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo::{Config, KeySnapshot, ManualClock};
    /// # use ritmo::server::KeyedRateLimiter;
    /// let l = KeyedRateLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, 10, ManualClock::new());
    /// l.try_acquire_n(&7u8, 3).unwrap();
    /// assert_eq!(l.live_keys(), vec![KeySnapshot::new(7, 1)]);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn live_keys(&self, key_rules: &KeyRules<K, C, P>) -> Vec<KeySnapshot<K>> {
        let now = key_rules.key_rate().now();
        let mut live = Vec::new();
        self.map.for_each(|key, e| {
            let tat = e.tat();
            if !key_rules.key_rate().is_idle(tat, now) {
                let available = key_rules.rules(e.tier).available(tat, now);
                live.push(KeySnapshot::new(key.clone(), available));
            }
        });
        live
    }

    /// Keys not idle now: one pass over the map.
    pub(super) fn live_count(&self, key_rules: &KeyRules<K, C, P>) -> usize {
        let now = key_rules.key_rate().now();
        let mut live = 0;
        self.map.for_each(|_, e| {
            if !key_rules.key_rate().is_idle(e.tat(), now) {
                live += 1;
            }
        });
        live
    }
}
