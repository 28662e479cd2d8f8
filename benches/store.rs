//! What a keyed store costs a server: bytes per live key, and the worst single call for a new key
//! into a full store (SPEC §25), ritmo's stores beside governor's keyed store in one run.
//!
//! - **Memory**: heap bytes (a counting allocator, `stats_alloc`) and resident set growth (from
//!   `/proc/self/statm`) per live key, at 10,000, 100,000 and 1,000,000 keys, for `u32` keys, IPv4
//!   and IPv6 clients (ritmo's `IpKey`, IPv6 by its /64; governor keyed by `IpAddr`, as
//!   tower_governor keys it). Each measurement runs in a child process of its own, so that memory
//!   freed by one never serves the next one's growth.
//! - **Full store**: the worst single call (not the mean) among the first `CALLS` new keys, into
//!   a store of `max_keys` keys all live, all idle, and into an empty store of the same
//!   `max_keys`; for ritmo's std map and ritmo-core's fixed table, at 100,000 and 1,000,000 keys
//!   (the table with the slots that hold that many keys: a quarter of them stays spare).
//!
//! ```text
//! cargo bench --bench store               # about a minute
//! cargo bench --bench store -- --quick    # 10,000 keys only
//! cargo bench --bench store -- --std-only # without ritmo-core's fixed table
//! cargo bench --bench store -- --table-only # the fixed table's full-store rows only
//! ```

use std::alloc::System;
use std::hint::black_box;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::process::Command;
use std::time::{Duration, Instant};

use governor::clock::FakeRelativeClock;
use ritmo::ManualClock;
use ritmo::keyed::KeyedLimiter;
use ritmo::server::{IpKey, KeyedRateLimiter};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

mod support;
use support::{governor_hourly, ritmo_hourly};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// New keys timed one by one in each full-store case.
const CALLS: u64 = 1_000;

fn in_use(region: &Region<'_, System>) -> isize {
    let s = region.change();
    s.bytes_allocated as isize - s.bytes_deallocated as isize + s.bytes_reallocated
}

/// Resident bytes of this process now.
fn rss() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: usize = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

/// Client `i` as an IPv4 address.
fn v4(i: u64) -> IpAddr {
    IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + i as u32))
}

/// Client `i` as an IPv6 address in a /64 of its own (the host bits vary too).
fn v6(i: u64) -> IpAddr {
    let net = 0x2001_0db8_0000_0000u64 + i;
    IpAddr::V6(Ipv6Addr::from(
        (u128::from(net) << 64) | u128::from(i.wrapping_mul(0x9e37)),
    ))
}

/// In a child: `n` live keys of `kind` in `lib`'s store; prints heap and RSS bytes per key.
fn measure_child(lib: &str, kind: &str, n: u64) {
    let config = ritmo_hourly();
    let quota = governor_hourly();
    let before_rss = rss();
    let region = Region::new(GLOBAL);
    let held: Box<dyn std::any::Any> = match (lib, kind) {
        ("ritmo", "u32") => {
            let m = KeyedRateLimiter::with_clock("m", config, n as usize, ManualClock::new());
            (0..n).for_each(|i| m.try_acquire(&(i as u32)).unwrap());
            Box::new(m)
        }
        ("ritmo", "ipv4") => {
            let m = KeyedRateLimiter::with_clock("m", config, n as usize, ManualClock::new());
            (0..n).for_each(|i| m.try_acquire(&IpKey::from(v4(i))).unwrap());
            Box::new(m)
        }
        ("ritmo", "ipv6") => {
            let m = KeyedRateLimiter::with_clock("m", config, n as usize, ManualClock::new());
            (0..n).for_each(|i| m.try_acquire(&IpKey::from(v6(i))).unwrap());
            Box::new(m)
        }
        ("governor", "u32") => {
            let g = governor::RateLimiter::dashmap_with_clock(quota, FakeRelativeClock::default());
            (0..n).for_each(|i| g.check_key(&(i as u32)).unwrap());
            Box::new(g)
        }
        ("governor", "ipv4") => {
            let g = governor::RateLimiter::dashmap_with_clock(quota, FakeRelativeClock::default());
            (0..n).for_each(|i| g.check_key(&v4(i)).unwrap());
            Box::new(g)
        }
        ("governor", "ipv6") => {
            let g = governor::RateLimiter::dashmap_with_clock(quota, FakeRelativeClock::default());
            (0..n).for_each(|i| g.check_key(&v6(i)).unwrap());
            Box::new(g)
        }
        _ => panic!("unknown store {lib} {kind}"),
    };
    let heap = in_use(&region);
    let grown = rss().saturating_sub(before_rss);
    black_box(&held);
    println!(
        "{:.1} {:.1}",
        heap as f64 / n as f64,
        grown as f64 / n as f64
    );
}

/// Runs `measure_child` in a fresh process and reads its two numbers.
fn measure(lib: &str, kind: &str, n: u64) -> (f64, f64) {
    let out = Command::new(std::env::current_exe().expect("the bench's own path"))
        .args(["--child", lib, kind, &n.to_string()])
        .output()
        .expect("the child runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut parts = text
        .split_whitespace()
        .map(|p| p.parse::<f64>().unwrap_or(f64::NAN));
    (
        parts.next().unwrap_or(f64::NAN),
        parts.next().unwrap_or(f64::NAN),
    )
}

fn memory(sizes: &[u64]) {
    println!("## memory per live key (heap B / RSS B)");
    println!(
        "| keys | key | ritmo heap | ritmo RSS | governor heap | governor RSS | ritmo/governor (heap) |"
    );
    println!("| ---: | --- | ---: | ---: | ---: | ---: | ---: |");
    for &n in sizes {
        for kind in ["u32", "ipv4", "ipv6"] {
            let (rh, rr) = measure("ritmo", kind, n);
            let (gh, gr) = measure("governor", kind, n);
            println!(
                "| {n} | {kind} | {rh:.1} | {rr:.1} | {gh:.1} | {gr:.1} | {:.2} |",
                rh / gh
            );
        }
    }
}

/// The worst and the median of single calls of `f` on keys `from..from + CALLS`; the worst's
/// place among the calls goes to stderr (a first call's cost and a stray one look alike).
fn worst<F: FnMut(u64)>(from: u64, mut f: F) -> (Duration, Duration) {
    let mut times: Vec<(Duration, u64)> = (from..from + CALLS)
        .map(|key| {
            let t = Instant::now();
            f(key);
            (t.elapsed(), key - from)
        })
        .collect();
    times.sort();
    let (w, at) = times[times.len() - 1];
    eprintln!("worst {:.1} µs at call {at}", w.as_secs_f64() * 1e6);
    (w, times[times.len() / 2].0)
}

fn show(what: &str, n: u64, (w, m): (Duration, Duration), empty: Duration) {
    println!(
        "| {what} | {n} | {:.1} | {:.2} | {:.1} |",
        w.as_secs_f64() * 1e6,
        m.as_secs_f64() * 1e6,
        w.as_secs_f64() / empty.as_secs_f64()
    );
}

/// The std map: a new key into an empty store, a full store of live keys, of idle keys.
fn full_map(n: u64) {
    let config = ritmo_hourly();
    let clock = ManualClock::new();
    let empty = KeyedRateLimiter::with_clock("e", config, n as usize, &clock);
    let e = worst(0, |k| {
        black_box(empty.try_acquire(&k).is_ok());
    });
    drop(empty);
    show("std map, empty", n, e, e.0);
    let map = KeyedRateLimiter::with_clock("f", config, n as usize, &clock);
    (0..n).for_each(|k| map.try_acquire(&k).unwrap());
    let live = worst(n, |k| {
        black_box(map.try_acquire(&k).is_err());
    });
    show("std map, full of live keys", n, live, e.0);
    clock.advance(Duration::from_secs(7200));
    let idle = worst(2 * n, |k| {
        black_box(map.try_acquire(&k).is_ok());
    });
    show("std map, full of idle keys", n, idle, e.0);
}

/// The fixed table of `N` slots, filled with as many keys as it holds.
fn full_table<const N: usize>() {
    let config = ritmo_hourly();
    let clock = ManualClock::new();
    let empty: Box<KeyedLimiter<u64, &ManualClock, N>> =
        Box::new(KeyedLimiter::with_clock("e", config, &clock, 7));
    let n = empty.capacity() as u64;
    let e = worst(0, |k| {
        black_box(empty.try_acquire(&k).is_ok());
    });
    drop(empty);
    show("core table, empty", n, e, e.0);
    let table: Box<KeyedLimiter<u64, &ManualClock, N>> =
        Box::new(KeyedLimiter::with_clock("f", config, &clock, 7));
    (0..n).for_each(|k| table.try_acquire(&k).unwrap());
    let live = worst(n, |k| {
        black_box(table.try_acquire(&k).is_err());
    });
    show("core table, full of live keys", n, live, e.0);
    clock.advance(Duration::from_secs(7200));
    let idle = worst(2 * n, |k| {
        black_box(table.try_acquire(&k).is_ok());
    });
    show("core table, full of idle keys", n, idle, e.0);
}

/// Slots of a fixed table that holds 100,000 keys, and 1,000,000.
const SLOTS_100K: usize = 133_856;
const SLOTS_1M: usize = 1_334_638;

fn full_store(quick: bool, std_only: bool, table_only: bool) {
    println!("## a new key into a store of max_keys keys: worst and median of {CALLS} calls");
    println!("| store | keys | worst µs | median µs | worst / empty's worst |");
    println!("| --- | ---: | ---: | ---: | ---: |");
    if quick {
        full_map(10_000);
        full_table::<10_000>();
        return;
    }
    // Three rounds of each store, each on fresh stores: a worst single call on a shared machine
    // is also whatever the scheduler did meanwhile, and a spike of the store's own shows in all three.
    if !table_only {
        for n in [100_000, 1_000_000] {
            for _ in 0..3 {
                full_map(n);
            }
        }
    }
    if std_only {
        return;
    }
    for _ in 0..3 {
        full_table::<SLOTS_100K>();
    }
    for _ in 0..3 {
        full_table::<SLOTS_1M>();
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--child") {
        let n = args[4].parse().expect("a key count");
        measure_child(&args[2], &args[3], n);
        return;
    }
    let quick = args.iter().any(|a| a == "--quick");
    let std_only = args.iter().any(|a| a == "--std-only");
    let table_only = args.iter().any(|a| a == "--table-only");
    // The fixed tables are built on the stack before they are boxed: a thread with room.
    std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(move || {
            if quick {
                memory(&[10_000]);
            } else if !table_only {
                memory(&[10_000, 100_000, 1_000_000]);
            }
            full_store(quick, std_only, table_only);
        })
        .expect("a thread")
        .join()
        .expect("the bench ran");
}
