//! "At most `X` in any window of length `W`": a config chosen from a cap, for duty cycles and
//! other limits that a regulation states per window ("1 % of any hour").
//!
//! A limiter of `n` permits per `period` admits at most `n + floor(w / T)` permits in any window
//! of length `w` (`T = period / n`): a full burst at the window's start, then the steady
//! rate. Read "36 per hour" as "at most 36 in any hour" and a greedy sender gets 71 through in
//! some hour. [`Config::at_most`] picks `n` (the burst) and `T` the other way round, so that
//! `burst + floor(W / T) <= X`.

use core::time::Duration;

use crate::config::Config;
use crate::error::{ConfigError, ErrorCode};

const NANOS: u128 = 1_000_000_000;

impl Config {
    /// A config that admits **at most `cap` permits in any window of length `window`**, with up
    /// to `burst` of them at once.
    ///
    /// The limiter gets `burst` permits (its burst) and the emission interval
    /// `T = window / (cap - burst)`, rounded up: the period is `burst * T`. In any window of length
    /// `window` it then admits at most `burst + floor(window / T) <= burst + (cap - burst) = cap`,
    /// on every clock, coarse ones included (the limiter rounds `T` up on its clock, never down).
    ///
    /// The trade-off: the cap is shared between the burst and the sustained rate. A bigger burst
    /// lets more through after a quiet time, and leaves `cap - burst` per window for a sender that
    /// never pauses. `burst = cap / 2` sends half the cap at once and the other half spread over
    /// the window; `burst = 1` spreads almost the whole cap evenly. A call of `k` permits needs
    /// `k <= burst`: for a radio whose permits are milliseconds on air, the burst must hold the
    /// longest frame.
    ///
    /// Errors: `burst == 0` is `RITMO-ATR-003`; `burst >= cap` is `RITMO-ATR-007` (nothing would be
    /// left for the sustained rate); a zero `window` is `RITMO-ATR-002`. `T` is rounded up to a
    /// whole nanosecond, so it is never under 1 ns.
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::{Config, ErrorCode};
    ///
    /// // 1 % duty cycle: 36 s on air in any hour, in milliseconds, up to 18 s of it at once.
    /// let hour = Duration::from_secs(3600);
    /// let radio = Config::at_most(36_000, hour, 18_000)?;
    /// assert_eq!(radio.permits(), 18_000);
    /// assert_eq!(radio.emission_interval(), Duration::from_millis(200)); // 3600 s / 18 000
    /// assert_eq!(radio.max_in_window(hour), 36_000);
    ///
    /// assert_eq!(Config::at_most(10, hour, 10).unwrap_err().code(), ErrorCode::BurstNotBelowCap);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub const fn at_most(cap: u32, window: Duration, burst: u32) -> Result<Config, ConfigError> {
        if burst == 0 {
            return Err(ConfigError::new(ErrorCode::InvalidPermits));
        }
        if burst >= cap {
            return Err(ConfigError::new(ErrorCode::BurstNotBelowCap));
        }
        if window.is_zero() {
            return Err(ConfigError::new(ErrorCode::ZeroPeriod));
        }
        let steady = (cap - burst) as u128;
        // T = ceil(window / steady) in ns; period = burst * T, so that period / burst is T exactly.
        let interval = window.as_nanos().div_ceil(steady);
        let period = interval * burst as u128;
        // At most `u32::MAX * Duration::MAX`'s nanoseconds: the seconds may overflow a `u64`.
        let secs = period / NANOS;
        if secs > u64::MAX as u128 {
            return Err(ConfigError::new(ErrorCode::TooFast));
        }
        Config::new(burst, Duration::new(secs as u64, (period % NANOS) as u32))
    }

    /// The most permits this config can admit in a window of length `window`:
    /// `permits + floor(window / T)`, `T` the [`emission_interval`](Config::emission_interval)
    /// (saturating at `u64::MAX`). A limiter on any clock admits at most this many (it rounds `T`
    /// up, never down). For a config from [`at_most`](Config::at_most) it is at most the cap.
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::Config;
    ///
    /// // "36 per hour" is a burst of 36 plus 36 more spread over the hour: 72 in some hour.
    /// let hour = Duration::from_secs(3600);
    /// assert_eq!(Config::new(36, hour)?.max_in_window(hour), 72);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub const fn max_in_window(&self, window: Duration) -> u64 {
        let t = self.emission_interval().as_nanos();
        let total = window.as_nanos() / t + self.permits() as u128;
        if total > u64::MAX as u128 {
            u64::MAX
        } else {
            total as u64
        }
    }
}

/// Builds a [`Config`] that admits at most `cap` permits in any window of length `window`, `burst`
/// of them at once ([`Config::at_most`]), in a `const` context: a bad one fails the build.
///
/// ```
/// use core::time::Duration;
/// use ritmo::{const_window_config, Config, ManualClock, RateLimiter};
///
/// // EU868's 1 % sub-band, in ms on air: at most 36 s in any hour, 2 s of it at once.
/// const RADIO: Config = const_window_config!(36_000, Duration::from_secs(3600), 2_000);
/// static CLOCK: ManualClock = ManualClock::new();
/// static TX: RateLimiter<&ManualClock> = RateLimiter::new("tx", RADIO, &CLOCK);
/// assert!(RADIO.max_in_window(Duration::from_secs(3600)) <= 36_000);
/// ```
///
/// ```compile_fail
/// # use core::time::Duration;
/// const BAD: ritmo::Config = ritmo::const_window_config!(10, Duration::from_secs(1), 10);
/// ```
#[macro_export]
macro_rules! const_window_config {
    ($cap:expr, $window:expr, $burst:expr $(,)?) => {
        const {
            match $crate::Config::at_most($cap, $window, $burst) {
                ::core::result::Result::Ok(config) => config,
                ::core::result::Result::Err(error) => error.fail_build(),
            }
        }
    };
}
