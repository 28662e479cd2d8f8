//! Waiting for a reserved permit: the small trait adapters implement.
//!
//! A blocking acquire reserves a slot, then asks a [`Wait`] to block until the clock reaches it.
//! ritmo-std parks the thread, ritmo-embassy awaits a timer, bare-metal code delays with an
//! `embedded-hal` `DelayNs`, and tests on a [`ManualClock`](crate::ManualClock) use
//! [`AdvanceClock`], which moves the fake clock to the slot instead of sleeping.

use crate::clock::{Clock, ManualTime};

/// A wait was interrupted before its deadline; the caller's reservation is given back.
///
/// ```
/// use ritmo_core::Interrupted;
/// assert_eq!(format!("{Interrupted}"), "wait interrupted");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Interrupted;

impl core::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("wait interrupted")
    }
}

impl core::error::Error for Interrupted {}

/// Blocks the caller until a clock reaches a deadline.
///
/// An implementation MUST return `Ok(())` only once `clock.now() >= deadline` (spurious wake-ups
/// are its own business), and MAY return `Err(Interrupted)` earlier, when something outside asks
/// the waiter to stop.
///
/// ```
/// use core::time::Duration;
/// use ritmo_core::{Clock, Config, Interrupted, ManualClock, ManualTime, RateLimiter, Wait};
///
/// /// Counts how often it was asked to wait, then advances the fake clock.
/// struct CountingWait(u32);
/// impl<C: ManualTime> Wait<C> for CountingWait {
///     fn wait_until(&mut self, clock: &C, deadline: u64) -> Result<(), Interrupted> {
///         self.0 += 1;
///         clock.advance_to(deadline);
///         Ok(())
///     }
/// }
///
/// let clock = ManualClock::new();
/// let config = Config::new(1, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
/// let limiter = RateLimiter::new("api", config, &clock);
/// let mut waiter = CountingWait(0);
/// limiter.acquire_with(&mut waiter).unwrap(); // the burst: no wait
/// limiter.acquire_with(&mut waiter).unwrap(); // waits one second
/// assert_eq!((waiter.0, clock.now()), (1, 1_000_000_000));
/// # Ok::<(), ritmo_core::ConfigError>(())
/// ```
pub trait Wait<C: Clock + ?Sized> {
    /// Blocks until `clock.now() >= deadline` (ticks of `clock`), or until interrupted.
    fn wait_until(&mut self, clock: &C, deadline: u64) -> Result<(), Interrupted>;
}

impl<C: Clock + ?Sized, W: Wait<C> + ?Sized> Wait<C> for &mut W {
    fn wait_until(&mut self, clock: &C, deadline: u64) -> Result<(), Interrupted> {
        (**self).wait_until(clock, deadline)
    }
}

/// Waits on a fake clock by advancing it to the deadline: tests stay instant and deterministic.
///
/// ```
/// use ritmo_core::{AdvanceClock, Clock, ManualClock, Wait};
/// let clock = ManualClock::new();
/// AdvanceClock.wait_until(&clock, 42).unwrap();
/// assert_eq!(clock.now(), 42);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct AdvanceClock;

impl<C: ManualTime + ?Sized> Wait<C> for AdvanceClock {
    fn wait_until(&mut self, clock: &C, deadline: u64) -> Result<(), Interrupted> {
        clock.advance_to(deadline);
        Ok(())
    }
}
