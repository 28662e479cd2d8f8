//! ritmo under Embassy, in QEMU: embassy-executor runs two tasks that `acquire_async().await` permits
//! from one `static` limiter; embassy-time runs on a SysTick time driver written below (1 ms
//! ticks). Exits 0 when every check passes.
//!
//! Without the `ritmo-embassy` feature the firmware uses a local clock on `embassy_time::Instant`
//! and a local `acquire` (reserve, `Timer::at(slot)`, commit); with it, the adapter's
//! `EmbassyClock` and its `acquire_async().await`.
#![no_std]
#![no_main]

use core::cell::{Cell, RefCell};
use core::sync::atomic::{AtomicU32, Ordering};
use core::task::Waker;
use core::time::Duration;

use cortex_m::peripheral::syst::SystClkSource;
use cortex_m::peripheral::{SCB, SYST};
use cortex_m_rt::exception;
use critical_section::Mutex;
use embassy_executor::Spawner;
use embassy_time::Instant;
use panic_semihosting as _;
use ritmo_core::{const_config, RateLimiter};
use ritmo_firmware::{check, exit, log, BOARD, CPU_HZ};

// ---- the time driver: SysTick interrupts every millisecond ----

const RELOAD: u32 = (CPU_HZ / 1_000) as u32 - 1;

struct SysTickDriver {
    millis: Mutex<Cell<u64>>,
    /// The one pending alarm: when, and whom to wake (a newer waker wakes the older one, which
    /// then registers again).
    alarm: Mutex<RefCell<Option<(u64, Waker)>>>,
}

impl SysTickDriver {
    fn start(&self, syst: &mut SYST) {
        syst.set_clock_source(SystClkSource::Core);
        syst.set_reload(RELOAD);
        syst.clear_current();
        syst.enable_interrupt();
        syst.enable_counter();
    }

    fn on_tick(&self) {
        let due = critical_section::with(|cs| {
            let millis = self.millis.borrow(cs);
            millis.set(millis.get() + 1);
            let mut alarm = self.alarm.borrow_ref_mut(cs);
            match alarm.as_ref() {
                Some((at, _)) if *at <= millis.get() => alarm.take().map(|(_, waker)| waker),
                _ => None,
            }
        });
        if let Some(waker) = due {
            waker.wake();
        }
    }
}

impl embassy_time_driver::Driver for SysTickDriver {
    fn now(&self) -> u64 {
        critical_section::with(|cs| {
            let millis = self.millis.borrow(cs).get();
            // A tick that has elapsed but whose interrupt has not run yet.
            if SCB::is_pendst_pending() {
                millis + 1
            } else {
                millis
            }
        })
    }

    fn schedule_wake(&self, at: u64, waker: &Waker) {
        let now = self.now();
        if at <= now {
            waker.wake_by_ref();
            return;
        }
        let displaced = critical_section::with(|cs| {
            let mut alarm = self.alarm.borrow_ref_mut(cs);
            match alarm.take() {
                Some((old_at, old)) if old.will_wake(waker) => {
                    *alarm = Some((old_at.min(at), old));
                    None
                }
                Some((_, old)) => {
                    *alarm = Some((at, waker.clone()));
                    Some(old)
                }
                None => {
                    *alarm = Some((at, waker.clone()));
                    None
                }
            }
        });
        if let Some(old) = displaced {
            old.wake();
        }
    }
}

embassy_time_driver::time_driver_impl!(static DRIVER: SysTickDriver = SysTickDriver {
    millis: Mutex::new(Cell::new(0)),
    alarm: Mutex::new(RefCell::new(None)),
});

#[exception]
fn SysTick() {
    DRIVER.on_tick();
}

// ---- the limiter and its async acquire ----

#[cfg(not(feature = "ritmo-embassy"))]
mod adapter {
    //! What `ritmo-embassy` provides, written against ritmo-core's public API.
    use embassy_time::{Instant, Timer};
    use ritmo_core::{Clock, FixedRateClock, RateLimitExceeded, RateLimiter, TickRate};

    /// embassy-time's clock.
    #[derive(Debug, Clone, Copy)]
    pub struct EmbassyClock;

    impl Clock for EmbassyClock {
        fn now(&self) -> u64 {
            Instant::now().as_ticks()
        }
        fn tick_rate(&self) -> TickRate {
            Self::TICK_RATE
        }
    }

    impl FixedRateClock for EmbassyClock {
        const TICK_RATE: TickRate = TickRate::from_hz(embassy_time::TICK_HZ);
    }

    /// Reserves a permit, sleeps on an embassy timer until its slot, keeps it.
    pub trait AcquireExt {
        async fn acquire(&self) -> Result<(), RateLimitExceeded>;
    }

    impl AcquireExt for RateLimiter<EmbassyClock> {
        async fn acquire(&self) -> Result<(), RateLimitExceeded> {
            let reservation = self.reserve()?;
            Timer::at(Instant::from_ticks(reservation.slot())).await;
            reservation.commit();
            Ok(())
        }
    }
}

#[cfg(not(feature = "ritmo-embassy"))]
use adapter::{AcquireExt, EmbassyClock};
#[cfg(feature = "ritmo-embassy")]
use ritmo_embassy::*;

/// 2 per 20 ms: a burst of 2, then a permit every 10 ms; waits of up to 1 s.
static RADIO: RateLimiter<EmbassyClock> = RateLimiter::new(
    "radio",
    const_config!(2, Duration::from_millis(20)).with_max_wait(Duration::from_secs(1)),
    EmbassyClock,
);
const INTERVAL_MS: u64 = 10;
const PER_TASK: u32 = 4;
static DONE: AtomicU32 = AtomicU32::new(0);

#[embassy_executor::task]
async fn worker() {
    for _ in 0..PER_TASK {
        check!(
            RADIO.acquire_async().await.is_ok(),
            "worker: acquire failed"
        );
    }
    DONE.store(DONE.load(Ordering::SeqCst) + PER_TASK, Ordering::SeqCst);
}

#[embassy_executor::main]
async fn main(spawner: Spawner) {
    let mut core = cortex_m::Peripherals::take().unwrap();
    DRIVER.start(&mut core.SYST);
    log!("ritmo embassy firmware on {}", BOARD);

    let start = Instant::now().as_ticks();
    spawner.spawn(worker()).unwrap();
    for i in 0..PER_TASK {
        check!(
            RADIO.acquire_async().await.is_ok(),
            "main: acquire {} failed",
            i
        );
    }
    while DONE.load(Ordering::SeqCst) < PER_TASK {
        embassy_time::Timer::after_millis(1).await;
    }
    let end = Instant::now().as_ticks();
    // 8 permits from a full burst of 2: the 8th cannot come before 6 intervals have passed.
    let taken = u64::from(2 * PER_TASK);
    let earliest = start + (taken - 2) * INTERVAL_MS;
    log!(
        "embassy: two tasks acquired {} permits in {} ms (at least {} ms by GCRA)",
        taken,
        end - start,
        earliest - start
    );
    check!(end >= earliest, "{} permits by {} ms", taken, end - start);
    check!(RADIO.try_acquire().is_err(), "the limiter was not drained");
    #[cfg(feature = "annotated")]
    annotated::run().await;
    exit(true)
}

#[cfg(feature = "annotated")]
mod annotated {
    //! A `#[ritmo::limited]` wrapper on firmware: the generated async method sleeps on an
    //! embassy-time `Timer` for its slot, the plain one rejects at once.
    use embassy_time::Instant;
    use ritmo::embassy::EmbassyClock;
    use ritmo::{RateLimitExceeded, Registry};
    use ritmo_firmware::{check, log};

    #[derive(Debug)]
    pub struct Busy;

    impl From<RateLimitExceeded> for Busy {
        fn from(_: RateLimitExceeded) -> Self {
            Busy
        }
    }

    #[ritmo::limited]
    #[allow(async_fn_in_trait)]
    pub trait Sensor {
        /// 2 per 20 ms, waiting up to 1 s.
        #[rate_limited(permits = 2, period = "20ms", max_wait = "1s")]
        async fn sample(&self) -> Result<u16, Busy>;

        /// 1 per hour, no waiting.
        #[rate_limited(permits = 1, period = "1h")]
        fn calibrate(&mut self) -> Result<(), Busy>;
    }

    pub struct Adc;

    impl Sensor for Adc {
        async fn sample(&self) -> Result<u16, Busy> {
            Ok(512)
        }
        fn calibrate(&mut self) -> Result<(), Busy> {
            Ok(())
        }
    }

    static REGISTRY: Registry<EmbassyClock, 4> = Registry::new(EmbassyClock);

    pub async fn run() {
        let mut adc = SensorLimited::new(Adc, &REGISTRY).unwrap();
        let start = Instant::now().as_ticks();
        for _ in 0..6 {
            check!(adc.sample().await.is_ok(), "annotated: sample failed");
        }
        let elapsed = Instant::now().as_ticks() - start;
        // A burst of 2, then a permit every 10 ms: the 6th waits at least 4 intervals.
        check!(elapsed >= 40, "annotated: 6 samples in {} ms", elapsed);
        check!(adc.calibrate().is_ok(), "annotated: the first calibration");
        check!(
            adc.calibrate().is_err(),
            "annotated: the second is rejected at once"
        );
        log!(
            "annotated: 6 samples in {} ms (at least 40), calibration limited",
            elapsed
        );
    }
}
