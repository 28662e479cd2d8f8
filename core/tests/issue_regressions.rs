//! The defects found by the SPEC-only reference model in 0.2, each as the exact scenario that
//! showed it (the model-based property tests cover the same rules over random schedules).

use core::time::Duration;
use ritmo_core::{Bands, Config, ManualClock, RateLimiter};

/// A call never waits longer than `max_wait` on the clock as it ticks: at 1 Hz, 1 per 600 ms
/// and `max_wait` 1.5 s, the second reservation would wait 2 whole ticks (2 s) and is refused.
#[test]
fn max_wait_holds_in_whole_ticks_at_1_hz() {
    let clock = ManualClock::<1>::with_reading(0);
    let config = Config::new(1, Duration::from_millis(600))
        .unwrap()
        .with_max_wait(Duration::from_millis(1500));
    let l = RateLimiter::new("slow", config, &clock);
    l.try_acquire().unwrap();
    let first = l.reserve().unwrap();
    assert_eq!(first.wait_time(), Duration::from_secs(1));
    let second = l.reserve();
    assert!(
        second.is_err(),
        "admitted with wait {:?}",
        second.map(|r| r.wait_time())
    );
    first.commit();
}

/// At 32768 Hz, 3 per 1 s and `max_wait` 333 333 334 ns: the wait is 10923 ticks
/// (333.343506 ms), longer than `max_wait`, so the reservation is refused.
#[test]
fn max_wait_holds_in_whole_ticks_at_32768_hz() {
    let clock = ManualClock::<32_768>::with_reading(0);
    let config = Config::new(3, Duration::from_secs(1))
        .unwrap()
        .with_max_wait(Duration::from_nanos(333_333_334));
    let l = RateLimiter::new("rtc", config, &clock);
    l.try_acquire_n(3).unwrap();
    let r = l.reserve();
    assert!(
        r.is_err(),
        "admitted with wait {:?}",
        r.map(|r| r.wait_time())
    );
    // With max_wait one tick longer it waits exactly those whole ticks.
    let config = config.with_max_wait(Duration::from_nanos(333_343_506));
    let l = RateLimiter::new("rtc", config, &clock);
    l.try_acquire_n(3).unwrap();
    assert_eq!(
        l.reserve().unwrap().wait_time(),
        Duration::from_nanos(333_343_506)
    );
}

/// Cancelling a bands reservation that had to wait puts every band back exactly as it was.
#[test]
fn cancelled_bands_reservation_restores_every_band() {
    let clock = ManualClock::new();
    let bands = Bands::new(
        "two",
        [
            Config::new(2, Duration::from_secs(1)).unwrap(),
            Config::new(3, Duration::from_secs(10)).unwrap(),
        ],
        &clock,
    )
    .with_max_wait(Duration::from_secs(5));
    bands.try_acquire_n(2).unwrap();
    clock.advance(Duration::from_secs(1));
    assert_eq!(bands.available_permits_per_band(), [2, 1]);
    let before = bands.retry_after();
    let r = bands.reserve_n(2).unwrap();
    assert!(r.wait_time() > Duration::from_secs(2));
    assert!(r.cancel());
    assert_eq!(bands.available_permits_per_band(), [2, 1]);
    assert_eq!(bands.retry_after(), before);
    bands.try_acquire().unwrap();
}

/// A reconfigure that leaves the state as it was costs nothing, however many times it runs.
#[cfg(feature = "reconfigure")]
#[test]
fn unchanged_state_survives_every_reconfigure() {
    let clock = ManualClock::new();
    let base = Config::new(10, Duration::from_secs(1)).unwrap();
    let l = RateLimiter::new("api", base, &clock);
    l.try_acquire_n(4).unwrap();
    for ms in [100, 200, 300, 400] {
        l.reconfigure(base.with_max_wait(Duration::from_millis(ms)));
        assert_eq!(l.available_permits(), 6, "after max_wait {ms} ms");
    }
    // With permits owed, a change of max_wait delays nobody.
    l.try_acquire_n(6).unwrap();
    let r = l.reserve().unwrap();
    let slot = r.slot();
    r.commit();
    for ms in [500, 600, 700] {
        l.reconfigure(base.with_max_wait(Duration::from_millis(ms)));
        let next = l.reserve().unwrap();
        assert_eq!(next.slot(), slot + 100_000_000, "after max_wait {ms} ms");
        assert!(next.cancel());
    }
}
