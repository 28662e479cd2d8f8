//! What a [`KeyedLimiter`] reports without taking anything: a key's available permits and
//! `retry_after`, the live keys, and reclaiming idle ones.

use core::hash::Hash;
use core::time::Duration;

use super::front::{self, KeyedStore};
use super::{KeySnapshot, KeyedLimiter, KeyedSnapshot, TierSet};
use crate::clock::Clock;

impl<K: Hash + Eq + Clone, C: Clock, const N: usize, P: TierSet<K>> KeyedLimiter<K, C, N, P> {
    /// Calls of one permit `key` would pass right now without waiting, in `0..=permits`: the full
    /// burst for a key never seen, 0 for a new key the full table has no room for (and for a key
    /// whose tier function answers no tier). For a key that changed tier, what it would have
    /// once carried over to its new tier now. Takes nothing.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::keyed::KeyedLimiter;
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// l.try_acquire_n(&1, 3).unwrap();
    /// assert_eq!((l.available_permits(&1), l.available_permits(&2)), (1, 4));
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn available_permits(&self, key: &K) -> u32 {
        front::available_permits(self, key)
    }

    /// How long until one permit for `key` would pass without waiting: zero if one is there now;
    /// for a new key the full table has no room for, when the soonest key is idle. Takes nothing.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::keyed::KeyedLimiter;
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// l.try_acquire_n(&1, 4).unwrap();
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
    /// # use core::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::keyed::KeyedLimiter;
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// l.try_acquire_n(&1, 4).unwrap();
    /// assert_eq!(l.retry_after_n(&1, 2).unwrap(), Duration::from_millis(500));
    /// assert!(l.retry_after_n(&1, 5).is_err());
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    ///
    /// For a key whose tier function answers no tier, as long as a wait can be (never).
    pub fn retry_after_n(&self, key: &K, k: u32) -> Result<Duration, crate::error::InvalidPermits> {
        front::retry_after_n(self, key, k)
    }

    /// How many keys are being limited right now (not idle). Idle keys still in the table are
    /// not counted: they are the same as absent. Takes nothing; scans the table.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::keyed::KeyedLimiter;
    /// let clock = ManualClock::new();
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, &clock, 0);
    /// l.try_acquire(&1).unwrap();
    /// l.try_acquire(&2).unwrap();
    /// assert_eq!(l.len(), 2);
    /// clock.advance(Duration::from_millis(250));
    /// assert_eq!(l.len(), 0);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn len(&self) -> usize {
        let reading = self.rate.now();
        self.table.with(|t| {
            let now = t.observe(reading);
            t.slots
                .iter()
                .filter(|s| s.key.is_some() && s.tat > now)
                .count()
        })
    }

    /// Its id, live keys, keys held, capacity and permits per key ([`KeyedSnapshot`]; tier 0's
    /// for a tiered limiter). Takes nothing; scans the table.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::keyed::KeyedLimiter;
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// assert_eq!(l.snapshot().capacity, 8);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn snapshot(&self) -> KeyedSnapshot {
        KeyedSnapshot {
            id: self.id(),
            live_keys: self.len(),
            keys_held: self.keys_held(),
            capacity: self.capacity(),
            permits: self.config().permits(),
        }
    }

    /// Whether no key is being limited right now.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::keyed::KeyedLimiter;
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// assert!(l.is_empty());
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many slots hold a key, live or idle but not yet reclaimed: at most
    /// [`capacity`](Self::capacity).
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::keyed::KeyedLimiter;
    /// let clock = ManualClock::new();
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, &clock, 0);
    /// l.try_acquire(&1).unwrap();
    /// clock.advance(Duration::from_secs(1));
    /// assert_eq!((l.len(), l.keys_held()), (0, 1)); // idle, reclaimed when a probe passes it
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn keys_held(&self) -> usize {
        self.table.with(|t| t.held)
    }

    /// Drops every idle key now, and returns how many keys are left (all of them live). Never
    /// needed, since idle keys are reclaimed whenever a probe passes them (from 1024 slots,
    /// whenever a new key wants their room); for tests and for measuring.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::keyed::KeyedLimiter;
    /// let clock = ManualClock::new();
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, &clock, 0);
    /// l.try_acquire(&1).unwrap();
    /// clock.advance(Duration::from_secs(1));
    /// assert_eq!(l.reclaim_idle(), 0);
    /// assert_eq!(l.keys_held(), 0);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn reclaim_idle(&self) -> usize {
        let reading = self.rate.now();
        self.table.with(|t| {
            let now = t.observe(reading);
            t.reclaim(now)
        })
    }

    /// The keys being limited right now, each with the permits it would pass now on the tier its
    /// state was last made under (in table order).
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::keyed::KeyedLimiter;
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// l.try_acquire_n(&7, 3).unwrap();
    /// let live = l.live_keys();
    /// assert_eq!((live[0].key, live[0].available_permits), (7, 1));
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn live_keys(&self) -> heapless::Vec<KeySnapshot<K>, N> {
        let reading = self.rate.now();
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
                        available_permits: self.rules(slot.tier).available(slot.tat, now),
                    });
                }
            }
            out
        })
    }
}
