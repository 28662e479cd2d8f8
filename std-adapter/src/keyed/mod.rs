//! [`KeyedRateLimiter`]: one quota per client on a server, in a growable, sharded map whose
//! size a flood of new keys cannot push past `max_keys`.
//!
//! It applies ritmo-core's keyed rules, through the one keyed front, with the same exact
//! eviction as the fixed [`KeyedLimiter`](crate::ritmo::KeyedLimiter): a key whose burst is full
//! again (`tat <= now`) decides every call like a key never seen, so dropping it changes nothing,
//! and a key still being limited is never dropped. There is no background thread and nothing to
//! call: when the map holds `max_keys` keys and a new one arrives, the map drops an idle key on
//! the spot to make room; if every key is still being limited, the new key is refused with
//! [`Reason::KeyCapacity`] and `retry_after` says when the soonest can be idle.
//!
//! Making room does not scan the map: the map is sharded (one shard per 820 keys of `max_keys`,
//! at most 4,096), each shard notes its soonest keys and a lower bound of the rest, and a new key
//! that finds the map full drops one idle key found from those notes or by the next buckets of
//! one shard's pass, or is refused once the soonest key's state is checked. A shard is passed over
//! again only when its soonest key was used since it last looked (a refusal must then look again
//! before it can say that no key is idle).
//! `retry_after` of a refusal is exact: never early, so a client that waits it out finds room
//! unless other calls took it. An [`IpKey`] takes 8 bytes in the map (IPv4, or an IPv6 prefix of
//! at most 64 bits), beside each key's 8-byte state.
//!
//! Keys are hashed with AHash under random keys drawn once per process (`ahash::RandomState`):
//! clients who choose their keys cannot choose them to collide.
//!
//! ```
//! use std::time::Duration;
//! use ritmo::{Config, ManualClock, Reason};
//! use ritmo::server::KeyedRateLimiter;
//! use ritmo::keyed::Keyed;
//!
//! let clock = ManualClock::new();
//! let config = Config::new(2, Duration::from_secs(1))?;
//! let per_user = KeyedRateLimiter::with_clock("api", config, 1_000, &clock);
//! assert!(per_user.try_acquire(&"ada").is_ok());
//! assert!(per_user.try_acquire(&"ada").is_ok());
//! assert!(per_user.try_acquire(&"ada").is_err()); // ada's burst is spent...
//! assert!(per_user.try_acquire(&"bob").is_ok()); // ...bob's is not
//! # Ok::<(), ritmo::ConfigError>(())
//! ```
//!
//! [`Reason::KeyCapacity`]: crate::ritmo::Reason::KeyCapacity

mod acquire;
mod entry;
mod ip;
mod peek;
mod reclaim;
mod store;
mod tiered;
mod wait;

use entry::Entry as KeyEntry;

pub use ip::IpKey;
use store::Store;

use std::fmt;
use std::hash::Hash;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use ritmo_core::keyed::{KeyReservation, KeyRules, KeyedStore, OneTier, Peek, Taken, TierSet};
use ritmo_core::{Clock, Config, KeyListener, Listener, RateLimitExceeded};

use crate::clock::StdClock;

/// A keyed limiter for servers: [`Config`] applied to each key separately, in a sharded map of
/// at most `max_keys` keys. See the [module docs](self).
///
/// With `P` = [`Tiers`](crate::ritmo::keyed::Tiers), each key gets the config of its own tier, picked by a function of the
/// key (see [`tiered`](Self::tiered)): the tier is kept beside each key's state, and a key that
/// changes tier is carried over with the single limiter's `reconfigure` rule.
///
/// The method names are those of [`KeyedLimiter`](crate::ritmo::KeyedLimiter); on top of them,
/// [`acquire`](Self::acquire) / [`acquire_n`](Self::acquire_n) park the thread until the key's
/// slot, and (feature `tokio`) `acquire_async` / `acquire_n_async` wait without a thread.
pub struct KeyedRateLimiter<K: 'static, C = StdClock, P: TierSet<K> = OneTier> {
    rules: KeyRules<K, C, P>,
    map: Store<K, P::Index>,
    max_keys: usize,
    /// Keys in the map, counted before they go in, so that `max_keys` holds under any race.
    held: AtomicUsize,
    /// The latest instant a key was dropped at.
    evicted_at: AtomicU64,
    /// One `reconfigure` at a time.
    changes: Mutex<()>,
}

impl<K, C, P: TierSet<K>> fmt::Debug for KeyedRateLimiter<K, C, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedRateLimiter")
            .field("id", &self.rules.key_rate().id())
            .field("config", &self.rules.key_rate().config())
            .field("max_keys", &self.max_keys)
            .field("keys_held", &self.held.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl<K: Hash + Eq + Clone> KeyedRateLimiter<K, StdClock> {
    /// A keyed limiter named `id` applying `config` to each key, holding at most `max_keys` keys,
    /// on a new [`StdClock`]. `max_keys = 0` refuses every key ([`Reason::KeyCapacity`]).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ritmo::Config;
    /// use ritmo::server::{IpKey, KeyedRateLimiter};
    /// use ritmo::keyed::Keyed;
    /// let per_ip = KeyedRateLimiter::new("login", Config::new(5, Duration::from_secs(60))?, 100_000);
    /// let client = IpKey::from("198.51.100.4".parse::<std::net::IpAddr>().unwrap());
    /// assert!(per_ip.try_acquire(&client).is_ok());
    /// assert_eq!(per_ip.available_permits(&client), 4);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    ///
    /// [`Reason::KeyCapacity`]: crate::ritmo::Reason::KeyCapacity
    pub fn new(id: &'static str, config: Config, max_keys: usize) -> Self {
        Self::with_clock(id, config, max_keys, StdClock::new())
    }
}

impl<K: Hash + Eq + Clone, C: Clock> KeyedRateLimiter<K, C> {
    /// A keyed limiter on any clock (a [`ManualClock`](crate::ritmo::ManualClock) in tests).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ritmo::{Config, ManualClock};
    /// use ritmo::server::KeyedRateLimiter;
    /// use ritmo::keyed::Keyed;
    /// let l = KeyedRateLimiter::with_clock("api", Config::new(1, Duration::from_secs(1))?, 10, ManualClock::new());
    /// assert_eq!(l.capacity(), 10);
    /// l.try_acquire(&1u64).unwrap();
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn with_clock(id: &'static str, config: Config, max_keys: usize, clock: C) -> Self {
        KeyedRateLimiter::build(KeyRules::with_clock(id, config, clock), max_keys)
    }
}

impl<K: Hash + Eq + Clone, C: Clock, P: TierSet<K>> KeyedRateLimiter<K, C, P> {
    fn build(rules: KeyRules<K, C, P>, max_keys: usize) -> Self {
        KeyedRateLimiter {
            rules,
            map: Store::new(max_keys),
            max_keys,
            held: AtomicUsize::new(0),
            evicted_at: AtomicU64::new(0),
            changes: Mutex::new(()),
        }
    }
}

impl<K, C, P: TierSet<K>> KeyedRateLimiter<K, C, P> {
    /// The same limiter, reporting rejections and released reservations to `listener`, which
    /// hears the limiter's id but never the key (keys are often personal data).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ritmo::{Config, Event, Listener, ManualClock};
    /// use ritmo::server::KeyedRateLimiter;
    /// use ritmo::keyed::Keyed;
    /// struct Count(std::sync::atomic::AtomicU32);
    /// impl Listener for Count {
    ///     fn on_event(&self, _: &Event) { self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed); }
    /// }
    /// static REJECTED: Count = Count(std::sync::atomic::AtomicU32::new(0));
    /// let l = KeyedRateLimiter::with_clock("api", Config::new(1, Duration::from_secs(1))?, 10, ManualClock::new())
    ///     .with_listener(&REJECTED);
    /// l.try_acquire(&1u8).unwrap();
    /// assert!(l.try_acquire(&1u8).is_err());
    /// assert_eq!(REJECTED.0.load(std::sync::atomic::Ordering::Relaxed), 1);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    #[must_use]
    pub fn with_listener(mut self, listener: &'static dyn Listener) -> Self {
        self.rules = self.rules.with_listener(listener);
        self
    }

    /// The same limiter, also reporting each event with its key to `listener` (opt-in).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ritmo::{Config, Event, KeyListener, ManualClock};
    /// use ritmo::server::KeyedRateLimiter;
    /// use ritmo::keyed::Keyed;
    /// struct Audit;
    /// impl KeyListener<u8> for Audit {
    ///     fn on_event(&self, key: &u8, _: &Event) { assert_eq!(*key, 1); }
    /// }
    /// let l = KeyedRateLimiter::with_clock("api", Config::new(1, Duration::from_secs(1))?, 10, ManualClock::new())
    ///     .with_key_listener(&Audit);
    /// l.try_acquire(&1u8).unwrap();
    /// assert!(l.try_acquire(&1u8).is_err());
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    #[must_use]
    pub fn with_key_listener(mut self, listener: &'static dyn KeyListener<K>) -> Self {
        self.rules = self.rules.with_key_listener(listener);
        self
    }

    /// Each tier's name and config, by index: for a limiter of one config, its id and its config
    /// (the one in force).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::server::KeyedRateLimiter;
    /// let c = Config::new(1, Duration::from_secs(1))?;
    /// let l = KeyedRateLimiter::<u8, _>::with_clock("api", c, 10, ManualClock::new());
    /// assert_eq!(l.tier_configs(), vec![("api", c)]);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn tier_configs(&self) -> Vec<(&'static str, Config)> {
        (0..self.rules.tiers().count())
            .map(|i| match self.rules.tiers().tier(i) {
                Some(tier) => tier,
                None => (self.rules.key_rate().id(), self.rules.key_rate().config()),
            })
            .collect()
    }
}

impl<K: Hash + Eq + Clone, C: Clock> KeyedRateLimiter<K, C> {
    /// Applies `config` to every key from now on, each with the single limiter's rule
    /// ([`RateLimiter::reconfigure`](crate::ritmo::RateLimiter::reconfigure)): a key's available
    /// permits become `min(available, new permits)`, permits owed stay owed, and a key never seen
    /// (or idle, or any key when a disabled config is enabled) gets the new config's full burst.
    /// Reconfiguring to the config in force changes
    /// nothing.
    ///
    /// The change converts every key the map holds, one compare-and-swap each; calls that come
    /// meanwhile wait for it (a short spin, for as long as the conversion takes: about a
    /// millisecond per 100 000 keys), so none decides with the new numbers on a key not yet
    /// converted. Changes run one at a time.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ritmo::{Config, ManualClock};
    /// use ritmo::server::KeyedRateLimiter;
    /// use ritmo::keyed::Keyed;
    /// let l = KeyedRateLimiter::with_clock("x", Config::new(10, Duration::from_secs(1))?, 100, ManualClock::new());
    /// l.try_acquire_n(&1u8, 4).unwrap(); // key 1: 6 left
    /// l.reconfigure(Config::new(5, Duration::from_secs(1))?);
    /// assert_eq!((l.available_permits(&1), l.available_permits(&2)), (5, 5));
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn reconfigure(&self, config: Config) {
        let _one_at_a_time = self.changes.lock().unwrap_or_else(PoisonError::into_inner);
        let now = self.rules.key_rate().now();
        self.map.changing(|| {
            self.rules.reconfigure(config, now, |convert| {
                self.map.for_each(|_, entry| convert(entry));
            });
        });
    }
}

/// Permits for one key of a [`KeyedRateLimiter`], taken now or reserved for a slot: commit it
/// when the work runs, or let it go. Dropping or [`cancel`](crate::ritmo::keyed::KeyReservation::cancel)ling it
/// before it is committed returns the permits if no later call for the key was made since.
///
/// ```
/// # use std::time::Duration;
/// # use ritmo::{Config, ManualClock};
/// # use ritmo::server::KeyedRateLimiter;
/// # use ritmo::keyed::Keyed;
/// let c = Config::new(1, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(5));
/// let l = KeyedRateLimiter::with_clock("x", c, 10, ManualClock::new());
/// let a = l.reserve(&1u8).unwrap();
/// let b = l.reserve(&1u8).unwrap();
/// assert!(!a.cancel()); // b is queued behind it
/// assert!(b.cancel());
/// # Ok::<(), ritmo::ConfigError>(())
/// ```
pub type KeyedReservation<'a, K, C, P = OneTier> = KeyReservation<'a, K, KeyedRateLimiter<K, C, P>>;

/// The sharded map as a keyed store: a known key under its shard's read lock, a new one put in
/// within `max_keys` under its write lock.
impl<K: Hash + Eq + Clone, C: Clock, P: TierSet<K>> KeyedStore<K> for KeyedRateLimiter<K, C, P> {
    type Clock = C;
    type Tiers = P;

    fn key_rules(&self) -> &KeyRules<K, C, P> {
        &self.rules
    }

    #[inline]
    fn take(
        &self,
        key: &K,
        tier: P::Index,
        k: u32,
        max_wait: u64,
    ) -> Result<Taken, RateLimitExceeded> {
        self.take_key(key, tier, k, max_wait)
    }

    #[inline]
    fn take_one(&self, key: &K, tier: P::Index) -> Result<(), RateLimitExceeded> {
        self.take_one_key(key, tier)
    }

    fn refund_key(&self, key: &K, written: u64, increment: u64, tier: u8) -> bool {
        self.refund(key, written, increment, tier)
    }

    fn peek(&self, key: &K, tier: P::Index) -> Peek {
        self.peek_key(key, tier)
    }

    /// One pass over the map.
    fn live_count(&self) -> usize {
        self.live_count()
    }

    fn held_count(&self) -> usize {
        self.held.load(Ordering::Acquire)
    }

    fn key_capacity(&self) -> usize {
        self.max_keys
    }

    fn drop_idle(&self) -> usize {
        self.make_room(true, None);
        self.held.load(Ordering::Acquire)
    }
}
