//! The calls that only look: what would pass now, and how long until it would. They take
//! nothing and change nothing.

use core::time::Duration;

use crate::clock::Clock;
use crate::error::InvalidPermits;
use crate::gcra;

use super::{RateLimiter, Snapshot};

impl<C: Clock> RateLimiter<C> {
    /// Calls of one permit that would pass right now without waiting, in `0..=permits`. Takes
    /// nothing.
    ///
    /// ```
    /// # use ritmo::{Config, ManualClock, RateLimiter};
    /// # use core::time::Duration;
    /// let clock = ManualClock::new();
    /// let l = RateLimiter::new("x", Config::new(10, Duration::from_secs(1)).unwrap(), &clock);
    /// l.try_acquire_n(10).unwrap();
    /// assert_eq!(l.available_permits(), 0);
    /// clock.advance(Duration::from_millis(350));
    /// assert_eq!(l.available_permits(), 3);
    /// ```
    pub fn available_permits(&self) -> u32 {
        let now = self.now_units();
        self.with_numbers(move |rate, tat, _| match rate.enabled() {
            true => gcra::available(tat, now, rate.interval, rate.window(), rate.permits),
            false => rate.permits,
        })
    }

    /// How long until one permit would pass without waiting: zero if one is there now. Takes
    /// nothing.
    ///
    /// ```
    /// # use ritmo::{Config, ManualClock, RateLimiter};
    /// # use core::time::Duration;
    /// let l = RateLimiter::new("x", Config::new(10, Duration::from_secs(1)).unwrap(), ManualClock::new());
    /// assert_eq!(l.retry_after(), Duration::ZERO);
    /// l.try_acquire_n(10).unwrap();
    /// assert_eq!(l.retry_after(), Duration::from_millis(100));
    /// ```
    pub fn retry_after(&self) -> Duration {
        match self.retry_after_n(1) {
            Ok(d) => d,
            Err(_) => Duration::ZERO,
        }
    }

    /// How long until `k` permits would pass at once without waiting. Takes nothing.
    ///
    /// ```
    /// # use ritmo::{Config, ManualClock, RateLimiter};
    /// # use core::time::Duration;
    /// let l = RateLimiter::new("x", Config::new(10, Duration::from_secs(1)).unwrap(), ManualClock::new());
    /// l.try_acquire_n(10).unwrap();
    /// assert_eq!(l.retry_after_n(4).unwrap(), Duration::from_millis(400));
    /// assert!(l.retry_after_n(11).is_err());
    /// ```
    pub fn retry_after_n(&self, k: u32) -> Result<Duration, InvalidPermits> {
        let wait = self.with_numbers(move |rate, tat, _| {
            if k == 0 || k > rate.permits {
                return Err(InvalidPermits::new(self.id, k, rate.permits));
            }
            if !rate.enabled() {
                return Ok(0);
            }
            let now = self.now_units();
            Ok(gcra::check(tat, now, rate.increment(k), rate.window())
                .err()
                .unwrap_or(0))
        })?;
        Ok(self.rate.wait_duration(wait))
    }

    /// Its id, available permits and permits per period. Takes nothing.
    ///
    /// ```
    /// # use ritmo::{Config, ManualClock, RateLimiter};
    /// # use core::time::Duration;
    /// let l = RateLimiter::new("x", Config::new(4, Duration::from_secs(1)).unwrap(), ManualClock::new());
    /// assert_eq!(l.snapshot().available_permits, 4);
    /// ```
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            id: self.id,
            available_permits: self.available_permits(),
            permits: self.permits_now(),
        }
    }
}
