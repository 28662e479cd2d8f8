//! The unit conversion: a [`Config`] turned into the limiter's time unit once, when the limiter is
//! built, so that the hot path never multiplies or divides.

use core::time::Duration;

use crate::clock::TickRate;
use crate::config::Config;
#[cfg(feature = "reconfigure")]
use crate::sync::U64Cell;

/// A config converted into the limiter's time unit: everything a call needs, and nothing else
/// (the limiter keeps no copy of its [`Config`]; [`config`](Rate::config) rebuilds one).
///
/// The unit is the clock's tick, or a fixed-point fraction of it on clocks slower than 1 GHz: a
/// reading is shifted left by `shift` bits so that one unit is at most a nanosecond. On a 32768 Hz
/// clock, rounding the emission interval up to whole ticks would cost up to 30 µs per permit
/// (3% at 1000 permits per second); in units of 1/32768 of a tick it costs under a nanosecond.
/// Shifting is the only operation the hot path applies to a reading: no multiply, no divide.
///
/// Disabled has one encoding: `limit == 0`. Every path asks [`enabled`](Rate::enabled).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rate {
    /// Emission interval `T`, rounded up: the units one permit adds to the state.
    pub(crate) interval: u64,
    /// `window - interval + 1`, where `window = n * T` (saturating): a single permit is admitted
    /// if the state is less than `limit` units ahead of now. 0 on a disabled limiter, so that the
    /// hot path never admits there and the slow path lets the call through without counting it.
    pub(crate) limit: u64,
    /// `max_wait` in units: the whole ticks it holds, rounded down (see
    /// [`wait_bound`](Rate::wait_bound)).
    pub(crate) max_wait: u64,
    /// Units per second (`hz << shift`).
    pub(crate) unit_hz: u64,
    /// Permits per period (`n`).
    pub(crate) permits: u32,
    /// Readings are shifted left by this many bits into units.
    pub(crate) shift: u8,
    /// Enabled and without a listener: a refusal only returns its wait. One flag, so that the
    /// refused path tests one byte instead of two things. (Kept here rather than beside the
    /// listener so that it shares this struct's padding: a limiter on a 32-bit microcontroller
    /// then fits 64 bytes.) Installing a listener clears it. With the feature `reconfigure` a
    /// reconfigure clears it too, so it is an atomic flag on the limiter instead.
    #[cfg(not(feature = "reconfigure"))]
    pub(crate) plain_reject: bool,
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
        // Saturating: a period near `Duration::MAX` on a clock near `u64::MAX` Hz overflows
        // even `u128`, and anything that large is `u64::MAX` units after the division anyway.
        let interval = config
            .period()
            .as_nanos()
            .saturating_mul(unit_hz)
            .div_ceil(per_second * n);
        let interval = saturate(if interval == 0 { 1 } else { interval });
        // `window >= interval >= 1`, so `limit >= 1` on an enabled limiter.
        let window = saturate(interval as u128 * n);
        let max_wait = Self::wait_bound(config.max_wait(), hz, shift as u32);
        Rate {
            interval,
            limit: if config.enabled() {
                window - interval + 1
            } else {
                0
            },
            max_wait,
            unit_hz: saturate(unit_hz),
            permits: config.permits(),
            shift: shift as u8,
            #[cfg(not(feature = "reconfigure"))]
            plain_reject: config.enabled(),
        }
    }

    /// A rate with `base`'s clock units and the numbers given: what a reconfigured kind reads back
    /// from the numbers it published.
    #[cfg(feature = "reconfigure")]
    pub(crate) const fn with_numbers(
        base: &Rate,
        interval: u64,
        max_wait: u64,
        permits: u32,
        enabled: bool,
    ) -> Rate {
        let window = Rate::increment_of(interval, permits);
        Rate {
            interval,
            limit: if enabled { window - interval + 1 } else { 0 },
            max_wait,
            unit_hz: base.unit_hz,
            permits,
            shift: base.shift,
        }
    }

    /// Whether the limiter limits at all.
    #[inline(always)]
    pub(crate) const fn enabled(&self) -> bool {
        self.limit != 0
    }

    /// `n * T` (saturating), the state's greatest lead over now. Only meaningful when enabled.
    #[inline(always)]
    pub(crate) const fn window(&self) -> u64 {
        self.limit.wrapping_add(self.interval).wrapping_sub(1)
    }

    /// A clock reading in units (saturating).
    ///
    /// Written with 32-bit halves and constant 64-bit shifts only: on a Cortex-M0 a 64-bit shift
    /// by a variable amount is a library call (two of them, over 100 bytes of flash), while
    /// 32-bit shifts are single instructions. `shift` is at most 30.
    #[inline(always)]
    pub(crate) const fn units(&self, reading: u64) -> u64 {
        let shift = self.shift as u32;
        if shift == 0 {
            return reading;
        }
        let (hi, lo) = ((reading >> 32) as u32, reading as u32);
        if hi >> (32 - shift) != 0 {
            return u64::MAX; // the reading's top `shift` bits would be lost
        }
        let hi = (hi << shift) | (lo >> (32 - shift));
        ((hi as u64) << 32) | (lo << shift) as u64
    }

    /// [`units`](Self::units), never inlined: not generic, so its callers in other crates call
    /// it by its symbol and pass the rate by reference (a private function's fields would be
    /// loaded at the call site and passed by value, its test on the straight path then a load
    /// and a test instead of one compare).
    #[cfg(target_has_atomic = "64")]
    #[cold]
    #[inline(never)]
    pub(crate) fn units_cold(&self, reading: u64) -> u64 {
        self.units(reading)
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
    #[inline(always)]
    pub(crate) const fn increment(&self, k: u32) -> u64 {
        Self::increment_of(self.interval, k)
    }

    /// `k * interval`, saturating.
    #[inline(always)]
    pub(crate) const fn increment_of(interval: u64, k: u32) -> u64 {
        saturate(interval as u128 * k as u128)
    }

    /// A bound on a wait (`max_wait`) in units: the whole clock ticks `d` holds, rounded down
    /// (saturating). A call waits from a clock reading to the first reading at or after its slot,
    /// that is its wait in units rounded up to a whole tick; that is at most `d` exactly when the
    /// wait in units is at most this bound. (Rounding `d` to units alone would admit a wait whose
    /// whole ticks exceed `d` on a clock slower than 1 GHz.)
    pub(crate) const fn units_floor(&self, d: Duration) -> u64 {
        Self::wait_bound(d, (self.unit_hz >> self.shift) as u128, self.shift as u32)
    }

    /// [`units_floor`](Self::units_floor) for a clock of `hz` ticks per second whose readings
    /// are shifted by `shift` bits into units.
    const fn wait_bound(d: Duration, hz: u128, shift: u32) -> u64 {
        let ticks = saturate(d.as_nanos().saturating_mul(hz) / 1_000_000_000);
        if shift > 0 && ticks >> (64 - shift) != 0 {
            u64::MAX
        } else {
            ticks << shift
        }
    }

    /// A wait of `units` from a clock reading, as the duration after which the clock reads at
    /// least that far: rounded up to a whole tick, then to the nanosecond.
    pub(crate) const fn wait_duration(&self, units: u64) -> Duration {
        wait_duration(units, self.unit_hz, self.shift as u32)
    }

    /// The config this rate applies: `permits` and `enabled` as given, `period` and `max_wait`
    /// as the limiter's unit expresses them (`n * T` rounded up, `max_wait` rounded down, each
    /// back to the nanosecond). On a clock of 1 GHz or more they are the ones given whenever the
    /// period is a whole number of nanoseconds per permit.
    #[cfg_attr(feature = "reconfigure", allow(dead_code))] // a reconfigurable limiter keeps its config
    pub(crate) const fn config(&self) -> Config {
        let window = saturate(self.interval as u128 * self.permits as u128);
        let per_unit = TickRate::from_hz(self.unit_hz);
        let max_wait = per_unit.duration_ceil(self.max_wait);
        Config::from_parts(
            self.permits,
            per_unit.duration_ceil(window),
            max_wait,
            self.enabled(),
        )
    }
}

/// A rate's numbers as a reconfigure publishes them (feature `reconfigure`), for readers that
/// take them under the kind's sequence lock: a single limiter's, each band's, and what a keyed
/// limiter's rules or tiers publish the same way. Its clock units are the kind's own, which a
/// reconfigure never changes.
#[cfg(feature = "reconfigure")]
#[derive(Debug)]
pub(crate) struct RateCells {
    interval: U64Cell,
    max_wait: U64Cell,
    /// `permits` in the low 32 bits, `enabled` in bit 32.
    permits: U64Cell,
}

#[cfg(feature = "reconfigure")]
impl RateCells {
    const_fn! {
    pub(crate) fn new() -> Self {
        RateCells {
            interval: U64Cell::new(0),
            max_wait: U64Cell::new(0),
            permits: U64Cell::new(0),
        }
    }
    }

    /// Publishes `rate`'s numbers (while the sequence lock says a change is being written).
    pub(crate) fn store(&self, rate: &Rate) {
        self.interval.store(rate.interval);
        self.max_wait.store(rate.max_wait);
        let packed = u64::from(rate.permits) | (u64::from(rate.enabled()) << 32);
        self.permits.store(packed);
    }

    /// The numbers published, in `base`'s clock units.
    pub(crate) fn load(&self, base: &Rate) -> Rate {
        let packed = self.permits.load();
        let (interval, max_wait) = (self.interval.load(), self.max_wait.load());
        Rate::with_numbers(base, interval, max_wait, packed as u32, packed >> 32 != 0)
    }
}

/// A state `tat` carried over a change of config at `now` (units), from a limiter applying
/// `old` to one applying `new`: `gcra::reconfigure` for a state still being limited. **Idle is
/// new**: a state whose burst is full under `old` (`tat <= now`) carries nothing a
/// fresh one lacks, and a disabled limiter counted nothing (it admitted everything), so either
/// starts afresh under `new`, with its full burst, exactly as a key a store dropped or never saw.
/// A state disabled by the change is left fresh too: nothing reads it while disabled, enabling it
/// starts it afresh anyway, and so a disabled keyed limiter holds no live key (every key may be
/// dropped). The one conversion every kind's `reconfigure` applies, and the one a key of a tiered
/// keyed limiter goes through when it changes tier.
pub(crate) const fn carry_over(tat: u64, now: u64, old: &Rate, new: &Rate) -> u64 {
    if !old.enabled() || !new.enabled() || tat <= now {
        // A fresh state: any `tat <= now` decides alike; an idle one is kept as it is.
        return if tat < now { tat } else { now };
    }
    crate::gcra::reconfigure(
        tat,
        now,
        old.interval,
        Rate::increment_of(old.interval, old.permits),
        old.permits,
        new.interval,
        Rate::increment_of(new.interval, new.permits),
        new.permits,
    )
}

const fn saturate(x: u128) -> u64 {
    if x > u64::MAX as u128 {
        u64::MAX
    } else {
        x as u64
    }
}

/// `wait` units (`unit_hz` per second, `2^shift` per clock tick) as a duration: rounded up to a
/// whole tick, then to the nanosecond. A waiter that starts at a reading (always a whole tick)
/// and waits this long finds the clock at or past the instant `wait` units later.
pub(crate) const fn wait_duration(wait: u64, unit_hz: u64, shift: u32) -> Duration {
    let mask = (1u64 << shift) - 1;
    let ticks = (wait >> shift) + if wait & mask != 0 { 1 } else { 0 };
    TickRate::from_hz(unit_hz >> shift).duration_ceil(ticks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_shift_and_saturate_like_the_plain_arithmetic() {
        let config = Config::new(1, Duration::from_secs(1)).unwrap();
        let readings = [
            0,
            1,
            u32::MAX as u64,
            u32::MAX as u64 + 1,
            0x0000_0001_8000_0001,
            0x0003_ffff_ffff_ffff,
            u64::MAX >> 30,
            (u64::MAX >> 30) + 1,
            u64::MAX >> 1,
            u64::MAX,
        ];
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
            let rate = Rate::new(&config, TickRate::from_hz(hz));
            assert!(rate.shift <= 30);
            for reading in readings.into_iter().chain((0..64).map(|b| 1u64 << b)) {
                let expected = (reading as u128) << rate.shift;
                let expected = if expected > u64::MAX as u128 {
                    u64::MAX
                } else {
                    expected as u64
                };
                assert_eq!(
                    rate.units(reading),
                    expected,
                    "{hz} Hz, reading {reading:#x}"
                );
            }
        }
    }
}
