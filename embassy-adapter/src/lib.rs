//! The Embassy adapter of ritmo: an embassy-time clock and async waits for microcontrollers.
//!
//! - [`EmbassyClock`] reads embassy-time's ticks as they are. Its tick rate is
//!   `embassy_time::TICK_HZ`, a constant, so a limiter on it converts its config into ticks when
//!   it is built, stays `const`-constructible (a `static`), and taking a permit never scales
//!   time, at 1 MHz or 32768 Hz alike.
//! - [`AsyncExt`] gives such a limiter `acquire_async().await`, `acquire_n_async(k).await`,
//!   `call_async(future).await` and `try_call_async(future).await` (the names ritmo-std's tokio
//!   waits use; `use ritmo::embassy::prelude::*;` brings the trait into scope): a rejection is an `Err` at once; a call whose permit arrives within
//!   the config's `max_wait` reserves it and sleeps on `embassy_time::Timer::at` until its slot,
//!   without blocking the executor. Dropping the future before its slot gives the permit back
//!   (when no later call queued behind it) and the work never runs; work that started keeps it.
//! - [`AsyncRateLimitedWrite`] limits an `embedded_io_async::Write` (a UART, a radio) to the
//!   limiter's permits in bytes per period: ritmo-core's writer, sleeping on Embassy's timer.
//!
//! The crate never picks embassy-time's tick rate or time driver: the application does, with
//! embassy-time's `tick-hz-*` feature and its HAL's driver (or `std` on a host).
//!
//! # Firmware
//!
//! ```no_run
//! use core::time::Duration;
//! use embedded_io_async::Write;
//! use ritmo::{const_config, const_window_config, ClockWait, RateLimiter};
//! use ritmo::embassy::{AsyncExt, AsyncRateLimitedWrite, EmbassyClock};
//!
//! // A 1% duty cycle for 1 s frames: at most 36 in ANY hour (up to 18 at once, then one every
//! // 200 s), waiting up to a minute for a slot.
//! static RADIO: RateLimiter<EmbassyClock> = RateLimiter::new(
//!     "radio",
//!     const_window_config!(36, Duration::from_secs(3600), 18).with_max_wait(Duration::from_secs(60)),
//!     EmbassyClock,
//! );
//! // 960 bytes per second: what a peer reading 9600 baud can take.
//! static UART: RateLimiter<EmbassyClock> =
//!     RateLimiter::new("uart", const_config!(960, Duration::from_secs(1)), EmbassyClock);
//!
//! // An Embassy task (`#[embassy_executor::task]`) sending frames.
//! async fn radio_task() {
//!     loop {
//!         match RADIO.acquire_async().await {
//!             Ok(()) => { /* send a frame */ }
//!             Err(e) => embassy_time::Timer::after_millis(e.retry_after().as_millis() as u64).await,
//!         }
//!     }
//! }
//!
//! // A task logging through a UART (any `embedded_io_async::Write`).
//! async fn log_task<W: Write>(uart: W) -> Result<(), ritmo::WriteError<W::Error>> {
//!     let mut out = AsyncRateLimitedWrite::new(uart, &UART, ClockWait);
//!     out.write_all(b"a long report, paced to the peer\r\n").await
//! }
//! # let _ = (radio_task, log_task::<&mut [u8]>);
//! ```
//!
//! A config built in a `const` context must be valid: `const_config!` fails the build otherwise.
//!
//! # Testing firmware code on the host
//!
//! Enable embassy-time's `mock-driver` (1 MHz ticks) and `generic-queue-8` in your
//! dev-dependencies, plus `critical-section`'s `std`: then poll the future, see it pending,
//! `embassy_time::MockDriver::get().advance(..)` to its slot, and poll it ready. The driver is
//! global, so run such tests one at a time (behind a mutex). This crate's own tests do exactly
//! that.
//!
//! # Features
//!
//! - `defmt`: `defmt::Format` for [`EmbassyClock`] and for ritmo-core's errors, snapshots and
//!   configs.
#![no_std]
#![cfg_attr(docsrs, feature(doc_cfg))]

// Intra-doc links to the other ritmo crates' items, by the paths the `ritmo` facade gives
// them (`crate::ritmo::Config`, `crate::ritmo::server::StdClock`): written by
// scripts/facade-paths, which keeps the docs free of sub-crate paths. Docs builds only.
#[cfg(doc)]
#[allow(unused_imports)]
mod ritmo {
    pub use ritmo_core::*;
}

mod clock;
pub mod prelude;
mod wait;
mod write;

pub use clock::EmbassyClock;
pub use wait::AsyncExt;
pub use write::AsyncRateLimitedWrite;

/// The error of [`AsyncRateLimitedWrite`] (and of ritmo-core's blocking writer).
pub use ritmo_core::WriteError;

/// A limiter on embassy-time's clock.
///
/// ```
/// use core::time::Duration;
/// use ritmo::const_config;
/// use ritmo::embassy::{EmbassyClock, EmbassyRateLimiter};
/// static API: EmbassyRateLimiter =
///     EmbassyRateLimiter::new("api", const_config!(10, Duration::from_secs(1)), EmbassyClock);
/// assert_eq!(API.id(), "api");
/// ```
pub type EmbassyRateLimiter = ritmo_core::RateLimiter<EmbassyClock>;

/// The crate's version.
///
/// ```
/// assert!(!ritmo::embassy::VERSION.is_empty());
/// ```
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
