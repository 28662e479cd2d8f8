//! [`Held`]: the one reservation type of every limiter kind (a single limiter's [`Reservation`],
//! [`BandsReservation`], a keyed limiter's [`KeyReservation`]): permits a call holds for its slot,
//! until it commits them or lets them go. The lifecycle (commit; cancel, drop or interrupt by the
//! tail rule; waits) is written here once; a kind supplies, through [`Holder`], its clock, its
//! conversions and how a charge goes back. A reservation reaches its limiter through a handle:
//! a borrow (`&'a RateLimiter<C>`) or anything else that derefs to it, such as an `Arc` that
//! keeps it alive (an owned reservation, held across `.await` by a server or client layer).
//!
//! [`Reservation`]: crate::Reservation
//! [`BandsReservation`]: crate::BandsReservation
//! [`KeyReservation`]: crate::keyed::KeyReservation

use core::fmt;
use core::ops::Deref;
use core::time::Duration;

use crate::clock::Clock;
use crate::error::{RateLimitExceeded, Reason};
use crate::event::Event;
use crate::wait::Wait;

/// What a reservation needs of the limiter it came from, for a charge described by `T` (the
/// states it wrote and what it added): the clock and its conversions, a refund by the tail rule,
/// and the listeners. Implemented by every kind ([`RateLimiter`](crate::RateLimiter),
/// [`Bands`](crate::Bands), the keyed limiters); generic code names it to reach a [`Held`]'s
/// methods, as ritmo-std's `Limit` does.
pub trait Holder<T> {
    /// The clock the limiter reads.
    type Clock: Clock;
    /// The reservation's name in `Debug` output.
    const KIND: &'static str;
    /// The limiter's id.
    fn holder_id(&self) -> &'static str;
    /// The clock it reads.
    fn holder_clock(&self) -> &Self::Clock;
    /// The clock's reading now, in units.
    fn units_now(&self) -> u64;
    /// A wait of `units` as a duration, rounded up to the whole tick, then to the nanosecond.
    fn wait_duration(&self, units: u64) -> Duration;
    /// An instant in units as a clock reading, rounded up.
    fn reading_ceil(&self, units: u64) -> u64;
    /// The error a call fails with for `reason`, `wait` units before its permits.
    fn refusal(&self, reason: Reason, wait: u64) -> RateLimitExceeded;
    /// Whether `charge` took anything (a disabled limiter's reservation holds nothing: it goes
    /// back without a word).
    fn charged(charge: &T) -> bool;
    /// Gives back what `charge` took, if no later call changed the states since; whether it went
    /// back.
    fn give_back(&self, charge: &T) -> bool;
    /// Tells the limiter's listeners, if any, about `event` on `charge`.
    fn publish_release(&self, charge: &T, event: Event);
}

/// Only a settled reservation has given its charge up, and settling one consumes it (or drops it).
const SETTLED: &str = "a settled reservation is never used again";

/// Permits taken now or reserved for a slot: commit it when the work runs, or let it go.
///
/// Dropping or [`cancel`](Held::cancel)ling a reservation that was not committed returns its
/// permits, but only if no later call changed the limiter since (it was the last reservation);
/// otherwise its slot is left unused, since giving it back would let two calls share one slot.
///
/// ```
/// use core::time::Duration;
/// use ritmo::{Config, ManualClock, RateLimiter};
/// let config = Config::new(1, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(5));
/// let l = RateLimiter::new("api", config, ManualClock::new());
/// l.try_acquire().unwrap();
/// let a = l.reserve().unwrap(); // slot at 1 s
/// let b = l.reserve().unwrap(); // slot at 2 s
/// assert!(!a.cancel()); // b is queued behind a: a's slot stays unused
/// assert!(b.cancel());  // b was the last: its permit goes back
/// assert_eq!(l.reserve().unwrap().wait_time(), Duration::from_secs(2));
/// # Ok::<(), ritmo::ConfigError>(())
/// ```
///
/// `R` is how it reaches its limiter: `&'a` the limiter (a reservation that borrows it), or a
/// handle that keeps it alive, such as `Arc<RateLimiter<C>>` (an owned reservation, which
/// [`with_handle`](Held::with_handle) makes of a borrowed one).
#[must_use = "a reservation returns its permits when dropped: commit it once the work runs"]
pub struct Held<R, T>
where
    R: Deref<Target: Holder<T>>,
{
    limiter: R,
    /// What it took; `None` once committed or given back.
    charge: Option<T>,
    slot: u64,
    wait: u64,
    permits: u32,
}

impl<R: Deref<Target: Holder<T>>, T> fmt::Debug for Held<R, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct(<R::Target as Holder<T>>::KIND)
            .field("limiter", &self.limiter.holder_id())
            .field("permits", &self.permits)
            .field("slot", &self.slot)
            .field("wait", &self.wait_time())
            .finish()
    }
}

impl<R: Deref<Target: Holder<T>>, T> Held<R, T> {
    /// A reservation of `permits` on `limiter` that took `charge`, its slot `slot` units, `wait`
    /// units from when it was made.
    pub(crate) fn new(limiter: R, charge: T, slot: u64, wait: u64, permits: u32) -> Self {
        Held {
            limiter,
            charge: Some(charge),
            slot,
            wait,
            permits,
        }
    }

    /// What it took.
    pub(crate) fn charge(&self) -> &T {
        match &self.charge {
            Some(charge) => charge,
            None => unreachable!("{SETTLED}"),
        }
    }

    /// The same reservation, reaching its limiter through `handle` instead: an owned reservation
    /// made of a borrowed one when `handle` is an `Arc` of the limiter it borrows, so that it can
    /// outlive the borrow (held across `.await`, moved into a task). `Err` gives it back unchanged
    /// if `handle` is another limiter.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use core::time::Duration;
    /// use ritmo::{Config, ManualClock, RateLimiter};
    /// let l = Arc::new(RateLimiter::new("api", Config::new(1, Duration::from_secs(1))?, ManualClock::new()));
    /// let owned = l.reserve().unwrap().with_handle(Arc::clone(&l)).unwrap();
    /// assert!(owned.cancel()); // the permit goes back to the limiter the `Arc` keeps alive
    /// assert_eq!(l.available_permits(), 1);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn with_handle<S: Deref<Target = R::Target>>(
        mut self,
        handle: S,
    ) -> Result<Held<S, T>, Self> {
        if !core::ptr::eq(&*handle, &*self.limiter) {
            return Err(self);
        }
        let (slot, wait, permits) = (self.slot, self.wait, self.permits);
        Ok(Held {
            limiter: handle,
            // Taken: this one is settled and its drop does nothing.
            charge: self.charge.take(),
            slot,
            wait,
            permits,
        })
    }

    /// The handle it reaches its limiter through: the borrow, or the `Arc` that keeps it alive.
    pub fn handle(&self) -> &R {
        &self.limiter
    }

    /// The limiter this reservation is for.
    ///
    /// ```
    /// # use ritmo::{Config, ManualClock, RateLimiter};
    /// # use core::time::Duration;
    /// let l = RateLimiter::new("x", Config::new(1, Duration::from_secs(1)).unwrap(), ManualClock::new());
    /// let r = l.reserve().unwrap();
    /// assert_eq!(r.limiter().id(), "x");
    /// # r.commit();
    /// ```
    pub fn limiter(&self) -> &R::Target {
        &self.limiter
    }

    /// How many permits it holds.
    ///
    /// ```
    /// # use ritmo::{Config, ManualClock, RateLimiter};
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
    /// # use ritmo::{Config, ManualClock, RateLimiter};
    /// # use core::time::Duration;
    /// let l = RateLimiter::new("x", Config::new(1, Duration::from_secs(1)).unwrap(), ManualClock::new());
    /// assert_eq!(l.reserve().unwrap().wait_time(), Duration::ZERO);
    /// ```
    pub fn wait_time(&self) -> Duration {
        self.limiter.wait_duration(self.wait)
    }

    /// The slot as a reading of the limiter's clock (rounded up to a whole tick): the caller may
    /// run once the clock reads at least this.
    ///
    /// ```
    /// # use ritmo::{Config, ManualClock, RateLimiter};
    /// # use core::time::Duration;
    /// let c = Config::new(1, Duration::from_secs(1)).unwrap().with_max_wait(Duration::from_secs(1));
    /// let l = RateLimiter::new("x", c, ManualClock::new());
    /// l.try_acquire().unwrap();
    /// assert_eq!(l.reserve().unwrap().slot(), 1_000_000_000);
    /// ```
    pub fn slot(&self) -> u64 {
        self.limiter.reading_ceil(self.slot)
    }

    /// How long from now until the slot, rounded up as [`wait_time`](Self::wait_time) is: zero
    /// once it has arrived.
    ///
    /// ```
    /// # use ritmo::{Config, ManualClock, RateLimiter};
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
        let now = self.limiter.units_now();
        self.limiter.wait_duration(self.slot.saturating_sub(now))
    }

    /// Whether the slot has arrived.
    ///
    /// ```
    /// # use ritmo::{Config, ManualClock, RateLimiter};
    /// # use core::time::Duration;
    /// let l = RateLimiter::new("x", Config::new(1, Duration::from_secs(1)).unwrap(), ManualClock::new());
    /// let r = l.reserve().unwrap();
    /// assert!(r.is_ready());
    /// # r.commit();
    /// ```
    pub fn is_ready(&self) -> bool {
        self.limiter.units_now() >= self.slot
    }

    /// Keeps the permits: the work runs (or has run).
    ///
    /// ```
    /// # use ritmo::{Config, ManualClock, RateLimiter};
    /// # use core::time::Duration;
    /// let l = RateLimiter::new("x", Config::new(1, Duration::from_secs(1)).unwrap(), ManualClock::new());
    /// l.reserve().unwrap().commit();
    /// assert_eq!(l.available_permits(), 0);
    /// ```
    pub fn commit(mut self) {
        self.charge = None;
    }

    /// Gives the reservation up before its work runs; returns whether its permits went back
    /// (see [`Held`]).
    ///
    /// ```
    /// # use ritmo::{Config, ManualClock, RateLimiter};
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
    pub fn interrupted(mut self) -> RateLimitExceeded {
        let left = self.slot.saturating_sub(self.limiter.units_now());
        self.release(Reason::Interrupted);
        self.limiter.refusal(Reason::Interrupted, left)
    }

    /// Waits for the slot with `waiter`, then commits; if interrupted, gives the permits back and
    /// fails with [`Reason::Interrupted`].
    ///
    /// ```
    /// # use ritmo::{AdvanceClock, Clock, Config, ManualClock, RateLimiter};
    /// # use core::time::Duration;
    /// let clock = ManualClock::new();
    /// let c = Config::new(1, Duration::from_secs(1)).unwrap().with_max_wait(Duration::from_secs(1));
    /// let l = RateLimiter::new("x", c, &clock);
    /// l.try_acquire().unwrap();
    /// l.reserve().unwrap().wait_with(&mut AdvanceClock).unwrap();
    /// assert_eq!(clock.now(), 1_000_000_000);
    /// ```
    pub fn wait_with<W: Wait<<R::Target as Holder<T>>::Clock> + ?Sized>(
        self,
        waiter: &mut W,
    ) -> Result<(), RateLimitExceeded> {
        if self.wait > 0
            && !self.is_ready()
            && waiter
                .wait_until(self.limiter.holder_clock(), self.slot())
                .is_err()
        {
            return Err(self.interrupted());
        }
        self.commit();
        Ok(())
    }

    fn release(&mut self, reason: Reason) -> bool {
        let Some(charge) = self.charge.take() else {
            return false;
        };
        if !<R::Target as Holder<T>>::charged(&charge) {
            return true;
        }
        let returned = self.limiter.give_back(&charge);
        self.limiter.publish_release(
            &charge,
            Event::Released {
                id: self.limiter.holder_id(),
                permits: self.permits,
                reason,
                returned,
            },
        );
        returned
    }
}

impl<R: Deref<Target: Holder<T>>, T> Drop for Held<R, T> {
    fn drop(&mut self) {
        self.release(Reason::Cancelled);
    }
}
