//! Time as a clock of `hz` ticks per second shows it, and the unit the model counts in.
//!
//! SPEC §3: a clock returns a count of its own ticks; the config is converted into the clock's
//! unit once, the emission interval rounded up ("never faster than configured"), and on a clock
//! slower than 1 GHz the interval keeps a fixed-point fraction of a tick. The documented fraction
//! (docs/DESIGN.md §7) is `1 / 2^s` of a tick, `s` the smallest shift that makes the unit at most
//! a nanosecond; on 1 GHz and faster clocks the unit is the tick. SPEC §17: every wait reported
//! is rounded up to the clock's whole tick, then up to the nanosecond.

use core::time::Duration;

const NANOS_PER_SECOND: u128 = 1_000_000_000;

/// A clock's tick rate and the model's unit on it (`1 / per_tick` of a tick: `1 / 2^s` for the
/// core's limiters, a microsecond for the Redis store).
///
/// ```
/// use ritmo_test_support::Units;
/// let rtc = Units::new(32_768);
/// assert_eq!(rtc.per_tick(), 1 << 15); // 32768 << 15 >= 10^9
/// assert_eq!(rtc.ticks_ceil(rtc.from_ticks(7) + 1), 8);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Units {
    hz: u64,
    per_tick: u128,
}

impl Units {
    /// A nanosecond clock (`ManualClock::new()`): the unit is the tick.
    pub const NANOS: Units = Units {
        hz: 1_000_000_000,
        per_tick: 1,
    };

    /// A microsecond clock counted in its ticks: the Redis store's time (`TIME`, or a caller's
    /// nanosecond clock read as `floor(ns / 1000)`).
    pub const MICROS: Units = Units {
        hz: 1_000_000,
        per_tick: 1,
    };

    /// A clock of `hz` ticks per second (0 is taken as 1, as `TickRate::from_hz` does), counted
    /// as the core's limiters count it: in `1 / 2^s` of a tick, `s` the smallest shift that makes
    /// that at most a nanosecond.
    pub fn new(hz: u64) -> Units {
        let hz = hz.max(1);
        let mut shift = 0;
        while (u128::from(hz) << shift) < NANOS_PER_SECOND {
            shift += 1;
        }
        Units {
            hz,
            per_tick: 1 << shift,
        }
    }

    /// A clock of `hz` ticks per second counted in `1 / per_tick` of a tick (at least 1): a
    /// store that keeps its own unit, such as Redis's microseconds
    /// (`Units::with_unit(1, 1_000_000)` for a 1 Hz clock read by a microsecond store).
    pub fn with_unit(hz: u64, per_tick: u128) -> Units {
        Units {
            hz: hz.max(1),
            per_tick: per_tick.max(1),
        }
    }

    /// Ticks per second.
    pub fn hz(&self) -> u64 {
        self.hz
    }

    /// Units per tick.
    pub fn per_tick(&self) -> u128 {
        self.per_tick
    }

    /// Units per second.
    pub fn per_second(&self) -> u128 {
        u128::from(self.hz) * self.per_tick
    }

    /// A clock reading in units.
    pub fn from_ticks(&self, ticks: u64) -> u128 {
        u128::from(ticks) * self.per_tick
    }

    /// The first whole tick at or after `units`.
    pub fn ticks_ceil(&self, units: u128) -> u128 {
        units.div_ceil(self.per_tick)
    }

    /// The emission interval `T = period / permits` in units, rounded up, at least one unit.
    pub fn interval(&self, permits: u32, period: Duration) -> u128 {
        (period.as_nanos() * self.per_second())
            .div_ceil(u128::from(permits.max(1)) * NANOS_PER_SECOND)
            .max(1)
    }

    /// `ticks` as a duration, rounded up to the nanosecond (saturating at `u64::MAX` seconds).
    pub fn duration(&self, ticks: u128) -> Duration {
        let nanos = (ticks * NANOS_PER_SECOND).div_ceil(u128::from(self.hz));
        let secs = nanos / NANOS_PER_SECOND;
        if secs > u128::from(u64::MAX) {
            return Duration::MAX;
        }
        Duration::new(secs as u64, (nanos % NANOS_PER_SECOND) as u32)
    }

    /// Whether waiting `ticks` whole ticks stays within `max_wait`, compared exactly.
    pub fn within(&self, ticks: u128, max_wait: Duration) -> bool {
        ticks * NANOS_PER_SECOND <= max_wait.as_nanos() * u128::from(self.hz)
    }

    /// `d` in whole ticks, rounded down (how many ticks pass in `d` on this clock at least).
    pub fn ticks_floor(&self, d: Duration) -> u128 {
        d.as_nanos() * u128::from(self.hz) / NANOS_PER_SECOND
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unit_is_at_most_a_nanosecond_and_the_coarsest_such() {
        for hz in [
            1,
            3,
            1000,
            32_768,
            1_000_000,
            999_999_999,
            1_000_000_000,
            u64::MAX,
        ] {
            let u = Units::new(hz);
            assert!(u.per_second() >= NANOS_PER_SECOND, "{hz}");
            if u.per_tick() > 1 {
                assert!(u.per_second() / 2 < NANOS_PER_SECOND, "{hz}");
            }
        }
        assert_eq!(Units::new(1_000_000_000), Units::NANOS);
        assert_eq!(Units::new(0).hz(), 1);
    }

    #[test]
    fn conversions_round_as_spec_says() {
        let one_hz = Units::new(1);
        // 600 ms per permit on a 1 Hz clock: 0.6 s in units of 2^-30 s, rounded up.
        assert_eq!(
            one_hz.interval(1, Duration::from_millis(600)),
            (6u128 << 30).div_ceil(10)
        );
        assert_eq!(one_hz.duration(2), Duration::from_secs(2));
        assert!(one_hz.within(1, Duration::from_millis(1500)));
        assert!(!one_hz.within(2, Duration::from_millis(1500)));
        let rtc = Units::new(32_768);
        assert_eq!(rtc.duration(10_923), Duration::from_nanos(333_343_506));
        assert!(!rtc.within(10_923, Duration::from_nanos(333_333_334)));
        assert_eq!(
            Units::NANOS.interval(3, Duration::from_secs(1)),
            333_333_334
        );
        assert_eq!(rtc.ticks_floor(Duration::from_secs(1)), 32_768);
        // A 1 Hz clock read by a microsecond store: T = ceil(P / n) in microseconds.
        let redis = Units::with_unit(1, 1_000_000);
        assert_eq!(redis.interval(3, Duration::from_secs(1)), 333_334);
        assert_eq!(redis.duration(2), Duration::from_secs(2));
    }
}
