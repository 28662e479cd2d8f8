//! RISC-V (riscv32imc on QEMU's `virt` board): the CLINT's 64-bit machine timer as the clock and
//! the race's timer interrupt, semihosting through `riscv-semihosting`.
//!
//! riscv32imc has no atomic instructions at all, so ritmo's state takes a critical section
//! (`riscv`'s single-hart one masks machine interrupts while it runs).

use embedded_hal::delay::DelayNs;
use riscv::interrupt::Interrupt;
use riscv_peripheral::clint_codegen;
use ritmo_core::{Clock, FixedRateClock, TickRate};

clint_codegen!(Clint, base 0x0200_0000, mtime_freq 10_000_000);

/// Ticks per second of `mtime` on QEMU's `virt` board.
pub const TIMER_HZ: u64 = 10_000_000;

/// The board's name, for the log.
pub const BOARD: &str = "virt (riscv32imc)";

/// How far the clock check reads the clock: `mtime` is 64 bits and never wraps; 2^20 ticks
/// (about 0.1 s) cross many carries into its upper half on the way.
pub const CLOCK_SPAN: u64 = 1 << 20;

/// A ritmo clock on the machine timer: the `time` counter (`mtime`), read as 64 bits on a
/// 32-bit core (upper, lower, upper again until the upper half holds still).
#[derive(Debug, Clone, Copy, Default)]
pub struct MtimeClock;

impl Clock for MtimeClock {
    fn now(&self) -> u64 {
        riscv::register::time::read64()
    }

    fn tick_rate(&self) -> TickRate {
        Self::TICK_RATE
    }
}

impl FixedRateClock for MtimeClock {
    const TICK_RATE: TickRate = TickRate::from_hz(TIMER_HZ);
}

/// The clock the checks run on.
pub type MachineClock = MtimeClock;

/// A busy-wait [`DelayNs`] on the machine timer. Under emulation it is as exact as the timer,
/// but [`DelayWait`](crate::DelayWait) checks the clock after each delay all the same.
#[derive(Debug, Clone, Copy, Default)]
pub struct CycleDelay;

impl DelayNs for CycleDelay {
    fn delay_ns(&mut self, ns: u32) {
        let ticks = (u64::from(ns) * TIMER_HZ).div_ceil(1_000_000_000).max(1);
        let until = MtimeClock.now() + ticks;
        while MtimeClock.now() < until {}
    }
}

/// The board's peripherals the checks use.
#[derive(Debug)]
pub struct Board {
    _private: (),
}

impl Board {
    /// Takes the peripherals (the checks call this once).
    pub fn take() -> Self {
        Board { _private: () }
    }

    /// The machine timer always runs: nothing to start.
    pub fn start_clock(&mut self) {}

    /// Fires the machine timer interrupt every `ticks` timer ticks: the handler must call
    /// [`Board::rearm_timer`] with the same period.
    pub fn start_timer(&mut self, ticks: u32) {
        Self::rearm_timer(ticks);
        // SAFETY: the firmware's only critical sections are `riscv`'s single-hart ones, which
        // save and restore the interrupt enable bit; enabling here is outside any of them.
        unsafe {
            riscv::interrupt::enable_interrupt(Interrupt::MachineTimer);
            riscv::interrupt::enable();
        }
    }

    /// Stops the timer interrupt.
    pub fn stop_timer(&mut self) {
        riscv::interrupt::disable_interrupt(Interrupt::MachineTimer);
        Clint::new().mtimer().mtimecmp0().write(u64::MAX);
    }

    /// Sets the next timer interrupt `ticks` from now (also clears the pending one).
    pub fn rearm_timer(ticks: u32) {
        let next = MtimeClock.now() + u64::from(ticks);
        Clint::new().mtimer().mtimecmp0().write(next);
    }
}

/// Ends the emulation: status 0 on success, 1 on failure.
pub fn exit(success: bool) -> ! {
    use riscv_semihosting::debug;
    debug::exit(if success {
        debug::EXIT_SUCCESS
    } else {
        debug::EXIT_FAILURE
    });
    // Only reached when not run under a semihosting debugger or emulator.
    loop {
        riscv::asm::wfi();
    }
}

pub use riscv_semihosting::hprintln;

/// A panic handler that prints the panic and exits QEMU with status 1 (what `panic-semihosting`
/// does on Cortex-M): `ritmo_firmware::semihosting_panic_handler!();` in a binary.
#[macro_export]
macro_rules! semihosting_panic_handler {
    () => {
        #[panic_handler]
        fn panic(info: &core::panic::PanicInfo) -> ! {
            $crate::hprintln!("{}", info);
            $crate::exit(false)
        }
    };
}
