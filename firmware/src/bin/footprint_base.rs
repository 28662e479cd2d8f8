//! The footprint baseline: the runtime, the board's clock (SysTick on Cortex-M, the machine
//! timer on RISC-V) and a semihosting exit, no limiter.
#![no_std]
#![no_main]

use panic_halt as _;
use ritmo_core::Clock;
use ritmo_firmware::MachineClock;

ritmo_firmware::footprint_main!({
    let now = core::hint::black_box(MachineClock {}.now());
    now != u64::MAX
});
