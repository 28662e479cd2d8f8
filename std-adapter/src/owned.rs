//! Owned reservations: a reservation that keeps its limiter alive with an `Arc` instead of
//! borrowing it, as tokio's `OwnedSemaphorePermit` beside `SemaphorePermit`. It is the same
//! [`Held`] (commit; cancel, drop or interrupt by the tail rule), so a server or client layer
//! holds one across `.await`, or moves it into a task, without a lock or an allocation.

use core::time::Duration;
use std::hash::Hash;
use std::sync::Arc;

use ritmo_core::keyed::{KeyCharge, KeyReservation, Keyed, KeyedStore, OneTier};
use ritmo_core::{
    AcquireError, Bands, BandsCharge, BandsReservation, Clock, Held, Holder, LimiterCharge,
    RateLimiter, Reservation,
};

use crate::KeyedRateLimiter;

/// A [`RateLimiter`]'s reservation that owns the limiter through an `Arc`.
pub type OwnedReservation<C> = Held<Arc<RateLimiter<C>>, LimiterCharge>;

/// A [`Bands`]' reservation that owns the bands through an `Arc`.
pub type OwnedBandsReservation<C, const B: usize> = Held<Arc<Bands<C, B>>, BandsCharge<B>>;

/// A [`KeyedRateLimiter`]'s reservation (one key's permits) that owns the limiter through an
/// `Arc`.
pub type OwnedKeyedReservation<K, C, P = OneTier> =
    Held<Arc<KeyedRateLimiter<K, C, P>>, KeyCharge<K>>;

/// A limiter of any kind, as the server and client layers take it: permits taken for good, or
/// reserved, borrowing the limiter or, shared by `Arc`, owning it. One trait for every kind
/// ([`RateLimiter`] and [`Bands`] with key `()`, [`KeyedRateLimiter`] with its key, tiered or not).
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use ritmo::{Config, ManualClock, RateLimiter};
/// use ritmo::server::{Limit, OwnedReservation};
///
/// let config = Config::new(1, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
/// let limiter = Arc::new(RateLimiter::new("api", config, ManualClock::new()));
/// let first: OwnedReservation<_> = limiter.reserve_owned(&(), 1, None)?;
/// let second = limiter.reserve_owned(&(), 1, None)?; // the slot 1 s away
/// assert_eq!(second.wait_time(), Duration::from_secs(1));
/// let task = std::thread::spawn(move || second.cancel()); // 'static: it owns the limiter
/// assert!(task.join().unwrap()); // the newest: its permit went back
/// first.commit();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Limit: Holder<<Self as Limit>::Charge> + Send + Sync + Sized + 'static {
    /// What the limiter is keyed by: `()` for one quota (a limiter, bands).
    type Key: ?Sized;
    /// What its reservations charge ([`LimiterCharge`], [`BandsCharge`], [`KeyCharge`]).
    type Charge: Send + 'static;

    /// Takes `permits` for `key` now, or reserves them if their slot comes within `max_wait`
    /// (`None`: the config's own); otherwise refuses at once without changing anything.
    fn reserve_for(
        &self,
        key: &Self::Key,
        permits: u32,
        max_wait: Option<Duration>,
    ) -> Result<Held<&Self, Self::Charge>, AcquireError>;

    /// Takes `permits` for `key` now, for good, or refuses at once.
    fn try_acquire_for(&self, key: &Self::Key, permits: u32) -> Result<(), AcquireError>;

    /// [`reserve_for`](Self::reserve_for), as a reservation that owns the limiter through the
    /// `Arc` (held across `.await`, moved into a task).
    fn reserve_owned(
        self: &Arc<Self>,
        key: &Self::Key,
        permits: u32,
        max_wait: Option<Duration>,
    ) -> Result<Held<Arc<Self>, Self::Charge>, AcquireError> {
        let reserved = self.reserve_for(key, permits, max_wait)?;
        match reserved.with_handle(Arc::clone(self)) {
            Ok(owned) => Ok(owned),
            // Made on `**self` just above.
            Err(_) => unreachable!("a reservation made on the limiter the `Arc` holds"),
        }
    }
}

impl<C: Clock + Send + Sync + 'static> Limit for RateLimiter<C> {
    type Key = ();
    type Charge = LimiterCharge;

    fn reserve_for(
        &self,
        _key: &(),
        permits: u32,
        max_wait: Option<Duration>,
    ) -> Result<Reservation<'_, C>, AcquireError> {
        match max_wait {
            None => self.reserve_n(permits),
            Some(max_wait) => self.reserve_n_within(permits, max_wait),
        }
    }

    #[inline]
    fn try_acquire_for(&self, _key: &(), permits: u32) -> Result<(), AcquireError> {
        if permits == 1 {
            self.try_acquire().map_err(AcquireError::from)
        } else {
            self.try_acquire_n(permits)
        }
    }
}

impl<C: Clock + Send + Sync + 'static, const B: usize> Limit for Bands<C, B> {
    type Key = ();
    type Charge = BandsCharge<B>;

    fn reserve_for(
        &self,
        _key: &(),
        permits: u32,
        max_wait: Option<Duration>,
    ) -> Result<BandsReservation<'_, C, B>, AcquireError> {
        match max_wait {
            None => self.reserve_n(permits),
            Some(max_wait) => self.reserve_n_within(permits, max_wait),
        }
    }

    fn try_acquire_for(&self, _key: &(), permits: u32) -> Result<(), AcquireError> {
        self.try_acquire_n(permits)
    }
}

/// Every keyed limiter, whatever its store (the std map, the fixed table).
impl<K, S> Limit for Keyed<K, S>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    S: KeyedStore<K> + 'static,
    Keyed<K, S>: Send + Sync,
{
    type Key = K;
    type Charge = KeyCharge<K>;

    fn reserve_for(
        &self,
        key: &K,
        permits: u32,
        max_wait: Option<Duration>,
    ) -> Result<KeyReservation<'_, K, Keyed<K, S>>, AcquireError> {
        match max_wait {
            None => self.reserve_n(key, permits),
            Some(max_wait) => self.reserve_n_within(key, permits, max_wait),
        }
    }

    #[inline]
    fn try_acquire_for(&self, key: &K, permits: u32) -> Result<(), AcquireError> {
        if permits == 1 {
            self.try_acquire(key).map_err(AcquireError::from)
        } else {
            self.try_acquire_n(key, permits)
        }
    }
}
