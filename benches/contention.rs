//! One shared limiter under contention: admitted calls per second for ritmo and governor at each
//! thread count given, in one run, as a table.
//!
//! Every thread calls `try_acquire` (ritmo, default `StdClock`) or `check` (governor, default
//! quanta clock) on one limiter that never runs out (a burst of `u32::MAX`, one permit per
//! nanosecond: the same quotas as `benches/compare.rs`) for a fixed time; the two libraries
//! alternate, round after round, and the table shows each one's median over the rounds. A second
//! table does the same for the bare atomic step each design could use (a compare-and-swap loop,
//! which ritmo and governor both use, against one `fetch_add`): the most a cheaper admission
//! could gain.
//!
//! ```text
//! cargo bench --bench contention -- 1 2 4 8 12 16            # the thread counts to run
//! cargo bench --bench contention -- 1 2 --secs 1 --rounds 5   # time per measurement, rounds
//! cargo bench --bench contention -- --test                    # smoke: 1 and 2 threads, briefly
//! ```
//!
//! On a machine without a Rust toolchain: build once, copy the binary, run it there.
//!
//! ```text
//! RUSTFLAGS="-C target-feature=+crt-static" cargo bench --bench contention --no-run \
//!     --target x86_64-unknown-linux-gnu       # prints the path of a static binary
//! ./contention-<hash> 1 2 4 8 12 16
//! ```

use std::hint::black_box;
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use ritmo::RateLimiter;
use ritmo::server::StdClock;

mod support;
use support::{governor_unlimited, ritmo_unlimited};

/// Runs `call` on `threads` threads at once for `time`; returns the calls admitted per second
/// (a call returns whether it was admitted).
fn admitted_per_second(threads: usize, time: Duration, call: &(dyn Fn() -> bool + Sync)) -> f64 {
    let stop = AtomicBool::new(false);
    let barrier = Barrier::new(threads + 1);
    let (admitted, elapsed) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let (stop, barrier) = (&stop, &barrier);
                s.spawn(move || {
                    barrier.wait();
                    let mut admitted = 0u64;
                    // Checking the flag every 64 calls keeps its load off the measured path.
                    while !stop.load(Ordering::Relaxed) {
                        for _ in 0..64 {
                            admitted += u64::from(black_box(call()));
                        }
                    }
                    admitted
                })
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        std::thread::sleep(time);
        stop.store(true, Ordering::Relaxed);
        let admitted: u64 = handles
            .into_iter()
            .map(|h| h.join().expect("a thread"))
            .sum();
        (admitted, start.elapsed())
    });
    admitted as f64 / elapsed.as_secs_f64()
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

struct Options {
    threads: Vec<usize>,
    time: Duration,
    rounds: usize,
}

fn options() -> Result<Options, String> {
    let mut options = Options {
        threads: Vec::new(),
        time: Duration::from_millis(500),
        rounds: 5,
    };
    let mut smoke = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            // What `cargo bench` passes to every bench binary.
            "--bench" => {}
            "--test" => smoke = true,
            "--secs" => {
                let v = args.next().ok_or("--secs needs a value")?;
                let secs: f64 = v
                    .parse()
                    .map_err(|_| format!("--secs: not a number: {v:?}"))?;
                if !(secs > 0.0 && secs <= 60.0) {
                    return Err(format!("--secs must be in (0, 60], not {v}"));
                }
                options.time = Duration::from_secs_f64(secs);
            }
            "--rounds" => {
                let v = args.next().ok_or("--rounds needs a value")?;
                options.rounds = v
                    .parse()
                    .ok()
                    .filter(|r| (1..=100).contains(r))
                    .ok_or(format!("--rounds must be 1 to 100, not {v:?}"))?;
            }
            other => {
                let n: usize = other
                    .parse()
                    .ok()
                    .filter(|n| (1..=1024).contains(n))
                    .ok_or(format!("not a thread count (1 to 1024): {other:?}"))?;
                options.threads.push(n);
            }
        }
    }
    if options.threads.is_empty() {
        options.threads = vec![1, 2];
    }
    if smoke {
        options.time = Duration::from_millis(20);
        options.rounds = 1;
    }
    Ok(options)
}

fn main() {
    let options = match options() {
        Ok(options) => options,
        Err(err) => {
            eprintln!("contention: {err}");
            eprintln!("usage: contention [THREADS...] [--secs S] [--rounds R]");
            std::process::exit(2);
        }
    };
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!(
        "one shared limiter, every call admitted; {} rounds of {:?} per cell, median; {cpus} CPUs",
        options.rounds, options.time
    );
    let clock = StdClock::new();
    println!(
        "\n{:>7} {:>16} {:>16} {:>15}",
        "threads", "ritmo calls/s", "governor calls/s", "ritmo/governor"
    );
    for &threads in &options.threads {
        let (mut ours, mut theirs) = (Vec::new(), Vec::new());
        for _ in 0..options.rounds {
            let ritmo = RateLimiter::with_clock("contention", ritmo_unlimited(), clock.clone());
            ours.push(admitted_per_second(threads, options.time, &|| {
                ritmo.try_acquire().is_ok()
            }));
            let governor = governor::RateLimiter::direct(governor_unlimited());
            theirs.push(admitted_per_second(threads, options.time, &|| {
                governor.check().is_ok()
            }));
        }
        let (r, g) = (median(ours), median(theirs));
        println!("{threads:>7} {r:>16.0} {g:>16.0} {:>15.3}", r / g);
    }

    // The atomic step alone, on a padded word: what `max(tat, now) + T` costs as a CAS loop
    // (ritmo and governor both) against a single fetch_add (what a saturated limiter could use).
    println!(
        "\n{:>7} {:>16} {:>16} {:>15}",
        "threads", "CAS loop ops/s", "fetch_add ops/s", "CAS/fetch_add"
    );
    for &threads in &options.threads {
        let (mut cas, mut add) = (Vec::new(), Vec::new());
        for _ in 0..options.rounds {
            let word = Padded(AtomicU64::new(0));
            cas.push(admitted_per_second(threads, options.time, &|| {
                let now = black_box(1u64);
                let mut tat = word.0.load(Ordering::Acquire);
                loop {
                    let new = tat.max(now) + 1;
                    match word.0.compare_exchange_weak(
                        tat,
                        new,
                        Ordering::AcqRel,
                        Ordering::Acquire,
                    ) {
                        Ok(_) => return true,
                        Err(found) => tat = found,
                    }
                }
            }));
            let word = Padded(AtomicU64::new(0));
            add.push(admitted_per_second(threads, options.time, &|| {
                word.0.fetch_add(1, Ordering::AcqRel) != u64::MAX
            }));
        }
        let (c, a) = (median(cas), median(add));
        println!("{threads:>7} {c:>16.0} {a:>16.0} {:>15.3}", c / a);
    }
}

/// A word on a cache line of its own.
#[repr(align(128))]
struct Padded(AtomicU64);
