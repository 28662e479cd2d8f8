//! ritmo's keyed limiters beside governor's (`DefaultKeyedRateLimiter`, a dashmap of per-key
//! states), with the same quotas, in the same run.
//!
//! Groups, each with a `ritmo` (the std map, `KeyedRateLimiter`) and a `governor` function, and
//! `ritmo_table` (the fixed `KeyedLimiter` of ritmo-core) where it applies:
//! - `keyed_hot_key`: one key checked again and again, in a map of 10,000 keys;
//! - `keyed_new_key`: a key never seen, in a map built fresh for each sample;
//! - `keyed_rejected`: a key whose quota is spent.
//!
//! Then, outside criterion, the heap each holds per live key (a counting allocator,
//! `stats_alloc`), both for 100,000 live keys and after 1,000,000 distinct keys of which at most
//! 100,000 are live at any moment (governor keeps every key until `retain_recent` is called; ritmo
//! reclaims idle ones itself). Ratios below 1: ritmo is faster / smaller.
//!
//! ```text
//! cargo bench --bench keyed               # about a minute
//! cargo bench --bench keyed -- --test     # smoke: each function runs once
//! ```

use std::alloc::System;
use std::hint::black_box;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use criterion::Criterion;
use governor::clock::FakeRelativeClock;
use ritmo::keyed::KeyedLimiter;
use ritmo::server::{KeyedRateLimiter, StdClock};
use ritmo::{Config, ManualClock};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

mod support;
use support::{governor_hourly, governor_unlimited, ritmo_hourly, ritmo_unlimited};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

type GovernorKeyed = governor::DefaultKeyedRateLimiter<u64>;

const KEYS: u64 = 10_000;
/// The core table's capacity for the 10,000 keys: load about 0.6.
const TABLE: usize = 16_384;

fn hot_key(c: &mut Criterion, clock: &StdClock) {
    let mut g = c.benchmark_group("keyed_hot_key");
    let map = KeyedRateLimiter::with_clock("bench", ritmo_unlimited(), usize::MAX, clock.clone());
    let table: Box<KeyedLimiter<u64, StdClock, TABLE>> = Box::new(KeyedLimiter::with_clock(
        "bench",
        ritmo_unlimited(),
        clock.clone(),
        0x5eed,
    ));
    let gov = GovernorKeyed::keyed(governor_unlimited());
    for key in 0..KEYS {
        map.try_acquire(&key).unwrap();
        table.try_acquire(&key).unwrap();
        gov.check_key(&key).unwrap();
    }
    let hot = 4_242u64;
    g.bench_function("ritmo", |b| {
        b.iter(|| assert!(map.try_acquire(black_box(&hot)).is_ok()))
    });
    g.bench_function("ritmo_table", |b| {
        b.iter(|| assert!(table.try_acquire(black_box(&hot)).is_ok()))
    });
    g.bench_function("governor", |b| {
        b.iter(|| assert!(gov.check_key(black_box(&hot)).is_ok()))
    });
    g.finish();
}

fn rejected(c: &mut Criterion, clock: &StdClock) {
    let mut g = c.benchmark_group("keyed_rejected");
    let map = KeyedRateLimiter::with_clock("bench", ritmo_hourly(), usize::MAX, clock.clone());
    let gov = GovernorKeyed::keyed(governor_hourly());
    for key in 0..KEYS {
        map.try_acquire(&key).unwrap();
        gov.check_key(&key).unwrap();
    }
    let hot = 4_242u64;
    g.bench_function("ritmo", |b| {
        b.iter(|| assert!(map.try_acquire(black_box(&hot)).is_err()))
    });
    g.bench_function("governor", |b| {
        b.iter(|| assert!(gov.check_key(black_box(&hot)).is_err()))
    });
    g.finish();
}

/// Times `iters` never-seen keys, in a limiter built fresh for the sample.
fn new_key(c: &mut Criterion, clock: &StdClock) {
    let mut g = c.benchmark_group("keyed_new_key");
    g.bench_function("ritmo", |b| {
        b.iter_custom(|iters| {
            let map =
                KeyedRateLimiter::with_clock("bench", ritmo_unlimited(), usize::MAX, clock.clone());
            let start = Instant::now();
            for key in 0..iters {
                assert!(map.try_acquire(black_box(&key)).is_ok());
            }
            start.elapsed()
        })
    });
    g.bench_function("governor", |b| {
        b.iter_custom(|iters| {
            let gov = GovernorKeyed::keyed(governor_unlimited());
            let start = Instant::now();
            for key in 0..iters {
                assert!(gov.check_key(black_box(&key)).is_ok());
            }
            start.elapsed()
        })
    });
    g.finish();
}

/// Heap bytes in use now, from the counting allocator.
fn in_use(region: &Region<'_, System>) -> isize {
    let s = region.change();
    s.bytes_allocated as isize - s.bytes_deallocated as isize + s.bytes_reallocated
}

/// Bytes per live key: 100,000 live keys; then 1,000,000 distinct keys over 10 s, each live for
/// 1 s (so about 100,000 live at any moment).
fn memory() {
    const LIVE: u64 = 100_000;
    const SEEN: u64 = 1_000_000;
    // One permit per second: a key that took one is live for 1 s.
    let ritmo_config = Config::new(1, Duration::from_secs(1)).expect("a valid config");
    let gov_quota = governor::Quota::per_second(NonZeroU32::MIN);

    let region = Region::new(GLOBAL);
    let map = KeyedRateLimiter::with_clock("mem", ritmo_config, LIVE as usize, ManualClock::new());
    for key in 0..LIVE {
        map.try_acquire(&key).unwrap();
    }
    let ritmo_live = in_use(&region) as f64 / LIVE as f64;
    drop(map);

    let region = Region::new(GLOBAL);
    let gov = governor::RateLimiter::dashmap_with_clock(gov_quota, FakeRelativeClock::default());
    for key in 0..LIVE {
        gov.check_key(&key).unwrap();
    }
    let gov_live = in_use(&region) as f64 / LIVE as f64;
    drop(gov);

    // Churn: a new key every 10 µs for 10 s.
    let region = Region::new(GLOBAL);
    let clock = ManualClock::new();
    let map = KeyedRateLimiter::with_clock("mem", ritmo_config, LIVE as usize, &clock);
    for key in 0..SEEN {
        map.try_acquire(&key).unwrap();
        clock.advance(Duration::from_micros(10));
    }
    let ritmo_churn = in_use(&region) as f64 / map.len() as f64;
    let ritmo_held = map.keys_held();
    drop(map);

    let region = Region::new(GLOBAL);
    let fake = FakeRelativeClock::default();
    let gov = governor::RateLimiter::dashmap_with_clock(gov_quota, fake.clone());
    for key in 0..SEEN {
        gov.check_key(&key).unwrap();
        fake.advance(Duration::from_micros(10));
    }
    let gov_live_keys = (SEEN - LIVE..SEEN).count() as f64; // the last second's keys
    let gov_churn = in_use(&region) as f64 / gov_live_keys;
    let gov_held = gov.len();
    gov.retain_recent();
    gov.shrink_to_fit();
    let gov_swept = in_use(&region) as f64 / gov_live_keys;
    drop(gov);

    let slot = std::mem::size_of::<KeyedLimiter<u64, ManualClock, 1024>>() as f64 / 1024.0;
    println!("\nheap bytes per live key (u64 keys; ratio < 1: ritmo is smaller)");
    println!("{:<46} {:>9} {:>9} {:>9}", "", "ritmo", "governor", "ratio");
    println!(
        "{:<46} {ritmo_live:>9.1} {gov_live:>9.1} {:>9.3}",
        "100,000 live keys",
        ritmo_live / gov_live
    );
    println!(
        "{:<46} {ritmo_churn:>9.1} {gov_churn:>9.1} {:>9.3}",
        "1,000,000 seen, ~100,000 live (no sweep)",
        ritmo_churn / gov_churn
    );
    println!(
        "{:<46} {ritmo_churn:>9.1} {gov_swept:>9.1} {:>9.3}",
        "  the same, governor after retain_recent+shrink",
        ritmo_churn / gov_swept
    );
    println!("keys held after the churn: ritmo {ritmo_held}, governor {gov_held}");
    println!("ritmo-core fixed table: {slot:.1} bytes per slot (u64 keys, no heap)");
}

fn output_directory() -> PathBuf {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return home.into();
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
    target.join("criterion")
}

fn median_ns(dir: &Path, group: &str, function: &str, since: SystemTime) -> Option<f64> {
    let path = dir.join(group).join(function).join("new/estimates.json");
    let fresh = std::fs::metadata(&path).ok()?.modified().ok()? >= since;
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).ok()?).ok()?;
    fresh.then(|| json["median"]["point_estimate"].as_f64())?
}

fn print_ratios(dir: &Path, since: SystemTime) {
    let rows: Vec<_> = ["keyed_hot_key", "keyed_new_key", "keyed_rejected"]
        .iter()
        .filter_map(|g| {
            let r = median_ns(dir, g, "ritmo", since)?;
            let gov = median_ns(dir, g, "governor", since)?;
            Some((g, r, gov))
        })
        .collect();
    if rows.is_empty() {
        return;
    }
    println!("\nmedian ns per call (ratio < 1: ritmo is faster)");
    println!(
        "{:<24} {:>9} {:>9} {:>16}",
        "group", "ritmo", "governor", "ritmo/governor"
    );
    for (g, r, gov) in rows {
        println!("{g:<24} {r:>9.2} {gov:>9.2} {:>16.3}", r / gov);
    }
    if let Some(t) = median_ns(dir, "keyed_hot_key", "ritmo_table", since) {
        println!("{:<24} {t:>9.2}", "(ritmo-core table, hot)");
    }
}

fn main() {
    let since = SystemTime::now() - Duration::from_secs(1);
    let dir = output_directory();
    let mut c = Criterion::default()
        .output_directory(&dir)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(40)
        .configure_from_args();
    let clock = StdClock::new();
    hot_key(&mut c, &clock);
    rejected(&mut c, &clock);
    new_key(&mut c, &clock);
    c.final_summary();
    print_ratios(&dir, since);
    if !std::env::args().any(|a| a == "--test") {
        memory();
    }
}
