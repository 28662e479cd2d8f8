//! Events: what a limiter tells a listener the user installed.
//!
//! Admitted calls publish nothing. Rejections and released reservations (a permit returned, or a
//! slot left unused because later callers were queued behind it) go to the limiter's
//! [`Listener`], if it has one. A limiter without a listener pays one untaken branch on those
//! paths and nothing on the admitted one. Listeners are `&'static` and fixed when the limiter is
//! built, so nothing allocates and nothing is looked up.

use crate::error::{RateLimitExceeded, Reason};

/// Something a limiter reports to its listener.
///
/// ```
/// use ritmo_core::{Event, Reason};
/// let e = Event::Released { id: "radio", permits: 2, reason: Reason::Cancelled, returned: true };
/// assert_eq!(e.id(), "radio");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Event {
    /// A call was refused.
    Rejected(RateLimitExceeded),
    /// A reservation was given up before its slot (cancelled, dropped or interrupted).
    Released {
        /// The limiter's id.
        id: &'static str,
        /// How many permits the reservation held.
        permits: u32,
        /// Why it was given up.
        reason: Reason,
        /// `true` if the permits went back to the limiter; `false` if later reservations were
        /// queued behind it, so its slot is left unused.
        returned: bool,
    },
}

impl Event {
    /// The id of the limiter the event is about.
    ///
    /// ```
    /// # use ritmo_core::{Event, Reason};
    /// let e = Event::Released { id: "uart", permits: 1, reason: Reason::Interrupted, returned: false };
    /// assert_eq!(e.id(), "uart");
    /// ```
    pub const fn id(&self) -> &'static str {
        match self {
            Event::Rejected(e) => e.id(),
            Event::Released { id, .. } => id,
        }
    }
}

/// Receives a limiter's events. Called on the thread (or in the interrupt handler) that caused the
/// event, so it should be quick and must not block.
///
/// ```
/// use core::time::Duration;
/// use portable_atomic::{AtomicU32, Ordering};
/// use ritmo_core::{Config, Event, Listener, ManualClock, RateLimiter};
///
/// struct CountRejections(AtomicU32);
/// impl Listener for CountRejections {
///     fn on_event(&self, event: &Event) {
///         if let Event::Rejected(_) = event {
///             self.0.fetch_add(1, Ordering::Relaxed);
///         }
///     }
/// }
///
/// static REJECTIONS: CountRejections = CountRejections(AtomicU32::new(0));
/// let limiter = RateLimiter::new("api", Config::new(1, Duration::from_secs(1))?, ManualClock::new())
///     .with_listener(&REJECTIONS);
/// limiter.try_acquire().unwrap();
/// assert!(limiter.try_acquire().is_err());
/// assert_eq!(REJECTIONS.0.load(Ordering::Relaxed), 1);
/// # Ok::<(), ritmo_core::ConfigError>(())
/// ```
pub trait Listener: Sync {
    /// Handles one event.
    fn on_event(&self, event: &Event);
}
