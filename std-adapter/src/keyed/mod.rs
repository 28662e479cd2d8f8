//! [`KeyedRateLimiter`]: one quota per client on a server, in a growable, sharded map whose
//! size a flood of new keys cannot push past `max_keys`.
//!
//! It applies ritmo-core's keyed rules ([`KeyRate`]) with the same exact eviction as the fixed
//! [`KeyedLimiter`](ritmo_core::KeyedLimiter): a key whose burst is full again (`tat <= now`)
//! decides every call like a key never seen, so dropping it changes nothing, and a key still
//! being limited is never dropped. There is no background thread and nothing to call: when the
//! map holds `max_keys` keys and a new one arrives, the map drops its idle keys on the spot and
//! makes room; if every key is still being limited, the new key is refused with
//! [`Reason::KeyCapacity`] and `retry_after` says when the soonest can be idle.
//!
//! A refused new key costs O(1): the map remembers, with their states, the soonest live keys its
//! last scan saw and every key put in or refunded since, and every other key was at or after a
//! known instant. Room is made from the remembered keys one by one as they go idle; a scan of the
//! whole map runs only once none is left and the clock has passed that instant, and it frees every
//! idle key at once. `retry_after` of a refusal is exact while the soonest key is a remembered
//! one (always, for a map of up to 16 keys); otherwise it is the earliest instant the others can
//! be idle, never later than the truth.
//!
//! Keys are hashed with AHash under random keys drawn once per process (`ahash::RandomState`):
//! clients who choose their keys cannot choose them to collide.
//!
//! ```
//! use std::time::Duration;
//! use ritmo_core::{Config, ManualClock, Reason};
//! use ritmo_std::KeyedRateLimiter;
//!
//! let clock = ManualClock::new();
//! let config = Config::new(2, Duration::from_secs(1))?;
//! let per_user = KeyedRateLimiter::with_clock("api", config, 1_000, &clock);
//! assert!(per_user.try_acquire(&"ada").is_ok());
//! assert!(per_user.try_acquire(&"ada").is_ok());
//! assert!(per_user.try_acquire(&"ada").is_err()); // ada's burst is spent...
//! assert!(per_user.try_acquire(&"bob").is_ok()); // ...bob's is not
//! # Ok::<(), ritmo_core::ConfigError>(())
//! ```

mod ip;

pub use ip::IpKey;

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt;
use std::hash::Hash;

use ahash::RandomState;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use dashmap::DashMap;
use dashmap::mapref::entry::Entry;
use ritmo_core::keyed::{Decision, KeyRate, KeyState};
use ritmo_core::{
    AcquireError, Clock, Config, Event, InvalidPermits, KeyListener, KeySnapshot, KeyedSnapshot,
    Listener, RateLimitExceeded, Reason, Wait,
};

use crate::clock::StdClock;
use crate::wait::ParkWait;

/// A keyed limiter for servers: [`Config`] applied to each key separately, in a sharded map of
/// at most `max_keys` keys. See the [module docs](self).
///
/// The method names are those of [`KeyedLimiter`](ritmo_core::KeyedLimiter); on top of them,
/// [`acquire`](Self::acquire) / [`acquire_n`](Self::acquire_n) park the thread until the key's
/// slot, and (feature `tokio`) `acquire_async` / `acquire_n_async` wait without a thread.
pub struct KeyedRateLimiter<K: 'static, C = StdClock> {
    rate: KeyRate<C>,
    map: DashMap<K, KeyState, RandomState>,
    max_keys: usize,
    /// Keys in the map, counted before they go in, so that `max_keys` holds under any race.
    held: AtomicUsize,
    /// The latest instant a key was dropped at.
    evicted_at: AtomicU64,
    /// The soonest keys the last scan saw, to free without scanning again; one scan at a time.
    scan: Mutex<Reclaim<K>>,
    key_listener: Option<&'static dyn KeyListener<K>>,
}

impl<K, C> fmt::Debug for KeyedRateLimiter<K, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedRateLimiter")
            .field("id", &self.rate.id())
            .field("config", self.rate.config())
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
    /// use ritmo_core::Config;
    /// use ritmo_std::{IpKey, KeyedRateLimiter};
    /// let per_ip = KeyedRateLimiter::new("login", Config::new(5, Duration::from_secs(60))?, 100_000);
    /// let client = IpKey::from("198.51.100.4".parse::<std::net::IpAddr>().unwrap());
    /// assert!(per_ip.try_acquire(&client).is_ok());
    /// assert_eq!(per_ip.available_permits(&client), 4);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn new(id: &'static str, config: Config, max_keys: usize) -> Self {
        Self::with_clock(id, config, max_keys, StdClock::new())
    }
}

impl<K: Hash + Eq + Clone, C: Clock> KeyedRateLimiter<K, C> {
    /// A keyed limiter on any clock (a [`ManualClock`](ritmo_core::ManualClock) in tests).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ritmo_core::{Config, ManualClock};
    /// use ritmo_std::KeyedRateLimiter;
    /// let l = KeyedRateLimiter::with_clock("api", Config::new(1, Duration::from_secs(1))?, 10, ManualClock::new());
    /// assert_eq!(l.capacity(), 10);
    /// l.try_acquire(&1u64).unwrap();
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn with_clock(id: &'static str, config: Config, max_keys: usize, clock: C) -> Self {
        KeyedRateLimiter {
            rate: KeyRate::with_clock(id, config, clock),
            map: DashMap::with_hasher(RandomState::new()),
            max_keys,
            held: AtomicUsize::new(0),
            evicted_at: AtomicU64::new(0),
            scan: Mutex::new(Reclaim {
                candidates: BinaryHeap::new(),
                threshold: u64::MAX,
            }),
            key_listener: None,
        }
    }
}

impl<K, C> KeyedRateLimiter<K, C> {
    /// The same limiter, reporting rejections and released reservations to `listener`, which
    /// hears the limiter's id but never the key (keys are often personal data).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ritmo_core::{Config, Event, Listener, ManualClock};
    /// use ritmo_std::KeyedRateLimiter;
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
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    #[must_use]
    pub fn with_listener(mut self, listener: &'static dyn Listener) -> Self {
        self.rate = self.rate.with_listener(listener);
        self
    }

    /// The same limiter, also reporting each event with its key to `listener` (opt-in).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ritmo_core::{Config, Event, KeyListener, ManualClock};
    /// use ritmo_std::KeyedRateLimiter;
    /// struct Audit;
    /// impl KeyListener<u8> for Audit {
    ///     fn on_event(&self, key: &u8, _: &Event) { assert_eq!(*key, 1); }
    /// }
    /// let l = KeyedRateLimiter::with_clock("api", Config::new(1, Duration::from_secs(1))?, 10, ManualClock::new())
    ///     .with_key_listener(&Audit);
    /// l.try_acquire(&1u8).unwrap();
    /// assert!(l.try_acquire(&1u8).is_err());
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    #[must_use]
    pub fn with_key_listener(mut self, listener: &'static dyn KeyListener<K>) -> Self {
        self.key_listener = Some(listener);
        self
    }

    /// The limiter's id.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_std::KeyedRateLimiter;
    /// let l = KeyedRateLimiter::<u8, _>::with_clock("api", Config::new(1, Duration::from_secs(1))?, 10, ManualClock::new());
    /// assert_eq!(l.id(), "api");
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn id(&self) -> &'static str {
        self.rate.id()
    }

    /// The config every key gets.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_std::KeyedRateLimiter;
    /// let c = Config::new(1, Duration::from_secs(1))?;
    /// assert_eq!(*KeyedRateLimiter::<u8, _>::with_clock("api", c, 10, ManualClock::new()).config(), c);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn config(&self) -> &Config {
        self.rate.config()
    }

    /// The clock it reads.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo_core::{Clock, Config, ManualClock};
    /// # use ritmo_std::KeyedRateLimiter;
    /// let l = KeyedRateLimiter::<u8, _>::with_clock("api", Config::new(1, Duration::from_secs(1))?, 10, ManualClock::starting_at(3));
    /// assert_eq!(l.clock().now(), 3);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn clock(&self) -> &C {
        self.rate.clock()
    }

    /// `max_keys`: the most keys it holds at once.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_std::KeyedRateLimiter;
    /// let l = KeyedRateLimiter::<u8, _>::with_clock("api", Config::new(1, Duration::from_secs(1))?, 10, ManualClock::new());
    /// assert_eq!(l.capacity(), 10);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn capacity(&self) -> usize {
        self.max_keys
    }

    /// Keys in memory, live or idle but not yet reclaimed: never more than
    /// [`capacity`](Self::capacity).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_std::KeyedRateLimiter;
    /// let l = KeyedRateLimiter::with_clock("api", Config::new(1, Duration::from_secs(1))?, 10, ManualClock::new());
    /// l.try_acquire(&1u8).unwrap();
    /// assert_eq!(l.keys_held(), 1);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn keys_held(&self) -> usize {
        self.held.load(Ordering::Acquire)
    }

    /// The rules it applies to each key.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_std::KeyedRateLimiter;
    /// let l = KeyedRateLimiter::<u8, _>::with_clock("api", Config::new(4, Duration::from_secs(1))?, 10, ManualClock::new());
    /// assert_eq!(l.rate().increment(1), 250_000_000);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn rate(&self) -> &KeyRate<C> {
        &self.rate
    }

    fn publish(&self, key: &K, event: Event) {
        if let Some(listener) = self.rate.listener() {
            listener.on_event(&event);
        }
        if let Some(listener) = self.key_listener {
            listener.on_event(key, &event);
        }
    }

    fn refused(&self, key: &K, reason: Reason, wait: u64) -> RateLimitExceeded {
        let error = self.rate.rejected(reason, wait);
        if self.rate.listener().is_some() || self.key_listener.is_some() {
            self.publish(key, Event::Rejected(error));
        }
        error
    }
}

/// What a call did to its key.
#[derive(Debug, Clone, Copy)]
struct Taken {
    written: u64,
    slot: u64,
    wait: u64,
}

fn taken(decision: Decision, now: u64) -> Result<Taken, u64> {
    match decision {
        Decision::Now { new_tat } => Ok(Taken {
            written: new_tat,
            slot: now,
            wait: 0,
        }),
        Decision::Wait { new_tat, wait } => Ok(Taken {
            written: new_tat,
            slot: now.saturating_add(wait),
            wait,
        }),
        Decision::Reject { wait } => Err(wait),
    }
}

/// A key and its state when a scan saw it, ordered by the state alone.
struct Soonest<K>(u64, K);

impl<K> PartialEq for Soonest<K> {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}
impl<K> Eq for Soonest<K> {}
impl<K> PartialOrd for Soonest<K> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<K> Ord for Soonest<K> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.cmp(&other.0)
    }
}

/// What the last scan left to free without scanning again.
struct Reclaim<K> {
    /// The soonest live keys it saw, soonest first out.
    candidates: BinaryHeap<Reverse<Soonest<K>>>,
    /// Every key it did not remember had a state at or after this.
    threshold: u64,
}

/// Whether a new key may go in now.
enum Room {
    Yes,
    /// No: every key held is live; the soonest may be idle in this many units.
    No(u64),
}

impl<K: Hash + Eq + Clone, C: Clock> KeyedRateLimiter<K, C> {
    /// Runs one call for `k` permits (already checked) that may wait `max_wait` units.
    #[inline]
    fn take(&self, key: &K, k: u32, max_wait: u64) -> Result<Taken, RateLimitExceeded> {
        let now = self.rate.now();
        // A known key: the shard's read lock, held across one compare-and-swap, so that a scan
        // (which takes the write lock) can never drop the key between our read and our write.
        if let Some(state) = self.map.get(key) {
            let decision = state.apply(&self.rate, now, k, max_wait);
            drop(state);
            return taken(decision, now)
                .map_err(|wait| self.refused(key, Reason::NoPermitInTime, wait));
        }
        self.take_new(key, k, now, max_wait)
    }

    /// A key not in the map: make room for it if need be, then put it in.
    #[cold]
    fn take_new(
        &self,
        key: &K,
        k: u32,
        now: u64,
        max_wait: u64,
    ) -> Result<Taken, RateLimitExceeded> {
        loop {
            if self.claim() {
                let entry = self.map.entry(key.clone());
                // With the shard locked, no earlier than any instant a key was dropped at: a key
                // dropped after our clock read gets a fresh state that never starts before the
                // old one ended.
                let now = now.max(self.evicted_at.load(Ordering::SeqCst));
                let mut inserted = None;
                let decision = match entry {
                    Entry::Occupied(e) => {
                        // Another thread put it in meanwhile.
                        self.held.fetch_sub(1, Ordering::AcqRel);
                        e.get().apply(&self.rate, now, k, max_wait)
                    }
                    Entry::Vacant(v) => {
                        let state = KeyState::new();
                        let decision = state.apply(&self.rate, now, k, max_wait);
                        if let Decision::Reject { .. } = decision {
                            self.held.fetch_sub(1, Ordering::AcqRel);
                        } else {
                            inserted = Some(state.tat());
                            v.insert(state);
                        }
                        decision
                    }
                };
                // With the shard's lock released (`make_room` takes the locks the other way).
                if let Some(tat) = inserted {
                    self.remember(tat, key);
                }
                return taken(decision, now)
                    .map_err(|wait| self.refused(key, Reason::NoPermitInTime, wait));
            }
            match self.make_room(false) {
                Room::Yes => continue,
                Room::No(wait) => return Err(self.refused(key, Reason::KeyCapacity, wait)),
            }
        }
    }

    /// Counts one more key in, if that stays within `max_keys`.
    fn claim(&self) -> bool {
        self.held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                (held < self.max_keys).then_some(held + 1)
            })
            .is_ok()
    }

    /// Notes that `key`'s state is `tat` (put in, or lowered by a refund), so that `make_room`
    /// knows it may be idle from then on.
    fn remember(&self, tat: u64, key: &K) {
        let mut reclaim = self.scan.lock().unwrap_or_else(PoisonError::into_inner);
        if reclaim.threshold == 0 {
            return; // a scan is due anyway
        }
        let most = self.remember_at_most();
        if reclaim.candidates.len() >= most {
            // Too many notes since the last scan: forget them, and scan when room is needed.
            reclaim.candidates = BinaryHeap::new();
            reclaim.threshold = 0;
            return;
        }
        if reclaim.candidates.capacity() == 0 {
            reclaim.candidates.reserve_exact(most);
        }
        reclaim.candidates.push(Reverse(Soonest(tat, key.clone())));
    }

    /// How many keys a scan remembers: a few per cent of `max_keys`.
    fn keep(&self) -> usize {
        (self.max_keys / 32).clamp(16, 4096)
    }

    /// How many notes the map keeps between scans.
    fn remember_at_most(&self) -> usize {
        2 * self.keep()
    }

    /// At `max_keys`: frees room by dropping idle keys, unless none can be idle yet. `force`
    /// scans the whole map anyway.
    ///
    /// The map remembers, with their states, the soonest live keys the last scan saw (a few per
    /// cent of `max_keys`) and every key put in or refunded since; each other key's state was at
    /// or after `threshold`. Making room first frees remembered keys that are idle, by key (O(1)
    /// each; a key used since it was remembered is noted again with its state). Only when none is
    /// and the clock has passed `threshold` does it scan: that drops every idle key and remembers
    /// the soonest again. Keys going idle one at a time while the map stays full so do not cost a
    /// scan each. Nothing is dropped that is not idle when it is dropped: each removal re-checks
    /// the state under its shard's lock.
    fn make_room(&self, force: bool) -> Room {
        let mut reclaim = self.scan.lock().unwrap_or_else(PoisonError::into_inner);
        if !force && self.held.load(Ordering::Acquire) < self.max_keys {
            return Room::Yes; // another thread made room while we waited
        }
        let now = self.rate.now();
        // Before any key is dropped at `now` (see `take_new`).
        self.evicted_at.fetch_max(now, Ordering::SeqCst);
        let mut freed = 0;
        // Each step pops or refreshes one note; a refreshed note is exact, so this ends.
        let mut steps = 2 * reclaim.candidates.len() + 2;
        while steps > 0 {
            steps -= 1;
            let Some(Reverse(Soonest(noted, key))) = reclaim.candidates.peek() else {
                break;
            };
            let (noted, key) = (*noted, key.clone());
            let actual = self.map.get(&key).map(|state| state.tat());
            match actual {
                None => {
                    reclaim.candidates.pop(); // gone already
                }
                Some(tat) if tat != noted => {
                    // Used (or refunded) since: note its state now.
                    reclaim.candidates.pop();
                    reclaim.candidates.push(Reverse(Soonest(tat, key)));
                }
                Some(tat) if self.rate.is_idle(tat, now) => {
                    reclaim.candidates.pop();
                    if self
                        .map
                        .remove_if(&key, |_, state| self.rate.is_idle(state.tat(), now))
                        .is_some()
                    {
                        freed += 1;
                    }
                }
                Some(_) => break, // the soonest noted key, exactly, and still live
            }
        }
        if freed > 0 {
            self.held.fetch_sub(freed, Ordering::AcqRel);
            if !force {
                return Room::Yes;
            }
        }
        // No key is idle before `bound`: the noted ones (the soonest is exact when the loop
        // above ended on it) and the others (at or after `threshold`).
        let bound = reclaim
            .candidates
            .peek()
            .map_or(u64::MAX, |c| c.0.0)
            .min(reclaim.threshold);
        if !force && now < bound {
            return Room::No(bound - now);
        }
        let keep = self.keep();
        let mut soonest: BinaryHeap<Soonest<K>> = BinaryHeap::with_capacity(keep + 1);
        let mut scanned_freed = 0;
        self.map.retain(|key, state| {
            let tat = state.tat();
            if self.rate.is_idle(tat, now) {
                scanned_freed += 1;
                return false;
            }
            if soonest.len() < keep || soonest.peek().is_some_and(|top| tat < top.0) {
                soonest.push(Soonest(tat, key.clone()));
                if soonest.len() > keep {
                    soonest.pop();
                }
            }
            true
        });
        self.held.fetch_sub(scanned_freed, Ordering::AcqRel);
        // Keys not remembered were at or after the latest remembered one (when it is full).
        reclaim.threshold = if soonest.len() == keep {
            soonest.peek().map_or(u64::MAX, |top| top.0)
        } else {
            u64::MAX
        };
        reclaim.candidates = soonest.into_iter().map(Reverse).collect();
        if freed + scanned_freed > 0 || self.held.load(Ordering::Acquire) < self.max_keys {
            return Room::Yes;
        }
        let bound = reclaim
            .candidates
            .peek()
            .map_or(u64::MAX, |c| c.0.0)
            .min(reclaim.threshold);
        Room::No(bound.saturating_sub(now).max(1))
    }

    /// Takes one permit for `key` if it is there now; never waits. A key never seen gets a full
    /// burst; a new key the map has no room for is refused with [`Reason::KeyCapacity`].
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_std::KeyedRateLimiter;
    /// let l = KeyedRateLimiter::with_clock("x", Config::new(1, Duration::from_secs(1))?, 10, ManualClock::new());
    /// assert!(l.try_acquire(&"a").is_ok());
    /// assert!(l.try_acquire(&"a").is_err());
    /// assert!(l.try_acquire(&"b").is_ok());
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    #[inline]
    pub fn try_acquire(&self, key: &K) -> Result<(), RateLimitExceeded> {
        if !self.rate.enabled() {
            return Ok(());
        }
        let now = self.rate.now();
        if let Some(state) = self.map.get(key) {
            // The read lock held across one compare-and-swap, as in `take`.
            let taken = state.try_take(&self.rate, now);
            drop(state);
            return taken.map_err(|wait| self.refused(key, Reason::NoPermitInTime, wait));
        }
        self.take_new(key, 1, now, 0).map(|_| ())
    }

    /// Takes `k` permits for `key` as one unit if they are all there now. `k = 0` and
    /// `k > permits` are [`AcquireError::InvalidPermits`].
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo_core::{AcquireError, Config, ManualClock};
    /// # use ritmo_std::KeyedRateLimiter;
    /// let l = KeyedRateLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, 10, ManualClock::new());
    /// assert!(l.try_acquire_n(&1u8, 3).is_ok());
    /// assert!(matches!(l.try_acquire_n(&1, 2), Err(AcquireError::RateLimited(_))));
    /// assert!(matches!(l.try_acquire_n(&1, 5), Err(AcquireError::InvalidPermits(_))));
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn try_acquire_n(&self, key: &K, k: u32) -> Result<(), AcquireError> {
        self.rate.check_permits(k)?;
        if !self.rate.enabled() {
            return Ok(());
        }
        self.take(key, k, 0)?;
        Ok(())
    }

    /// Takes one permit for `key` now, or reserves its next one if it arrives within the config's
    /// `max_wait`; otherwise rejects at once without changing anything.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_std::KeyedRateLimiter;
    /// let c = Config::new(2, Duration::from_secs(1))?.with_max_wait(Duration::from_millis(500));
    /// let l = KeyedRateLimiter::with_clock("x", c, 10, ManualClock::new());
    /// l.try_acquire_n(&1u8, 2).unwrap();
    /// let r = l.reserve(&1).unwrap();
    /// assert_eq!(r.wait_time(), Duration::from_millis(500));
    /// assert!(l.reserve(&1).is_err());
    /// assert!(r.cancel());
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn reserve(&self, key: &K) -> Result<KeyedReservation<'_, K, C>, RateLimitExceeded> {
        self.reserve_valid(key, 1, self.rate.max_wait())
    }

    /// Like [`reserve`](Self::reserve), for `k` permits taken as one unit.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_std::KeyedRateLimiter;
    /// let c = Config::new(4, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l = KeyedRateLimiter::with_clock("x", c, 10, ManualClock::new());
    /// l.try_acquire_n(&1u8, 4).unwrap();
    /// assert_eq!(l.reserve_n(&1, 2).unwrap().wait_time(), Duration::from_millis(500));
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn reserve_n(&self, key: &K, k: u32) -> Result<KeyedReservation<'_, K, C>, AcquireError> {
        self.reserve_units(key, k, self.rate.max_wait())
    }

    /// Like [`reserve_n`](Self::reserve_n), with this call's own `max_wait`.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_std::KeyedRateLimiter;
    /// let l = KeyedRateLimiter::with_clock("x", Config::new(1, Duration::from_secs(1))?, 10, ManualClock::new());
    /// l.try_acquire(&1u8).unwrap();
    /// assert!(l.reserve_n_within(&1, 1, Duration::from_millis(999)).is_err());
    /// assert!(l.reserve_n_within(&1, 1, Duration::from_secs(1)).is_ok());
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn reserve_n_within(
        &self,
        key: &K,
        k: u32,
        max_wait: Duration,
    ) -> Result<KeyedReservation<'_, K, C>, AcquireError> {
        self.reserve_units(key, k, self.rate.units(max_wait))
    }

    fn reserve_units(
        &self,
        key: &K,
        k: u32,
        max_wait: u64,
    ) -> Result<KeyedReservation<'_, K, C>, AcquireError> {
        self.rate.check_permits(k)?;
        Ok(self.reserve_valid(key, k, max_wait)?)
    }

    fn reserve_valid(
        &self,
        key: &K,
        k: u32,
        max_wait: u64,
    ) -> Result<KeyedReservation<'_, K, C>, RateLimitExceeded> {
        if !self.rate.enabled() {
            let now = self.rate.now();
            let taken = Taken {
                written: 0,
                slot: now,
                wait: 0,
            };
            return Ok(KeyedReservation::new(self, key.clone(), taken, 0, k));
        }
        let taken = self.take(key, k, max_wait)?;
        Ok(KeyedReservation::new(
            self,
            key.clone(),
            taken,
            self.rate.increment(k),
            k,
        ))
    }

    /// Takes one permit for `key`, waiting for it with `waiter` if it arrives within `max_wait`.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo_core::{AdvanceClock, Clock, Config, ManualClock};
    /// # use ritmo_std::KeyedRateLimiter;
    /// let clock = ManualClock::new();
    /// let c = Config::new(1, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l = KeyedRateLimiter::with_clock("x", c, 10, &clock);
    /// l.acquire_with(&1u8, &mut AdvanceClock).unwrap();
    /// l.acquire_with(&1u8, &mut AdvanceClock).unwrap();
    /// assert_eq!(clock.now(), 1_000_000_000);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn acquire_with<W: Wait<C> + ?Sized>(
        &self,
        key: &K,
        waiter: &mut W,
    ) -> Result<(), RateLimitExceeded> {
        self.reserve(key)?.wait_with(waiter)
    }

    /// Takes `k` permits for `key`, waiting with `waiter` as [`acquire_with`](Self::acquire_with).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo_core::{AdvanceClock, Clock, Config, ManualClock};
    /// # use ritmo_std::KeyedRateLimiter;
    /// let clock = ManualClock::new();
    /// let c = Config::new(4, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l = KeyedRateLimiter::with_clock("x", c, 10, &clock);
    /// l.acquire_n_with(&1u8, 4, &mut AdvanceClock).unwrap();
    /// l.acquire_n_with(&1u8, 2, &mut AdvanceClock).unwrap();
    /// assert_eq!(clock.now(), 500_000_000);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn acquire_n_with<W: Wait<C> + ?Sized>(
        &self,
        key: &K,
        k: u32,
        waiter: &mut W,
    ) -> Result<(), AcquireError> {
        Ok(self.reserve_n(key, k)?.wait_with(waiter)?)
    }

    /// Takes one permit for `key`, parking the thread until its slot if it arrives within
    /// `max_wait`. The thread's [`Interrupt`](crate::Interrupt) ends the wait: the permit goes
    /// back and the call fails with [`Reason::Interrupted`].
    ///
    /// ```
    /// use std::time::Duration;
    /// use ritmo_core::Config;
    /// use ritmo_std::KeyedRateLimiter;
    /// let c = Config::new(1, Duration::from_millis(10))?.with_max_wait(Duration::from_millis(50));
    /// let l = KeyedRateLimiter::new("x", c, 10);
    /// l.acquire(&"ada")?;
    /// l.acquire(&"ada")?; // parks about 10 ms
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn acquire(&self, key: &K) -> Result<(), RateLimitExceeded> {
        self.acquire_with(key, &mut ParkWait::new())
    }

    /// Takes `k` permits for `key` as one unit, parking until their slot as
    /// [`acquire`](Self::acquire).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ritmo_core::Config;
    /// use ritmo_std::KeyedRateLimiter;
    /// let l = KeyedRateLimiter::new("x", Config::new(4, Duration::from_secs(60))?, 10);
    /// l.acquire_n(&"ada", 4)?;
    /// assert!(l.acquire_n(&"ada", 1).is_err()); // max_wait 0: rejected at once
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn acquire_n(&self, key: &K, k: u32) -> Result<(), AcquireError> {
        self.acquire_n_with(key, k, &mut ParkWait::new())
    }

    /// Runs `work` once a permit for `key` is had (waiting as [`acquire`](Self::acquire)); if the
    /// call is rejected, `work` never runs.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ritmo_core::Config;
    /// use ritmo_std::KeyedRateLimiter;
    /// let l = KeyedRateLimiter::new("x", Config::new(1, Duration::from_secs(60))?, 10);
    /// assert_eq!(l.call(&"ada", || 42), Ok(42));
    /// assert!(l.call(&"ada", || 43).is_err());
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn call<T>(&self, key: &K, work: impl FnOnce() -> T) -> Result<T, RateLimitExceeded> {
        self.acquire(key)?;
        Ok(work())
    }

    /// Runs the fallible `work` once a permit for `key` is had; a rejection becomes the caller's
    /// error type through `From<RateLimitExceeded>`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ritmo_core::{Config, RateLimitExceeded};
    /// use ritmo_std::KeyedRateLimiter;
    /// #[derive(Debug)]
    /// struct Busy;
    /// impl From<RateLimitExceeded> for Busy { fn from(_: RateLimitExceeded) -> Self { Busy } }
    /// let l = KeyedRateLimiter::new("x", Config::new(1, Duration::from_secs(60))?, 10);
    /// assert_eq!(l.try_call(&"ada", || Ok::<_, Busy>(1)).unwrap(), 1);
    /// assert!(l.try_call(&"ada", || Ok::<_, Busy>(2)).is_err());
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn try_call<T, E: From<RateLimitExceeded>>(
        &self,
        key: &K,
        work: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E> {
        self.acquire(key)?;
        work()
    }

    /// Calls of one permit `key` would pass right now without waiting, in `0..=permits`: the full
    /// burst for a key never seen, 0 for a new key the map has no room for. Takes nothing.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_std::KeyedRateLimiter;
    /// let l = KeyedRateLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, 10, ManualClock::new());
    /// l.try_acquire_n(&1u8, 3).unwrap();
    /// assert_eq!((l.available_permits(&1), l.available_permits(&2)), (1, 4));
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn available_permits(&self, key: &K) -> u32 {
        let now = self.rate.now();
        if let Some(state) = self.map.get(key) {
            return self.rate.available(state.tat(), now);
        }
        if !self.rate.enabled() || self.has_room() {
            self.rate.config().permits()
        } else {
            0
        }
    }

    /// Whether a new key would find room now (dropping idle keys to make it, if need be).
    fn has_room(&self) -> bool {
        self.held.load(Ordering::Acquire) < self.max_keys
            || matches!(self.make_room(false), Room::Yes)
    }

    /// How long until one permit for `key` would pass without waiting: zero if one is there now;
    /// for a new key the map has no room for, when the soonest key may be idle. Takes nothing.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_std::KeyedRateLimiter;
    /// let l = KeyedRateLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, 10, ManualClock::new());
    /// l.try_acquire_n(&1u8, 4).unwrap();
    /// assert_eq!(l.retry_after(&1), Duration::from_millis(250));
    /// assert_eq!(l.retry_after(&2), Duration::ZERO);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn retry_after(&self, key: &K) -> Duration {
        self.retry_after_n(key, 1).unwrap_or(Duration::ZERO)
    }

    /// How long until `k` permits for `key` would pass at once. Takes nothing.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_std::KeyedRateLimiter;
    /// let l = KeyedRateLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, 10, ManualClock::new());
    /// l.try_acquire_n(&1u8, 4).unwrap();
    /// assert_eq!(l.retry_after_n(&1, 2).unwrap(), Duration::from_millis(500));
    /// assert!(l.retry_after_n(&1, 5).is_err());
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn retry_after_n(&self, key: &K, k: u32) -> Result<Duration, InvalidPermits> {
        self.rate.check_permits(k)?;
        if !self.rate.enabled() {
            return Ok(Duration::ZERO);
        }
        let now = self.rate.now();
        if let Some(state) = self.map.get(key) {
            return Ok(self.rate.duration(self.rate.wait(state.tat(), now, k)));
        }
        let wait = if self.held.load(Ordering::Acquire) < self.max_keys {
            0
        } else {
            match self.make_room(false) {
                Room::Yes => 0,
                Room::No(wait) => wait,
            }
        };
        Ok(self.rate.duration(wait.max(self.rate.wait(0, now, k))))
    }

    /// How many keys are being limited right now (not idle). Scans the map.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_std::KeyedRateLimiter;
    /// let clock = ManualClock::new();
    /// let l = KeyedRateLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, 10, &clock);
    /// l.try_acquire(&1u8).unwrap();
    /// l.try_acquire(&2u8).unwrap();
    /// assert_eq!(l.len(), 2);
    /// clock.advance(Duration::from_millis(250));
    /// assert_eq!(l.len(), 0);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn len(&self) -> usize {
        let now = self.rate.now();
        self.map
            .iter()
            .filter(|e| !self.rate.is_idle(e.value().tat(), now))
            .count()
    }

    /// Its id, live keys, keys held, capacity (`max_keys`) and permits per key
    /// ([`KeyedSnapshot`]). Takes nothing; scans the map.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo_core::{Config, KeyedSnapshot, ManualClock};
    /// # use ritmo_std::KeyedRateLimiter;
    /// let l = KeyedRateLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, 10, ManualClock::new());
    /// l.try_acquire(&1u8).unwrap();
    /// assert_eq!(l.snapshot(), KeyedSnapshot::new("x", 1, 1, 10, 4));
    /// # Ok::<(), ritmo_core::ConfigError>(())
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
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_std::KeyedRateLimiter;
    /// let l = KeyedRateLimiter::<u8, _>::with_clock("x", Config::new(4, Duration::from_secs(1))?, 10, ManualClock::new());
    /// assert!(l.is_empty());
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The keys being limited right now, each with the permits it would pass now (in no
    /// particular order).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo_core::{Config, KeySnapshot, ManualClock};
    /// # use ritmo_std::KeyedRateLimiter;
    /// let l = KeyedRateLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, 10, ManualClock::new());
    /// l.try_acquire_n(&7u8, 3).unwrap();
    /// assert_eq!(l.live_keys(), vec![KeySnapshot::new(7, 1)]);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn live_keys(&self) -> Vec<KeySnapshot<K>> {
        let now = self.rate.now();
        self.map
            .iter()
            .filter_map(|e| {
                let tat = e.value().tat();
                (!self.rate.is_idle(tat, now))
                    .then(|| KeySnapshot::new(e.key().clone(), self.rate.available(tat, now)))
            })
            .collect()
    }

    /// Drops every idle key now and returns how many keys are left (all live). Never needed:
    /// idle keys are reclaimed whenever a new key needs their room. For tests and measurements.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_std::KeyedRateLimiter;
    /// let clock = ManualClock::new();
    /// let l = KeyedRateLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, 10, &clock);
    /// l.try_acquire(&1u8).unwrap();
    /// clock.advance(Duration::from_secs(1));
    /// assert_eq!(l.reclaim_idle(), 0);
    /// assert_eq!(l.keys_held(), 0);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn reclaim_idle(&self) -> usize {
        self.make_room(true);
        self.map.shrink_to_fit();
        self.held.load(Ordering::Acquire)
    }

    /// Gives back what a reservation took, if the key was not changed since.
    fn refund(&self, key: &K, written: u64, increment: u64) -> bool {
        match self.map.get(key) {
            Some(state) => {
                let back = state.refund(&self.rate, written, increment);
                if back {
                    let tat = state.tat();
                    drop(state);
                    // The key may now be idle sooner than the map last knew.
                    self.remember(tat, key);
                }
                back
            }
            // Dropped as idle: its permits were all back already.
            None => self.rate.is_idle(written, self.rate.now()),
        }
    }
}

/// Waits that advance a fake clock: tests never sleep.
impl<K: Hash + Eq + Clone, C: ritmo_core::ManualTime> KeyedRateLimiter<K, C> {
    /// Takes one permit for `key`, waiting for it by advancing the fake clock to its slot.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo_core::{Clock, Config, ManualClock};
    /// # use ritmo_std::KeyedRateLimiter;
    /// let clock = ManualClock::new();
    /// let c = Config::new(2, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l = KeyedRateLimiter::with_clock("x", c, 10, &clock);
    /// for _ in 0..3 { l.acquire_advancing(&1u8).unwrap(); }
    /// assert_eq!(clock.now(), 500_000_000);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn acquire_advancing(&self, key: &K) -> Result<(), RateLimitExceeded> {
        self.acquire_with(key, &mut ritmo_core::AdvanceClock)
    }

    /// Takes `k` permits for `key`, advancing the fake clock to their slot if they must wait.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo_core::{Clock, Config, ManualClock};
    /// # use ritmo_std::KeyedRateLimiter;
    /// let clock = ManualClock::new();
    /// let c = Config::new(4, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l = KeyedRateLimiter::with_clock("x", c, 10, &clock);
    /// l.acquire_n_advancing(&1u8, 4).unwrap();
    /// l.acquire_n_advancing(&1u8, 4).unwrap();
    /// assert_eq!(clock.now(), 1_000_000_000);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn acquire_n_advancing(&self, key: &K, k: u32) -> Result<(), AcquireError> {
        self.acquire_n_with(key, k, &mut ritmo_core::AdvanceClock)
    }
}

/// Permits for one key of a [`KeyedRateLimiter`], taken now or reserved for a slot: commit it
/// when the work runs, or let it go. Dropping or [`cancel`](KeyedReservation::cancel)ling it
/// before it is committed returns the permits if no later call for the key was made since.
///
/// ```
/// # use std::time::Duration;
/// # use ritmo_core::{Config, ManualClock};
/// # use ritmo_std::KeyedRateLimiter;
/// let c = Config::new(1, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(5));
/// let l = KeyedRateLimiter::with_clock("x", c, 10, ManualClock::new());
/// let a = l.reserve(&1u8).unwrap();
/// let b = l.reserve(&1u8).unwrap();
/// assert!(!a.cancel()); // b is queued behind it
/// assert!(b.cancel());
/// # Ok::<(), ritmo_core::ConfigError>(())
/// ```
#[must_use = "a reservation returns its permits when dropped: commit it once the work runs"]
pub struct KeyedReservation<'a, K: Hash + Eq + Clone + 'static, C: Clock> {
    limiter: &'a KeyedRateLimiter<K, C>,
    key: K,
    taken: Taken,
    increment: u64,
    permits: u32,
    settled: bool,
}

impl<K: Hash + Eq + Clone, C: Clock> fmt::Debug for KeyedReservation<'_, K, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedReservation")
            .field("limiter", &self.limiter.id())
            .field("permits", &self.permits)
            .field("wait", &self.wait_time())
            .finish_non_exhaustive()
    }
}

impl<'a, K: Hash + Eq + Clone, C: Clock> KeyedReservation<'a, K, C> {
    fn new(
        limiter: &'a KeyedRateLimiter<K, C>,
        key: K,
        taken: Taken,
        increment: u64,
        permits: u32,
    ) -> Self {
        KeyedReservation {
            limiter,
            key,
            taken,
            increment,
            permits,
            settled: false,
        }
    }

    /// The limiter it is for.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_std::KeyedRateLimiter;
    /// let l = KeyedRateLimiter::with_clock("x", Config::new(1, Duration::from_secs(1))?, 10, ManualClock::new());
    /// assert_eq!(l.reserve(&3u8).unwrap().limiter().id(), "x");
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn limiter(&self) -> &'a KeyedRateLimiter<K, C> {
        self.limiter
    }

    /// The key it is for.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_std::KeyedRateLimiter;
    /// let l = KeyedRateLimiter::with_clock("x", Config::new(1, Duration::from_secs(1))?, 10, ManualClock::new());
    /// assert_eq!(*l.reserve(&3u8).unwrap().key(), 3);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn key(&self) -> &K {
        &self.key
    }

    /// How many permits it holds.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_std::KeyedRateLimiter;
    /// let l = KeyedRateLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, 10, ManualClock::new());
    /// assert_eq!(l.reserve_n(&3u8, 2).unwrap().permits(), 2);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn permits(&self) -> u32 {
        self.permits
    }

    /// How long, from when it was made, the caller must wait for the slot.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_std::KeyedRateLimiter;
    /// let l = KeyedRateLimiter::with_clock("x", Config::new(1, Duration::from_secs(1))?, 10, ManualClock::new());
    /// assert_eq!(l.reserve(&3u8).unwrap().wait_time(), Duration::ZERO);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn wait_time(&self) -> Duration {
        self.limiter.rate.duration(self.taken.wait)
    }

    /// The slot as a reading of the limiter's clock.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_std::KeyedRateLimiter;
    /// let c = Config::new(1, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l = KeyedRateLimiter::with_clock("x", c, 10, ManualClock::new());
    /// l.try_acquire(&3u8).unwrap();
    /// assert_eq!(l.reserve(&3u8).unwrap().slot(), 1_000_000_000);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn slot(&self) -> u64 {
        self.limiter.rate.reading(self.taken.slot)
    }

    /// How long from now until the slot: zero once it has arrived.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_std::KeyedRateLimiter;
    /// let clock = ManualClock::new();
    /// let c = Config::new(1, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l = KeyedRateLimiter::with_clock("x", c, 10, &clock);
    /// l.try_acquire(&3u8).unwrap();
    /// let r = l.reserve(&3u8).unwrap();
    /// clock.advance(Duration::from_millis(400));
    /// assert_eq!(r.remaining(), Duration::from_millis(600));
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn remaining(&self) -> Duration {
        let now = self.limiter.rate.now();
        self.limiter
            .rate
            .duration(self.taken.slot.saturating_sub(now))
    }

    /// Whether the slot has arrived.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_std::KeyedRateLimiter;
    /// let l = KeyedRateLimiter::with_clock("x", Config::new(1, Duration::from_secs(1))?, 10, ManualClock::new());
    /// assert!(l.reserve(&3u8).unwrap().is_ready());
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn is_ready(&self) -> bool {
        self.limiter.rate.now() >= self.taken.slot
    }

    /// Keeps the permits: the work runs (or has run).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_std::KeyedRateLimiter;
    /// let l = KeyedRateLimiter::with_clock("x", Config::new(1, Duration::from_secs(1))?, 10, ManualClock::new());
    /// l.reserve(&3u8).unwrap().commit();
    /// assert_eq!(l.available_permits(&3), 0);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn commit(mut self) {
        self.settled = true;
    }

    /// Gives the reservation up before its work runs; returns whether its permits went back.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_std::KeyedRateLimiter;
    /// let l = KeyedRateLimiter::with_clock("x", Config::new(1, Duration::from_secs(1))?, 10, ManualClock::new());
    /// assert!(l.reserve(&3u8).unwrap().cancel());
    /// assert_eq!(l.available_permits(&3), 1);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn cancel(mut self) -> bool {
        self.release(Reason::Cancelled)
    }

    /// Gives the reservation up because its waiter was interrupted, and returns the error the
    /// call should fail with ([`Reason::Interrupted`]).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo_core::{Config, ManualClock, Reason};
    /// # use ritmo_std::KeyedRateLimiter;
    /// let c = Config::new(1, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l = KeyedRateLimiter::with_clock("x", c, 10, ManualClock::new());
    /// l.try_acquire(&3u8).unwrap();
    /// let err = l.reserve(&3u8).unwrap().interrupted();
    /// assert_eq!((err.reason(), err.retry_after()), (Reason::Interrupted, Duration::from_secs(1)));
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn interrupted(mut self) -> RateLimitExceeded {
        let left = self.taken.slot.saturating_sub(self.limiter.rate.now());
        self.release(Reason::Interrupted);
        self.limiter.rate.rejected(Reason::Interrupted, left)
    }

    /// Waits for the slot with `waiter`, then commits; if interrupted, gives the permits back and
    /// fails with [`Reason::Interrupted`].
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo_core::{AdvanceClock, Clock, Config, ManualClock};
    /// # use ritmo_std::KeyedRateLimiter;
    /// let clock = ManualClock::new();
    /// let c = Config::new(1, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l = KeyedRateLimiter::with_clock("x", c, 10, &clock);
    /// l.try_acquire(&3u8).unwrap();
    /// l.reserve(&3u8).unwrap().wait_with(&mut AdvanceClock).unwrap();
    /// assert_eq!(clock.now(), 1_000_000_000);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn wait_with<W: Wait<C> + ?Sized>(self, waiter: &mut W) -> Result<(), RateLimitExceeded> {
        if self.taken.wait > 0
            && !self.is_ready()
            && waiter
                .wait_until(self.limiter.clock(), self.slot())
                .is_err()
        {
            return Err(self.interrupted());
        }
        self.commit();
        Ok(())
    }

    fn release(&mut self, reason: Reason) -> bool {
        if self.settled {
            return false;
        }
        self.settled = true;
        if self.increment == 0 {
            return true;
        }
        let limiter = self.limiter;
        let returned = limiter.refund(&self.key, self.taken.written, self.increment);
        if limiter.rate.listener().is_some() || limiter.key_listener.is_some() {
            limiter.publish(
                &self.key,
                Event::Released {
                    id: limiter.id(),
                    permits: self.permits,
                    reason,
                    returned,
                },
            );
        }
        returned
    }
}

impl<K: Hash + Eq + Clone, C: Clock> Drop for KeyedReservation<'_, K, C> {
    fn drop(&mut self) {
        self.release(Reason::Cancelled);
    }
}

/// Async waits on tokio's timer, without holding a thread.
#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
impl<K: Hash + Eq + Clone, C: Clock> KeyedRateLimiter<K, C> {
    /// Takes one permit for `key`, sleeping on tokio's timer until its slot if it arrives within
    /// `max_wait`. Dropping the future before then gives the permit back (when no later call for
    /// the key was made).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ritmo_core::Config;
    /// use ritmo_std::{KeyedRateLimiter, TokioClock};
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), ritmo_core::ConfigError> {
    /// let c = Config::new(1, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(5));
    /// let l = KeyedRateLimiter::with_clock("api", c, 100, TokioClock::new());
    /// l.acquire_async(&"ada").await.unwrap();
    /// l.acquire_async(&"ada").await.unwrap(); // paused time jumps to the slot
    /// # Ok(())
    /// # }
    /// ```
    pub async fn acquire_async(&self, key: &K) -> Result<(), RateLimitExceeded> {
        sleep_until_slot(self.reserve(key)?).await;
        Ok(())
    }

    /// Takes `k` permits for `key` as one unit, sleeping until their slot as
    /// [`acquire_async`](Self::acquire_async).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ritmo_core::Config;
    /// use ritmo_std::{KeyedRateLimiter, TokioClock};
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), ritmo_core::ConfigError> {
    /// let c = Config::new(4, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l = KeyedRateLimiter::with_clock("api", c, 100, TokioClock::new());
    /// l.acquire_n_async(&"ada", 4).await.unwrap();
    /// l.acquire_n_async(&"ada", 2).await.unwrap();
    /// # Ok(())
    /// # }
    /// ```
    pub async fn acquire_n_async(&self, key: &K, k: u32) -> Result<(), AcquireError> {
        sleep_until_slot(self.reserve_n(key, k)?).await;
        Ok(())
    }

    /// Runs the future `work` once a permit for `key` is had; if the call is rejected, `work`
    /// never runs.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ritmo_core::Config;
    /// use ritmo_std::KeyedRateLimiter;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), ritmo_core::ConfigError> {
    /// let l = KeyedRateLimiter::new("api", Config::new(1, Duration::from_secs(60))?, 100);
    /// assert_eq!(l.call_async(&"ada", async { 7 }).await, Ok(7));
    /// assert!(l.call_async(&"ada", async { 8 }).await.is_err());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn call_async<F: Future>(
        &self,
        key: &K,
        work: F,
    ) -> Result<F::Output, RateLimitExceeded> {
        self.acquire_async(key).await?;
        Ok(work.await)
    }

    /// Runs the fallible future `work` once a permit for `key` is had; a rejection becomes the
    /// caller's error type through `From<RateLimitExceeded>`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ritmo_core::{Config, RateLimitExceeded};
    /// use ritmo_std::KeyedRateLimiter;
    /// #[derive(Debug)]
    /// struct Busy;
    /// impl From<RateLimitExceeded> for Busy { fn from(_: RateLimitExceeded) -> Self { Busy } }
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), ritmo_core::ConfigError> {
    /// let l = KeyedRateLimiter::new("api", Config::new(1, Duration::from_secs(60))?, 100);
    /// assert_eq!(l.try_call_async(&"ada", async { Ok::<_, Busy>(1) }).await.unwrap(), 1);
    /// assert!(l.try_call_async(&"ada", async { Ok::<_, Busy>(2) }).await.is_err());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn try_call_async<T, E, F>(&self, key: &K, work: F) -> Result<T, E>
    where
        E: From<RateLimitExceeded>,
        F: Future<Output = Result<T, E>>,
    {
        self.acquire_async(key).await?;
        work.await
    }
}

/// Sleeps until the reservation's slot, then keeps it; dropped before that, the reservation goes
/// with it and gives its permits back.
#[cfg(feature = "tokio")]
async fn sleep_until_slot<K: Hash + Eq + Clone, C: Clock>(reservation: KeyedReservation<'_, K, C>) {
    let clock = reservation.limiter().clock();
    let deadline = reservation.slot();
    let rate = clock.tick_rate();
    loop {
        let now = clock.now();
        if now >= deadline {
            break;
        }
        let left = rate.duration_ceil(deadline - now);
        tokio::time::sleep_until(tokio::time::Instant::now() + left).await;
    }
    reservation.commit();
}
