//! Async waits on tokio's timer ([`AsyncExt`]), and [`TokioClock`], a clock on
//! `tokio::time::Instant` (feature `tokio`).
//!
//! A call that must wait is a future that sleeps with `tokio::time::sleep_until` until its slot,
//! without blocking a thread. The permit is kept from the poll that finds the slot arrived:
//! dropping the future before that poll drops its reservation, which gives the permit back
//! (unless a later call already reserved one behind it) and the wrapped work, never polled, never
//! runs. This holds even if the slot's time has already passed when the future is dropped: what
//! counts is whether it was polled since. Once the work has started, the permit is kept, also if
//! the work's future is dropped half-way.
//!
//! ```
//! use std::time::Duration;
//! use ritmo::{Config, RateLimiter};
//! use ritmo::server::tokio::{AsyncExt, TokioClock};
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<(), ritmo::ConfigError> {
//! let config = Config::new(1, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(5));
//! let limiter = RateLimiter::new("api", config, TokioClock::new());
//! limiter.acquire_async().await.unwrap(); // the burst of one
//! let waiting = limiter.call_async(async { "sent" });
//! // Dropped without being polled past its slot: the permit goes back, nothing is sent.
//! tokio::time::advance(Duration::from_secs(2)).await;
//! drop(waiting);
//! assert_eq!(limiter.available_permits(), 1);
//! # Ok(())
//! # }
//! ```
//!
//! Any clock works: the time left to the slot is converted with the clock's tick rate, slept,
//! and the clock read again. In tests with tokio's paused time (`start_paused = true`,
//! `tokio::time::advance`), use [`TokioClock`]: it reads tokio's clock, so the limiter sees the
//! paused time too, while [`StdClock`](crate::StdClock) keeps reading the CPU's.

use core::future::Future;
use core::time::Duration;

use ritmo_core::{
    AcquireError, AsyncClock, Clock, FixedRateClock, Held, Holder, RateLimitExceeded, RateLimiter,
    TickRate,
};

mod sealed {
    pub trait Sealed {}
    impl<C: ritmo_core::Clock> Sealed for ritmo_core::RateLimiter<C> {}
}

/// Async waits and call wrappers for a [`RateLimiter`] on any clock (feature `tokio`).
///
/// A rejection is an `Err` at once; a waiting call sleeps on tokio's timer until its slot.
///
/// ```
/// use std::time::Duration;
/// use ritmo::Config;
/// use ritmo::server::tokio::AsyncExt;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let config = Config::new(2, Duration::from_millis(20))?.with_max_wait(Duration::from_millis(50));
/// let limiter = ritmo::server::limiter("search", config);
/// limiter.acquire_async().await?; // the burst of 2
/// limiter.acquire_async().await?;
/// let hits = limiter.call_async(async { 42 }).await?; // sleeps ~10 ms, then runs
/// assert_eq!(hits, 42);
/// # Ok(())
/// # }
/// ```
pub trait AsyncExt: sealed::Sealed {
    /// Takes one permit, sleeping until its slot if it arrives within `max_wait`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ritmo::{Config, Reason};
    /// use ritmo::server::tokio::AsyncExt;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), ritmo::ConfigError> {
    /// let limiter = ritmo::server::limiter("api", Config::new(1, Duration::from_secs(60))?);
    /// assert!(limiter.acquire_async().await.is_ok());
    /// let err = limiter.acquire_async().await.unwrap_err(); // max_wait 0: at once
    /// assert_eq!(err.reason(), Reason::NoPermitInTime);
    /// # Ok(())
    /// # }
    /// ```
    fn acquire_async(&self) -> impl Future<Output = Result<(), RateLimitExceeded>>;

    /// Takes `k` permits as one unit, sleeping until their slot if it arrives within `max_wait`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ritmo::Config;
    /// use ritmo::server::tokio::AsyncExt;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), ritmo::ConfigError> {
    /// let uart = ritmo::server::limiter("uart", Config::new(64, Duration::from_millis(10))?);
    /// assert!(uart.acquire_n_async(64).await.is_ok());
    /// assert!(uart.acquire_n_async(65).await.is_err());
    /// # Ok(())
    /// # }
    /// ```
    fn acquire_n_async(&self, k: u32) -> impl Future<Output = Result<(), AcquireError>>;

    /// Runs the future `work` once a permit is had; rejected (or dropped before its slot), it is
    /// never polled.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ritmo::Config;
    /// use ritmo::server::tokio::AsyncExt;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), ritmo::ConfigError> {
    /// let limiter = ritmo::server::limiter("api", Config::new(1, Duration::from_secs(60))?);
    /// assert_eq!(limiter.call_async(async { "ok" }).await, Ok("ok"));
    /// assert!(limiter.call_async(async { unreachable!() }).await.is_err());
    /// # Ok(())
    /// # }
    /// ```
    fn call_async<F: Future>(
        &self,
        work: F,
    ) -> impl Future<Output = Result<F::Output, RateLimitExceeded>>;

    /// Runs the fallible future `work` once a permit is had; a rejection becomes the caller's
    /// error type through `From<RateLimitExceeded>`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ritmo::{Config, RateLimitExceeded};
    /// use ritmo::server::tokio::AsyncExt;
    ///
    /// #[derive(Debug)]
    /// struct Busy(RateLimitExceeded);
    /// impl From<RateLimitExceeded> for Busy {
    ///     fn from(e: RateLimitExceeded) -> Self { Busy(e) }
    /// }
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), ritmo::ConfigError> {
    /// let limiter = ritmo::server::limiter("api", Config::new(1, Duration::from_secs(60))?);
    /// assert_eq!(limiter.try_call_async(async { Ok::<_, Busy>(1) }).await.unwrap(), 1);
    /// assert!(limiter.try_call_async(async { Ok::<_, Busy>(2) }).await.is_err());
    /// # Ok(())
    /// # }
    /// ```
    fn try_call_async<T, E, F>(&self, work: F) -> impl Future<Output = Result<T, E>>
    where
        E: From<RateLimitExceeded>,
        F: Future<Output = Result<T, E>>;

    /// Runs the future `work` once `k` permits are had, as one unit (see
    /// [`acquire_n_async`](AsyncExt::acquire_n_async)).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ritmo::Config;
    /// use ritmo::server::tokio::AsyncExt;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), ritmo::ConfigError> {
    /// let uart = ritmo::server::limiter("uart", Config::new(64, Duration::from_secs(60))?);
    /// assert_eq!(uart.call_n_async(60, async { 60 }).await, Ok(60));
    /// assert!(uart.call_n_async(5, async { 5 }).await.is_err()); // only 4 left
    /// # Ok(())
    /// # }
    /// ```
    fn call_n_async<F: Future>(
        &self,
        k: u32,
        work: F,
    ) -> impl Future<Output = Result<F::Output, AcquireError>>;

    /// Runs the fallible future `work` once `k` permits are had; a refusal becomes the caller's
    /// error type through `From<AcquireError>`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ritmo::{AcquireError, Config};
    /// use ritmo::server::tokio::AsyncExt;
    ///
    /// #[derive(Debug)]
    /// struct SendError(AcquireError);
    /// impl From<AcquireError> for SendError {
    ///     fn from(e: AcquireError) -> Self { SendError(e) }
    /// }
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), ritmo::ConfigError> {
    /// let uart = ritmo::server::limiter("uart", Config::new(8, Duration::from_secs(60))?);
    /// assert!(uart.try_call_n_async(8, async { Ok::<_, SendError>(()) }).await.is_ok());
    /// assert!(uart.try_call_n_async(9, async { Ok::<_, SendError>(()) }).await.is_err());
    /// # Ok(())
    /// # }
    /// ```
    fn try_call_n_async<T, E, F>(&self, k: u32, work: F) -> impl Future<Output = Result<T, E>>
    where
        E: From<AcquireError>,
        F: Future<Output = Result<T, E>>;
}

/// Sleeps until the reservation's slot, then keeps it: any kind's reservation (one limiter's, a
/// keyed limiter's). Dropped before the poll that finds the slot arrived, the reservation goes
/// with it and gives its permits back.
pub(crate) async fn wait_for_slot<R: core::ops::Deref<Target: Holder<T>>, T>(
    reservation: Held<R, T>,
) {
    sleep_until_reading(reservation.limiter().holder_clock(), reservation.slot()).await;
    reservation.commit();
}

/// Sleeps on tokio's timer until the clock reads `deadline`, re-reading it after each sleep.
async fn sleep_until_reading<C: Clock + ?Sized>(clock: &C, deadline: u64) {
    let rate = clock.tick_rate();
    loop {
        let now = clock.now();
        if now >= deadline {
            break;
        }
        let left = rate.duration_ceil(deadline - now);
        tokio::time::sleep_until(tokio::time::Instant::now() + left).await;
    }
}

/// Sleeps on tokio's timer until the slot (feature `tokio`).
impl AsyncClock for crate::StdClock {
    fn sleep_until(&self, deadline: u64) -> impl Future<Output = ()> {
        sleep_until_reading(self, deadline)
    }
}

/// Sleeps on tokio's timer until the slot (feature `tokio`).
impl AsyncClock for crate::InstantClock {
    fn sleep_until(&self, deadline: u64) -> impl Future<Output = ()> {
        sleep_until_reading(self, deadline)
    }
}

/// Sleeps on tokio's timer until the slot: under tokio's paused test clock, the sleep ends when
/// the test's time reaches it.
impl AsyncClock for TokioClock {
    fn sleep_until(&self, deadline: u64) -> impl Future<Output = ()> {
        sleep_until_reading(self, deadline)
    }
}

impl<C: Clock> AsyncExt for RateLimiter<C> {
    async fn acquire_async(&self) -> Result<(), RateLimitExceeded> {
        wait_for_slot(self.reserve()?).await;
        Ok(())
    }

    async fn acquire_n_async(&self, k: u32) -> Result<(), AcquireError> {
        wait_for_slot(self.reserve_n(k)?).await;
        Ok(())
    }

    async fn call_async<F: Future>(&self, work: F) -> Result<F::Output, RateLimitExceeded> {
        self.acquire_async().await?;
        Ok(work.await)
    }

    async fn try_call_async<T, E, F>(&self, work: F) -> Result<T, E>
    where
        E: From<RateLimitExceeded>,
        F: Future<Output = Result<T, E>>,
    {
        self.acquire_async().await?;
        work.await
    }

    async fn call_n_async<F: Future>(&self, k: u32, work: F) -> Result<F::Output, AcquireError> {
        self.acquire_n_async(k).await?;
        Ok(work.await)
    }

    async fn try_call_n_async<T, E, F>(&self, k: u32, work: F) -> Result<T, E>
    where
        E: From<AcquireError>,
        F: Future<Output = Result<T, E>>,
    {
        self.acquire_n_async(k).await?;
        work.await
    }
}

/// A clock on `tokio::time::Instant`: nanoseconds since the clock was made. Under tokio's paused
/// test clock it reads the paused time, so limiters on it follow `tokio::time::advance`.
///
/// ```
/// use std::time::Duration;
/// use ritmo::{Clock, Config, RateLimiter};
/// use ritmo::server::tokio::{AsyncExt, TokioClock};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() -> Result<(), ritmo::ConfigError> {
/// let clock = TokioClock::new();
/// let config = Config::new(1, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(5));
/// let limiter = RateLimiter::new("api", config, clock);
/// limiter.acquire_async().await.unwrap();
/// limiter.acquire_async().await.unwrap(); // paused time jumps to the slot
/// assert!(clock.now() >= 1_000_000_000);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokioClock {
    epoch: tokio::time::Instant,
}

impl TokioClock {
    /// A clock reading 0 now.
    ///
    /// ```
    /// use ritmo::Clock;
    /// assert!(ritmo::server::tokio::TokioClock::new().now() < 1_000_000_000);
    /// ```
    pub fn new() -> Self {
        TokioClock {
            epoch: tokio::time::Instant::now(),
        }
    }

    /// The instant a reading stands for.
    ///
    /// ```
    /// use ritmo::Clock;
    /// let clock = ritmo::server::tokio::TokioClock::new();
    /// assert!(clock.instant_at(clock.now()) <= tokio::time::Instant::now());
    /// ```
    pub fn instant_at(&self, reading: u64) -> tokio::time::Instant {
        self.epoch + Duration::from_nanos(reading)
    }
}

impl Default for TokioClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for TokioClock {
    #[inline]
    fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    #[inline]
    fn tick_rate(&self) -> TickRate {
        TickRate::NANOS
    }
}

impl FixedRateClock for TokioClock {
    const TICK_RATE: TickRate = TickRate::NANOS;
}
