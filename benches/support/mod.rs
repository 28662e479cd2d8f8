//! What the benches share: the quotas both libraries are given.
//!
//! ritmo runs on its default server clock, `ritmo::server::StdClock` (the CPU's time-stamp counter
//! through quanta, its tick rate measured at start-up), governor on its default, quanta's clock
//! too: both read the same counter.

#![allow(dead_code)] // each bench binary uses part of it

use core::num::NonZeroU32;
use core::time::Duration;

use ritmo::Config;

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
