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
//!
//! Rows: the blocking client on 1 and 8 threads, the async client at 1, 16 and 256 tasks (calls
//! gathered into shared script calls) and at 16 and 256 tasks without gathering, then
//! `redis-benchmark` (when installed) calling the same script on the same server, without and
//! with pipelining. `benches/RESULTS.md` (workspace root) has the table.

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

/// `tasks` tasks sharing `n` calls of `limiter`, on `runtime`.
fn async_row<C: ritmo_redis::AsyncConnection>(
    runtime: &tokio::runtime::Runtime,
    limiter: &ritmo_redis::RedisRateLimiter<C>,
    tasks: usize,
    n: usize,
    note: &str,
    baseline: f64,
) {
    runtime.block_on(async {
        limiter.try_acquire().await.unwrap();
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
            name: format!("Redis, async, {tasks} tasks{note}"),
            calls: latencies.len(),
            elapsed: start.elapsed(),
            latencies,
        }
        .print(Some(baseline));
    });
}

/// redis-benchmark (from the same package as the server) calling the acquire script with the
/// arguments of an admitted call, 64 connections, without and with 16 calls pipelined on each.
fn redis_benchmark(server: &support::Server, n: usize) {
    let sha = redis::Script::new(include_str!("../src/acquire.lua"))
        .get_hash()
        .to_string();
    let port = server
        .url()
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches('/')
        .to_string();
    for pipeline in ["1", "16"] {
        let out = std::process::Command::new("redis-benchmark")
            .args(["-p", &port, "-c", "64", "-P", pipeline, "-q"])
            .args(["-n", &(n * 2).to_string()])
            // now from TIME, window 1000 s, no margin; one permit, no wait.
            .args([
                "EVALSHA",
                &sha,
                "1",
                "{bench}",
                "",
                "1000000000",
                "0",
                "1",
                "0",
            ])
            .output();
        match out {
            Ok(out) if out.status.success() => {
                let text = String::from_utf8_lossy(&out.stdout);
                let rate = text
                    .split(['\r', '\n'])
                    .filter_map(|l| l.split(": ").nth(1)?.split(' ').next()?.parse::<f64>().ok())
                    .next_back()
                    .unwrap_or(f64::NAN);
                println!(
                    "| redis-benchmark -c 64 -P {pipeline}, EVALSHA of the acquire script | {rate:.0} | | | | |"
                );
            }
            _ => println!(
                "| redis-benchmark -c 64 -P {pipeline} | not installed or failed | | | | |"
            ),
        }
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

    // Redis, async on tokio: 1, 16 and 256 tasks on one multiplexed connection, concurrent calls
    // gathered into shared script calls; then the same without gathering (a limiter built
    // outside a runtime on a connection opened inside one: one script call per call).
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let limiter = runtime.block_on(async {
        ritmo_redis::builder("bench-async", config())
            .timeout(Duration::from_secs(2))
            .connect(server.url())
            .unwrap()
    });
    let conn = runtime.block_on(async {
        redis::Client::open(server.url())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap()
    });
    let unbatched = ritmo_redis::builder("bench-unbatched", config())
        .timeout(Duration::from_secs(2))
        .connect_with(conn)
        .unwrap();
    for tasks in [1, 16, 256] {
        async_row(&runtime, &limiter, tasks, n, "", baseline);
    }
    for tasks in [16, 256] {
        async_row(
            &runtime,
            &unbatched,
            tasks,
            n,
            ", one script call each",
            baseline,
        );
    }

    // Redis itself, on the same server in the same run: redis-benchmark calling the acquire
    // script (every call admitted, as above) from 64 connections, without and with pipelining.
    redis_benchmark(&server, n);

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
