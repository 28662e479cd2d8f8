//! [`BlockingExt`]: waiting for a permit on the calling thread, and running work under one.

use ritmo_core::{AcquireError, Clock, RateLimitExceeded, RateLimiter};

use crate::wait::ParkWait;

mod sealed {
    pub trait Sealed {}
    impl<C: ritmo_core::Clock> Sealed for ritmo_core::RateLimiter<C> {}
}

/// Blocking waits and call wrappers for a [`RateLimiter`] on any clock.
///
/// A call takes its permit at once if it is there; otherwise it reserves the next slot if that
/// arrives within the config's `max_wait` and parks the thread until it ([`ParkWait`]), or is
/// rejected at once. While it waits, the thread's own [`Interrupt`](crate::Interrupt) ends the
/// wait: the permit goes back (unless a later call already reserved one behind it) and the call
/// fails with
/// [`Reason::Interrupted`](crate::ritmo::Reason::Interrupted).
///
/// On a [`ManualClock`](crate::ritmo::ManualClock) limiter nothing moves the clock while a thread
/// parks: tests call core's
/// [`acquire_advancing`](crate::ritmo::RateLimiter::acquire_advancing) instead, which advances the
/// fake clock to the slot.
///
/// ```
/// use std::time::Duration;
/// use ritmo::Config;
/// use ritmo::server::BlockingExt;
///
/// let config = Config::new(2, Duration::from_millis(20))?.with_max_wait(Duration::from_millis(50));
/// let limiter = ritmo::server::limiter("search", config);
/// limiter.acquire()?; // the burst of 2
/// limiter.acquire()?;
/// limiter.acquire()?; // waits about 10 ms for its slot
/// let answer = limiter.call(|| 6 * 7)?; // waits, then runs
/// assert_eq!(answer, 42);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait BlockingExt: sealed::Sealed {
    /// Takes one permit, parking the thread until its slot if it arrives within `max_wait`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ritmo::{Config, Reason};
    /// use ritmo::server::BlockingExt;
    /// let limiter = ritmo::server::limiter("api", Config::new(1, Duration::from_secs(60))?);
    /// assert!(limiter.acquire().is_ok());
    /// // max_wait is 0: the next call is rejected at once instead of waiting a minute.
    /// assert_eq!(limiter.acquire().unwrap_err().reason(), Reason::NoPermitInTime);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    fn acquire(&self) -> Result<(), RateLimitExceeded>;

    /// Takes `k` permits as one unit, parking until their slot (the last one's) if it arrives
    /// within `max_wait`. `k = 0` or `k > permits` is an error at once.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ritmo::{AcquireError, Config};
    /// use ritmo::server::BlockingExt;
    /// let limiter = ritmo::server::limiter("uart", Config::new(64, Duration::from_millis(10))?);
    /// assert!(limiter.acquire_n(64).is_ok());
    /// assert!(matches!(limiter.acquire_n(65), Err(AcquireError::InvalidPermits(_))));
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    fn acquire_n(&self, k: u32) -> Result<(), AcquireError>;

    /// Runs `work` once a permit is had (waiting as [`acquire`](BlockingExt::acquire)); if the
    /// call is rejected, `work` never runs.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ritmo::Config;
    /// use ritmo::server::BlockingExt;
    /// let limiter = ritmo::server::limiter("api", Config::new(1, Duration::from_secs(60))?);
    /// let mut runs = 0;
    /// assert_eq!(limiter.call(|| { runs += 1; "ok" }), Ok("ok"));
    /// assert!(limiter.call(|| runs += 1).is_err());
    /// assert_eq!(runs, 1);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    fn call<T>(&self, work: impl FnOnce() -> T) -> Result<T, RateLimitExceeded>;

    /// Runs `work` once `k` permits are had; if the call is rejected, `work` never runs.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ritmo::Config;
    /// use ritmo::server::BlockingExt;
    /// let uart = ritmo::server::limiter("uart", Config::new(64, Duration::from_millis(10))?);
    /// let frame = [0u8; 48];
    /// let sent = uart.call_n(frame.len() as u32, || frame.len())?;
    /// assert_eq!(sent, 48);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn call_n<T>(&self, k: u32, work: impl FnOnce() -> T) -> Result<T, AcquireError>;

    /// Runs fallible `work` once a permit is had; a rejection becomes the caller's own error
    /// type through `From<RateLimitExceeded>`, and `work` never runs.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ritmo::{Config, RateLimitExceeded};
    /// use ritmo::server::BlockingExt;
    ///
    /// #[derive(Debug)]
    /// enum ApiError { Busy(RateLimitExceeded), NotFound }
    /// impl From<RateLimitExceeded> for ApiError {
    ///     fn from(e: RateLimitExceeded) -> Self { ApiError::Busy(e) }
    /// }
    ///
    /// let limiter = ritmo::server::limiter("api", Config::new(1, Duration::from_secs(60))?);
    /// let first: Result<u32, ApiError> = limiter.try_call(|| Err(ApiError::NotFound));
    /// assert!(matches!(first, Err(ApiError::NotFound)));
    /// let second: Result<u32, ApiError> = limiter.try_call(|| Ok(1));
    /// assert!(matches!(second, Err(ApiError::Busy(_))));
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    fn try_call<T, E: From<RateLimitExceeded>>(
        &self,
        work: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E>;

    /// Runs fallible `work` once `k` permits are had; a rejection or an invalid `k` becomes the
    /// caller's error type through `From<AcquireError>`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ritmo::{AcquireError, Config};
    /// use ritmo::server::BlockingExt;
    ///
    /// #[derive(Debug)]
    /// enum SendError { Limited(AcquireError) }
    /// impl From<AcquireError> for SendError {
    ///     fn from(e: AcquireError) -> Self { SendError::Limited(e) }
    /// }
    ///
    /// let uart = ritmo::server::limiter("uart", Config::new(8, Duration::from_secs(1))?);
    /// let r: Result<(), SendError> = uart.try_call_n(9, || Ok(()));
    /// assert!(matches!(r, Err(SendError::Limited(AcquireError::InvalidPermits(_)))));
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    fn try_call_n<T, E: From<AcquireError>>(
        &self,
        k: u32,
        work: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E>;
}

impl<C: Clock> BlockingExt for RateLimiter<C> {
    fn acquire(&self) -> Result<(), RateLimitExceeded> {
        self.acquire_with(&mut ParkWait::new())
    }

    fn acquire_n(&self, k: u32) -> Result<(), AcquireError> {
        self.acquire_n_with(k, &mut ParkWait::new())
    }

    fn call<T>(&self, work: impl FnOnce() -> T) -> Result<T, RateLimitExceeded> {
        BlockingExt::acquire(self)?;
        Ok(work())
    }

    fn call_n<T>(&self, k: u32, work: impl FnOnce() -> T) -> Result<T, AcquireError> {
        BlockingExt::acquire_n(self, k)?;
        Ok(work())
    }

    fn try_call<T, E: From<RateLimitExceeded>>(
        &self,
        work: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E> {
        BlockingExt::acquire(self)?;
        work()
    }

    fn try_call_n<T, E: From<AcquireError>>(
        &self,
        k: u32,
        work: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E> {
        BlockingExt::acquire_n(self, k)?;
        work()
    }
}
