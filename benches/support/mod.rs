//! What the benches share: a TSC clock for ritmo and the quotas both libraries are given.

#![allow(dead_code)] // each bench binary uses part of it

use core::num::NonZeroU32;
use core::time::Duration;

use ritmo::{Clock, Config, TickRate};

/// The CPU's time-stamp counter through `quanta::Clock::raw()`, the counter governor's default
/// clock reads too, with its tick rate measured once at start-up. ritmo converts its config to
/// these ticks when the limiter is built, so a call reads the counter and never scales it.
#[derive(Debug, Clone)]
pub struct TscClock {
    clock: quanta::Clock,
    hz: u64,
}

impl TscClock {
    /// Calibrates (quanta measures the counter against the OS clock once per process).
    pub fn new() -> Self {
        let clock = quanta::Clock::new();
        let span: u64 = 1 << 40;
        let nanos = clock.delta_as_nanos(0, span).max(1);
        let hz = (u128::from(span) * 1_000_000_000 / u128::from(nanos)) as u64;
        TscClock { clock, hz }
    }

    /// The raw counter, for measuring what a bare read costs.
    #[inline]
    pub fn raw(&self) -> u64 {
        self.clock.raw()
    }
}

impl Clock for TscClock {
    #[inline]
    fn now(&self) -> u64 {
        self.clock.raw()
    }
    fn tick_rate(&self) -> TickRate {
        TickRate::from_hz(self.hz)
    }
}

/// A quota no benchmark can spend: a burst of `u32::MAX`, one permit per nanosecond (the finest
/// rate ritmo accepts), so every measured call is admitted.
pub fn ritmo_unlimited() -> Config {
    Config::new(u32::MAX, Duration::from_nanos(u64::from(u32::MAX))).expect("a valid config")
}

/// The same quota for governor: `u32::MAX` per second is a burst of `u32::MAX` and an interval
/// it rounds to 0 and then raises to its minimum, 1 ns.
pub fn governor_unlimited() -> governor::Quota {
    governor::Quota::per_second(NonZeroU32::MAX)
}

/// One permit per hour: taken once, every measured call is rejected.
pub fn ritmo_hourly() -> Config {
    Config::new(1, Duration::from_secs(3600)).expect("a valid config")
}

/// The same quota for governor.
pub fn governor_hourly() -> governor::Quota {
    governor::Quota::per_hour(NonZeroU32::MIN)
}
