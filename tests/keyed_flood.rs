//! A flood of new keys: 1,000,000 distinct keys against a map of `max_keys = 10_000` (and
//! 100,000 against a fixed table of 512), while 100 victim clients are being limited.
//!
//! Asserts: the keys held never pass the cap and the heap in use stays flat once the map is
//! full (measured with a counting allocator, `stats_alloc`, since ritmo forbids the `unsafe` an
//! allocator needs); every victim keeps its exact state (its decisions equal those of its own
//! unkeyed limiter, checked throughout); no flood key is admitted beyond its bound; nothing
//! panics. Idle flood keys go idle one at a time all through the run, so the map keeps reclaiming.

use std::alloc::System;
use std::time::Duration;

use ritmo::keyed::KeyedLimiter;
use ritmo::server::KeyedRateLimiter;
use ritmo::{Clock, Config, ManualClock, RateLimiter, Reason};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const VICTIMS: u64 = 100;
const VICTIM_BASE: u64 = 1 << 40;

fn config() -> Config {
    // 5 per 10 s: a flood key that took one permit is idle 2 s later.
    Config::new(5, Duration::from_secs(10)).expect("a valid config")
}

#[test]
fn a_million_new_keys_against_ten_thousand_slots() {
    const KEYS: u64 = 1_000_000;
    const MAX_KEYS: usize = 10_000;
    let clock = ManualClock::new();
    let region = Region::new(GLOBAL);
    let map = KeyedRateLimiter::with_clock("flood", config(), MAX_KEYS, &clock);
    let victims: Vec<RateLimiter<&ManualClock>> = (0..VICTIMS)
        .map(|_| RateLimiter::with_clock("flood", config(), &clock))
        .collect();
    for v in 0..VICTIMS {
        map.try_acquire_n(&(VICTIM_BASE + v), 5).unwrap();
        victims[v as usize].try_acquire_n(5).unwrap();
    }
    let mut full_bytes = None;
    let (mut admitted, mut refused) = (0u64, 0u64);
    for key in 0..KEYS {
        // Each flood key asks twice in a row: both fit in its burst of 5.
        for _ in 0..2 {
            match map.try_acquire(&key) {
                Ok(()) => admitted += 1,
                Err(e) => {
                    assert_eq!(e.reason(), Reason::KeyCapacity, "key {key}");
                    assert!(e.retry_after() > Duration::ZERO);
                    refused += 1;
                }
            }
        }
        clock.advance_ticks(5_000); // 5 µs per new key: 5 s in all
        if key % 1_000 == 0 {
            let v = (key / 1_000) % VICTIMS;
            assert_eq!(
                map.try_acquire(&(VICTIM_BASE + v)),
                victims[v as usize].try_acquire(),
                "victim {v} at {key}"
            );
            assert_eq!(
                map.available_permits(&(VICTIM_BASE + v)),
                victims[v as usize].available_permits()
            );
            assert!(map.keys_held() <= MAX_KEYS);
            let stats = region.change();
            let in_use = (stats.bytes_allocated as isize - stats.bytes_deallocated as isize
                + stats.bytes_reallocated) as usize;
            if map.keys_held() == MAX_KEYS {
                let first = *full_bytes.get_or_insert(in_use);
                // Shards may still grow a little while keys move between them; never with the
                // number of keys seen.
                assert!(
                    in_use <= 2 * first + (64 << 10),
                    "heap grew to {in_use} B (full at {first} B) after {key} keys"
                );
                assert!(in_use / MAX_KEYS <= 256, "{} B per key", in_use / MAX_KEYS);
            }
        }
    }
    // Over the run, flood keys came and went: far more were admitted than fit at once.
    assert!(
        admitted > 2 * MAX_KEYS as u64,
        "{admitted} admitted, {refused} refused"
    );
    assert!(refused > 0);
    // Every admission of a flood key is within its bound: each asked twice, each time fresh or
    // with one permit used, so at most 2 per key.
    assert!(admitted <= 2 * KEYS);
    for v in 0..VICTIMS {
        assert_eq!(
            map.retry_after(&(VICTIM_BASE + v)),
            victims[v as usize].retry_after(),
            "victim {v} kept its state"
        );
    }
    assert_eq!(clock.now(), 5_000_000_000);
    let stats = region.change();
    let in_use = (stats.bytes_allocated as isize - stats.bytes_deallocated as isize
        + stats.bytes_reallocated) as usize;
    println!(
        "{admitted} admitted, {refused} refused; {} keys held, {in_use} B of heap ({} B per key)",
        map.keys_held(),
        in_use / MAX_KEYS
    );
}

#[test]
fn a_hundred_thousand_new_keys_against_a_fixed_table() {
    const KEYS: u64 = 100_000;
    static CLOCK: ManualClock = ManualClock::new();
    static TABLE: KeyedLimiter<u64, &ManualClock, 512> = KeyedLimiter::new(
        "flood",
        ritmo::const_config!(5, Duration::from_secs(10)),
        &CLOCK,
        0x5eed_5eed,
    );
    let victims: Vec<RateLimiter<&ManualClock>> = (0..VICTIMS)
        .map(|_| RateLimiter::with_clock("flood", config(), &CLOCK))
        .collect();
    for v in 0..VICTIMS {
        TABLE.try_acquire_n(&(VICTIM_BASE + v), 5).unwrap();
        victims[v as usize].try_acquire_n(5).unwrap();
    }
    let mut admitted = 0u64;
    for key in 0..KEYS {
        match TABLE.try_acquire(&key) {
            Ok(()) => admitted += 1,
            Err(e) => assert_eq!(e.reason(), Reason::KeyCapacity),
        }
        CLOCK.advance_ticks(50_000); // 50 µs per new key: 5 s in all
        if key % 1_000 == 0 {
            let v = (key / 1_000) % VICTIMS;
            assert_eq!(
                TABLE.try_acquire(&(VICTIM_BASE + v)),
                victims[v as usize].try_acquire()
            );
        }
    }
    assert!(admitted > 512);
    assert!(TABLE.keys_held() <= 512);
    for v in 0..VICTIMS {
        assert_eq!(
            TABLE.retry_after(&(VICTIM_BASE + v)),
            victims[v as usize].retry_after()
        );
    }
}
