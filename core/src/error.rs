//! Errors: a rejected call ([`RateLimitExceeded`]), a request no limiter can grant
//! ([`InvalidPermits`]), and configuration or registry mistakes ([`ConfigError`], with a stable
//! [`ErrorCode`]).

use core::fmt;
use core::time::Duration;

use crate::clock::TickRate;

/// Why a call did not get its permit.
///
/// ```
/// use ritmo_core::Reason;
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
    /// A keyed limiter had no room for a key it has not seen yet: every slot holds a key that is
    /// still being limited. `retry_after` is when the soonest of them is idle again and its slot
    /// can be reused.
    KeyCapacity,
}

impl Reason {
    /// A short lowercase description.
    ///
    /// ```
    /// # use ritmo_core::Reason;
    /// assert_eq!(Reason::NoPermitInTime.as_str(), "no permit in time");
    /// ```
    pub const fn as_str(self) -> &'static str {
        match self {
            Reason::NoPermitInTime => "no permit in time",
            Reason::Interrupted => "interrupted",
            Reason::Cancelled => "cancelled",
            Reason::KeyCapacity => "no room for a new key",
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
/// use ritmo_core::{Config, ManualClock, RateLimiter, Reason};
///
/// let clock = ManualClock::new();
/// let limiter = RateLimiter::new("api", Config::new(1, Duration::from_secs(1)).unwrap(), &clock);
/// limiter.try_acquire().unwrap();
/// let err = limiter.try_acquire().unwrap_err();
/// assert_eq!(err.instance_id(), "api");
/// assert_eq!(err.reason(), Reason::NoPermitInTime);
/// assert_eq!(err.retry_after(), Duration::from_secs(1));
/// assert_eq!(err.to_string(), "rate limiter 'api': no permit in time; retry after 1s");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimitExceeded {
    instance: &'static str,
    reason: Reason,
    wait: u64,
    unit_hz: u64,
}

impl RateLimitExceeded {
    #[inline(always)]
    pub(crate) const fn new(
        instance: &'static str,
        reason: Reason,
        wait: u64,
        unit_hz: u64,
    ) -> Self {
        RateLimitExceeded {
            instance,
            reason,
            wait,
            unit_hz,
        }
    }

    /// The id of the limiter that refused the call.
    ///
    /// ```
    /// # use ritmo_core::{Config, ManualClock, RateLimiter};
    /// # use core::time::Duration;
    /// let l = RateLimiter::new("uart", Config::new(1, Duration::from_secs(1)).unwrap(), ManualClock::new());
    /// l.try_acquire().unwrap();
    /// assert_eq!(l.try_acquire().unwrap_err().instance_id(), "uart");
    /// ```
    pub const fn instance_id(&self) -> &'static str {
        self.instance
    }

    /// Why the call was refused.
    ///
    /// ```
    /// # use ritmo_core::{Config, ManualClock, RateLimiter, Reason};
    /// # use core::time::Duration;
    /// let l = RateLimiter::new("uart", Config::new(1, Duration::from_secs(1)).unwrap(), ManualClock::new());
    /// l.try_acquire().unwrap();
    /// assert_eq!(l.try_acquire().unwrap_err().reason(), Reason::NoPermitInTime);
    /// ```
    pub const fn reason(&self) -> Reason {
        self.reason
    }

    /// How long from the refusal until the permit would arrive, rounded up to the nanosecond:
    /// waiting that long succeeds if nobody else takes the permit first. [`Duration::MAX`]-like
    /// values mean it never would (the clock is at the end of its range).
    ///
    /// ```
    /// # use ritmo_core::{Config, ManualClock, RateLimiter};
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
        TickRate::from_hz(self.unit_hz).duration_ceil(self.wait)
    }
}

impl fmt::Display for RateLimitExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "rate limiter '{}': {}; retry after {:?}",
            self.instance,
            self.reason,
            self.retry_after()
        )
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
            self.instance,
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
/// use ritmo_core::{AcquireError, Config, ManualClock, RateLimiter};
/// let l = RateLimiter::new("uart", Config::new(8, Duration::from_millis(1)).unwrap(), ManualClock::new());
/// let AcquireError::InvalidPermits(err) = l.try_acquire_n(9).unwrap_err() else { unreachable!() };
/// assert_eq!((err.requested(), err.permits()), (9, 8));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct InvalidPermits {
    instance: &'static str,
    requested: u32,
    permits: u32,
}

impl InvalidPermits {
    pub(crate) const fn new(instance: &'static str, requested: u32, permits: u32) -> Self {
        InvalidPermits {
            instance,
            requested,
            permits,
        }
    }

    /// The id of the limiter asked.
    ///
    /// ```
    /// # use ritmo_core::{AcquireError, Config, ManualClock, RateLimiter};
    /// # use core::time::Duration;
    /// let l = RateLimiter::new("uart", Config::new(8, Duration::from_millis(1)).unwrap(), ManualClock::new());
    /// let AcquireError::InvalidPermits(e) = l.try_acquire_n(0).unwrap_err() else { unreachable!() };
    /// assert_eq!(e.instance_id(), "uart");
    /// ```
    pub const fn instance_id(&self) -> &'static str {
        self.instance
    }

    /// How many permits the call asked for.
    ///
    /// ```
    /// # use ritmo_core::{AcquireError, Config, ManualClock, RateLimiter};
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
    /// # use ritmo_core::{AcquireError, Config, ManualClock, RateLimiter};
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
            self.instance, self.requested, self.permits
        )
    }
}

impl core::error::Error for InvalidPermits {}

/// The error of the calls that take `k` permits: refused for now, or impossible.
///
/// ```
/// use core::time::Duration;
/// use ritmo_core::{AcquireError, Config, ManualClock, RateLimiter};
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
    /// The rejection, if this is one.
    ///
    /// ```
    /// # use ritmo_core::{Config, ManualClock, RateLimiter};
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

/// The stable codes of configuration and registry errors (SPEC §6).
///
/// ```
/// use ritmo_core::ErrorCode;
/// assert_eq!(ErrorCode::Atr001.as_str(), "RITMO-ATR-001");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum ErrorCode {
    /// `RITMO-ATR-001`: duration text is not valid.
    Atr001,
    /// `RITMO-ATR-002`: period is zero.
    Atr002,
    /// `RITMO-ATR-003`: permits is less than 1.
    Atr003,
    /// `RITMO-ATR-006`: `enabled` is not `true`/`false`.
    Atr006,
    /// `RITMO-REG-001`: config in code gives less than 1 ns per permit.
    Reg001,
    /// `RITMO-REG-003`: config resolved from settings is invalid.
    Reg003,
    /// `RITMO-REG-004`: settings name an unknown base config.
    Reg004,
    /// `RITMO-REG-008`: an id is shared with a different config.
    Reg008,
    /// `RITMO-REG-009`: unknown limiter id.
    Reg009,
    /// `RITMO-REG-010`: registry is full.
    Reg010,
}

impl ErrorCode {
    /// The code as written in SPEC §6, e.g. `"RITMO-REG-008"`.
    ///
    /// ```
    /// # use ritmo_core::ErrorCode;
    /// assert_eq!(ErrorCode::Reg010.as_str(), "RITMO-REG-010");
    /// ```
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorCode::Atr001 => "RITMO-ATR-001",
            ErrorCode::Atr002 => "RITMO-ATR-002",
            ErrorCode::Atr003 => "RITMO-ATR-003",
            ErrorCode::Atr006 => "RITMO-ATR-006",
            ErrorCode::Reg001 => "RITMO-REG-001",
            ErrorCode::Reg003 => "RITMO-REG-003",
            ErrorCode::Reg004 => "RITMO-REG-004",
            ErrorCode::Reg008 => "RITMO-REG-008",
            ErrorCode::Reg009 => "RITMO-REG-009",
            ErrorCode::Reg010 => "RITMO-REG-010",
        }
    }

    /// What the code means, in a few words.
    ///
    /// ```
    /// # use ritmo_core::ErrorCode;
    /// assert_eq!(ErrorCode::Atr002.description(), "period is zero");
    /// ```
    pub const fn description(self) -> &'static str {
        match self {
            ErrorCode::Atr001 => "duration text is not valid",
            ErrorCode::Atr002 => "period is zero",
            ErrorCode::Atr003 => "permits is less than 1",
            ErrorCode::Atr006 => "enabled is not true/false",
            ErrorCode::Reg001 => "config gives less than 1 ns per permit",
            ErrorCode::Reg003 => "config resolved from settings is invalid",
            ErrorCode::Reg004 => "settings name an unknown base config",
            ErrorCode::Reg008 => "an id is shared with a different config",
            ErrorCode::Reg009 => "unknown limiter id",
            ErrorCode::Reg010 => "registry is full",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A few bytes of text kept inline (no heap), cut at a character boundary with `…` if too long.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct InlineText<const N: usize> {
    bytes: [u8; N],
    len: u8,
}

impl<const N: usize> InlineText<N> {
    pub(crate) const EMPTY: Self = InlineText {
        bytes: [0; N],
        len: 0,
    };

    pub(crate) fn new(text: &str) -> Self {
        let mut out = Self::EMPTY;
        let ellipsis = "…";
        let cut = if text.len() <= N {
            text.len()
        } else {
            let mut cut = N - ellipsis.len();
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            cut
        };
        out.bytes[..cut].copy_from_slice(&text.as_bytes()[..cut]);
        let mut len = cut;
        if cut < text.len() {
            out.bytes[cut..cut + ellipsis.len()].copy_from_slice(ellipsis.as_bytes());
            len += ellipsis.len();
        }
        out.len = len as u8;
        out
    }

    pub(crate) fn as_str(&self) -> &str {
        // Only ever filled from whole `&str` characters, so this cannot fail.
        core::str::from_utf8(&self.bytes[..self.len as usize]).unwrap_or("")
    }
}

impl<const N: usize> fmt::Debug for InlineText<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

/// A configuration or registry error, with its stable [`ErrorCode`].
///
/// `Display` starts with the code, then says what was wrong, quoting the offending text and naming
/// the settings key where there is one. `Copy`, no heap: long texts are cut with `…`.
///
/// ```
/// use ritmo_core::{parse_duration, ErrorCode};
/// let err = parse_duration("5 sec").unwrap_err();
/// assert_eq!(err.code(), ErrorCode::Atr001);
/// assert_eq!(err.to_string(), "RITMO-ATR-001: duration text is not valid: \"5 sec\"");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConfigError {
    code: ErrorCode,
    cause: Option<ErrorCode>,
    text: Option<InlineText<32>>,
    key: InlineText<56>,
}

impl ConfigError {
    /// An error with only a code.
    ///
    /// ```
    /// # use ritmo_core::{ConfigError, ErrorCode};
    /// assert_eq!(ConfigError::new(ErrorCode::Reg010).to_string(), "RITMO-REG-010: registry is full");
    /// ```
    pub const fn new(code: ErrorCode) -> Self {
        ConfigError {
            code,
            cause: None,
            text: None,
            key: InlineText::EMPTY,
        }
    }

    /// The same error, quoting `text` (the offending value, or an id).
    ///
    /// ```
    /// # use ritmo_core::{ConfigError, ErrorCode};
    /// let e = ConfigError::new(ErrorCode::Reg009).with_text("geocoding");
    /// assert_eq!(e.text(), "geocoding");
    /// ```
    pub fn with_text(mut self, text: &str) -> Self {
        self.text = Some(InlineText::new(text));
        self
    }

    /// The same error, naming the settings `key` it came from.
    ///
    /// ```
    /// # use ritmo_core::{ConfigError, ErrorCode};
    /// let e = ConfigError::new(ErrorCode::Reg003).with_key("instances.api.permits");
    /// assert_eq!(e.key(), Some("instances.api.permits"));
    /// ```
    pub fn with_key(mut self, key: &str) -> Self {
        self.key = InlineText::new(key);
        self
    }

    /// The same error, recording the more specific code that caused it (e.g. a `REG-003` whose
    /// cause is `ATR-003`).
    ///
    /// ```
    /// # use ritmo_core::{ConfigError, ErrorCode};
    /// let e = ConfigError::new(ErrorCode::Reg003).with_cause(ErrorCode::Atr003);
    /// assert_eq!(e.cause(), Some(ErrorCode::Atr003));
    /// ```
    pub const fn with_cause(mut self, cause: ErrorCode) -> Self {
        self.cause = Some(cause);
        self
    }

    /// The stable code.
    ///
    /// ```
    /// # use ritmo_core::{Config, ErrorCode};
    /// # use core::time::Duration;
    /// assert_eq!(Config::new(0, Duration::from_secs(1)).unwrap_err().code(), ErrorCode::Atr003);
    /// ```
    pub const fn code(&self) -> ErrorCode {
        self.code
    }

    /// The more specific code behind this one, if any.
    ///
    /// ```
    /// # use ritmo_core::{ConfigError, ErrorCode};
    /// assert_eq!(ConfigError::new(ErrorCode::Atr001).cause(), None);
    /// ```
    pub const fn cause(&self) -> Option<ErrorCode> {
        self.cause
    }

    /// The offending text (a value, an id), or `""`.
    ///
    /// ```
    /// # use ritmo_core::parse_duration;
    /// assert_eq!(parse_duration("1 s").unwrap_err().text(), "1 s");
    /// ```
    pub fn text(&self) -> &str {
        match &self.text {
            Some(text) => text.as_str(),
            None => "",
        }
    }

    /// The settings key the error came from, if any.
    ///
    /// ```
    /// # use ritmo_core::parse_duration;
    /// assert_eq!(parse_duration("1 s").unwrap_err().key(), None);
    /// ```
    pub fn key(&self) -> Option<&str> {
        match self.key.as_str() {
            "" => None,
            key => Some(key),
        }
    }

    /// Stops the build with this error's code: for `const` contexts only (see
    /// [`const_config!`](crate::const_config)).
    #[doc(hidden)]
    pub const fn fail_build(self) -> ! {
        match self.code {
            ErrorCode::Atr002 => panic!("RITMO-ATR-002: period is zero"),
            ErrorCode::Atr003 => panic!("RITMO-ATR-003: permits is less than 1"),
            ErrorCode::Reg001 => panic!("RITMO-REG-001: config gives less than 1 ns per permit"),
            _ => panic!("invalid ritmo config"),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.code.description())?;
        if let Some(cause) = self.cause {
            write!(f, " ({}: {})", cause.as_str(), cause.description())?;
        }
        if let Some(text) = &self.text {
            write!(f, ": {:?}", text.as_str())?;
        }
        if let Some(key) = self.key() {
            write!(f, " at key {key}")?;
        }
        Ok(())
    }
}

impl core::error::Error for ConfigError {}

#[cfg(feature = "defmt")]
impl defmt::Format for ConfigError {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(
            f,
            "{=str}: {=str} {=str} {=str}",
            self.code.as_str(),
            self.code.description(),
            self.text(),
            self.key.as_str()
        )
    }
}
