//! The calls that take permits: at once (`try_acquire*`), by reservation (`reserve*`), or waiting
//! (`acquire*_with`, `acquire*_advancing`).
//!
//! Every decision goes through [`State`](crate::state::State) (one load, one CAS), and every
//! refusal through one `reject`: on a disabled limiter the call passes,
//! otherwise a listener (if any) hears it and the caller gets the wait. A plain limiter (enabled,
//! no listener) skips that call: the refusal is then only its wait.

use core::time::Duration;

use crate::clock::{Clock, ManualTime};
use crate::error::{AcquireError, InvalidPermits, RateLimitExceeded, Reason};
use crate::event::Event;
use crate::gcra::{Refused, Reserve};
use crate::state::Take;
use crate::wait::{AdvanceClock, Wait};

use super::{RateLimiter, Reservation};

/// Marks the branch that calls it as the unlikely one, so that the compiler lays the likely one out
/// as the straight path.
#[cold]
#[inline(always)]
fn unlikely() {}

impl<C> RateLimiter<C> {
    #[inline(always)]
    pub(super) fn check_permits(&self, k: u32) -> Result<(), InvalidPermits> {
        if k == 0 || k > self.rate.permits {
            Err(InvalidPermits::new(self.id, k, self.rate.permits))
        } else {
            Ok(())
        }
    }

    /// The error of a call refused with `wait` units to go. Built where the caller looks at it,
    /// from the wait alone: a caller that only asks `is_ok()` does not pay for it.
    #[inline(always)]
    fn error(&self, wait: u64) -> RateLimitExceeded {
        RateLimitExceeded::new(
            self.id,
            Reason::NoPermitInTime,
            wait,
            self.rate.unit_hz,
            self.rate.shift,
        )
    }

    /// The one way a call is refused, `wait` units before its permits would arrive: on a
    /// disabled limiter it passes (`Ok`); otherwise the listener, if there is one, hears the
    /// rejection, and the caller gets `Err(wait)`. Only ever reached out of line: a plain limiter
    /// (enabled, no listener) never gets here.
    #[inline]
    fn reject(&self, wait: u64) -> Result<(), u64> {
        if !self.rate.enabled() {
            return Ok(());
        }
        if let Some(listener) = self.listener {
            listener.on_event(&Event::Rejected(self.error(wait)));
        }
        Err(wait)
    }

    /// [`reject`](Self::reject) for a state's refusal, out of line. It takes the refusal rather
    /// than its wait, so that the plain path alone computes the wait, and only if the caller
    /// looks at it.
    ///
    /// The refusal comes as its two numbers, in registers: passed as one struct, the compiler
    /// builds it in memory on the hot path before it knows whether this is called at all.
    #[cold]
    #[inline(never)]
    fn refused(&self, start: u64, over: u64) -> Result<(), u64> {
        self.reject(Refused { start, over }.wait())
    }
}

impl<C: Clock> RateLimiter<C> {
    /// The clock's reading in units. Clocks of 1 GHz and more (a TSC, `ManualClock`) need no
    /// shift: one predictable branch skips the shift and its saturation check.
    #[inline(always)]
    pub(super) fn now_units(&self) -> u64 {
        let reading = self.clock.now();
        if self.rate.shift == 0 {
            reading
        } else {
            unlikely();
            self.rate.units(reading)
        }
    }

    /// Takes one permit if it is there now; never waits.
    ///
    /// ```
    /// # use ritmo_core::{Config, ManualClock, RateLimiter};
    /// # use core::time::Duration;
    /// let l = RateLimiter::new("x", Config::new(1, Duration::from_secs(1)).unwrap(), ManualClock::new());
    /// assert!(l.try_acquire().is_ok());
    /// assert!(l.try_acquire().is_err());
    /// ```
    #[inline(always)]
    pub fn try_acquire(&self) -> Result<(), RateLimitExceeded> {
        // A disabled limiter has `limit` 0: the state refuses without changing, and the call
        // passes in `refused`.
        let now = self.now_units();
        let verdict = match self.state.take_one(now, &self.rate) {
            Take::Taken => Ok(()),
            Take::Refused(refused) if self.rate.plain_reject => Err(refused.wait()),
            Take::Refused(refused) => self.refused(refused.start, refused.over),
            Take::Lost(found) => self.take_contended(found, now, 1),
        };
        // The error is built here, inline, from the wait alone: a caller that only asks
        // `is_ok()` does not pay for it, and no slow path returns it through memory.
        verdict.map_err(|wait| self.error(wait))
    }

    /// Takes `k` permits as one unit if they are all there now; never waits. `k = 0` and
    /// `k > permits` are [`AcquireError::InvalidPermits`].
    ///
    /// ```
    /// # use ritmo_core::{Config, ManualClock, RateLimiter};
    /// # use core::time::Duration;
    /// let l = RateLimiter::new("uart", Config::new(64, Duration::from_millis(10)).unwrap(), ManualClock::new());
    /// assert!(l.try_acquire_n(60).is_ok());
    /// assert!(l.try_acquire_n(5).is_err()); // only 4 left
    /// assert!(l.try_acquire_n(4).is_ok());
    /// ```
    #[inline(always)]
    pub fn try_acquire_n(&self, k: u32) -> Result<(), AcquireError> {
        self.check_permits(k)?;
        if !self.rate.enabled() {
            return Ok(());
        }
        let now = self.now_units();
        let (increment, limit) = self.bounds(k);
        let verdict = match self.state.take_n(now, increment, limit) {
            Take::Taken => Ok(()),
            Take::Refused(refused) if self.rate.plain_reject => Err(refused.wait()),
            Take::Refused(refused) => self.refused(refused.start, refused.over),
            Take::Lost(found) => self.take_contended(found, now, k),
        };
        verdict.map_err(|wait| self.error(wait).into())
    }

    /// `k * T` and the state's lead below which `k` permits are admitted at once on an enabled
    /// limiter: `window - k * T + 1` (`k * T <= window` since `k <= permits`).
    #[inline(always)]
    fn bounds(&self, k: u32) -> (u64, u64) {
        let increment = self.rate.increment(k);
        (increment, self.rate.window() - increment + 1)
    }

    /// A call that lost the CAS race: decides again, out of line. `Err(wait)` if refused.
    #[cold]
    #[inline(never)]
    fn take_contended(&self, found: u64, now: u64, k: u32) -> Result<(), u64> {
        // A disabled limiter never takes (so never loses a race): the bounds are an enabled one's.
        let (increment, limit) = self.bounds(k);
        match self.state.take_contended(found, now, increment, limit) {
            Ok(_) => Ok(()),
            Err(refused) if self.rate.plain_reject => Err(refused.wait()),
            Err(refused) => self.refused(refused.start, refused.over),
        }
    }

    /// Takes one permit now, or reserves the next one if it arrives within the config's
    /// `max_wait`; otherwise rejects at once without changing anything.
    ///
    /// The [`Reservation`] knows its slot. Commit it once the work runs; dropping or cancelling it
    /// before then returns the permit if no later reservation was made since (giving it back then
    /// would let two calls share one slot).
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo_core::{Config, ManualClock, RateLimiter};
    /// let clock = ManualClock::new();
    /// let config = Config::new(5, Duration::from_secs(1))?.with_max_wait(Duration::from_millis(500));
    /// let l = RateLimiter::new("geocoding", config, &clock);
    /// for _ in 0..5 { l.try_acquire().unwrap(); }
    /// let first = l.reserve().unwrap();
    /// assert_eq!(first.wait_time(), Duration::from_millis(200));
    /// let second = l.reserve().unwrap();
    /// assert_eq!(second.wait_time(), Duration::from_millis(400));
    /// assert!(l.reserve().is_err()); // would wait 600 ms
    /// first.commit();
    /// second.commit();
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn reserve(&self) -> Result<Reservation<'_, C>, RateLimitExceeded> {
        self.reserve_units(1, self.rate.max_wait)
            .map_err(|e| match e.rate_limited() {
                Some(&e) => e,
                None => unreachable!("1 permit is always valid"),
            })
    }

    /// Like [`reserve`](Self::reserve), for `k` permits taken as one unit (their slot is the
    /// last one's).
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo_core::{Config, ManualClock, RateLimiter};
    /// let config = Config::new(10, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l = RateLimiter::new("frames", config, ManualClock::new());
    /// l.try_acquire_n(10).unwrap();
    /// let r = l.reserve_n(3).unwrap();
    /// assert_eq!(r.wait_time(), Duration::from_millis(300));
    /// # r.commit();
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn reserve_n(&self, k: u32) -> Result<Reservation<'_, C>, AcquireError> {
        self.reserve_units(k, self.rate.max_wait)
    }

    /// Like [`reserve_n`](Self::reserve_n), with this call's own `max_wait` instead of the
    /// config's: waiting in turn with a deadline.
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo_core::{Config, ManualClock, RateLimiter};
    /// let l = RateLimiter::new("api", Config::new(1, Duration::from_secs(1))?, ManualClock::new());
    /// l.try_acquire().unwrap();
    /// assert!(l.reserve_n_within(1, Duration::from_millis(999)).is_err());
    /// let r = l.reserve_n_within(1, Duration::from_secs(1)).unwrap();
    /// assert_eq!(r.wait_time(), Duration::from_secs(1));
    /// # r.commit();
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn reserve_n_within(
        &self,
        k: u32,
        max_wait: Duration,
    ) -> Result<Reservation<'_, C>, AcquireError> {
        self.reserve_units(k, self.rate.units_floor(max_wait))
    }

    fn reserve_units(&self, k: u32, max_wait: u64) -> Result<Reservation<'_, C>, AcquireError> {
        self.check_permits(k)?;
        let now = self.now_units();
        if !self.rate.enabled() {
            return Ok(Reservation::new(self, 0, 0, now, 0, k));
        }
        let increment = self.rate.increment(k);
        match self
            .state
            .reserve(now, increment, self.rate.window(), max_wait)
        {
            Reserve::Now { new_tat } => Ok(Reservation::new(self, new_tat, increment, now, 0, k)),
            Reserve::Wait { new_tat, wait } => Ok(Reservation::new(
                self,
                new_tat,
                increment,
                now.saturating_add(wait),
                wait,
                k,
            )),
            Reserve::Reject { wait } => match self.reject(wait) {
                Ok(()) => unreachable!("an enabled limiter refuses"),
                Err(wait) => Err(self.error(wait).into()),
            },
        }
    }

    /// Takes one permit, waiting for it with `waiter` if it arrives within `max_wait`.
    ///
    /// If the waiter is interrupted, the permit goes back (if no later call reserved one since)
    /// and the call fails with
    /// [`Reason::Interrupted`].
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo_core::{AdvanceClock, Clock, Config, ManualClock, RateLimiter};
    /// let clock = ManualClock::new();
    /// let config = Config::new(2, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l = RateLimiter::new("api", config, &clock);
    /// for _ in 0..3 {
    ///     l.acquire_with(&mut AdvanceClock).unwrap();
    /// }
    /// assert_eq!(clock.now(), 500_000_000); // the third waited for its slot
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn acquire_with<W: Wait<C> + ?Sized>(
        &self,
        waiter: &mut W,
    ) -> Result<(), RateLimitExceeded> {
        let reservation = self.reserve()?;
        reservation.wait_with(waiter)
    }

    /// Takes `k` permits as one unit, waiting with `waiter` as [`acquire_with`](Self::acquire_with).
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo_core::{AdvanceClock, Clock, Config, ManualClock, RateLimiter};
    /// let clock = ManualClock::new();
    /// let config = Config::new(8, Duration::from_millis(8))?.with_max_wait(Duration::from_millis(8));
    /// let uart = RateLimiter::new("uart", config, &clock);
    /// uart.acquire_n_with(8, &mut AdvanceClock).unwrap();
    /// uart.acquire_n_with(4, &mut AdvanceClock).unwrap();
    /// assert_eq!(clock.now(), 4_000_000);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn acquire_n_with<W: Wait<C> + ?Sized>(
        &self,
        k: u32,
        waiter: &mut W,
    ) -> Result<(), AcquireError> {
        let reservation = self.reserve_n(k)?;
        Ok(reservation.wait_with(waiter)?)
    }
}

/// # Waiting on a fake clock
impl<C: ManualTime> RateLimiter<C> {
    /// Takes one permit, waiting for it by advancing the fake clock to its slot: tests never
    /// sleep. Rejects at once if the permit would take longer than `max_wait`.
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo_core::{Clock, Config, ManualClock, RateLimiter};
    /// let clock = ManualClock::new();
    /// let config = Config::new(5, Duration::from_secs(1))?.with_max_wait(Duration::from_millis(500));
    /// let l = RateLimiter::new("geocoding", config, &clock);
    /// for _ in 0..6 { l.acquire_advancing().unwrap(); }
    /// assert_eq!(clock.now(), 200_000_000);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn acquire_advancing(&self) -> Result<(), RateLimitExceeded> {
        self.acquire_with(&mut AdvanceClock)
    }

    /// Takes `k` permits, advancing the fake clock to their slot if they must wait.
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo_core::{Clock, Config, ManualClock, RateLimiter};
    /// let clock = ManualClock::new();
    /// let config = Config::new(10, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l = RateLimiter::new("frames", config, &clock);
    /// l.acquire_n_advancing(10).unwrap();
    /// l.acquire_n_advancing(5).unwrap();
    /// assert_eq!(clock.now(), 500_000_000);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn acquire_n_advancing(&self, k: u32) -> Result<(), AcquireError> {
        self.acquire_n_with(k, &mut AdvanceClock)
    }
}
