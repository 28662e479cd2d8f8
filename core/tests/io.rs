//! The blocking rate-limited writer: bytes per period on a fake clock, chunks split at the burst,
//! every byte through in order.
#![cfg(feature = "embedded-io")]

use core::convert::Infallible;
use core::time::Duration;

use embedded_io::{ErrorType, Write};
use ritmo_core::{
    AdvanceClock, Clock, Config, Interrupted, ManualClock, RateLimitedWrite, RateLimiter, Reason,
    Wait, WriteError,
};

/// An in-memory sink that records every write with the fake clock's reading.
struct Sink<'a, C: Clock> {
    clock: &'a C,
    data: Vec<u8>,
    writes: Vec<(u64, usize)>,
}

impl<'a, C: Clock> Sink<'a, C> {
    fn new(clock: &'a C) -> Self {
        Sink {
            clock,
            data: Vec::new(),
            writes: Vec::new(),
        }
    }
}

impl<C: Clock> ErrorType for Sink<'_, C> {
    type Error = Infallible;
}

impl<C: Clock> Write for Sink<'_, C> {
    fn write(&mut self, buf: &[u8]) -> Result<usize, Infallible> {
        if !buf.is_empty() {
            self.data.extend_from_slice(buf);
            self.writes.push((self.clock.now(), buf.len()));
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> Result<(), Infallible> {
        Ok(())
    }
}

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

/// In every window `[t, t + w]` of the record, at most `n + floor(w / T)` bytes went out
/// (the bound, `T = period / n`, all in nanoseconds). `slack` widens each window: a call
/// admitted at its slot is seen at the next whole tick of a coarse clock, so a window measured
/// between two readings can look up to one tick shorter than the one between the slots.
fn assert_bound(writes: &[(u64, usize)], n: u64, period_ns: u64, slack: u64) {
    for (i, &(start, _)) in writes.iter().enumerate() {
        let mut bytes = 0u64;
        for &(at, len) in &writes[i..] {
            bytes += len as u64;
            let w = at - start + slack;
            // floor(w / T) = floor(w * n / period)
            let bound =
                n + u64::try_from(u128::from(w) * u128::from(n) / u128::from(period_ns)).unwrap();
            assert!(bytes <= bound, "{bytes} bytes in {w} ns > bound {bound}");
        }
    }
}

/// The writer under test, on a `ManualClock`, waiting with `Wt`.
type Out<'a, Wt> = RateLimitedWrite<'a, &'a ManualClock, Sink<'a, ManualClock>, Wt>;

/// 4800 bytes through a 960-per-second writer, written by `write_all` (blocking or awaited).
fn paces_960_bytes_per_second<Wt>(waiter: Wt, write_all: impl FnOnce(&mut Out<'_, Wt>, &[u8])) {
    let clock = ManualClock::new();
    let uart = RateLimiter::new(
        "uart",
        Config::new(960, Duration::from_secs(1)).unwrap(),
        &clock,
    );
    let data = pattern(4800);
    let mut out = RateLimitedWrite::new(Sink::new(&clock), &uart, waiter);
    write_all(&mut out, &data);
    // 960 bytes of burst at once, then (4800 - 960) bytes at 960 per second: 4 s, to the
    // nanosecond (a byte every 1/960 s, rounded up to 1_041_667 ns: never faster than asked).
    let per_byte = 1_000_000_000u64.div_ceil(960);
    assert_eq!(clock.now(), (4800 - 960) * per_byte);
    assert!(clock.now() >= 4_000_000_000 && clock.now() - 4_000_000_000 < 3840);
    let sink = out.into_inner();
    assert_eq!(sink.data, data, "every byte, in order");
    // Five chunks of the burst, one per (rounded) second.
    let seconds: Vec<(u64, usize)> = (0..5).map(|s| (s * 960 * per_byte, 960)).collect();
    assert_eq!(sink.writes, seconds);
    assert_bound(&sink.writes, 960, 1_000_000_000, 0);
}

#[test]
fn lets_960_bytes_per_second_through() {
    paces_960_bytes_per_second(AdvanceClock, |out, data| out.write_all(data).unwrap());
}

#[test]
fn write_takes_one_chunk_of_at_most_the_burst() {
    let clock = ManualClock::new();
    let uart = RateLimiter::new(
        "uart",
        Config::new(64, Duration::from_millis(10)).unwrap(),
        &clock,
    );
    let mut out = RateLimitedWrite::new(Sink::new(&clock), &uart, AdvanceClock);
    assert_eq!(out.write(&pattern(200)).unwrap(), 64);
    assert_eq!(out.write(&pattern(10)).unwrap(), 10);
    assert_eq!(out.write(&[]).unwrap(), 0);
    // 64 free, then 10 bytes at 6.4 per ms: 1.5625 ms, rounded up to the nanosecond.
    assert_eq!(clock.now(), 1_562_500);
    assert_eq!(out.inner().writes, vec![(0, 64), (1_562_500, 10)]);
}

#[test]
fn odd_chunks_on_a_32768_hz_clock_keep_the_bound() {
    let rtc = ManualClock::<32_768>::with_reading(0);
    let n = 100u64;
    let uart = RateLimiter::new(
        "radio",
        Config::new(n as u32, Duration::from_millis(250)).unwrap(),
        &rtc,
    );
    let mut out = RateLimitedWrite::new(Sink::new(&rtc), &uart, AdvanceClock);
    let mut sent = Vec::new();
    for len in [7usize, 130, 1, 99, 250, 13, 100, 64] {
        let data = pattern(len);
        out.write_all(&data).unwrap();
        sent.extend_from_slice(&data);
    }
    let sink = out.into_inner();
    assert_eq!(sink.data, sent);
    // Readings are 32768 Hz ticks; check the bound in nanoseconds (floor of ticks keeps it exact:
    // a reading is never earlier than the true slot).
    let writes: Vec<(u64, usize)> = sink
        .writes
        .iter()
        .map(|&(t, len)| (t * 1_000_000_000 / 32_768, len))
        .collect();
    assert_bound(&writes, n, 250_000_000, 1_000_000_000u64.div_ceil(32_768));
    // 664 bytes, 100 of them free, the rest at 400 per second: no earlier than 1.41 s.
    let total = sent.len() as u64;
    let min_ticks = (total - n) * 32_768 / 400;
    assert!(rtc.now() >= min_ticks, "{} < {min_ticks}", rtc.now());
    assert!(
        rtc.now() <= min_ticks + 1,
        "{} > {min_ticks} + 1",
        rtc.now()
    );
}

#[test]
fn an_interrupted_wait_fails_the_write_and_writes_nothing() {
    struct Refuse;
    impl<C: Clock> Wait<C> for Refuse {
        fn wait_until(&mut self, _: &C, _: u64) -> Result<(), Interrupted> {
            Err(Interrupted)
        }
    }
    let clock = ManualClock::new();
    let uart = RateLimiter::new(
        "uart",
        Config::new(8, Duration::from_secs(1)).unwrap(),
        &clock,
    );
    let mut out = RateLimitedWrite::new(Sink::new(&clock), &uart, Refuse);
    assert_eq!(out.write(&pattern(8)).unwrap(), 8); // the burst: no wait
    let err = out.write(&pattern(4)).unwrap_err();
    match err {
        WriteError::RateLimited(e) => assert_eq!(e.reason(), Reason::Interrupted),
        other => panic!("expected RateLimited, got {other:?}"),
    }
    assert_eq!(
        embedded_io::Error::kind(&err),
        embedded_io::ErrorKind::Interrupted
    );
    assert_eq!(out.inner().data.len(), 8);
    // The interrupted reservation was the last one: its permits went back.
    assert_eq!(uart.retry_after_n(4).unwrap(), Duration::from_millis(500));
}

#[test]
fn a_failing_sink_reports_its_own_error() {
    let clock = ManualClock::new();
    let uart = RateLimiter::new(
        "uart",
        Config::new(8, Duration::from_secs(1)).unwrap(),
        &clock,
    );
    let mut buf = [0u8; 5];
    let mut out = RateLimitedWrite::new(&mut buf[..], &uart, AdvanceClock);
    let err = out.write_all(&pattern(8)).unwrap_err();
    assert!(matches!(err, WriteError::Io(_)), "{err:?}");
    assert!(err.to_string().starts_with("write failed"), "{err}");
}

/// Awaited, the same writer (waiting with `ClockWait`: the clock's own `AsyncClock` sleep, which
/// advances a `ManualClock` at once) paces bytes exactly as the blocking one.
#[cfg(feature = "embedded-io-async")]
mod awaited {
    use super::*;
    use core::future::Future;
    use core::pin::pin;
    use core::task::{Context, Poll, Waker};
    use ritmo_core::ClockWait;

    impl<C: Clock> embedded_io_async::Write for Sink<'_, C> {
        async fn write(&mut self, buf: &[u8]) -> Result<usize, Infallible> {
            Write::write(self, buf)
        }

        async fn flush(&mut self) -> Result<(), Infallible> {
            Ok(())
        }
    }

    /// Polls `future` once: every sleep on a `ManualClock` is ready at once.
    fn ready<F: Future>(future: F) -> F::Output {
        match pin!(future).poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(output) => output,
            Poll::Pending => panic!("a ManualClock sleep never waits"),
        }
    }

    #[test]
    fn lets_960_bytes_per_second_through() {
        use embedded_io_async::Write as Awaited;
        paces_960_bytes_per_second(ClockWait, |out, data| {
            ready(Awaited::write_all(out, data)).unwrap();
            assert_eq!(ready(Awaited::write(out, &[])).unwrap(), 0);
        });
    }
}
