//! Byte sinks limited in bytes per period: a UART its peer can keep up with, a radio under its
//! duty cycle.
//!
//! [`RateLimitedWrite`] wraps a blocking `embedded_io::Write` and a limiter whose permits are
//! bytes: each chunk takes as many permits as it has bytes, as one unit, and waits for them with a
//! [`Wait`] (a [`DelayWait`](crate::DelayWait) on bare metal,
//! [`AdvanceClock`](crate::AdvanceClock) in tests). A chunk larger than the limiter's burst
//! (`permits`) is split, since no single call can take more than `permits`. With feature
//! `embedded-io-async` and the waiter [`ClockWait`](crate::ClockWait), it is an `embedded_io_async::Write` too,
//! sleeping with the clock's [`AsyncClock`](crate::AsyncClock) (an Embassy `Timer`): dropping the
//! future while it sleeps gives its permits back (if no later reservation queued behind it) and
//! writes nothing; once the chunk is being written, its permits are kept.
//!
//! A writer is flow control: it waits as long as its bytes take, whatever the config's `max_wait`
//! (which bounds `acquire` calls, not writers). It fails only when its waiter is interrupted, or
//! when the permits would arrive past the end of the clock's range.

use core::fmt;
use core::time::Duration;

use crate::clock::Clock;
use crate::error::{AcquireError, RateLimitExceeded};
use crate::limiter::{RateLimiter, Reservation};
use crate::wait::Wait;

/// A write through a rate-limited writer failed: the sink failed, or no permits came.
///
/// Implements `embedded_io::Error`, so a rate-limited writer is a writer like any other.
///
/// ```
/// use embedded_io::{Error, ErrorKind};
/// use ritmo::WriteError;
/// let err: WriteError<ErrorKind> = WriteError::Io(ErrorKind::BrokenPipe);
/// assert_eq!(err.kind(), ErrorKind::BrokenPipe);
/// assert_eq!(err.to_string(), "write failed: BrokenPipe");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum WriteError<E> {
    /// The wrapped writer failed.
    Io(E),
    /// The bytes got no permits: the waiter was interrupted (kind `Interrupted`), or the permits
    /// would arrive past the end of the clock's range (kind `TimedOut`).
    RateLimited(RateLimitExceeded),
}

impl<E: fmt::Display> fmt::Display for WriteError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WriteError::Io(e) => write!(f, "write failed: {e}"),
            WriteError::RateLimited(e) => e.fmt(f),
        }
    }
}

// No `source()` for `Io`: that would need `E: 'static`, which would follow every writer's error
// type around; `Display` shows it.
impl<E: core::error::Error> core::error::Error for WriteError<E> {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            WriteError::Io(_) => None,
            WriteError::RateLimited(e) => Some(e),
        }
    }
}

impl<E: embedded_io::Error> embedded_io::Error for WriteError<E> {
    fn kind(&self) -> embedded_io::ErrorKind {
        match self {
            WriteError::Io(e) => e.kind(),
            WriteError::RateLimited(e) => match e.reason() {
                crate::Reason::Interrupted => embedded_io::ErrorKind::Interrupted,
                _ => embedded_io::ErrorKind::TimedOut,
            },
        }
    }
}

/// Reserves permits for the next chunk of a `len`-byte buffer, waiting as long as it takes: a
/// chunk holds `len` bytes, at most the limiter's burst (`permits`) and at least one; the
/// reservation's [`permits()`](Reservation::permits) is the chunk's length. Writers skip empty
/// buffers before asking.
fn reserve_chunk<C: Clock, E>(
    limiter: &RateLimiter<C>,
    len: usize,
) -> Result<Reservation<'_, C>, WriteError<E>> {
    // `permits()`, not `config()`: the config is read under a critical section.
    let burst = limiter.permits();
    let k = u32::try_from(len).map_or(burst, |len| len.clamp(1, burst));
    match limiter.reserve_n_within(k, Duration::MAX) {
        Ok(reservation) => Ok(reservation),
        Err(AcquireError::RateLimited(e)) => Err(WriteError::RateLimited(e)),
        Err(AcquireError::InvalidPermits(_)) => {
            unreachable!("a chunk is within 1..=permits, and a config has permits >= 1")
        }
    }
}

/// A blocking `embedded_io::Write` limited to the limiter's bytes per period.
///
/// Each [`write`](embedded_io::Write::write) takes one chunk of at most `permits` bytes, waits for
/// that many permits with the waiter, then writes the whole chunk (`write_all` on the wrapped
/// writer) and returns its length; `write_all` loops over chunks. A write error after the wait
/// keeps the permits (the bytes may be on the wire).
///
/// ```
/// use core::time::Duration;
/// use embedded_io::Write;
/// use ritmo::{AdvanceClock, Clock, Config, ManualClock, RateLimitedWrite, RateLimiter};
///
/// let clock = ManualClock::new();
/// // 960 bytes per second: what a peer reading 9600 baud 8N1 can take.
/// let uart = RateLimiter::new("uart", Config::new(960, Duration::from_secs(1))?, &clock);
/// let mut sink = [0u8; 4800];
/// let mut out = RateLimitedWrite::new(&mut sink[..], &uart, AdvanceClock);
/// out.write_all(&[b'x'; 4800]).unwrap();
/// // A burst of 960 at once, then 3840 bytes at 960 per second: 4 s (and 1.28 µs, since a
/// // byte's 1/960 s is rounded up to the nanosecond: never faster than configured).
/// assert_eq!(clock.now(), 3840 * 1_000_000_000u64.div_ceil(960));
/// # Ok::<(), ritmo::ConfigError>(())
/// ```
#[derive(Debug)]
pub struct RateLimitedWrite<'a, C, W, Wt> {
    inner: W,
    limiter: &'a RateLimiter<C>,
    waiter: Wt,
}

impl<'a, C, W, Wt> RateLimitedWrite<'a, C, W, Wt> {
    /// Writes to `inner` at most `limiter`'s permits bytes per period, waiting with `waiter`
    /// ([`ClockWait`](crate::ClockWait) for an async writer).
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{AdvanceClock, Config, ManualClock, RateLimitedWrite, RateLimiter};
    /// let uart = RateLimiter::new("uart", Config::new(64, Duration::from_millis(10))?, ManualClock::new());
    /// let mut buf = [0u8; 16];
    /// let mut buf = [0u8; 4];
    /// let out = RateLimitedWrite::new(&mut buf[..], &uart, AdvanceClock);
    /// # let _ = out;
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub const fn new(inner: W, limiter: &'a RateLimiter<C>, waiter: Wt) -> Self {
        RateLimitedWrite {
            inner,
            limiter,
            waiter,
        }
    }

    /// The limiter it takes its permits from.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{AdvanceClock, Config, ManualClock, RateLimitedWrite, RateLimiter};
    /// let uart = RateLimiter::new("uart", Config::new(64, Duration::from_millis(10))?, ManualClock::new());
    /// let mut buf = [0u8; 4];
    /// let out = RateLimitedWrite::new(&mut buf[..], &uart, AdvanceClock);
    /// assert_eq!(out.limiter().id(), "uart");
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn limiter(&self) -> &'a RateLimiter<C> {
        self.limiter
    }

    /// The wrapped writer.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{AdvanceClock, Config, ManualClock, RateLimitedWrite, RateLimiter};
    /// let uart = RateLimiter::new("uart", Config::new(64, Duration::from_millis(10))?, ManualClock::new());
    /// let mut buf = [0u8; 4];
    /// let out = RateLimitedWrite::new(&mut buf[..], &uart, AdvanceClock);
    /// assert_eq!(out.inner().len(), 4);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn inner(&self) -> &W {
        &self.inner
    }

    /// The wrapped writer, mutably (writing to it directly bypasses the limit).
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{AdvanceClock, Config, ManualClock, RateLimitedWrite, RateLimiter};
    /// let uart = RateLimiter::new("uart", Config::new(64, Duration::from_millis(10))?, ManualClock::new());
    /// let mut buf = [0u8; 4];
    /// let mut out = RateLimitedWrite::new(&mut buf[..], &uart, AdvanceClock);
    /// assert_eq!(out.inner_mut().len(), 4);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn inner_mut(&mut self) -> &mut W {
        &mut self.inner
    }

    /// The wrapped writer back.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use embedded_io::Write;
    /// # use ritmo::{AdvanceClock, Config, ManualClock, RateLimitedWrite, RateLimiter};
    /// let uart = RateLimiter::new("uart", Config::new(64, Duration::from_millis(10))?, ManualClock::new());
    /// let mut buf = [0u8; 4];
    /// let mut out = RateLimitedWrite::new(&mut buf[..], &uart, AdvanceClock);
    /// out.write_all(b"ok").unwrap();
    /// assert_eq!(out.into_inner().len(), 2); // the slice's unwritten rest
    /// assert_eq!(&buf[..2], b"ok");
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn into_inner(self) -> W {
        self.inner
    }
}

impl<C, W: embedded_io::ErrorType, Wt> embedded_io::ErrorType for RateLimitedWrite<'_, C, W, Wt> {
    type Error = WriteError<W::Error>;
}

impl<C: Clock, W: embedded_io::Write, Wt: Wait<C>> embedded_io::Write
    for RateLimitedWrite<'_, C, W, Wt>
{
    fn write(&mut self, buf: &[u8]) -> Result<usize, Self::Error> {
        if buf.is_empty() {
            return self.inner.write(buf).map_err(WriteError::Io);
        }
        let reservation = reserve_chunk(self.limiter, buf.len())?;
        let chunk = &buf[..reservation.permits() as usize];
        reservation
            .wait_with(&mut self.waiter)
            .map_err(WriteError::RateLimited)?;
        self.inner.write_all(chunk).map_err(WriteError::Io)?;
        Ok(chunk.len())
    }

    fn flush(&mut self) -> Result<(), Self::Error> {
        self.inner.flush().map_err(WriteError::Io)
    }
}

/// Awaited: each [`write`](embedded_io_async::Write::write) takes one chunk as the blocking
/// writer does, sleeps until its permits' slot with the clock's
/// [`AsyncClock`](crate::AsyncClock), then writes the whole chunk.
#[cfg(feature = "embedded-io-async")]
#[cfg_attr(docsrs, doc(cfg(feature = "embedded-io-async")))]
impl<C: crate::AsyncClock, W: embedded_io_async::Write> embedded_io_async::Write
    for RateLimitedWrite<'_, C, W, crate::ClockWait>
{
    async fn write(&mut self, buf: &[u8]) -> Result<usize, Self::Error> {
        if buf.is_empty() {
            return self.inner.write(buf).await.map_err(WriteError::Io);
        }
        let reservation = reserve_chunk(self.limiter, buf.len())?;
        let chunk = &buf[..reservation.permits() as usize];
        if !reservation.is_ready() {
            self.limiter.clock().sleep_until(reservation.slot()).await;
        }
        reservation.commit();
        self.inner.write_all(chunk).await.map_err(WriteError::Io)?;
        Ok(chunk.len())
    }

    async fn flush(&mut self) -> Result<(), Self::Error> {
        self.inner.flush().await.map_err(WriteError::Io)
    }
}
