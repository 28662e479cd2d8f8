//! What a [`KeyedRateLimiter`] reports without taking anything: a key's state, the live keys.

use std::hash::Hash;
use std::sync::atomic::Ordering;

use ritmo_core::keyed::{Peek, Peeked, TierSet};
use ritmo_core::{Clock, KeySnapshot};

use super::KeyedRateLimiter;
use super::reclaim::Room;

impl<K: Hash + Eq + Clone, C: Clock, P: TierSet<K>> KeyedRateLimiter<K, C, P> {
    /// What the map holds for `key` on `tier` now ([`KeyedStore::peek`]): a key not held has
    /// room if the map is below `max_keys` or idle keys can be dropped for it.
    ///
    /// [`KeyedStore::peek`]: crate::ritmo::keyed::KeyedStore::peek
    pub(super) fn peek_key(&self, key: &K, tier: P::Index) -> Peek {
        let now = self.rules.key_rate().now();
        let rules = self.rules.rules(tier);
        if let Ok(tat) = self.map.read_hashed(key, |entry| {
            self.rules
                .carried(entry.tat(), entry.tier, tier, &rules, now)
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
            match self.make_room(false, Some(key)) {
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
    /// # use ritmo::keyed::Keyed;
    /// let l = KeyedRateLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, 10, ManualClock::new());
    /// l.try_acquire_n(&7u8, 3).unwrap();
    /// assert_eq!(l.live_keys(), vec![KeySnapshot::new(7, 1)]);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn live_keys(&self) -> Vec<KeySnapshot<K>> {
        let now = self.rules.key_rate().now();
        let mut live = Vec::new();
        self.map.for_each(|key, e| {
            let tat = e.tat();
            if !self.rules.key_rate().is_idle(tat, now) {
                let available = self.rules.rules(e.tier).available(tat, now);
                live.push(KeySnapshot::new(key.clone(), available));
            }
        });
        live
    }

    /// Keys not idle now: one pass over the map.
    pub(super) fn live_count(&self) -> usize {
        let now = self.rules.key_rate().now();
        let mut live = 0;
        self.map.for_each(|_, e| {
            if !self.rules.key_rate().is_idle(e.tat(), now) {
                live += 1;
            }
        });
        live
    }
}
