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
/// use ritmo::Interrupted;
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
/// use ritmo::{Clock, Config, Interrupted, ManualClock, ManualTime, RateLimiter, Wait};
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
/// # Ok::<(), ritmo::ConfigError>(())
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
/// use ritmo::{AdvanceClock, Clock, ManualClock, Wait};
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

/// A clock that knows how a plain (non-async) caller waits until it reads a deadline: what the
/// code `#[ritmo::limited]` generates does when a call must wait for its permit.
///
/// Each clock waits its own way, so the annotation never asks the user to name a waiter:
/// [`ManualClock`](crate::ManualClock) advances itself to the deadline (tests never sleep),
/// ritmo-std's clocks park the calling thread (interruptible from another thread), and
/// ritmo-embassy's clock spins on embassy-time's counter, as `embassy_time::block_for` does.
///
/// An implementation MUST return `Ok(())` only once `self.now() >= deadline`, and MAY return
/// `Err(Interrupted)` earlier when something outside asks the caller to stop; the limiter then
/// gives the permit back (if no later call queued behind it) and the call fails with
/// [`Reason::Interrupted`](crate::Reason::Interrupted).
///
/// ```
/// use core::time::Duration;
/// use ritmo::{BlockingClock, Clock, ManualClock};
/// let clock = ManualClock::new();
/// clock.block_until(1_500).unwrap();
/// assert_eq!(clock.now(), 1_500);
/// ```
#[diagnostic::on_unimplemented(
    message = "a call limited on clock `{Self}` cannot wait for its permit on the caller's thread",
    label = "this clock has no blocking wait",
    note = "limited plain (non-async) functions need a registry on a clock that implements `ritmo::BlockingClock`: `ManualClock` (advances), ritmo-std's `StdClock` / `InstantClock` (park), ritmo-embassy's `EmbassyClock` (spins); or implement it for your clock"
)]
pub trait BlockingClock: Clock {
    /// Blocks the caller until `self.now() >= deadline` (ticks of this clock), or until
    /// interrupted.
    fn block_until(&self, deadline: u64) -> Result<(), Interrupted>;
}

impl<C: BlockingClock + ?Sized> BlockingClock for &C {
    fn block_until(&self, deadline: u64) -> Result<(), Interrupted> {
        (**self).block_until(deadline)
    }
}

/// A clock that knows how an async task sleeps until it reads a deadline, without blocking a
/// thread: what the code `#[ritmo::limited]` generates for an `async fn` does when a call must
/// wait for its permit.
///
/// [`ManualClock`](crate::ManualClock) advances itself to the deadline and is ready at once;
/// ritmo-std's clocks sleep on tokio's timer (feature `tokio`); ritmo-embassy's clock awaits an
/// embassy-time `Timer`. The waiting call holds a reservation while the future sleeps: dropping
/// the future gives the permit back (if no later call queued behind it).
///
/// The future MUST complete only once `self.now() >= deadline`.
///
/// ```
/// use core::future::Future;
/// use core::pin::pin;
/// use core::task::{Context, Poll, Waker};
/// use ritmo::{AsyncClock, Clock, ManualClock};
///
/// let clock = ManualClock::new();
/// let mut sleep = pin!(clock.sleep_until(2_000));
/// let mut cx = Context::from_waker(Waker::noop());
/// assert_eq!(sleep.as_mut().poll(&mut cx), Poll::Ready(()));
/// assert_eq!(clock.now(), 2_000);
/// ```
#[diagnostic::on_unimplemented(
    message = "an async call limited on clock `{Self}` cannot sleep until its permit",
    label = "this clock has no async sleep",
    note = "limited `async fn`s need a registry on a clock that implements `ritmo::AsyncClock`: `ManualClock` (advances), ritmo-std's `StdClock` / `InstantClock` / `TokioClock` with the `tokio` feature, ritmo-embassy's `EmbassyClock`; or implement it for your clock"
)]
pub trait AsyncClock: Clock {
    /// A future that completes once `self.now() >= deadline` (ticks of this clock).
    fn sleep_until(&self, deadline: u64) -> impl core::future::Future<Output = ()>;
}

impl<C: AsyncClock + ?Sized> AsyncClock for &C {
    fn sleep_until(&self, deadline: u64) -> impl core::future::Future<Output = ()> {
        (**self).sleep_until(deadline)
    }
}

impl<const HZ: u64> BlockingClock for crate::ManualClock<HZ> {
    /// Advances the fake clock to `deadline` (never backwards): no sleeping in tests.
    fn block_until(&self, deadline: u64) -> Result<(), Interrupted> {
        self.advance_to(deadline);
        Ok(())
    }
}

impl<const HZ: u64> AsyncClock for crate::ManualClock<HZ> {
    /// Advances the fake clock to `deadline` (never backwards) and is ready at once.
    fn sleep_until(&self, deadline: u64) -> impl core::future::Future<Output = ()> {
        self.advance_to(deadline);
        core::future::ready(())
    }
}

/// Waits with the clock's own [`BlockingClock`] wait: park on std, advance a `ManualClock`,
/// spin on embassy-time.
///
/// ```
/// use core::time::Duration;
/// use ritmo::{Clock, ClockWait, Config, ManualClock, RateLimiter};
/// let clock = ManualClock::new();
/// let config = Config::new(1, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
/// let limiter = RateLimiter::new("api", config, &clock);
/// limiter.acquire_with(&mut ClockWait).unwrap();
/// limiter.acquire_with(&mut ClockWait).unwrap(); // the clock advanced to the slot
/// assert_eq!(clock.now(), 1_000_000_000);
/// # Ok::<(), ritmo::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct ClockWait;

impl<C: BlockingClock + ?Sized> Wait<C> for ClockWait {
    fn wait_until(&mut self, clock: &C, deadline: u64) -> Result<(), Interrupted> {
        clock.block_until(deadline)
    }
}
