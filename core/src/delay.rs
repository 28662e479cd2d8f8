//! Blocking waits on bare metal: a [`Wait`] made of any `embedded_hal::delay::DelayNs`.
//!
//! Firmware without an async runtime waits for a reserved permit by delaying: [`DelayWait`] wraps
//! the HAL's delay (a SysTick delay, a timer, `cortex_m::delay::Delay`) and delays until the
//! limiter's clock reaches the permit's slot. It re-reads the clock after every delay, so a delay
//! that runs short, or a clock that ticks on another time base than the delay, only costs another
//! round: it never returns before the slot.

use crate::clock::Clock;
use crate::wait::{Interrupted, Wait};
use embedded_hal::delay::DelayNs;

/// Waits for a permit by calling an `embedded_hal::delay::DelayNs` until the limiter's clock
/// reaches the slot. Never interrupted.
///
/// The limiter's clock must move while the delay runs (a hardware timer does; a fake clock needs a
/// fake delay that advances it, as below), or the wait never ends. With Embassy, blocking code can
/// pass `embassy_time::Delay`.
///
/// Waiting is the one place that scales time (the ticks left to the slot into nanoseconds for the
/// delay); taking a permit never does.
///
/// ```
/// use core::time::Duration;
/// use embedded_hal::delay::DelayNs;
/// use ritmo::{Clock, Config, DelayWait, ManualClock, RateLimiter};
///
/// /// A delay that moves a fake 32768 Hz clock, as a SysTick delay moves real time.
/// struct FakeDelay<'a>(&'a ManualClock<32_768>);
/// impl DelayNs for FakeDelay<'_> {
///     fn delay_ns(&mut self, ns: u32) {
///         self.0.advance(Duration::from_nanos(ns.into()));
///     }
/// }
///
/// let rtc = ManualClock::<32_768>::with_reading(0);
/// let config = Config::new(4, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
/// let radio = RateLimiter::new("radio", config, &rtc);
/// let mut wait = DelayWait::new(FakeDelay(&rtc));
/// for _ in 0..5 {
///     radio.acquire_with(&mut wait).unwrap(); // the fifth waits a quarter of a second
/// }
/// assert_eq!(rtc.now(), 32_768 / 4);
/// # Ok::<(), ritmo::ConfigError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct DelayWait<D> {
    delay: D,
}

impl<D: DelayNs> DelayWait<D> {
    /// Waits with `delay`.
    ///
    /// ```
    /// # use ritmo::DelayWait;
    /// # struct NoDelay;
    /// # impl embedded_hal::delay::DelayNs for NoDelay { fn delay_ns(&mut self, _: u32) {} }
    /// let wait = DelayWait::new(NoDelay);
    /// # let _ = wait;
    /// ```
    pub const fn new(delay: D) -> Self {
        DelayWait { delay }
    }

    /// The delay back.
    ///
    /// ```
    /// # use ritmo::DelayWait;
    /// # #[derive(Debug, PartialEq)]
    /// # struct NoDelay;
    /// # impl embedded_hal::delay::DelayNs for NoDelay { fn delay_ns(&mut self, _: u32) {} }
    /// assert_eq!(DelayWait::new(NoDelay).into_inner(), NoDelay);
    /// ```
    pub fn into_inner(self) -> D {
        self.delay
    }

    /// The delay it waits with.
    ///
    /// ```
    /// # use ritmo::DelayWait;
    /// use embedded_hal::delay::DelayNs;
    /// # struct Counting(u32);
    /// # impl embedded_hal::delay::DelayNs for Counting { fn delay_ns(&mut self, _: u32) { self.0 += 1 } }
    /// let mut wait = DelayWait::new(Counting(0));
    /// wait.delay_mut().delay_ns(5);
    /// assert_eq!(wait.delay_mut().0, 1);
    /// ```
    pub fn delay_mut(&mut self) -> &mut D {
        &mut self.delay
    }
}

impl<C: Clock + ?Sized, D: DelayNs> Wait<C> for DelayWait<D> {
    fn wait_until(&mut self, clock: &C, deadline: u64) -> Result<(), Interrupted> {
        let rate = clock.tick_rate();
        loop {
            let now = clock.now();
            if now >= deadline {
                return Ok(());
            }
            let left = rate.duration_ceil(deadline - now);
            // Long waits go in whole milliseconds (a `u32` of nanoseconds is only 4.3 s), rounded
            // up; the clock is read again after each delay either way.
            match u32::try_from(left.as_nanos()) {
                Ok(ns) => self.delay.delay_ns(ns),
                Err(_) => {
                    let ms = left.as_nanos().div_ceil(1_000_000);
                    self.delay.delay_ms(u32::try_from(ms).unwrap_or(u32::MAX));
                }
            }
        }
    }
}
