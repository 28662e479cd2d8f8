//! [`RateLimiter`]: a clock, a config converted to the clock's ticks, and one word of state.

mod live;

use core::fmt;
use core::time::Duration;

use crate::clock::{Clock, FixedRateClock, ManualTime, TickRate};
use crate::config::Config;
use crate::error::{AcquireError, InvalidPermits, RateLimitExceeded, Reason};
use crate::event::{Event, Listener};
use crate::gcra::Refused;
use crate::gcra::{self, Reserve};
use crate::state::{State, Take};
use crate::sync::Flag;
use crate::wait::{AdvanceClock, Wait};

/// A config converted into the limiter's time unit, once, when the limiter is built.
///
/// The unit is the clock's tick, or a fixed-point fraction of it on clocks slower than 1 GHz: a
/// reading is shifted left by `shift` bits so that one unit is at most a nanosecond. On a 32768 Hz
/// clock, rounding the emission interval up to whole ticks would cost up to 30 µs per permit
/// (3% at 1000 permits per second); in units of 1/32768 of a tick it costs under a nanosecond.
/// Shifting is the only operation the hot path applies to a reading: no multiply, no divide.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rate {
    /// Emission interval `T`, rounded up.
    pub(crate) interval: u64,
    /// `n * T` (saturating): a call of `k` permits is admitted if `max(tat, now) + k*T <= now + window`.
    pub(crate) window: u64,
    /// `max_wait`, rounded down.
    pub(crate) max_wait: u64,
    /// `window - interval + 1` (never overflows: `window >= interval >= 1`), the bound a single
    /// permit is checked against on the hot path; 0 on a disabled limiter, so that the hot path
    /// never admits there and the slow path lets the call through without counting it.
    pub(crate) limit: u64,
    /// Readings are shifted left by this many bits into units.
    pub(crate) shift: u32,
    /// The largest reading that shifts without overflow.
    pub(crate) max_reading: u64,
    /// Units per second (`hz << shift`).
    pub(crate) unit_hz: u64,
}

impl Rate {
    pub(crate) const fn new(config: &Config, tick: TickRate) -> Rate {
        let hz = tick.hz() as u128;
        let mut shift = 0;
        while shift < 32 && (hz << shift) < 1_000_000_000 {
            shift += 1;
        }
        let unit_hz = hz << shift;
        let per_second = 1_000_000_000u128;
        let n = config.permits() as u128;
        let interval = (config.period().as_nanos() * unit_hz).div_ceil(per_second * n);
        let interval = saturate(if interval == 0 { 1 } else { interval });
        let window = saturate(interval as u128 * n);
        let max_wait = saturate(config.max_wait().as_nanos() * unit_hz / per_second);
        Rate {
            interval,
            window,
            max_wait,
            limit: if config.enabled() {
                window - interval + 1
            } else {
                0
            },
            shift,
            max_reading: u64::MAX >> shift,
            unit_hz: saturate(unit_hz),
        }
    }

    /// A clock reading in units (saturating).
    #[inline(always)]
    pub(crate) const fn units(&self, reading: u64) -> u64 {
        if reading > self.max_reading {
            u64::MAX
        } else {
            reading << self.shift
        }
    }

    /// An instant in units as a clock reading, rounded up.
    pub(crate) const fn reading_ceil(&self, units: u64) -> u64 {
        let ticks = units >> self.shift;
        if ticks << self.shift == units {
            ticks
        } else {
            ticks + 1
        }
    }

    /// `k * T`, saturating.
    pub(crate) const fn increment(&self, k: u32) -> u64 {
        Self::increment_of(self.interval, k)
    }

    /// `k * interval`, saturating.
    pub(crate) const fn increment_of(interval: u64, k: u32) -> u64 {
        saturate(interval as u128 * k as u128)
    }

    /// A duration in units, rounded down.
    pub(crate) const fn units_floor(&self, d: Duration) -> u64 {
        saturate(d.as_nanos() * self.unit_hz as u128 / 1_000_000_000)
    }
}

const fn saturate(x: u128) -> u64 {
    if x > u64::MAX as u128 {
        u64::MAX
    } else {
        x as u64
    }
}

/// What a limiter reports about itself: its id, the permits that would pass right now, and its
/// permits per period.
///
/// ```
/// use core::time::Duration;
/// use ritmo_core::{Config, ManualClock, RateLimiter, Snapshot};
/// let limiter = RateLimiter::new("api", Config::new(10, Duration::from_secs(1))?, ManualClock::new());
/// limiter.try_acquire_n(3).unwrap();
/// assert_eq!(
///     limiter.snapshot(),
///     Snapshot { instance: "api", available_permits: 7, permits: 10 }
/// );
/// # Ok::<(), ritmo_core::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Snapshot {
    /// The limiter's id.
    pub instance: &'static str,
    /// Calls of one permit that would pass right now without waiting.
    pub available_permits: u32,
    /// Permits per period.
    pub permits: u32,
}

/// A GCRA rate limiter: at most `permits` calls per `period`, evenly spaced, with a burst of up to
/// `permits` after a quiet moment.
///
/// All state is one `u64` (`tat`, the instant the next permit arrives), changed by one
/// compare-and-swap. An admitted call costs one clock read and one CAS, a rejected one a clock read
/// and a load; neither allocates. Build it in a `const` context on a clock with a constant tick
/// rate ([`RateLimiter::new`]), or at run time on any clock ([`RateLimiter::with_clock`]).
///
/// ```
/// use core::time::Duration;
/// use ritmo_core::{Config, ManualClock, RateLimiter};
///
/// let clock = ManualClock::new();
/// let search = RateLimiter::new("search", Config::new(10, Duration::from_secs(1))?, &clock);
/// for _ in 0..10 {
///     search.try_acquire().unwrap(); // a full burst of 10 passes at once
/// }
/// assert!(search.try_acquire().is_err()); // the 11th is rejected
/// clock.advance(Duration::from_millis(100)); // one permit every 100 ms
/// assert!(search.try_acquire().is_ok());
/// assert!(search.try_acquire().is_err());
/// # Ok::<(), ritmo_core::ConfigError>(())
/// ```
pub struct RateLimiter<C> {
    state: State,
    rate: Rate,
    id: &'static str,
    config: Config,
    listener: Option<&'static dyn Listener>,
    /// Enabled and without a listener: a rejection only returns its error. One flag, so that the
    /// rejected path tests one byte instead of two things.
    plain_reject: Flag,
    clock: C,
    /// The state and config after a [`reconfigure`](Self::reconfigure); unused before.
    live: live::Live,
    /// Calls admitted at once, for metrics.
    #[cfg(feature = "counters")]
    admitted: crate::state::Counter,
}

impl<C> fmt::Debug for RateLimiter<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimiter")
            .field("id", &self.id)
            .field("config", &self.config())
            .field("tat", &self.state.tat())
            .field("live", &self.live)
            .field("has_listener", &self.listener.is_some())
            .finish_non_exhaustive()
    }
}

impl<C: FixedRateClock> RateLimiter<C> {
    /// A limiter named `id` on `clock`, in a `const` context if need be: a `static` limiter on a
    /// microcontroller.
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo_core::{const_config, ManualClock, RateLimiter};
    ///
    /// static CLOCK: ManualClock = ManualClock::new();
    /// static RADIO: RateLimiter<&ManualClock> =
    ///     RateLimiter::new("radio", const_config!(36, Duration::from_secs(3600)), &CLOCK);
    /// assert_eq!(RADIO.available_permits(), 36);
    /// ```
    #[cfg(not(loom))]
    pub const fn new(id: &'static str, config: Config, clock: C) -> Self {
        Self::build(id, config, clock, C::TICK_RATE)
    }

    /// A limiter named `id` on `clock`.
    #[cfg(loom)]
    pub fn new(id: &'static str, config: Config, clock: C) -> Self {
        Self::build(id, config, clock, C::TICK_RATE)
    }
}

impl<C: Clock> RateLimiter<C> {
    /// A limiter named `id` on a clock whose tick rate is known only at run time (a TSC clock
    /// calibrated at start-up, say).
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo_core::{Clock, Config, RateLimiter, TickRate};
    ///
    /// struct Calibrated { hz: u64 }
    /// impl Clock for Calibrated {
    ///     fn now(&self) -> u64 { 0 }
    ///     fn tick_rate(&self) -> TickRate { TickRate::from_hz(self.hz) }
    /// }
    /// let limiter = RateLimiter::with_clock("api", Config::new(2, Duration::from_secs(1))?, Calibrated { hz: 2_900_000_000 });
    /// assert_eq!(limiter.available_permits(), 2);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn with_clock(id: &'static str, config: Config, clock: C) -> Self {
        let tick = clock.tick_rate();
        Self::build(id, config, clock, tick)
    }
}

impl<C> RateLimiter<C> {
    #[cfg(not(loom))]
    const fn build(id: &'static str, config: Config, clock: C, tick: TickRate) -> Self {
        RateLimiter {
            state: State::new(),
            rate: Rate::new(&config, tick),
            id,
            config,
            listener: None,
            plain_reject: Flag::new(config.enabled()),
            clock,
            live: live::Live::new(config),
            #[cfg(feature = "counters")]
            admitted: crate::state::Counter::new(),
        }
    }

    #[cfg(loom)]
    fn build(id: &'static str, config: Config, clock: C, tick: TickRate) -> Self {
        RateLimiter {
            state: State::new(),
            rate: Rate::new(&config, tick),
            id,
            config,
            listener: None,
            plain_reject: Flag::new(config.enabled()),
            clock,
            live: live::Live::new(config),
            #[cfg(feature = "counters")]
            admitted: crate::state::Counter::new(),
        }
    }

    /// The same limiter, reporting rejections and released reservations to `listener`.
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo_core::{const_config, Event, Listener, ManualClock, RateLimiter};
    /// struct Log;
    /// impl Listener for Log {
    ///     fn on_event(&self, _event: &Event) {}
    /// }
    /// static CLOCK: ManualClock = ManualClock::new();
    /// static API: RateLimiter<&ManualClock> =
    ///     RateLimiter::new("api", const_config!(5, Duration::from_secs(1)), &CLOCK).with_listener(&Log);
    /// # assert!(API.try_acquire().is_ok());
    /// ```
    #[must_use]
    pub const fn with_listener(mut self, listener: &'static dyn Listener) -> Self {
        self.listener = Some(listener);
        self.plain_reject = Flag::new(false);
        self
    }

    /// The limiter's id.
    ///
    /// ```
    /// # use ritmo_core::{Config, ManualClock, RateLimiter};
    /// # use core::time::Duration;
    /// let l = RateLimiter::new("geocoding", Config::new(5, Duration::from_secs(1)).unwrap(), ManualClock::new());
    /// assert_eq!(l.id(), "geocoding");
    /// ```
    pub const fn id(&self) -> &'static str {
        self.id
    }

    /// The clock it reads.
    ///
    /// ```
    /// # use ritmo_core::{Clock, Config, ManualClock, RateLimiter};
    /// # use core::time::Duration;
    /// let l = RateLimiter::new("x", Config::new(5, Duration::from_secs(1)).unwrap(), ManualClock::starting_at(9));
    /// assert_eq!(l.clock().now(), 9);
    /// ```
    pub const fn clock(&self) -> &C {
        &self.clock
    }

    #[inline(always)]
    fn check_permits(&self, k: u32) -> Result<(), InvalidPermits> {
        if k == 0 || k > self.config.permits() {
            Err(InvalidPermits::new(self.id, k, self.config.permits()))
        } else {
            Ok(())
        }
    }

    /// The error for a call rejected with `wait` units to go, published to the listener if there
    /// is one. Inline and small: the listener call itself is out of line.
    #[inline]
    fn rejected(&self, wait: u64) -> RateLimitExceeded {
        let error =
            RateLimitExceeded::new(self.id, Reason::NoPermitInTime, wait, self.rate.unit_hz);
        if let Some(listener) = self.listener {
            publish_rejected(listener, error);
        }
        error
    }
}

/// A "wait" that says the permits asked for are more than the config a reconfigure set allows:
/// reported as [`InvalidPermits`], never as a wait (no wait is that long: 584 years in
/// nanoseconds).
const INVALID_NOW: u64 = u64::MAX - 1;

/// Marks the branch that calls it as the unlikely one, so that the compiler lays the likely one out
/// as the straight path.
#[cold]
#[inline(always)]
fn unlikely() {}

#[cold]
#[inline(never)]
fn publish_waiting(listener: &dyn Listener, id: &'static str, permits: u32, wait: Duration) {
    if listener.wants_waiting() {
        listener.on_event(&Event::Waiting { id, permits, wait });
    }
}

#[cold]
#[inline(never)]
fn publish_rejected(listener: &dyn Listener, error: RateLimitExceeded) {
    listener.on_event(&Event::Rejected(error));
}

impl<C: Clock> RateLimiter<C> {
    /// The clock's reading in units. Clocks of 1 GHz and more (a TSC, `ManualClock`) need no
    /// shift: one predictable branch skips the shift and its saturation check.
    #[inline(always)]
    fn now_units(&self) -> u64 {
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
        // A disabled limiter has `limit` 0: `take` refuses without touching the state, and the
        // call passes in `refused_slow`.
        // The state is loaded before the limiter's constants are read, so that the compiler
        // reads each constant where it is used (the acquire load keeps it from sinking them).
        let now = self.now_units();
        let tat = self.state.tat();
        let verdict = match gcra::check_limit(tat, now, self.rate.interval, self.rate.limit) {
            Ok(new_tat) => match self.state.replace(tat, new_tat) {
                Ok(()) => {
                    self.count_admitted();
                    Ok(())
                }
                Err(found) => self.take_contended(found, now, self.rate.interval, self.rate.limit),
            },
            Err(refused) if self.plain_reject.get() => Err(refused.wait()),
            Err(refused) => self.refused_slow(refused),
        };
        // The error is built here, inline, from the wait alone: a caller that only asks
        // `is_ok()` does not pay for it, and no slow path returns 40 bytes through memory.
        verdict.map_err(|wait| self.error(wait))
    }

    /// Counts an admitted call (feature `counters`); nothing otherwise.
    #[inline(always)]
    fn count_admitted(&self) {
        #[cfg(feature = "counters")]
        self.admitted.increment();
    }

    /// `units` as a duration, rounded up.
    fn duration(&self, units: u64) -> Duration {
        TickRate::from_hz(self.rate.unit_hz).duration_ceil(units)
    }

    /// How many calls it has admitted at once since it was built (calls that got their permits
    /// after waiting are reported to the listener as [`Event::Waiting`] instead). Wraps at
    /// `u64::MAX`. A statistic: counting costs the admitted call a plain load and store, so two
    /// cores admitting at the very same instant may count one call (never more than were
    /// admitted).
    ///
    /// ```
    /// # use ritmo_core::{Config, ManualClock, RateLimiter};
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
    fn error(&self, wait: u64) -> RateLimitExceeded {
        RateLimitExceeded::new(self.id, Reason::NoPermitInTime, wait, self.rate.unit_hz)
    }

    /// A refusal on a limiter that is disabled (the call passes: `Ok`) or has a listener
    /// (published; `Err(wait)`).
    #[cold]
    #[inline(never)]
    fn refused_slow(&self, refused: Refused) -> Result<(), u64> {
        if self.live.reconfigured() {
            return match self.live_acquire(1, Some(0)) {
                live::Outcome::Granted { .. } => {
                    self.count_admitted();
                    Ok(())
                }
                live::Outcome::Refused(wait) => {
                    if let Some(listener) = self.listener {
                        listener.on_event(&Event::Rejected(self.error(wait)));
                    }
                    Err(wait)
                }
                live::Outcome::Disabled | live::Outcome::Invalid(_) => Ok(()),
            };
        }
        if !self.config.enabled() {
            return Ok(());
        }
        let wait = refused.wait();
        if let Some(listener) = self.listener {
            listener.on_event(&Event::Rejected(self.error(wait)));
        }
        Err(wait)
    }

    /// A call that lost the CAS race: decides again, out of line. `Err(wait)` if refused.
    #[cold]
    #[inline(never)]
    fn take_contended(&self, found: u64, now: u64, increment: u64, limit: u64) -> Result<(), u64> {
        match self.state.take_contended(found, now, increment, limit) {
            Ok(_) => {
                self.count_admitted();
                Ok(())
            }
            Err(refused) if self.plain_reject.get() => Err(refused.wait()),
            Err(refused) => self.refused_slow(refused),
        }
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
        if k == 0 || k > self.config.permits() || !self.config.enabled() {
            return self.try_acquire_n_cold(k);
        }
        let now = self.now_units();
        let increment = self.rate.increment(k);
        // `increment <= window` since `k <= permits`.
        let limit = self.rate.window - increment + 1;
        let verdict = match self.state.take(now, increment, limit) {
            Take::Taken => {
                self.count_admitted();
                Ok(())
            }
            Take::Refused(refused) if self.plain_reject.get() => Err(refused.wait()),
            Take::Refused(refused) => self.refused_slow_n(refused, k),
            Take::Lost(found) => self.take_contended_n(found, now, increment, limit, k),
        };
        verdict.map_err(|wait| self.error_n(wait, k))
    }

    /// The error of a refused `try_acquire_n`: [`INVALID_NOW`] when `k` is no longer valid for
    /// the config a reconfigure set. Out of line, so that `try_acquire_n` stays small enough to
    /// be inlined into its caller.
    #[inline(never)]
    fn error_n(&self, wait: u64, k: u32) -> AcquireError {
        if wait == INVALID_NOW {
            InvalidPermits::new(self.id, k, self.permits_now()).into()
        } else {
            self.error(wait).into()
        }
    }

    /// `try_acquire_n` with `k` invalid for the config the limiter was built with, or on a
    /// limiter built disabled: either may have changed since (a reconfigure).
    #[cold]
    #[inline(never)]
    fn try_acquire_n_cold(&self, k: u32) -> Result<(), AcquireError> {
        if self.live.reconfigured() {
            return self.live_try(k);
        }
        self.check_permits(k)?;
        Ok(()) // disabled
    }

    /// A refusal of `k` permits on a limiter that is reconfigured, disabled or has a listener.
    #[cold]
    #[inline(never)]
    fn refused_slow_n(&self, refused: Refused, k: u32) -> Result<(), u64> {
        if self.live.reconfigured() {
            return match self.live_acquire(k, Some(0)) {
                live::Outcome::Granted { .. } => {
                    self.count_admitted();
                    Ok(())
                }
                live::Outcome::Refused(wait) => {
                    if let Some(listener) = self.listener {
                        listener.on_event(&Event::Rejected(self.error(wait)));
                    }
                    Err(wait)
                }
                live::Outcome::Disabled => Ok(()),
                live::Outcome::Invalid(_) => Err(INVALID_NOW),
            };
        }
        self.refused_slow(refused)
    }

    /// [`take_contended`](Self::take_contended) for `k` permits.
    #[cold]
    #[inline(never)]
    fn take_contended_n(
        &self,
        found: u64,
        now: u64,
        increment: u64,
        limit: u64,
        k: u32,
    ) -> Result<(), u64> {
        match self.state.take_contended(found, now, increment, limit) {
            Ok(_) => {
                self.count_admitted();
                Ok(())
            }
            Err(refused) if self.plain_reject.get() => Err(refused.wait()),
            Err(refused) => self.refused_slow_n(refused, k),
        }
    }

    /// Takes one permit now, or reserves the next one if it arrives within the config's
    /// `max_wait`; otherwise rejects at once without changing anything.
    ///
    /// The [`Reservation`] knows its slot. Commit it once the work runs; dropping or cancelling it
    /// before then returns the permit if no later reservation was made (SPEC §3).
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
        self.reserve_units(1, None).map_err(|e| match e {
            AcquireError::RateLimited(e) => e,
            AcquireError::InvalidPermits(_) => unreachable!("1 permit is always valid"),
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
        self.reserve_units(k, None)
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
        self.reserve_units(k, Some(self.rate.units_floor(max_wait)))
    }

    fn reserve_units(
        &self,
        k: u32,
        max_wait: Option<u64>,
    ) -> Result<Reservation<'_, C>, AcquireError> {
        if self.live.reconfigured() {
            return self.live_reserve(k, max_wait);
        }
        self.check_permits(k)?;
        let now = self.now_units();
        if !self.config.enabled() {
            return Ok(Reservation::new(self, 0, 0, now, 0, k));
        }
        let increment = self.rate.increment(k);
        let max_wait = max_wait.unwrap_or(self.rate.max_wait);
        match self
            .state
            .reserve(now, increment, self.rate.window, max_wait)
        {
            Reserve::Now { new_tat } => {
                self.count_admitted();
                Ok(Reservation::new(self, new_tat, increment, now, 0, k))
            }
            Reserve::Wait { new_tat, wait } => {
                if let Some(listener) = self.listener {
                    publish_waiting(listener, self.id, k, self.duration(wait));
                }
                Ok(Reservation::new(
                    self,
                    new_tat,
                    increment,
                    now.saturating_add(wait),
                    wait,
                    k,
                ))
            }
            // A reconfigure froze the state meanwhile: decide on the reconfigured path.
            Reserve::Reject { .. } if self.live.reconfigured() => {
                self.live_reserve(k, Some(max_wait))
            }
            Reserve::Reject { wait } => Err(self.rejected(wait).into()),
        }
    }

    /// Takes one permit, waiting for it with `waiter` if it arrives within `max_wait`.
    ///
    /// If the waiter is interrupted, the permit goes back by SPEC §3's rule and the call fails with
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

    /// Calls of one permit that would pass right now without waiting, in `0..=permits`. Takes
    /// nothing.
    ///
    /// ```
    /// # use ritmo_core::{Config, ManualClock, RateLimiter};
    /// # use core::time::Duration;
    /// let clock = ManualClock::new();
    /// let l = RateLimiter::new("x", Config::new(10, Duration::from_secs(1)).unwrap(), &clock);
    /// l.try_acquire_n(10).unwrap();
    /// assert_eq!(l.available_permits(), 0);
    /// clock.advance(Duration::from_millis(350));
    /// assert_eq!(l.available_permits(), 3);
    /// ```
    pub fn available_permits(&self) -> u32 {
        if self.live.reconfigured() {
            return self.live_available();
        }
        if !self.config.enabled() {
            return self.config.permits();
        }
        gcra::available(
            self.state.tat(),
            self.now_units(),
            self.rate.interval,
            self.rate.window,
            self.config.permits(),
        )
    }

    /// How long until one permit would pass without waiting: zero if one is there now. Takes
    /// nothing.
    ///
    /// ```
    /// # use ritmo_core::{Config, ManualClock, RateLimiter};
    /// # use core::time::Duration;
    /// let l = RateLimiter::new("x", Config::new(10, Duration::from_secs(1)).unwrap(), ManualClock::new());
    /// assert_eq!(l.retry_after(), Duration::ZERO);
    /// l.try_acquire_n(10).unwrap();
    /// assert_eq!(l.retry_after(), Duration::from_millis(100));
    /// ```
    pub fn retry_after(&self) -> Duration {
        match self.retry_after_n(1) {
            Ok(d) => d,
            Err(_) => Duration::ZERO,
        }
    }

    /// How long until `k` permits would pass at once without waiting. Takes nothing.
    ///
    /// ```
    /// # use ritmo_core::{Config, ManualClock, RateLimiter};
    /// # use core::time::Duration;
    /// let l = RateLimiter::new("x", Config::new(10, Duration::from_secs(1)).unwrap(), ManualClock::new());
    /// l.try_acquire_n(10).unwrap();
    /// assert_eq!(l.retry_after_n(4).unwrap(), Duration::from_millis(400));
    /// assert!(l.retry_after_n(11).is_err());
    /// ```
    pub fn retry_after_n(&self, k: u32) -> Result<Duration, InvalidPermits> {
        if self.live.reconfigured() {
            let wait = self.live_retry_after(k)?;
            return Ok(self.duration(wait));
        }
        self.check_permits(k)?;
        if !self.config.enabled() {
            return Ok(Duration::ZERO);
        }
        let wait = match gcra::check(
            self.state.tat(),
            self.now_units(),
            self.rate.increment(k),
            self.rate.window,
        ) {
            Ok(_) => 0,
            Err(wait) => wait,
        };
        Ok(TickRate::from_hz(self.rate.unit_hz).duration_ceil(wait))
    }

    /// Its id, available permits and permits per period. Takes nothing.
    ///
    /// ```
    /// # use ritmo_core::{Config, ManualClock, RateLimiter};
    /// # use core::time::Duration;
    /// let l = RateLimiter::new("x", Config::new(4, Duration::from_secs(1)).unwrap(), ManualClock::new());
    /// assert_eq!(l.snapshot().available_permits, 4);
    /// ```
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            instance: self.id,
            available_permits: self.available_permits(),
            permits: self.permits_now(),
        }
    }
}

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
    /// for _ in 0..6 { l.acquire().unwrap(); }
    /// assert_eq!(clock.now(), 200_000_000);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn acquire(&self) -> Result<(), RateLimitExceeded> {
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
    /// l.acquire_n(10).unwrap();
    /// l.acquire_n(5).unwrap();
    /// assert_eq!(clock.now(), 500_000_000);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn acquire_n(&self, k: u32) -> Result<(), AcquireError> {
        self.acquire_n_with(k, &mut AdvanceClock)
    }
}

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
    seq: u32,
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
    fn new(
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
    /// there at once), rounded up to the nanosecond.
    ///
    /// ```
    /// # use ritmo_core::{Config, ManualClock, RateLimiter};
    /// # use core::time::Duration;
    /// let l = RateLimiter::new("x", Config::new(1, Duration::from_secs(1)).unwrap(), ManualClock::new());
    /// assert_eq!(l.reserve().unwrap().wait_time(), Duration::ZERO);
    /// ```
    pub fn wait_time(&self) -> Duration {
        TickRate::from_hz(self.limiter.rate.unit_hz).duration_ceil(self.wait)
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

    /// How long from now until the slot: zero once it has arrived.
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
        TickRate::from_hz(self.limiter.rate.unit_hz).duration_ceil(self.slot.saturating_sub(now))
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
    /// call should fail with ([`Reason::Interrupted`], `retry_after` the time left to the slot).
    /// For adapters that implement their own waiting.
    ///
    /// ```
    /// # use ritmo_core::{Config, ManualClock, RateLimiter, Reason};
    /// # use core::time::Duration;
    /// let c = Config::new(1, Duration::from_secs(1)).unwrap().with_max_wait(Duration::from_secs(1));
    /// let l = RateLimiter::new("x", c, ManualClock::new());
    /// l.try_acquire().unwrap();
    /// let err = l.reserve().unwrap().interrupted();
    /// assert_eq!((err.reason(), err.retry_after()), (Reason::Interrupted, Duration::from_secs(1)));
    /// ```
    pub fn interrupted(mut self) -> RateLimitExceeded {
        let left = self.slot.saturating_sub(self.limiter.now_units());
        self.release(Reason::Interrupted);
        RateLimitExceeded::new(
            self.limiter.id,
            Reason::Interrupted,
            left,
            self.limiter.rate.unit_hz,
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
        let returned = if self.seq == 0 {
            // A reconfigure since has frozen this state: nothing goes back then.
            self.limiter.state.refund(self.written, self.increment)
        } else {
            self.limiter
                .live_refund(self.seq, self.written, self.increment)
        };
        if let Some(listener) = self.limiter.listener {
            listener.on_event(&Event::Released {
                instance: self.limiter.id,
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
