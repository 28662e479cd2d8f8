//! The calls the code `#[ritmo::limited]` generates makes: each waits the clock's own way.
//!
//! Not public API: the generated wrappers call these through `__private` (free functions, so
//! that no compiler hint about a limiter's methods ever names them). The admitted path is exactly
//! [`try_acquire`](RateLimiter::try_acquire)'s (one clock read, one CAS, nothing else); every
//! other case (no permit now, a lost race, a disabled limiter, a listener) goes to one cold path
//! that reserves within `max_wait` and waits with the clock's [`BlockingClock`] or
//! [`AsyncClock`], or rejects at once (publishing the rejection once).

use crate::clock::Clock;
use crate::error::RateLimitExceeded;
use crate::state::Take;
use crate::wait::{AsyncClock, BlockingClock, ClockWait};

use super::RateLimiter;

impl<C: Clock> RateLimiter<C> {
    /// Takes one permit if it is there now and the CAS wins; otherwise changes nothing.
    #[inline(always)]
    fn take_one_now(&self) -> bool {
        let now = self.now_units();
        matches!(self.state.take_one(now, &self.rate), Take::Taken)
    }

    /// Takes a permit, waiting with the clock's [`BlockingClock`] within `max_wait`
    /// (`__private::acquire_blocking`, which the generated code calls).
    #[inline(always)]
    pub(crate) fn acquire_generated_blocking(&self) -> Result<(), RateLimitExceeded>
    where
        C: BlockingClock,
    {
        if self.take_one_now() {
            Ok(())
        } else {
            self.acquire_blocking_slow()
        }
    }

    #[cold]
    #[inline(never)]
    fn acquire_blocking_slow(&self) -> Result<(), RateLimitExceeded>
    where
        C: BlockingClock,
    {
        self.acquire_with(&mut ClockWait)
    }

    /// Takes a permit, waiting with the clock's [`AsyncClock`] within `max_wait`
    /// (`__private::acquire_async`, which the generated code calls).
    #[inline(always)]
    pub(crate) async fn acquire_generated_async(&self) -> Result<(), RateLimitExceeded>
    where
        C: AsyncClock,
    {
        if self.take_one_now() {
            Ok(())
        } else {
            self.acquire_async_slow().await
        }
    }

    async fn acquire_async_slow(&self) -> Result<(), RateLimitExceeded>
    where
        C: AsyncClock,
    {
        let reservation = self.reserve()?;
        if !reservation.is_ready() {
            // Dropped here, the reservation gives its permit back by the tail rule.
            self.clock.sleep_until(reservation.slot()).await;
        }
        reservation.commit();
        Ok(())
    }
}
