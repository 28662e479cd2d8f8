//! Owned reservations: a reservation that keeps its limiter alive with an `Arc` instead of
//! borrowing it, as tokio's `OwnedSemaphorePermit` beside `SemaphorePermit`. It is the same
//! [`Held`] (commit; cancel, drop or interrupt by the tail rule), so a server or client layer
//! holds one across `.await`, or moves it into a task, without a lock or an allocation.

use core::time::Duration;
use std::hash::Hash;
use std::sync::Arc;

use ritmo_core::keyed::{KeyCharge, OneTier, TierSet};
use ritmo_core::{
    AcquireError, Bands, BandsCharge, Clock, Held, Holder, LimiterCharge, RateLimiter,
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

/// Reserves permits of a limiter shared by `Arc`, as a reservation that owns it: one verb for
/// every kind ([`RateLimiter`] and [`Bands`] with key `()`, [`KeyedRateLimiter`] with its key,
/// tiered or not).
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use ritmo::{Config, ManualClock, RateLimiter};
/// use ritmo::server::{OwnedReservation, ReserveOwned};
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
pub trait ReserveOwned {
    /// What the limiter is keyed by: `()` for one quota (a limiter, bands).
    type Key: ?Sized;
    /// Its owned reservation.
    type Reservation;

    /// Takes `permits` for `key` now, or reserves them if their slot comes within `max_wait`
    /// (`None`: the config's own); otherwise refuses at once without changing anything.
    fn reserve_owned(
        &self,
        key: &Self::Key,
        permits: u32,
        max_wait: Option<Duration>,
    ) -> Result<Self::Reservation, AcquireError>;
}

/// The reservation `reserved` made on `arc`'s limiter, owning it through `arc`.
fn own<H: Holder<T>, T>(arc: &Arc<H>, reserved: Held<&H, T>) -> Held<Arc<H>, T> {
    match reserved.with_handle(Arc::clone(arc)) {
        Ok(owned) => owned,
        // Made on `**arc` by the caller.
        Err(_) => unreachable!("a reservation made on the limiter the `Arc` holds"),
    }
}

impl<C: Clock> ReserveOwned for Arc<RateLimiter<C>> {
    type Key = ();
    type Reservation = OwnedReservation<C>;

    fn reserve_owned(
        &self,
        _key: &(),
        permits: u32,
        max_wait: Option<Duration>,
    ) -> Result<OwnedReservation<C>, AcquireError> {
        let reserved = match max_wait {
            None => self.reserve_n(permits)?,
            Some(max_wait) => self.reserve_n_within(permits, max_wait)?,
        };
        Ok(own(self, reserved))
    }
}

impl<C: Clock, const B: usize> ReserveOwned for Arc<Bands<C, B>> {
    type Key = ();
    type Reservation = OwnedBandsReservation<C, B>;

    fn reserve_owned(
        &self,
        _key: &(),
        permits: u32,
        max_wait: Option<Duration>,
    ) -> Result<OwnedBandsReservation<C, B>, AcquireError> {
        let reserved = match max_wait {
            None => self.reserve_n(permits)?,
            Some(max_wait) => self.reserve_n_within(permits, max_wait)?,
        };
        Ok(own(self, reserved))
    }
}

impl<K: Hash + Eq + Clone + 'static, C: Clock, P: TierSet<K>> ReserveOwned
    for Arc<KeyedRateLimiter<K, C, P>>
{
    type Key = K;
    type Reservation = OwnedKeyedReservation<K, C, P>;

    fn reserve_owned(
        &self,
        key: &K,
        permits: u32,
        max_wait: Option<Duration>,
    ) -> Result<OwnedKeyedReservation<K, C, P>, AcquireError> {
        let reserved = match max_wait {
            None => self.reserve_n(key, permits)?,
            Some(max_wait) => self.reserve_n_within(key, permits, max_wait)?,
        };
        Ok(own(self, reserved))
    }
}
