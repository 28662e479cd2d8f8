//! A limiter on a `ManualClock` driven by arbitrary bytes: clock jumps anywhere, every call,
//! reservations ended every way. Never a panic, `available_permits` within `0..=n`, and a peek
//! that agrees with the call made right after it.
#![no_main]

use core::time::Duration;

use libfuzzer_sys::fuzz_target;
use ritmo_core::{AdvanceClock, Clock, Config, Interrupted, ManualClock, RateLimiter, Reservation, Wait};

fn u64_from(bytes: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = bytes.len().min(8);
    b[..n].copy_from_slice(&bytes[..n]);
    u64::from_le_bytes(b)
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 17 {
        return;
    }
    let n = u32::from(data[0] % 16) + 1;
    let period = u64_from(&data[1..9]).max(u64::from(n));
    let max_wait = u64_from(&data[9..17]);
    let Ok(config) = Config::new(n, Duration::from_nanos(period)) else {
        return;
    };
    let clock = ManualClock::new();
    let l = RateLimiter::new("fuzz", config.with_max_wait(Duration::from_nanos(max_wait)), &clock);
    let mut pending: Vec<Reservation<'_, &ManualClock>> = Vec::new();
    for chunk in data[17..].chunks(9) {
        let arg = u64_from(&chunk[1..]);
        let k = (arg as u32 % n) + 1;
        match chunk[0] % 10 {
            0 => clock.set(arg),
            1 => clock.set(clock.now().saturating_sub(arg)),
            2 => clock.advance_ticks(arg),
            3 => {
                let available = l.available_permits();
                assert_eq!(l.try_acquire_n(k).is_ok(), available >= k);
            }
            4 => {
                if let Ok(r) = l.reserve_n(k) {
                    pending.push(r);
                }
            }
            5 => {
                if let Ok(r) = l.reserve_n_within(k, Duration::from_nanos(arg)) {
                    pending.push(r);
                }
            }
            6 => {
                if !pending.is_empty() {
                    let r = pending.swap_remove(arg as usize % pending.len());
                    match arg % 4 {
                        0 => r.commit(),
                        1 => drop(r.cancel()),
                        2 => drop(r.wait_with(&mut InterruptAtOnce)),
                        _ => drop(r.wait_with(&mut AdvanceClock)),
                    }
                }
            }
            7 => drop(l.acquire_n_advancing(k)),
            8 => {
                let wait = l.retry_after_n(k).unwrap();
                assert_eq!(wait.is_zero(), l.available_permits() >= k);
            }
            _ => {
                let s = l.snapshot();
                assert!(s.available_permits <= n);
            }
        }
    }
});

/// A waiter interrupted as soon as it starts waiting.
struct InterruptAtOnce;

impl<C: Clock + ?Sized> Wait<C> for InterruptAtOnce {
    fn wait_until(&mut self, _: &C, _: u64) -> Result<(), Interrupted> {
        Err(Interrupted)
    }
}
