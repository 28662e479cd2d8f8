//! ritmo on a bare microcontroller, under QEMU: exits 0 when every check passes, 1 otherwise.
//!
//! 1. A `static` limiter on a fake clock runs the design page's scenario; then a limiter with a
//!    listener runs it, which hears each refusal (a listened limiter refuses on a path of its
//!    own, out of line on targets without 64-bit atomics).
//! 2. (feature `registry`) the same scenario on a limiter from a `static` registry.
//! 3. A `static` limiter on a real clock (SysTick on Cortex-M, the machine timer on RISC-V)
//!    blocks with an `embedded-hal` `DelayNs`.
//! 4. The timer interrupt handler (SysTick, or the RISC-V machine timer) and the main loop take
//!    permits from one `static` limiter thousands of times; the total admitted must be exactly
//!    what GCRA allows.
//! 5. A `static` keyed table of 8 keys: each key its own burst, a 9th live key refused with
//!    `KeyCapacity` and the exact `retry_after`, an idle key dropped exactly when idle; then the
//!    timer handler and the main loop take permits for three keys of one table, and each key's
//!    total admitted must be exactly what GCRA allows.
//! 6. `static` bands (two limits on one stream): each band binding in turn, a refused call taking
//!    nothing, a waiting reservation cancelled exactly; then the same race on one `Bands`.
//!
//! The same source runs on Cortex-M0/M3/M4F and on riscv32imc: what differs (the clock, the
//! timer interrupt, semihosting) is behind `ritmo_firmware::Board` and friends.
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU8, Ordering};
use core::time::Duration;

#[cfg(target_arch = "arm")]
use panic_semihosting as _;
use ritmo_core::{const_config, Clock, Event, Listener, ManualClock, RateLimiter, Reason};
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

// ---- 1b. the same, heard by a listener ----

/// Counts the refusals it hears.
struct Refusals(AtomicU32);

impl Listener for Refusals {
    fn on_event(&self, event: &Event) {
        if let Event::Rejected(_) = event {
            bump(&self.0);
        }
    }
}

static HEARD: Refusals = Refusals(AtomicU32::new(0));
static LISTENED_CLOCK: ManualClock = ManualClock::new();
static LISTENED: RateLimiter<&ManualClock> = RateLimiter::new(
    "listened",
    const_config!(10, Duration::from_secs(1)),
    &LISTENED_CLOCK,
)
.with_listener(&HEARD);

/// The scenario refuses three calls; the listener hears each, and each is an error.
fn listened() {
    scenario(&LISTENED, &LISTENED_CLOCK, "listened");
    let heard = HEARD.0.load(Ordering::Relaxed);
    check!(heard == 3, "the listener heard {} refusals of 3", heard);
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

// Written by the handler only (load + store: Cortex-M0 has no atomic read-modify-write), and
// reset by `run_race` while the timer is stopped.
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

/// What every race's handler does first: counts the firing, and whether it landed inside a
/// main-loop limiter call. Returns the firing's number (1, 2, ..).
fn race_firing() -> u32 {
    bump(&FIRED);
    if IN_CALL.load(Ordering::Relaxed) {
        bump(&PREEMPTED);
    }
    FIRED.load(Ordering::Relaxed)
}

/// Runs one race: the timer handler runs in `mode` while the main loop calls `step` (with the
/// iteration's number, 1, 2, ..) until the handler has fired `RACE_FIRINGS` times; then the
/// timer is stopped. Returns how many steps the main loop took.
fn run_race(board: &mut Board, mode: u8, mut step: impl FnMut(u32)) -> u32 {
    for counter in [&FIRED, &ADVANCES, &ISR_ADMITTED, &ISR_REJECTED, &PREEMPTED] {
        counter.store(0, Ordering::Relaxed);
    }
    MODE.store(mode, Ordering::SeqCst);
    board.start_timer(RACE_RELOAD);
    let mut iterations = 0u32;
    while FIRED.load(Ordering::Relaxed) < RACE_FIRINGS {
        iterations += 1;
        check!(iterations < 200_000_000, "the timer stopped firing");
        IN_CALL.store(true, Ordering::Relaxed);
        step(iterations);
        IN_CALL.store(false, Ordering::Relaxed);
    }
    board.stop_timer();
    MODE.store(MODE_OFF, Ordering::SeqCst);
    iterations
}

/// The checks every race ends with: time moved, both sides got permits, and interrupts landed
/// inside main-loop limiter calls (otherwise nothing raced).
fn race_was_exercised(main_admitted: u32) {
    let fired = FIRED.load(Ordering::Relaxed);
    let advances = ADVANCES.load(Ordering::Relaxed);
    check!(
        advances > fired / 4,
        "time hardly moved: {} advances",
        advances
    );
    check!(
        ISR_ADMITTED.load(Ordering::Relaxed) > 0 && main_admitted > 0,
        "one side never got a permit"
    );
    check!(
        PREEMPTED.load(Ordering::Relaxed) > 0,
        "no interrupt landed inside a limiter call: the race was not exercised"
    );
}

/// One timer interrupt of the race: time moves on by one emission interval (a permit comes
/// back) unless the limiter is full, and every other interrupt takes a permit itself.
fn race_interrupt() {
    let fired = race_firing();
    // The handler cannot be interrupted by the main loop, so this check-then-advance is exact:
    // advancing only a limiter that is not full never loses a permit to the burst cap.
    if SHARED.available_permits() < RACE_BURST {
        RACE_CLOCK.advance(RACE_PERIOD / RACE_BURST);
        bump(&ADVANCES);
    }
    if fired % 2 == 1 {
        match SHARED.try_acquire() {
            Ok(()) => bump(&ISR_ADMITTED),
            Err(_) => bump(&ISR_REJECTED),
        }
    }
}

fn race(board: &mut Board) {
    let (mut admitted, mut rejected, mut lost, mut refunded) = (0u32, 0u32, 0u32, 0u32);
    run_race(board, MODE_RACE, |iteration| {
        if iteration % 8 == 0 {
            // The reservation path: a permit taken now, then given back or kept.
            match SHARED.reserve() {
                Ok(reservation) if iteration % 16 == 0 => {
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
    });

    // Take what is left, with the handler stopped.
    let mut drained = 0u32;
    while SHARED.try_acquire().is_ok() {
        drained += 1;
    }
    check!(drained <= RACE_BURST);
    let isr = ISR_ADMITTED.load(Ordering::Relaxed);
    let advances = ADVANCES.load(Ordering::Relaxed);
    let total = admitted + drained + lost + isr;
    log!(
        "race: {} interrupts ({} inside a main-loop limiter call); admitted main {} + drained {} + kept reservations {} + handler {} = {} (expected {} + {}); rejected main {} handler {}; refunds {}",
        FIRED.load(Ordering::Relaxed), PREEMPTED.load(Ordering::Relaxed), admitted, drained, lost,
        isr, total, RACE_BURST, advances, rejected, ISR_REJECTED.load(Ordering::Relaxed), refunded
    );
    check!(
        total == RACE_BURST + advances,
        "admitted {} != {}",
        total,
        RACE_BURST + advances
    );
    race_was_exercised(admitted);
    check!(SHARED.available_permits() == 0);
    check!(SHARED.try_acquire().is_err());
}

// ---- 5. a static keyed table of 8 keys: scenario, then an interrupt racing the main loop ----

mod keyed {
    use super::*;
    use ritmo_core::keyed::KeyedLimiter;

    static PEERS_CLOCK: ManualClock = ManualClock::new();
    /// 2 per second per peer (a permit every 500 ms), for up to 8 peers limited at once.
    static PEERS: KeyedLimiter<u32, &ManualClock, 8> = KeyedLimiter::new(
        "peers",
        const_config!(2, Duration::from_secs(1)),
        &PEERS_CLOCK,
        0x5eed_0f_0123_4567_89ab_cdef,
    );

    /// Each key its own burst; a 9th live key refused with `KeyCapacity` until the soonest key is
    /// idle; an idle key dropped exactly then, and back with a full burst.
    pub fn scenario() {
        let clock = &PEERS_CLOCK;
        // Peers 1..=8 each spend their burst of 2, 10 ms apart: peer k is idle again at
        // (k - 1) * 10 ms + 1 s.
        for peer in 1..=8u32 {
            check!(
                PEERS.try_acquire(&peer).is_ok(),
                "peer {} first permit",
                peer
            );
            check!(
                PEERS.try_acquire(&peer).is_ok(),
                "peer {} second permit",
                peer
            );
            let err = PEERS.try_acquire(&peer).unwrap_err();
            check!(err.id() == "peers");
            check!(err.reason() == Reason::NoPermitInTime, "peer {}", peer);
            check!(
                err.retry_after() == Duration::from_millis(500),
                "peer {}: {:?}",
                peer,
                err.retry_after()
            );
            clock.advance(Duration::from_millis(10));
        }
        // Now 80 ms. Every slot holds a live key: a 9th is refused until peer 1 is idle (1 s).
        check!(PEERS.len() == 8 && PEERS.keys_held() == 8);
        let err = PEERS.try_acquire(&9).unwrap_err();
        check!(err.reason() == Reason::KeyCapacity, "{:?}", err.reason());
        check!(
            err.retry_after() == Duration::from_millis(920),
            "{:?}",
            err.retry_after()
        );
        check!(PEERS.available_permits(&9) == 0);
        check!(PEERS.retry_after(&9) == Duration::from_millis(920));
        // A key already held carries on: peer 1's next permit is 500 ms after its burst's end.
        let err = PEERS.try_acquire(&1).unwrap_err();
        check!(err.reason() == Reason::NoPermitInTime);
        check!(
            err.retry_after() == Duration::from_millis(420),
            "{:?}",
            err.retry_after()
        );
        // 1 ns before peer 1 is idle: still refused, and nothing was dropped.
        clock.advance(Duration::from_millis(920) - Duration::from_nanos(1));
        let err = PEERS.try_acquire(&9).unwrap_err();
        check!(err.reason() == Reason::KeyCapacity);
        check!(
            err.retry_after() == Duration::from_nanos(1),
            "{:?}",
            err.retry_after()
        );
        check!(PEERS.keys_held() == 8);
        // Peer 1 idle: its slot goes to peer 9, which gets a full burst.
        clock.advance(Duration::from_nanos(1));
        check!(PEERS.try_acquire(&9).is_ok(), "peer 9 found no room at 1 s");
        check!(PEERS.available_permits(&9) == 1);
        check!(PEERS.len() == 8 && PEERS.keys_held() == 8);
        // Peer 1 was dropped: it comes back as a new key, which the full table has no room for
        // until peer 2 is idle (1.01 s).
        let err = PEERS.try_acquire(&1).unwrap_err();
        check!(err.reason() == Reason::KeyCapacity);
        check!(
            err.retry_after() == Duration::from_millis(10),
            "{:?}",
            err.retry_after()
        );
        clock.advance(Duration::from_millis(10));
        check!(
            PEERS.try_acquire(&1).is_ok() && PEERS.try_acquire(&1).is_ok(),
            "peer 1 did not come back with a full burst"
        );
        check!(PEERS.try_acquire(&1).is_err());
        // Once every key is idle, the table is empty again.
        clock.advance(Duration::from_secs(1));
        check!(PEERS.is_empty());
        check!(PEERS.reclaim_idle() == 0 && PEERS.keys_held() == 0);
        log!("keyed: 8 peers' bursts, a 9th refused (KeyCapacity, 920 ms), peer 1 dropped exactly when idle");
    }

    // The race: the handler and the main loop take permits for three keys of one table.

    const KEYS: [u32; 3] = [11, 22, 33];
    const BURST: u32 = 4;
    const PERIOD: Duration = Duration::from_secs(1);
    static RACE_CLOCK: ManualClock = ManualClock::new();
    static TABLE: KeyedLimiter<u32, &ManualClock, 8> =
        KeyedLimiter::new("table", const_config!(BURST, PERIOD), &RACE_CLOCK, 0x7ab1e);
    /// Permits the handler took, per key.
    static ISR_PER_KEY: [AtomicU32; 3] = [const { AtomicU32::new(0) }; 3];

    /// One timer interrupt: time moves on by one emission interval (a permit comes back to every
    /// key) unless a key is full, and every other interrupt takes a permit for each key.
    pub fn interrupt() {
        let fired = race_firing();
        // As in the single limiter's race: advancing only while no key is full never loses a
        // permit to a burst cap (nor drops a key, which only an idle, full key may be).
        if KEYS.iter().all(|key| TABLE.available_permits(key) < BURST) {
            RACE_CLOCK.advance(PERIOD / BURST);
            bump(&ADVANCES);
        }
        if fired % 2 == 1 {
            for (key, admitted) in KEYS.iter().zip(&ISR_PER_KEY) {
                match TABLE.try_acquire(key) {
                    Ok(()) => {
                        bump(&ISR_ADMITTED);
                        bump(admitted);
                    }
                    Err(_) => bump(&ISR_REJECTED),
                }
            }
        }
    }

    pub fn race(board: &mut Board) {
        for counter in &ISR_PER_KEY {
            counter.store(0, Ordering::Relaxed);
        }
        let mut admitted = [0u32; 3];
        let mut kept = [0u32; 3];
        let (mut rejected, mut refunded) = (0u32, 0u32);
        run_race(board, MODE_KEYED_RACE, |iteration| {
            let i = iteration as usize % KEYS.len();
            let key = &KEYS[i];
            if iteration % 8 == 0 {
                match TABLE.reserve(key) {
                    // Given back only if nothing took a permit for the key since.
                    Ok(reservation) if iteration % 16 == 0 => {
                        if reservation.cancel() {
                            refunded += 1;
                        } else {
                            kept[i] += 1;
                        }
                    }
                    Ok(reservation) => {
                        reservation.commit();
                        admitted[i] += 1;
                    }
                    Err(_) => rejected += 1,
                }
            } else {
                match TABLE.try_acquire(key) {
                    Ok(()) => admitted[i] += 1,
                    Err(_) => rejected += 1,
                }
            }
        });

        let advances = ADVANCES.load(Ordering::Relaxed);
        for (i, key) in KEYS.iter().enumerate() {
            let mut drained = 0u32;
            while TABLE.try_acquire(key).is_ok() {
                drained += 1;
            }
            let isr = ISR_PER_KEY[i].load(Ordering::Relaxed);
            let total = admitted[i] + kept[i] + isr + drained;
            log!(
                "keyed race, key {}: admitted main {} + kept reservations {} + handler {} + drained {} = {} (expected {} + {})",
                key, admitted[i], kept[i], isr, drained, total, BURST, advances
            );
            check!(
                total == BURST + advances,
                "key {}: admitted {} != {}",
                key,
                total,
                BURST + advances
            );
            check!(
                isr > 0 && admitted[i] > 0,
                "key {}: one side never got a permit",
                key
            );
            check!(TABLE.available_permits(key) == 0);
        }
        log!(
            "keyed race: {} interrupts ({} inside a main-loop call); rejected main {} handler {}; refunds {}",
            FIRED.load(Ordering::Relaxed),
            PREEMPTED.load(Ordering::Relaxed),
            rejected,
            ISR_REJECTED.load(Ordering::Relaxed),
            refunded
        );
        race_was_exercised(admitted.iter().sum());
        check!(TABLE.len() == KEYS.len());
    }
}

// ---- 6. static bands (two limits on one stream): scenario, then an interrupt race ----

mod bands {
    use super::*;
    use ritmo_core::Bands;

    static LINK_CLOCK: ManualClock = ManualClock::new();
    /// 2 per second and 3 per minute; a call may wait up to 30 s for its slot.
    static LINK: Bands<&ManualClock, 2> = Bands::new(
        "link",
        [
            const_config!(2, Duration::from_secs(1)),
            const_config!(3, Duration::from_secs(60)),
        ],
        &LINK_CLOCK,
    )
    .with_max_wait(Duration::from_secs(30));

    fn refused_for(expected: Duration) {
        let err = LINK.try_acquire().unwrap_err();
        check!(err.id() == "link" && err.reason() == Reason::NoPermitInTime);
        check!(
            err.retry_after() == expected,
            "retry_after {:?}, expected {:?}",
            err.retry_after(),
            expected
        );
    }

    /// A call passes only when both bands have room, waits for the slower one, and a refused
    /// call takes nothing from the band that had room.
    pub fn scenario() {
        let clock = &LINK_CLOCK;
        check!(LINK.try_acquire().is_ok() && LINK.try_acquire().is_ok());
        refused_for(Duration::from_millis(500)); // the per-second band
        check!(LINK.available_permits_per_band() == [0, 1]);
        clock.advance(Duration::from_millis(500));
        check!(LINK.try_acquire().is_ok());
        // Both spent; the per-minute band's next permit is 20 s after the first call.
        check!(LINK.available_permits_per_band() == [0, 0]);
        refused_for(Duration::from_millis(19_500));
        clock.advance(Duration::from_secs(1));
        // The per-second band is full again, and a refused call leaves it so.
        check!(LINK.available_permits_per_band() == [2, 0]);
        refused_for(Duration::from_millis(18_500));
        check!(LINK.available_permits_per_band() == [2, 0]);
        clock.advance(Duration::from_millis(18_500) - Duration::from_nanos(1));
        refused_for(Duration::from_nanos(1));
        clock.advance(Duration::from_nanos(1));
        check!(LINK.try_acquire().is_ok(), "no permit at 20 s");
        check!(LINK.available_permits_per_band() == [1, 0]);
        // A reservation waits for the slowest band (the per-minute one: 20 s); cancelled, it
        // puts both bands back as they were, the per-second one included although it was
        // charged as of the slot.
        let reservation = LINK.reserve().unwrap();
        check!(
            reservation.wait_time() == Duration::from_secs(20),
            "{:?}",
            reservation.wait_time()
        );
        check!(LINK.available_permits_per_band() == [0, 0]);
        check!(reservation.cancel(), "the cancel gave nothing back");
        check!(LINK.available_permits_per_band() == [1, 0]);
        refused_for(Duration::from_secs(20));
        // Waiting for it (the fake clock advances to the slot).
        check!(LINK.acquire_advancing().is_ok());
        check!(clock.now() == 40_000_000_000, "woke at {}", clock.now());
        refused_for(Duration::from_secs(20));
        log!("bands: 2/s and 3/min, each binding in turn; a waiting reservation cancelled exactly");
    }

    // The race: the handler and the main loop take permits from one static `Bands`. Both bands
    // emit a permit every 125 ms; the first, 4 per 500 ms, is the tighter one, and the second
    // (8 per second) always has 4 permits more. So the second never refuses a call the first
    // admitted, and no call is ever refused half-way with a charge left behind (the tail rule
    // gives back a partial charge only if nothing was charged after it): what the calls admit
    // is then exactly the first band's GCRA count, and both bands stay in step.
    //
    // The first band is emptied before the race and time moves on only while it is at least 2
    // permits short of full, so it is never full during the race: a call the handler
    // interrupts between its two bands' charges never meets a full second band (one the
    // handler would charge as of a later instant than the call's own slot, which can only
    // make that band stricter, by design, and would blur the second band's count).

    const BURST: u32 = 4;
    const EXTRA: u32 = 4;
    const INTERVAL: Duration = Duration::from_millis(125);
    static RACE_CLOCK: ManualClock = ManualClock::new();
    static UPLINK: Bands<&ManualClock, 2> = Bands::new(
        "uplink",
        [
            const_config!(BURST, Duration::from_millis(500)),
            const_config!(BURST + EXTRA, Duration::from_secs(1)),
        ],
        &RACE_CLOCK,
    );

    /// One timer interrupt: time moves on by one emission interval while the first band is at
    /// least 2 short of full, and every other interrupt takes a permit.
    pub fn interrupt() {
        let fired = race_firing();
        if UPLINK.available_permits_per_band()[0] < BURST - 1 {
            RACE_CLOCK.advance(INTERVAL);
            bump(&ADVANCES);
        }
        if fired % 2 == 1 {
            match UPLINK.try_acquire() {
                Ok(()) => bump(&ISR_ADMITTED),
                Err(_) => bump(&ISR_REJECTED),
            }
        }
    }

    pub fn race(board: &mut Board) {
        check!(
            UPLINK.try_acquire_n(BURST).is_ok(),
            "the first band's burst"
        );
        let (mut admitted, mut rejected) = (BURST, 0u32);
        run_race(board, MODE_BANDS_RACE, |iteration| {
            // One permit, two at once, or one through a reservation kept at once.
            let (taken, permits) = match iteration % 4 {
                0 => (UPLINK.try_acquire_n(2).is_ok(), 2),
                1 => (UPLINK.reserve().map(|r| r.commit()).is_ok(), 1),
                _ => (UPLINK.try_acquire().is_ok(), 1),
            };
            if taken {
                admitted += permits;
            } else {
                rejected += 1;
            }
        });
        check!(
            UPLINK.available_permits_per_band()[1] >= EXTRA,
            "the second band ran short"
        );
        let mut drained = 0u32;
        while UPLINK.try_acquire().is_ok() {
            drained += 1;
        }
        let isr = ISR_ADMITTED.load(Ordering::Relaxed);
        let advances = ADVANCES.load(Ordering::Relaxed);
        let total = admitted + isr + drained;
        log!(
            "bands race: {} interrupts ({} inside a main-loop call); permits admitted main {} + handler {} + drained {} = {} (expected {} + {}); rejected main {} handler {}",
            FIRED.load(Ordering::Relaxed), PREEMPTED.load(Ordering::Relaxed), admitted, isr,
            drained, total, BURST, advances, rejected, ISR_REJECTED.load(Ordering::Relaxed)
        );
        check!(
            total == BURST + advances,
            "admitted {} != {}",
            total,
            BURST + advances
        );
        race_was_exercised(admitted);
        // Every admitted permit charged both bands, once.
        let per_band = UPLINK.available_permits_per_band();
        check!(per_band == [0, EXTRA], "per band {:?}", per_band);
    }
}

// ---- the timer handler serves phase 3 (the SysTick clock's wraps) and the races (4, 5, 6) ----

const MODE_OFF: u8 = 0;
const MODE_CLOCK: u8 = 1;
const MODE_RACE: u8 = 2;
const MODE_KEYED_RACE: u8 = 3;
const MODE_BANDS_RACE: u8 = 4;
static MODE: AtomicU8 = AtomicU8::new(MODE_OFF);

fn on_timer() {
    match MODE.load(Ordering::Relaxed) {
        #[cfg(target_arch = "arm")]
        MODE_CLOCK => ritmo_firmware::SysTickClock::on_wrap(),
        MODE_RACE => race_interrupt(),
        MODE_KEYED_RACE => keyed::interrupt(),
        MODE_BANDS_RACE => bands::interrupt(),
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
    listened();
    log!("a listened limiter: the same, and the listener heard each of the 3 refusals");

    #[cfg(feature = "registry")]
    registry::run();

    keyed::scenario();
    bands::scenario();

    real_clock(&mut board);
    race(&mut board);
    keyed::race(&mut board);
    bands::race(&mut board);

    log!("all checks passed");
    exit(true)
}
