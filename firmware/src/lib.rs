//! What the firmware binaries share: the emulated board's core clock, a ritmo [`Clock`] on SysTick,
//! an `embedded-hal` [`DelayNs`] and the blocking [`Wait`] built on it, and the check/exit helpers
//! that turn a failed check into a non-zero QEMU exit status.
#![no_std]

use core::cell::Cell;

use cortex_m::peripheral::syst::SystClkSource;
use cortex_m::peripheral::{SCB, SYST};
use critical_section::Mutex;
use embedded_hal::delay::DelayNs;
use ritmo_core::{Clock, FixedRateClock, Interrupted, TickRate, Wait};

/// The core clock of the emulated board, which SysTick counts (QEMU's models of the chips).
#[cfg(board = "microbit")]
pub const CPU_HZ: u64 = 16_000_000;
/// The core clock of the emulated board, which SysTick counts (QEMU's models of the chips).
#[cfg(board = "lm3s6965evb")]
pub const CPU_HZ: u64 = 12_500_000;
/// The core clock of the emulated board, which SysTick counts (QEMU's models of the chips).
#[cfg(board = "mps2_an386")]
pub const CPU_HZ: u64 = 25_000_000;

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
        ::cortex_m_semihosting::hprintln!($($arg)*)
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
            ::cortex_m_semihosting::hprintln!(
                "FAIL {}:{}: {} {}", file!(), line!(), stringify!($cond), format_args!($($arg)+)
            );
            $crate::exit(false);
        }
    };
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
