//! [`EmbassyClock`]: embassy-time's ticks, as they are.

use ritmo_core::{Clock, FixedRateClock, TickRate};

/// embassy-time's clock: `now()` is `embassy_time::Instant::now().as_ticks()`, at
/// `embassy_time::TICK_HZ` ticks per second (the application's `tick-hz-*` choice).
///
/// A zero-sized [`FixedRateClock`]: a limiter on it is built in a `const` context and converts
/// its config into embassy ticks once; the hot path reads the driver and compares.
///
/// ```
/// use core::time::Duration;
/// use ritmo::{const_config, FixedRateClock, RateLimiter, TickRate};
/// use ritmo::embassy::EmbassyClock;
///
/// assert_eq!(EmbassyClock::TICK_RATE, TickRate::from_hz(embassy_time::TICK_HZ));
/// static SENSOR: RateLimiter<EmbassyClock> =
///     RateLimiter::new("sensor", const_config!(5, Duration::from_secs(1)), EmbassyClock);
/// # let _ = &SENSOR;
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct EmbassyClock;

impl Clock for EmbassyClock {
    #[inline(always)]
    fn now(&self) -> u64 {
        embassy_time::Instant::now().as_ticks()
    }

    #[inline]
    fn tick_rate(&self) -> TickRate {
        Self::TICK_RATE
    }
}

impl FixedRateClock for EmbassyClock {
    const TICK_RATE: TickRate = TickRate::from_hz(embassy_time::TICK_HZ);
}

/// Spins on embassy-time's counter until the slot, as `embassy_time::block_for` does: for limited
/// plain (non-async) functions on firmware. Async functions sleep instead ([`AsyncClock`](crate::ritmo::AsyncClock)).
impl ritmo_core::BlockingClock for EmbassyClock {
    fn block_until(&self, deadline: u64) -> Result<(), ritmo_core::Interrupted> {
        while self.now() < deadline {
            core::hint::spin_loop();
        }
        Ok(())
    }
}

/// Sleeps on an embassy-time `Timer` until the slot, without blocking the executor.
impl ritmo_core::AsyncClock for EmbassyClock {
    fn sleep_until(&self, deadline: u64) -> impl core::future::Future<Output = ()> {
        embassy_time::Timer::at(embassy_time::Instant::from_ticks(deadline))
    }
}
