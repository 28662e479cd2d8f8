//! The footprint baseline: the runtime, the board's clock (SysTick on Cortex-M, the machine
//! timer on RISC-V) and a semihosting exit, no limiter.
#![no_std]
#![no_main]

use panic_halt as _;
use ritmo_core::Clock;
use ritmo_firmware::{Board, MachineClock};

#[cfg_attr(target_arch = "arm", cortex_m_rt::entry)]
#[cfg_attr(target_arch = "riscv32", riscv_rt::entry)]
fn main() -> ! {
    let mut board = Board::take();
    board.start_clock();
    let now = core::hint::black_box(MachineClock {}.now());
    ritmo_firmware::exit(now != u64::MAX)
}

#[cfg(target_arch = "arm")]
#[cortex_m_rt::exception]
fn SysTick() {
    ritmo_firmware::SysTickClock::on_wrap();
}
