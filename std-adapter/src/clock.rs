//! Server clocks: [`StdClock`] (the default, a raw CPU counter), [`InstantClock`]
//! (`std::time::Instant`) and [`CoarseClock`](crate::CoarseClock) (a cached reading).
//!
//! # How the default was chosen
//!
//! A limiter reads its clock once per call, so the clock is most of the cost of an admitted call.
//! Measured on the development machine (x86-64, invariant TSC): `std::time::Instant::now()` costs
//! about 25 ns (a vDSO `clock_gettime` that scales the TSC to nanoseconds), a raw TSC read about
//! 10 ns. ritmo's limiter never scales time on the hot path (it converts its config into the
//! clock's ticks once, when built), so it can use the raw counter directly: [`StdClock`] reads
//! it through the `quanta` crate and reports the counter's calibrated rate as its
//! [`TickRate`]. On a busy shared 2-core VM (invariant TSC, 2.45 GHz) a release build measured
//! 82 ns for `Instant::now()`, 103 ns for [`InstantClock`] (the epoch lookup and conversion on
//! top), 29 ns for [`StdClock`], and 26 to 36 ns for a whole admitted or rejected
//! `try_acquire` on it: the ratio, not the absolute numbers, is what carries over.
//!
//! Where the counter is slow to read (on many virtual machines a TSC read costs 25 to 40 ns, the
//! whole cost of a call), [`CoarseClock`](crate::CoarseClock) reads a cached value instead: one
//! upkeep thread refreshes it every resolution (500 µs by default), a call loads one atomic. Its
//! granularity is the resolution: it lags real time by up to one resolution and never leads,
//! so permits can come late, never early (its docs say exactly what that costs).
//!
//! | clock | one reading | tick | epoch | when to use |
//! | --- | --- | --- | --- | --- |
//! | [`StdClock`] | ~10 ns (TSC) | one CPU counter tick (~0.3 ns at 3 GHz) | counter start (boot) | default for servers |
//! | [`CoarseClock`](crate::CoarseClock) | ~1 ns (one load) | 1 ns, refreshed every 500 µs | as [`InstantClock`] | slow counters (VMs), hot limiters that tolerate a late permit |
//! | [`InstantClock`] | ~25 ns | 1 ns | first use in the process | `static` limiters, portability, debugging |
//!
//! `quanta` uses the counter only where it can be trusted: an x86-64 CPU that advertises an
//! invariant TSC and `rdtscp` (the counter then runs at one rate on every core, through frequency
//! changes and sleep states), or an AArch64 system counter. Elsewhere (many virtual machines, other
//! architectures) it reads the OS monotonic clock in nanoseconds, and [`StdClock::tick_rate`] then
//! reports exactly 1 GHz: the rate is always derived from `quanta`'s own conversion of its raw
//! readings, so it is right in both cases.

use std::sync::OnceLock;
use std::time::Instant;

use ritmo_core::{Clock, FixedRateClock, TickRate};

/// The default server clock: a raw CPU counter (the x86 TSC, the AArch64 system counter), read
/// in about 10 ns, with its rate calibrated once against the OS monotonic clock.
///
/// Its tick rate is known only at run time, so limiters on it are built with
/// [`RateLimiter::with_clock`](crate::ritmo::RateLimiter::with_clock), or with this crate's
/// [`limiter`](crate::limiter) shorthand. Building one costs a CPU-feature check; the
/// calibration itself runs once per process (a few milliseconds at most) and is shared.
///
/// Where the counter cannot be trusted (see the [module docs](self)) it reads the OS monotonic
/// clock instead, in nanoseconds, and reports [`TickRate::NANOS`].
///
/// ```
/// use ritmo::Clock;
/// use ritmo::server::StdClock;
///
/// let clock = StdClock::new();
/// let a = clock.now();
/// std::thread::sleep(std::time::Duration::from_millis(2));
/// let b = clock.now();
/// let elapsed = clock.tick_rate().duration_ceil(b - a);
/// assert!(elapsed >= std::time::Duration::from_millis(1));
/// ```
#[derive(Debug, Clone)]
pub struct StdClock {
    counter: quanta::Clock,
    rate: TickRate,
}

impl StdClock {
    /// The counter clock, calibrated (once per process).
    ///
    /// ```
    /// let clock = ritmo::server::StdClock::new();
    /// assert!(ritmo::Clock::tick_rate(&clock).hz() >= 1_000_000);
    /// ```
    pub fn new() -> Self {
        let counter = quanta::Clock::new();
        let rate = TickRate::from_hz(hz_of(&counter));
        StdClock { counter, rate }
    }

    /// Whether readings come from the CPU counter (`true`) or from the OS monotonic clock in
    /// nanoseconds (`false`, where the counter cannot be trusted).
    ///
    /// ```
    /// let clock = ritmo::server::StdClock::new();
    /// if !clock.is_counter() {
    ///     assert_eq!(ritmo::Clock::tick_rate(&clock), ritmo::TickRate::NANOS);
    /// }
    /// ```
    pub fn is_counter(&self) -> bool {
        // The OS clock is in nanoseconds, so quanta converts its readings 1:1; a counter's
        // conversion is never exactly 1:1 over this span.
        const SPAN: u64 = 1 << 40;
        self.counter.delta_as_nanos(0, SPAN) != SPAN
    }
}

/// Ticks per second of `counter`'s raw readings, from quanta's own conversion of a long span (2^40
/// ticks, about six minutes at 3 GHz) so that rounding costs under a part per billion.
fn hz_of(counter: &quanta::Clock) -> u64 {
    const SPAN: u64 = 1 << 40;
    let nanos = counter.delta_as_nanos(0, SPAN).max(1);
    let hz = (u128::from(SPAN) * 1_000_000_000 + u128::from(nanos) / 2) / u128::from(nanos);
    u64::try_from(hz).unwrap_or(u64::MAX)
}

impl Default for StdClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for StdClock {
    #[inline(always)]
    fn now(&self) -> u64 {
        self.counter.raw()
    }

    #[inline]
    fn tick_rate(&self) -> TickRate {
        self.rate
    }
}

static EPOCH: OnceLock<Instant> = OnceLock::new();

/// A clock on [`std::time::Instant`]: nanoseconds since a process-wide epoch (the first time any
/// `InstantClock` is read), about 25 ns a reading.
///
/// Its tick rate is a constant, so limiters on it can be built in a `const` context and kept in a
/// `static`. Every `InstantClock` shares the epoch, so readings from two of them compare.
///
/// ```
/// use std::time::Duration;
/// use ritmo::{const_config, RateLimiter};
/// use ritmo::server::InstantClock;
///
/// static API: RateLimiter<InstantClock> =
///     RateLimiter::new("api", const_config!(2, Duration::from_secs(60)), InstantClock);
/// assert!(API.try_acquire().is_ok());
/// assert!(API.try_acquire().is_ok());
/// assert!(API.try_acquire().is_err());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InstantClock;

impl InstantClock {
    /// The clock (a unit struct: `InstantClock::new()` and `InstantClock` are the same value),
    /// for code written as for every other clock, `StdClock::new()` or `CoarseClock::new()`.
    ///
    /// ```
    /// use ritmo::server::InstantClock;
    /// static CLOCK: InstantClock = InstantClock::new();
    /// assert_eq!(CLOCK, InstantClock);
    /// ```
    pub const fn new() -> Self {
        InstantClock
    }

    /// The instant a reading counts from.
    ///
    /// ```
    /// use ritmo::Clock;
    /// use ritmo::server::InstantClock;
    /// let reading = InstantClock.now();
    /// assert!(InstantClock::epoch() + std::time::Duration::from_nanos(reading) <= std::time::Instant::now());
    /// ```
    pub fn epoch() -> Instant {
        *EPOCH.get_or_init(Instant::now)
    }

    /// The instant a reading stands for.
    ///
    /// ```
    /// use ritmo::Clock;
    /// use ritmo::server::InstantClock;
    /// let reading = InstantClock.now();
    /// assert_eq!(InstantClock::instant_at(reading), InstantClock::epoch() + std::time::Duration::from_nanos(reading));
    /// ```
    pub fn instant_at(reading: u64) -> Instant {
        Self::epoch() + std::time::Duration::from_nanos(reading)
    }
}

impl Clock for InstantClock {
    #[inline]
    fn now(&self) -> u64 {
        let nanos = Self::epoch().elapsed().as_nanos();
        u64::try_from(nanos).unwrap_or(u64::MAX)
    }

    #[inline]
    fn tick_rate(&self) -> TickRate {
        TickRate::NANOS
    }
}

impl FixedRateClock for InstantClock {
    const TICK_RATE: TickRate = TickRate::NANOS;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn std_clock_rate_agrees_with_instant() {
        // The calibrated rate converts a measured span to within 1% of what Instant saw around
        // it: a wrong rate (nanoseconds reported for a 3 GHz counter, say) is off by a factor of
        // 3. Each counter reading is bracketed by two Instant readings, so a preemption between
        // them widens the bracket instead of failing the test.
        let clock = StdClock::new();
        let (outer0, a, inner0) = (Instant::now(), clock.now(), Instant::now());
        std::thread::sleep(Duration::from_millis(100));
        let (inner1, b, outer1) = (Instant::now(), clock.now(), Instant::now());
        let by_clock = clock.tick_rate().duration_ceil(b - a).as_secs_f64();
        let (inner, outer) = (
            (inner1 - inner0).as_secs_f64(),
            (outer1 - outer0).as_secs_f64(),
        );
        assert!(
            by_clock >= inner * 0.99 && by_clock <= outer * 1.01,
            "clock says {by_clock} s, Instant between {inner} and {outer} s"
        );
    }

    #[test]
    fn a_nanosecond_source_reports_one_gigahertz() {
        // What the OS-clock fallback looks like to ritmo: quanta converts its readings 1:1.
        let (mock, _control) = quanta::Clock::mock();
        assert_eq!(hz_of(&mock), 1_000_000_000);
    }

    #[test]
    fn instant_clock_is_monotonic_and_shares_its_epoch() {
        let a = InstantClock.now();
        let b = InstantClock.now();
        assert!(b >= a);
        assert!(InstantClock::instant_at(b) <= Instant::now());
    }
}
