//! Hostile values: clocks that step backwards, clocks near `u64::MAX`, T = 1 ns, one permit per
//! 10^19 ns, `permits = u32::MAX`, coarse clocks. No panic, no overflow, never over the bound.

use core::time::Duration;

use proptest::prelude::*;
use ritmo_core::{Clock, Config, ManualClock, RateLimiter};

mod support;
use support::{bound_holds, config};

#[test]
fn a_clock_stepping_backwards_is_treated_as_no_time_passed() {
    let clock = ManualClock::starting_at(10_000_000_000);
    let cfg = config(10, Duration::from_secs(1)).with_max_wait(Duration::from_secs(1));
    let l = RateLimiter::new("x", cfg, &clock);
    l.try_acquire_n(10).unwrap();
    clock.set(1_000); // far back
    assert!(l.try_acquire().is_err());
    assert_eq!(l.available_permits(), 0);
    // Seen from the stepped-back clock, the next slot (10.1 s) is 10.1 s - 1 us away.
    assert!(l.reserve().is_err());
    let err = l.try_acquire().unwrap_err();
    assert_eq!(
        err.retry_after(),
        Duration::from_nanos(10_100_000_000 - 1_000)
    );
    // Back at the true time, exactly one permit has arrived (100 ms after the burst).
    clock.set(10_000_000_000 + 100_000_000);
    assert!(l.try_acquire().is_ok());
    assert!(l.try_acquire().is_err());
}

#[test]
fn near_the_end_of_the_clock_nothing_overflows_and_the_bound_holds() {
    let t = 100_000_000u64; // 10 per second
    for start in [u64::MAX - 25 * t, u64::MAX - 1, u64::MAX] {
        let clock = ManualClock::starting_at(start);
        let cfg = config(10, Duration::from_secs(1)).with_max_wait(Duration::from_secs(60));
        let l = RateLimiter::new("end", cfg, &clock);
        let mut admitted = 0u64;
        for _ in 0..200 {
            while l.try_acquire().is_ok() {
                admitted += 1;
            }
            if let Ok(r) = l.reserve() {
                r.commit();
                admitted += 1;
            }
            let _ = l.available_permits();
            let _ = l.retry_after();
            let _ = l.try_acquire_n(10);
            clock.advance(Duration::from_millis(50));
        }
        let elapsed = clock.now() - start;
        // Reservations may sit up to max_wait beyond the clock: count them against the window
        // that ends at their slots.
        let bound = 10 + (elapsed + 60_000_000_000) / t;
        assert!(admitted <= bound, "start {start}: {admitted} > {bound}");
        assert_eq!(clock.now(), start.saturating_add(200 * 50_000_000));
    }
}

#[test]
fn one_nanosecond_per_permit() {
    let clock = ManualClock::new();
    let l = RateLimiter::new(
        "fast",
        config(1_000_000_000, Duration::from_secs(1)),
        &clock,
    );
    l.try_acquire_n(1_000_000_000).unwrap();
    assert!(l.try_acquire().is_err());
    assert_eq!(
        l.try_acquire().unwrap_err().retry_after(),
        Duration::from_nanos(1)
    );
    clock.advance_ticks(1);
    l.try_acquire().unwrap();
    assert!(l.try_acquire().is_err());
    clock.advance_ticks(1000);
    l.try_acquire_n(1000).unwrap();
    assert!(l.try_acquire().is_err());
}

#[test]
fn one_permit_per_ten_to_the_nineteen_nanoseconds() {
    let period = Duration::from_nanos(10_000_000_000_000_000_000);
    let clock = ManualClock::new();
    let l = RateLimiter::new("slow", config(1, period), &clock);
    l.try_acquire().unwrap();
    let err = l.try_acquire().unwrap_err();
    assert_eq!(err.retry_after(), period);
    clock.advance(period - Duration::from_nanos(1));
    assert!(l.try_acquire().is_err());
    clock.advance_ticks(1);
    assert!(l.try_acquire().is_ok());
    // The next one would arrive after the end of the clock's range: refused, never wrapped.
    clock.set(u64::MAX);
    assert!(l.try_acquire().is_err());
    assert_eq!(l.available_permits(), 0);
}

#[test]
fn u32_max_permits() {
    let clock = ManualClock::new();
    let l = RateLimiter::new("many", config(u32::MAX, Duration::from_secs(3600)), &clock);
    assert_eq!(l.available_permits(), u32::MAX);
    l.try_acquire_n(u32::MAX).unwrap();
    assert_eq!(l.available_permits(), 0);
    assert!(l.try_acquire().is_err());
    // T is rounded up (839 ns, not 838.19), so the whole burst is back after u32::MAX * T.
    let t = Config::new(u32::MAX, Duration::from_secs(3600))
        .unwrap()
        .emission_interval();
    clock.advance(t * u32::MAX - Duration::from_nanos(1));
    assert_eq!(l.available_permits(), u32::MAX - 1);
    clock.advance_ticks(1);
    assert_eq!(l.available_permits(), u32::MAX);
    // Waiting with the largest batch at the end of the clock: no overflow.
    clock.set(u64::MAX - 5);
    let _ = l.try_acquire_n(u32::MAX);
    let _ = l.reserve_n_within(u32::MAX, Duration::MAX);
    let _ = l.retry_after_n(u32::MAX);
}

#[test]
fn the_largest_durations_convert_without_overflow() {
    let cfg = config(1, Duration::MAX).with_max_wait(Duration::MAX);
    let clock = ManualClock::starting_at(u64::MAX / 2);
    let l = RateLimiter::new("max", cfg, &clock);
    l.try_acquire().unwrap();
    let err = l.try_acquire().unwrap_err();
    assert!(err.retry_after() >= Duration::from_nanos(u64::MAX / 2));
    let _ = l.reserve();
    let coarse = ManualClock::<1>::with_reading(u64::MAX);
    let l = RateLimiter::new("coarse", cfg, &coarse);
    let _ = l.try_acquire();
    let _ = l.try_acquire();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// A clock that jumps backwards and forwards by any amount: no panic, and the permits taken
    /// never beat the bound measured on the furthest time the clock has shown.
    #[test]
    fn erratic_clocks_never_beat_the_bound(
        n in 1u32..8,
        period in 1_000u64..1_000_000,
        steps in prop::collection::vec((any::<bool>(), 0u64..3_000_000, 1u32..8), 1..150),
    ) {
        let clock = ManualClock::new();
        let l = RateLimiter::new("erratic", config(n, Duration::from_nanos(period)), &clock);
        let mut furthest = 0u64;
        let mut uses = Vec::new();
        for (back, d, k) in steps {
            if back {
                clock.set(clock.now().saturating_sub(d));
            } else {
                clock.advance_ticks(d);
            }
            furthest = furthest.max(clock.now());
            if l.try_acquire_n(k.min(n)).is_ok() {
                uses.push((furthest as u128, k.min(n) as u128));
            }
        }
        bound_holds(&uses, n as u128, period as u128)?;
    }

    /// On clocks slower than 1 GHz the limiter keeps a fraction of a tick: never faster than the
    /// configured rate, in exact rational arithmetic.
    #[test]
    fn coarse_clocks_never_beat_the_configured_rate(
        n in 1u32..50,
        period_ms in 1u64..2_000,
        steps in prop::collection::vec((0u64..40, 1u32..50), 1..200),
    ) {
        let clock = ManualClock::<32_768>::with_reading(0);
        let period_ns = period_ms as u128 * 1_000_000;
        let l = RateLimiter::new("rtc", config(n, Duration::from_millis(period_ms)), &clock);
        let mut uses = Vec::new();
        for (d, k) in steps {
            clock.advance_ticks(d);
            let k = k.min(n);
            if l.try_acquire_n(k).is_ok() {
                // ticks to ns, scaled by 32768 to stay exact: compare against period * 32768
                uses.push((clock.now() as u128 * 1_000_000_000, k as u128));
            }
        }
        bound_holds(&uses, n as u128, period_ns * 32_768)?;
    }
}
