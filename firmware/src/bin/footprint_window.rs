//! `footprint_limiter` with a window config (`const_window_config!`): the same code, the config
//! computed while compiling.
#![no_std]
#![no_main]

use core::time::Duration;

use panic_halt as _;
use ritmo_core::{const_window_config, RateLimiter};
use ritmo_firmware::MachineClock;

static LIMITER: RateLimiter<MachineClock> = RateLimiter::new(
    "uart",
    const_window_config!(20, Duration::from_secs(1), 10),
    MachineClock {},
);

ritmo_firmware::footprint_main!({
    let limiter = core::hint::black_box(&LIMITER);
    limiter.try_acquire().is_ok()
});
