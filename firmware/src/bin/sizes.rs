//! Prints, from the target itself, how many bytes ritmo's types take there (`scripts/footprint`).
#![no_std]
#![no_main]

use core::mem::size_of;

use cortex_m_rt::entry;
use panic_semihosting as _;
use ritmo_core::{Config, ManualClock, RateLimitExceeded, RateLimiter};
use ritmo_firmware::{exit, log, SysTickClock};

#[entry]
fn main() -> ! {
    log!(
        "size_of RateLimiter<SysTickClock> = {}",
        size_of::<RateLimiter<SysTickClock>>()
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
    #[cfg(feature = "registry")]
    {
        use ritmo_core::Registry;
        // One slot more, minus the registry's own fields.
        let slot = size_of::<Registry<SysTickClock, 2>>() - size_of::<Registry<SysTickClock, 1>>();
        log!(
            "size_of registry slot (Registry<SysTickClock, N>, per N) = {}",
            slot
        );
        log!(
            "size_of Registry<SysTickClock, 4> = {}",
            size_of::<Registry<SysTickClock, 4>>()
        );
    }
    exit(true)
}
