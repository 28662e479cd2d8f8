//! State across a system reset (SPEC §24): a radio limiter transmits to its cap, saves its state
//! into RAM that a reset keeps, resets the core, restores at boot against a clock that kept
//! counting, and refuses exactly what it refused before the reset, then admits when the window
//! allows. A keyed table (one key per sub-band) does the same beside it: the key spent before the
//! reset is refused exactly as long as it was, the key half spent keeps its half, a key never
//! seen has its full burst, and a corrupt record leaves them all spent, the unseen one too.
//! Exits 0 when every count is the expected one.
//!
//! The retained RAM is a `.uninit` section on Cortex-M (cortex-m-rt's `link.x` leaves it
//! unzeroed and QEMU keeps RAM through a system reset) and a fixed address above the firmware's
//! RAM on RISC-V (QEMU's `virt` board has 128 MiB; the firmware uses 16 KiB of it). The reset is
//! `SCB::sys_reset` on Cortex-M and the `virt` board's test device (`0x7777` at `0x10_0000`) on
//! RISC-V. The clock that "kept counting" is a nanosecond count kept in the same retained RAM,
//! standing in for an RTC: the boards' timers restart at a reset.
#![no_std]
#![no_main]

use core::time::Duration;

#[cfg(target_arch = "arm")]
use panic_semihosting as _;
use ritmo_core::keyed::KeyedLimiter;
use ritmo_core::persist::{keyed_saved_len, Restored, Untrusted, SAVED_LEN};
use ritmo_core::{const_window_config, Clock, Config, ManualClock, RateLimiter};
use ritmo_firmware::{check, exit, log, BOARD};

#[cfg(target_arch = "riscv32")]
ritmo_firmware::semihosting_panic_handler!();

/// At most 10 frames in any 10 s, 4 at once (`T` = 10 s / 6).
const RADIO: Config = const_window_config!(10, Duration::from_secs(10), 4);
/// The emission interval in ns: `ceil(10 s / 6)`.
const T_NS: u64 = 1_666_666_667;
/// How long the node is "off" between the save and the restore.
const OFF_NS: u64 = 500_000_000;
/// Marks the retained RAM as written by the first boot.
const MAGIC: u32 = 0x5254_4D4F;

/// A keyed table of 4 sub-bands (`u8` keys), each at most 10 frames in any 10 s, 4 at once.
type SubBands<'a> = KeyedLimiter<u8, &'a ManualClock, 4>;
/// Its record: `32 + 4 * (1 + 9)` bytes.
const KEYED_LEN: usize = keyed_saved_len(4, 1);

/// What survives the reset.
#[derive(Clone, Copy)]
#[repr(C)]
struct Retained {
    magic: u32,
    /// The "RTC": nanoseconds, kept counting across the reset.
    rtc: u64,
    state: [u8; SAVED_LEN],
    keyed: [u8; KEYED_LEN],
}

#[cfg(target_arch = "arm")]
#[link_section = ".uninit.ritmo"]
static mut RETAINED: core::mem::MaybeUninit<Retained> = core::mem::MaybeUninit::uninit();

/// The retained record's address.
fn retained() -> *mut Retained {
    #[cfg(target_arch = "arm")]
    {
        core::ptr::addr_of_mut!(RETAINED).cast()
    }
    #[cfg(target_arch = "riscv32")]
    {
        0x8080_0000 as *mut Retained
    }
}

fn load() -> Retained {
    // SAFETY: `retained()` is a 4-aligned address in RAM that nothing else uses (a `.uninit`
    // static only this function and `store` touch, or RISC-V RAM outside every linker region),
    // valid for `size_of::<Retained>()` bytes; every bit pattern is a valid `Retained` (integers
    // and bytes only), so reading it before it was ever written is defined. Single-threaded,
    // no interrupts enabled. Volatile, so that the store before the reset is not elided.
    unsafe { core::ptr::read_volatile(retained()) }
}

fn store(value: Retained) {
    // SAFETY: as in `load`: the address is valid, aligned and used by no one else.
    unsafe { core::ptr::write_volatile(retained(), value) }
}

fn reset() -> ! {
    #[cfg(target_arch = "arm")]
    cortex_m::peripheral::SCB::sys_reset();
    #[cfg(target_arch = "riscv32")]
    {
        // SAFETY: 0x10_0000 is QEMU virt's test device (sifive_test), a 32-bit register;
        // writing 0x7777 resets the machine. Nothing else maps that address.
        unsafe { core::ptr::write_volatile(0x10_0000 as *mut u32, 0x7777) };
        loop {
            riscv::asm::wfi();
        }
    }
}

/// First boot: transmit to the cap, save after each frame, keep the RTC, reset.
fn before(clock: &ManualClock) -> ! {
    let radio = RateLimiter::new("radio", RADIO, clock);
    let mut state = radio.save();
    let mut sent = 0;
    while radio.try_acquire().is_ok() {
        sent += 1;
        state = radio.save();
    }
    check!(sent == 4, "{} frames before the reset", sent);
    let err = radio.try_acquire().unwrap_err();
    check!(
        err.retry_after() == Duration::from_nanos(T_NS),
        "{:?}",
        err.retry_after()
    );
    // The sub-bands: band 1 spends its burst, band 2 half of it; saved after each frame.
    let bands: SubBands = KeyedLimiter::with_clock("bands", RADIO, clock, 0x5eed);
    let mut keyed = [0u8; KEYED_LEN];
    for band in [1, 1, 1, 1, 2, 2] {
        check!(bands.try_acquire(&band).is_ok());
        check!(bands.save_into(&mut keyed));
    }
    check!(bands.try_acquire(&1).is_err());
    log!(
        "{}: 4 frames sent, the 5th refused for {:?}; sub-band 1 spent, 2 half; saving and resetting",
        BOARD,
        err.retry_after()
    );
    store(Retained {
        magic: MAGIC,
        rtc: clock.now() + OFF_NS,
        state,
        keyed,
    });
    reset()
}

/// Second boot: restore against the RTC, refuse exactly as before, admit when due.
fn after(saved: Retained) -> ! {
    store(Retained { magic: 0, ..saved }); // a third boot starts over
    let clock: ManualClock = ManualClock::with_reading(saved.rtc);
    // Without the saved state the limiter would hand out its whole burst again.
    check!(RateLimiter::new("fresh", RADIO, &clock).available_permits() == 4);

    let radio = RateLimiter::new("radio", RADIO, &clock);
    check!(radio.restore(&saved.state) == Restored::Saved);
    check!(radio.available_permits() == 0);
    let err = radio.try_acquire().unwrap_err();
    check!(
        err.retry_after() == Duration::from_nanos(T_NS - OFF_NS),
        "{:?}",
        err.retry_after()
    );
    clock.advance(Duration::from_nanos(T_NS - OFF_NS - 1));
    check!(radio.try_acquire().is_err(), "a frame one ns early");
    clock.advance(Duration::from_nanos(1));
    check!(radio.try_acquire().is_ok(), "the next frame when due");
    check!(radio.try_acquire().is_err());
    clock.advance(Duration::from_nanos(4 * T_NS));
    let mut sent = 0;
    while radio.try_acquire().is_ok() {
        sent += 1;
    }
    check!(sent == 4, "{} after four intervals", sent);

    // A record with a bit flipped restores fully spent, never fresh.
    let mut bad = saved.state;
    bad[20] ^= 1;
    let other = RateLimiter::new("radio", RADIO, &clock);
    check!(other.restore(&bad) == Restored::Spent(Untrusted::Corrupt));
    check!(other.available_permits() == 0);

    keyed_after(&saved.keyed, saved.rtc);
    log!(
        "{}: after the reset: refused for {:?}, admitted when due, 4 more four intervals later; a corrupt record fully spent",
        BOARD,
        err.retry_after()
    );
    exit(true)
}

/// The keyed table after the reset, restored at the RTC's reading `rtc`.
fn keyed_after(record: &[u8; KEYED_LEN], rtc: u64) {
    let clock: ManualClock = ManualClock::with_reading(rtc);
    let bands: SubBands = KeyedLimiter::with_clock("bands", RADIO, &clock, 0x1234);
    check!(bands.restore(record) == Restored::Saved);
    check!(bands.available_permits(&1) == 0, "sub-band 1 stays spent");
    check!(
        bands.available_permits(&2) == 2,
        "sub-band 2 keeps its half"
    );
    check!(
        bands.available_permits(&3) == 4,
        "sub-band 3 was never limited"
    );
    let err = bands.try_acquire(&1).unwrap_err();
    check!(
        err.retry_after() == Duration::from_nanos(T_NS - OFF_NS),
        "{:?}",
        err.retry_after()
    );
    clock.advance(Duration::from_nanos(T_NS - OFF_NS - 1));
    check!(bands.try_acquire(&1).is_err(), "sub-band 1 one ns early");
    clock.advance(Duration::from_nanos(1));
    check!(bands.try_acquire(&1).is_ok(), "sub-band 1 when due");

    // A corrupt record: every sub-band fully spent, the one never seen too.
    let mut bad = *record;
    bad[30] ^= 1;
    let bands: SubBands = KeyedLimiter::with_clock("bands", RADIO, &clock, 0x1234);
    check!(bands.restore(&bad) == Restored::Spent(Untrusted::Corrupt));
    check!(bands.available_permits(&2) == 0);
    check!(
        bands.available_permits(&3) == 0,
        "a sub-band never seen is spent too"
    );
    clock.advance(Duration::from_nanos(T_NS));
    check!(bands.available_permits(&3) == 1, "then one per interval");
    log!(
        "{}: sub-bands after the reset: 1 refused for {:?}, 2 kept its half, 3 fresh; a corrupt record spends all, the unseen one too",
        BOARD,
        err.retry_after()
    );
}

#[cfg_attr(target_arch = "arm", cortex_m_rt::entry)]
#[cfg_attr(target_arch = "riscv32", riscv_rt::entry)]
fn main() -> ! {
    let saved = load();
    if saved.magic == MAGIC {
        after(saved)
    } else {
        let clock: ManualClock = ManualClock::with_reading(1_000_000_000);
        before(&clock)
    }
}
