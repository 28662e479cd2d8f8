//! A UART limited to 960 bytes per second (what a peer reading 9600 baud 8N1 can take), on
//! Embassy with its std time driver: a task logs 48-byte lines as fast as it can, and the main
//! task prints how many bytes reached the "UART" in each 100 ms.
//!
//! Expect the burst of 960 bytes in the first 100 ms, then about 96 bytes per 100 ms (two lines).

use core::convert::Infallible;
use core::sync::atomic::{AtomicUsize, Ordering};
use core::time::Duration;

use embassy_executor::Spawner;
use embassy_time::{Instant, Ticker};
use embedded_io_async::{ErrorType, Write};
use ritmo_core::{ClockWait, RateLimiter, const_config};
use ritmo_embassy::{AsyncRateLimitedWrite, EmbassyClock};

/// 960 bytes per second, bursts of up to 960: a `static`, built at compile time.
static UART_LIMIT: RateLimiter<EmbassyClock> = RateLimiter::new(
    "uart",
    const_config!(960, Duration::from_secs(1)),
    EmbassyClock,
);

/// Bytes the stand-in UART has sent.
static SENT: AtomicUsize = AtomicUsize::new(0);

/// A stand-in for a HAL's UART transmitter: counts the bytes it is given.
struct Uart;

impl ErrorType for Uart {
    type Error = Infallible;
}

impl Write for Uart {
    async fn write(&mut self, buf: &[u8]) -> Result<usize, Infallible> {
        SENT.fetch_add(buf.len(), Ordering::Relaxed);
        Ok(buf.len())
    }
    async fn flush(&mut self) -> Result<(), Infallible> {
        Ok(())
    }
}

#[embassy_executor::task]
async fn logger() {
    let mut out = AsyncRateLimitedWrite::new(Uart, &UART_LIMIT, ClockWait);
    let line = [b'.'; 48];
    loop {
        // Each line takes 48 permits and waits for them: 20 lines per second after the burst.
        out.write_all(&line).await.unwrap();
    }
}

#[embassy_executor::main]
async fn main(spawner: Spawner) {
    spawner.spawn(logger().unwrap());
    let start = Instant::now();
    let mut ticker = Ticker::every(embassy_time::Duration::from_millis(100));
    let mut last = 0;
    for _ in 0..20 {
        ticker.next().await;
        let sent = SENT.load(Ordering::Relaxed);
        println!(
            "{:>5} ms: {:>4} bytes in the last 100 ms ({sent} in all)",
            start.elapsed().as_millis(),
            sent - last
        );
        last = sent;
    }
    std::process::exit(0);
}
