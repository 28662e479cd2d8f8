//! [`AsyncRateLimitedWrite`]: an `embedded_io_async::Write` limited in bytes per period.

use core::time::Duration;
use embedded_io_async::{ErrorType, Write};

use ritmo_core::{RateLimiter, WriteError};

use crate::clock::EmbassyClock;

/// An `embedded_io_async::Write` (a UART, a radio) limited to its limiter's permits in bytes per
/// period: each chunk takes as many permits as it has bytes, as one unit.
///
/// Each [`write`](Write::write) takes one chunk of at most `permits` bytes (the limiter's burst:
/// no call can take more), sleeps until its permits' slot, then writes the whole chunk
/// (`write_all` on the wrapped writer) and returns its length; `write_all` loops over chunks.
/// A writer is flow control: it waits as long as its bytes take, whatever the config's
/// `max_wait`.
///
/// Cancel-safe up to the write: dropping the future while it sleeps gives its permits back (when
/// no later reservation queued behind it) and writes nothing; once the chunk is being written,
/// its permits are kept.
///
/// ```
/// use core::time::Duration;
/// use embedded_io_async::Write;
/// use ritmo::{const_config, RateLimiter, WriteError};
/// use ritmo::embassy::{AsyncRateLimitedWrite, EmbassyClock};
///
/// static UART: RateLimiter<EmbassyClock> =
///     RateLimiter::new("uart", const_config!(960, Duration::from_secs(1)), EmbassyClock);
///
/// async fn report<W: Write>(tx: W) -> Result<(), WriteError<W::Error>> {
///     let mut out = AsyncRateLimitedWrite::new(tx, &UART);
///     out.write_all(b"temperature 21.5 C\r\n").await?;
///     out.flush().await
/// }
/// # let _ = report::<&mut [u8]>;
/// ```
#[derive(Debug)]
pub struct AsyncRateLimitedWrite<'a, W> {
    inner: W,
    limiter: &'a RateLimiter<EmbassyClock>,
}

impl<'a, W> AsyncRateLimitedWrite<'a, W> {
    /// Writes to `inner` at most `limiter`'s permits bytes per period.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{const_config, RateLimiter};
    /// # use ritmo::embassy::{AsyncRateLimitedWrite, EmbassyClock};
    /// static UART: RateLimiter<EmbassyClock> =
    ///     RateLimiter::new("uart", const_config!(960, Duration::from_secs(1)), EmbassyClock);
    /// let mut buf = [0u8; 64];
    /// let out = AsyncRateLimitedWrite::new(&mut buf[..], &UART);
    /// assert_eq!(out.limiter().id(), "uart");
    /// ```
    pub const fn new(inner: W, limiter: &'a RateLimiter<EmbassyClock>) -> Self {
        AsyncRateLimitedWrite { inner, limiter }
    }

    /// The limiter it takes its permits from.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{const_config, RateLimiter};
    /// # use ritmo::embassy::{AsyncRateLimitedWrite, EmbassyClock};
    /// static UART: RateLimiter<EmbassyClock> =
    ///     RateLimiter::new("uart", const_config!(960, Duration::from_secs(1)), EmbassyClock);
    /// let mut buf = [0u8; 4];
    /// let out = AsyncRateLimitedWrite::new(&mut buf[..], &UART);
    /// assert_eq!(out.limiter().config().permits(), 960);
    /// ```
    pub fn limiter(&self) -> &'a RateLimiter<EmbassyClock> {
        self.limiter
    }

    /// The wrapped writer.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{const_config, RateLimiter};
    /// # use ritmo::embassy::{AsyncRateLimitedWrite, EmbassyClock};
    /// static UART: RateLimiter<EmbassyClock> =
    ///     RateLimiter::new("uart", const_config!(960, Duration::from_secs(1)), EmbassyClock);
    /// let mut buf = [0u8; 4];
    /// let out = AsyncRateLimitedWrite::new(&mut buf[..], &UART);
    /// assert_eq!(out.inner().len(), 4);
    /// ```
    pub fn inner(&self) -> &W {
        &self.inner
    }

    /// The wrapped writer, mutably (writing to it directly bypasses the limit).
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{const_config, RateLimiter};
    /// # use ritmo::embassy::{AsyncRateLimitedWrite, EmbassyClock};
    /// static UART: RateLimiter<EmbassyClock> =
    ///     RateLimiter::new("uart", const_config!(960, Duration::from_secs(1)), EmbassyClock);
    /// let mut buf = [0u8; 4];
    /// let mut out = AsyncRateLimitedWrite::new(&mut buf[..], &UART);
    /// assert_eq!(out.inner_mut().len(), 4);
    /// ```
    pub fn inner_mut(&mut self) -> &mut W {
        &mut self.inner
    }

    /// The wrapped writer back.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{const_config, RateLimiter};
    /// # use ritmo::embassy::{AsyncRateLimitedWrite, EmbassyClock};
    /// static UART: RateLimiter<EmbassyClock> =
    ///     RateLimiter::new("uart", const_config!(960, Duration::from_secs(1)), EmbassyClock);
    /// let mut buf = [0u8; 4];
    /// let out = AsyncRateLimitedWrite::new(&mut buf[..], &UART);
    /// assert_eq!(out.into_inner().len(), 4);
    /// ```
    pub fn into_inner(self) -> W {
        self.inner
    }
}

impl<W: ErrorType> ErrorType for AsyncRateLimitedWrite<'_, W> {
    type Error = WriteError<W::Error>;
}

impl<W: Write> Write for AsyncRateLimitedWrite<'_, W> {
    async fn write(&mut self, buf: &[u8]) -> Result<usize, Self::Error> {
        if buf.is_empty() {
            return self.inner.write(buf).await.map_err(WriteError::Io);
        }
        // A chunk of at most the limiter's burst (no call can take more), waited for however
        // long it takes: a writer paces its bytes, it does not drop them.
        let burst = self.limiter.config().permits();
        let k = u32::try_from(buf.len()).map_or(burst, |len| len.clamp(1, burst));
        let reservation = match self.limiter.reserve_n_within(k, Duration::MAX) {
            Ok(reservation) => reservation,
            Err(e) => match e.rate_limited() {
                Some(&e) => return Err(WriteError::RateLimited(e)),
                None => {
                    unreachable!("a chunk is within 1..=permits, and a config has permits >= 1")
                }
            },
        };
        let chunk = &buf[..reservation.permits() as usize];
        crate::wait::wait_for(reservation).await;
        self.inner.write_all(chunk).await.map_err(WriteError::Io)?;
        Ok(chunk.len())
    }

    async fn flush(&mut self) -> Result<(), Self::Error> {
        self.inner.flush().await.map_err(WriteError::Io)
    }
}
