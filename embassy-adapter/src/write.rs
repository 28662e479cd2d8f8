//! [`AsyncRateLimitedWrite`]: an `embedded_io_async::Write` limited in bytes per period.

use ritmo_core::{ClockWait, RateLimitedWrite};

use crate::clock::EmbassyClock;

/// An `embedded_io_async::Write` (a UART, a radio) limited to its limiter's permits in bytes per
/// period: ritmo-core's [`RateLimitedWrite`](crate::ritmo::RateLimitedWrite) on
/// [`EmbassyClock`], waiting with [`ClockWait`](crate::ritmo::ClockWait) (an Embassy `Timer`).
/// Each chunk takes as many permits as it has bytes, as one unit.
///
/// Each [`write`](embedded_io_async::Write::write) takes one chunk of at most `permits` bytes
/// (the limiter's burst: no call can take more), sleeps until its permits' slot, then writes the
/// whole chunk (`write_all` on the wrapped writer) and returns its length; `write_all` loops over
/// chunks. A writer is flow control: it waits as long as its bytes take, whatever the config's
/// `max_wait`.
///
/// Cancel-safe up to the write: dropping the future while it sleeps gives its permits back (when
/// no later reservation queued behind it) and writes nothing; once the chunk is being written,
/// its permits are kept.
///
/// ```
/// use core::time::Duration;
/// use embedded_io_async::Write;
/// use ritmo::{const_config, ClockWait, RateLimiter, WriteError};
/// use ritmo::embassy::{AsyncRateLimitedWrite, EmbassyClock};
///
/// static UART: RateLimiter<EmbassyClock> =
///     RateLimiter::new("uart", const_config!(960, Duration::from_secs(1)), EmbassyClock);
///
/// async fn report<W: Write>(tx: W) -> Result<(), WriteError<W::Error>> {
///     let mut out = AsyncRateLimitedWrite::new(tx, &UART, ClockWait);
///     out.write_all(b"temperature 21.5 C\r\n").await?;
///     out.flush().await
/// }
/// # let _ = report::<&mut [u8]>;
/// ```
pub type AsyncRateLimitedWrite<'a, W> = RateLimitedWrite<'a, EmbassyClock, W, ClockWait>;
