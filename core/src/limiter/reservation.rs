//! [`Reservation`]: permits a call holds for its slot, until it commits them or lets them go.

use core::fmt;
use core::time::Duration;

use crate::clock::Clock;
use crate::error::{RateLimitExceeded, Reason};
use crate::event::Event;
use crate::wait::Wait;

use super::RateLimiter;

/// Permits taken now or reserved for a slot: commit it when the work runs, or let it go.
///
/// Dropping or [`cancel`](Reservation::cancel)ling a reservation that was not committed returns its
/// permits, but only if no later call changed the limiter since (it was the last reservation);
/// otherwise its slot is left unused, since giving it back would let two calls share one slot.
///
/// ```
/// use core::time::Duration;
/// use ritmo_core::{Config, ManualClock, RateLimiter};
/// let config = Config::new(1, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(5));
/// let l = RateLimiter::new("api", config, ManualClock::new());
/// l.try_acquire().unwrap();
/// let a = l.reserve().unwrap(); // slot at 1 s
/// let b = l.reserve().unwrap(); // slot at 2 s
/// assert!(!a.cancel()); // b is queued behind a: a's slot stays unused
/// assert!(b.cancel());  // b was the last: its permit goes back
/// assert_eq!(l.reserve().unwrap().wait_time(), Duration::from_secs(2));
/// # Ok::<(), ritmo_core::ConfigError>(())
/// ```
#[must_use = "a reservation returns its permit when dropped: commit it once the work runs"]
pub struct Reservation<'a, C: Clock> {
    limiter: &'a RateLimiter<C>,
    written: u64,
    increment: u64,
    slot: u64,
    wait: u64,
    permits: u32,
    settled: bool,
    /// 0: made on the original state; else the reconfigure generation it was made under.
    #[cfg(feature = "reconfigure")]
    pub(super) seq: u32,
}

impl<C: Clock> fmt::Debug for Reservation<'_, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reservation")
            .field("limiter", &self.limiter.id)
            .field("permits", &self.permits)
            .field("slot", &self.slot)
            .field("wait", &self.wait_time())
            .finish()
    }
}

impl<'a, C: Clock> Reservation<'a, C> {
    pub(super) fn new(
        limiter: &'a RateLimiter<C>,
        written: u64,
        increment: u64,
        slot: u64,
        wait: u64,
        permits: u32,
    ) -> Self {
        Reservation {
            limiter,
            written,
            increment,
            slot,
            wait,
            permits,
            settled: false,
            #[cfg(feature = "reconfigure")]
            seq: 0,
        }
    }

    /// The limiter this reservation is for.
    ///
    /// ```
    /// # use ritmo_core::{Config, ManualClock, RateLimiter};
    /// # use core::time::Duration;
    /// let l = RateLimiter::new("x", Config::new(1, Duration::from_secs(1)).unwrap(), ManualClock::new());
    /// let r = l.reserve().unwrap();
    /// assert_eq!(r.limiter().id(), "x");
    /// # r.commit();
    /// ```
    pub fn limiter(&self) -> &'a RateLimiter<C> {
        self.limiter
    }

    /// How many permits it holds.
    ///
    /// ```
    /// # use ritmo_core::{Config, ManualClock, RateLimiter};
    /// # use core::time::Duration;
    /// let l = RateLimiter::new("x", Config::new(4, Duration::from_secs(1)).unwrap(), ManualClock::new());
    /// assert_eq!(l.reserve_n(3).unwrap().permits(), 3);
    /// ```
    pub fn permits(&self) -> u32 {
        self.permits
    }

    /// How long, from when it was made, the caller must wait for the slot (zero if the permits were
    /// there at once): rounded up to the whole clock tick at which the slot has arrived, then to
    /// the nanosecond.
    ///
    /// ```
    /// # use ritmo_core::{Config, ManualClock, RateLimiter};
    /// # use core::time::Duration;
    /// let l = RateLimiter::new("x", Config::new(1, Duration::from_secs(1)).unwrap(), ManualClock::new());
    /// assert_eq!(l.reserve().unwrap().wait_time(), Duration::ZERO);
    /// ```
    pub fn wait_time(&self) -> Duration {
        self.limiter.rate.wait_duration(self.wait)
    }

    /// The slot as a reading of the limiter's clock (rounded up to a whole tick): the caller may
    /// run once the clock reads at least this.
    ///
    /// ```
    /// # use ritmo_core::{Config, ManualClock, RateLimiter};
    /// # use core::time::Duration;
    /// let c = Config::new(1, Duration::from_secs(1)).unwrap().with_max_wait(Duration::from_secs(1));
    /// let l = RateLimiter::new("x", c, ManualClock::new());
    /// l.try_acquire().unwrap();
    /// assert_eq!(l.reserve().unwrap().slot(), 1_000_000_000);
    /// ```
    pub fn slot(&self) -> u64 {
        self.limiter.rate.reading_ceil(self.slot)
    }

    /// How long from now until the slot, rounded up as [`wait_time`](Self::wait_time) is: zero
    /// once it has arrived.
    ///
    /// ```
    /// # use ritmo_core::{Config, ManualClock, RateLimiter};
    /// # use core::time::Duration;
    /// let clock = ManualClock::new();
    /// let c = Config::new(1, Duration::from_secs(1)).unwrap().with_max_wait(Duration::from_secs(1));
    /// let l = RateLimiter::new("x", c, &clock);
    /// l.try_acquire().unwrap();
    /// let r = l.reserve().unwrap();
    /// clock.advance(Duration::from_millis(300));
    /// assert_eq!(r.remaining(), Duration::from_millis(700));
    /// # r.commit();
    /// ```
    pub fn remaining(&self) -> Duration {
        let now = self.limiter.now_units();
        self.limiter
            .rate
            .wait_duration(self.slot.saturating_sub(now))
    }

    /// Whether the slot has arrived.
    ///
    /// ```
    /// # use ritmo_core::{Config, ManualClock, RateLimiter};
    /// # use core::time::Duration;
    /// let l = RateLimiter::new("x", Config::new(1, Duration::from_secs(1)).unwrap(), ManualClock::new());
    /// let r = l.reserve().unwrap();
    /// assert!(r.is_ready());
    /// # r.commit();
    /// ```
    pub fn is_ready(&self) -> bool {
        self.limiter.now_units() >= self.slot
    }

    /// Keeps the permits: the work runs (or has run).
    ///
    /// ```
    /// # use ritmo_core::{Config, ManualClock, RateLimiter};
    /// # use core::time::Duration;
    /// let l = RateLimiter::new("x", Config::new(1, Duration::from_secs(1)).unwrap(), ManualClock::new());
    /// l.reserve().unwrap().commit();
    /// assert_eq!(l.available_permits(), 0);
    /// ```
    pub fn commit(mut self) {
        self.settled = true;
    }

    /// Gives the reservation up before its work runs; returns whether its permits went back
    /// (see [`Reservation`]).
    ///
    /// ```
    /// # use ritmo_core::{Config, ManualClock, RateLimiter};
    /// # use core::time::Duration;
    /// let l = RateLimiter::new("x", Config::new(1, Duration::from_secs(1)).unwrap(), ManualClock::new());
    /// assert!(l.reserve().unwrap().cancel());
    /// assert_eq!(l.available_permits(), 1);
    /// ```
    pub fn cancel(mut self) -> bool {
        self.release(Reason::Cancelled)
    }

    /// Gives the reservation up because its waiter was interrupted, and returns the error the
    /// call fails with ([`Reason::Interrupted`], `retry_after` the time left to the slot).
    pub(crate) fn interrupted(mut self) -> RateLimitExceeded {
        let left = self.slot.saturating_sub(self.limiter.now_units());
        self.release(Reason::Interrupted);
        RateLimitExceeded::new(
            self.limiter.id,
            Reason::Interrupted,
            left,
            self.limiter.rate.unit_hz,
            self.limiter.rate.shift,
        )
    }

    /// Waits for the slot with `waiter`, then commits; if interrupted, gives the permits back and
    /// fails with [`Reason::Interrupted`].
    ///
    /// ```
    /// # use ritmo_core::{AdvanceClock, Clock, Config, ManualClock, RateLimiter};
    /// # use core::time::Duration;
    /// let clock = ManualClock::new();
    /// let c = Config::new(1, Duration::from_secs(1)).unwrap().with_max_wait(Duration::from_secs(1));
    /// let l = RateLimiter::new("x", c, &clock);
    /// l.try_acquire().unwrap();
    /// l.reserve().unwrap().wait_with(&mut AdvanceClock).unwrap();
    /// assert_eq!(clock.now(), 1_000_000_000);
    /// ```
    pub fn wait_with<W: Wait<C> + ?Sized>(self, waiter: &mut W) -> Result<(), RateLimitExceeded> {
        if self.wait > 0
            && !self.is_ready()
            && waiter.wait_until(&self.limiter.clock, self.slot()).is_err()
        {
            return Err(self.interrupted());
        }
        self.commit();
        Ok(())
    }

    fn release(&mut self, reason: Reason) -> bool {
        if self.settled {
            return false;
        }
        self.settled = true;
        if self.increment == 0 {
            return true;
        }
        #[cfg(feature = "reconfigure")]
        let returned = if self.seq == 0 {
            // A reconfigure since has frozen this state: nothing goes back then.
            self.limiter.state.refund(self.written, self.increment)
        } else {
            self.limiter
                .live_refund(self.seq, self.written, self.increment)
        };
        #[cfg(not(feature = "reconfigure"))]
        let returned = self.limiter.state.refund(self.written, self.increment);
        if let Some(listener) = self.limiter.listener {
            listener.on_event(&Event::Released {
                id: self.limiter.id,
                permits: self.permits,
                reason,
                returned,
            });
        }
        returned
    }
}

impl<C: Clock> Drop for Reservation<'_, C> {
    fn drop(&mut self) {
        self.release(Reason::Cancelled);
    }
}
