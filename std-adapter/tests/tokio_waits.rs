//! Async waits on tokio's paused clock (a `TokioClock` limiter) and on a `ManualClock`.
#![cfg(feature = "tokio")]

use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use ritmo_core::{Clock, Config, ManualClock, RateLimiter, Reason};
use ritmo_std::tokio::{AsyncExt, TokioClock};
use tokio::time::Instant;

/// Polls once, outside of any task: enough to see whether a future is still waiting.
fn poll_once<F: Future>(future: Pin<&mut F>) -> Poll<F::Output> {
    future.poll(&mut Context::from_waker(Waker::noop()))
}

fn config(permits: u32, period_ms: u64, max_wait_ms: u64) -> Config {
    Config::new(permits, Duration::from_millis(period_ms))
        .unwrap()
        .with_max_wait(Duration::from_millis(max_wait_ms))
}

#[tokio::test(start_paused = true)]
async fn waiters_sleep_until_their_slots_without_blocking_the_thread() {
    let clock = TokioClock::new();
    let limiter: &'static RateLimiter<TokioClock> = Box::leak(Box::new(RateLimiter::new(
        "paused",
        config(1, 100, 1000),
        clock,
    )));
    let start = Instant::now();
    // Five tasks on this one thread: a blocking wait would stall the others.
    let tasks: Vec<_> = (0..5)
        .map(|_| {
            tokio::spawn(async move {
                limiter.acquire_async().await.unwrap();
                limiter.clock().now()
            })
        })
        .collect();
    let mut woke = Vec::new();
    for task in tasks {
        woke.push(task.await.unwrap());
    }
    woke.sort_unstable();
    // Paused time jumps from slot to slot: 0, 100, 200, 300, 400 ms (the timer rounds to 1 ms).
    for (i, at) in woke.iter().enumerate() {
        let slot = i as u64 * 100_000_000;
        assert!(
            *at >= slot && *at < slot + 1_000_000,
            "task {i} woke at {at} ns"
        );
    }
    assert!(Instant::now() - start < Duration::from_millis(401));
}

#[tokio::test(start_paused = true)]
async fn a_call_too_far_away_is_rejected_at_once() {
    let limiter = RateLimiter::new("far", config(1, 1000, 500), TokioClock::new());
    limiter.acquire_async().await.unwrap();
    let before = Instant::now();
    let mut ran = false;
    let err = limiter.call_async(async { ran = true }).await.unwrap_err();
    assert_eq!(err.reason(), Reason::NoPermitInTime);
    assert_eq!(Instant::now(), before, "no time passed: it did not wait");
    assert!(!ran);
}

#[tokio::test(start_paused = true)]
async fn dropping_a_waiting_call_returns_its_permit_and_never_runs_the_work() {
    let limiter = RateLimiter::new("dropped", config(1, 1000, 5000), TokioClock::new());
    limiter.try_acquire().unwrap();
    let ran = AtomicBool::new(false);
    {
        let mut call = pin!(limiter.call_async(async { ran.store(true, Ordering::SeqCst) }));
        assert!(poll_once(call.as_mut()).is_pending()); // reserved the 1 s slot, sleeping
        tokio::time::advance(Duration::from_millis(400)).await;
        assert!(poll_once(call.as_mut()).is_pending());
    } // dropped before its slot
    assert!(!ran.load(Ordering::SeqCst));
    // It was the last reservation: the next caller gets the 1 s slot, 600 ms from now.
    let next = limiter.reserve().unwrap();
    assert_eq!(next.wait_time(), Duration::from_millis(600));
    next.commit();
}

#[tokio::test(start_paused = true)]
async fn a_started_call_keeps_its_permit_when_dropped() {
    let limiter = RateLimiter::new("started", config(1, 1000, 5000), TokioClock::new());
    limiter.try_acquire().unwrap();
    let started = AtomicBool::new(false);
    {
        let mut call = pin!(limiter.call_async(async {
            started.store(true, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_secs(60)).await; // slow work
        }));
        assert!(poll_once(call.as_mut()).is_pending());
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(poll_once(call.as_mut()).is_pending()); // slot reached: the work runs
        assert!(started.load(Ordering::SeqCst));
    } // dropped half-way through the work
    // The permit stays taken: the next one is a whole interval after the started call's slot.
    let next = limiter.reserve().unwrap();
    assert_eq!(next.wait_time(), Duration::from_secs(1));
    next.commit();
}

#[tokio::test(start_paused = true)]
async fn on_a_manual_clock_the_wait_ends_when_the_fake_clock_reaches_the_slot() {
    let clock = ManualClock::new();
    let limiter = RateLimiter::new("manual", config(2, 1000, 2000), &clock);
    limiter.try_acquire_n(2).unwrap();
    let mut acquire = pin!(limiter.acquire_n_async(2));
    assert!(poll_once(acquire.as_mut()).is_pending()); // slot at 1 s on the fake clock
    // tokio's time passing is not enough: the limiter reads the fake clock.
    tokio::time::advance(Duration::from_secs(1)).await;
    assert!(poll_once(acquire.as_mut()).is_pending());
    clock.advance(Duration::from_millis(999));
    tokio::time::advance(Duration::from_secs(1)).await;
    assert!(poll_once(acquire.as_mut()).is_pending());
    clock.advance(Duration::from_millis(1));
    tokio::time::advance(Duration::from_secs(1)).await;
    assert!(poll_once(acquire.as_mut()).is_ready());
    assert_eq!(clock.now(), 1_000_000_000);
    assert_eq!(limiter.available_permits(), 0);
}

#[tokio::test]
async fn a_manual_clock_limiter_returns_a_dropped_waiters_permit() {
    let clock = ManualClock::new();
    let limiter = RateLimiter::new("manual-drop", config(1, 1000, 5000), &clock);
    limiter.try_acquire().unwrap();
    let first = limiter.reserve().unwrap(); // slot at 1 s, kept
    {
        let mut second = pin!(limiter.acquire_async()); // slot at 2 s
        assert!(poll_once(second.as_mut()).is_pending());
    }
    // The dropped waiter was the last: its 2 s slot is the next caller's.
    assert_eq!(
        limiter.reserve().unwrap().wait_time(),
        Duration::from_secs(2)
    );
    first.commit();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn futures_are_send_on_a_server_clock() {
    let config = config(1, 20, 1000);
    let limiter: &'static _ = Box::leak(Box::new(ritmo_std::limiter("send", config)));
    let a = tokio::spawn(limiter.call_async(async { 1 }));
    let b = tokio::spawn(limiter.call_async(async { 2 }));
    assert_eq!(a.await.unwrap().unwrap() + b.await.unwrap().unwrap(), 3);
}

/// The permit is kept from the poll that finds the slot arrived, not from the instant the slot
/// arrives: a future dropped after its slot's time but before that poll gives its permit back and
/// never runs its work; one polled once more keeps it.
#[tokio::test(start_paused = true)]
async fn a_future_dropped_after_its_slot_but_before_its_next_poll_gives_the_permit_back() {
    let limiter = RateLimiter::new("late", config(1, 100, 1000), TokioClock::new());
    limiter.acquire_async().await.unwrap(); // the burst of one
    let ran = AtomicBool::new(false);
    {
        let mut waiting = pin!(limiter.call_async(async { ran.store(true, Ordering::SeqCst) }));
        assert!(
            poll_once(waiting.as_mut()).is_pending(),
            "waits for its slot"
        );
        tokio::time::advance(Duration::from_millis(150)).await; // past the slot, not polled
        assert!(limiter.clock().now() >= 100_000_000);
    } // dropped here
    assert!(!ran.load(Ordering::SeqCst), "the work never ran");
    assert_eq!(limiter.available_permits(), 1, "the permit went back");

    // The same, polled once after the slot: the work runs and the permit is kept.
    limiter.acquire_async().await.unwrap(); // the permit that came back
    let mut waiting = pin!(limiter.call_async(async { ran.store(true, Ordering::SeqCst) }));
    assert!(
        poll_once(waiting.as_mut()).is_pending(),
        "waits for its slot"
    );
    tokio::time::advance(Duration::from_millis(150)).await;
    assert_eq!(
        poll_once(waiting.as_mut()),
        Poll::Ready(Ok(())),
        "polled after its slot"
    );
    assert!(ran.load(Ordering::SeqCst));
    assert_eq!(limiter.available_permits(), 0, "the permit is kept");
}
