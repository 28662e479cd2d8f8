//! [`Keyed`]: the one keyed limiter, whatever store holds its keys: the rules every key follows
//! and a [`KeyedStore`] of the keys' states.

use core::fmt;

use super::key_rules::KeyRules;
use super::store::KeyedStore;
use crate::event::Listener;
use crate::keyed::KeyListener;

/// A limiter that applies its config to each key separately: the one keyed limiter, whatever
/// holds its keys. `S` is the store of the keys' states: ritmo-core's heap-free
/// [`FixedTable`](super::FixedTable) ([`KeyedLimiter`](super::KeyedLimiter), for a `static` on an
/// MCU) or ritmo-std's sharded map (`KeyedRateLimiter`, for servers). Both are this type, with
/// the same verbs, written once (`try_acquire`, `reserve_n`, `available_permits`, ...).
///
/// ```
/// use core::time::Duration;
/// use ritmo::{Config, ManualClock};
/// use ritmo::keyed::{Keyed, KeyedLimiter, KeyedStore};
///
/// // Written once for every keyed limiter, whatever holds its keys.
/// fn admit<S: KeyedStore<u32>>(limiter: &Keyed<u32, S>, peer: u32) -> bool {
///     limiter.try_acquire(&peer).is_ok()
/// }
/// let peers: KeyedLimiter<u32, _, 8> =
///     KeyedLimiter::with_clock("peers", Config::new(1, Duration::from_secs(1))?, ManualClock::new(), 0);
/// assert!(admit(&peers, 7));
/// assert!(!admit(&peers, 7));
/// # Ok::<(), ritmo::ConfigError>(())
/// ```
pub struct Keyed<K: 'static, S: KeyedStore<K>> {
    pub(super) store: S,
    pub(super) rules: KeyRules<K, S::Clock, S::Tiers>,
}

impl<K: 'static, S: KeyedStore<K> + fmt::Debug> fmt::Debug for Keyed<K, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Keyed")
            .field("id", &self.rules.rate.id())
            .field("config", &self.rules.rate.config())
            .field("has_key_listener", &self.rules.key_listener.is_some())
            .field("store", &self.store)
            .finish_non_exhaustive()
    }
}

impl<K: 'static, S: KeyedStore<K>> Keyed<K, S> {
    /// A keyed limiter of `rules` over `store`: how a store of a user's own is put to work (the
    /// stores of ritmo's crates have constructors of their own).
    pub const fn from_parts(rules: KeyRules<K, S::Clock, S::Tiers>, store: S) -> Self {
        Keyed { rules, store }
    }

    /// The rules every key follows (its id, config, clock and tiers).
    pub const fn key_rules(&self) -> &KeyRules<K, S::Clock, S::Tiers> {
        &self.rules
    }

    /// The store of the keys' states.
    pub const fn store(&self) -> &S {
        &self.store
    }

    /// The same limiter, reporting rejections and released reservations to `listener`, which
    /// hears the limiter's id but never the key (keys are often personal data); in a `const`
    /// context if need be (a `static`).
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::{const_config, Event, Listener, ManualClock};
    /// use ritmo::keyed::KeyedLimiter;
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
        self.rules.rate.set_listener(listener);
        self
    }

    /// The same limiter, also reporting each event with its key to `listener` (opt-in: see
    /// [`KeyListener`]).
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{Config, Event, ManualClock};
    /// # use ritmo::keyed::{KeyListener, KeyedLimiter};
    /// struct Audit;
    /// impl KeyListener<u32> for Audit { fn on_event(&self, _key: &u32, _event: &Event) {} }
    /// let peers: KeyedLimiter<u32, _, 4> =
    ///     KeyedLimiter::with_clock("peers", Config::new(1, Duration::from_secs(1))?, ManualClock::new(), 0)
    ///         .with_key_listener(&Audit);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    #[must_use]
    pub const fn with_key_listener(mut self, listener: &'static dyn KeyListener<K>) -> Self {
        self.rules.key_listener = Some(listener);
        self
    }
}
