//! Redis killed (SIGKILL) and restarted, or hung (SIGSTOP), in the middle of a run: each failure
//! policy does what it declares, nothing over-admits under "reject", no call hangs, and the
//! clients reconnect by themselves.
//!
//! The server writes every change to its append-only file before answering, so a SIGKILL loses no
//! state and the window bound must hold across the whole run, restart included.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use ritmo_core::{Config, RateLimitExceeded, Reason};
use ritmo_redis::{FailurePolicy, Permit, Source};

const TIMEOUT: Duration = Duration::from_millis(200);
/// No call may take longer than this: the timeout, plus room for a loaded machine.
const NO_HANG: Duration = Duration::from_secs(3);

#[derive(Debug)]
struct Record {
    start: Instant,
    end: Instant,
    result: Result<Permit, RateLimitExceeded>,
}

/// 10 per second: T = 100 ms.
fn config() -> Config {
    Config::new(10, Duration::from_secs(1)).unwrap()
}

/// Calls `call` from `threads` threads until `stop`, 2 ms apart, recording every outcome.
fn hammer(
    threads: usize,
    stop: Arc<AtomicBool>,
    call: impl Fn() -> Result<Permit, RateLimitExceeded> + Send + Sync + 'static,
) -> thread::JoinHandle<Vec<Record>> {
    let call = Arc::new(call);
    thread::spawn(move || {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                let (call, stop) = (call.clone(), stop.clone());
                thread::spawn(move || {
                    let mut records = Vec::new();
                    while !stop.load(Ordering::Relaxed) {
                        let start = Instant::now();
                        let result = call();
                        records.push(Record {
                            start,
                            end: Instant::now(),
                            result,
                        });
                        thread::sleep(Duration::from_millis(2));
                    }
                    records
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    })
}

/// Every window of the store's clock holds at most `n + floor(w / T)` permits (`T` in us).
fn assert_window_bound(times: &mut [u64], n: u64, t: u64) {
    times.sort_unstable();
    for i in 0..times.len() {
        for (j, &b) in times.iter().enumerate().skip(i) {
            let count = (j - i + 1) as u64;
            let w = b - times[i];
            assert!(
                count <= n + w / t,
                "{count} permits in {w} us (n = {n}, T = {t} us)"
            );
        }
    }
}

/// Kills the server at 600 ms, restarts it at 1200 ms, stops the callers at 2400 ms; returns the
/// records, the instant of the kill, and the instants the restart began and was ready.
fn outage(
    server: &mut support::Server,
    records: thread::JoinHandle<Vec<Record>>,
    stop: &AtomicBool,
) -> (Vec<Record>, Instant, Instant, Instant) {
    thread::sleep(Duration::from_millis(600));
    server.kill();
    let killed = Instant::now();
    thread::sleep(Duration::from_millis(600));
    let restarting = Instant::now();
    server.restart();
    let restarted = Instant::now();
    thread::sleep(Duration::from_millis(1200));
    stop.store(true, Ordering::Relaxed);
    (records.join().unwrap(), killed, restarting, restarted)
}

fn assert_no_hang(records: &[Record]) {
    for r in records {
        assert!(
            r.end - r.start < NO_HANG,
            "a call took {:?}",
            r.end - r.start
        );
    }
}

fn store_times(records: &[Record]) -> Vec<u64> {
    records
        .iter()
        .filter_map(|r| r.result.as_ref().ok())
        .map(|p| {
            assert_eq!(p.source(), Source::Store);
            p.store_time_micros().unwrap()
        })
        .collect()
}

/// Reconnected: permits from the store again, asked after the restart.
fn assert_reconnected(records: &[Record], restarted: Instant) {
    let after = records
        .iter()
        .filter(|r| r.start > restarted)
        .filter(|r| matches!(&r.result, Ok(p) if p.source() == Source::Store))
        .count();
    assert!(after > 0, "no permit from the store after the restart");
}

#[test]
fn reject_never_over_admits_and_the_blocking_client_reconnects() {
    let Some(mut server) = support::Server::start_persistent() else {
        return;
    };
    let limiter = ritmo_redis::builder("reject", config())
        .timeout(TIMEOUT)
        .on_unavailable(FailurePolicy::Reject)
        .connect_blocking(server.url())
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let l = limiter.clone();
    let records = hammer(4, stop.clone(), move || l.try_acquire());
    let (records, killed, restarting, restarted) = outage(&mut server, records, &stop);
    assert_no_hang(&records);

    let unavailable: Vec<&Record> = records
        .iter()
        .filter(|r| matches!(&r.result, Err(e) if e.reason() == Reason::Unavailable))
        .collect();
    assert!(
        !unavailable.is_empty(),
        "calls during the outage are refused as unavailable"
    );
    for r in &unavailable {
        assert_eq!(r.result.as_ref().unwrap_err().retry_after(), TIMEOUT);
    }
    let outage_calls = records
        .iter()
        .filter(|r| r.start > killed && r.end < restarting);
    for r in outage_calls {
        assert!(
            r.result.is_err(),
            "admitted while the store was down: {r:?}"
        );
    }
    // Only the store admits, and within the bound over every window, across the restart.
    let mut times = store_times(&records);
    assert_window_bound(&mut times, 10, 100_000);
    assert_reconnected(&records, restarted);
}

#[test]
fn reject_on_a_hung_server_times_out() {
    let Some(server) = support::Server::start() else {
        return;
    };
    let limiter = ritmo_redis::builder("hung", config())
        .timeout(TIMEOUT)
        .connect_blocking(server.url())
        .unwrap();
    limiter.try_acquire().unwrap();
    server.pause();
    let start = Instant::now();
    let err = limiter.try_acquire().unwrap_err();
    assert!(start.elapsed() < NO_HANG);
    assert_eq!(err.reason(), Reason::Unavailable);
    let peek = limiter.available_permits().unwrap_err();
    assert!(peek.is_timeout(), "{peek}");
    server.resume();
    // The timed-out connection was dropped; a fresh one answers.
    let mut ok = false;
    for _ in 0..50 {
        if limiter.try_acquire().is_ok() {
            ok = true;
            break;
        }
        thread::sleep(Duration::from_millis(20));
    }
    assert!(ok, "answers again after the pause");
}

#[test]
fn admit_lets_calls_through_while_the_store_is_down() {
    let Some(mut server) = support::Server::start_persistent() else {
        return;
    };
    let limiter = ritmo_redis::builder("admit", config())
        .timeout(TIMEOUT)
        .on_unavailable(FailurePolicy::Admit)
        .connect_blocking(server.url())
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let l = limiter.clone();
    let records = hammer(4, stop.clone(), move || l.try_acquire());
    let (records, _, _, restarted) = outage(&mut server, records, &stop);
    assert_no_hang(&records);
    let mut open = 0;
    for r in &records {
        match &r.result {
            Ok(p) if p.source() == Source::Open => {
                assert_eq!(p.store_time_micros(), None);
                open += 1;
            }
            Ok(p) => assert_eq!(p.source(), Source::Store),
            Err(e) => assert_eq!(e.reason(), Reason::NoPermitInTime, "never unavailable"),
        }
    }
    assert!(open > 0, "calls during the outage are let through");
    // The store's own admissions still keep the bound.
    let mut times: Vec<u64> = records
        .iter()
        .filter_map(|r| r.result.as_ref().ok())
        .filter(|p| p.source() == Source::Store)
        .map(|p| p.store_time_micros().unwrap())
        .collect();
    assert_window_bound(&mut times, 10, 100_000);
    assert_reconnected(&records, restarted);
}

#[test]
fn local_fallback_limits_in_process_and_the_async_client_reconnects() {
    let Some(mut server) = support::Server::start_persistent() else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // Each of (say) two processes keeps 5 per second to itself while Redis is away.
    let local = Config::new(5, Duration::from_secs(1)).unwrap(); // T = 200 ms
    let limiter = runtime.block_on(async {
        ritmo_redis::builder("local", config())
            .timeout(TIMEOUT)
            .on_unavailable(FailurePolicy::Local(local))
            .connect(server.url())
            .unwrap()
    });
    let stop = Arc::new(AtomicBool::new(false));
    let (l, handle) = (limiter.clone(), runtime.handle().clone());
    let records = hammer(4, stop.clone(), move || handle.block_on(l.try_acquire()));
    let (records, killed, _, _) = outage(&mut server, records, &stop);
    assert_no_hang(&records);

    let fallback: Vec<&Record> = records
        .iter()
        .filter(|r| matches!(&r.result, Ok(p) if p.source() == Source::Fallback))
        .collect();
    for r in &records {
        if let Err(e) = &r.result {
            assert_eq!(
                e.reason(),
                Reason::NoPermitInTime,
                "the fallback decides, never 'unavailable'"
            );
        }
    }
    assert!(
        !fallback.is_empty(),
        "the fallback admits during the outage"
    );
    // The fallback keeps its own bound (5 + floor(w / 200 ms)) over the span of its decisions,
    // and it started warm: the store's admissions just before the kill were charged to it too.
    let first = fallback.iter().map(|r| r.start).min().unwrap();
    let last = fallback.iter().map(|r| r.end).max().unwrap();
    assert!(first + TIMEOUT > killed);
    let span = (last - first).as_micros() as u64;
    assert!(
        fallback.len() as u64 <= 5 + span / 200_000,
        "{} fallback permits in {span} us",
        fallback.len()
    );
    let mut times = store_times(
        &records
            .into_iter()
            .filter(|r| !matches!(&r.result, Ok(p) if p.source() == Source::Fallback))
            .collect::<Vec<_>>(),
    );
    assert_window_bound(&mut times, 10, 100_000);
    // The connection manager reconnects by itself: the store decides again.
    let again = runtime.block_on(async {
        for _ in 0..100 {
            if let Ok(p) = limiter.try_acquire().await
                && p.source() == Source::Store
            {
                return true;
            }
            if limiter.available_permits().await.is_ok_and(|n| n == 0) {
                tokio::time::sleep(Duration::from_millis(100)).await;
            } else {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        false
    });
    assert!(again, "the async client is back on the store");
}

#[test]
fn the_first_call_after_a_restart_reaches_the_new_server() {
    let Some(mut server) = support::Server::start() else {
        return;
    };
    let limiter = ritmo_redis::builder("restart", config())
        .timeout(Duration::from_secs(2))
        .connect_blocking(server.url())
        .unwrap();
    limiter.try_acquire().unwrap();
    server.restart();
    // The pooled connection is dead; the call retries on a fresh one instead of failing.
    let permit = limiter.try_acquire().unwrap();
    assert_eq!(permit.source(), Source::Store);
}
