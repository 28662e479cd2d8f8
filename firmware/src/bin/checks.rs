//! ritmo on a bare microcontroller, under QEMU: exits 0 when every check passes, 1 otherwise.
//!
//! 1. A `static` limiter on a fake clock runs the design page's scenario.
//! 2. (feature `registry`) the same scenario on a limiter from a `static` registry.
//! 3. A `static` limiter on a real clock (SysTick on Cortex-M, the machine timer on RISC-V)
//!    blocks with an `embedded-hal` `DelayNs`.
//! 4. The timer interrupt handler (SysTick, or the RISC-V machine timer) and the main loop take
//!    permits from one `static` limiter thousands of times; the total admitted must be exactly
//!    what GCRA allows.
//!
//! The same source runs on Cortex-M0/M3/M4F and on riscv32imc: what differs (the clock, the
//! timer interrupt, semihosting) is behind `ritmo_firmware::Board` and friends.
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU8, Ordering};
use core::time::Duration;

#[cfg(target_arch = "arm")]
use panic_semihosting as _;
use ritmo_core::{const_config, Clock, ManualClock, RateLimiter, Reason};
use ritmo_firmware::{
    check, exit, log, Board, CycleDelay, DelayWait, MachineClock, BOARD, CLOCK_SPAN, TIMER_HZ,
};

#[cfg(target_arch = "riscv32")]
ritmo_firmware::semihosting_panic_handler!();

// ---- 1. the design page's scenario, on a static limiter and a fake clock ----

static FAKE: ManualClock = ManualClock::new();
static RADIO: RateLimiter<&ManualClock> =
    RateLimiter::new("radio", const_config!(10, Duration::from_secs(1)), &FAKE);

/// 10 per second: a burst of 10 passes, the 11th is rejected; 100 ms later exactly one more passes.
fn scenario(limiter: &RateLimiter<&ManualClock>, clock: &ManualClock, id: &str) {
    for i in 0..10 {
        check!(
            limiter.try_acquire().is_ok(),
            "burst permit {} of {}",
            i + 1,
            id
        );
    }
    let err = limiter.try_acquire().unwrap_err();
    check!(err.id() == id);
    check!(err.reason() == Reason::NoPermitInTime);
    check!(
        err.retry_after() == Duration::from_millis(100),
        "{:?}",
        err.retry_after()
    );
    clock.advance(Duration::from_millis(99));
    check!(limiter.try_acquire().is_err(), "a permit came back early");
    clock.advance(Duration::from_millis(1));
    check!(
        limiter.try_acquire().is_ok(),
        "the permit did not come back after 100 ms"
    );
    check!(
        limiter.try_acquire().is_err(),
        "more than one permit came back"
    );
    check!(limiter.available_permits() == 0);
}

// ---- 2. the same, in a static registry ----

#[cfg(feature = "registry")]
mod registry {
    use super::*;
    use ritmo_core::{Config, Registry};

    static REG_CLOCK: ManualClock = ManualClock::new();
    static REGISTRY: Registry<&ManualClock, 4> = Registry::new(&REG_CLOCK);

    pub fn run() {
        let config = Config::new(10, Duration::from_secs(1)).unwrap();
        let radio = REGISTRY.get_or_create("radio", config).unwrap();
        let again = REGISTRY.get_or_create("radio", config).unwrap();
        check!(
            core::ptr::eq(radio, again),
            "the registry made a second \"radio\""
        );
        scenario(radio, &REG_CLOCK, "radio");
        log!("registry: a static registry's limiter ran the scenario");
    }
}

// ---- 3. a real clock and a blocking wait ----

/// 2 per 20 ms (a permit every 10 ms), waiting up to 1 s for one.
static SENSOR: RateLimiter<MachineClock> = RateLimiter::new(
    "sensor",
    const_config!(2, Duration::from_millis(20)).with_max_wait(Duration::from_secs(1)),
    MachineClock {},
);

fn real_clock(board: &mut Board) {
    MODE.store(MODE_CLOCK, Ordering::SeqCst);
    board.start_clock();
    let clock = MachineClock {};
    let interval = TIMER_HZ / 100; // 10 ms in clock ticks

    check!(SENSOR.try_acquire().is_ok());
    check!(SENSOR.try_acquire().is_ok());
    check!(SENSOR.try_acquire().is_err(), "a third permit within 10 ms");

    let mut waiter = DelayWait::new(CycleDelay);
    let reservation = SENSOR.reserve().unwrap();
    let slot = reservation.slot();
    check!(slot > clock.now(), "the reservation was ready at once");
    check!(reservation.wait_with(&mut waiter).is_ok());
    let woke = clock.now();
    check!(woke >= slot, "woke at {} before the slot {}", woke, slot);

    check!(SENSOR.acquire_with(&mut waiter).is_ok());
    let woke_again = clock.now();
    check!(
        woke_again >= slot + interval,
        "{} < {} + {}",
        woke_again,
        slot,
        interval
    );
    check!(waiter.delays > 0, "the waiter never delayed");

    // The clock never goes back, across at least one SysTick wrap (the 24-bit counter) on
    // Cortex-M, across 2^20 ticks of the 64-bit machine timer on RISC-V.
    let wrap = CLOCK_SPAN;
    let mut last = clock.now();
    let target = (last / wrap + 1) * wrap + wrap / 4;
    let mut reads = 0u32;
    while last < target {
        let now = clock.now();
        check!(now >= last, "the clock went back from {} to {}", last, now);
        last = now;
        reads += 1;
    }
    log!(
        "real clock: {} Hz, woke {} ticks after the slot ({} delays); {} reads across {} ticks",
        TIMER_HZ,
        woke - slot,
        waiter.delays,
        reads,
        wrap
    );
}

// ---- 4. an interrupt handler and the main loop on one limiter ----

const RACE_BURST: u32 = 8;
/// The timer handler runs this many times during the race.
const RACE_FIRINGS: u32 = 3_000;
/// Timer period during the race, in timer ticks: 3 000 core cycles on Cortex-M (SysTick), 20 µs
/// of the 10 MHz machine timer on RISC-V.
#[cfg(target_arch = "arm")]
const RACE_RELOAD: u32 = 3_000;
#[cfg(target_arch = "riscv32")]
const RACE_RELOAD: u32 = 200;
const RACE_PERIOD: Duration = Duration::from_secs(1);

static RACE_CLOCK: ManualClock = ManualClock::new();
static SHARED: RateLimiter<&ManualClock> = RateLimiter::new(
    "shared",
    const_config!(RACE_BURST, RACE_PERIOD),
    &RACE_CLOCK,
);

// Written by the handler only (load + store: Cortex-M0 has no atomic read-modify-write).
static FIRED: AtomicU32 = AtomicU32::new(0);
static ADVANCES: AtomicU32 = AtomicU32::new(0);
static ISR_ADMITTED: AtomicU32 = AtomicU32::new(0);
static ISR_REJECTED: AtomicU32 = AtomicU32::new(0);
static PREEMPTED: AtomicU32 = AtomicU32::new(0);
/// Set by the main loop while it is inside a limiter call.
static IN_CALL: AtomicBool = AtomicBool::new(false);

fn bump(counter: &AtomicU32) {
    counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
}

/// One timer interrupt of the race: time moves on by one emission interval (a permit comes
/// back) unless the limiter is full, and every other interrupt takes a permit itself.
fn race_interrupt() {
    bump(&FIRED);
    if IN_CALL.load(Ordering::Relaxed) {
        bump(&PREEMPTED);
    }
    // The handler cannot be interrupted by the main loop, so this check-then-advance is exact:
    // advancing only a limiter that is not full never loses a permit to the burst cap.
    if SHARED.available_permits() < RACE_BURST {
        RACE_CLOCK.advance(RACE_PERIOD / RACE_BURST);
        bump(&ADVANCES);
    }
    if FIRED.load(Ordering::Relaxed) % 2 == 1 {
        match SHARED.try_acquire() {
            Ok(()) => bump(&ISR_ADMITTED),
            Err(_) => bump(&ISR_REJECTED),
        }
    }
}

fn race(board: &mut Board) {
    MODE.store(MODE_RACE, Ordering::SeqCst);
    board.start_timer(RACE_RELOAD);

    let (mut admitted, mut rejected, mut lost, mut refunded) = (0u32, 0u32, 0u32, 0u32);
    let mut iterations = 0u32;
    while FIRED.load(Ordering::Relaxed) < RACE_FIRINGS {
        iterations += 1;
        check!(iterations < 200_000_000, "the timer stopped firing");
        IN_CALL.store(true, Ordering::Relaxed);
        if iterations % 8 == 0 {
            // The reservation path: a permit taken now, then given back or kept.
            match SHARED.reserve() {
                Ok(reservation) if iterations % 16 == 0 => {
                    // Given back only if nothing took a permit since; otherwise it
                    // stays taken, and counts as admitted.
                    if reservation.cancel() {
                        refunded += 1;
                    } else {
                        lost += 1;
                    }
                }
                Ok(reservation) => {
                    reservation.commit();
                    admitted += 1;
                }
                Err(_) => rejected += 1,
            }
        } else {
            match SHARED.try_acquire() {
                Ok(()) => admitted += 1,
                Err(_) => rejected += 1,
            }
        }
        IN_CALL.store(false, Ordering::Relaxed);
    }
    board.stop_timer();

    // Take what is left, with the handler stopped.
    let mut drained = 0u32;
    while SHARED.try_acquire().is_ok() {
        drained += 1;
    }
    check!(drained <= RACE_BURST);
    let isr = ISR_ADMITTED.load(Ordering::Relaxed);
    let advances = ADVANCES.load(Ordering::Relaxed);
    let fired = FIRED.load(Ordering::Relaxed);
    let preempted = PREEMPTED.load(Ordering::Relaxed);
    let total = admitted + drained + lost + isr;
    log!(
        "race: {} interrupts ({} inside a main-loop limiter call); admitted main {} + drained {} + kept reservations {} + handler {} = {} (expected {} + {}); rejected main {} handler {}; refunds {}",
        fired, preempted, admitted, drained, lost, isr, total, RACE_BURST, advances, rejected,
        ISR_REJECTED.load(Ordering::Relaxed), refunded
    );
    check!(
        total == RACE_BURST + advances,
        "admitted {} != {}",
        total,
        RACE_BURST + advances
    );
    check!(
        advances > fired / 4,
        "time hardly moved: {} advances",
        advances
    );
    check!(isr > 0 && admitted > 0, "one side never got a permit");
    check!(
        preempted > 0,
        "no interrupt landed inside a limiter call: the race was not exercised"
    );
    check!(SHARED.available_permits() == 0);
    check!(SHARED.try_acquire().is_err());
}

// ---- the timer handler serves phase 3 (the SysTick clock's wraps) and phase 4 (race) ----

const MODE_OFF: u8 = 0;
const MODE_CLOCK: u8 = 1;
const MODE_RACE: u8 = 2;
static MODE: AtomicU8 = AtomicU8::new(MODE_OFF);

fn on_timer() {
    match MODE.load(Ordering::Relaxed) {
        #[cfg(target_arch = "arm")]
        MODE_CLOCK => ritmo_firmware::SysTickClock::on_wrap(),
        MODE_RACE => race_interrupt(),
        _ => {}
    }
}

#[cfg(target_arch = "arm")]
#[cortex_m_rt::exception]
fn SysTick() {
    on_timer();
}

#[cfg(target_arch = "riscv32")]
#[riscv_rt::core_interrupt(riscv::interrupt::Interrupt::MachineTimer)]
fn machine_timer() {
    Board::rearm_timer(RACE_RELOAD);
    on_timer();
}

#[cfg_attr(target_arch = "arm", cortex_m_rt::entry)]
#[cfg_attr(target_arch = "riscv32", riscv_rt::entry)]
fn main() -> ! {
    let mut board = Board::take();
    log!("ritmo firmware checks on {}", BOARD);

    scenario(&RADIO, &FAKE, "radio");
    log!("static limiter: burst of 10, 11th rejected, one more after 100 ms");

    #[cfg(feature = "registry")]
    registry::run();

    real_clock(&mut board);
    race(&mut board);

    log!("all checks passed");
    exit(true)
}
