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
//! lazily: a probe that passes an idle key frees its slot (in a table of 1024 slots or more, when
//! a new key wants its room: see below). There is no sweeper to run and no `retain_recent` to
//! forget, and a key still being limited (`tat > now`) is never dropped, so a client cannot win a
//! fresh burst by flooding the table with new keys.
//!
//! # Bounded memory
//!
//! The table is a fixed array of `N` slots, with no heap, and can be a `static`. When it holds
//! its [`capacity`](Keyed::capacity) of keys still being limited, a new key is rejected
//! with [`Reason::KeyCapacity`], whose `retry_after` is when the soonest of them is idle; keys
//! already in the table carry on as before. Size `N` for the clients you expect to be limited at
//! once.
//!
//! Below 1024 slots every slot can hold a key, and a new key into a full table is refused after
//! a look at all `N`. From 1024 slots the table holds three quarters of its slots' worth of keys
//! ([`capacity`](Keyed::capacity)) and keeps the rest empty, so that a call costs about
//! the same whatever the table holds: a lookup ends at an empty slot within a few slots, a new key
//! into a table at its capacity takes the place of the soonest key if that is idle, and a
//! refusal finds the soonest key from bounds the table keeps per block of about `√N` slots in
//! the last of its slots, looking into a block only when its bound is below the soonest state:
//! when the block's soonest key was used since the table last looked. No call passes over the
//! whole table to make room or to refuse, unless the soonest key of every block was used since;
//! then that one call looks at every block, and leaves every bound exact.
//!
//! ```
//! use core::time::Duration;
//! use ritmo::{const_config, ManualClock, Reason};
//! use ritmo::keyed::KeyedLimiter;
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
//! # Per-key quotas
//!
//! With [`Tiers`] each key gets the config of its own tier ("free", "paid"), picked by a plain
//! function of the key: [`KeyedLimiter::tiered`]. A key whose tier changes is reconfigured alone,
//! with no fresh burst.
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
//!
//! [`Reason::KeyCapacity`]: crate::Reason::KeyCapacity

mod acquire;
mod front;
mod key_rules;
mod limiter;
#[cfg(feature = "reconfigure")]
mod live;
pub(crate) mod persist;
mod rate;
mod reservation;
mod rules;
mod state;
mod store;
mod table;
mod tiered;
mod tiers;

pub use key_rules::KeyRules;
pub use limiter::Keyed;
pub use rate::{KeyRate, Settled};
pub use reservation::{KeyCharge, KeyReservation};
pub use rules::Taken;
pub use rules::{Decision, TierRules};
pub use state::KeyCell;
pub use store::{
    ClockedStore, ConvertKeys, KeyedStore, KeysChange, NewStore, Peek, Peeked, StoreRules,
};
pub use tiers::{OneTier, Tier, TierSet, Tiers};

use core::fmt;
use core::hash::Hash;
use core::marker::PhantomData;

use crate::clock::{Clock, FixedRateClock};
use crate::config::Config;
use crate::event::Event;
use crate::sync::Lock;
use table::Table;

/// Receives a keyed limiter's events together with the key they are about. Opt-in
/// ([`KeyedLimiter::with_key_listener`]): keys are often personal data, so a plain
/// [`Listener`](crate::Listener) only ever hears the limiter's id.
///
/// ```
/// use core::time::Duration;
/// use portable_atomic::{AtomicU32, Ordering};
/// use ritmo::{const_config, Event, ManualClock};
/// use ritmo::keyed::{KeyListener, KeyedLimiter};
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
/// use ritmo::{Config, ManualClock};
/// use ritmo::keyed::{KeySnapshot, KeyedLimiter};
/// let peers: KeyedLimiter<u8, _, 4> =
///     KeyedLimiter::with_clock("peers", Config::new(3, Duration::from_secs(1))?, ManualClock::new(), 9);
/// peers.try_acquire(&1).unwrap();
/// assert_eq!(peers.live_keys().as_slice(), &[KeySnapshot::new(1, 2)]);
/// # Ok::<(), ritmo::ConfigError>(())
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
    /// let _ = ritmo::keyed::KeySnapshot { key: 1u8, available_permits: 2 };
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
/// use ritmo::{Config, ManualClock};
/// use ritmo::keyed::{KeyedLimiter, KeyedSnapshot};
/// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("peers", Config::new(2, Duration::from_secs(1))?, ManualClock::new(), 0);
/// l.try_acquire(&1).unwrap();
/// assert_eq!(l.snapshot(), KeyedSnapshot::new("peers", 1, 1, 8, 2));
/// let s = l.snapshot();
/// assert_eq!((s.id, s.live_keys, s.keys_held, s.capacity, s.permits), ("peers", 1, 1, 8, 2));
/// # Ok::<(), ritmo::ConfigError>(())
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
    /// let _ = ritmo::keyed::KeyedSnapshot { id: "x", live_keys: 0, keys_held: 0, capacity: 1, permits: 1 };
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

/// A limiter that applies one config to each key separately, in a fixed table of `N` slots with no
/// heap: [`Keyed`] over a [`FixedTable`]. See the [module docs](self) for how idle keys are
/// reclaimed and what happens when the table is full.
///
/// `N = 0` does not compile:
///
/// ```compile_fail
/// use core::time::Duration;
/// use ritmo::{const_config, ManualClock};
/// use ritmo::keyed::KeyedLimiter;
/// static CLOCK: ManualClock = ManualClock::new();
/// static EMPTY: KeyedLimiter<u32, &ManualClock, 0> =
///     KeyedLimiter::new("none", const_config!(1, Duration::from_secs(1)), &CLOCK, 0);
/// ```
///
/// With `P` = [`Tiers`], each key gets the config of its own tier: see
/// [`tiered`](Keyed::tiered) and [`Tiers`].
pub type KeyedLimiter<K, C, const N: usize, P = OneTier> = Keyed<K, FixedTable<K, C, N, P>>;

/// The heap-free store of a [`KeyedLimiter`]: a fixed table of `N` slots, open addressing with
/// keys hashed by SipHash-1-3 under a seed, one critical section per call.
pub struct FixedTable<K: 'static, C, const N: usize, P: TierSet<K> = OneTier> {
    pub(super) table: Lock<Table<K, N, P::Index>>,
    rules: PhantomData<fn() -> (C, P)>,
}

impl<K, C, const N: usize, P: TierSet<K>> fmt::Debug for FixedTable<K, C, N, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FixedTable")
            .field("capacity", &Table::<K, N, P::Index>::CAP)
            .finish_non_exhaustive()
    }
}

impl<K: Hash + Eq + Clone, C: FixedRateClock, const N: usize> KeyedLimiter<K, C, N> {
    const_fn! {
    /// A keyed limiter named `id` applying `config` to each key, on `clock`, hashing keys with
    /// `seed`; in a `const` context if need be (a `static`).
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::{const_config, ManualClock};
    /// use ritmo::keyed::KeyedLimiter;
    /// static CLOCK: ManualClock = ManualClock::new();
    /// static NODES: KeyedLimiter<u16, &ManualClock, 32> =
    ///     KeyedLimiter::new("nodes", const_config!(10, Duration::from_secs(60)), &CLOCK, 0xC0FFEE);
    /// assert_eq!(NODES.available_permits(&3), 10);
    /// ```
    pub fn new(id: &'static str, config: Config, clock: C, seed: u128) -> Self {
        Self::of(KeyRules::new(id, config, clock), seed)
    }
    }
}

impl<K: Hash + Eq + Clone, C: Clock, const N: usize> KeyedLimiter<K, C, N> {
    /// A keyed limiter on a clock whose tick rate is known only at run time.
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::{Config, ManualClock};
    /// use ritmo::keyed::KeyedLimiter;
    /// let users: KeyedLimiter<&str, _, 16> =
    ///     KeyedLimiter::with_clock("users", Config::new(5, Duration::from_secs(1))?, ManualClock::new(), 42);
    /// assert!(users.try_acquire(&"ada").is_ok());
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn with_clock(id: &'static str, config: Config, clock: C, seed: u128) -> Self {
        Self::of(KeyRules::with_clock(id, config, clock), seed)
    }
}

impl<K: Hash + Eq + Clone, C: Clock, const N: usize, P: TierSet<K>> KeyedLimiter<K, C, N, P> {
    const_fn! {
    /// A table of `N` slots hashing keys with `seed`, its keys following `rules`.
    pub(super) fn of(rules: KeyRules<K, C, P>, seed: u128) -> Self {
        const {
            assert!(
                N > 0 && N <= u32::MAX as usize,
                "a keyed table needs 1..=u32::MAX slots"
            )
        };
        Keyed::from_parts(
            rules,
            FixedTable {
                table: Lock::new(Table::new(seed)),
                rules: PhantomData,
            },
        )
    }
    }
}

impl<K: Hash + Eq + Clone, C: Clock, const N: usize> KeyedLimiter<K, C, N> {
    /// Hashes keys with `seed` from now on: every key held is moved to where the new seed puts it,
    /// keeping its state. For a `static` limiter seeded at start-up from a random number
    /// generator. Uses a second table's worth of stack while it moves them.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::keyed::KeyedLimiter;
    /// let l: KeyedLimiter<u32, _, 8> = KeyedLimiter::with_clock("x", Config::new(2, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// l.try_acquire_n(&1, 2).unwrap();
    /// l.set_seed(0x1234_5678_9abc_def0_1234_5678_9abc_def0);
    /// assert!(l.try_acquire(&1).is_err()); // its state moved with it
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn set_seed(&self, seed: u128) {
        let reading = self.rules.rate.now();
        self.store.table.with(|t| {
            let now = t.observe(reading);
            t.reseed(seed, now);
        });
    }
}

/// Permits for one key of a [`KeyedLimiter`], taken now or reserved for a slot (see
/// [`KeyReservation`]).
pub type KeyedReservation<'a, K, C, const N: usize, P = OneTier> =
    KeyReservation<'a, K, KeyedLimiter<K, C, N, P>>;
