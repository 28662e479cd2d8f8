//! Four OS processes x four threads share one quota in Redis for a fixed time (3 s, or
//! `RITMO_REDIS_PROCESS_SECS`). Every admission reports the script's `now` (Redis `TIME`): over
//! every window of Redis's clock the permits stay within `permits + floor(w / T)`, and the
//! accounting adds up (each process's attempts = admissions + rejections, every permit reported).
//!
//! The worker processes are this test binary run again with `worker_process` and the server's URL
//! in the environment.

mod support;

use std::io::Write;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use ritmo_core::{AcquireError, Config, Reason};

const PROCESSES: usize = 4;
const THREADS: usize = 4;

/// 40 per 400 ms: T = 10 ms, bursts of up to 40.
fn config() -> Config {
    Config::new(40, Duration::from_millis(400))
        .unwrap()
        .with_max_wait(Duration::from_millis(30))
}

fn run_secs() -> f64 {
    std::env::var("RITMO_REDIS_PROCESS_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3.0)
}

/// The worker: does nothing unless started by `processes_share_one_quota`.
#[test]
fn worker_process() {
    let Ok(url) = std::env::var("RITMO_REDIS_WORKER_URL") else {
        return;
    };
    let limiter = ritmo_redis::builder("shared", config())
        .timeout(Duration::from_secs(2))
        .connect_blocking(url)
        .unwrap();
    let until = Instant::now() + Duration::from_secs_f64(run_secs());
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let limiter = limiter.clone();
            thread::spawn(move || {
                let mut lines = Vec::new();
                let (mut attempts, mut permits, mut rejected) = (0u64, 0u64, 0u64);
                while Instant::now() < until {
                    attempts += 1;
                    // Thread 0 waits for its permit (within max_wait), thread 1 takes two at a
                    // time, the others one.
                    let (k, result) = match t {
                        0 => (1, limiter.acquire().map_err(AcquireError::from)),
                        1 => (2, limiter.try_acquire_n(2)),
                        _ => (1, limiter.try_acquire().map_err(AcquireError::from)),
                    };
                    match result {
                        Ok(p) => {
                            // a reserved permit is used at its slot
                            let at = p.store_time_micros().unwrap() + p.wait().as_micros() as u64;
                            lines.push(format!("ADMIT {at} {k}"));
                            permits += k;
                        }
                        Err(AcquireError::RateLimited(e)) => {
                            assert_eq!(e.reason(), Reason::NoPermitInTime, "{e}");
                            rejected += 1;
                        }
                        Err(e) => panic!("{e}"),
                    }
                    thread::sleep(Duration::from_millis(1));
                }
                lines.push(format!("COUNT {attempts} {permits} {rejected}"));
                lines
            })
        })
        .collect();
    let lines: Vec<String> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    let mut out = std::io::stdout().lock();
    // libtest has written "test worker_process ... " without a newline: start a line of our own.
    writeln!(out).unwrap();
    for line in lines {
        writeln!(out, "{line}").unwrap();
    }
}

#[test]
fn processes_share_one_quota() {
    if std::env::var_os("RITMO_REDIS_WORKER_URL").is_some() {
        return;
    }
    let Some(server) = support::Server::start() else {
        return;
    };
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..PROCESSES)
        .map(|_| {
            Command::new(&exe)
                .args([
                    "worker_process",
                    "--exact",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env("RITMO_REDIS_WORKER_URL", server.url())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut admissions: Vec<(u64, u64)> = Vec::new();
    let mut reported = 0u64;
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "a worker failed");
        let text = String::from_utf8(out.stdout).unwrap();
        let mut process_permits = 0;
        let mut counted = 0;
        let mut lines = 0;
        for line in text.lines() {
            let fields: Vec<u64> = line
                .split(' ')
                .skip(1)
                .filter_map(|f| f.parse().ok())
                .collect();
            if line.starts_with("ADMIT ") {
                admissions.push((fields[0], fields[1]));
                process_permits += fields[1];
            } else if line.starts_with("COUNT ") {
                let (attempts, permits, rejected) = (fields[0], fields[1], fields[2]);
                counted += permits;
                lines += 1;
                assert!(attempts > 0);
                assert!(rejected <= attempts);
                // every attempt was admitted or rejected (k permits per admission)
                assert!(permits <= 2 * (attempts - rejected) && permits >= attempts - rejected);
            }
        }
        assert_eq!(lines, THREADS, "every thread reported");
        assert_eq!(
            process_permits, counted,
            "every admitted permit was reported"
        );
        reported += counted;
    }
    // Every window on Redis's clock: permits <= 40 + floor(w / 10 ms).
    admissions.sort_unstable();
    let (n, t) = (40u64, 10_000u64);
    for i in 0..admissions.len() {
        let mut count = 0;
        for &(at, k) in &admissions[i..] {
            count += k;
            let w = at - admissions[i].0;
            assert!(count <= n + w / t, "{count} permits in a window of {w} us");
        }
    }
    let span = admissions.last().unwrap().0 - admissions[0].0;
    assert!(reported <= n + span / t);
    assert!(reported > n, "the burst at least: {reported}");
    eprintln!(
        "{PROCESSES} processes x {THREADS} threads: {reported} permits in {:.3} s of Redis time \
         (bound {})",
        span as f64 / 1e6,
        n + span / t
    );
}
