//! The verbs of [`Keyed`], written once over any [`KeyedStore`] (ritmo-core's fixed table,
//! ritmo-std's sharded map): a call's tier picked, its permits checked, a disabled limiter
//! passed, a reservation made, a refusal counted and published, the numbers changed live. A store
//! supplies only where its keys live: [`take`](KeyedStore::take) (find or insert a key and update
//! its state, one decision of the rules), [`refund_key`](KeyedStore::refund_key),
//! [`peek`](KeyedStore::peek) and [`change`](KeyedStore::change).

use core::hash::Hash;
use core::time::Duration;

use super::KeyedSnapshot;
use super::key_rules::KeyRules;
use super::limiter::Keyed;
use super::reservation::KeyReservation;
use super::rules::{Taken, TierRules};
use super::store::{ClockedStore, KeyedStore, NewStore, Peeked};
use super::tiers::{Tier, TierSet, Tiers};
use crate::clock::ManualTime;
use crate::config::Config;
#[cfg(feature = "reconfigure")]
use crate::error::TierError;
use crate::error::{AcquireError, InvalidPermits, RateLimitExceeded};
use crate::wait::{AdvanceClock, Wait};

/// # The verbs, the same for every store
impl<K: Hash + Eq + Clone + 'static, S: KeyedStore<K>> Keyed<K, S> {
    /// The limiter's id.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::keyed::KeyedLimiter;
    /// let l: KeyedLimiter<u8, _, 2> = KeyedLimiter::with_clock("x", Config::new(1, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// assert_eq!(l.id(), "x");
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn id(&self) -> &'static str {
        self.rules.key_rate().id()
    }

    /// The config every key gets: the one it was built with, or the last one given to
    /// `reconfigure`. For a tiered limiter, tier 0's.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::keyed::KeyedLimiter;
    /// let c = Config::new(1, Duration::from_secs(1))?;
    /// let l: KeyedLimiter<u8, _, 2> = KeyedLimiter::with_clock("x", c, ManualClock::new(), 0);
    /// assert_eq!(l.config(), c);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn config(&self) -> Config {
        self.rules.key_rate().config()
    }

    /// The clock it reads.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{Clock, Config, ManualClock};
    /// # use ritmo::keyed::KeyedLimiter;
    /// let l: KeyedLimiter<u8, _, 2> = KeyedLimiter::with_clock("x", Config::new(1, Duration::from_secs(1))?, ManualClock::starting_at(5), 0);
    /// assert_eq!(l.clock().now(), 5);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn clock(&self) -> &S::Clock {
        self.rules.key_rate().clock()
    }

    /// Calls admitted at once since it was built, every key together (feature `counters`).
    /// A statistic kept with a plain load and store: exact on one core, it may undercount when
    /// two cores admit at the same instant.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::keyed::KeyedLimiter;
    /// let l: KeyedLimiter<u8, _, 4> =
    ///     KeyedLimiter::with_clock("x", Config::new(1, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// l.try_acquire(&1).unwrap();
    /// l.try_acquire(&2).unwrap();
    /// assert!(l.try_acquire(&1).is_err());
    /// assert_eq!(l.admitted_count(), 2);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    #[cfg(feature = "counters")]
    #[cfg_attr(docsrs, doc(cfg(feature = "counters")))]
    pub fn admitted_count(&self) -> u64 {
        self.rules.key_rate().admitted_count()
    }

    /// Calls that reserved a later slot for their key, to wait for it (feature `counters`).
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::keyed::KeyedLimiter;
    /// let c = Config::new(1, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l: KeyedLimiter<u8, _, 4> = KeyedLimiter::with_clock("x", c, ManualClock::new(), 0);
    /// l.try_acquire(&1).unwrap();
    /// let r = l.reserve(&1).unwrap(); // waits a second
    /// assert_eq!((l.admitted_count(), l.waited_count()), (1, 1));
    /// # drop(r);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    #[cfg(feature = "counters")]
    #[cfg_attr(docsrs, doc(cfg(feature = "counters")))]
    pub fn waited_count(&self) -> u64 {
        self.rules.key_rate().waited_count()
    }

    /// Calls refused for `reason` (feature `counters`): [`Reason::NoPermitInTime`] (the key's
    /// permits would come too late), [`Reason::KeyCapacity`] (no room for a new key) and
    /// [`Reason::UnknownTier`] (a tiered limiter's function named no tier); 0 for every other
    /// reason, which a keyed limiter never refuses a call for.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{Config, ManualClock, Reason};
    /// # use ritmo::keyed::KeyedLimiter;
    /// let l: KeyedLimiter<u8, _, 1> =
    ///     KeyedLimiter::with_clock("x", Config::new(1, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// l.try_acquire(&1).unwrap();
    /// assert!(l.try_acquire(&1).is_err()); // its permit is spent
    /// assert!(l.try_acquire(&2).is_err()); // no room for key 2
    /// assert_eq!(l.rejected_count(Reason::NoPermitInTime), 1);
    /// assert_eq!(l.rejected_count(Reason::KeyCapacity), 1);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    ///
    /// [`Reason::NoPermitInTime`]: crate::Reason::NoPermitInTime
    /// [`Reason::KeyCapacity`]: crate::Reason::KeyCapacity
    /// [`Reason::UnknownTier`]: crate::Reason::UnknownTier
    #[cfg(feature = "counters")]
    #[cfg_attr(docsrs, doc(cfg(feature = "counters")))]
    pub fn rejected_count(&self, reason: crate::Reason) -> u64 {
        self.rules.key_rate().rejected_count(reason)
    }

    /// The position of the tier `key` is on now in the tiers given (0 for a limiter of one
    /// config), as the tiers are listed; `None` if its tier function
    /// answers a plan no tier has.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::keyed::{Tier, Tiers};
    /// # use ritmo::keyed::KeyedLimiter;
    /// let tiers = Tiers::new(
    ///     [Tier::new("free", Config::new(1, Duration::from_secs(1))?), Tier::new("paid", Config::new(9, Duration::from_secs(1))?)],
    ///     |key: &u8| ["free", "paid", "gold"][usize::from(*key)],
    /// );
    /// let l: KeyedLimiter<u8, _, 16, _> = KeyedLimiter::tiered_with_clock("api", tiers, ManualClock::new(), 0);
    /// assert_eq!((l.tier_index(&1), l.tier_index(&2)), (Some(1), None));
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn tier_index(&self, key: &K) -> Option<usize> {
        self.rules
            .tiers()
            .pick(key)
            .map(|tier| usize::from(<S::Tiers as TierSet<K>>::position(tier)))
    }

    /// The config of the tier `key` is on now (for one config, [`config`](Self::config));
    /// `None` if its tier function answers a plan no tier has.
    pub fn config_of(&self, key: &K) -> Option<Config> {
        let position = <S::Tiers as TierSet<K>>::position(self.rules.tiers().pick(key)?);
        Some(match self.rules.tiers().tier(usize::from(position)) {
            Some((_, config)) => config,
            None => self.rules.key_rate().config(),
        })
    }

    /// Takes one permit for `key` if it is there now; never waits. A key never seen gets a full
    /// burst; a key the store has no room for is refused with
    /// [`Reason::KeyCapacity`](crate::Reason::KeyCapacity).
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::keyed::KeyedLimiter;
    /// let l: KeyedLimiter<&str, _, 8> = KeyedLimiter::with_clock("x", Config::new(1, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// assert!(l.try_acquire(&"a").is_ok());
    /// assert!(l.try_acquire(&"a").is_err());
    /// assert!(l.try_acquire(&"b").is_ok()); // its own quota
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    #[inline]
    pub fn try_acquire(&self, key: &K) -> Result<(), RateLimitExceeded> {
        let tier = self.rules.pick(key)?;
        self.store.take_one(&self.rules, key, tier)
    }

    /// Takes `k` permits for `key` as one unit if they are all there now. `k = 0` and
    /// `k > permits` are [`AcquireError::InvalidPermits`].
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{AcquireError, Config, ManualClock};
    /// # use ritmo::keyed::KeyedLimiter;
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// assert!(l.try_acquire_n(&1, 3).is_ok());
    /// assert!(matches!(l.try_acquire_n(&1, 2), Err(AcquireError::RateLimited(_))));
    /// assert!(matches!(l.try_acquire_n(&1, 5), Err(AcquireError::InvalidPermits(_))));
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn try_acquire_n(&self, key: &K, k: u32) -> Result<(), AcquireError> {
        let tier = self.rules.pick(key)?;
        let rules = self.rules.rules(tier);
        rules.check_permits(self.rules.key_rate().id(), k)?;
        if !rules.enabled() {
            return Ok(());
        }
        self.store.take(&self.rules, key, tier, k, 0)?;
        Ok(())
    }

    /// Takes one permit for `key` now, or reserves its next one if it arrives within the config's
    /// (the tier's) `max_wait`; otherwise rejects at once without changing anything. Dropping or
    /// cancelling the reservation before it is committed returns the permit if no later call for
    /// the key was made.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::keyed::KeyedLimiter;
    /// let c = Config::new(2, Duration::from_secs(1))?.with_max_wait(Duration::from_millis(500));
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", c, ManualClock::new(), 0);
    /// l.try_acquire_n(&1, 2).unwrap();
    /// let r = l.reserve(&1).unwrap();
    /// assert_eq!(r.wait_time(), Duration::from_millis(500));
    /// assert!(l.reserve(&1).is_err()); // would wait a second
    /// assert!(r.cancel()); // the permit goes back
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn reserve(&self, key: &K) -> Result<KeyReservation<'_, K, Self>, RateLimitExceeded> {
        let tier = self.rules.pick(key)?;
        reserve_valid(self, key, tier, 1, self.rules.rules(tier).max_wait())
    }

    /// Like [`reserve`](Self::reserve), for `k` permits taken as one unit.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::keyed::KeyedLimiter;
    /// let c = Config::new(4, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", c, ManualClock::new(), 0);
    /// l.try_acquire_n(&1, 4).unwrap();
    /// assert_eq!(l.reserve_n(&1, 2).unwrap().wait_time(), Duration::from_millis(500));
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn reserve_n(&self, key: &K, k: u32) -> Result<KeyReservation<'_, K, Self>, AcquireError> {
        reserve_checked(self, key, k, None)
    }

    /// Like [`reserve_n`](Self::reserve_n), with this call's own `max_wait`.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::keyed::KeyedLimiter;
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", Config::new(1, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// l.try_acquire(&1).unwrap();
    /// assert!(l.reserve_n_within(&1, 1, Duration::from_millis(999)).is_err());
    /// assert!(l.reserve_n_within(&1, 1, Duration::from_secs(1)).is_ok());
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn reserve_n_within(
        &self,
        key: &K,
        k: u32,
        max_wait: Duration,
    ) -> Result<KeyReservation<'_, K, Self>, AcquireError> {
        reserve_checked(self, key, k, Some(max_wait))
    }

    /// Takes one permit for `key`, waiting for it with `waiter` if it arrives within `max_wait`.
    /// If the waiter is interrupted the permit goes back (when no later call for the key was
    /// made) and the call fails with [`Reason::Interrupted`](crate::Reason::Interrupted).
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{AdvanceClock, Clock, Config, ManualClock};
    /// # use ritmo::keyed::KeyedLimiter;
    /// let clock = ManualClock::new();
    /// let c = Config::new(1, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", c, &clock, 0);
    /// l.acquire_with(&1, &mut AdvanceClock).unwrap();
    /// l.acquire_with(&1, &mut AdvanceClock).unwrap();
    /// assert_eq!(clock.now(), 1_000_000_000);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn acquire_with<W: Wait<S::Clock> + ?Sized>(
        &self,
        key: &K,
        waiter: &mut W,
    ) -> Result<(), RateLimitExceeded> {
        self.reserve(key)?.wait_with(waiter)
    }

    /// Takes `k` permits for `key` as one unit, waiting with `waiter` as
    /// [`acquire_with`](Self::acquire_with).
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{AdvanceClock, Clock, Config, ManualClock};
    /// # use ritmo::keyed::KeyedLimiter;
    /// let clock = ManualClock::new();
    /// let c = Config::new(4, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", c, &clock, 0);
    /// l.acquire_n_with(&1, 4, &mut AdvanceClock).unwrap();
    /// l.acquire_n_with(&1, 2, &mut AdvanceClock).unwrap();
    /// assert_eq!(clock.now(), 500_000_000);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn acquire_n_with<W: Wait<S::Clock> + ?Sized>(
        &self,
        key: &K,
        k: u32,
        waiter: &mut W,
    ) -> Result<(), AcquireError> {
        Ok(self.reserve_n(key, k)?.wait_with(waiter)?)
    }

    /// Takes one permit for `key`, waiting for it by advancing the fake clock to its slot: tests
    /// never sleep.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{Clock, Config, ManualClock};
    /// # use ritmo::keyed::KeyedLimiter;
    /// let clock = ManualClock::new();
    /// let c = Config::new(2, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", c, &clock, 0);
    /// for _ in 0..3 { l.acquire_advancing(&1).unwrap(); }
    /// assert_eq!(clock.now(), 500_000_000);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn acquire_advancing(&self, key: &K) -> Result<(), RateLimitExceeded>
    where
        S::Clock: ManualTime,
    {
        self.acquire_with(key, &mut AdvanceClock)
    }

    /// Takes `k` permits for `key`, advancing the fake clock to their slot if they must wait.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{Clock, Config, ManualClock};
    /// # use ritmo::keyed::KeyedLimiter;
    /// let clock = ManualClock::new();
    /// let c = Config::new(4, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", c, &clock, 0);
    /// l.acquire_n_advancing(&1, 4).unwrap();
    /// l.acquire_n_advancing(&1, 4).unwrap();
    /// assert_eq!(clock.now(), 1_000_000_000);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn acquire_n_advancing(&self, key: &K, k: u32) -> Result<(), AcquireError>
    where
        S::Clock: ManualTime,
    {
        self.acquire_n_with(key, k, &mut AdvanceClock)
    }

    /// Calls of one permit `key` would pass right now without waiting, in `0..=permits`: the full
    /// burst for a key never seen, 0 for a new key the full store has no room for (and for a key
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
        let Some(tier) = self.rules.tiers().pick(key) else {
            return 0;
        };
        let rules = self.rules.rules(tier);
        if !rules.enabled() {
            return rules.permits();
        }
        let peek = self.store.peek(&self.rules, key, tier);
        match peek.key {
            Peeked::State(tat) => peek.rules.available(tat, peek.now),
            Peeked::Absent => peek.rules.permits(),
            Peeked::NoRoom(_) => 0,
        }
    }

    /// How long until one permit for `key` would pass without waiting: zero if one is there now;
    /// for a new key the full store has no room for, when the soonest key is idle. Takes nothing.
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

    /// How long until `k` permits for `key` would pass at once; for a key whose tier function
    /// answers no tier, as long as a wait can be (never). Takes nothing.
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
    pub fn retry_after_n(&self, key: &K, k: u32) -> Result<Duration, InvalidPermits> {
        let rate = self.rules.key_rate();
        let Some(tier) = self.rules.tiers().pick(key) else {
            return Ok(rate.duration(u64::MAX));
        };
        let rules = self.rules.rules(tier);
        rules.check_permits(rate.id(), k)?;
        if !rules.enabled() {
            return Ok(Duration::ZERO);
        }
        let peek = self.store.peek(&self.rules, key, tier);
        let fresh = peek.rules.wait(0, peek.now, k);
        let wait = match peek.key {
            Peeked::State(tat) => peek.rules.wait(tat, peek.now, k),
            Peeked::Absent => fresh,
            Peeked::NoRoom(room) => room.max(fresh),
        };
        Ok(rate.duration(wait))
    }

    /// How many keys are being limited right now (not idle). Idle keys still held are not
    /// counted: they are the same as absent. Takes nothing; scans the store.
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
        self.store.live_count(&self.rules)
    }

    /// How many keys it holds, live or idle but not yet reclaimed: at most
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
        self.store.held_count()
    }

    /// The most keys it holds at once: `max_keys` of a map; `N` of a fixed table of `N` slots, or
    /// three quarters of them from 1024 slots (see the [keyed module](super#bounded-memory)).
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::keyed::KeyedLimiter;
    /// let l: KeyedLimiter<u8, _, 64> = KeyedLimiter::with_clock("x", Config::new(1, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// assert_eq!(l.capacity(), 64);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn capacity(&self) -> usize {
        self.store.key_capacity()
    }

    /// Drops every idle key now, and returns how many keys are left (all of them live). Never
    /// needed, since idle keys are reclaimed when a call meets them; for tests and for measuring.
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
        self.store.drop_idle(&self.rules)
    }

    /// Whether no key is being limited right now.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::keyed::KeyedLimiter;
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// assert!(l.is_empty());
    /// l.try_acquire(&1).unwrap();
    /// assert!(!l.is_empty());
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Its id, live keys, keys held, capacity and permits per key ([`KeyedSnapshot`]; tier 0's
    /// for a tiered limiter). Takes nothing; scans the store.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::keyed::KeyedLimiter;
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// l.try_acquire(&1).unwrap();
    /// let s = l.snapshot();
    /// assert_eq!((s.live_keys, s.keys_held, s.capacity, s.permits), (1, 1, 8, 4));
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn snapshot(&self) -> KeyedSnapshot {
        let rate = self.rules.key_rate();
        KeyedSnapshot::new(
            rate.id(),
            self.len(),
            self.keys_held(),
            self.capacity(),
            rate.config().permits(),
        )
    }
}

/// `reserve_n` and `reserve_n_within` (`max_wait` `None`: the config's, the tier's): `k`
/// permits for `key` as one unit.
/// # Built by the store's own constructor (ritmo-std's map)
impl<K: 'static, S> Keyed<K, S>
where
    S: KeyedStore<K, Tiers = super::OneTier>
        + NewStore<Config, DefaultClock = <S as KeyedStore<K>>::Clock>,
{
    /// A keyed limiter named `id` applying `config` to each key, in a store built from `args`,
    /// on the store's default clock (ritmo-std's map: `args` is its most keys, the clock a
    /// `StdClock`).
    pub fn new(id: &'static str, config: Config, args: <S as ClockedStore<Config>>::Args) -> Self {
        Self::with_clock(id, config, args, S::default_clock())
    }
}

impl<K: 'static, S: KeyedStore<K, Tiers = super::OneTier> + ClockedStore<Config>> Keyed<K, S> {
    /// A keyed limiter on `clock`, in a store built from `args` (a
    /// [`ManualClock`](crate::ManualClock) in tests).
    pub fn with_clock(
        id: &'static str,
        config: Config,
        args: <S as ClockedStore<Config>>::Args,
        clock: S::Clock,
    ) -> Self {
        Keyed::from_parts(
            KeyRules::with_clock(id, config, clock),
            <S as ClockedStore<Config>>::new_store(args),
        )
    }
}

impl<K: 'static, S, const T: usize, P, F> Keyed<K, S>
where
    S: KeyedStore<K, Tiers = Tiers<K, T, P, F>>
        + NewStore<Tiers<K, T, P, F>, DefaultClock = <S as KeyedStore<K>>::Clock>,
{
    /// A keyed limiter whose keys each follow their tier's config (see [`Tiers`]), in a store
    /// built from `args`, on the store's default clock.
    pub fn tiered(
        id: &'static str,
        tiers: Tiers<K, T, P, F>,
        args: <S as ClockedStore<Tiers<K, T, P, F>>>::Args,
    ) -> Self {
        Self::tiered_with_clock(id, tiers, args, S::default_clock())
    }
}

impl<K: 'static, S, const T: usize, P, F> Keyed<K, S>
where
    S: KeyedStore<K, Tiers = Tiers<K, T, P, F>> + ClockedStore<Tiers<K, T, P, F>>,
{
    /// A tiered keyed limiter on `clock`, in a store built from `args`.
    pub fn tiered_with_clock(
        id: &'static str,
        tiers: Tiers<K, T, P, F>,
        args: <S as ClockedStore<Tiers<K, T, P, F>>>::Args,
        clock: S::Clock,
    ) -> Self {
        Keyed::from_parts(
            KeyRules::tiered_with_clock(id, tiers, clock),
            <S as ClockedStore<Tiers<K, T, P, F>>>::new_store(args),
        )
    }
}

/// # The keys held, and the numbers changed live
impl<K: Hash + Eq + Clone + 'static, S: KeyedStore<K>> Keyed<K, S> {
    /// The keys being limited right now (not idle), each with the permits it would pass now, in
    /// no particular order: for a dashboard or a debug endpoint. The fixed table gives a
    /// `heapless::Vec` of at most its capacity, ritmo-std's map a `Vec`.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::keyed::KeyedLimiter;
    /// let l: KeyedLimiter<u8, _, 4> = KeyedLimiter::with_clock("x", Config::new(2, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// l.try_acquire(&7).unwrap();
    /// let live = l.live_keys();
    /// assert_eq!((live.len(), live[0].key, live[0].available_permits), (1, 7, 1));
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn live_keys(&self) -> S::LiveKeys {
        self.store.live_keys(&self.rules)
    }

    /// The name and config of every tier, in order (one, named for the limiter's id, for a
    /// limiter of one config): what the HTTP layer's `RateLimit-Policy` lists.
    pub fn tier_configs(&self) -> impl Iterator<Item = (&'static str, Config)> + '_ {
        (0..self.rules.tiers().count()).map(|i| match self.rules.tiers().tier(i) {
            Some(tier) => tier,
            None => (self.rules.key_rate().id(), self.rules.key_rate().config()),
        })
    }
}

#[cfg(feature = "reconfigure")]
#[cfg_attr(docsrs, doc(cfg(feature = "reconfigure")))]
impl<K: Hash + Eq + Clone + 'static, S: KeyedStore<K, Tiers = super::OneTier>> Keyed<K, S> {
    /// Applies `config` to every key from now on, each with the single limiter's rule
    /// ([`RateLimiter::reconfigure`](crate::RateLimiter::reconfigure)): a key's available permits
    /// become `min(available, new permits)`, permits owed stay owed, and a key never seen (or
    /// idle, or any key when a disabled config is enabled) gets the new config's full burst.
    /// Reconfiguring to the config in force changes nothing. The store holds every key still
    /// while it converts them and publishes the new numbers.
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::{Config, ManualClock};
    /// use ritmo::keyed::KeyedLimiter;
    /// let clock = ManualClock::new();
    /// let l: KeyedLimiter<u8, _, 4> =
    ///     KeyedLimiter::with_clock("x", Config::new(10, Duration::from_secs(1))?, &clock, 0);
    /// l.try_acquire_n(&1, 4).unwrap(); // key 1: 6 left
    /// l.reconfigure(Config::new(5, Duration::from_secs(1))?);
    /// assert_eq!((l.available_permits(&1), l.available_permits(&2)), (5, 5));
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn reconfigure(&self, config: Config) {
        self.store.change(&self.rules, &mut |now, keys| {
            self.rules
                .key_rate()
                .change(config, now, |convert| keys(None, convert));
        });
    }
}

impl<K, S, const T: usize, P: PartialEq, F: Fn(&K) -> P> Keyed<K, S>
where
    K: Hash + Eq + Clone + 'static,
    S: KeyedStore<K, Tiers = Tiers<K, T, P, F>>,
{
    /// The tier `key` is on now, as the tier function answers; `None` if it answers a plan no
    /// tier has (calls for the key are then refused with [`Reason::UnknownTier`](crate::Reason::UnknownTier)).
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::keyed::{KeyedLimiter, Tier, Tiers};
    /// let tiers = Tiers::new([Tier::of(0, "all", Config::new(1, Duration::from_secs(1))?)], |k: &u8| *k);
    /// let l: KeyedLimiter<u8, _, 8, _> = KeyedLimiter::tiered_with_clock("x", tiers, ManualClock::new(), 0);
    /// assert_eq!(l.tier(&0).map(|t| t.name()), Some("all"));
    /// assert!(l.tier(&1).is_none());
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn tier<'a>(&'a self, key: &K) -> Option<&'a Tier<P>>
    where
        Tiers<K, T, P, F>: 'a,
    {
        self.rules.tiers().tier_of(key)
    }

    /// The tiers it picks from.
    pub const fn tiers(&self) -> &Tiers<K, T, P, F> {
        &self.rules.tiers
    }

    /// Gives the tier named `name` `config` from now on, live: each of its keys follows the
    /// single limiter's rule ([`RateLimiter::reconfigure`](crate::RateLimiter::reconfigure)):
    /// a key still being limited keeps `min(available, new permits)` and the permits it owes,
    /// while a key idle now (or any key, when the tier was disabled) starts afresh with the new
    /// config's full burst, as a key never seen does. Keys of other tiers are untouched; a
    /// reservation made before the change gives nothing back after it. The config in force
    /// changes nothing. One critical section converts the tier's keys and publishes the numbers.
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::{Config, ErrorCode, ManualClock};
    /// use ritmo::keyed::{KeyedLimiter, Tier, Tiers};
    /// let clock = ManualClock::new();
    /// let tiers = Tiers::new(
    ///     [
    ///         Tier::new("free", Config::new(4, Duration::from_secs(1))?),
    ///         Tier::new("paid", Config::new(100, Duration::from_secs(1))?),
    ///     ],
    ///     |key: &u32| if *key < 1000 { "free" } else { "paid" },
    /// );
    /// let api: KeyedLimiter<u32, _, 8, _> = KeyedLimiter::tiered_with_clock("api", tiers, &clock, 1);
    /// api.try_acquire_n(&1, 4).unwrap(); // key 1 spends its burst
    /// api.try_acquire(&2).unwrap();
    /// clock.advance(Duration::from_millis(500)); // key 1: 2 back; key 2: idle
    /// api.set_tier_config("free", Config::new(8, Duration::from_secs(1))?).unwrap();
    /// let available = |key| api.available_permits(&key);
    /// assert_eq!((available(1), available(2), available(3)), (2, 8, 8));
    /// let err = api.set_tier_config("gold", Config::new(9, Duration::from_secs(1))?).unwrap_err();
    /// assert_eq!((err.code(), err.name()), (ErrorCode::UnknownTier, "gold"));
    /// assert_eq!(err.to_string(), "RITMO-REG-011: unknown tier name: \"gold\" (limiter \"api\")");
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    #[cfg(feature = "reconfigure")]
    #[cfg_attr(docsrs, doc(cfg(feature = "reconfigure")))]
    pub fn set_tier_config(&self, name: &str, config: Config) -> Result<(), TierError> {
        let mut changed = Ok(());
        self.store.change(&self.rules, &mut |now, keys| {
            changed = self.rules.tiers().change(
                self.rules.key_rate(),
                name,
                config,
                now,
                |tier, convert| keys(Some(tier), convert),
            );
        });
        changed
    }
}

fn reserve_checked<'a, K: Hash + Eq + Clone + 'static, S: KeyedStore<K>>(
    limiter: &'a Keyed<K, S>,
    key: &K,
    k: u32,
    max_wait: Option<Duration>,
) -> Result<KeyReservation<'a, K, Keyed<K, S>>, AcquireError> {
    let tier = limiter.rules.pick(key)?;
    let rules: TierRules = limiter.rules.rules(tier);
    rules.check_permits(limiter.rules.key_rate().id(), k)?;
    let max_wait = match max_wait {
        Some(max_wait) => limiter.rules.key_rate().units(max_wait),
        None => rules.max_wait(),
    };
    Ok(reserve_valid(limiter, key, tier, k, max_wait)?)
}

/// A reservation of `k` permits (already checked) for `key` on `tier` within `max_wait` units.
fn reserve_valid<'a, K: Hash + Eq + Clone + 'static, S: KeyedStore<K>>(
    limiter: &'a Keyed<K, S>,
    key: &K,
    tier: <S::Tiers as TierSet<K>>::Index,
    k: u32,
    max_wait: u64,
) -> Result<KeyReservation<'a, K, Keyed<K, S>>, RateLimitExceeded> {
    if !limiter.rules.rules(tier).enabled() {
        let now = limiter.rules.key_rate().now();
        return Ok(KeyReservation::of(
            limiter,
            key.clone(),
            Taken::uncounted(now),
            0,
            k,
            0,
            0,
        ));
    }
    // Read before the decision: a change after it makes the refund return nothing.
    let generation = limiter.rules.key_rate().generation();
    let taken = limiter.store.take(&limiter.rules, key, tier, k, max_wait)?;
    // The numbers the call was decided with (a reconfigure may have come since the check).
    Ok(KeyReservation::of(
        limiter,
        key.clone(),
        taken,
        limiter.rules.rules(tier).increment(k),
        k,
        <S::Tiers as TierSet<K>>::position(tier),
        generation,
    ))
}
