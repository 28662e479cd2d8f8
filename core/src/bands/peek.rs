//! The calls that only look: what would pass now in every band, and how long until it would.

use core::time::Duration;

use super::Bands;
use super::numbers::Numbers;
use crate::clock::Clock;
use crate::error::InvalidPermits;
use crate::gcra;

impl<C: Clock, const B: usize> Bands<C, B> {
    /// Calls of one permit that would pass right now without waiting: the smallest of the bands'.
    /// Takes nothing.
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::{Bands, Config, ManualClock};
    /// let b = Bands::new("x", [Config::new(10, Duration::from_secs(1))?, Config::new(4, Duration::from_secs(60))?], ManualClock::new());
    /// assert_eq!(b.available_permits(), 4);
    /// b.try_acquire().unwrap();
    /// assert_eq!(b.available_permits_per_band(), [9, 3]);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn available_permits(&self) -> u32 {
        let (numbers, per_band) = self.available(self.now_units());
        // A disabled band is left out; with none enabled, the smallest `permits`.
        let enabled = per_band.iter().zip(&numbers.rates);
        match enabled
            .filter(|(_, rate)| rate.enabled())
            .map(|(a, _)| *a)
            .min()
        {
            Some(available) => available,
            None => per_band.into_iter().min().unwrap_or(0),
        }
    }

    /// Each band's available permits, in band order (a disabled band reports its `permits`).
    pub fn available_permits_per_band(&self) -> [u32; B] {
        self.available(self.now_units()).1
    }

    /// The numbers in force and each band's available permits under them at `now`.
    fn available(&self, now: u64) -> (Numbers<B>, [u32; B]) {
        let (numbers, tats) = self.settled();
        let mut out = [0u32; B];
        for (i, (slot, rate)) in out.iter_mut().zip(&numbers.rates).enumerate() {
            *slot = if rate.enabled() {
                gcra::available(tats[i], now, rate.interval, rate.window(), rate.permits)
            } else {
                rate.permits
            };
        }
        (numbers, out)
    }

    /// How long until one permit would pass in every band: zero if it would now. Takes nothing.
    pub fn retry_after(&self) -> Duration {
        self.retry_after_n(1).unwrap_or(Duration::ZERO)
    }

    /// How long until `k` permits would pass in every band at once: the longest band's wait.
    /// Takes nothing.
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::{Bands, Config, ManualClock};
    /// let b = Bands::new("x", [Config::new(10, Duration::from_secs(1))?, Config::new(10, Duration::from_secs(60))?], ManualClock::new());
    /// b.try_acquire_n(10).unwrap();
    /// assert_eq!(b.retry_after_n(2)?, Duration::from_secs(12)); // the per-minute band's wait
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn retry_after_n(&self, k: u32) -> Result<Duration, InvalidPermits> {
        let now = self.now_units();
        let (numbers, tats) = self.settled();
        self.check_permits(k, &numbers)?;
        let wait = match numbers.slot(&tats, now, &numbers.increments(k)) {
            Ok(slot) => slot - now,
            Err(wait) => wait,
        };
        Ok(self.rates[0].wait_duration(wait))
    }
}
