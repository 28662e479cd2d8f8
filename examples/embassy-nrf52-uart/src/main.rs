//! A rate-limited UART on an nRF52840 (the nRF52840-DK's USB serial port: TX P0.06, RX P0.08),
//! on Embassy.
//!
//! The peer on the other end reads 9600 baud, about 960 bytes a second, and has a small buffer:
//! a `static` ritmo limiter on embassy-time's clock allows 960 bytes per second, each line takes
//! as many permits as it has bytes, and a line that would overrun the peer waits for its slot
//! (up to a second) instead of being dropped. A second task sends a status line every 10 ms,
//! far more than the peer can take: what does not fit within the wait is counted and skipped.
//!
//! Build: `RUSTC=/usr/bin/rustc RUSTC_BOOTSTRAP=1 /usr/bin/cargo build --release` (see
//! `.cargo/config.toml`); flash with `probe-rs run --chip nRF52840_xxAA`.
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU32, Ordering};
use core::time::Duration;

use embassy_executor::Spawner;
use embassy_nrf::uarte::{self, Baudrate, UarteTx};
use embassy_nrf::{bind_interrupts, peripherals};
use embassy_time::Timer;
use panic_halt as _;
use ritmo_core::{const_config, AcquireError, RateLimiter};
use ritmo_embassy::{AsyncExt, EmbassyClock};

bind_interrupts!(struct Irqs {
    UARTE0 => uarte::InterruptHandler<peripherals::UARTE0>;
});

/// 960 bytes per second, a burst of at most 960, waiting up to a second for a slot: checked at
/// compile time (`const_config!`), built in a `const` context, no heap.
static UART: RateLimiter<EmbassyClock> = RateLimiter::new(
    "uart",
    const_config!(960, Duration::from_secs(1)).with_max_wait(Duration::from_secs(1)),
    EmbassyClock,
);

/// Lines skipped because their bytes would not have fit the peer's rate within a second.
static SKIPPED: AtomicU32 = AtomicU32::new(0);

/// Writes `line` once the limiter has `line.len()` byte permits for it: at once if they are
/// there, after sleeping until its slot if that comes within `max_wait`, never otherwise.
async fn send(tx: &mut UarteTx<'static>, line: &[u8]) -> Result<(), uarte::Error> {
    // A line longer than the burst (960 bytes) could never pass as one unit: split it.
    for chunk in line.chunks(960) {
        match UART.acquire_n_async(chunk.len() as u32).await {
            Ok(()) => tx.write(chunk).await?,
            Err(AcquireError::RateLimited(_)) => {
                SKIPPED.fetch_add(1, Ordering::Relaxed);
                return Ok(());
            }
            // Only for 0 or more than 960 permits, which `chunks(960)` never asks for.
            Err(_) => return Ok(()),
        }
    }
    Ok(())
}

#[embassy_executor::task]
async fn status(mut tx: UarteTx<'static>) {
    let mut n: u32 = 0;
    loop {
        // A 40-byte line every 10 ms is 4000 bytes a second: four times what the peer reads.
        let mut line = *b"status: sensor ok, queue 0, ticks 00000\n";
        for (i, digit) in line[34..39].iter_mut().rev().enumerate() {
            *digit = b'0' + (n / 10u32.pow(i as u32) % 10) as u8;
        }
        let _ = send(&mut tx, &line).await;
        n = n.wrapping_add(1);
        Timer::after_millis(10).await;
    }
}

#[embassy_executor::main]
async fn main(spawner: Spawner) {
    let p = embassy_nrf::init(Default::default());
    let mut config = uarte::Config::default();
    config.baudrate = Baudrate::Baud9600;
    let mut tx = UarteTx::new(p.UARTE0, Irqs, p.P0_06, config);
    let _ = send(&mut tx, b"ritmo: UART paced to 960 bytes per second\n").await;
    spawner.spawn(status(tx)).unwrap();
}
