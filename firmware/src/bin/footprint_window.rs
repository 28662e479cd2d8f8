//! `footprint_limiter` with a window config (`const_window_config!`): the same code, the config
//! computed while compiling.
#![no_std]
#![no_main]

use core::time::Duration;

use panic_halt as _;
use ritmo_core::{const_window_config, RateLimiter};
use ritmo_firmware::{Board, MachineClock};

static LIMITER: RateLimiter<MachineClock> = RateLimiter::new(
    "uart",
    const_window_config!(20, Duration::from_secs(1), 10),
    MachineClock {},
);

#[cfg_attr(target_arch = "arm", cortex_m_rt::entry)]
#[cfg_attr(target_arch = "riscv32", riscv_rt::entry)]
fn main() -> ! {
    let mut board = Board::take();
    board.start_clock();
    let limiter = core::hint::black_box(&LIMITER);
    ritmo_firmware::exit(limiter.try_acquire().is_ok())
}

#[cfg(target_arch = "arm")]
#[cortex_m_rt::exception]
fn SysTick() {
    ritmo_firmware::SysTickClock::on_wrap();
}
