//! ritmo beside governor, call for call, with the same quotas.
//!
//! Every group has a `ritmo` and a `governor` function; at the end the bench prints each group's
//! ritmo/governor ratio of median times (below 1: ritmo is faster). The machine these run on is
//! shared and noisy, so compare the ratios within one run, not absolute times across runs.
//!
//! ```text
//! cargo bench --bench compare                  # everything (about 2.5 minutes)
//! cargo bench --bench compare -- admitted      # one group
//! cargo bench --bench compare -- 'admitted|coarse'   # the coarse clock beside StdClock
//! cargo bench --bench compare -- --test        # smoke: each function runs once
//! ```

use std::hint::black_box;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::Barrier;
use std::time::{Duration, Instant, SystemTime};

use criterion::{Bencher, Criterion};
use governor::clock::FakeRelativeClock;
use ritmo::server::{CoarseClock, StdClock};
use ritmo::{Clock, ManualClock, RateLimiter, Registry};

mod support;
use support::{governor_hourly, governor_unlimited, ritmo_hourly, ritmo_unlimited};

type Governor<C = governor::clock::DefaultClock> = governor::RateLimiter<
    governor::state::NotKeyed,
    governor::state::InMemoryState,
    C,
    governor::middleware::NoOpMiddleware<<C as governor::clock::Clock>::Instant>,
>;

const FOUR: NonZeroU32 = NonZeroU32::new(4).unwrap();

/// Times `iters` calls of `call` on a limiter built fresh for this sample (so that a quota of
/// `u32::MAX` permits is never spent, even on a clock that does not move).
fn fresh<L>(b: &mut Bencher<'_>, build: impl Fn() -> L, call: impl Fn(&L)) {
    b.iter_custom(|iters| {
        let limiter = build();
        let start = Instant::now();
        for _ in 0..iters {
            call(black_box(&limiter));
        }
        start.elapsed()
    });
}

/// Times `iters` calls on each of `threads` threads at once; `pick` says which limiter thread `i`
/// uses. The time reported per iteration is the wall time for every thread to make one call.
fn threaded<L: Sync>(
    b: &mut Bencher<'_>,
    threads: usize,
    build: impl Fn() -> L,
    call: impl Fn(&L, usize) + Sync,
) {
    b.iter_custom(|iters| {
        let limiters = build();
        let barrier = Barrier::new(threads + 1);
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|i| {
                    let (limiters, barrier, call) = (&limiters, &barrier, &call);
                    s.spawn(move || {
                        barrier.wait();
                        for _ in 0..iters {
                            call(black_box(limiters), i);
                        }
                    })
                })
                .collect();
            barrier.wait();
            let start = Instant::now();
            for h in handles {
                h.join().expect("a bench thread panicked");
            }
            start.elapsed()
        })
    });
}

fn admitted(c: &mut Criterion, clock: &StdClock) {
    let mut g = c.benchmark_group("admitted");
    g.bench_function("ritmo", |b| {
        fresh(
            b,
            || RateLimiter::with_clock("bench", ritmo_unlimited(), clock.clone()),
            |l| assert_ok(l.try_acquire().is_ok()),
        )
    });
    g.bench_function("governor", |b| {
        fresh(
            b,
            || Governor::direct(governor_unlimited()),
            |l| assert_ok(l.check().is_ok()),
        )
    });
    g.finish();
}

fn rejected(c: &mut Criterion, clock: &StdClock) {
    let mut g = c.benchmark_group("rejected");
    g.bench_function("ritmo", |b| {
        let l = RateLimiter::with_clock("bench", ritmo_hourly(), clock.clone());
        l.try_acquire().expect("the one permit");
        b.iter(|| assert_err(black_box(&l).try_acquire().is_err()))
    });
    g.bench_function("governor", |b| {
        let l = Governor::direct(governor_hourly());
        l.check().expect("the one permit");
        b.iter(|| assert_err(black_box(&l).check().is_err()))
    });
    g.finish();
}

fn logic(c: &mut Criterion) {
    let mut g = c.benchmark_group("logic_admitted");
    g.bench_function("ritmo", |b| {
        fresh(
            b,
            || RateLimiter::new("bench", ritmo_unlimited(), ManualClock::new()),
            |l| assert_ok(l.try_acquire().is_ok()),
        )
    });
    g.bench_function("governor", |b| {
        fresh(
            b,
            || Governor::direct_with_clock(governor_unlimited(), FakeRelativeClock::default()),
            |l| assert_ok(l.check().is_ok()),
        )
    });
    g.finish();

    let mut g = c.benchmark_group("logic_rejected");
    g.bench_function("ritmo", |b| {
        let l = RateLimiter::new("bench", ritmo_hourly(), ManualClock::new());
        l.try_acquire().expect("the one permit");
        b.iter(|| assert_err(black_box(&l).try_acquire().is_err()))
    });
    g.bench_function("governor", |b| {
        let l = Governor::direct_with_clock(governor_hourly(), FakeRelativeClock::default());
        l.check().expect("the one permit");
        b.iter(|| assert_err(black_box(&l).check().is_err()))
    });
    g.finish();
}

fn acquire_n(c: &mut Criterion, clock: &StdClock) {
    let mut g = c.benchmark_group("acquire_4_admitted");
    g.bench_function("ritmo", |b| {
        fresh(
            b,
            || RateLimiter::with_clock("bench", ritmo_unlimited(), clock.clone()),
            |l| assert_ok(l.try_acquire_n(4).is_ok()),
        )
    });
    g.bench_function("governor", |b| {
        fresh(
            b,
            || Governor::direct(governor_unlimited()),
            |l| assert_ok(matches!(l.check_n(FOUR), Ok(Ok(())))),
        )
    });
    g.finish();
}

/// A limiter found by name once in a registry, then used through the reference it returned
/// (nothing is looked up per call), beside governor's direct limiter; and, for scale, governor's
/// keyed limiter, its way of naming quotas, which looks the key up on every call.
fn registry(c: &mut Criterion, clock: &StdClock) {
    let mut g = c.benchmark_group("registry_handle_admitted");
    g.bench_function("ritmo", |b| {
        let registry: Registry<StdClock, 4> = Registry::new(clock.clone());
        b.iter_custom(|iters| {
            let l = registry
                .get_or_create("geocoding", ritmo_unlimited())
                .expect("room for one");
            let start = Instant::now();
            for _ in 0..iters {
                assert_ok(black_box(l).try_acquire().is_ok());
            }
            start.elapsed()
        })
    });
    g.bench_function("governor", |b| {
        fresh(
            b,
            || Governor::direct(governor_unlimited()),
            |l| assert_ok(l.check().is_ok()),
        )
    });
    g.bench_function("governor_keyed", |b| {
        fresh(
            b,
            || governor::RateLimiter::hashmap(governor_unlimited()),
            |l| assert_ok(l.check_key(&"geocoding").is_ok()),
        )
    });
    g.finish();
}

fn contention(c: &mut Criterion, clock: &StdClock) {
    for threads in [1, 2] {
        let mut g = c.benchmark_group(format!("one_limiter_{threads}_threads"));
        g.bench_function("ritmo", |b| {
            threaded(
                b,
                threads,
                || RateLimiter::with_clock("bench", ritmo_unlimited(), clock.clone()),
                |l, _| assert_ok(l.try_acquire().is_ok()),
            )
        });
        g.bench_function("governor", |b| {
            threaded(
                b,
                threads,
                || Governor::direct(governor_unlimited()),
                |l, _| assert_ok(l.check().is_ok()),
            )
        });
        g.finish();
    }

    // Two limiters side by side in memory, one per thread: they share nothing but may share a
    // cache line.
    let mut g = c.benchmark_group("two_limiters_2_threads");
    g.bench_function("ritmo", |b| {
        threaded(
            b,
            2,
            || [0, 1].map(|_| RateLimiter::with_clock("bench", ritmo_unlimited(), clock.clone())),
            |l, i| assert_ok(l[i].try_acquire().is_ok()),
        )
    });
    g.bench_function("governor", |b| {
        threaded(
            b,
            2,
            || [0, 1].map(|_| Governor::direct(governor_unlimited())),
            |l, i| assert_ok(l[i].check().is_ok()),
        )
    });
    g.finish();
}

/// ritmo on its `CoarseClock` (a cached reading an upkeep thread refreshes) beside governor on
/// its `QuantaUpkeepClock` (the same idea, quanta's upkeep thread), both refreshed every
/// `CoarseClock::DEFAULT_RESOLUTION`. The ratio table also prints how much faster an admitted
/// call on the coarse clock is than one on `StdClock` (the `admitted` group, same run).
fn coarse(c: &mut Criterion) {
    let resolution = CoarseClock::DEFAULT_RESOLUTION;
    let clock = CoarseClock::new();
    // quanta runs one upkeep thread per process: one clock, cloned into every limiter.
    let upkeep = governor::clock::QuantaUpkeepClock::from_interval(resolution)
        .expect("quanta's upkeep thread");
    let mut g = c.benchmark_group("coarse_admitted");
    g.bench_function("ritmo", |b| {
        fresh(
            b,
            || RateLimiter::with_clock("bench", ritmo_unlimited(), clock.clone()),
            |l| assert_ok(l.try_acquire().is_ok()),
        )
    });
    g.bench_function("governor", |b| {
        fresh(
            b,
            || Governor::direct_with_clock(governor_unlimited(), upkeep.clone()),
            |l| assert_ok(l.check().is_ok()),
        )
    });
    g.finish();

    let mut g = c.benchmark_group("coarse_rejected");
    g.bench_function("ritmo", |b| {
        let l = RateLimiter::with_clock("bench", ritmo_hourly(), clock.clone());
        l.try_acquire().expect("the one permit");
        b.iter(|| assert_err(black_box(&l).try_acquire().is_err()))
    });
    g.bench_function("governor", |b| {
        let l = Governor::direct_with_clock(governor_hourly(), upkeep.clone());
        l.check().expect("the one permit");
        b.iter(|| assert_err(black_box(&l).check().is_err()))
    });
    g.finish();

    let mut g = c.benchmark_group("clock");
    g.bench_function("coarse_clock_read", |b| b.iter(|| black_box(&clock).now()));
    g.finish();
}

fn clock_read(c: &mut Criterion, clock: &StdClock) {
    let mut g = c.benchmark_group("clock");
    g.bench_function("std_clock_read", |b| b.iter(|| black_box(clock).now()));
    g.bench_function("instant_now", |b| b.iter(Instant::now));
    g.finish();
}

#[inline(always)]
fn assert_ok(ok: bool) {
    debug_assert!(ok, "a call meant to be admitted was rejected");
    black_box(ok);
}

#[inline(always)]
fn assert_err(err: bool) {
    debug_assert!(err, "a call meant to be rejected was admitted");
    black_box(err);
}

/// Where criterion writes its estimates: `$CRITERION_HOME`, else `$CARGO_TARGET_DIR/criterion`,
/// else the workspace's `target/criterion`.
fn output_directory() -> PathBuf {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return home.into();
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
    target.join("criterion")
}

/// The median time of `group/function` if this run measured it.
fn median_ns(dir: &Path, group: &str, function: &str, since: SystemTime) -> Option<f64> {
    let path = dir.join(group).join(function).join("new/estimates.json");
    let fresh = std::fs::metadata(&path).ok()?.modified().ok()? >= since;
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).ok()?).ok()?;
    fresh.then(|| json["median"]["point_estimate"].as_f64())?
}

fn print_ratios(dir: &Path, since: SystemTime) {
    let groups = [
        "admitted",
        "rejected",
        "logic_admitted",
        "logic_rejected",
        "acquire_4_admitted",
        "registry_handle_admitted",
        "one_limiter_1_threads",
        "one_limiter_2_threads",
        "two_limiters_2_threads",
        "coarse_admitted",
        "coarse_rejected",
    ];
    let rows: Vec<_> = groups
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
    println!("\nmedian ns per iteration (ratio < 1: ritmo is faster)");
    println!(
        "{:<24} {:>9} {:>9} {:>16}",
        "group", "ritmo", "governor", "ritmo/governor"
    );
    for (g, r, gov) in rows {
        println!("{g:<24} {r:>9.2} {gov:>9.2} {:>16.3}", r / gov);
    }
    if let Some(t) = median_ns(dir, "registry_handle_admitted", "governor_keyed", since) {
        println!("{:<24} {:>9} {t:>9.2}", "(governor, keyed by id)", "");
    }
    if let (Some(std), Some(coarse)) = (
        median_ns(dir, "admitted", "ritmo", since),
        median_ns(dir, "coarse_admitted", "ritmo", since),
    ) {
        println!(
            "admitted: ritmo on StdClock / ritmo on CoarseClock = {:.2}x (bar: >= 3)",
            std / coarse
        );
    }
    for f in ["std_clock_read", "coarse_clock_read", "instant_now"] {
        if let Some(t) = median_ns(dir, "clock", f, since) {
            println!("{:<24} {t:>9.2}", format!("clock/{f}"));
        }
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
    admitted(&mut c, &clock);
    rejected(&mut c, &clock);
    logic(&mut c);
    acquire_n(&mut c, &clock);
    registry(&mut c, &clock);
    contention(&mut c, &clock);
    coarse(&mut c);
    clock_read(&mut c, &clock);
    c.final_summary();
    print_ratios(&dir, since);
}
