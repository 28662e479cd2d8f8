//! Events: what a limiter tells a listener the user installed.
//!
//! Admitted calls publish nothing. Rejections, reservations that wait for a later permit, and
//! released reservations (a permit returned, or a
//! slot left unused because later callers were queued behind it) go to the limiter's
//! [`Listener`], if it has one. A limiter without a listener pays one untaken branch on those
//! paths and nothing on the admitted one. Listeners are `&'static` and fixed when the limiter is
//! built, so nothing allocates and nothing is looked up.

use crate::error::{RateLimitExceeded, Reason};
use crate::rate::Rate;

/// Something a limiter reports to its listener.
///
/// ```
/// use ritmo::{Event, Reason};
/// let e = Event::Released { id: "radio", permits: 2, reason: Reason::Cancelled, returned: true };
/// assert_eq!(e.id(), "radio");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Event {
    /// A call was refused.
    Rejected(RateLimitExceeded),
    /// A call reserved a permit that arrives later, and waits for it (published when the
    /// reservation is made: the wait is known then), to listeners whose
    /// [`wants_waiting`](Listener::wants_waiting) says so.
    Waiting {
        /// The limiter's id.
        id: &'static str,
        /// How many permits it reserved.
        permits: u32,
        /// How long it waits for them, rounded up.
        wait: core::time::Duration,
    },
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
    /// # use ritmo::{Event, Reason};
    /// let e = Event::Released { id: "uart", permits: 1, reason: Reason::Interrupted, returned: false };
    /// assert_eq!(e.id(), "uart");
    /// ```
    pub const fn id(&self) -> &'static str {
        match self {
            Event::Rejected(e) => e.id(),
            Event::Waiting { id, .. } => id,
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
/// use ritmo::{Config, Event, Listener, ManualClock, RateLimiter};
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
/// # Ok::<(), ritmo::ConfigError>(())
/// ```
pub trait Listener: Sync {
    /// Handles one event.
    fn on_event(&self, event: &Event);

    /// Whether it also wants [`Event::Waiting`] (a reservation that waits for a later permit, with
    /// its wait: what a wait-time histogram needs). `false` unless overridden: a call admitted,
    /// at once or after a wait, publishes nothing to a listener that does not ask.
    fn wants_waiting(&self) -> bool {
        false
    }
}

/// Tells `listener` that a call was refused with `error`: out of line, so that a path that may
/// publish a refusal costs only an untaken branch where no one listens.
#[cold]
#[inline(never)]
pub(crate) fn publish_rejected(listener: &dyn Listener, error: RateLimitExceeded) {
    listener.on_event(&Event::Rejected(error));
}

/// Tells `listener`, if it [`wants_waiting`](Listener::wants_waiting), that a call of `permits`
/// on the limiter `id` reserved a slot `wait` away: out of line, as
/// [`publish_rejected`].
#[cold]
#[inline(never)]
pub(crate) fn publish_waiting(
    listener: &dyn Listener,
    id: &'static str,
    permits: u32,
    wait: core::time::Duration,
) {
    if listener.wants_waiting() {
        listener.on_event(&Event::Waiting { id, permits, wait });
    }
}

/// Two listeners in one: every event goes to the first, then to the second (metrics and logs, say).
///
/// ```
/// use core::time::Duration;
/// use portable_atomic::{AtomicU32, Ordering};
/// use ritmo::{Config, Event, Listener, ManualClock, RateLimiter, Tee};
///
/// struct Count(AtomicU32);
/// impl Listener for Count {
///     fn on_event(&self, _: &Event) {
///         self.0.fetch_add(1, Ordering::Relaxed);
///     }
/// }
/// static A: Count = Count(AtomicU32::new(0));
/// static B: Count = Count(AtomicU32::new(0));
/// static BOTH: Tee<&Count, &Count> = Tee(&A, &B);
/// let l = RateLimiter::new("x", Config::new(1, Duration::from_secs(1))?, ManualClock::new())
///     .with_listener(&BOTH);
/// l.try_acquire().unwrap();
/// assert!(l.try_acquire().is_err());
/// assert_eq!((A.0.load(Ordering::Relaxed), B.0.load(Ordering::Relaxed)), (1, 1));
/// # Ok::<(), ritmo::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Tee<A, B>(pub A, pub B);

impl<A: Listener, B: Listener> Listener for Tee<A, B> {
    fn on_event(&self, event: &Event) {
        let waiting = matches!(event, Event::Waiting { .. });
        if !waiting || self.0.wants_waiting() {
            self.0.on_event(event);
        }
        if !waiting || self.1.wants_waiting() {
            self.1.on_event(event);
        }
    }

    fn wants_waiting(&self) -> bool {
        self.0.wants_waiting() || self.1.wants_waiting()
    }
}

impl<L: Listener + ?Sized> Listener for &L {
    fn on_event(&self, event: &Event) {
        (**self).on_event(event);
    }

    fn wants_waiting(&self) -> bool {
        (**self).wants_waiting()
    }
}

impl Rate {
    /// A call of the limiter `id` refused for want of permits, `wait` units before they would
    /// arrive: its error, told to `listener` if there is one (out of line). The one way a single
    /// limiter and bands publish a refusal; a keyed limiter, which also counts it and tells its
    /// key's listener, builds the error with [`refusal`](Self::refusal).
    #[inline(always)]
    pub(crate) fn rejected(
        &self,
        id: &'static str,
        wait: u64,
        listener: Option<&'static dyn Listener>,
    ) -> RateLimitExceeded {
        // Built where each use needs it: a caller that drops the error builds it only for the
        // listener (on a Cortex-M0 that keeps the refusal's registers free: 8 bytes of flash).
        if let Some(listener) = listener {
            publish_rejected(listener, self.refusal(id, Reason::NoPermitInTime, wait));
        }
        self.refusal(id, Reason::NoPermitInTime, wait)
    }
}
