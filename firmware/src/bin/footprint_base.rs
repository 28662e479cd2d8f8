//! The footprint baseline: the runtime, a SysTick clock and a semihosting exit, no limiter.
#![no_std]
#![no_main]

use cortex_m_rt::entry;
use panic_halt as _;
use ritmo_core::Clock;
use ritmo_firmware::SysTickClock;

#[entry]
fn main() -> ! {
    let mut core = cortex_m::Peripherals::take().unwrap();
    SysTickClock::start(&mut core.SYST);
    let now = core::hint::black_box(SysTickClock.now());
    ritmo_firmware::exit(now != u64::MAX)
}

#[cortex_m_rt::exception]
fn SysTick() {
    SysTickClock::on_wrap();
}
