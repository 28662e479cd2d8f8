//! Clocks: where a limiter reads the time.
//!
//! A [`Clock`] returns a `u64` count of its own ticks and says how long a tick is. The limiter
//! converts its [`Config`](crate::Config) into ticks once, when it is built, so that the hot path
//! only compares and adds: it never scales time (on a Cortex-M0 a 64-bit multiply is a library
//! call, and scaling a TSC reading to nanoseconds nearly doubles its cost).
//!
//! The [`Clock`] trait's docs say what an implementation must do, with a complete example of
//! implementing one.

use core::time::Duration;

use crate::sync::U64Cell;

/// A source of monotonic time for a limiter.
///
/// # Contract
///
/// An implementation MUST:
/// - return from [`now`](Clock::now) a count of its own ticks since an epoch of its choosing, and
///   never fail or block;
/// - be monotonic: a reading is never smaller than one taken before it on any thread. A limiter
///   survives a clock that breaks this (a reading that steps back is treated as "no time passed":
///   no panic, never more than the bound admitted), but waits may then last longer than asked;
/// - return the same [`tick_rate`](Clock::tick_rate) for its whole life;
/// - not wrap within the life of the limiters that use it: extend a narrow hardware counter to 64
///   bits (at 1 MHz a `u64` lasts 584 000 years). Near `u64::MAX` the limiter refuses permits that
///   would arrive past the end of the range rather than overflow.
///
/// The implementation for `&C` lets several limiters share one clock.
///
/// ```
/// use ritmo::{Clock, ManualClock, TickRate};
/// let clock = ManualClock::new();
/// clock.advance_ticks(5);
/// let shared: &ManualClock = &clock;
/// assert_eq!(shared.now(), 5);
/// assert_eq!(shared.tick_rate(), TickRate::NANOS);
/// ```
///
/// # Implement your own clock
///
/// A clock on a 32768 Hz RTC counter, as firmware would write it. The counter here is a static
/// the test moves by hand; on hardware `now()` reads the peripheral.
///
/// ```
/// use core::time::Duration;
/// use portable_atomic::{AtomicU64, Ordering};
/// use ritmo::{Clock, Config, FixedRateClock, RateLimiter, TickRate};
///
/// static RTC_COUNTER: AtomicU64 = AtomicU64::new(0);
///
/// /// Ticks of a 32768 Hz real-time counter, extended to 64 bits.
/// #[derive(Debug, Clone, Copy)]
/// struct RtcClock;
///
/// impl Clock for RtcClock {
///     fn now(&self) -> u64 {
///         RTC_COUNTER.load(Ordering::Acquire)
///     }
///     fn tick_rate(&self) -> TickRate {
///         Self::TICK_RATE
///     }
/// }
///
/// // The rate is a constant, so limiters on this clock can be `static`s.
/// impl FixedRateClock for RtcClock {
///     const TICK_RATE: TickRate = TickRate::from_hz(32_768);
/// }
///
/// static RADIO: RateLimiter<RtcClock> = RateLimiter::new(
///     "radio",
///     ritmo::const_config!(3, Duration::from_secs(1)),
///     RtcClock,
/// );
///
/// assert!(RADIO.try_acquire().is_ok());
/// assert!(RADIO.try_acquire().is_ok());
/// assert!(RADIO.try_acquire().is_ok());
/// assert!(RADIO.try_acquire().is_err());
/// RTC_COUNTER.store(32_768 / 3 + 1, Ordering::Release); // a third of a second later
/// assert!(RADIO.try_acquire().is_ok());
/// ```
pub trait Clock {
    /// The current reading, in ticks of this clock.
    fn now(&self) -> u64;
    /// How long one tick of [`now`](Clock::now) is.
    fn tick_rate(&self) -> TickRate;
}

/// A [`Clock`] whose tick rate is known at compile time, so that limiters on it can be built in a
/// `const` context (a `static` limiter on a microcontroller).
///
/// `TICK_RATE` MUST equal what [`Clock::tick_rate`] returns.
///
/// ```
/// use ritmo::{FixedRateClock, ManualClock, TickRate};
/// assert_eq!(<ManualClock as FixedRateClock>::TICK_RATE, TickRate::NANOS);
/// ```
pub trait FixedRateClock: Clock {
    /// The tick rate, as a constant.
    const TICK_RATE: TickRate;
}

impl<C: Clock + ?Sized> Clock for &C {
    #[inline(always)]
    fn now(&self) -> u64 {
        (**self).now()
    }
    #[inline]
    fn tick_rate(&self) -> TickRate {
        (**self).tick_rate()
    }
}

impl<C: FixedRateClock + ?Sized> FixedRateClock for &C {
    const TICK_RATE: TickRate = C::TICK_RATE;
}

/// How long a clock tick is, as ticks per second.
///
/// ```
/// use ritmo::TickRate;
/// assert_eq!(TickRate::from_hz(32_768).hz(), 32_768);
/// assert_eq!(TickRate::NANOS.hz(), 1_000_000_000);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TickRate {
    hz: u64,
}

impl TickRate {
    /// One tick per nanosecond.
    pub const NANOS: TickRate = TickRate::from_hz(1_000_000_000);

    /// `hz` ticks per second. A rate of 0 is taken as 1 Hz.
    ///
    /// ```
    /// # use ritmo::TickRate;
    /// assert_eq!(TickRate::from_hz(0).hz(), 1);
    /// ```
    pub const fn from_hz(hz: u64) -> Self {
        TickRate {
            hz: if hz == 0 { 1 } else { hz },
        }
    }

    /// Ticks per second.
    ///
    /// ```
    /// # use ritmo::TickRate;
    /// assert_eq!(TickRate::from_hz(1_000_000).hz(), 1_000_000);
    /// ```
    pub const fn hz(self) -> u64 {
        self.hz
    }

    /// A duration in ticks of this rate, rounded up (saturating at `u64::MAX`).
    ///
    /// ```
    /// # use ritmo::TickRate;
    /// # use core::time::Duration;
    /// assert_eq!(TickRate::from_hz(1000).ticks_ceil(Duration::from_micros(1500)), 2);
    /// ```
    pub const fn ticks_ceil(self, duration: Duration) -> u64 {
        let ns = duration.as_nanos();
        // Saturating: `Duration::MAX` at `u64::MAX` Hz overflows even `u128`, and anything that
        // large is more than `u64::MAX` ticks anyway.
        let ticks = ns.saturating_mul(self.hz as u128).div_ceil(1_000_000_000);
        if ticks > u64::MAX as u128 {
            u64::MAX
        } else {
            ticks as u64
        }
    }

    /// A number of ticks of this rate as a duration, rounded up to the nanosecond.
    ///
    /// ```
    /// # use ritmo::TickRate;
    /// # use core::time::Duration;
    /// assert_eq!(TickRate::from_hz(3).duration_ceil(1), Duration::from_nanos(333_333_334));
    /// ```
    pub const fn duration_ceil(self, ticks: u64) -> Duration {
        let ns = (ticks as u128 * 1_000_000_000).div_ceil(self.hz as u128);
        let secs = ns / 1_000_000_000;
        let nanos = (ns % 1_000_000_000) as u32;
        if secs > u64::MAX as u128 {
            Duration::MAX
        } else {
            Duration::new(secs as u64, nanos)
        }
    }
}

/// A clock whose ticks can be moved by hand: what a waiting call on a fake clock does instead of
/// sleeping (it advances the clock to its slot).
///
/// ```
/// use ritmo::{Clock, ManualClock, ManualTime};
/// let clock = ManualClock::new();
/// clock.advance_to(50);
/// clock.advance_to(20); // never backwards
/// assert_eq!(clock.now(), 50);
/// ```
pub trait ManualTime: Clock {
    /// Moves the clock forward to `ticks` if it reads less.
    fn advance_to(&self, ticks: u64);
}

impl<C: ManualTime + ?Sized> ManualTime for &C {
    fn advance_to(&self, ticks: u64) {
        (**self).advance_to(ticks)
    }
}

/// A fake clock for tests: time moves only when the test moves it.
///
/// Ticks are nanoseconds by default; `ManualClock<HZ>` ticks at `HZ` per second, to test how a
/// limiter behaves on a coarse clock (a 32768 Hz RTC, a 1 MHz timer). It is `Sync` and
/// const-constructible, so a test can share one across threads or keep it in a `static`.
///
/// ```
/// use core::time::Duration;
/// use ritmo::{Clock, Config, ManualClock, RateLimiter};
///
/// let clock = ManualClock::new();
/// let limiter = RateLimiter::new("search", Config::new(10, Duration::from_secs(1)).unwrap(), &clock);
/// for _ in 0..10 {
///     assert!(limiter.try_acquire().is_ok()); // a full burst of 10
/// }
/// assert!(limiter.try_acquire().is_err());
/// clock.advance(Duration::from_millis(100)); // one permit every 100 ms
/// assert!(limiter.try_acquire().is_ok());
/// assert!(limiter.try_acquire().is_err());
/// ```
#[derive(Debug)]
pub struct ManualClock<const HZ: u64 = 1_000_000_000> {
    ticks: U64Cell,
}

impl ManualClock {
    const_fn! {
    /// A nanosecond clock reading 0.
    ///
    /// ```
    /// # use ritmo::{Clock, ManualClock};
    /// static CLOCK: ManualClock = ManualClock::new();
    /// assert_eq!(CLOCK.now(), 0);
    /// ```
    pub fn new() -> Self {
        Self::with_reading(0)
    }
    }

    const_fn! {
    /// A nanosecond clock reading `nanos`.
    ///
    /// ```
    /// # use ritmo::{Clock, ManualClock};
    /// assert_eq!(ManualClock::starting_at(u64::MAX - 5).now(), u64::MAX - 5);
    /// ```
    pub fn starting_at(nanos: u64) -> Self {
        Self::with_reading(nanos)
    }
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        Self::new()
    }
}

impl<const HZ: u64> ManualClock<HZ> {
    const_fn! {
    /// A clock of `HZ` ticks per second reading `ticks`.
    ///
    /// ```
    /// # use ritmo::{Clock, ManualClock};
    /// let rtc = ManualClock::<32_768>::with_reading(7);
    /// assert_eq!(rtc.now(), 7);
    /// ```
    pub fn with_reading(ticks: u64) -> Self {
        ManualClock {
            ticks: U64Cell::new(ticks),
        }
    }
    }

    /// Moves the clock forward by `duration`, rounded up to whole ticks (saturating).
    ///
    /// ```
    /// # use ritmo::{Clock, ManualClock};
    /// # use core::time::Duration;
    /// let clock = ManualClock::new();
    /// clock.advance(Duration::from_millis(100));
    /// assert_eq!(clock.now(), 100_000_000);
    /// ```
    pub fn advance(&self, duration: Duration) {
        self.advance_ticks(TickRate::from_hz(HZ).ticks_ceil(duration));
    }

    /// Moves the clock forward by `ticks` (saturating at `u64::MAX`).
    ///
    /// ```
    /// # use ritmo::{Clock, ManualClock};
    /// let clock = ManualClock::starting_at(u64::MAX - 1);
    /// clock.advance_ticks(10);
    /// assert_eq!(clock.now(), u64::MAX);
    /// ```
    pub fn advance_ticks(&self, ticks: u64) {
        let mut current = self.ticks.load();
        loop {
            match self
                .ticks
                .compare_exchange(current, current.saturating_add(ticks))
            {
                Ok(_) => return,
                Err(found) => current = found,
            }
        }
    }

    /// Sets the reading to `ticks`, backwards too: tests use it to play a clock that misbehaves.
    ///
    /// ```
    /// # use ritmo::{Clock, ManualClock};
    /// let clock = ManualClock::starting_at(100);
    /// clock.set(40);
    /// assert_eq!(clock.now(), 40);
    /// ```
    pub fn set(&self, ticks: u64) {
        self.ticks.store(ticks);
    }
}

impl<const HZ: u64> Clock for ManualClock<HZ> {
    #[inline(always)]
    fn now(&self) -> u64 {
        self.ticks.load()
    }
    #[inline]
    fn tick_rate(&self) -> TickRate {
        Self::TICK_RATE
    }
}

impl<const HZ: u64> FixedRateClock for ManualClock<HZ> {
    const TICK_RATE: TickRate = TickRate::from_hz(HZ);
}

impl<const HZ: u64> ManualTime for ManualClock<HZ> {
    fn advance_to(&self, ticks: u64) {
        self.ticks.fetch_max(ticks);
    }
}
