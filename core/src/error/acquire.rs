//! Errors of the calls that take permits: [`RateLimitExceeded`] (refused for now),
//! [`InvalidPermits`] (can never succeed), and [`AcquireError`] (either).

use core::fmt;
use core::time::Duration;

use crate::rate::{Rate, wait_duration};

/// Why a call did not get its permit.
///
/// ```
/// use ritmo::Reason;
/// assert_eq!(Reason::Interrupted.as_str(), "interrupted");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Reason {
    /// No permit would arrive within `max_wait` (0 by default: no permit right now).
    NoPermitInTime,
    /// The caller was waiting for its reserved permit and was interrupted.
    Interrupted,
    /// The caller gave up its reservation before its slot (a dropped future, a cancelled
    /// reservation).
    Cancelled,
    /// The shared store that holds the quota (Redis, Valkey) did not answer in time, and the
    /// limiter's declared policy for that case is to reject.
    Unavailable,
    /// A keyed limiter had no room for a key it has not seen yet: every slot holds a key that is
    /// still being limited. `retry_after` is when the soonest of them is idle again and its slot
    /// can be reused.
    KeyCapacity,
    /// A tiered keyed limiter's tier function answered, for this call's key, an index with no
    /// tier. Retrying cannot help (`retry_after` is as long as a wait can be): the function, or
    /// the tiers given to the limiter, must change.
    UnknownTier,
}

impl Reason {
    /// A short lowercase description.
    ///
    /// ```
    /// # use ritmo::Reason;
    /// assert_eq!(Reason::NoPermitInTime.as_str(), "no permit in time");
    /// ```
    pub const fn as_str(self) -> &'static str {
        match self {
            Reason::NoPermitInTime => "no permit in time",
            Reason::Interrupted => "interrupted",
            Reason::Cancelled => "cancelled",
            Reason::Unavailable => "store unavailable",
            Reason::KeyCapacity => "no room for a new key",
            Reason::UnknownTier => "no tier for the key",
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A call was not let through: the limiter's id, why, and how long until its permit would arrive.
///
/// Small, `Copy` and allocation-free; the rejected path only fills in numbers, and
/// [`retry_after`](RateLimitExceeded::retry_after) converts them to a duration when asked.
///
/// ```
/// use core::time::Duration;
/// use ritmo::{Config, ManualClock, RateLimiter, Reason};
///
/// let clock = ManualClock::new();
/// let limiter = RateLimiter::new("api", Config::new(1, Duration::from_secs(1)).unwrap(), &clock);
/// limiter.try_acquire().unwrap();
/// let err = limiter.try_acquire().unwrap_err();
/// assert_eq!(err.id(), "api");
/// assert_eq!(err.reason(), Reason::NoPermitInTime);
/// assert_eq!(err.retry_after(), Duration::from_secs(1));
/// assert_eq!(err.to_string(), "rate limiter 'api': no permit in time; retry after 1s");
/// // `Debug` shows the wait as a duration, not as the limiter's internal ticks.
/// assert_eq!(
///     format!("{err:?}"),
///     "RateLimitExceeded { id: \"api\", reason: NoPermitInTime, retry_after: 1s }"
/// );
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct RateLimitExceeded {
    id: &'static str,
    reason: Reason,
    /// Readings are shifted left by this many bits into the units `wait` counts (see the
    /// limiter's unit conversion); `retry_after` rounds `wait` up to whole ticks with it.
    shift: u8,
    wait: u64,
    unit_hz: u64,
}

/// The id, the reason and `retry_after`: the raw wait in internal units (and their rate and
/// shift) would mean nothing to a reader.
impl fmt::Debug for RateLimitExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimitExceeded")
            .field("id", &self.id)
            .field("reason", &self.reason)
            .field("retry_after", &self.retry_after())
            .finish()
    }
}

impl RateLimitExceeded {
    #[inline(always)]
    pub(crate) const fn new(
        id: &'static str,
        reason: Reason,
        wait: u64,
        unit_hz: u64,
        shift: u8,
    ) -> Self {
        RateLimitExceeded {
            id,
            reason,
            shift,
            wait,
            unit_hz,
        }
    }

    /// A refusal decided outside a [`RateLimiter`](crate::RateLimiter): by a shared store, a
    /// keyed table, an adapter. `retry_after` is kept to the nanosecond.
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::{RateLimitExceeded, Reason};
    /// let err = RateLimitExceeded::from_parts("api", Reason::Unavailable, Duration::from_millis(50));
    /// assert_eq!(err.reason(), Reason::Unavailable);
    /// assert_eq!(err.retry_after(), Duration::from_millis(50));
    /// assert_eq!(err.to_string(), "rate limiter 'api': store unavailable; retry after 50ms");
    /// ```
    pub const fn from_parts(id: &'static str, reason: Reason, retry_after: Duration) -> Self {
        let nanos = retry_after.as_nanos();
        let wait = if nanos > u64::MAX as u128 {
            u64::MAX
        } else {
            nanos as u64
        };
        RateLimitExceeded::new(id, reason, wait, 1_000_000_000, 0)
    }

    /// The id of the limiter that refused the call.
    ///
    /// ```
    /// # use ritmo::{Config, ManualClock, RateLimiter};
    /// # use core::time::Duration;
    /// let l = RateLimiter::new("uart", Config::new(1, Duration::from_secs(1)).unwrap(), ManualClock::new());
    /// l.try_acquire().unwrap();
    /// assert_eq!(l.try_acquire().unwrap_err().id(), "uart");
    /// ```
    pub const fn id(&self) -> &'static str {
        self.id
    }

    /// Why the call was refused.
    ///
    /// ```
    /// # use ritmo::{Config, ManualClock, RateLimiter, Reason};
    /// # use core::time::Duration;
    /// let l = RateLimiter::new("uart", Config::new(1, Duration::from_secs(1)).unwrap(), ManualClock::new());
    /// l.try_acquire().unwrap();
    /// assert_eq!(l.try_acquire().unwrap_err().reason(), Reason::NoPermitInTime);
    /// ```
    pub const fn reason(&self) -> Reason {
        self.reason
    }

    /// How long from the refusal until the permit would arrive: waiting that long succeeds if
    /// nobody else takes the permit first. It is rounded up to the whole clock tick at which the
    /// permit is there (on a 32768 Hz clock, a multiple of 1/32768 s), then to the nanosecond, so
    /// that a clock whose reading counts whole ticks has reached the permit by then. Values near
    /// [`Duration::MAX`] mean it never would (the clock is at the end of its range).
    ///
    /// ```
    /// # use ritmo::{Config, ManualClock, RateLimiter};
    /// # use core::time::Duration;
    /// let clock = ManualClock::new();
    /// let l = RateLimiter::new("x", Config::new(3, Duration::from_secs(1)).unwrap(), &clock);
    /// for _ in 0..3 { l.try_acquire().unwrap(); }
    /// let wait = l.try_acquire().unwrap_err().retry_after();
    /// assert_eq!(wait, Duration::from_nanos(333_333_334)); // 1 s / 3, rounded up
    /// clock.advance(wait);
    /// assert!(l.try_acquire().is_ok());
    /// ```
    pub const fn retry_after(&self) -> Duration {
        wait_duration(self.wait, self.unit_hz, self.shift as u32)
    }
}

impl fmt::Display for RateLimitExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "rate limiter '{}': {}; retry after {}",
            self.id,
            self.reason,
            HumanDuration(self.retry_after())
        )
    }
}

/// A duration as a person reads it, rounded up to the millisecond (a wait printed is never short
/// of the real one) and written in the largest units that fit: `0s`, `250ms`, `1.5s`, `30s`,
/// `2m5.5s`, `1h`, `1h0m1s`. How [`RateLimitExceeded`] prints its `retry_after`.
///
/// ```
/// use core::time::Duration;
/// use ritmo::HumanDuration;
/// assert_eq!(HumanDuration(Duration::from_nanos(29_999_943_846)).to_string(), "30s");
/// assert_eq!(HumanDuration(Duration::from_micros(1_500_001)).to_string(), "1.501s");
/// assert_eq!(HumanDuration(Duration::from_secs(125)).to_string(), "2m5s");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HumanDuration(pub Duration);

impl fmt::Display for HumanDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = self.0;
        let millis = d.as_millis() + u128::from(!d.subsec_nanos().is_multiple_of(1_000_000));
        if millis == 0 {
            return f.write_str("0s");
        }
        if millis < 1000 {
            return write!(f, "{millis}ms");
        }
        let (secs, ms) = (millis / 1000, millis % 1000);
        let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
        if h > 0 {
            write!(f, "{h}h")?;
        }
        if h > 0 && (m > 0 || s > 0 || ms > 0) || m > 0 {
            write!(f, "{m}m")?;
        }
        if s > 0 || ms > 0 || (h == 0 && m == 0) {
            write!(f, "{s}")?;
            // The fraction without trailing zeros: .5, .25, .125.
            match ms {
                0 => {}
                _ if ms % 100 == 0 => write!(f, ".{}", ms / 100)?,
                _ if ms % 10 == 0 => write!(f, ".{:02}", ms / 10)?,
                _ => write!(f, ".{ms:03}")?,
            }
            f.write_str("s")?;
        }
        Ok(())
    }
}

impl core::error::Error for RateLimitExceeded {}

#[cfg(feature = "defmt")]
impl defmt::Format for RateLimitExceeded {
    fn format(&self, f: defmt::Formatter<'_>) {
        let after = self.retry_after();
        defmt::write!(
            f,
            "rate limiter '{=str}': {}; retry after {=u64}.{=u32:09}s",
            self.id,
            self.reason,
            after.as_secs(),
            after.subsec_nanos()
        )
    }
}

/// A call asked for a number of permits no limiter state can grant: `0`, or more than the
/// limiter's `permits`. Retrying cannot help, so this is not a [`RateLimitExceeded`].
///
/// ```
/// use core::time::Duration;
/// use ritmo::{AcquireError, Config, ManualClock, RateLimiter};
/// let l = RateLimiter::new("uart", Config::new(8, Duration::from_millis(1)).unwrap(), ManualClock::new());
/// let AcquireError::InvalidPermits(err) = l.try_acquire_n(9).unwrap_err() else { unreachable!() };
/// assert_eq!((err.requested(), err.permits()), (9, 8));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct InvalidPermits {
    id: &'static str,
    requested: u32,
    permits: u32,
}

impl InvalidPermits {
    /// A request of `requested` permits to the limiter `id`, which has `permits` per period: for
    /// adapters that check a request before it reaches a limiter.
    ///
    /// ```
    /// # use ritmo::InvalidPermits;
    /// let err = InvalidPermits::new("uart", 0, 8);
    /// assert_eq!((err.requested(), err.permits()), (0, 8));
    /// ```
    pub const fn new(id: &'static str, requested: u32, permits: u32) -> Self {
        InvalidPermits {
            id,
            requested,
            permits,
        }
    }

    /// The id of the limiter asked.
    ///
    /// ```
    /// # use ritmo::{AcquireError, Config, ManualClock, RateLimiter};
    /// # use core::time::Duration;
    /// let l = RateLimiter::new("uart", Config::new(8, Duration::from_millis(1)).unwrap(), ManualClock::new());
    /// let AcquireError::InvalidPermits(e) = l.try_acquire_n(0).unwrap_err() else { unreachable!() };
    /// assert_eq!(e.id(), "uart");
    /// ```
    pub const fn id(&self) -> &'static str {
        self.id
    }

    /// How many permits the call asked for.
    ///
    /// ```
    /// # use ritmo::{AcquireError, Config, ManualClock, RateLimiter};
    /// # use core::time::Duration;
    /// let l = RateLimiter::new("uart", Config::new(8, Duration::from_millis(1)).unwrap(), ManualClock::new());
    /// let AcquireError::InvalidPermits(e) = l.try_acquire_n(0).unwrap_err() else { unreachable!() };
    /// assert_eq!(e.requested(), 0);
    /// ```
    pub const fn requested(&self) -> u32 {
        self.requested
    }

    /// The limiter's `permits`: the most one call can take.
    ///
    /// ```
    /// # use ritmo::{AcquireError, Config, ManualClock, RateLimiter};
    /// # use core::time::Duration;
    /// let l = RateLimiter::new("uart", Config::new(8, Duration::from_millis(1)).unwrap(), ManualClock::new());
    /// let AcquireError::InvalidPermits(e) = l.try_acquire_n(100).unwrap_err() else { unreachable!() };
    /// assert_eq!(e.permits(), 8);
    /// ```
    pub const fn permits(&self) -> u32 {
        self.permits
    }
}

impl fmt::Display for InvalidPermits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "rate limiter '{}': a call asked for {} permits, but calls may take 1 to {}; retrying cannot help",
            self.id, self.requested, self.permits
        )
    }
}

impl core::error::Error for InvalidPermits {}

/// The error of the calls that take `k` permits: refused for now, or impossible.
///
/// ```
/// use core::time::Duration;
/// use ritmo::{AcquireError, Config, ManualClock, RateLimiter};
/// let l = RateLimiter::new("frames", Config::new(4, Duration::from_secs(1)).unwrap(), ManualClock::new());
/// assert!(l.try_acquire_n(4).is_ok());
/// assert!(matches!(l.try_acquire_n(1), Err(AcquireError::RateLimited(_))));
/// assert!(matches!(l.try_acquire_n(5), Err(AcquireError::InvalidPermits(_))));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum AcquireError {
    /// Refused now; may succeed after [`RateLimitExceeded::retry_after`].
    RateLimited(RateLimitExceeded),
    /// `k = 0` or `k > permits`: can never succeed.
    InvalidPermits(InvalidPermits),
}

impl AcquireError {
    /// The refusal of a call of one permit, which is always valid: never `InvalidPermits`.
    #[inline(always)]
    pub(crate) fn one_permit(self) -> RateLimitExceeded {
        match self {
            AcquireError::RateLimited(e) => e,
            AcquireError::InvalidPermits(_) => unreachable!("1 permit is always valid"),
        }
    }

    /// The rejection, if this is one.
    ///
    /// ```
    /// # use ritmo::{Config, ManualClock, RateLimiter};
    /// # use core::time::Duration;
    /// let l = RateLimiter::new("x", Config::new(1, Duration::from_secs(1)).unwrap(), ManualClock::new());
    /// assert!(l.try_acquire_n(2).unwrap_err().rate_limited().is_none());
    /// ```
    pub const fn rate_limited(&self) -> Option<&RateLimitExceeded> {
        match self {
            AcquireError::RateLimited(e) => Some(e),
            AcquireError::InvalidPermits(_) => None,
        }
    }
}

impl From<RateLimitExceeded> for AcquireError {
    fn from(e: RateLimitExceeded) -> Self {
        AcquireError::RateLimited(e)
    }
}

impl From<InvalidPermits> for AcquireError {
    fn from(e: InvalidPermits) -> Self {
        AcquireError::InvalidPermits(e)
    }
}

impl fmt::Display for AcquireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AcquireError::RateLimited(e) => e.fmt(f),
            AcquireError::InvalidPermits(e) => e.fmt(f),
        }
    }
}

impl core::error::Error for AcquireError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            AcquireError::RateLimited(e) => Some(e),
            AcquireError::InvalidPermits(e) => Some(e),
        }
    }
}

impl Rate {
    /// The error of a call of the limiter `id` refused for `reason`, `wait` units before its
    /// permits would arrive (a keyed limiter's too: its rules keep one `Rate`).
    #[inline(always)]
    pub(crate) const fn refusal(
        &self,
        id: &'static str,
        reason: Reason,
        wait: u64,
    ) -> RateLimitExceeded {
        RateLimitExceeded::new(id, reason, wait, self.unit_hz, self.shift)
    }
}
