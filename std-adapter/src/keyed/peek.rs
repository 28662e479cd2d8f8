//! What a [`KeyedRateLimiter`] reports without taking anything: a key's available permits and
//! `retry_after`, the live keys, and reclaiming idle ones.

use std::hash::Hash;
use std::sync::atomic::Ordering;
use std::time::Duration;

use ritmo_core::keyed::front::{self, Peek, Peeked};
use ritmo_core::keyed::{KeyedStore, TierSet};
use ritmo_core::{Clock, InvalidPermits, KeySnapshot, KeyedSnapshot};

use super::KeyedRateLimiter;
use super::reclaim::Room;

impl<K: Hash + Eq + Clone, C: Clock, P: TierSet<K>> KeyedRateLimiter<K, C, P> {
    /// What the map holds for `key` on `tier` now ([`KeyedStore::peek`]): a key not held has
    /// room if the map is below `max_keys` or idle keys can be dropped for it.
    ///
    /// [`KeyedStore::peek`]: crate::ritmo::keyed::KeyedStore::peek
    pub(super) fn peek_key(&self, key: &K, tier: P::Index) -> Peek {
        let now = self.rate.now();
        let rules = self.rules(tier);
        if let Some(tat) = self
            .map
            .read(key, |state| self.view(state, tier, &rules, now))
        {
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

    /// Calls of one permit `key` would pass right now without waiting, in `0..=permits`: the full
    /// burst for a key never seen, 0 for a new key the map has no room for (and for a key whose
    /// tier function answers no tier). For a key that changed tier, what it would have once
    /// carried over to its new tier now. Takes nothing.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::server::KeyedRateLimiter;
    /// let l = KeyedRateLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, 10, ManualClock::new());
    /// l.try_acquire_n(&1u8, 3).unwrap();
    /// assert_eq!((l.available_permits(&1), l.available_permits(&2)), (1, 4));
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn available_permits(&self, key: &K) -> u32 {
        front::available_permits(self, key)
    }

    /// Whether a new key would find room now (dropping idle keys to make it, if need be).
    /// How long until one permit for `key` would pass without waiting: zero if one is there now;
    /// for a new key the map has no room for, when the soonest key may be idle. Takes nothing.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::server::KeyedRateLimiter;
    /// let l = KeyedRateLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, 10, ManualClock::new());
    /// l.try_acquire_n(&1u8, 4).unwrap();
    /// assert_eq!(l.retry_after(&1), Duration::from_millis(250));
    /// assert_eq!(l.retry_after(&2), Duration::ZERO);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn retry_after(&self, key: &K) -> Duration {
        self.retry_after_n(key, 1).unwrap_or(Duration::ZERO)
    }

    /// How long until `k` permits for `key` would pass at once. Takes nothing.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::server::KeyedRateLimiter;
    /// let l = KeyedRateLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, 10, ManualClock::new());
    /// l.try_acquire_n(&1u8, 4).unwrap();
    /// assert_eq!(l.retry_after_n(&1, 2).unwrap(), Duration::from_millis(500));
    /// assert!(l.retry_after_n(&1, 5).is_err());
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    ///
    /// For a key whose tier function answers no tier, as long as a wait can be (never).
    pub fn retry_after_n(&self, key: &K, k: u32) -> Result<Duration, InvalidPermits> {
        front::retry_after_n(self, key, k)
    }

    /// How many keys are being limited right now (not idle). Scans the map.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::server::KeyedRateLimiter;
    /// let clock = ManualClock::new();
    /// let l = KeyedRateLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, 10, &clock);
    /// l.try_acquire(&1u8).unwrap();
    /// l.try_acquire(&2u8).unwrap();
    /// assert_eq!(l.len(), 2);
    /// clock.advance(Duration::from_millis(250));
    /// assert_eq!(l.len(), 0);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn len(&self) -> usize {
        let now = self.rate.now();
        let mut live = 0;
        self.map.for_each(|_, e| {
            if !self.rate.is_idle(e.tat(), now) {
                live += 1;
            }
        });
        live
    }

    /// Its id, live keys, keys held, capacity (`max_keys`) and permits per key
    /// ([`KeyedSnapshot`]; tier 0's for a tiered limiter). Takes nothing; scans the map.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo::{Config, KeyedSnapshot, ManualClock};
    /// # use ritmo::server::KeyedRateLimiter;
    /// let l = KeyedRateLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, 10, ManualClock::new());
    /// l.try_acquire(&1u8).unwrap();
    /// assert_eq!(l.snapshot(), KeyedSnapshot::new("x", 1, 1, 10, 4));
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn snapshot(&self) -> KeyedSnapshot {
        KeyedSnapshot::new(
            self.id(),
            self.len(),
            self.keys_held(),
            self.max_keys,
            self.config().permits(),
        )
    }

    /// Whether no key is being limited right now.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::server::KeyedRateLimiter;
    /// let l = KeyedRateLimiter::<u8, _>::with_clock("x", Config::new(4, Duration::from_secs(1))?, 10, ManualClock::new());
    /// assert!(l.is_empty());
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
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
    pub fn live_keys(&self) -> Vec<KeySnapshot<K>> {
        let now = self.rate.now();
        let mut live = Vec::new();
        self.map.for_each(|key, e| {
            let tat = e.tat();
            if !self.rate.is_idle(tat, now) {
                let available = self.rules(e.tier).available(tat, now);
                live.push(KeySnapshot::new(key.clone(), available));
            }
        });
        live
    }

    /// Drops every idle key now and returns how many keys are left (all live). Never needed:
    /// idle keys are reclaimed whenever a new key needs their room. For tests and measurements.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::server::KeyedRateLimiter;
    /// let clock = ManualClock::new();
    /// let l = KeyedRateLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, 10, &clock);
    /// l.try_acquire(&1u8).unwrap();
    /// clock.advance(Duration::from_secs(1));
    /// assert_eq!(l.reclaim_idle(), 0);
    /// assert_eq!(l.keys_held(), 0);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn reclaim_idle(&self) -> usize {
        self.make_room(true, None);
        self.held.load(Ordering::Acquire)
    }
}
