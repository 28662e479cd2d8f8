//! Async waits on embassy-time's mock driver: time moves only when a test advances it, and every
//! future is polled by hand with a no-op waker, so each step is deterministic (poll, Pending,
//! advance, poll, Ready). The driver is global: every test holds `DRIVER` and resets it.

use core::cell::Cell;
use core::future::Future;
use core::pin::{Pin, pin};
use core::task::{Context, Poll, Waker};
use core::time::Duration;
use std::sync::{Mutex, MutexGuard};

use embassy_time::{Instant, MockDriver};
use embedded_io_async::{ErrorType, Write};
use ritmo_core::{
    AcquireError, ClockWait, Config, RateLimitExceeded, RateLimiter, Reason, const_config,
};
use ritmo_embassy::{AsyncExt, AsyncRateLimitedWrite, EmbassyClock};

static DRIVER: Mutex<()> = Mutex::new(());

/// Takes the global mock driver for this test and sets it back to 0 with no timers.
fn driver() -> MutexGuard<'static, ()> {
    let guard = DRIVER
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    MockDriver::get().reset();
    guard
}

fn advance(d: Duration) {
    MockDriver::get().advance(embassy_time::Duration::from_micros(d.as_micros() as u64));
}

fn now_us() -> u64 {
    Instant::now().as_micros()
}

fn poll<F: Future>(f: Pin<&mut F>) -> Poll<F::Output> {
    f.poll(&mut Context::from_waker(Waker::noop()))
}

fn limiter(permits: u32, period: Duration, max_wait: Duration) -> RateLimiter<EmbassyClock> {
    let config = Config::new(permits, period)
        .unwrap()
        .with_max_wait(max_wait);
    RateLimiter::new("test", config, EmbassyClock)
}

/// Pending on its first poll, ready on the second: work that has started and not finished.
struct YieldOnce(bool);
impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            self.0 = true;
            Poll::Pending
        }
    }
}

#[test]
fn a_call_sleeps_until_its_slot_and_not_a_tick_less() {
    let _driver = driver();
    let l = limiter(2, Duration::from_secs(1), Duration::from_secs(1));
    for _ in 0..2 {
        assert_eq!(
            poll(pin!(l.acquire_async())),
            Poll::Ready(Ok(())),
            "the burst"
        );
    }
    let mut third = pin!(l.acquire_async());
    assert_eq!(poll(third.as_mut()), Poll::Pending);
    advance(Duration::from_micros(499_999));
    assert_eq!(poll(third.as_mut()), Poll::Pending);
    advance(Duration::from_micros(1));
    assert_eq!(poll(third.as_mut()), Poll::Ready(Ok(())));
    assert_eq!(now_us(), 500_000);
}

#[test]
fn a_permit_later_than_max_wait_is_an_error_at_once() {
    let _driver = driver();
    let l = limiter(1, Duration::from_secs(1), Duration::from_millis(999));
    assert_eq!(poll(pin!(l.acquire_async())), Poll::Ready(Ok(())));
    let Poll::Ready(Err(e)) = poll(pin!(l.acquire_async())) else {
        panic!("expected a rejection on the first poll");
    };
    assert_eq!(e.reason(), Reason::NoPermitInTime);
    assert_eq!(e.retry_after(), Duration::from_secs(1));
}

#[test]
fn waiters_are_served_in_the_order_they_reserved() {
    let _driver = driver();
    let l = limiter(1, Duration::from_millis(100), Duration::from_secs(1));
    l.try_acquire().unwrap();
    let mut a = pin!(l.acquire_async());
    let mut b = pin!(l.acquire_async());
    let mut c = pin!(l.acquire_async());
    // Reserve in order a, b, c (slots at 100, 200, 300 ms)...
    assert!(poll(a.as_mut()).is_pending());
    assert!(poll(b.as_mut()).is_pending());
    assert!(poll(c.as_mut()).is_pending());
    // ...then always poll in reverse order: c must not overtake b, nor b overtake a.
    let mut done: Vec<(&str, u64)> = Vec::new();
    let (mut a_done, mut b_done, mut c_done) = (false, false, false);
    for _ in 0..400 {
        advance(Duration::from_millis(1));
        if !c_done && poll(c.as_mut()).is_ready() {
            c_done = true;
            done.push(("c", now_us()));
        }
        if !b_done && poll(b.as_mut()).is_ready() {
            b_done = true;
            done.push(("b", now_us()));
        }
        if !a_done && poll(a.as_mut()).is_ready() {
            a_done = true;
            done.push(("a", now_us()));
        }
    }
    assert_eq!(done, vec![("a", 100_000), ("b", 200_000), ("c", 300_000)]);
}

#[test]
fn dropping_a_waiter_gives_its_permit_back_and_its_work_never_runs() {
    let _driver = driver();
    let l = limiter(1, Duration::from_secs(1), Duration::from_secs(2));
    l.try_acquire().unwrap();
    assert_eq!(l.retry_after(), Duration::from_secs(1));
    let ran = Cell::new(false);
    {
        let mut work = pin!(l.call_async(async { ran.set(true) }));
        assert!(poll(work.as_mut()).is_pending());
        // Its reservation holds the permit at 1 s: the next one is at 2 s.
        assert_eq!(l.retry_after(), Duration::from_secs(2));
    } // dropped while sleeping
    assert_eq!(
        l.retry_after(),
        Duration::from_secs(1),
        "the permit went back"
    );
    advance(Duration::from_secs(1));
    assert!(!ran.get(), "the work never ran");
    assert!(
        l.try_acquire().is_ok(),
        "the returned permit is there at 1 s"
    );
}

#[test]
fn dropping_a_waiter_with_others_queued_behind_leaves_its_slot_unused() {
    let _driver = driver();
    let l = limiter(1, Duration::from_secs(1), Duration::from_secs(5));
    l.try_acquire().unwrap();
    let mut b = pin!(l.acquire_async());
    {
        let mut a = pin!(l.acquire_async());
        assert!(poll(a.as_mut()).is_pending()); // slot 1 s
        assert!(poll(b.as_mut()).is_pending()); // slot 2 s
    }
    // a's slot is not given back: b is queued behind it, and a new caller comes after b.
    assert_eq!(l.retry_after(), Duration::from_secs(3));
    advance(Duration::from_millis(1999));
    assert!(poll(b.as_mut()).is_pending());
    advance(Duration::from_millis(1));
    assert_eq!(poll(b.as_mut()), Poll::Ready(Ok(())));
}

#[test]
fn work_that_started_keeps_its_permit() {
    let _driver = driver();
    let l = limiter(1, Duration::from_secs(1), Duration::from_secs(1));
    l.try_acquire().unwrap();
    let started = Cell::new(false);
    {
        let mut work = pin!(l.call_async(async {
            started.set(true);
            YieldOnce(false).await;
        }));
        assert!(poll(work.as_mut()).is_pending()); // waiting for its slot
        assert!(!started.get());
        advance(Duration::from_secs(1));
        assert!(poll(work.as_mut()).is_pending()); // running, not finished
        assert!(started.get());
    } // dropped while the work runs
    assert!(l.try_acquire().is_err(), "the permit stays taken");
    assert_eq!(l.retry_after(), Duration::from_secs(1));
}

#[test]
fn acquire_n_waits_for_its_last_permit_and_refuses_bad_counts() {
    let _driver = driver();
    let l = limiter(10, Duration::from_secs(1), Duration::from_secs(1));
    assert_eq!(poll(pin!(l.acquire_n_async(10))), Poll::Ready(Ok(())));
    let mut four = pin!(l.acquire_n_async(4));
    assert!(poll(four.as_mut()).is_pending());
    advance(Duration::from_micros(399_999));
    assert!(poll(four.as_mut()).is_pending());
    advance(Duration::from_micros(1));
    assert_eq!(poll(four.as_mut()), Poll::Ready(Ok(())));
    for k in [0, 11] {
        let Poll::Ready(Err(AcquireError::InvalidPermits(e))) = poll(pin!(l.acquire_n_async(k)))
        else {
            panic!("k = {k} must fail at once");
        };
        assert_eq!(e.requested(), k);
    }
}

#[test]
fn try_call_converts_a_rejection_into_the_works_error() {
    #[derive(Debug, PartialEq)]
    enum SendError {
        Busy(Duration),
        Nack,
    }
    impl From<RateLimitExceeded> for SendError {
        fn from(e: RateLimitExceeded) -> Self {
            SendError::Busy(e.retry_after())
        }
    }
    let _driver = driver();
    let l = limiter(1, Duration::from_secs(1), Duration::ZERO);
    let nack = poll(pin!(
        l.try_call_async(async { Err::<(), _>(SendError::Nack) })
    ));
    assert_eq!(nack, Poll::Ready(Err(SendError::Nack)));
    let busy = poll(pin!(l.try_call_async(async { Ok::<u8, SendError>(1) })));
    assert_eq!(
        busy,
        Poll::Ready(Err(SendError::Busy(Duration::from_secs(1))))
    );
}

static RADIO: RateLimiter<EmbassyClock> = RateLimiter::new(
    "radio",
    const_config!(3, Duration::from_secs(3)).with_max_wait(Duration::from_secs(1)),
    EmbassyClock,
);

#[test]
fn a_static_limiter_waits_like_any_other() {
    let _driver = driver();
    let mut sent = 0;
    for _ in 0..3 {
        assert_eq!(
            poll(pin!(RADIO.call_async(async { 7 }))),
            Poll::Ready(Ok(7))
        );
        sent += 1;
    }
    let mut fourth = pin!(RADIO.call_async(async { 7 }));
    assert!(poll(fourth.as_mut()).is_pending());
    advance(Duration::from_secs(1));
    assert_eq!(poll(fourth.as_mut()), Poll::Ready(Ok(7)));
    sent += 1;
    assert_eq!((sent, now_us()), (4, 1_000_000));
    assert_eq!(RADIO.snapshot().available_permits, 0);
}

/// An in-memory async sink recording each write with the mock clock's reading.
#[derive(Default)]
struct Sink {
    data: Vec<u8>,
    writes: Vec<(u64, usize)>,
}

impl ErrorType for Sink {
    type Error = core::convert::Infallible;
}

impl Write for Sink {
    async fn write(&mut self, buf: &[u8]) -> Result<usize, Self::Error> {
        if !buf.is_empty() {
            self.data.extend_from_slice(buf);
            self.writes.push((now_us(), buf.len()));
        }
        Ok(buf.len())
    }
    async fn flush(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

/// Polls `f`, advancing the mock clock by `step` after each Pending, until it is ready; returns
/// its output.
fn drive<F: Future>(mut f: Pin<&mut F>, step: Duration, max_steps: usize) -> F::Output {
    for _ in 0..max_steps {
        if let Poll::Ready(out) = poll(f.as_mut()) {
            return out;
        }
        advance(step);
    }
    panic!("not ready after {max_steps} steps");
}

#[test]
fn the_async_writer_lets_1000_bytes_per_second_through() {
    let _driver = driver();
    // 1000 bytes per second: a byte every millisecond, exact on the mock's 1 MHz ticks.
    let uart = limiter(1000, Duration::from_secs(1), Duration::ZERO);
    let data = pattern(4800);
    let mut out = AsyncRateLimitedWrite::new(Sink::default(), &uart, ClockWait);
    // Stepping a millisecond at a time, it finishes at the first step at or after its last slot.
    drive(pin!(out.write_all(&data)), Duration::from_millis(1), 10_000).unwrap();
    // The burst of 1000 at once, then 3800 bytes at 1000 per second: 3.8 s.
    assert_eq!(now_us(), 3_800_000);
    let sink = out.into_inner();
    assert_eq!(sink.data, data, "every byte, in order");
    assert_eq!(
        sink.writes,
        vec![
            (0, 1000),
            (1_000_000, 1000),
            (2_000_000, 1000),
            (3_000_000, 1000),
            (3_800_000, 800)
        ]
    );
}

#[test]
fn the_async_writer_at_960_bytes_per_second_is_never_early() {
    let _driver = driver();
    let uart = limiter(960, Duration::from_secs(1), Duration::ZERO);
    let data = pattern(4800);
    let mut out = AsyncRateLimitedWrite::new(Sink::default(), &uart, ClockWait);
    drive(pin!(out.write_all(&data)), Duration::from_millis(1), 10_000).unwrap();
    let sink = out.into_inner();
    assert_eq!(sink.data, data);
    // Chunk k (of 960) goes out at its slot, k seconds, seen at the next 1 ms step: never before.
    let at: Vec<u64> = sink.writes.iter().map(|&(t, _)| t).collect();
    assert_eq!(at, vec![0, 1_001_000, 2_001_000, 3_001_000, 4_001_000]);
    assert!(sink.writes.iter().all(|&(_, len)| len == 960));
}

#[test]
fn dropping_a_write_while_it_waits_writes_nothing_and_returns_the_permits() {
    let _driver = driver();
    let uart = limiter(100, Duration::from_secs(1), Duration::ZERO);
    let mut out = AsyncRateLimitedWrite::new(Sink::default(), &uart, ClockWait);
    assert_eq!(poll(pin!(out.write(&pattern(100)))), Poll::Ready(Ok(100)));
    let fifty = pattern(50);
    {
        let mut second = pin!(out.write(&fifty));
        assert!(poll(second.as_mut()).is_pending());
        assert_eq!(uart.retry_after(), Duration::from_millis(510));
    }
    assert_eq!(out.inner().data.len(), 100, "nothing written");
    assert_eq!(
        uart.retry_after(),
        Duration::from_millis(10),
        "permits back"
    );
}

#[test]
fn futures_on_a_static_limiter_are_send() {
    // What an `InterruptExecutor` (or a `SendSpawner`) asks of a task's future.
    fn assert_send<T: Send>(_: &T) {}
    let acquire = RADIO.acquire_async();
    assert_send(&acquire);
    let call = RADIO.call_async(async { 1 });
    assert_send(&call);
    let mut buf = [0u8; 8];
    let mut out = AsyncRateLimitedWrite::new(&mut buf[..], &RADIO, ClockWait);
    let write = out.write(b"abc");
    assert_send(&write);
}
