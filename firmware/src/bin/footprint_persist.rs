//! `footprint_limiter` that also saves its state after the permit and restores it (what
//! `ritmo_core::persist` costs the firmware that uses it).
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
    let taken = limiter.try_acquire().is_ok();
    let saved = core::hint::black_box(limiter.save());
    let restored = limiter.restore(&saved) == ritmo_core::persist::Restored::Saved;
    taken && restored
});
