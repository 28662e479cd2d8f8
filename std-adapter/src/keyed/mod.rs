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
mod wait;

use entry::Entry as KeyEntry;

pub use ip::IpKey;
use store::Store;

use std::fmt;
use std::hash::Hash;

use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use ritmo_core::keyed::{
    ClockedStore, KeyReservation, KeyRules, KeySnapshot, Keyed, KeyedStore, KeysChange, NewStore,
    OneTier, Peek, Taken, TierSet, Tiers,
};
use ritmo_core::{Clock, Config, RateLimitExceeded};

use crate::clock::StdClock;

#[cfg(feature = "tokio")]
pub use wait::KeyedAsyncExt;
pub use wait::KeyedBlockingExt;

/// A keyed limiter for servers: [`Config`] applied to each key separately, in a [`ShardedMap`] of
/// at most `max_keys` keys. It is ritmo-core's one keyed limiter, [`Keyed`], over this crate's
/// map: the verbs, listeners, tiers and `reconfigure` are `Keyed`'s; on top of them,
/// [`KeyedBlockingExt`] parks the thread until a key's slot (`acquire`, `call`) and, with the
/// feature `tokio`, [`KeyedAsyncExt`] waits without a thread (`acquire_async`, `call_async`).
/// See the [module docs](self).
///
/// `new(id, config, max_keys)` builds it on a [`StdClock`], `with_clock(id, config, max_keys,
/// clock)` on any clock; with `P` = [`Tiers`], `tiered(id, tiers, max_keys)` and
/// `tiered_with_clock(id, tiers, max_keys, clock)` give each key the config of its own tier,
/// picked by a function of the key: the tier is kept beside each key's state, and a key that
/// changes tier is carried over with the single limiter's `reconfigure` rule.
///
/// ```
/// use std::time::Duration;
/// use ritmo::Config;
/// use ritmo::keyed::{Tier, Tiers};
/// use ritmo::server::{IpKey, KeyedRateLimiter};
/// let per_ip = KeyedRateLimiter::new("login", Config::new(5, Duration::from_secs(60))?, 100_000);
/// let client = IpKey::from("198.51.100.4".parse::<std::net::IpAddr>().unwrap());
/// assert!(per_ip.try_acquire(&client).is_ok());
/// assert_eq!(per_ip.available_permits(&client), 4);
///
/// /// API keys starting `pk_live_` are on the paid plan.
/// fn plan(api_key: &String) -> &'static str {
///     if api_key.starts_with("pk_live_") { "paid" } else { "free" }
/// }
/// let free = Tier::new("free", Config::new(10, Duration::from_secs(60))?);
/// let paid = Tier::new("paid", Config::new(1000, Duration::from_secs(60))?);
/// let api = KeyedRateLimiter::tiered("api", Tiers::new([free, paid], plan), 100_000);
/// assert_eq!(api.available_permits(&"anon".to_string()), 10);
/// assert_eq!(api.available_permits(&"pk_live_42".to_string()), 1000);
/// # Ok::<(), ritmo::ConfigError>(())
/// ```
pub type KeyedRateLimiter<K, C = StdClock, P = OneTier> = Keyed<K, ShardedMap<K, C, P>>;

/// The store of a [`KeyedRateLimiter`]: a growable map of at most `max_keys` keys, sharded, each
/// key's state beside it, idle keys dropped to make room (see the [module docs](self)).
pub struct ShardedMap<K: 'static, C = StdClock, P: TierSet<K> = OneTier> {
    map: Store<K, P::Index>,
    max_keys: usize,
    /// Keys in the map, counted before they go in, so that `max_keys` holds under any race.
    held: AtomicUsize,
    /// The latest instant a key was dropped at.
    evicted_at: AtomicU64,
    /// One `reconfigure` at a time.
    changes: Mutex<()>,
    clock: PhantomData<fn() -> C>,
}

impl<K, C, P: TierSet<K>> fmt::Debug for ShardedMap<K, C, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShardedMap")
            .field("max_keys", &self.max_keys)
            .field("keys_held", &self.held.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl<K: Hash + Eq + Clone, C, P: TierSet<K>> ShardedMap<K, C, P> {
    /// An empty map of at most `max_keys` keys (`0` refuses every key,
    /// [`Reason::KeyCapacity`](crate::ritmo::Reason::KeyCapacity)).
    pub fn new(max_keys: usize) -> Self {
        ShardedMap {
            map: Store::new(max_keys),
            max_keys,
            held: AtomicUsize::new(0),
            evicted_at: AtomicU64::new(0),
            changes: Mutex::new(()),
            clock: PhantomData,
        }
    }
}

/// `KeyedRateLimiter::new(id, config, max_keys)`, on a new [`StdClock`].
impl<K: Hash + Eq + Clone> NewStore<Config> for ShardedMap<K, StdClock, OneTier> {
    type DefaultClock = StdClock;
    fn default_clock() -> StdClock {
        StdClock::new()
    }
}

/// `KeyedRateLimiter::with_clock(id, config, max_keys, clock)`.
impl<K: Hash + Eq + Clone, C: Clock> ClockedStore<Config> for ShardedMap<K, C, OneTier> {
    type Args = usize;
    fn new_store(max_keys: usize) -> Self {
        ShardedMap::new(max_keys)
    }
}

/// `KeyedRateLimiter::tiered(id, tiers, max_keys)`, on a new [`StdClock`].
impl<K: Hash + Eq + Clone, const T: usize, P: PartialEq, F: Fn(&K) -> P> NewStore<Tiers<K, T, P, F>>
    for ShardedMap<K, StdClock, Tiers<K, T, P, F>>
{
    type DefaultClock = StdClock;
    fn default_clock() -> StdClock {
        StdClock::new()
    }
}

/// `KeyedRateLimiter::tiered_with_clock(id, tiers, max_keys, clock)`.
impl<K: Hash + Eq + Clone, C: Clock, const T: usize, P: PartialEq, F: Fn(&K) -> P>
    ClockedStore<Tiers<K, T, P, F>> for ShardedMap<K, C, Tiers<K, T, P, F>>
{
    type Args = usize;
    fn new_store(max_keys: usize) -> Self {
        ShardedMap::new(max_keys)
    }
}

/// Permits for one key of a [`KeyedRateLimiter`], taken now or reserved for a slot (see
/// [`KeyReservation`]).
pub type KeyedReservation<'a, K, C, P = OneTier> = KeyReservation<'a, K, KeyedRateLimiter<K, C, P>>;

/// The sharded map as a keyed store: a call on a held key under one shard's read lock.
impl<K: Hash + Eq + Clone, C: Clock, P: TierSet<K>> KeyedStore<K> for ShardedMap<K, C, P> {
    type Clock = C;
    type Tiers = P;
    type LiveKeys = Vec<KeySnapshot<K>>;

    #[inline]
    fn take(
        &self,
        rules: &KeyRules<K, C, P>,
        key: &K,
        tier: P::Index,
        k: u32,
        max_wait: u64,
    ) -> Result<Taken, RateLimitExceeded> {
        self.take_key(rules, key, tier, k, max_wait)
    }

    #[inline]
    fn take_one(
        &self,
        rules: &KeyRules<K, C, P>,
        key: &K,
        tier: P::Index,
    ) -> Result<(), RateLimitExceeded> {
        self.take_one_key(rules, key, tier)
    }

    fn refund_key(
        &self,
        rules: &KeyRules<K, C, P>,
        key: &K,
        written: u64,
        increment: u64,
        tier: u8,
    ) -> bool {
        self.refund(rules, key, written, increment, tier)
    }

    fn peek(&self, rules: &KeyRules<K, C, P>, key: &K, tier: P::Index) -> Peek {
        self.peek_key(rules, key, tier)
    }

    fn live_count(&self, rules: &KeyRules<K, C, P>) -> usize {
        self.live_count(rules)
    }

    fn live_keys(&self, rules: &KeyRules<K, C, P>) -> Vec<KeySnapshot<K>> {
        self.live_keys(rules)
    }

    fn held_count(&self) -> usize {
        self.held.load(Ordering::Acquire)
    }

    fn key_capacity(&self) -> usize {
        self.max_keys
    }

    fn drop_idle(&self, rules: &KeyRules<K, C, P>) -> usize {
        self.make_room(rules, true, None);
        self.held.load(Ordering::Acquire)
    }

    /// One change at a time; the shards' notes are made afresh once the states moved.
    fn change(&self, rules: &KeyRules<K, C, P>, change: &mut KeysChange<'_>) {
        let _one_at_a_time = self.changes.lock().unwrap_or_else(PoisonError::into_inner);
        let now = rules.key_rate().now();
        self.map.changing(|| {
            change(now, &mut |tier, convert| {
                self.map.for_each(|_, entry| {
                    if tier.is_none_or(|tier| P::position(entry.tier) == tier) {
                        entry.convert(convert);
                    }
                });
            });
        });
    }
}
