//! The std waits on hostile clocks: a clock that sticks, one that steps back by a huge amount
//! while a caller waits, readings at the end of the range, a 1 Hz clock whose gaps are centuries
//! long. No panic; a wait that can no longer end by itself still ends when interrupted (or its
//! future dropped), and gives its permit back.

use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use ritmo_core::{Clock, Config, ManualClock, RateLimiter, Reason};
use ritmo_std::{Interrupt, ParkWait};

fn config(permits: u32, period: Duration, max_wait: Duration) -> Config {
    Config::new(permits, period)
        .unwrap()
        .with_max_wait(max_wait)
}

/// Runs `wait` on a thread of its own, interrupts it once the limiter shows its reservation, and
/// returns what the wait returned.
fn interrupt_when_reserved(
    limiter: &RateLimiter<&ManualClock>,
    clock: &ManualClock,
    reserved: impl Fn() -> bool,
    after_reserving: impl FnOnce(&ManualClock),
) -> Result<(), ritmo_core::RateLimitExceeded> {
    thread::scope(|s| {
        let (tx, rx) = mpsc::channel();
        let waiter = s.spawn(move || {
            let token = Interrupt::new();
            tx.send(token.clone()).unwrap();
            limiter.acquire_with(&mut ParkWait::with_interrupt(&token))
        });
        let token = rx.recv().unwrap();
        while !reserved() {
            thread::yield_now();
        }
        after_reserving(clock);
        token.interrupt();
        waiter.join().unwrap()
    })
}

#[test]
fn a_stuck_clock_waits_until_interrupted_and_gives_the_permit_back() {
    let clock = ManualClock::starting_at(1_000);
    let l = RateLimiter::new(
        "stuck",
        config(1, Duration::from_secs(1), Duration::from_secs(10)),
        &clock,
    );
    l.try_acquire().unwrap();
    let result = interrupt_when_reserved(
        &l,
        &clock,
        || l.retry_after() > Duration::from_secs(1),
        |_| {},
    );
    assert_eq!(result.unwrap_err().reason(), Reason::Interrupted);
    // It was the last reservation: its permit went back, the next one is 1 s away again.
    assert_eq!(l.retry_after(), Duration::from_secs(1));
    assert_eq!(clock.now(), 1_000);
}

#[test]
fn a_clock_stepping_far_back_mid_wait_delays_the_permit_until_interrupted() {
    let start = u64::MAX / 2;
    let clock = ManualClock::starting_at(start);
    let l = RateLimiter::new(
        "back",
        config(1, Duration::from_millis(1), Duration::from_millis(5)),
        &clock,
    );
    l.try_acquire().unwrap();
    let result = interrupt_when_reserved(
        &l,
        &clock,
        || l.retry_after() > Duration::from_millis(1),
        // Back by ~290 years: the slot is now that far away, and the waiter parks for it.
        |clock| clock.set(start - u64::MAX / 2),
    );
    assert_eq!(result.unwrap_err().reason(), Reason::Interrupted);
    // Back at the true time, the permit arrives on schedule: nothing was lost or doubled.
    clock.set(start + 1_000_000);
    assert!(l.try_acquire().is_ok());
    assert!(l.try_acquire().is_err());
}

#[test]
fn blocking_waits_at_the_end_of_the_clock_refuse_rather_than_wrap() {
    use ritmo_std::BlockingExt as _;
    let clock = ManualClock::starting_at(u64::MAX - 10);
    let l = RateLimiter::new(
        "end",
        config(1, Duration::from_secs(1), Duration::MAX),
        &clock,
    );
    l.try_acquire().unwrap();
    // The next permit would arrive past u64::MAX: refused at once, never waited for.
    let err = ritmo_std::BlockingExt::acquire(&l).unwrap_err();
    assert_eq!(err.reason(), Reason::NoPermitInTime);
    assert!(l.call(|| ()).is_err());
}

#[cfg(feature = "tokio")]
mod tokio_waits {
    use super::*;
    use ritmo_std::tokio::AsyncExt;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap()
    }

    /// A future waiting on a 1 Hz clock that then steps back by 2^33 ticks (272 years): once its
    /// first sleep ends it sleeps for that long without overflowing anything, and dropping it
    /// gives the permit back.
    #[test]
    fn async_waits_on_a_coarse_clock_stepping_back_are_dropped_cleanly() {
        let clock = ManualClock::<1>::with_reading(1 << 33);
        let l = RateLimiter::new(
            "coarse",
            config(1, Duration::from_secs(1), Duration::from_secs(10)),
            &clock,
        );
        l.try_acquire().unwrap();
        runtime().block_on(async {
            let mut wait = std::pin::pin!(l.acquire_async());
            // First poll: it reserves the slot 1 s away and sleeps.
            let early = tokio::time::timeout(Duration::from_millis(5), wait.as_mut()).await;
            assert!(early.is_err());
            clock.set(0);
            // After its 1 s sleep it reads the clock again: 2^33 s to go.
            let late = tokio::time::timeout(Duration::from_millis(1_500), wait.as_mut()).await;
            assert!(late.is_err());
        });
        // The dropped reservation was the last one: its permit went back.
        clock.set(1 << 33);
        assert_eq!(l.retry_after(), Duration::from_secs(1));
    }

    #[test]
    fn async_waits_at_the_end_of_the_clock_refuse_rather_than_wrap() {
        let clock = ManualClock::starting_at(u64::MAX - 1);
        let l = RateLimiter::new(
            "end",
            config(1, Duration::from_secs(1), Duration::MAX),
            &clock,
        );
        runtime().block_on(async {
            assert!(l.acquire_async().await.is_ok());
            let err = l.acquire_async().await.unwrap_err();
            assert_eq!(err.reason(), Reason::NoPermitInTime);
            assert!(l.call_async(async {}).await.is_err());
        });
    }
}
