//! The calls that take permits: at once (`try_acquire*`), by reservation (`reserve*`), or waiting
//! (`acquire*_with`, `acquire*_advancing`).
//!
//! The fast paths (`try_acquire`, `try_acquire_n`) decide on the numbers built in through
//! [`State`](crate::state::State) (one load, one CAS), and every refusal they meet through
//! [`refusal`](RateLimiter::refusal): on a disabled limiter the call passes, otherwise a listener
//! (if any) hears it and the caller gets the wait. A plain limiter (enabled, no listener) skips
//! that call: the refusal is then only its wait. Everything else (a reservation, a reconfigured
//! limiter, a `k` invalid for the numbers built in) is one decision,
//! [`charge`](RateLimiter::charge), on the numbers in force however they are read.

use core::time::Duration;

use crate::clock::{Clock, ManualTime};
use crate::error::{AcquireError, InvalidPermits, RateLimitExceeded, Reason};
use crate::event::{publish_rejected, publish_waiting};
#[cfg(target_has_atomic = "64")]
use crate::gcra::Refused;
use crate::gcra::{self, Reserve};
use crate::state::{Take, until_won};
use crate::sync::Backoff;
use crate::wait::{AdvanceClock, Wait};

use super::{Rate, RateLimiter, Reservation};

/// Marks the branch that calls it as the unlikely one, so that the compiler lays the likely one out
/// as the straight path.
#[cfg(not(target_has_atomic = "64"))]
#[cold]
#[inline(always)]
fn unlikely() {}

/// A "wait" that says the permits asked for are more than the numbers in force allow: how
/// [`settle`](RateLimiter::settle) answers in the refusal's one word, reported as
/// [`InvalidPermits`], never as a wait (no wait is that long: 584 years in nanoseconds).
const INVALID_NOW: u64 = u64::MAX - 1;

/// What [`charge`](RateLimiter::charge) decided.
enum Charge {
    /// Taken now: the state word of generation `seq` (last) became `written` (first), the
    /// `increment` (second) was added.
    Now(u64, u64, u32),
    /// Reserved, `wait` (third) units away: as `Now` otherwise.
    Wait(u64, u64, u64, u32),
    /// Refused: the permits arrive in `wait` units.
    Refused(u64),
    /// The limiter is disabled: the call passes uncounted.
    Disabled,
    /// `k` is 0 or above the `permits` in force (given).
    Invalid(u32),
}

impl<C> RateLimiter<C> {
    /// The error of a call refused with `wait` units to go. Built where the caller looks at it,
    /// from the wait alone: a caller that only asks `is_ok()` does not pay for it.
    /// Counts an admitted call (feature `counters`); nothing otherwise.
    #[inline(always)]
    pub(super) fn count_admitted(&self) {
        #[cfg(feature = "counters")]
        self.admitted.increment();
    }

    /// How many calls it has admitted at once since it was built (calls that got their permits
    /// after waiting are reported to listeners that ask as [`Event::Waiting`](crate::Event::Waiting) instead). Wraps at
    /// `u64::MAX`. A statistic: counting costs the admitted call a plain load and store, so two
    /// cores admitting at the very same instant may count one call (never more than were
    /// admitted).
    ///
    /// ```
    /// # use ritmo::{Config, ManualClock, RateLimiter};
    /// # use core::time::Duration;
    /// let l = RateLimiter::new("x", Config::new(2, Duration::from_secs(1)).unwrap(), ManualClock::new());
    /// l.try_acquire().unwrap();
    /// l.try_acquire_n(1).unwrap();
    /// assert!(l.try_acquire().is_err());
    /// assert_eq!(l.admitted_count(), 2);
    /// ```
    #[cfg(feature = "counters")]
    #[cfg_attr(docsrs, doc(cfg(feature = "counters")))]
    pub fn admitted_count(&self) -> u64 {
        self.admitted.get()
    }

    #[inline(always)]
    pub(super) fn error(&self, wait: u64) -> RateLimitExceeded {
        self.rate.refusal(self.id, Reason::NoPermitInTime, wait)
    }

    /// [`refusal`](Self::refusal) for a refusal by the state, out of line, on targets with 64-bit
    /// atomics (the servers whose instruction counts are measured): the wait is worked out here,
    /// so that a plain limiter's rejection, which may never read it, does not pay for it before
    /// its branch (one instruction). On microcontrollers a second out-of-line function would cost
    /// flash (8 bytes on a Cortex-M0), so there the wait is worked out at the call.
    #[cfg(target_has_atomic = "64")]
    #[cold]
    #[inline(never)]
    fn refused_by(&self, refused: Refused, k: u32) -> Result<(), u64>
    where
        C: Clock,
    {
        self.refusal(refused.wait(), k)
    }

    /// [`refusal`](Self::refusal), out of line: a plain limiter never calls it.
    #[cfg(not(target_has_atomic = "64"))]
    #[cold]
    #[inline(never)]
    fn refused(&self, wait: u64, k: u32) -> Result<(), u64>
    where
        C: Clock,
    {
        self.refusal(wait, k)
    }

    /// The one way a call is refused, `wait` units before its permits would arrive: on a
    /// disabled limiter it passes (`Ok`); otherwise the listener, if there is one, hears the
    /// rejection, and the caller gets `Err(wait)`.
    #[inline(always)]
    #[cfg_attr(not(feature = "reconfigure"), allow(unused_variables))]
    fn refusal(&self, wait: u64, k: u32) -> Result<(), u64>
    where
        C: Clock,
    {
        #[cfg(feature = "reconfigure")]
        if self.reconfigured() {
            return self.settle(k);
        }
        if !self.rate.enabled() {
            return Ok(());
        }
        if let Some(listener) = self.listener {
            publish_rejected(listener, self.error(wait));
        }
        Err(wait)
    }

    /// Takes `k` permits now by [`charge`](Self::charge), the path every call takes that the
    /// fast one does not decide (a reconfigured limiter, a `k` invalid for the numbers built
    /// in): `Err(wait)` if refused (told to the listener), `Err(INVALID_NOW)` if `k` is invalid.
    #[cold]
    #[inline(never)]
    fn settle(&self, k: u32) -> Result<(), u64>
    where
        C: Clock,
    {
        match self.charge::<true>(self.now_units(), k, Some(0)) {
            Charge::Now(..) | Charge::Wait(..) => {
                self.count_admitted();
                Ok(())
            }
            Charge::Disabled => Ok(()),
            Charge::Refused(wait) => {
                self.rate.rejected(self.id, wait, self.listener);
                Err(wait)
            }
            Charge::Invalid(_) => Err(INVALID_NOW),
        }
    }
}

impl<C: Clock> RateLimiter<C> {
    /// The clock's reading in units. Clocks of 1 GHz and more (a TSC, `ManualClock`) need no
    /// shift: one predictable branch skips the shift and its saturation check. On targets with
    /// 64-bit atomics (the servers whose instruction counts are measured) the conversion is a
    /// call out of line ([`Rate::units_cold`]), so that the shift's test is one compare with
    /// memory and nothing of the conversion sits on the straight path: 2 instructions fewer on
    /// every call. Microcontrollers, whose clocks are the slow ones, keep it inline.
    #[inline(always)]
    pub(super) fn now_units(&self) -> u64 {
        let reading = self.clock.now();
        if self.rate.shift == 0 {
            return reading;
        }
        #[cfg(target_has_atomic = "64")]
        return self.rate.units_cold(reading);
        #[cfg(not(target_has_atomic = "64"))]
        {
            unlikely();
            self.rate.units(reading)
        }
    }

    /// Takes one permit if it is there now; never waits.
    ///
    /// ```
    /// # use ritmo::{Config, ManualClock, RateLimiter};
    /// # use core::time::Duration;
    /// let l = RateLimiter::new("x", Config::new(1, Duration::from_secs(1)).unwrap(), ManualClock::new());
    /// assert!(l.try_acquire().is_ok());
    /// assert!(l.try_acquire().is_err());
    /// ```
    #[inline(always)]
    pub fn try_acquire(&self) -> Result<(), RateLimitExceeded> {
        // A disabled limiter has `limit` 0: `take` refuses without touching the state, and the
        // call passes in `refused`.
        let now = self.now_units();
        // The state is loaded before the rate is read (`take_one`): the load's latency overlaps
        // the reads of the bounds.
        let verdict = match self.state.take_one(now, &self.rate) {
            Take::Taken => {
                self.count_admitted();
                Ok(())
            }
            Take::Refused(refused) if self.plain_reject() => Err(refused.wait()),
            #[cfg(target_has_atomic = "64")]
            Take::Refused(refused) => self.refused_by(refused, 1),
            #[cfg(not(target_has_atomic = "64"))]
            Take::Refused(refused) => self.refused(refused.wait(), 1),
            Take::Lost => self.take_contended(now, 1, self.rate.interval, self.rate.limit),
        };
        verdict.map_err(|wait| self.error(wait))
    }

    /// Takes `k` permits as one unit if they are all there now; never waits. `k = 0` and
    /// `k > permits` are [`AcquireError::InvalidPermits`].
    ///
    /// ```
    /// # use ritmo::{Config, ManualClock, RateLimiter};
    /// # use core::time::Duration;
    /// let l = RateLimiter::new("uart", Config::new(64, Duration::from_millis(10)).unwrap(), ManualClock::new());
    /// assert!(l.try_acquire_n(60).is_ok());
    /// assert!(l.try_acquire_n(5).is_err()); // only 4 left
    /// assert!(l.try_acquire_n(4).is_ok());
    /// ```
    #[inline(always)]
    pub fn try_acquire_n(&self, k: u32) -> Result<(), AcquireError> {
        if k == 0 || k > self.rate.permits {
            return self.try_acquire_n_cold(k);
        }
        let now = self.now_units();
        let increment = self.rate.increment(k);
        // `increment <= window` since `k <= permits`; 0 (admit nothing here) when disabled.
        let limit = if self.rate.enabled() {
            self.rate.window() - increment + 1
        } else {
            0
        };
        self.take(now, k, increment, limit)
            .map_err(|wait| self.error_n(wait, k))
    }

    /// The error of a refused `try_acquire_n`: [`INVALID_NOW`] when `k` is no longer valid for
    /// the config a reconfigure set. Out of line, so that `try_acquire_n` stays small.
    #[inline(never)]
    fn error_n(&self, wait: u64, k: u32) -> AcquireError {
        if wait == INVALID_NOW {
            return InvalidPermits::new(self.id, k, self.permits_now()).into();
        }
        self.error(wait).into()
    }

    /// `try_acquire_n` with `k` invalid for the config the limiter was built with: it may be
    /// valid for the one a reconfigure set.
    #[cold]
    #[inline(never)]
    fn try_acquire_n_cold(&self, k: u32) -> Result<(), AcquireError> {
        self.settle(k).map_err(|wait| self.error_n(wait, k))
    }

    /// Takes `increment` worth of permits at `now` through the state, or refuses: `Err(wait)`.
    #[inline(always)]
    fn take(&self, now: u64, k: u32, increment: u64, limit: u64) -> Result<(), u64> {
        match self.state.take_n(now, increment, limit) {
            Take::Taken => {
                self.count_admitted();
                Ok(())
            }
            Take::Refused(refused) if self.plain_reject() => Err(refused.wait()),
            #[cfg(target_has_atomic = "64")]
            Take::Refused(refused) => self.refused_by(refused, k),
            #[cfg(not(target_has_atomic = "64"))]
            Take::Refused(refused) => self.refused(refused.wait(), k),
            Take::Lost => self.take_contended(now, k, increment, limit),
        }
    }

    /// A call that lost the CAS race: decides again, out of line. `Err(wait)` if refused.
    #[cold]
    #[inline(never)]
    fn take_contended(&self, now: u64, k: u32, increment: u64, limit: u64) -> Result<(), u64> {
        match self.state.take_contended(now, increment, limit) {
            Ok(_) => {
                self.count_admitted();
                Ok(())
            }
            Err(refused) if self.plain_reject() => Err(refused.wait()),
            #[cfg(target_has_atomic = "64")]
            Err(refused) => self.refused_by(refused, k),
            #[cfg(not(target_has_atomic = "64"))]
            Err(refused) => self.refused(refused.wait(), k),
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
    /// use ritmo::{Config, ManualClock, RateLimiter};
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
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn reserve(&self) -> Result<Reservation<'_, C>, RateLimitExceeded> {
        self.reserve_units(1, None)
            .map_err(AcquireError::one_permit)
    }

    /// Like [`reserve`](Self::reserve), for `k` permits taken as one unit (their slot is the
    /// last one's).
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::{Config, ManualClock, RateLimiter};
    /// let config = Config::new(10, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l = RateLimiter::new("frames", config, ManualClock::new());
    /// l.try_acquire_n(10).unwrap();
    /// let r = l.reserve_n(3).unwrap();
    /// assert_eq!(r.wait_time(), Duration::from_millis(300));
    /// # r.commit();
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn reserve_n(&self, k: u32) -> Result<Reservation<'_, C>, AcquireError> {
        self.reserve_units(k, None)
    }

    /// Like [`reserve_n`](Self::reserve_n), with this call's own `max_wait` instead of the
    /// config's: waiting in turn with a deadline.
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::{Config, ManualClock, RateLimiter};
    /// let l = RateLimiter::new("api", Config::new(1, Duration::from_secs(1))?, ManualClock::new());
    /// l.try_acquire().unwrap();
    /// assert!(l.reserve_n_within(1, Duration::from_millis(999)).is_err());
    /// let r = l.reserve_n_within(1, Duration::from_secs(1)).unwrap();
    /// assert_eq!(r.wait_time(), Duration::from_secs(1));
    /// # r.commit();
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn reserve_n_within(
        &self,
        k: u32,
        max_wait: Duration,
    ) -> Result<Reservation<'_, C>, AcquireError> {
        self.reserve_units(k, Some(self.rate.units_floor(max_wait)))
    }

    fn reserve_units(
        &self,
        k: u32,
        max_wait: Option<u64>,
    ) -> Result<Reservation<'_, C>, AcquireError> {
        let now = self.now_units();
        match self.charge::<false>(now, k, max_wait) {
            Charge::Now(written, increment, seq) => {
                self.count_admitted();
                Ok(Reservation::of(self, written, increment, now, 0, k, seq))
            }
            Charge::Wait(written, increment, wait, seq) => {
                if let Some(listener) = self.listener {
                    publish_waiting(listener, self.id, k, self.rate.wait_duration(wait));
                }
                let slot = now.saturating_add(wait);
                Ok(Reservation::of(
                    self, written, increment, slot, wait, k, seq,
                ))
            }
            Charge::Disabled => Ok(Reservation::of(self, 0, 0, now, 0, k, 0)),
            Charge::Refused(wait) => Err(self.rate.rejected(self.id, wait, self.listener).into()),
            Charge::Invalid(permits) => Err(InvalidPermits::new(self.id, k, permits).into()),
        }
    }

    /// Takes `k` permits now, or reserves them if they arrive within `max_wait` units (`None`:
    /// the config's), on the numbers in force: the one decision of every call the fast paths do
    /// not settle, whether the limiter was reconfigured or not. A reconfigure in the meantime
    /// froze the state it read (a refusal then) or made its compare-and-swap fail: it decides
    /// again on the new numbers. `LIVE_HERE`: the decision's copy for reconfigured numbers is
    /// written here too (in the out-of-line `settle`, a frame fewer), not out of line (in
    /// `reserve`, whose straight path it would crowd).
    #[inline(always)]
    fn charge<const LIVE_HERE: bool>(&self, now: u64, k: u32, max_wait: Option<u64>) -> Charge {
        until_won(Backoff::new(), || {
            let decide = move |rate: &Rate, tat: u64, seq: u32| {
                if k == 0 || k > rate.permits {
                    return Some(Charge::Invalid(rate.permits));
                }
                if !rate.enabled() {
                    return Some(Charge::Disabled);
                }
                let increment = rate.increment(k);
                let max_wait = max_wait.unwrap_or(rate.max_wait);
                let (written, granted) =
                    match gcra::reserve(tat, now, increment, rate.window(), max_wait) {
                        Reserve::Now { new_tat } => (new_tat, Charge::Now(new_tat, increment, seq)),
                        Reserve::Wait { new_tat, wait } => {
                            (new_tat, Charge::Wait(new_tat, increment, wait, seq))
                        }
                        // The built state, read outside the sequence lock, may be frozen by a
                        // reconfigure since (a state read under the lock is consistent).
                        Reserve::Reject { wait } => {
                            let current = seq != 0 || self.still(0);
                            return current.then_some(Charge::Refused(wait));
                        }
                    };
                let won = self.word(seq).compare_exchange_weak(tat, written);
                won.is_ok().then_some(granted)
            };
            #[cfg(feature = "reconfigure")]
            if LIVE_HERE && self.reconfigured() {
                let (rate, tat, seq) = self.live.read(&self.rate);
                return decide(&rate, tat, seq);
            }
            self.with_numbers(decide)
        })
    }

    /// Takes one permit, waiting for it with `waiter` if it arrives within `max_wait`.
    ///
    /// If the waiter is interrupted, the permit goes back (if no later call reserved one since)
    /// and the call fails with
    /// [`Reason::Interrupted`].
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::{AdvanceClock, Clock, Config, ManualClock, RateLimiter};
    /// let clock = ManualClock::new();
    /// let config = Config::new(2, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l = RateLimiter::new("api", config, &clock);
    /// for _ in 0..3 {
    ///     l.acquire_with(&mut AdvanceClock).unwrap();
    /// }
    /// assert_eq!(clock.now(), 500_000_000); // the third waited for its slot
    /// # Ok::<(), ritmo::ConfigError>(())
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
    /// use ritmo::{AdvanceClock, Clock, Config, ManualClock, RateLimiter};
    /// let clock = ManualClock::new();
    /// let config = Config::new(8, Duration::from_millis(8))?.with_max_wait(Duration::from_millis(8));
    /// let uart = RateLimiter::new("uart", config, &clock);
    /// uart.acquire_n_with(8, &mut AdvanceClock).unwrap();
    /// uart.acquire_n_with(4, &mut AdvanceClock).unwrap();
    /// assert_eq!(clock.now(), 4_000_000);
    /// # Ok::<(), ritmo::ConfigError>(())
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
    /// use ritmo::{Clock, Config, ManualClock, RateLimiter};
    /// let clock = ManualClock::new();
    /// let config = Config::new(5, Duration::from_secs(1))?.with_max_wait(Duration::from_millis(500));
    /// let l = RateLimiter::new("geocoding", config, &clock);
    /// for _ in 0..6 { l.acquire_advancing().unwrap(); }
    /// assert_eq!(clock.now(), 200_000_000);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn acquire_advancing(&self) -> Result<(), RateLimitExceeded> {
        self.acquire_with(&mut AdvanceClock)
    }

    /// Takes `k` permits, advancing the fake clock to their slot if they must wait.
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::{Clock, Config, ManualClock, RateLimiter};
    /// let clock = ManualClock::new();
    /// let config = Config::new(10, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l = RateLimiter::new("frames", config, &clock);
    /// l.acquire_n_advancing(10).unwrap();
    /// l.acquire_n_advancing(5).unwrap();
    /// assert_eq!(clock.now(), 500_000_000);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn acquire_n_advancing(&self, k: u32) -> Result<(), AcquireError> {
        self.acquire_n_with(k, &mut AdvanceClock)
    }
}
