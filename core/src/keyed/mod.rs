//! Keyed limiting: one quota per client (a peer, an IP address, a user, an API key), in memory a
//! flood of new keys cannot grow.
//!
//! A [`KeyedLimiter`] applies one [`Config`] to each key separately: key `a` spending its burst
//! never touches key `b`, and a key seen for the first time holds a full burst, exactly like a
//! fresh [`RateLimiter`](crate::RateLimiter).
//!
//! # Exact eviction
//!
//! A key's whole state is one instant, `tat`, at which its next permit arrives. Once the clock
//! has passed it (`tat <= now`) the key's burst is full again, and it decides every later call
//! exactly like a key never seen: dropping it then changes no decision. The table does just that,
//! lazily: a probe that passes an idle key frees its slot on the spot. There is no sweeper to run
//! and no `retain_recent` to forget, and a key still being limited (`tat > now`) is never dropped,
//! so a client cannot win a fresh burst by flooding the table with new keys.
//!
//! # Bounded memory
//!
//! The table holds `N` keys in a fixed array, with no heap, and can be a `static`. When all `N`
//! hold keys still being limited, a new key is rejected with [`Reason::KeyCapacity`], whose
//! `retry_after` is when the soonest of them is idle; keys already in the table carry on as
//! before. Size `N` for the clients you expect to be limited at once: a lookup in a table that is
//! nearly full of live keys probes many slots, and a new key in a full one probes all `N`.
//!
//! ```
//! use core::time::Duration;
//! use ritmo_core::{const_config, ManualClock, Reason};
//! use ritmo_core::keyed::KeyedLimiter;
//!
//! static CLOCK: ManualClock = ManualClock::new();
//! // 2 requests per second per peer, for up to 4 peers limited at once.
//! static PEERS: KeyedLimiter<u32, &ManualClock, 4> =
//!     KeyedLimiter::new("peers", const_config!(2, Duration::from_secs(1)), &CLOCK, 0x5eed);
//!
//! for peer in 1..=4 {
//!     PEERS.try_acquire(&peer).unwrap();
//! }
//! PEERS.try_acquire_n(&1, 1).unwrap(); // peer 1 spends its burst...
//! assert!(PEERS.try_acquire(&1).is_err()); // ...and is limited; the others are not
//! assert!(PEERS.try_acquire(&2).is_ok());
//! // Four peers are limited at once: a fifth has no room until one of them is idle.
//! let err = PEERS.try_acquire(&5).unwrap_err();
//! assert_eq!((err.reason(), err.retry_after()), (Reason::KeyCapacity, Duration::from_millis(500)));
//! CLOCK.advance(Duration::from_millis(500)); // peers 3 and 4 are idle again
//! assert!(PEERS.try_acquire(&5).is_ok());
//! ```
//!
//! # Interrupts and threads
//!
//! Every operation runs inside one short critical section, so the table can be shared between
//! thread mode and interrupt handlers on a single-core MCU (the critical section masks
//! interrupts), and between threads on a host (where `critical-section`'s std implementation is
//! one process-wide lock: a server with many threads is better served by the growable, sharded
//! `KeyedRateLimiter` of the std adapter, which applies the same rules). Listeners are called after
//! the critical section ends.
//!
//! # Keys and hashing
//!
//! Keys are any `Hash + Eq + Clone` value. They are hashed with SipHash-1-3 keyed by a 128-bit
//! seed you pass in: clients who choose their own keys (an address, a name) cannot make them
//! collide without knowing it. Seed it from a hardware random number generator at start-up with
//! [`set_seed`](KeyedLimiter::set_seed) when the limiter is a `static`.

mod rate;
mod table;

pub use rate::{Decision, KeyRate, KeyState};

use core::fmt;
use core::hash::Hash;
use core::time::Duration;

use crate::clock::{Clock, FixedRateClock, ManualTime};
use crate::config::Config;
use crate::error::{AcquireError, RateLimitExceeded, Reason};
use crate::event::{Event, Listener};
use crate::sync::Lock;
use crate::wait::{AdvanceClock, Wait};
use table::{Probe, Table};

/// Receives a keyed limiter's events together with the key they are about. Opt-in
/// ([`KeyedLimiter::with_key_listener`]): keys are often personal data, so a plain
/// [`Listener`] only ever hears the limiter's id.
///
/// ```
/// use core::time::Duration;
/// use portable_atomic::{AtomicU32, Ordering};
/// use ritmo_core::{const_config, Event, ManualClock};
/// use ritmo_core::keyed::{KeyListener, KeyedLimiter};
///
/// struct LastRejected(AtomicU32);
/// impl KeyListener<u32> for LastRejected {
///     fn on_event(&self, key: &u32, event: &Event) {
///         if let Event::Rejected(_) = event {
///             self.0.store(*key, Ordering::Relaxed);
///         }
///     }
/// }
/// static LAST: LastRejected = LastRejected(AtomicU32::new(0));
/// static CLOCK: ManualClock = ManualClock::new();
/// static PEERS: KeyedLimiter<u32, &ManualClock, 8> =
///     KeyedLimiter::new("peers", const_config!(1, Duration::from_secs(1)), &CLOCK, 1)
///         .with_key_listener(&LAST);
/// PEERS.try_acquire(&7).unwrap();
/// assert!(PEERS.try_acquire(&7).is_err());
/// assert_eq!(LAST.0.load(Ordering::Relaxed), 7);
/// ```
pub trait KeyListener<K: ?Sized>: Sync {
    /// Handles one event about `key`. Called on the thread (or in the interrupt handler) that
    /// caused it: be quick, never block.
    fn on_event(&self, key: &K, event: &Event);
}

/// A live key and the permits it would pass right now.
///
/// ```
/// use core::time::Duration;
/// use ritmo_core::{Config, ManualClock};
/// use ritmo_core::keyed::{KeySnapshot, KeyedLimiter};
/// let peers: KeyedLimiter<u8, _, 4> =
///     KeyedLimiter::with_clock("peers", Config::new(3, Duration::from_secs(1))?, ManualClock::new(), 9);
/// peers.try_acquire(&1).unwrap();
/// assert_eq!(peers.live_keys().as_slice(), &[KeySnapshot::new(1, 2)]);
/// # Ok::<(), ritmo_core::ConfigError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct KeySnapshot<K> {
    /// The key.
    pub key: K,
    /// Calls of one permit it would pass right now without waiting.
    pub available_permits: u32,
}

impl<K> KeySnapshot<K> {
    /// `key` with `available_permits` (the struct is `#[non_exhaustive]`: fields may be added,
    /// so other crates build it with this, not with a struct literal).
    ///
    /// ```compile_fail
    /// let _ = ritmo_core::keyed::KeySnapshot { key: 1u8, available_permits: 2 };
    /// ```
    pub const fn new(key: K, available_permits: u32) -> Self {
        KeySnapshot {
            key,
            available_permits,
        }
    }
}

/// What a keyed limiter reports about itself: its id, how many keys it is limiting now, how many
/// it holds (live, or idle and not yet reclaimed), how many it can hold, and the permits per
/// period each key gets. No key appears here: see `live_keys` for those.
///
/// ```
/// use core::time::Duration;
/// use ritmo_core::{Config, ManualClock};
/// use ritmo_core::keyed::{KeyedLimiter, KeyedSnapshot};
/// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("peers", Config::new(2, Duration::from_secs(1))?, ManualClock::new(), 0);
/// l.try_acquire(&1).unwrap();
/// assert_eq!(l.snapshot(), KeyedSnapshot::new("peers", 1, 1, 8, 2));
/// let s = l.snapshot();
/// assert_eq!((s.id, s.live_keys, s.keys_held, s.capacity, s.permits), ("peers", 1, 1, 8, 2));
/// # Ok::<(), ritmo_core::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub struct KeyedSnapshot {
    /// The limiter's id.
    pub id: &'static str,
    /// Keys being limited right now (not idle).
    pub live_keys: usize,
    /// Keys held: live, or idle and not yet reclaimed.
    pub keys_held: usize,
    /// The most keys it can hold.
    pub capacity: usize,
    /// Permits per period, for each key.
    pub permits: u32,
}

impl KeyedSnapshot {
    /// A snapshot with these numbers (the struct is `#[non_exhaustive]`: fields may be added, so
    /// other crates build it with this, not with a struct literal).
    ///
    /// ```compile_fail
    /// let _ = ritmo_core::keyed::KeyedSnapshot { id: "x", live_keys: 0, keys_held: 0, capacity: 1, permits: 1 };
    /// ```
    pub const fn new(
        id: &'static str,
        live_keys: usize,
        keys_held: usize,
        capacity: usize,
        permits: u32,
    ) -> Self {
        KeyedSnapshot {
            id,
            live_keys,
            keys_held,
            capacity,
            permits,
        }
    }
}

/// A limiter that applies one config to each key separately, in a fixed table of `N` keys with no
/// heap: see the [module docs](self) for how idle keys are reclaimed and what happens when the
/// table is full.
///
/// `N = 0` does not compile:
///
/// ```compile_fail
/// use core::time::Duration;
/// use ritmo_core::{const_config, ManualClock};
/// use ritmo_core::keyed::KeyedLimiter;
/// static CLOCK: ManualClock = ManualClock::new();
/// static EMPTY: KeyedLimiter<u32, &ManualClock, 0> =
///     KeyedLimiter::new("none", const_config!(1, Duration::from_secs(1)), &CLOCK, 0);
/// ```
pub struct KeyedLimiter<K: 'static, C, const N: usize> {
    rate: KeyRate<C>,
    table: Lock<Table<K, N>>,
    key_listener: Option<&'static dyn KeyListener<K>>,
}

impl<K, C, const N: usize> fmt::Debug for KeyedLimiter<K, C, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedLimiter")
            .field("id", &self.rate.id())
            .field("config", self.rate.config())
            .field("capacity", &N)
            .field("has_key_listener", &self.key_listener.is_some())
            .finish_non_exhaustive()
    }
}

impl<K, C: FixedRateClock, const N: usize> KeyedLimiter<K, C, N> {
    /// A keyed limiter named `id` applying `config` to each key, on `clock`, hashing keys with
    /// `seed`; in a `const` context if need be (a `static`).
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo_core::{const_config, ManualClock};
    /// use ritmo_core::keyed::KeyedLimiter;
    /// static CLOCK: ManualClock = ManualClock::new();
    /// static NODES: KeyedLimiter<u16, &ManualClock, 32> =
    ///     KeyedLimiter::new("nodes", const_config!(10, Duration::from_secs(60)), &CLOCK, 0xC0FFEE);
    /// assert_eq!(NODES.available_permits(&3), 10);
    /// ```
    #[cfg(not(all(test, loom)))]
    pub const fn new(id: &'static str, config: Config, clock: C, seed: u128) -> Self {
        const {
            assert!(
                N > 0 && N <= u32::MAX as usize,
                "a keyed table needs 1..=u32::MAX slots"
            )
        };
        KeyedLimiter {
            rate: KeyRate::new(id, config, clock),
            table: Lock::new(Table::new(seed)),
            key_listener: None,
        }
    }

    /// A keyed limiter named `id` applying `config` to each key.
    #[cfg(all(test, loom))]
    pub fn new(id: &'static str, config: Config, clock: C, seed: u128) -> Self {
        const {
            assert!(
                N > 0 && N <= u32::MAX as usize,
                "a keyed table needs 1..=u32::MAX slots"
            )
        };
        KeyedLimiter {
            rate: KeyRate::new(id, config, clock),
            table: Lock::new(Table::new(seed)),
            key_listener: None,
        }
    }
}

impl<K, C: Clock, const N: usize> KeyedLimiter<K, C, N> {
    /// A keyed limiter on a clock whose tick rate is known only at run time.
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo_core::{Config, ManualClock};
    /// use ritmo_core::keyed::KeyedLimiter;
    /// let users: KeyedLimiter<&str, _, 16> =
    ///     KeyedLimiter::with_clock("users", Config::new(5, Duration::from_secs(1))?, ManualClock::new(), 42);
    /// assert!(users.try_acquire(&"ada").is_ok());
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn with_clock(id: &'static str, config: Config, clock: C, seed: u128) -> Self {
        const {
            assert!(
                N > 0 && N <= u32::MAX as usize,
                "a keyed table needs 1..=u32::MAX slots"
            )
        };
        KeyedLimiter {
            rate: KeyRate::with_clock(id, config, clock),
            table: Lock::new(Table::new(seed)),
            key_listener: None,
        }
    }
}

impl<K, C, const N: usize> KeyedLimiter<K, C, N> {
    /// The same limiter, reporting rejections and released reservations to `listener`, which
    /// hears the limiter's id but never the key.
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo_core::{const_config, Event, Listener, ManualClock};
    /// use ritmo_core::keyed::KeyedLimiter;
    /// struct Log;
    /// impl Listener for Log {
    ///     fn on_event(&self, event: &Event) { assert_eq!(event.id(), "peers"); }
    /// }
    /// static CLOCK: ManualClock = ManualClock::new();
    /// static PEERS: KeyedLimiter<u32, &ManualClock, 4> =
    ///     KeyedLimiter::new("peers", const_config!(1, Duration::from_secs(1)), &CLOCK, 3).with_listener(&Log);
    /// PEERS.try_acquire(&1).unwrap();
    /// assert!(PEERS.try_acquire(&1).is_err());
    /// ```
    #[must_use]
    pub const fn with_listener(mut self, listener: &'static dyn Listener) -> Self {
        self.rate.set_listener(listener);
        self
    }

    /// The same limiter, also reporting each event with its key to `listener` (opt-in: see
    /// [`KeyListener`]).
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo_core::{Config, Event, ManualClock};
    /// # use ritmo_core::keyed::{KeyListener, KeyedLimiter};
    /// struct Audit;
    /// impl KeyListener<u32> for Audit { fn on_event(&self, _key: &u32, _event: &Event) {} }
    /// let peers: KeyedLimiter<u32, _, 4> =
    ///     KeyedLimiter::with_clock("peers", Config::new(1, Duration::from_secs(1))?, ManualClock::new(), 0)
    ///         .with_key_listener(&Audit);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    #[must_use]
    pub const fn with_key_listener(mut self, listener: &'static dyn KeyListener<K>) -> Self {
        self.key_listener = Some(listener);
        self
    }

    /// The limiter's id.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let l: KeyedLimiter<u8, _, 2> = KeyedLimiter::with_clock("x", Config::new(1, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// assert_eq!(l.id(), "x");
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub const fn id(&self) -> &'static str {
        self.rate.id()
    }

    /// The config every key gets.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let c = Config::new(1, Duration::from_secs(1))?;
    /// let l: KeyedLimiter<u8, _, 2> = KeyedLimiter::with_clock("x", c, ManualClock::new(), 0);
    /// assert_eq!(*l.config(), c);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub const fn config(&self) -> &Config {
        self.rate.config()
    }

    /// The clock it reads.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo_core::{Clock, Config, ManualClock};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let l: KeyedLimiter<u8, _, 2> = KeyedLimiter::with_clock("x", Config::new(1, Duration::from_secs(1))?, ManualClock::starting_at(5), 0);
    /// assert_eq!(l.clock().now(), 5);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub const fn clock(&self) -> &C {
        self.rate.clock()
    }

    /// How many keys it can hold: `N`.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let l: KeyedLimiter<u8, _, 64> = KeyedLimiter::with_clock("x", Config::new(1, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// assert_eq!(l.capacity(), 64);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub const fn capacity(&self) -> usize {
        N
    }

    /// The rules it applies to each key (for stores of your own that share them).
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let l: KeyedLimiter<u8, _, 2> = KeyedLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// assert_eq!(l.rate().increment(1), 250_000_000);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub const fn rate(&self) -> &KeyRate<C> {
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

    #[inline]
    fn refused(&self, key: &K, reason: Reason, wait: u64) -> RateLimitExceeded {
        let error = self.rate.rejected(reason, wait);
        if self.rate.listener().is_some() || self.key_listener.is_some() {
            self.publish(key, Event::Rejected(error));
        }
        error
    }
}

/// What a call did to its key: the state it wrote, when its permits arrive, and how long that is.
#[derive(Debug, Clone, Copy)]
struct Taken {
    written: u64,
    slot: u64,
    wait: u64,
}

impl<K: Hash + Eq + Clone, C: Clock, const N: usize> KeyedLimiter<K, C, N> {
    /// Hashes keys with `seed` from now on: every key held is moved to where the new seed puts it,
    /// keeping its state. For a `static` limiter seeded at start-up from a random number
    /// generator. Uses a second table's worth of stack while it moves them.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let l: KeyedLimiter<u32, _, 8> = KeyedLimiter::with_clock("x", Config::new(2, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// l.try_acquire_n(&1, 2).unwrap();
    /// l.set_seed(0x1234_5678_9abc_def0_1234_5678_9abc_def0);
    /// assert!(l.try_acquire(&1).is_err()); // its state moved with it
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn set_seed(&self, seed: u128) {
        let reading = self.rate.now();
        self.table.with(|t| {
            let now = t.observe(reading);
            t.reseed(seed, now);
        });
    }

    /// Runs one call for `k` permits (already checked) that may wait `max_wait` units.
    fn take(&self, key: &K, k: u32, max_wait: u64) -> Result<Taken, RateLimitExceeded> {
        let reading = self.rate.now();
        let result = self.table.with(|t| {
            let now = t.observe(reading);
            let (tat, at) = match t.probe(key, now) {
                Probe::Found(i) => (t.slots[i].tat, Ok(i)),
                Probe::Vacant(i) => (0, Err(i)),
                Probe::Full { soonest } => return Err((Reason::KeyCapacity, soonest - now)),
            };
            let (new_tat, wait) = match self.rate.decide(tat, now, k, max_wait) {
                rate::Decision::Now { new_tat } => (new_tat, 0),
                rate::Decision::Wait { new_tat, wait } => (new_tat, wait),
                rate::Decision::Reject { wait } => return Err((Reason::NoPermitInTime, wait)),
            };
            match at {
                Ok(i) => t.slots[i].tat = new_tat,
                Err(i) => t.insert_at(i, key.clone(), new_tat),
            }
            Ok(Taken {
                written: new_tat,
                slot: now.saturating_add(wait),
                wait,
            })
        });
        result.map_err(|(reason, wait)| self.refused(key, reason, wait))
    }

    /// Takes one permit for `key` if it is there now; never waits. A key never seen gets a full
    /// burst; a key the table has no room for is refused with [`Reason::KeyCapacity`].
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let l: KeyedLimiter<&str, _, 8> = KeyedLimiter::with_clock("x", Config::new(1, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// assert!(l.try_acquire(&"a").is_ok());
    /// assert!(l.try_acquire(&"a").is_err());
    /// assert!(l.try_acquire(&"b").is_ok()); // its own quota
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    #[inline]
    pub fn try_acquire(&self, key: &K) -> Result<(), RateLimitExceeded> {
        if !self.rate.enabled() {
            return Ok(());
        }
        self.take(key, 1, 0).map(|_| ())
    }

    /// Takes `k` permits for `key` as one unit if they are all there now. `k = 0` and
    /// `k > permits` are [`AcquireError::InvalidPermits`].
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo_core::{AcquireError, Config, ManualClock};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// assert!(l.try_acquire_n(&1, 3).is_ok());
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
    /// `max_wait`; otherwise rejects at once without changing anything. Dropping or cancelling the
    /// reservation before it is committed returns the permit if no later call for the key was made.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let c = Config::new(2, Duration::from_secs(1))?.with_max_wait(Duration::from_millis(500));
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", c, ManualClock::new(), 0);
    /// l.try_acquire_n(&1, 2).unwrap();
    /// let r = l.reserve(&1).unwrap();
    /// assert_eq!(r.wait_time(), Duration::from_millis(500));
    /// assert!(l.reserve(&1).is_err()); // would wait a second
    /// assert!(r.cancel()); // the permit goes back
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn reserve(&self, key: &K) -> Result<KeyedReservation<'_, K, C, N>, RateLimitExceeded> {
        self.reserve_valid(key, 1, self.rate.max_wait())
    }

    /// Like [`reserve`](Self::reserve), for `k` permits taken as one unit.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let c = Config::new(4, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", c, ManualClock::new(), 0);
    /// l.try_acquire_n(&1, 4).unwrap();
    /// assert_eq!(l.reserve_n(&1, 2).unwrap().wait_time(), Duration::from_millis(500));
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn reserve_n(
        &self,
        key: &K,
        k: u32,
    ) -> Result<KeyedReservation<'_, K, C, N>, AcquireError> {
        self.reserve_units(key, k, self.rate.max_wait())
    }

    /// Like [`reserve_n`](Self::reserve_n), with this call's own `max_wait`.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", Config::new(1, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// l.try_acquire(&1).unwrap();
    /// assert!(l.reserve_n_within(&1, 1, Duration::from_millis(999)).is_err());
    /// assert!(l.reserve_n_within(&1, 1, Duration::from_secs(1)).is_ok());
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn reserve_n_within(
        &self,
        key: &K,
        k: u32,
        max_wait: Duration,
    ) -> Result<KeyedReservation<'_, K, C, N>, AcquireError> {
        self.reserve_units(key, k, self.rate.units(max_wait))
    }

    fn reserve_units(
        &self,
        key: &K,
        k: u32,
        max_wait: u64,
    ) -> Result<KeyedReservation<'_, K, C, N>, AcquireError> {
        self.rate.check_permits(k)?;
        Ok(self.reserve_valid(key, k, max_wait)?)
    }

    fn reserve_valid(
        &self,
        key: &K,
        k: u32,
        max_wait: u64,
    ) -> Result<KeyedReservation<'_, K, C, N>, RateLimitExceeded> {
        if !self.rate.enabled() {
            let now = self.rate.now();
            return Ok(KeyedReservation::new(
                self,
                key.clone(),
                Taken {
                    written: 0,
                    slot: now,
                    wait: 0,
                },
                0,
                k,
            ));
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
    /// If the waiter is interrupted the permit goes back (when no later call for the key was
    /// made) and the call fails with [`Reason::Interrupted`].
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo_core::{AdvanceClock, Clock, Config, ManualClock};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let clock = ManualClock::new();
    /// let c = Config::new(1, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", c, &clock, 0);
    /// l.acquire_with(&1, &mut AdvanceClock).unwrap();
    /// l.acquire_with(&1, &mut AdvanceClock).unwrap();
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

    /// Takes `k` permits for `key` as one unit, waiting with `waiter` as
    /// [`acquire_with`](Self::acquire_with).
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo_core::{AdvanceClock, Clock, Config, ManualClock};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let clock = ManualClock::new();
    /// let c = Config::new(4, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", c, &clock, 0);
    /// l.acquire_n_with(&1, 4, &mut AdvanceClock).unwrap();
    /// l.acquire_n_with(&1, 2, &mut AdvanceClock).unwrap();
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

    /// Calls of one permit `key` would pass right now without waiting, in `0..=permits`: the full
    /// burst for a key never seen, 0 for a new key the full table has no room for. Takes nothing.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// l.try_acquire_n(&1, 3).unwrap();
    /// assert_eq!((l.available_permits(&1), l.available_permits(&2)), (1, 4));
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn available_permits(&self, key: &K) -> u32 {
        if !self.rate.enabled() {
            return self.rate.config().permits();
        }
        let reading = self.rate.now();
        self.table.with(|t| {
            let now = t.observe(reading);
            match t.probe(key, now) {
                Probe::Found(i) => self.rate.available(t.slots[i].tat, now),
                Probe::Vacant(_) => self.rate.config().permits(),
                Probe::Full { .. } => 0,
            }
        })
    }

    /// How long until one permit for `key` would pass without waiting: zero if one is there now;
    /// for a new key the full table has no room for, when the soonest key is idle. Takes nothing.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// l.try_acquire_n(&1, 4).unwrap();
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
    /// # use core::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// l.try_acquire_n(&1, 4).unwrap();
    /// assert_eq!(l.retry_after_n(&1, 2).unwrap(), Duration::from_millis(500));
    /// assert!(l.retry_after_n(&1, 5).is_err());
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn retry_after_n(&self, key: &K, k: u32) -> Result<Duration, crate::error::InvalidPermits> {
        self.rate.check_permits(k)?;
        if !self.rate.enabled() {
            return Ok(Duration::ZERO);
        }
        let reading = self.rate.now();
        let wait = self.table.with(|t| {
            let now = t.observe(reading);
            match t.probe(key, now) {
                Probe::Found(i) => self.rate.wait(t.slots[i].tat, now, k),
                Probe::Vacant(_) => self.rate.wait(0, now, k),
                Probe::Full { soonest } => soonest - now,
            }
        });
        Ok(self.rate.duration(wait))
    }

    /// How many keys are being limited right now (not idle). Idle keys still in the table are
    /// not counted: they are the same as absent. Takes nothing; scans the table.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let clock = ManualClock::new();
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, &clock, 0);
    /// l.try_acquire(&1).unwrap();
    /// l.try_acquire(&2).unwrap();
    /// assert_eq!(l.len(), 2);
    /// clock.advance(Duration::from_millis(250));
    /// assert_eq!(l.len(), 0);
    /// # Ok::<(), ritmo_core::ConfigError>(())
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

    /// Its id, live keys, keys held, capacity and permits per key ([`KeyedSnapshot`]). Takes
    /// nothing; scans the table.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// assert_eq!(l.snapshot().capacity, 8);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn snapshot(&self) -> KeyedSnapshot {
        KeyedSnapshot {
            id: self.id(),
            live_keys: self.len(),
            keys_held: self.keys_held(),
            capacity: N,
            permits: self.config().permits(),
        }
    }

    /// Whether no key is being limited right now.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// assert!(l.is_empty());
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many slots hold a key, live or idle but not yet reclaimed: at most
    /// [`capacity`](Self::capacity).
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let clock = ManualClock::new();
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, &clock, 0);
    /// l.try_acquire(&1).unwrap();
    /// clock.advance(Duration::from_secs(1));
    /// assert_eq!((l.len(), l.keys_held()), (0, 1)); // idle, reclaimed when a probe passes it
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn keys_held(&self) -> usize {
        self.table.with(|t| t.held)
    }

    /// Drops every idle key now, and returns how many keys are left (all of them live). Never
    /// needed, since idle keys are reclaimed whenever a probe passes them; for tests and for
    /// measuring.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let clock = ManualClock::new();
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, &clock, 0);
    /// l.try_acquire(&1).unwrap();
    /// clock.advance(Duration::from_secs(1));
    /// assert_eq!(l.reclaim_idle(), 0);
    /// assert_eq!(l.keys_held(), 0);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn reclaim_idle(&self) -> usize {
        let reading = self.rate.now();
        self.table.with(|t| {
            let now = t.observe(reading);
            t.reclaim(now)
        })
    }

    /// The keys being limited right now, each with the permits it would pass now (in table
    /// order).
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// l.try_acquire_n(&7, 3).unwrap();
    /// let live = l.live_keys();
    /// assert_eq!((live[0].key, live[0].available_permits), (7, 1));
    /// # Ok::<(), ritmo_core::ConfigError>(())
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
                        available_permits: self.rate.available(slot.tat, now),
                    });
                }
            }
            out
        })
    }

    /// Gives back what a reservation took, if the key was not changed since.
    fn refund(&self, key: &K, written: u64, increment: u64) -> bool {
        let reading = self.rate.now();
        self.table.with(|t| {
            let now = t.observe(reading);
            match t.probe(key, now) {
                Probe::Found(i) => match self.rate.refund(t.slots[i].tat, written, increment) {
                    Some(back) => {
                        t.slots[i].tat = back;
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

impl<K: Hash + Eq + Clone, C: ManualTime, const N: usize> KeyedLimiter<K, C, N> {
    /// Takes one permit for `key`, waiting for it by advancing the fake clock to its slot: tests
    /// never sleep.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo_core::{Clock, Config, ManualClock};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let clock = ManualClock::new();
    /// let c = Config::new(2, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", c, &clock, 0);
    /// for _ in 0..3 { l.acquire_advancing(&1).unwrap(); }
    /// assert_eq!(clock.now(), 500_000_000);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn acquire_advancing(&self, key: &K) -> Result<(), RateLimitExceeded> {
        self.acquire_with(key, &mut AdvanceClock)
    }

    /// Takes `k` permits for `key`, advancing the fake clock to their slot if they must wait.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo_core::{Clock, Config, ManualClock};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let clock = ManualClock::new();
    /// let c = Config::new(4, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", c, &clock, 0);
    /// l.acquire_n_advancing(&1, 4).unwrap();
    /// l.acquire_n_advancing(&1, 4).unwrap();
    /// assert_eq!(clock.now(), 1_000_000_000);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn acquire_n_advancing(&self, key: &K, k: u32) -> Result<(), AcquireError> {
        self.acquire_n_with(key, k, &mut AdvanceClock)
    }
}

/// Permits for one key, taken now or reserved for a slot: commit it when the work runs, or let it
/// go. Dropping or [`cancel`](KeyedReservation::cancel)ling it before it is committed returns the
/// permits if no later call for the same key was made since; otherwise its slot stays unused.
///
/// ```
/// # use core::time::Duration;
/// # use ritmo_core::{Config, ManualClock};
/// # use ritmo_core::keyed::KeyedLimiter;
/// let c = Config::new(1, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(5));
/// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", c, ManualClock::new(), 0);
/// let a = l.reserve(&1).unwrap();
/// let b = l.reserve(&1).unwrap();
/// assert!(!a.cancel()); // b is queued behind it
/// assert!(b.cancel());
/// # Ok::<(), ritmo_core::ConfigError>(())
/// ```
#[must_use = "a reservation returns its permits when dropped: commit it once the work runs"]
pub struct KeyedReservation<'a, K: Hash + Eq + Clone + 'static, C: Clock, const N: usize> {
    limiter: &'a KeyedLimiter<K, C, N>,
    key: K,
    taken: Taken,
    increment: u64,
    permits: u32,
    settled: bool,
}

impl<K: Hash + Eq + Clone, C: Clock, const N: usize> fmt::Debug for KeyedReservation<'_, K, C, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedReservation")
            .field("limiter", &self.limiter.id())
            .field("permits", &self.permits)
            .field("wait", &self.wait_time())
            .finish_non_exhaustive()
    }
}

impl<'a, K: Hash + Eq + Clone, C: Clock, const N: usize> KeyedReservation<'a, K, C, N> {
    fn new(
        limiter: &'a KeyedLimiter<K, C, N>,
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

    /// The key it is for.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", Config::new(1, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// assert_eq!(*l.reserve(&3).unwrap().key(), 3);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn key(&self) -> &K {
        &self.key
    }

    /// How many permits it holds.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// assert_eq!(l.reserve_n(&3, 2).unwrap().permits(), 2);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn permits(&self) -> u32 {
        self.permits
    }

    /// How long, from when it was made, the caller must wait for the slot (zero if the permits
    /// were there at once).
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", Config::new(1, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// assert_eq!(l.reserve(&3).unwrap().wait_time(), Duration::ZERO);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn wait_time(&self) -> Duration {
        self.limiter.rate.duration(self.taken.wait)
    }

    /// The slot as a reading of the limiter's clock: the caller may run once the clock reads at
    /// least this.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let c = Config::new(1, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", c, ManualClock::new(), 0);
    /// l.try_acquire(&3).unwrap();
    /// assert_eq!(l.reserve(&3).unwrap().slot(), 1_000_000_000);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn slot(&self) -> u64 {
        self.limiter.rate.reading(self.taken.slot)
    }

    /// How long from now until the slot: zero once it has arrived.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let clock = ManualClock::new();
    /// let c = Config::new(1, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", c, &clock, 0);
    /// l.try_acquire(&3).unwrap();
    /// let r = l.reserve(&3).unwrap();
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
    /// # use core::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", Config::new(1, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// assert!(l.reserve(&3).unwrap().is_ready());
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn is_ready(&self) -> bool {
        self.limiter.rate.now() >= self.taken.slot
    }

    /// Keeps the permits: the work runs (or has run).
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", Config::new(1, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// l.reserve(&3).unwrap().commit();
    /// assert_eq!(l.available_permits(&3), 0);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn commit(mut self) {
        self.settled = true;
    }

    /// Gives the reservation up before its work runs; returns whether its permits went back.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", Config::new(1, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// assert!(l.reserve(&3).unwrap().cancel());
    /// assert_eq!(l.available_permits(&3), 1);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn cancel(mut self) -> bool {
        self.release(Reason::Cancelled)
    }

    /// Gives the reservation up because its waiter was interrupted, and returns the error the
    /// call should fail with ([`Reason::Interrupted`], `retry_after` the time left to the slot).
    /// For adapters that implement their own waiting.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo_core::{Config, ManualClock, Reason};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let c = Config::new(1, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", c, ManualClock::new(), 0);
    /// l.try_acquire(&3).unwrap();
    /// let err = l.reserve(&3).unwrap().interrupted();
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
    /// # use core::time::Duration;
    /// # use ritmo_core::{AdvanceClock, Clock, Config, ManualClock};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let clock = ManualClock::new();
    /// let c = Config::new(1, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", c, &clock, 0);
    /// l.try_acquire(&3).unwrap();
    /// l.reserve(&3).unwrap().wait_with(&mut AdvanceClock).unwrap();
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
        let returned = self
            .limiter
            .refund(&self.key, self.taken.written, self.increment);
        let limiter = self.limiter;
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

impl<K: Hash + Eq + Clone, C: Clock, const N: usize> Drop for KeyedReservation<'_, K, C, N> {
    fn drop(&mut self) {
        self.release(Reason::Cancelled);
    }
}
