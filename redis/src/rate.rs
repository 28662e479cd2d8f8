//! A config in the store's unit (integer microseconds), and the GCRA peeks computed from a state.

use core::time::Duration;

use ritmo_core::{Clock, Config};

use crate::error::Error;

/// The largest integer every step of the script keeps exact: Lua numbers in Redis are doubles.
pub(crate) const MAX: u64 = (1 << 53) - 1;

/// A [`Config`] converted once into microseconds, saturating at [`MAX`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StoreRate {
    /// Emission interval `T = period / permits`, rounded up to the microsecond.
    pub(crate) interval: u64,
    /// `permits * T`.
    pub(crate) window: u64,
    pub(crate) permits: u32,
}

impl StoreRate {
    pub(crate) fn new(config: &Config) -> Result<StoreRate, Error> {
        let n = config.permits() as u128;
        let period = config.period().as_nanos();
        if period < n * 1_000 {
            return Err(Error::TooFast {
                permits: config.permits(),
                period: config.period(),
            });
        }
        let interval = saturate(period.div_ceil(n * 1_000));
        Ok(StoreRate {
            interval,
            window: saturate(interval as u128 * n),
            permits: config.permits(),
        })
    }

    /// `k * T`, saturating (never above `window` for `k <= permits`).
    pub(crate) fn increment(&self, k: u32) -> u64 {
        saturate(self.interval as u128 * k as u128)
    }

    /// How many single permits would pass at `now` without waiting, in `0..=permits`.
    pub(crate) fn available(&self, tat: u64, now: u64) -> u32 {
        let start = tat.max(now);
        if start >= MAX {
            return 0;
        }
        if start == now {
            return self.permits;
        }
        let limit = now as u128 + self.window as u128;
        if start as u128 >= limit {
            return 0;
        }
        let fit = (limit - start as u128) / self.interval as u128;
        fit.min(self.permits as u128) as u32
    }

    /// Microseconds until `k` permits would pass at once (0: they would now; [`MAX`]: never).
    pub(crate) fn wait(&self, tat: u64, now: u64, k: u32) -> u64 {
        let start = tat.max(now);
        if start >= MAX {
            return MAX;
        }
        let slot = start.saturating_sub(self.window - self.increment(k));
        slot.saturating_sub(now)
    }
}

/// A number of microseconds as a duration; [`MAX`] (never) as the longest duration there is.
pub(crate) fn micros(us: u64) -> Duration {
    if us >= MAX {
        Duration::MAX
    } else {
        Duration::from_micros(us)
    }
}

pub(crate) fn saturate(x: u128) -> u64 {
    if x > MAX as u128 { MAX } else { x as u64 }
}

/// A caller-supplied clock's reading in microseconds (rounded down, saturating at [`MAX`]).
pub(crate) fn clock_micros(clock: &(dyn Clock + Send + Sync)) -> u64 {
    let hz = clock.tick_rate().hz().max(1) as u128;
    saturate(clock.now() as u128 * 1_000_000 / hz)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(n: u32, period: Duration) -> StoreRate {
        StoreRate::new(&Config::new(n, period).unwrap()).unwrap()
    }

    #[test]
    fn the_interval_is_rounded_up_to_the_microsecond() {
        let r = rate(3, Duration::from_secs(1));
        assert_eq!((r.interval, r.window), (333_334, 1_000_002));
        assert_eq!(rate(10, Duration::from_secs(1)).interval, 100_000);
    }

    #[test]
    fn less_than_a_microsecond_per_permit_is_an_error() {
        let config = Config::new(2_000_000, Duration::from_secs(1)).unwrap();
        let err = StoreRate::new(&config).unwrap_err();
        assert_eq!(err.code(), Some(ritmo_core::ErrorCode::TooFast));
        assert!(rate(1_000_000, Duration::from_secs(1)).interval == 1);
    }

    #[test]
    fn huge_periods_saturate_below_two_to_the_53() {
        let r = rate(u32::MAX, Duration::MAX);
        assert_eq!(r.window, MAX);
        assert!(r.interval <= MAX && r.increment(u32::MAX) <= r.window);
    }

    #[test]
    fn peeks() {
        let r = rate(10, Duration::from_secs(1)); // T = 100 ms
        assert_eq!(r.available(0, 5), 10);
        assert_eq!(r.available(1_000_000, 0), 0);
        assert_eq!(r.available(1_000_000, 100_000), 1);
        assert_eq!(r.wait(1_000_000, 0, 1), 100_000);
        assert_eq!(r.wait(1_000_000, 0, 3), 300_000);
        assert_eq!(r.wait(0, 7, 10), 0);
        assert_eq!(r.wait(MAX, 0, 1), MAX);
        assert_eq!(r.available(MAX, 0), 0);
        assert_eq!(micros(MAX), Duration::MAX);
    }
}
