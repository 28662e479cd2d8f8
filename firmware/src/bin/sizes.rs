//! Prints, from the target itself, how many bytes ritmo's types take there (`scripts/footprint`).
#![no_std]
#![no_main]

use core::mem::size_of;

#[cfg(target_arch = "arm")]
use panic_semihosting as _;
use ritmo_core::keyed::KeyedLimiter;
use ritmo_core::{Bands, Config, ManualClock, RateLimitExceeded, RateLimiter};
use ritmo_firmware::{exit, log, MachineClock};

#[cfg(target_arch = "riscv32")]
ritmo_firmware::semihosting_panic_handler!();

#[cfg_attr(target_arch = "arm", cortex_m_rt::entry)]
#[cfg_attr(target_arch = "riscv32", riscv_rt::entry)]
fn main() -> ! {
    log!(
        "size_of RateLimiter<MachineClock> = {}",
        size_of::<RateLimiter<MachineClock>>()
    );
    log!(
        "size_of RateLimiter<&ManualClock> = {}",
        size_of::<RateLimiter<&ManualClock>>()
    );
    log!("size_of Config = {}", size_of::<Config>());
    log!(
        "size_of RateLimitExceeded = {}",
        size_of::<RateLimitExceeded>()
    );
    log!(
        "size_of KeyedLimiter<u32, MachineClock, 8> = {}",
        size_of::<KeyedLimiter<u32, MachineClock, 8>>()
    );
    // One slot more, minus the table's own fields.
    let key_slot = size_of::<KeyedLimiter<u32, MachineClock, 9>>()
        - size_of::<KeyedLimiter<u32, MachineClock, 8>>();
    log!(
        "size_of keyed slot (KeyedLimiter<u32, MachineClock, N>, per N) = {}",
        key_slot
    );
    log!(
        "size_of Bands<MachineClock, 2> = {}",
        size_of::<Bands<MachineClock, 2>>()
    );
    #[cfg(feature = "registry")]
    {
        use ritmo_core::Registry;
        // One slot more, minus the registry's own fields.
        let slot = size_of::<Registry<MachineClock, 2>>() - size_of::<Registry<MachineClock, 1>>();
        log!(
            "size_of registry slot (Registry<MachineClock, N>, per N) = {}",
            slot
        );
        log!(
            "size_of Registry<MachineClock, 4> = {}",
            size_of::<Registry<MachineClock, 4>>()
        );
    }
    exit(true)
}
