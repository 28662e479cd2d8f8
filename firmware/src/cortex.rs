//! Cortex-M (thumbv6m, thumbv7m, thumbv7em): SysTick as the clock and the race's timer
//! interrupt, semihosting through `cortex-m-semihosting`.

use core::cell::Cell;

use cortex_m::peripheral::syst::SystClkSource;
use cortex_m::peripheral::{SCB, SYST};
use critical_section::Mutex;
use embedded_hal::delay::DelayNs;
use ritmo_core::{Clock, FixedRateClock, TickRate};

/// The core clock of the emulated board, which SysTick counts (QEMU's models of the chips).
#[cfg(board = "microbit")]
pub const CPU_HZ: u64 = 16_000_000;
/// The core clock of the emulated board, which SysTick counts (QEMU's models of the chips).
#[cfg(board = "lm3s6965evb")]
pub const CPU_HZ: u64 = 12_500_000;
/// The core clock of the emulated board, which SysTick counts (QEMU's models of the chips).
#[cfg(board = "mps2_an386")]
pub const CPU_HZ: u64 = 25_000_000;

/// Ticks per second of the clock the checks run on (SysTick counts core cycles).
pub const TIMER_HZ: u64 = CPU_HZ;

/// The board's name, for the log.
#[cfg(board = "microbit")]
pub const BOARD: &str = "microbit (Cortex-M0)";
/// The board's name, for the log.
#[cfg(board = "lm3s6965evb")]
pub const BOARD: &str = "lm3s6965evb (Cortex-M3)";
/// The board's name, for the log.
#[cfg(board = "mps2_an386")]
pub const BOARD: &str = "mps2-an386 (Cortex-M4F)";

/// SysTick's reload value while it runs as the clock: the full 24 bits.
pub const CLOCK_RELOAD: u32 = 0x00FF_FFFF;

/// Completed SysTick periods since [`SysTickClock::start`].
static WRAPS: Mutex<Cell<u64>> = Mutex::new(Cell::new(0));

/// A ritmo clock on SysTick: a 24-bit down-counter at the core clock, extended to 64 bits by
/// counting its wraps in the SysTick handler ([`SysTickClock::on_wrap`]). Cortex-M0 has no DWT
/// cycle counter, so SysTick is the one timer every core here has.
#[derive(Debug, Clone, Copy, Default)]
pub struct SysTickClock;

impl SysTickClock {
    /// Starts SysTick as the clock, with its wrap interrupt; the reading starts at 0.
    pub fn start(syst: &mut SYST) {
        syst.disable_interrupt();
        syst.disable_counter();
        syst.set_clock_source(SystClkSource::Core);
        syst.set_reload(CLOCK_RELOAD);
        syst.clear_current();
        syst.enable_counter();
        // The counter reads 0 until it first loads the reload value.
        while SYST::get_current() == 0 {}
        critical_section::with(|cs| {
            SCB::clear_pendst();
            WRAPS.borrow(cs).set(0);
        });
        syst.enable_interrupt();
    }

    /// Counts one wrap; the SysTick handler calls it while SysTick runs as the clock.
    pub fn on_wrap() {
        critical_section::with(|cs| {
            let wraps = WRAPS.borrow(cs);
            wraps.set(wraps.get() + 1);
        });
    }
}

impl Clock for SysTickClock {
    fn now(&self) -> u64 {
        critical_section::with(|cs| {
            let period = u64::from(CLOCK_RELOAD) + 1;
            let mut wraps = WRAPS.borrow(cs).get();
            let mut current = SYST::get_current();
            // Wrapped, but the handler has not run yet (interrupts are masked here): count that
            // wrap now, and read the counter again since it may have wrapped after the first read.
            if SCB::is_pendst_pending() {
                wraps += 1;
                current = SYST::get_current();
            }
            // The counter runs RELOAD, RELOAD - 1, .., 1, 0 and wraps (pends the interrupt) as it
            // reaches 0: 0 is the first tick of the next period, RELOAD the second.
            let into_period = (period - u64::from(current)) % period;
            wraps * period + into_period
        })
    }

    fn tick_rate(&self) -> TickRate {
        Self::TICK_RATE
    }
}

impl FixedRateClock for SysTickClock {
    const TICK_RATE: TickRate = TickRate::from_hz(CPU_HZ);
}

/// A busy-wait [`DelayNs`] that counts core cycles (`cortex_m::asm::delay`). Under emulation a
/// cycle is not a fixed slice of time, which is why [`DelayWait`] checks the clock after each delay.
#[derive(Debug, Clone, Copy, Default)]
pub struct CycleDelay;

impl DelayNs for CycleDelay {
    fn delay_ns(&mut self, ns: u32) {
        let cycles = (u64::from(ns) * CPU_HZ).div_ceil(1_000_000_000);
        cortex_m::asm::delay(cycles.clamp(1, u64::from(u32::MAX)) as u32);
    }
}

/// Ends the emulation: status 0 on success, 1 on failure.
pub fn exit(success: bool) -> ! {
    use cortex_m_semihosting::debug;
    debug::exit(if success {
        debug::EXIT_SUCCESS
    } else {
        debug::EXIT_FAILURE
    });
    // Only reached when not run under a semihosting debugger or emulator.
    loop {
        cortex_m::asm::wfi();
    }
}

pub use cortex_m_semihosting::hprintln;

/// The clock the checks run on: SysTick, extended to 64 bits.
pub type MachineClock = SysTickClock;

/// How far the clock check reads the clock: past one wrap of the 24-bit SysTick counter.
pub const CLOCK_SPAN: u64 = CLOCK_RELOAD as u64 + 1;

/// The board's peripherals the checks use.
pub struct Board {
    syst: SYST,
}

impl Board {
    /// Takes the peripherals (once).
    pub fn take() -> Self {
        let core = cortex_m::Peripherals::take().unwrap();
        Board { syst: core.SYST }
    }

    /// Starts the clock; on Cortex-M SysTick's wrap interrupt then extends it to 64 bits, so
    /// the timer handler must call [`SysTickClock::on_wrap`] until [`start_timer`](Self::start_timer).
    pub fn start_clock(&mut self) {
        SysTickClock::start(&mut self.syst);
    }

    /// Turns the clock off and fires the timer interrupt every `ticks` timer ticks instead.
    pub fn start_timer(&mut self, ticks: u32) {
        let syst = &mut self.syst;
        syst.disable_counter();
        syst.disable_interrupt();
        syst.set_reload(ticks);
        syst.clear_current();
        syst.enable_interrupt();
        syst.enable_counter();
    }

    /// Stops the timer interrupt and clears a pending one.
    pub fn stop_timer(&mut self) {
        self.syst.disable_interrupt();
        self.syst.disable_counter();
        SCB::clear_pendst();
    }

    /// Re-arms a one-shot timer from its handler: nothing to do on SysTick (it reloads itself).
    pub fn rearm_timer(_ticks: u32) {}
}
