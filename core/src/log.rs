//! [`DefmtListener`]: a ready [`Listener`] that logs a limiter's events through defmt.

use crate::event::{Event, Listener};

/// Logs every event it hears through defmt: rejections at `warn` level, released reservations
/// at `debug` level. Install it on a limiter or on a whole [`Registry`](crate::Registry).
/// Like every defmt user, the firmware picks the global logger (`defmt-rtt`, ...) and the
/// `DEFMT_LOG` level.
///
/// ```
/// # // The firmware's logger, stubbed so that this example links on the host at any DEFMT_LOG.
/// # #[defmt::global_logger]
/// # struct Discard;
/// # unsafe impl defmt::Logger for Discard {
/// #     fn acquire() {}
/// #     unsafe fn flush() {}
/// #     unsafe fn release() {}
/// #     unsafe fn write(_bytes: &[u8]) {}
/// # }
/// # defmt::timestamp!("");
/// use core::time::Duration;
/// use ritmo::{const_config, DefmtListener, ManualClock, RateLimiter, Registry};
///
/// static CLOCK: ManualClock = ManualClock::new();
/// static LIMITERS: Registry<&ManualClock, 4> = Registry::new(&CLOCK).with_listener(&DefmtListener);
/// static RADIO: RateLimiter<&ManualClock> =
///     RateLimiter::new("radio", const_config!(1, Duration::from_secs(3600)), &CLOCK)
///         .with_listener(&DefmtListener);
///
/// assert!(RADIO.try_acquire().is_ok()); // admitted calls log nothing
/// assert!(RADIO.try_acquire().is_err()); // logs "ritmo: Rejected(..)" at warn level
/// # assert!(LIMITERS.is_empty());
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct DefmtListener;

impl Listener for DefmtListener {
    fn on_event(&self, event: &Event) {
        match event {
            Event::Rejected(_) => defmt::warn!("ritmo: {}", event),
            Event::Waiting { .. } => defmt::trace!("ritmo: {}", event),
            Event::Released { .. } => defmt::debug!("ritmo: {}", event),
        }
    }
}
