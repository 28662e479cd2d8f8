//! The blocking pool opens at most `pool_size` connections; a caller beyond the cap waits for one
//! within its timeout, then its failure policy decides.

mod support;

use std::thread;
use std::time::{Duration, Instant};

use ritmo_core::{Config, Reason};
use ritmo_redis::{Source, blocking};

fn connections_received(server: &support::Server) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("stats")
        .query(&mut server.conn())
        .unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("total_connections_received:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn a_burst_of_threads_shares_the_capped_pool_and_every_call_is_served() {
    let Some(server) = support::Server::start() else {
        return;
    };
    let config = Config::new(1_000_000, Duration::from_secs(1)).unwrap();
    let limiter: blocking::RedisKeyedRateLimiter<str> = ritmo_redis::builder("pool", config)
        .timeout(Duration::from_secs(2))
        .pool_size(2)
        .connect_blocking_keyed(server.url())
        .unwrap();
    let before = connections_received(&server);
    let threads: Vec<_> = (0..16)
        .map(|t| {
            let limiter = limiter.clone();
            thread::spawn(move || {
                for i in 0..100 {
                    let permit = limiter
                        .try_acquire(&format!("{t}/{i}"))
                        .unwrap_or_else(|e| panic!("thread {t}, call {i}: {e}"));
                    assert_eq!(permit.source(), Source::Store);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    // `before` and this count each opened one inspection connection.
    let opened = connections_received(&server) - before - 1;
    assert!(opened <= 2, "{opened} connections for a pool of 2");
}

#[test]
fn a_caller_beyond_the_cap_waits_within_its_timeout_then_its_policy_decides() {
    let silent = support::Slow::start(None);
    let timeout = Duration::from_millis(250);
    let limiter = ritmo_redis::builder("cap", Config::new(10, Duration::from_secs(1)).unwrap())
        .timeout(timeout)
        .pool_size(1)
        .connect_blocking(silent.url())
        .unwrap();
    let first = {
        let limiter = limiter.clone();
        thread::spawn(move || limiter.try_acquire().map_err(|e| e.reason()))
    };
    // The first call holds the only connection, waiting on a server that never answers.
    let deadline = Instant::now() + Duration::from_secs(5);
    while silent.accepted() == 0 {
        assert!(Instant::now() < deadline, "the first call never connected");
        thread::sleep(Duration::from_millis(1));
    }
    let start = Instant::now();
    let second = limiter.try_acquire().map_err(|e| e.reason());
    let took = start.elapsed();
    assert_eq!(second.map(|p| p.source()), Err(Reason::Unavailable));
    assert!(took <= timeout + Duration::from_millis(150), "{took:?}");
    assert_eq!(
        first.join().unwrap().map(|p| p.source()),
        Err(Reason::Unavailable)
    );
    // The second caller connected only once the first had given its place back.
    assert!(silent.accepted() <= 2);
}
