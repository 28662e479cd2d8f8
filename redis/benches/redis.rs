//! Calls per second and latency per call: ritmo on a local redis-server (loopback) beside the
//! in-process limiter, in one run; and the number of commands each call sends, from
//! `INFO commandstats`.
//!
//! ```sh
//! cargo bench -p ritmo-redis --bench redis            # starts its own redis-server
//! RITMO_REDIS_BENCH_CALLS=2000 cargo bench -p ritmo-redis --bench redis   # a quick run
//! ```
//!
//! Every limiter admits every call (a quota far above the rate reached), so each call takes the
//! full path: the script's decision and its write.

#[path = "../tests/support/mod.rs"]
mod support;

use std::hint::black_box;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use ritmo_core::Config;
use ritmo_std::StdClock;

fn calls() -> usize {
    std::env::var("RITMO_REDIS_BENCH_CALLS")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(20_000)
}

/// Admits everything reached here: a million per second, bursts of a million.
fn config() -> Config {
    Config::new(1_000_000, Duration::from_secs(1)).unwrap()
}

struct Row {
    name: String,
    calls: usize,
    elapsed: Duration,
    latencies: Vec<Duration>,
}

impl Row {
    fn print(&mut self, baseline: Option<f64>) -> f64 {
        let per_sec = self.calls as f64 / self.elapsed.as_secs_f64();
        self.latencies.sort_unstable();
        let pct = |p: f64| {
            self.latencies
                .get(
                    ((self.latencies.len() as f64 * p) as usize)
                        .min(self.latencies.len().saturating_sub(1)),
                )
                .copied()
                .unwrap_or_default()
        };
        let ratio = baseline.map_or(String::new(), |b| format!("{:.0}x slower", b / per_sec));
        println!(
            "| {} | {:.0} | {:?} | {:?} | {:?} | {} |",
            self.name,
            per_sec,
            self.elapsed / self.calls as u32,
            pct(0.5),
            pct(0.99),
            ratio
        );
        per_sec
    }
}

fn timed(name: &str, calls: usize, mut call: impl FnMut()) -> Row {
    let mut latencies = Vec::with_capacity(calls);
    let start = Instant::now();
    for _ in 0..calls {
        let t = Instant::now();
        call();
        latencies.push(t.elapsed());
    }
    Row {
        name: name.into(),
        calls,
        elapsed: start.elapsed(),
        latencies,
    }
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo test --benches` lists; nothing to list
    }
    let Some(server) = support::Server::start() else {
        return;
    };
    let n = calls();
    println!("{n} calls per row (50x that in process): calls per second, wall time per call");
    println!("(elapsed / calls, all threads together), latency of one call at p50 and p99");
    println!("(each timed with two Instant::now reads, ~25 ns of it)\n");
    println!("| limiter | calls/s | wall time per call | p50 | p99 | |");
    println!("| --- | ---: | ---: | ---: | ---: | --- |");

    // In process: ritmo's RateLimiter on the default clock.
    let local = ritmo_core::RateLimiter::with_clock("bench", config(), StdClock::new());
    let mut row = timed("in-process `RateLimiter::try_acquire`", n * 50, || {
        black_box(local.try_acquire()).ok();
    });
    // Calls per second from a loop that does not time each call.
    let start = Instant::now();
    for _ in 0..n * 50 {
        black_box(local.try_acquire()).ok();
    }
    row.elapsed = start.elapsed();
    let baseline = row.print(None);

    // Redis, blocking, one thread.
    let blocking = ritmo_redis::builder("bench-blocking", config())
        .timeout(Duration::from_secs(2))
        .connect_blocking(server.url())
        .unwrap();
    blocking.try_acquire().unwrap();
    let before = server.command_calls();
    let mut row = timed("Redis, blocking, 1 thread", n, || {
        black_box(blocking.try_acquire()).unwrap();
    });
    let after = server.command_calls();
    row.print(Some(baseline));
    let evalsha = after["evalsha"] - before.get("evalsha").copied().unwrap_or(0);

    // Redis, blocking, 8 threads.
    let threads = 8;
    let limiter = Arc::new(blocking.clone());
    let start = Instant::now();
    let latencies: Vec<Duration> = (0..threads)
        .map(|_| {
            let limiter = limiter.clone();
            thread::spawn(move || {
                (0..n / threads)
                    .map(|_| {
                        let t = Instant::now();
                        black_box(limiter.try_acquire()).unwrap();
                        t.elapsed()
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    Row {
        name: format!("Redis, blocking, {threads} threads"),
        calls: latencies.len(),
        elapsed: start.elapsed(),
        latencies,
    }
    .print(Some(baseline));

    // Redis, async on tokio: one task, then 64 tasks on one multiplexed connection.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let limiter = ritmo_redis::builder("bench-async", config())
            .timeout(Duration::from_secs(2))
            .connect(server.url())
            .unwrap();
        limiter.try_acquire().await.unwrap();
        let mut latencies = Vec::with_capacity(n);
        let start = Instant::now();
        for _ in 0..n {
            let t = Instant::now();
            black_box(limiter.try_acquire().await).unwrap();
            latencies.push(t.elapsed());
        }
        Row {
            name: "Redis, async, 1 task".into(),
            calls: n,
            elapsed: start.elapsed(),
            latencies,
        }
        .print(Some(baseline));

        let tasks = 64;
        let start = Instant::now();
        let handles: Vec<_> = (0..tasks)
            .map(|_| {
                let limiter = limiter.clone();
                tokio::spawn(async move {
                    let mut latencies = Vec::with_capacity(n / tasks);
                    for _ in 0..n / tasks {
                        let t = Instant::now();
                        black_box(limiter.try_acquire().await).unwrap();
                        latencies.push(t.elapsed());
                    }
                    latencies
                })
            })
            .collect();
        let mut latencies = Vec::new();
        for h in handles {
            latencies.extend(h.await.unwrap());
        }
        Row {
            name: format!("Redis, async, {tasks} tasks"),
            calls: latencies.len(),
            elapsed: start.elapsed(),
            latencies,
        }
        .print(Some(baseline));
    });

    println!(
        "\nround trips: {evalsha} EVALSHA for {n} calls ({:.3} per call), nothing else sent",
        evalsha as f64 / n as f64
    );
    let inner = after
        .keys()
        .filter(|k| {
            ![
                "evalsha",
                "info",
                "time",
                "get",
                "set",
                "del",
                "script|load",
                "ping",
                "client|setinfo",
                "hello",
            ]
            .contains(&k.as_str())
        })
        .count();
    assert_eq!(inner, 0, "unexpected commands: {after:?}");
    assert_eq!(evalsha as usize, n, "one EVALSHA per call");
}
