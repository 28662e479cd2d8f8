//! ritmo with defmt logging: the limiter's rejection and snapshot are logged with `defmt`
//! (through semihosting) and decoded on the host with `defmt-print`; `scripts/embedded` checks
//! the decoded lines.
#![no_std]
#![no_main]

use core::time::Duration;

use cortex_m_rt::entry;
use defmt_semihosting as _;
use panic_semihosting as _;
use ritmo_core::{const_config, ManualClock, RateLimiter};

static CLOCK: ManualClock = ManualClock::new();
static RADIO: RateLimiter<&ManualClock> =
    RateLimiter::new("radio", const_config!(10, Duration::from_secs(1)), &CLOCK);

#[entry]
fn main() -> ! {
    let mut admitted = 0u32;
    let rejection = loop {
        match RADIO.try_acquire() {
            Ok(()) => admitted += 1,
            Err(e) => break e,
        }
    };
    defmt::println!("ritmo: {=u32} admitted, then {}", admitted, rejection);
    CLOCK.advance(Duration::from_millis(100));
    defmt::println!("ritmo: after 100 ms {}", RADIO.snapshot());
    ritmo_firmware::exit(admitted == 10)
}
