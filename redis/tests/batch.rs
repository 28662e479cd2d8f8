//! The async limiter gathers concurrent calls into one script call; every decision stays the one
//! the calls would get one by one: never a permit more than the quota, reservations queued on
//! distinct slots that keep the window bound.

mod support;

use std::time::Duration;

use ritmo_core::{Config, Reason};
use ritmo_redis::{RedisKeyedRateLimiter, Source};

fn evalsha(server: &support::Server) -> u64 {
    server.command_calls().get("evalsha").copied().unwrap_or(0)
}

#[tokio::test]
async fn concurrent_calls_share_script_calls_and_admit_exactly_the_quota() {
    let Some(server) = support::Server::start() else {
        return;
    };
    let config = Config::new(50, Duration::from_secs(600)).unwrap();
    let limiter: RedisKeyedRateLimiter<str> = ritmo_redis::builder("batch", config)
        .timeout(Duration::from_secs(5))
        .connect_keyed(server.url())
        .unwrap();
    let before = evalsha(&server);
    let tasks: Vec<_> = (0..256)
        .map(|i| {
            let limiter = limiter.clone();
            tokio::spawn(async move {
                // Three keys in one script call: each its own quota.
                let key = ["a", "b", "c"][i % 3];
                (key, limiter.try_acquire(key).await)
            })
        })
        .collect();
    let mut admitted = std::collections::BTreeMap::new();
    for task in tasks {
        let (key, result) = task.await.unwrap();
        match result {
            Ok(permit) => {
                assert_eq!(permit.source(), Source::Store);
                *admitted.entry(key).or_insert(0) += 1;
            }
            Err(e) => assert_eq!(e.reason(), Reason::NoPermitInTime, "{e}"),
        }
    }
    assert_eq!(
        admitted,
        [("a", 50), ("b", 50), ("c", 50)].into_iter().collect()
    );
    let calls = evalsha(&server) - before;
    assert!(calls < 256, "{calls} script calls for 256 concurrent calls");
    // The state is the one 50 calls leave, one by one.
    assert_eq!(limiter.available_permits("a").await.unwrap(), 0);
}

#[tokio::test]
async fn concurrent_reservations_get_distinct_slots_within_the_window_bound() {
    let Some(server) = support::Server::start() else {
        return;
    };
    // 10 per second, reservations within 10 s: 100 calls all fit (10 now, 90 queued 100 ms
    // apart).
    let config = Config::new(10, Duration::from_secs(1))
        .unwrap()
        .with_max_wait(Duration::from_secs(10));
    let limiter = ritmo_redis::builder("queue", config)
        .timeout(Duration::from_secs(5))
        .connect(server.url())
        .unwrap();
    let tasks: Vec<_> = (0..100)
        .map(|_| {
            let limiter = limiter.clone();
            tokio::spawn(async move { limiter.reserve().await.map(|r| r.commit()) })
        })
        .collect();
    let mut slots = Vec::new();
    for task in tasks {
        let permit = task.await.unwrap().unwrap();
        let at = permit.store_time_micros().unwrap();
        slots.push(at + permit.wait().as_micros() as u64);
    }
    slots.sort_unstable();
    let t = 100_000; // T in microseconds
    for i in 0..slots.len() {
        for (j, &b) in slots.iter().enumerate().skip(i) {
            let count = (j - i + 1) as u64;
            assert!(
                count <= 10 + (b - slots[i]) / t,
                "{count} slots in {} us",
                b - slots[i]
            );
        }
    }
    // The next reservation queues behind all 100 (its slot about 9.1 s after the first): none
    // was lost.
    let next = limiter.reserve().await.unwrap();
    assert!(next.wait_time() > Duration::from_secs(5), "{next:?}");
    next.commit();
}
