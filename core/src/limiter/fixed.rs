//! A limiter without the feature `reconfigure`: its config is fixed when it is built, so every
//! question about it reads the converted rate, and nothing on any path asks whether a reconfigure
//! happened (the answer is a constant `false` the compiler removes). The limiter keeps no second
//! state and no copy of its config: one static limiter on a 32-bit microcontroller is 64 bytes.

use super::RateLimiter;
use crate::config::Config;

impl<C> RateLimiter<C> {
    /// The config it applies, rebuilt from what it keeps (it keeps no copy, to stay small in a
    /// microcontroller's RAM): `permits` and `enabled` as given; `period` and `max_wait` as the
    /// clock can express them (`period` rounded up to a whole number of the limiter's units per
    /// permit, `max_wait` rounded down). On a clock of 1 GHz and more (`ManualClock`, a server
    /// clock) they are the ones given whenever the period is a whole number of nanoseconds per
    /// permit.
    ///
    /// ```
    /// # use ritmo::{Config, ManualClock, RateLimiter};
    /// # use core::time::Duration;
    /// let c = Config::new(5, Duration::from_secs(1)).unwrap().with_max_wait(Duration::from_millis(20));
    /// assert_eq!(RateLimiter::new("x", c, ManualClock::new()).config(), c);
    /// // 1 s / 3 is not a whole number of nanoseconds: 333 333 334 ns per permit.
    /// let c = Config::new(3, Duration::from_secs(1)).unwrap();
    /// let applied = RateLimiter::new("x", c, ManualClock::new()).config();
    /// assert_eq!(applied.period(), Duration::from_nanos(1_000_000_002));
    /// ```
    pub const fn config(&self) -> Config {
        self.rate.config()
    }

    /// Permits per period: the burst, and the most one call can take.
    ///
    /// ```
    /// # use ritmo::{Config, ManualClock, RateLimiter};
    /// # use core::time::Duration;
    /// let l = RateLimiter::new("x", Config::new(5, Duration::from_secs(1)).unwrap(), ManualClock::new());
    /// assert_eq!(l.permits(), 5);
    /// ```
    pub const fn permits(&self) -> u32 {
        self.rate.permits
    }

    /// Whether the limiter was ever reconfigured: never, without the feature `reconfigure`.
    pub const fn is_reconfigured(&self) -> bool {
        false
    }

    /// The permits per period it applies now.
    #[inline(always)]
    pub(super) const fn permits_now(&self) -> u32 {
        self.rate.permits
    }

    /// Whether a reconfigure ever happened: never.
    #[inline(always)]
    pub(super) const fn reconfigured(&self) -> bool {
        false
    }

    /// Enabled and without a listener: a refusal only returns its error.
    #[inline(always)]
    pub(super) const fn plain_reject(&self) -> bool {
        self.rate.plain_reject
    }
}
