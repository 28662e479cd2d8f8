//! A limiter's configuration: `permits` per `period`, how long a call may wait
//! (`max_wait`), and whether the limiter is `enabled`.
//!
//! Durations come as [`core::time::Duration`], as fugit durations, or as text: an integer followed
//! by `ns`, `us`, `ms`, `s`, `m`, `h` or `d` (`"500ms"`, `"1s"`), or `"0"`
//! ([`parse_duration`]). Anything else is `RITMO-ATR-001`, quoting the text. Text is taken exactly
//! as written: no spaces, no signs, units in lowercase.

use core::time::Duration;

use crate::error::{ConfigError, ErrorCode};

/// A validated limiter configuration. `Copy`, and buildable in a `const` context.
///
/// | attribute | meaning | default |
/// | --- | --- | --- |
/// | `permits` | permits per period, `>= 1` | required |
/// | `period` | length of the period, `> 0`, at least 1 ns per permit | required |
/// | `max_wait` | longest a call may wait for its permit | 0 (reject at once) |
/// | `enabled` | `false` lets every call pass | `true` |
///
/// ```
/// use core::time::Duration;
/// use ritmo::Config;
///
/// let config = Config::new(5, Duration::from_secs(1))?.with_max_wait(Duration::from_millis(500));
/// assert_eq!(config.permits(), 5);
/// assert_eq!(config.emission_interval(), Duration::from_millis(200));
///
/// // The same from text, as settings files write it.
/// let same = Config::builder().permits(5).period("1s").max_wait("500ms").build()?;
/// assert_eq!(config, same);
/// # Ok::<(), ritmo::ConfigError>(())
/// ```
///
/// With the `serde` feature it is `Serialize` and `Deserialize` (fields `permits`, `period`,
/// `max_wait`, `enabled`; durations as serde writes a `Duration`), and reading one checks it as
/// [`Config::new`] does: an invalid config is a deserialization error naming its code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(try_from = "UncheckedConfig"))]
pub struct Config {
    permits: u32,
    period: Duration,
    max_wait: Duration,
    enabled: bool,
}

impl Config {
    /// `permits` per `period`, with `max_wait` 0 and enabled.
    ///
    /// **What it guarantees per window**: `permits` is both the burst and the count per period.
    /// In any window of length `w` a limiter admits at most `permits + floor(w / T)` permits
    /// (`T = period / permits`): after a quiet time a full burst, then the steady rate. So
    /// "36 per hour" admits up to 72 in some hour, not 36 ([`max_in_window`](Config::max_in_window)
    /// computes the bound). For "at most `X` in any window of length `W`" (a duty cycle, a quota a
    /// regulation states per window) use [`Config::at_most`].
    ///
    /// Errors: `permits == 0` is `RITMO-ATR-003`; a zero `period` is `RITMO-ATR-002`; a period
    /// shorter than `permits` nanoseconds (less than 1 ns per permit) is `RITMO-REG-001`.
    ///
    /// ```
    /// # use ritmo::{Config, ErrorCode};
    /// # use core::time::Duration;
    /// assert!(Config::new(1_000_000_000, Duration::from_secs(1)).is_ok());
    /// let err = Config::new(1_000_000_001, Duration::from_secs(1)).unwrap_err();
    /// assert_eq!(err.code(), ErrorCode::TooFast);
    /// assert_eq!(Config::new(1, Duration::ZERO).unwrap_err().code(), ErrorCode::ZeroPeriod);
    /// ```
    pub const fn new(permits: u32, period: Duration) -> Result<Config, ConfigError> {
        if permits == 0 {
            return Err(ConfigError::new(ErrorCode::InvalidPermits));
        }
        if period.is_zero() {
            return Err(ConfigError::new(ErrorCode::ZeroPeriod));
        }
        if period.as_nanos() < permits as u128 {
            return Err(ConfigError::new(ErrorCode::TooFast));
        }
        Ok(Config {
            permits,
            period,
            max_wait: Duration::ZERO,
            enabled: true,
        })
    }

    /// A config from parts already known to be valid (a limiter rebuilding the one it applies).
    #[cfg_attr(feature = "reconfigure", allow(dead_code))]
    pub(crate) const fn from_parts(
        permits: u32,
        period: Duration,
        max_wait: Duration,
        enabled: bool,
    ) -> Config {
        Config {
            permits,
            period,
            max_wait,
            enabled,
        }
    }

    /// Starts a builder that takes durations as text or fugit values too.
    ///
    /// ```
    /// # use ritmo::{Config, ErrorCode};
    /// let err = Config::builder().permits(10).period("1 second").build().unwrap_err();
    /// assert_eq!(err.code(), ErrorCode::InvalidDuration);
    /// ```
    pub const fn builder() -> ConfigBuilder {
        ConfigBuilder {
            permits: None,
            period: None,
            max_wait: Duration::ZERO,
            enabled: true,
            error: None,
        }
    }

    /// The same config with calls allowed to wait up to `max_wait` for their permit.
    ///
    /// ```
    /// # use ritmo::Config;
    /// # use core::time::Duration;
    /// let c = Config::new(5, Duration::from_secs(1)).unwrap().with_max_wait(Duration::from_millis(500));
    /// assert_eq!(c.max_wait(), Duration::from_millis(500));
    /// ```
    #[must_use = "with_max_wait returns a new config; the one it is called on is unchanged"]
    pub const fn with_max_wait(mut self, max_wait: Duration) -> Config {
        self.max_wait = max_wait;
        self
    }

    /// The same config, enabled or not. A disabled limiter lets every call pass and counts nothing.
    ///
    /// ```
    /// # use ritmo::Config;
    /// # use core::time::Duration;
    /// let c = Config::new(5, Duration::from_secs(1)).unwrap().with_enabled(false);
    /// assert!(!c.enabled());
    /// ```
    #[must_use = "with_enabled returns a new config; the one it is called on is unchanged"]
    pub const fn with_enabled(mut self, enabled: bool) -> Config {
        self.enabled = enabled;
        self
    }

    /// Permits per period.
    ///
    /// ```
    /// # use ritmo::Config;
    /// # use core::time::Duration;
    /// assert_eq!(Config::new(5, Duration::from_secs(1)).unwrap().permits(), 5);
    /// ```
    pub const fn permits(&self) -> u32 {
        self.permits
    }

    /// The period.
    ///
    /// ```
    /// # use ritmo::Config;
    /// # use core::time::Duration;
    /// assert_eq!(Config::new(5, Duration::from_secs(1)).unwrap().period(), Duration::from_secs(1));
    /// ```
    pub const fn period(&self) -> Duration {
        self.period
    }

    /// The longest a call may wait for its permit.
    ///
    /// ```
    /// # use ritmo::Config;
    /// # use core::time::Duration;
    /// assert_eq!(Config::new(5, Duration::from_secs(1)).unwrap().max_wait(), Duration::ZERO);
    /// ```
    pub const fn max_wait(&self) -> Duration {
        self.max_wait
    }

    /// Whether the limiter limits at all.
    ///
    /// ```
    /// # use ritmo::Config;
    /// # use core::time::Duration;
    /// assert!(Config::new(5, Duration::from_secs(1)).unwrap().enabled());
    /// ```
    pub const fn enabled(&self) -> bool {
        self.enabled
    }

    /// The emission interval `T = period / permits`, rounded up to the nanosecond.
    ///
    /// ```
    /// # use ritmo::Config;
    /// # use core::time::Duration;
    /// let c = Config::new(3, Duration::from_secs(1)).unwrap();
    /// assert_eq!(c.emission_interval(), Duration::from_nanos(333_333_334));
    /// ```
    pub const fn emission_interval(&self) -> Duration {
        let ns = self.period.as_nanos().div_ceil(self.permits as u128);
        Duration::new((ns / 1_000_000_000) as u64, (ns % 1_000_000_000) as u32)
    }
}

/// A config as read by serde, before it is checked.
#[cfg(feature = "serde")]
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct UncheckedConfig {
    permits: u32,
    period: Duration,
    #[serde(default)]
    max_wait: Duration,
    #[serde(default = "enabled_by_default")]
    enabled: bool,
}

#[cfg(feature = "serde")]
const fn enabled_by_default() -> bool {
    true
}

#[cfg(feature = "serde")]
impl TryFrom<UncheckedConfig> for Config {
    type Error = ConfigError;

    fn try_from(c: UncheckedConfig) -> Result<Config, ConfigError> {
        Ok(Config::new(c.permits, c.period)?
            .with_max_wait(c.max_wait)
            .with_enabled(c.enabled))
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for Config {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(
            f,
            "Config {{ permits: {=u32}, period: {=u128}ns, max_wait: {=u128}ns, enabled: {=bool} }}",
            self.permits,
            self.period.as_nanos(),
            self.max_wait.as_nanos(),
            self.enabled
        )
    }
}

/// Builds a [`Config`] in a `const` context, so that a bad config fails the build instead of
/// panicking at run time. Takes `permits` and a [`Duration`] period.
///
/// ```
/// use core::time::Duration;
/// use ritmo::{const_config, Config, ManualClock, RateLimiter};
///
/// static CLOCK: ManualClock = ManualClock::new();
/// static UART: RateLimiter<&ManualClock> =
///     RateLimiter::new("uart", const_config!(960, Duration::from_secs(1)), &CLOCK);
/// assert_eq!(UART.config().permits(), 960);
/// ```
///
/// ```compile_fail
/// # use core::time::Duration;
/// const BAD: ritmo::Config = ritmo::const_config!(0, Duration::from_secs(1));
/// ```
#[macro_export]
macro_rules! const_config {
    ($permits:expr, $period:expr $(,)?) => {
        const {
            match $crate::Config::new($permits, $period) {
                ::core::result::Result::Ok(config) => config,
                ::core::result::Result::Err(error) => error.fail_build(),
            }
        }
    };
}

/// Builds a [`Config`] from values that may be text or fugit durations; the first bad value is the
/// error. Missing `permits` is `RITMO-ATR-003`, a missing `period` `RITMO-ATR-002`.
///
/// ```
/// use ritmo::{Config, ErrorCode};
/// let c = Config::builder()
///     .permits(10)
///     .period(fugit::MillisDurationU32::from_ticks(1000))
///     .max_wait("250ms")
///     .enabled_text("true")
///     .build()?;
/// assert_eq!(c.max_wait().as_millis(), 250);
/// let err = Config::builder().permits(1).period("1s").enabled_text("yes").build().unwrap_err();
/// assert_eq!(err.code(), ErrorCode::InvalidBool);
/// # Ok::<(), ritmo::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy)]
#[must_use]
pub struct ConfigBuilder {
    permits: Option<u32>,
    period: Option<Duration>,
    max_wait: Duration,
    enabled: bool,
    error: Option<ConfigError>,
}

impl ConfigBuilder {
    fn keep(&mut self, result: Result<Duration, ConfigError>) -> Option<Duration> {
        match result {
            Ok(d) => Some(d),
            Err(e) => {
                self.error.get_or_insert(e);
                None
            }
        }
    }

    /// Sets `permits`.
    ///
    /// ```
    /// # use ritmo::Config;
    /// assert_eq!(Config::builder().permits(3).period("1s").build().unwrap().permits(), 3);
    /// ```
    pub fn permits(mut self, permits: u32) -> Self {
        self.permits = Some(permits);
        self
    }

    /// Sets `period`.
    ///
    /// ```
    /// # use ritmo::Config;
    /// # use core::time::Duration;
    /// let c = Config::builder().permits(3).period(Duration::from_secs(3)).build().unwrap();
    /// assert_eq!(c.period(), Duration::from_secs(3));
    /// ```
    pub fn period(mut self, period: impl DurationValue) -> Self {
        if let Some(d) = self.keep(period.to_duration()) {
            self.period = Some(d);
        }
        self
    }

    /// Sets `max_wait`.
    ///
    /// ```
    /// # use ritmo::Config;
    /// let c = Config::builder().permits(3).period("1s").max_wait("2s").build().unwrap();
    /// assert_eq!(c.max_wait().as_secs(), 2);
    /// ```
    pub fn max_wait(mut self, max_wait: impl DurationValue) -> Self {
        if let Some(d) = self.keep(max_wait.to_duration()) {
            self.max_wait = d;
        }
        self
    }

    /// Sets `enabled`.
    ///
    /// ```
    /// # use ritmo::Config;
    /// assert!(!Config::builder().permits(3).period("1s").enabled(false).build().unwrap().enabled());
    /// ```
    pub fn enabled(mut self, enabled: bool) -> Self {
        self.enabled = enabled;
        self
    }

    /// Sets `enabled` from text: `"true"` or `"false"`, else `RITMO-ATR-006`.
    ///
    /// ```
    /// # use ritmo::{Config, ErrorCode};
    /// let err = Config::builder().permits(3).period("1s").enabled_text("TRUE").build().unwrap_err();
    /// assert_eq!(err.code(), ErrorCode::InvalidBool);
    /// ```
    pub fn enabled_text(mut self, text: &str) -> Self {
        match parse_bool(text) {
            Ok(b) => self.enabled = b,
            Err(e) => {
                self.error.get_or_insert(e);
            }
        }
        self
    }

    /// Validates and returns the config.
    ///
    /// ```
    /// # use ritmo::{Config, ErrorCode};
    /// assert_eq!(Config::builder().period("1s").build().unwrap_err().code(), ErrorCode::InvalidPermits);
    /// ```
    pub fn build(self) -> Result<Config, ConfigError> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let permits = self.permits.unwrap_or(0);
        let period = self.period.unwrap_or(Duration::ZERO);
        Config::new(permits, period)
            .map(|c| c.with_max_wait(self.max_wait).with_enabled(self.enabled))
    }
}

/// A value that can be read as a duration: [`Duration`], fugit durations and text.
///
/// ```
/// use core::time::Duration;
/// use ritmo::DurationValue;
/// assert_eq!("1500us".to_duration(), Ok(Duration::from_micros(1500)));
/// assert_eq!(fugit::SecsDurationU64::from_ticks(2).to_duration(), Ok(Duration::from_secs(2)));
/// ```
pub trait DurationValue {
    /// The duration, or `RITMO-ATR-001` if it is not one.
    fn to_duration(self) -> Result<Duration, ConfigError>;
}

impl DurationValue for Duration {
    fn to_duration(self) -> Result<Duration, ConfigError> {
        Ok(self)
    }
}

impl DurationValue for &str {
    fn to_duration(self) -> Result<Duration, ConfigError> {
        parse_duration(self)
    }
}

macro_rules! fugit_duration {
    ($($int:ty),*) => {$(
        impl<const NOM: u64, const DENOM: u64> DurationValue for fugit::Duration<$int, NOM, DENOM> {
            /// Converted exactly where it can be; a fraction of a nanosecond is rounded up.
            fn to_duration(self) -> Result<Duration, ConfigError> {
                let ns = (self.as_ticks() as u128 * NOM as u128 * 1_000_000_000).div_ceil(DENOM.max(1) as u128);
                let secs = ns / 1_000_000_000;
                if secs > u64::MAX as u128 {
                    return Err(ConfigError::new(ErrorCode::InvalidDuration));
                }
                Ok(Duration::new(secs as u64, (ns % 1_000_000_000) as u32))
            }
        }
    )*};
}
fugit_duration!(u32, u64);

/// Reads a duration from text: an integer followed by `ns`, `us`, `ms`, `s`, `m`, `h` or `d`, or
/// `"0"`. Anything else (spaces, signs, fractions, other units or cases, a value too large for a
/// [`Duration`]) is `RITMO-ATR-001` with the text quoted.
///
/// ```
/// use core::time::Duration;
/// use ritmo::{parse_duration, ErrorCode};
/// assert_eq!(parse_duration("500ms")?, Duration::from_millis(500));
/// assert_eq!(parse_duration("2m")?, Duration::from_secs(120));
/// assert_eq!(parse_duration("0")?, Duration::ZERO);
/// for bad in ["", " 1s", "1S", "-1s", "1.5s", "1", "99999999999999999999d", "5µs"] {
///     assert_eq!(parse_duration(bad).unwrap_err().code(), ErrorCode::InvalidDuration, "{bad:?}");
/// }
/// # Ok::<(), ritmo::ConfigError>(())
/// ```
pub fn parse_duration(text: &str) -> Result<Duration, ConfigError> {
    let bad = || ConfigError::new(ErrorCode::InvalidDuration).with_text(text);
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return Err(bad());
    }
    let (number, unit) = text.split_at(digits);
    let value: u64 = number.parse().map_err(|_| bad())?;
    let seconds = |per: u64| value.checked_mul(per).map(Duration::from_secs);
    let duration = match unit {
        "ns" => Some(Duration::from_nanos(value)),
        "us" => Some(Duration::from_micros(value)),
        "ms" => Some(Duration::from_millis(value)),
        "s" => seconds(1),
        "m" => seconds(60),
        "h" => seconds(3_600),
        "d" => seconds(86_400),
        _ => None,
    };
    duration.ok_or_else(bad)
}

/// Reads `enabled` from text: exactly `"true"` or `"false"`, else `RITMO-ATR-006`.
///
/// ```
/// use ritmo::{parse_bool, ErrorCode};
/// assert_eq!(parse_bool("false"), Ok(false));
/// assert_eq!(parse_bool("1").unwrap_err().code(), ErrorCode::InvalidBool);
/// ```
pub fn parse_bool(text: &str) -> Result<bool, ConfigError> {
    match text {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(ConfigError::new(ErrorCode::InvalidBool).with_text(text)),
    }
}
