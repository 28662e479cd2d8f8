//! Blocking waits on bare metal: `DelayWait` over an `embedded_hal::delay::DelayNs` that moves a
//! fake clock, as a HAL delay moves real time.
#![cfg(feature = "embedded-hal")]

use core::time::Duration;

use embedded_hal::delay::DelayNs;
use ritmo_core::{Clock, Config, DelayWait, ManualClock, RateLimiter, Wait};

/// A delay that advances a fake clock by what it is asked for, optionally only by a fraction of it
/// (a delay that runs short), and records every request.
struct FakeDelay<'a, const HZ: u64> {
    clock: &'a ManualClock<HZ>,
    /// Advance by `ns * num / den`.
    num: u64,
    den: u64,
    calls: Vec<u64>,
}

impl<'a, const HZ: u64> FakeDelay<'a, HZ> {
    fn exact(clock: &'a ManualClock<HZ>) -> Self {
        FakeDelay {
            clock,
            num: 1,
            den: 1,
            calls: Vec::new(),
        }
    }
}

impl<const HZ: u64> DelayNs for FakeDelay<'_, HZ> {
    fn delay_ns(&mut self, ns: u32) {
        self.calls.push(ns.into());
        // At least a nanosecond: a delay always takes some time.
        let ns = (u64::from(ns) * self.num / self.den).max(1);
        self.clock.advance(Duration::from_nanos(ns));
    }
}

#[test]
fn waits_exactly_to_each_slot_on_a_nanosecond_clock() {
    let clock = ManualClock::new();
    let config = Config::new(4, Duration::from_secs(1))
        .unwrap()
        .with_max_wait(Duration::from_secs(1));
    let limiter = RateLimiter::new("radio", config, &clock);
    let mut wait = DelayWait::new(FakeDelay::exact(&clock));
    for i in 0..12u64 {
        limiter.acquire_with(&mut wait).unwrap();
        // The burst of 4 is free, then one permit every 250 ms.
        let expected = i.saturating_sub(3) * 250_000_000;
        assert_eq!(clock.now(), expected, "call {i}");
    }
    // Exactly one delay per waiting call, each for exactly the interval.
    let delay = wait.into_inner();
    assert_eq!(delay.calls, vec![250_000_000; 8]);
}

#[test]
fn waits_k_permits_on_a_32768_hz_clock() {
    let rtc = ManualClock::<32_768>::with_reading(0);
    let config = Config::new(64, Duration::from_secs(1))
        .unwrap()
        .with_max_wait(Duration::from_secs(1));
    let limiter = RateLimiter::new("uart", config, &rtc);
    let mut wait = DelayWait::new(FakeDelay::exact(&rtc));
    limiter.acquire_n_with(64, &mut wait).unwrap();
    assert_eq!(rtc.now(), 0);
    limiter.acquire_n_with(32, &mut wait).unwrap();
    // Half a second for 32 of 64 per second: 16384 ticks, never earlier.
    assert_eq!(rtc.now(), 16_384);
    assert!(limiter.try_acquire().is_err());
}

#[test]
fn a_delay_that_runs_short_is_repeated_until_the_slot() {
    let clock = ManualClock::new();
    let config = Config::new(1, Duration::from_secs(1))
        .unwrap()
        .with_max_wait(Duration::from_secs(1));
    let limiter = RateLimiter::new("api", config, &clock);
    let short = FakeDelay {
        clock: &clock,
        num: 1,
        den: 2,
        calls: Vec::new(),
    };
    let mut wait = DelayWait::new(short);
    limiter.acquire_with(&mut wait).unwrap();
    limiter.acquire_with(&mut wait).unwrap();
    assert!(clock.now() >= 1_000_000_000);
    let calls = wait.into_inner().calls;
    // Each round asks for what is left: 1 s, then 0.5 s, then 0.25 s, ...
    assert_eq!(&calls[..3], &[1_000_000_000, 500_000_000, 250_000_000]);
    assert!(calls.len() > 3);
}

#[test]
fn waits_longer_than_a_u32_of_nanoseconds_in_milliseconds() {
    /// Records what the default `delay_ms` passes on, and moves the clock.
    struct MsDelay<'a>(&'a ManualClock, Vec<u32>);
    impl DelayNs for MsDelay<'_> {
        fn delay_ns(&mut self, ns: u32) {
            self.0.advance(Duration::from_nanos(ns.into()));
        }
        fn delay_ms(&mut self, ms: u32) {
            self.1.push(ms);
            self.0.advance(Duration::from_millis(ms.into()));
        }
    }
    let clock = ManualClock::new();
    let mut wait = DelayWait::new(MsDelay(&clock, Vec::new()));
    let deadline = 10_000_000_001; // 10 s and 1 ns
    wait.wait_until(&clock, deadline).unwrap();
    assert_eq!(clock.now(), 10_001_000_000); // rounded up to the millisecond
    assert_eq!(wait.into_inner().1, vec![10_001]);
}

#[test]
fn returns_at_once_when_the_deadline_has_passed() {
    let clock = ManualClock::starting_at(500);
    let mut wait = DelayWait::new(FakeDelay::exact(&clock));
    wait.wait_until(&clock, 400).unwrap();
    wait.wait_until(&clock, 500).unwrap();
    assert!(wait.into_inner().calls.is_empty());
}
