//! Async waits: `acquire_async().await` sleeps on an embassy-time `Timer` until the reserved slot.

use core::future::Future;

use embassy_time::{Instant, Timer};
use ritmo_core::{AcquireError, RateLimitExceeded, RateLimiter, Reservation};

use crate::clock::EmbassyClock;

/// Async acquires on a limiter on [`EmbassyClock`].
///
/// Each method returns a future that does nothing until first polled. Then it takes the permits
/// if they are there, fails at once if they would arrive later than the config's `max_wait`, or
/// reserves them and sleeps on `embassy_time::Timer::at(slot)`. Waiters are served in the order
/// they reserved (FIFO): each knows its own slot, so they never race when it comes.
///
/// Dropping the future while it sleeps gives the reservation up: its permits go back if no later
/// call reserved after it (otherwise its slot stays unused, so no two calls share one), and
/// [`call_async`](AsyncExt::call_async)'s work never runs. Once the work has started, the permit is kept.
///
/// ```
/// use core::time::Duration;
/// use ritmo::{const_config, RateLimiter};
/// use ritmo::embassy::{AsyncExt, EmbassyClock};
///
/// static GPS: RateLimiter<EmbassyClock> = RateLimiter::new(
///     "gps",
///     const_config!(2, Duration::from_secs(1)).with_max_wait(Duration::from_secs(1)),
///     EmbassyClock,
/// );
///
/// async fn poll_gps() -> Result<u32, ritmo::RateLimitExceeded> {
///     GPS.acquire_async().await?; // sleeps until this call's slot if the burst is spent
///     Ok(42) // read the receiver
/// }
/// # let _ = poll_gps;
/// ```
pub trait AsyncExt {
    /// Takes one permit, sleeping until its slot if it arrives within `max_wait`.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{const_config, RateLimiter};
    /// use ritmo::embassy::{AsyncExt, EmbassyClock};
    /// static LED: RateLimiter<EmbassyClock> =
    ///     RateLimiter::new("led", const_config!(4, Duration::from_secs(1)), EmbassyClock);
    /// async fn blink() {
    ///     if LED.acquire_async().await.is_ok() { /* toggle */ }
    /// }
    /// # let _ = blink;
    /// ```
    fn acquire_async(&self) -> impl Future<Output = Result<(), RateLimitExceeded>>;

    /// Takes `k` permits as one unit (bytes of a frame, say), sleeping until the last one's slot.
    /// `k = 0` or `k > permits` fails at once with [`AcquireError::InvalidPermits`].
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{const_config, RateLimiter};
    /// use ritmo::embassy::{AsyncExt, EmbassyClock};
    /// static RADIO: RateLimiter<EmbassyClock> =
    ///     RateLimiter::new("radio", const_config!(255, Duration::from_secs(1)), EmbassyClock);
    /// async fn send(frame: &[u8]) -> Result<(), ritmo::AcquireError> {
    ///     RADIO.acquire_n_async(frame.len() as u32).await?;
    ///     Ok(()) // transmit
    /// }
    /// # let _ = send;
    /// ```
    fn acquire_n_async(&self, k: u32) -> impl Future<Output = Result<(), AcquireError>>;

    /// Runs `work` once a permit is had; `Err` without running it otherwise. The time spent
    /// waiting for the permit is not part of `work`.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{const_config, RateLimiter};
    /// use ritmo::embassy::{AsyncExt, EmbassyClock};
    /// static API: RateLimiter<EmbassyClock> =
    ///     RateLimiter::new("api", const_config!(10, Duration::from_secs(1)), EmbassyClock);
    /// async fn read_sensor() -> u16 { 512 }
    /// async fn sample() -> Result<u16, ritmo::RateLimitExceeded> {
    ///     API.call_async(read_sensor()).await
    /// }
    /// # let _ = sample;
    /// ```
    fn call_async<F: Future>(
        &self,
        work: F,
    ) -> impl Future<Output = Result<F::Output, RateLimitExceeded>>;

    /// Like [`call_async`](AsyncExt::call_async) for work that fails with its own error type,
    /// which a rejection converts into through `From<RateLimitExceeded>`.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{const_config, RateLimiter, RateLimitExceeded};
    /// use ritmo::embassy::{AsyncExt, EmbassyClock};
    /// #[derive(Debug)]
    /// enum SendError { Busy, Nack }
    /// impl From<RateLimitExceeded> for SendError {
    ///     fn from(_: RateLimitExceeded) -> Self { SendError::Busy }
    /// }
    /// static BUS: RateLimiter<EmbassyClock> =
    ///     RateLimiter::new("bus", const_config!(100, Duration::from_secs(1)), EmbassyClock);
    /// async fn write_register() -> Result<(), SendError> { Err(SendError::Nack) }
    /// async fn configure() -> Result<(), SendError> {
    ///     BUS.try_call_async(write_register()).await
    /// }
    /// # let _ = configure;
    /// ```
    fn try_call_async<T, E, F>(&self, work: F) -> impl Future<Output = Result<T, E>>
    where
        F: Future<Output = Result<T, E>>,
        E: From<RateLimitExceeded>;

    /// Runs `work` once `k` permits are had, as one unit (see
    /// [`acquire_n_async`](AsyncExt::acquire_n_async)).
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{const_config, RateLimiter};
    /// use ritmo::embassy::{AsyncExt, EmbassyClock};
    /// static RADIO: RateLimiter<EmbassyClock> =
    ///     RateLimiter::new("radio", const_config!(255, Duration::from_secs(1)), EmbassyClock);
    /// async fn transmit(frame: &[u8]) -> usize { frame.len() }
    /// async fn send(frame: &[u8]) -> Result<usize, ritmo::AcquireError> {
    ///     RADIO.call_n_async(frame.len() as u32, transmit(frame)).await
    /// }
    /// # let _ = send;
    /// ```
    fn call_n_async<F: Future>(
        &self,
        k: u32,
        work: F,
    ) -> impl Future<Output = Result<F::Output, AcquireError>>;

    /// Like [`call_n_async`](AsyncExt::call_n_async) for work that fails with its own error
    /// type, which a refusal converts into through `From<AcquireError>`.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{const_config, AcquireError, RateLimiter};
    /// use ritmo::embassy::{AsyncExt, EmbassyClock};
    /// #[derive(Debug)]
    /// enum SendError { Limited(AcquireError), Nack }
    /// impl From<AcquireError> for SendError {
    ///     fn from(e: AcquireError) -> Self { SendError::Limited(e) }
    /// }
    /// static RADIO: RateLimiter<EmbassyClock> =
    ///     RateLimiter::new("radio", const_config!(255, Duration::from_secs(1)), EmbassyClock);
    /// async fn transmit(_frame: &[u8]) -> Result<(), SendError> { Err(SendError::Nack) }
    /// async fn send(frame: &[u8]) -> Result<(), SendError> {
    ///     RADIO.try_call_n_async(frame.len() as u32, transmit(frame)).await
    /// }
    /// # let _ = send;
    /// ```
    fn try_call_n_async<T, E, F>(&self, k: u32, work: F) -> impl Future<Output = Result<T, E>>
    where
        F: Future<Output = Result<T, E>>,
        E: From<AcquireError>;
}

/// Sleeps until the reservation's slot, then keeps its permits. Dropped while sleeping, the
/// reservation's own `Drop` gives them back.
pub(crate) async fn wait_for(reservation: Reservation<'_, EmbassyClock>) {
    if !reservation.is_ready() {
        Timer::at(Instant::from_ticks(reservation.slot())).await;
    }
    reservation.commit();
}

impl AsyncExt for RateLimiter<EmbassyClock> {
    async fn acquire_async(&self) -> Result<(), RateLimitExceeded> {
        wait_for(self.reserve()?).await;
        Ok(())
    }

    async fn acquire_n_async(&self, k: u32) -> Result<(), AcquireError> {
        wait_for(self.reserve_n(k)?).await;
        Ok(())
    }

    async fn call_async<F: Future>(&self, work: F) -> Result<F::Output, RateLimitExceeded> {
        self.acquire_async().await?;
        Ok(work.await)
    }

    async fn try_call_async<T, E, F>(&self, work: F) -> Result<T, E>
    where
        F: Future<Output = Result<T, E>>,
        E: From<RateLimitExceeded>,
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
        F: Future<Output = Result<T, E>>,
        E: From<AcquireError>,
    {
        self.acquire_n_async(k).await?;
        work.await
    }
}
