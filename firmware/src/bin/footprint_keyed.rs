//! The footprint baseline plus one `static` keyed table of 8 keys on the board's clock, taking a
//! permit for a key (SipHash-1-3 over the key, a probe of the fixed table, the critical section).
#![no_std]
#![no_main]

use core::time::Duration;

use panic_halt as _;
use ritmo_core::const_config;
use ritmo_core::keyed::KeyedLimiter;
use ritmo_firmware::MachineClock;

static PEERS: KeyedLimiter<u32, MachineClock, 8> = KeyedLimiter::new(
    "peers",
    const_config!(10, Duration::from_secs(1)),
    MachineClock {},
    0x5eed,
);

ritmo_firmware::footprint_main!({
    let peers = core::hint::black_box(&PEERS);
    let peer = core::hint::black_box(7u32);
    peers.try_acquire(&peer).is_ok()
});
