//! Clocks as hardware has them: a counter whose reading is `floor(true time x Hz)`, slower than
//! 1 GHz (a 1 MHz timer, a 32768 Hz RTC, a 3 Hz tick), and simulation clocks up to `u64::MAX` Hz.
//!
//! - Every wait ritmo reports (`retry_after`, `Reservation::wait_time` and `remaining`, an
//!   interrupted call's `retry_after`) is enough: waiting exactly that long in true time, then
//!   trying again, is admitted. The permit is there at a whole tick, so the wait is rounded up to
//!   that tick, not only to the nanosecond.
//! - Nothing overflows at any tick rate (these tests run in debug builds, where an overflow
//!   panics): conversions saturate.

use core::time::Duration;
use std::sync::atomic::{AtomicU64, Ordering};

use ritmo_core::{
    AdvanceClock, Clock, Config, Interrupted, ManualTime, RateLimiter, TickRate, Wait,
};

/// A counter at `hz` whose reading is `floor(true time x hz)`; true time is kept in picoseconds
/// (so that a whole tick of a fast clock is not lost), moved by the test.
struct Counter {
    hz: u64,
    true_ps: AtomicU64,
}

impl Counter {
    fn new(hz: u64, start_ps: u64) -> Self {
        Counter {
            hz,
            true_ps: AtomicU64::new(start_ps),
        }
    }

    /// Lets `d` pass in true time.
    fn wait(&self, d: Duration) {
        let ps = u64::try_from(d.as_nanos() * 1000).unwrap();
        self.true_ps.fetch_add(ps, Ordering::SeqCst);
    }
}

impl Clock for Counter {
    fn now(&self) -> u64 {
        let ps = self.true_ps.load(Ordering::SeqCst) as u128;
        u64::try_from(ps * self.hz as u128 / 1_000_000_000_000).unwrap_or(u64::MAX)
    }

    fn tick_rate(&self) -> TickRate {
        TickRate::from_hz(self.hz)
    }
}

const RATES: [u64; 3] = [1_000_000, 32_768, 3];

/// Start instants that land on a tick, just after one, and just before the next.
fn starts(hz: u64) -> [u64; 4] {
    let tick_ps = 1_000_000_000_000 / hz;
    [0, 1, tick_ps / 2, tick_ps.saturating_sub(1)]
}

/// Configs whose emission interval is not a whole number of ticks on these clocks.
fn configs() -> [Config; 4] {
    [
        Config::new(3, Duration::from_secs(1)).unwrap(),
        Config::new(7, Duration::from_millis(100)).unwrap(),
        Config::new(1000, Duration::from_secs(1)).unwrap(),
        Config::new(2, Duration::from_secs(5)).unwrap(),
    ]
}

#[test]
fn waiting_exactly_retry_after_is_enough_on_a_counter_clock() {
    for hz in RATES {
        for start in starts(hz) {
            for config in configs() {
                let clock = Counter::new(hz, start);
                let limiter = RateLimiter::with_clock("c", config, &clock);
                while limiter.try_acquire().is_ok() {} // spend the burst
                for round in 0..5 {
                    let err = limiter.try_acquire().unwrap_err();
                    let wait = err.retry_after();
                    assert_eq!(limiter.retry_after(), wait, "peek and rejection agree");
                    assert!(!wait.is_zero());
                    clock.wait(wait);
                    assert!(
                        limiter.try_acquire().is_ok(),
                        "{hz} Hz, start {start} ps, {config:?}, round {round}: waited {wait:?}"
                    );
                    // A whole tick of a slow clock may bring more than one permit.
                    while limiter.try_acquire().is_ok() {}
                }
            }
        }
    }
}

#[test]
fn waiting_exactly_a_reservations_wait_is_enough_on_a_counter_clock() {
    for hz in RATES {
        for start in starts(hz) {
            for config in configs() {
                let clock = Counter::new(hz, start);
                let config = config.with_max_wait(Duration::from_secs(3600));
                let limiter = RateLimiter::with_clock("c", config, &clock);
                while limiter.try_acquire().is_ok() {}
                let reservation = limiter.reserve().unwrap();
                let wait = reservation.wait_time();
                assert_eq!(reservation.remaining(), wait);
                clock.wait(wait);
                assert!(
                    reservation.is_ready(),
                    "{hz} Hz, start {start} ps, {config:?}: waited {wait:?}"
                );
                assert_eq!(reservation.remaining(), Duration::ZERO);
                reservation.commit();

                // `remaining` part-way: waiting what it says is enough too.
                let reservation = limiter.reserve().unwrap();
                clock.wait(reservation.wait_time() / 3);
                clock.wait(reservation.remaining());
                assert!(
                    reservation.is_ready(),
                    "{hz} Hz, start {start} ps, {config:?}"
                );
                reservation.commit();
            }
        }
    }
}

/// Waits until half-way to the slot, then is interrupted.
struct HalfWayThenInterrupted<'a>(&'a Counter);

impl Wait<&Counter> for HalfWayThenInterrupted<'_> {
    fn wait_until(&mut self, clock: &&Counter, deadline: u64) -> Result<(), Interrupted> {
        let left = deadline.saturating_sub(clock.now());
        self.0.wait(clock.tick_rate().duration_ceil(left / 2));
        Err(Interrupted)
    }
}

#[test]
fn an_interrupted_calls_retry_after_is_enough_on_a_counter_clock() {
    for hz in RATES {
        for start in starts(hz) {
            for config in configs() {
                let clock = Counter::new(hz, start);
                let config = config.with_max_wait(Duration::from_secs(3600));
                let limiter = RateLimiter::with_clock("c", config, &clock);
                while limiter.try_acquire().is_ok() {}
                let Err(err) = limiter.acquire_with(&mut HalfWayThenInterrupted(&clock)) else {
                    continue; // the slot came within the first half: nothing to check
                };
                clock.wait(err.retry_after());
                assert!(
                    limiter.try_acquire().is_ok(),
                    "{hz} Hz, start {start} ps, {config:?}: waited {:?}",
                    err.retry_after()
                );
            }
        }
    }
}

/// A simulation clock at `HZ` ticks per second that a test moves by hand.
struct Sim<const HZ: u64>(AtomicU64);

impl<const HZ: u64> Clock for Sim<HZ> {
    fn now(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
    fn tick_rate(&self) -> TickRate {
        TickRate::from_hz(HZ)
    }
}

impl<const HZ: u64> ManualTime for Sim<HZ> {
    fn advance_to(&self, ticks: u64) {
        self.0.fetch_max(ticks, Ordering::SeqCst);
    }
}

fn exercise<const HZ: u64>(start: u64) {
    let configs = [
        Config::new(1, Duration::MAX).unwrap(),
        Config::new(u32::MAX, Duration::MAX).unwrap(),
        Config::new(10, Duration::from_secs(1))
            .unwrap()
            .with_max_wait(Duration::MAX),
        Config::new(1_000_000_000, Duration::from_secs(1)).unwrap(),
        Config::new(3, Duration::from_nanos(3))
            .unwrap()
            .with_max_wait(Duration::from_secs(u64::MAX / 2)),
    ];
    for config in configs {
        let clock = Sim::<HZ>(AtomicU64::new(start));
        let limiter = RateLimiter::with_clock("sim", config, &clock);
        for _ in 0..3 {
            let _ = limiter.try_acquire();
            let _ = limiter.try_acquire_n(config.permits());
            let _ = limiter.retry_after();
            let _ = limiter.retry_after_n(config.permits());
            let _ = limiter.available_permits();
            if let Ok(r) = limiter.reserve_n_within(1, Duration::MAX) {
                let _ = (r.wait_time(), r.remaining(), r.slot(), r.is_ready());
                let _ = r.wait_with(&mut AdvanceClock);
            }
            if let Ok(r) = limiter.reserve() {
                r.cancel();
            }
            if let Err(e) = limiter.try_acquire() {
                let _ = e.retry_after();
                let _ = e.to_string();
            }
            let _ = limiter.snapshot();
        }
    }
    let rate = TickRate::from_hz(HZ);
    let _ = rate.ticks_ceil(Duration::MAX);
    let _ = rate.ticks_ceil(Duration::from_nanos(1));
    let _ = rate.duration_ceil(u64::MAX);
}

#[test]
fn no_arithmetic_overflows_at_any_tick_rate() {
    for start in [0, 1, u64::MAX / 2, u64::MAX - 1, u64::MAX] {
        exercise::<{ u64::MAX }>(start);
        exercise::<{ u64::MAX / 2 + 1 }>(start);
        exercise::<1_000_000_000_000>(start); // a picosecond simulation clock
        exercise::<18_446_744_073>(start); // ~18 GHz
        exercise::<1_000_000_000>(start);
        exercise::<32_768>(start);
        exercise::<1>(start);
    }
}

#[test]
fn conversions_saturate_instead_of_overflowing() {
    let fastest = TickRate::from_hz(u64::MAX);
    assert_eq!(fastest.ticks_ceil(Duration::MAX), u64::MAX);
    assert_eq!(fastest.ticks_ceil(Duration::from_secs(1)), u64::MAX);
    assert_eq!(fastest.ticks_ceil(Duration::from_nanos(1)), 18_446_744_074);
    // A picosecond clock: a call may wait "forever" (`Duration::MAX`) and still gets its slot.
    let clock = Sim::<1_000_000_000_000>(AtomicU64::new(0));
    let config = Config::new(1, Duration::from_secs(1)).unwrap();
    let limiter = RateLimiter::with_clock("ps", config, &clock);
    limiter.try_acquire().unwrap();
    let r = limiter.reserve_n_within(1, Duration::MAX).unwrap();
    assert_eq!(r.wait_time(), Duration::from_secs(1));
    assert_eq!(r.slot(), 1_000_000_000_000);
    r.commit();
}
