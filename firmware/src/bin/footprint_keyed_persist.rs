//! `footprint_keyed` that also saves the table's state after the permit and restores it (what
//! keyed save/restore, `KeyedLimiter::save_into` / `restore`, costs the firmware that uses it).
#![no_std]
#![no_main]

use core::time::Duration;

use panic_halt as _;
use ritmo_core::const_config;
use ritmo_core::keyed::KeyedLimiter;
use ritmo_core::persist::Restored;
use ritmo_firmware::MachineClock;

type Peers = KeyedLimiter<u32, MachineClock, 8>;

static PEERS: Peers = KeyedLimiter::new(
    "peers",
    const_config!(10, Duration::from_secs(1)),
    MachineClock {},
    0x5eed,
);

ritmo_firmware::footprint_main!({
    let peers = core::hint::black_box(&PEERS);
    let peer = core::hint::black_box(7u32);
    let taken = peers.try_acquire(&peer).is_ok();
    let mut saved = [0u8; Peers::SAVED_LEN];
    let written = peers.save_into(&mut saved);
    let saved = core::hint::black_box(saved);
    let restored = peers.restore(&saved) == Restored::Saved;
    taken && written && restored
});
