//! The footprint baseline plus one `static` limiter on the SysTick clock, taking a permit.
#![no_std]
#![no_main]

use core::time::Duration;

use cortex_m_rt::entry;
use panic_halt as _;
use ritmo_core::{const_config, RateLimiter};
use ritmo_firmware::SysTickClock;

static LIMITER: RateLimiter<SysTickClock> = RateLimiter::new(
    "uart",
    const_config!(10, Duration::from_secs(1)),
    SysTickClock,
);

#[entry]
fn main() -> ! {
    let mut core = cortex_m::Peripherals::take().unwrap();
    SysTickClock::start(&mut core.SYST);
    let limiter = core::hint::black_box(&LIMITER);
    ritmo_firmware::exit(limiter.try_acquire().is_ok())
}

#[cortex_m_rt::exception]
fn SysTick() {
    SysTickClock::on_wrap();
}
