//! [`Keyed`]: the verbs of every keyed limiter, written once over a [`KeyedStore`] (ritmo-core's
//! fixed table, ritmo-std's sharded map): a call's tier picked, its permits checked, a disabled
//! limiter passed, a reservation made, a refusal counted and published. A store supplies only
//! where its keys live: [`take`](KeyedStore::take) (find or insert a key and update its state,
//! one decision of the rules), [`refund_key`](KeyedStore::refund_key) and
//! [`peek`](KeyedStore::peek).

use core::hash::Hash;
use core::time::Duration;

use super::reservation::KeyReservation;
pub use super::rules::Taken;
pub use super::store::{KeyedStore, Peek, Peeked};
use super::tiers::TierSet;
use super::{KeyedSnapshot, rules::TierRules};
use crate::clock::ManualTime;
use crate::config::Config;
use crate::error::{AcquireError, InvalidPermits, RateLimitExceeded};
use crate::wait::{AdvanceClock, Wait};

/// The verbs of a keyed limiter, the same for every store: ritmo-core's fixed
/// [`KeyedLimiter`](super::KeyedLimiter) and ritmo-std's sharded `KeyedRateLimiter`. Implemented
/// for every [`KeyedStore`]; bring it into scope with `use ritmo::prelude::*` (or
/// `use ritmo::keyed::Keyed`).
///
/// ```
/// use core::time::Duration;
/// use ritmo::{Config, ManualClock};
/// use ritmo::keyed::{Keyed, KeyedLimiter};
///
/// // Written once for every keyed limiter, whatever holds its keys.
/// fn admit<L: Keyed<u32>>(limiter: &L, peer: u32) -> bool {
///     limiter.try_acquire(&peer).is_ok()
/// }
/// let peers: KeyedLimiter<u32, _, 8> =
///     KeyedLimiter::with_clock("peers", Config::new(1, Duration::from_secs(1))?, ManualClock::new(), 0);
/// assert!(admit(&peers, 7));
/// assert!(!admit(&peers, 7));
/// # Ok::<(), ritmo::ConfigError>(())
/// ```
pub trait Keyed<K: Hash + Eq + Clone + 'static>: KeyedStore<K> + Sized {
    /// The limiter's id.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::keyed::KeyedLimiter;
    /// # use ritmo::keyed::Keyed;
    /// let l: KeyedLimiter<u8, _, 2> = KeyedLimiter::with_clock("x", Config::new(1, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// assert_eq!(l.id(), "x");
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    fn id(&self) -> &'static str {
        self.key_rules().key_rate().id()
    }

    /// The config every key gets: the one it was built with, or the last one given to
    /// `reconfigure`. For a tiered limiter, tier 0's.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::keyed::KeyedLimiter;
    /// # use ritmo::keyed::Keyed;
    /// let c = Config::new(1, Duration::from_secs(1))?;
    /// let l: KeyedLimiter<u8, _, 2> = KeyedLimiter::with_clock("x", c, ManualClock::new(), 0);
    /// assert_eq!(l.config(), c);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    fn config(&self) -> Config {
        self.key_rules().key_rate().config()
    }

    /// The clock it reads.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{Clock, Config, ManualClock};
    /// # use ritmo::keyed::KeyedLimiter;
    /// # use ritmo::keyed::Keyed;
    /// let l: KeyedLimiter<u8, _, 2> = KeyedLimiter::with_clock("x", Config::new(1, Duration::from_secs(1))?, ManualClock::starting_at(5), 0);
    /// assert_eq!(l.clock().now(), 5);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    fn clock(&self) -> &Self::Clock {
        self.key_rules().key_rate().clock()
    }

    /// Calls admitted at once since it was built, every key together (feature `counters`).
    /// A statistic kept with a plain load and store: exact on one core, it may undercount when
    /// two cores admit at the same instant.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::keyed::KeyedLimiter;
    /// # use ritmo::keyed::Keyed;
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
    fn admitted_count(&self) -> u64 {
        self.key_rules().key_rate().admitted_count()
    }

    /// Calls that reserved a later slot for their key, to wait for it (feature `counters`).
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::keyed::KeyedLimiter;
    /// # use ritmo::keyed::Keyed;
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
    fn waited_count(&self) -> u64 {
        self.key_rules().key_rate().waited_count()
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
    /// # use ritmo::keyed::Keyed;
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
    fn rejected_count(&self, reason: crate::Reason) -> u64 {
        self.key_rules().key_rate().rejected_count(reason)
    }

    /// The position of the tier `key` is on now in the tiers given (0 for a limiter of one
    /// config), as the tiers are listed; `None` if its tier function
    /// answers a plan no tier has.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::keyed::{Tier, Tiers};
    /// # use ritmo::keyed::{Keyed, KeyedLimiter};
    /// let tiers = Tiers::new(
    ///     [Tier::new("free", Config::new(1, Duration::from_secs(1))?), Tier::new("paid", Config::new(9, Duration::from_secs(1))?)],
    ///     |key: &u8| ["free", "paid", "gold"][usize::from(*key)],
    /// );
    /// let l: KeyedLimiter<u8, _, 16, _> = KeyedLimiter::tiered_with_clock("api", tiers, ManualClock::new(), 0);
    /// assert_eq!((l.tier_index(&1), l.tier_index(&2)), (Some(1), None));
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    fn tier_index(&self, key: &K) -> Option<usize> {
        self.key_rules()
            .tiers()
            .pick(key)
            .map(|tier| usize::from(<Self::Tiers as TierSet<K>>::position(tier)))
    }

    /// The config of the tier `key` is on now (for one config, [`config`](Self::config));
    /// `None` if its tier function answers a plan no tier has.
    fn config_of(&self, key: &K) -> Option<Config> {
        let position = <Self::Tiers as TierSet<K>>::position(self.key_rules().tiers().pick(key)?);
        Some(match self.key_rules().tiers().tier(usize::from(position)) {
            Some((_, config)) => config,
            None => self.key_rules().key_rate().config(),
        })
    }

    /// Takes one permit for `key` if it is there now; never waits. A key never seen gets a full
    /// burst; a key the store has no room for is refused with
    /// [`Reason::KeyCapacity`](crate::Reason::KeyCapacity).
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::keyed::{Keyed, KeyedLimiter};
    /// let l: KeyedLimiter<&str, _, 8> = KeyedLimiter::with_clock("x", Config::new(1, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// assert!(l.try_acquire(&"a").is_ok());
    /// assert!(l.try_acquire(&"a").is_err());
    /// assert!(l.try_acquire(&"b").is_ok()); // its own quota
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    #[inline]
    fn try_acquire(&self, key: &K) -> Result<(), RateLimitExceeded> {
        let tier = self.key_rules().pick(key)?;
        self.take_one(key, tier)
    }

    /// Takes `k` permits for `key` as one unit if they are all there now. `k = 0` and
    /// `k > permits` are [`AcquireError::InvalidPermits`].
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{AcquireError, Config, ManualClock};
    /// # use ritmo::keyed::{Keyed, KeyedLimiter};
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// assert!(l.try_acquire_n(&1, 3).is_ok());
    /// assert!(matches!(l.try_acquire_n(&1, 2), Err(AcquireError::RateLimited(_))));
    /// assert!(matches!(l.try_acquire_n(&1, 5), Err(AcquireError::InvalidPermits(_))));
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    fn try_acquire_n(&self, key: &K, k: u32) -> Result<(), AcquireError> {
        let tier = self.key_rules().pick(key)?;
        let rules = self.key_rules().rules(tier);
        rules.check_permits(self.key_rules().key_rate().id(), k)?;
        if !rules.enabled() {
            return Ok(());
        }
        self.take(key, tier, k, 0)?;
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
    /// # use ritmo::keyed::{Keyed, KeyedLimiter};
    /// let c = Config::new(2, Duration::from_secs(1))?.with_max_wait(Duration::from_millis(500));
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", c, ManualClock::new(), 0);
    /// l.try_acquire_n(&1, 2).unwrap();
    /// let r = l.reserve(&1).unwrap();
    /// assert_eq!(r.wait_time(), Duration::from_millis(500));
    /// assert!(l.reserve(&1).is_err()); // would wait a second
    /// assert!(r.cancel()); // the permit goes back
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    fn reserve(&self, key: &K) -> Result<KeyReservation<'_, K, Self>, RateLimitExceeded> {
        let tier = self.key_rules().pick(key)?;
        reserve_valid(self, key, tier, 1, self.key_rules().rules(tier).max_wait())
    }

    /// Like [`reserve`](Self::reserve), for `k` permits taken as one unit.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::keyed::{Keyed, KeyedLimiter};
    /// let c = Config::new(4, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", c, ManualClock::new(), 0);
    /// l.try_acquire_n(&1, 4).unwrap();
    /// assert_eq!(l.reserve_n(&1, 2).unwrap().wait_time(), Duration::from_millis(500));
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    fn reserve_n(&self, key: &K, k: u32) -> Result<KeyReservation<'_, K, Self>, AcquireError> {
        reserve_checked(self, key, k, None)
    }

    /// Like [`reserve_n`](Self::reserve_n), with this call's own `max_wait`.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::keyed::{Keyed, KeyedLimiter};
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", Config::new(1, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// l.try_acquire(&1).unwrap();
    /// assert!(l.reserve_n_within(&1, 1, Duration::from_millis(999)).is_err());
    /// assert!(l.reserve_n_within(&1, 1, Duration::from_secs(1)).is_ok());
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    fn reserve_n_within(
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
    /// # use ritmo::keyed::{Keyed, KeyedLimiter};
    /// let clock = ManualClock::new();
    /// let c = Config::new(1, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", c, &clock, 0);
    /// l.acquire_with(&1, &mut AdvanceClock).unwrap();
    /// l.acquire_with(&1, &mut AdvanceClock).unwrap();
    /// assert_eq!(clock.now(), 1_000_000_000);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    fn acquire_with<W: Wait<Self::Clock> + ?Sized>(
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
    /// # use ritmo::keyed::{Keyed, KeyedLimiter};
    /// let clock = ManualClock::new();
    /// let c = Config::new(4, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", c, &clock, 0);
    /// l.acquire_n_with(&1, 4, &mut AdvanceClock).unwrap();
    /// l.acquire_n_with(&1, 2, &mut AdvanceClock).unwrap();
    /// assert_eq!(clock.now(), 500_000_000);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    fn acquire_n_with<W: Wait<Self::Clock> + ?Sized>(
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
    /// # use ritmo::keyed::{Keyed, KeyedLimiter};
    /// let clock = ManualClock::new();
    /// let c = Config::new(2, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", c, &clock, 0);
    /// for _ in 0..3 { l.acquire_advancing(&1).unwrap(); }
    /// assert_eq!(clock.now(), 500_000_000);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    fn acquire_advancing(&self, key: &K) -> Result<(), RateLimitExceeded>
    where
        Self::Clock: ManualTime,
    {
        self.acquire_with(key, &mut AdvanceClock)
    }

    /// Takes `k` permits for `key`, advancing the fake clock to their slot if they must wait.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{Clock, Config, ManualClock};
    /// # use ritmo::keyed::{Keyed, KeyedLimiter};
    /// let clock = ManualClock::new();
    /// let c = Config::new(4, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", c, &clock, 0);
    /// l.acquire_n_advancing(&1, 4).unwrap();
    /// l.acquire_n_advancing(&1, 4).unwrap();
    /// assert_eq!(clock.now(), 1_000_000_000);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    fn acquire_n_advancing(&self, key: &K, k: u32) -> Result<(), AcquireError>
    where
        Self::Clock: ManualTime,
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
    /// # use ritmo::keyed::{Keyed, KeyedLimiter};
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// l.try_acquire_n(&1, 3).unwrap();
    /// assert_eq!((l.available_permits(&1), l.available_permits(&2)), (1, 4));
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    fn available_permits(&self, key: &K) -> u32 {
        let Some(tier) = self.key_rules().tiers().pick(key) else {
            return 0;
        };
        let rules = self.key_rules().rules(tier);
        if !rules.enabled() {
            return rules.permits();
        }
        let peek = self.peek(key, tier);
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
    /// # use ritmo::keyed::{Keyed, KeyedLimiter};
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// l.try_acquire_n(&1, 4).unwrap();
    /// assert_eq!(l.retry_after(&1), Duration::from_millis(250));
    /// assert_eq!(l.retry_after(&2), Duration::ZERO);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    fn retry_after(&self, key: &K) -> Duration {
        self.retry_after_n(key, 1).unwrap_or(Duration::ZERO)
    }

    /// How long until `k` permits for `key` would pass at once; for a key whose tier function
    /// answers no tier, as long as a wait can be (never). Takes nothing.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::keyed::{Keyed, KeyedLimiter};
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// l.try_acquire_n(&1, 4).unwrap();
    /// assert_eq!(l.retry_after_n(&1, 2).unwrap(), Duration::from_millis(500));
    /// assert!(l.retry_after_n(&1, 5).is_err());
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    fn retry_after_n(&self, key: &K, k: u32) -> Result<Duration, InvalidPermits> {
        let rate = self.key_rules().key_rate();
        let Some(tier) = self.key_rules().tiers().pick(key) else {
            return Ok(rate.duration(u64::MAX));
        };
        let rules = self.key_rules().rules(tier);
        rules.check_permits(rate.id(), k)?;
        if !rules.enabled() {
            return Ok(Duration::ZERO);
        }
        let peek = self.peek(key, tier);
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
    /// # use ritmo::keyed::{Keyed, KeyedLimiter};
    /// let clock = ManualClock::new();
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, &clock, 0);
    /// l.try_acquire(&1).unwrap();
    /// l.try_acquire(&2).unwrap();
    /// assert_eq!(l.len(), 2);
    /// clock.advance(Duration::from_millis(250));
    /// assert_eq!(l.len(), 0);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    fn len(&self) -> usize {
        self.live_count()
    }

    /// How many keys it holds, live or idle but not yet reclaimed: at most
    /// [`capacity`](Self::capacity).
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::keyed::{Keyed, KeyedLimiter};
    /// let clock = ManualClock::new();
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, &clock, 0);
    /// l.try_acquire(&1).unwrap();
    /// clock.advance(Duration::from_secs(1));
    /// assert_eq!((l.len(), l.keys_held()), (0, 1)); // idle, reclaimed when a probe passes it
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    fn keys_held(&self) -> usize {
        self.held_count()
    }

    /// The most keys it holds at once: `max_keys` of a map; `N` of a fixed table of `N` slots, or
    /// three quarters of them from 1024 slots (see the [keyed module](super#bounded-memory)).
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::keyed::{Keyed, KeyedLimiter};
    /// let l: KeyedLimiter<u8, _, 64> = KeyedLimiter::with_clock("x", Config::new(1, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// assert_eq!(l.capacity(), 64);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    fn capacity(&self) -> usize {
        self.key_capacity()
    }

    /// Drops every idle key now, and returns how many keys are left (all of them live). Never
    /// needed, since idle keys are reclaimed when a call meets them; for tests and for measuring.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::keyed::{Keyed, KeyedLimiter};
    /// let clock = ManualClock::new();
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, &clock, 0);
    /// l.try_acquire(&1).unwrap();
    /// clock.advance(Duration::from_secs(1));
    /// assert_eq!(l.reclaim_idle(), 0);
    /// assert_eq!(l.keys_held(), 0);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    fn reclaim_idle(&self) -> usize {
        self.drop_idle()
    }

    /// Whether no key is being limited right now.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::keyed::{Keyed, KeyedLimiter};
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// assert!(l.is_empty());
    /// l.try_acquire(&1).unwrap();
    /// assert!(!l.is_empty());
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Its id, live keys, keys held, capacity and permits per key ([`KeyedSnapshot`]; tier 0's
    /// for a tiered limiter). Takes nothing; scans the store.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::keyed::{Keyed, KeyedLimiter};
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// l.try_acquire(&1).unwrap();
    /// let s = l.snapshot();
    /// assert_eq!((s.live_keys, s.keys_held, s.capacity, s.permits), (1, 1, 8, 4));
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    fn snapshot(&self) -> KeyedSnapshot {
        let rate = self.key_rules().key_rate();
        KeyedSnapshot::new(
            rate.id(),
            self.len(),
            self.keys_held(),
            self.capacity(),
            rate.config().permits(),
        )
    }
}

impl<K: Hash + Eq + Clone + 'static, S: KeyedStore<K>> Keyed<K> for S {}

/// `reserve_n` and `reserve_n_within` (`max_wait` `None`: the config's, the tier's): `k`
/// permits for `key` as one unit.
fn reserve_checked<'a, K: Hash + Eq + Clone + 'static, S: KeyedStore<K>>(
    store: &'a S,
    key: &K,
    k: u32,
    max_wait: Option<Duration>,
) -> Result<KeyReservation<'a, K, S>, AcquireError> {
    let tier = store.key_rules().pick(key)?;
    let rules: TierRules = store.key_rules().rules(tier);
    rules.check_permits(store.key_rules().key_rate().id(), k)?;
    let max_wait = match max_wait {
        Some(max_wait) => store.key_rules().key_rate().units(max_wait),
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
    if !store.key_rules().rules(tier).enabled() {
        let now = store.key_rules().key_rate().now();
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
    let generation = store.key_rules().key_rate().generation();
    let taken = store.take(key, tier, k, max_wait)?;
    // The numbers the call was decided with (a reconfigure may have come since the check).
    Ok(KeyReservation::of(
        store,
        key.clone(),
        taken,
        store.key_rules().rules(tier).increment(k),
        k,
        <S::Tiers as TierSet<K>>::position(tier),
        generation,
    ))
}
