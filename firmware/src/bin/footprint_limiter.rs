//! The footprint baseline plus one `static` limiter on the board's clock, taking a permit.
#![no_std]
#![no_main]

use core::time::Duration;

use panic_halt as _;
use ritmo_core::{const_config, RateLimiter};
use ritmo_firmware::MachineClock;

static LIMITER: RateLimiter<MachineClock> = RateLimiter::new(
    "uart",
    const_config!(10, Duration::from_secs(1)),
    MachineClock {},
);

ritmo_firmware::footprint_main!({
    let limiter = core::hint::black_box(&LIMITER);
    limiter.try_acquire().is_ok()
});
