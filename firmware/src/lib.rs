//! What the firmware binaries share: the emulated board's clock and timer interrupt, a ritmo
//! [`Clock`] on it, an `embedded-hal` [`DelayNs`](embedded_hal::delay::DelayNs) and the blocking
//! [`Wait`] built on it, and the check/exit helpers that turn a failed check into a non-zero QEMU
//! exit status.
//!
//! Each architecture has its module: `cortex` (SysTick on Cortex-M0/M3/M4F) and `riscv`
//! (the CLINT machine timer on QEMU's `virt` board, riscv32imc). Both export the same names
//! (`Board`, `MachineClock`, `CycleDelay`, `BOARD`, `TIMER_HZ`, `CLOCK_SPAN`, `exit`,
//! `hprintln`), so the checks are written once.
#![no_std]

use embedded_hal::delay::DelayNs;
use ritmo_core::{Clock, Interrupted, Wait};

#[cfg(target_arch = "arm")]
mod cortex;
#[cfg(target_arch = "arm")]
pub use cortex::*;

#[cfg(target_arch = "riscv32")]
mod riscv;
#[cfg(target_arch = "riscv32")]
pub use riscv::*;

/// Blocks a ritmo acquire with any `embedded-hal` [`DelayNs`]: delays for the time left until the
/// deadline, then checks the clock again, so it returns only once `clock.now() >= deadline`
/// whatever the delay's accuracy. Never interrupted.
#[derive(Debug)]
pub struct DelayWait<D> {
    delay: D,
    /// How many delays the waits took (a wait that found the deadline passed took none).
    pub delays: u32,
}

impl<D: DelayNs> DelayWait<D> {
    /// Waits with `delay`.
    pub const fn new(delay: D) -> Self {
        Self { delay, delays: 0 }
    }
}

impl<C: Clock + ?Sized, D: DelayNs> Wait<C> for DelayWait<D> {
    fn wait_until(&mut self, clock: &C, deadline: u64) -> Result<(), Interrupted> {
        loop {
            let now = clock.now();
            if now >= deadline {
                return Ok(());
            }
            let left = clock.tick_rate().duration_ceil(deadline - now);
            let ns = u32::try_from(left.as_nanos()).unwrap_or(u32::MAX);
            self.delay.delay_ns(ns.max(1));
            self.delays += 1;
        }
    }
}

/// Prints one line to the host's stdout (semihosting).
#[macro_export]
macro_rules! log {
    ($($arg:tt)*) => {
        $crate::hprintln!($($arg)*)
    };
}

/// A firmware check: on failure prints where and what, and exits QEMU with status 1.
#[macro_export]
macro_rules! check {
    ($cond:expr $(,)?) => {
        $crate::check!($cond, "")
    };
    ($cond:expr, $($arg:tt)+) => {
        if !$cond {
            $crate::hprintln!(
                "FAIL {}:{}: {} {}", file!(), line!(), stringify!($cond), format_args!($($arg)+)
            );
            $crate::exit(false);
        }
    };
}

/// A footprint firmware's entry, the same in every `footprint_*` binary so that the table's rows
/// differ only by what they measure: the board taken and its clock started, `$outcome` evaluated
/// and QEMU exited with it, and on Cortex-M the SysTick handler that extends the clock.
#[macro_export]
macro_rules! footprint_main {
    ($outcome:expr) => {
        #[cfg_attr(target_arch = "arm", cortex_m_rt::entry)]
        #[cfg_attr(target_arch = "riscv32", riscv_rt::entry)]
        fn main() -> ! {
            let mut board = $crate::Board::take();
            board.start_clock();
            $crate::exit($outcome)
        }

        #[cfg(target_arch = "arm")]
        #[cortex_m_rt::exception]
        fn SysTick() {
            $crate::SysTickClock::on_wrap();
        }
    };
}
