//! What the store sees: one script call per operation (counted with `INFO commandstats`), the key
//! layout and its expiry, bad input, a disabled config, the async client.

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use ritmo_core::{AcquireError, Config, ErrorCode, Reason};
use ritmo_redis::{FailurePolicy, Source, blocking};

fn calls_since(
    before: &BTreeMap<String, u64>,
    after: &BTreeMap<String, u64>,
) -> BTreeMap<String, u64> {
    after
        .iter()
        .filter(|(name, _)| name.as_str() != "info")
        .filter_map(|(name, &n)| {
            let d = n - before.get(name).copied().unwrap_or(0);
            (d > 0).then(|| (name.clone(), d))
        })
        .collect()
}

/// `INFO commandstats` counts the commands a script runs too (`time`, `get`, `set`, `del`): the
/// client's own are the rest.
fn sent(calls: BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    calls
        .into_iter()
        .filter(|(name, _)| !["time", "get", "set", "del"].contains(&name.as_str()))
        .collect()
}

fn evalsha(n: u64) -> BTreeMap<String, u64> {
    BTreeMap::from([("evalsha".to_string(), n)])
}

#[test]
fn every_operation_is_one_evalsha_blocking() {
    let Some(server) = support::Server::start() else {
        return;
    };
    let config = Config::new(5, Duration::from_secs(10))
        .unwrap()
        .with_max_wait(Duration::from_secs(5));
    let limiter: blocking::RedisKeyedRateLimiter<str> = ritmo_redis::builder("rt", config)
        .connect_blocking_keyed(server.url())
        .unwrap();
    // The first call loads the script (NOSCRIPT, SCRIPT LOAD, EVALSHA) and opens the connection.
    limiter.try_acquire("warm").unwrap();
    limiter.available_permits("warm").unwrap();
    limiter.reserve("warm").unwrap().cancel();

    type Op<'a> = (&'a str, Box<dyn Fn() + 'a>, u64);
    let ops: Vec<Op<'_>> = vec![
        (
            "try_acquire",
            Box::new(|| {
                let _ = limiter.try_acquire("a");
            }),
            1,
        ),
        (
            "try_acquire_n",
            Box::new(|| {
                let _ = limiter.try_acquire_n("b", 2);
            }),
            1,
        ),
        (
            "available_permits",
            Box::new(|| {
                let _ = limiter.available_permits("a");
            }),
            1,
        ),
        (
            "retry_after",
            Box::new(|| {
                let _ = limiter.retry_after("a");
            }),
            1,
        ),
        (
            "reserve + commit",
            Box::new(|| {
                let _ = limiter.reserve("c").map(|r| r.commit());
            }),
            1,
        ),
        // a refund is the second script: one more call
        (
            "reserve + cancel",
            Box::new(|| {
                let _ = limiter.reserve("d").map(|r| r.cancel());
            }),
            2,
        ),
        (
            "rejected",
            Box::new(|| {
                let _ = limiter.try_acquire_n("b", 5);
            }),
            1,
        ),
    ];
    for (name, op, per_call) in ops {
        let before = server.command_calls();
        for _ in 0..10 {
            op();
        }
        let after = server.command_calls();
        assert_eq!(
            sent(calls_since(&before, &after)),
            evalsha(10 * per_call),
            "{name}"
        );
    }
    // Invalid requests never reach the store.
    let before = server.command_calls();
    assert!(matches!(
        limiter.try_acquire_n("a", 0),
        Err(AcquireError::InvalidPermits(_))
    ));
    assert!(matches!(
        limiter.reserve_n("a", 6),
        Err(AcquireError::InvalidPermits(_))
    ));
    assert_eq!(
        calls_since(&before, &server.command_calls()),
        BTreeMap::new()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_operation_is_one_evalsha_async() {
    let Some(server) = support::Server::start() else {
        return;
    };
    let config = Config::new(5, Duration::from_secs(10)).unwrap();
    let limiter = ritmo_redis::builder("rt-async", config)
        .connect(server.url())
        .unwrap();
    limiter.try_acquire().await.unwrap();
    limiter.available_permits().await.unwrap();
    let before = server.command_calls();
    for _ in 0..10 {
        let _ = limiter.try_acquire().await;
        let _ = limiter.retry_after().await;
    }
    assert_eq!(
        sent(calls_since(&before, &server.command_calls())),
        evalsha(20)
    );
}

#[test]
fn a_flushed_script_is_loaded_again() {
    let Some(server) = support::Server::start() else {
        return;
    };
    let config = Config::new(5, Duration::from_secs(10)).unwrap();
    let limiter = ritmo_redis::builder("flush", config)
        .connect_blocking(server.url())
        .unwrap();
    limiter.try_acquire().unwrap();
    let _: () = redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query(&mut server.conn())
        .unwrap();
    let before = server.command_calls();
    let permit = limiter.try_acquire().unwrap();
    assert_eq!(permit.source(), Source::Store);
    let calls = calls_since(&before, &server.command_calls());
    assert_eq!(
        calls.get("evalsha"),
        Some(&2),
        "NOSCRIPT, then again: {calls:?}"
    );
    assert_eq!(calls.get("script|load"), Some(&1), "{calls:?}");
    assert_eq!(limiter.available_permits().unwrap(), 3);
}

#[test]
fn keys_carry_a_hash_tag_and_expire_when_the_burst_is_full_again() {
    let Some(server) = support::Server::start() else {
        return;
    };
    let mut conn = server.conn();
    let config = Config::new(2, Duration::from_millis(600)).unwrap(); // T = 300 ms
    let keyed: blocking::RedisKeyedRateLimiter<str> = ritmo_redis::builder("ttl", config)
        .connect_blocking_keyed(server.url())
        .unwrap();
    keyed.try_acquire("alice").unwrap();
    let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut conn).unwrap();
    assert_eq!(keys, ["{ritmo:ttl}:alice"]);
    let pttl: i64 = redis::cmd("PTTL")
        .arg("{ritmo:ttl}:alice")
        .query(&mut conn)
        .unwrap();
    assert!(
        pttl > 0 && pttl <= 300,
        "expires when the one permit taken is back: {pttl} ms"
    );
    keyed.try_acquire("alice").unwrap();
    let pttl: i64 = redis::cmd("PTTL")
        .arg("{ritmo:ttl}:alice")
        .query(&mut conn)
        .unwrap();
    assert!(pttl > 300 && pttl <= 600, "{pttl} ms");
    assert!(keyed.try_acquire("alice").is_err());
    // Another key is limited apart.
    assert_eq!(keyed.available_permits("bob").unwrap(), 2);
    // Once the burst is full again the key is gone: nothing is left behind.
    std::thread::sleep(Duration::from_millis(700));
    let exists: i64 = redis::cmd("EXISTS")
        .arg("{ritmo:ttl}:alice")
        .query(&mut conn)
        .unwrap();
    assert_eq!(exists, 0);
    assert_eq!(keyed.available_permits("alice").unwrap(), 2);

    // A custom prefix; one quota is `{prefix:id}`.
    let single = ritmo_redis::builder("one", config)
        .prefix("app")
        .connect_blocking(server.url())
        .unwrap();
    single.try_acquire().unwrap();
    let exists: i64 = redis::cmd("EXISTS")
        .arg("{app:one}")
        .query(&mut conn)
        .unwrap();
    assert_eq!(exists, 1);
}

#[test]
fn bad_input_and_a_disabled_config() {
    let Some(server) = support::Server::start() else {
        return;
    };
    let config = Config::new(3, Duration::from_secs(1)).unwrap();
    let limiter = ritmo_redis::builder("bad", config)
        .connect_blocking(server.url())
        .unwrap();
    let AcquireError::InvalidPermits(e) = limiter.try_acquire_n(4).unwrap_err() else {
        panic!("k > permits is invalid")
    };
    assert_eq!((e.requested(), e.permits()), (4, 3));
    assert!(matches!(
        limiter.try_acquire_n(0),
        Err(AcquireError::InvalidPermits(_))
    ));

    let too_fast = Config::new(1_000_001, Duration::from_secs(1)).unwrap();
    let err = ritmo_redis::builder("fast", too_fast)
        .connect_blocking(server.url())
        .unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::TooFast));
    let err = ritmo_redis::builder("t", config)
        .timeout(Duration::ZERO)
        .connect_blocking(server.url())
        .unwrap_err();
    assert!(matches!(err, ritmo_redis::Error::ZeroTimeout));
    assert!(matches!(
        ritmo_redis::builder("t", config).connect_blocking("nonsense://x"),
        Err(ritmo_redis::Error::Connection(_))
    ));
    assert!(matches!(
        ritmo_redis::builder("t", config).connect(server.url()),
        Err(ritmo_redis::Error::NoRuntime)
    ));

    // A key holding something that is not a state: an error from the store, decided by the policy.
    let _: () = redis::cmd("SET")
        .arg("{ritmo:bad}")
        .arg("not a number")
        .query(&mut server.conn())
        .unwrap();
    let err = limiter.try_acquire().unwrap_err();
    assert_eq!(err.reason(), Reason::Unavailable);
    assert!(limiter.available_permits().is_err());
    let open = ritmo_redis::builder("bad", config)
        .on_unavailable(FailurePolicy::Admit)
        .connect_blocking(server.url())
        .unwrap();
    assert_eq!(open.try_acquire().unwrap().source(), Source::Open);

    // Disabled: every call passes and nothing is written.
    let before = server.command_calls();
    let off = ritmo_redis::builder("off", config.with_enabled(false))
        .connect_blocking(server.url())
        .unwrap();
    for _ in 0..10 {
        assert_eq!(off.try_acquire().unwrap().source(), Source::Disabled);
    }
    assert_eq!(off.available_permits().unwrap(), 3);
    assert_eq!(
        calls_since(&before, &server.command_calls()),
        BTreeMap::new()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_reservations_wait_and_dropped_ones_go_back() {
    let Some(server) = support::Server::start() else {
        return;
    };
    let config = Config::new(2, Duration::from_millis(400)) // T = 200 ms
        .unwrap()
        .with_max_wait(Duration::from_millis(500));
    let keyed: ritmo_redis::RedisKeyedRateLimiter<u64> = ritmo_redis::builder("wait", config)
        .connect_keyed(server.url())
        .unwrap();
    keyed.try_acquire_n(&7, 2).await.unwrap();
    // The third permit arrives in about 200 ms: acquire waits for it.
    let permit = keyed.acquire(&7).await.unwrap();
    assert_eq!(permit.source(), Source::Store);
    assert!(
        permit.wait() > Duration::from_millis(100) && permit.wait() <= Duration::from_millis(200)
    );
    // A waiter dropped before its slot gives its permit back (it is the tail).
    let before = keyed.retry_after(&7).await.unwrap();
    let waiting = tokio::time::timeout(Duration::from_millis(20), keyed.acquire(&7)).await;
    assert!(waiting.is_err(), "still waiting when dropped");
    // the refund runs in the background: give it a moment
    let mut after = keyed.retry_after(&7).await.unwrap();
    for _ in 0..100 {
        if after <= before {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        after = keyed.retry_after(&7).await.unwrap();
    }
    assert!(after <= before, "given back: {after:?} <= {before:?}");
    // cancel says whether it went back
    let r1 = keyed.reserve(&7).await.unwrap();
    let r2 = keyed.reserve(&7).await.unwrap();
    assert!(
        !r1.cancel().await,
        "r2 was reserved after r1: r1's slot stays unused"
    );
    assert!(r2.cancel().await);
    // over max_wait: rejected at once
    let mut held = Vec::new();
    let err = loop {
        match keyed.reserve_n(&7, 2).await {
            Ok(r) => held.push(r),
            Err(e) => break e,
        }
        assert!(held.len() < 5, "max_wait bounds the queue");
    };
    assert!(matches!(err, AcquireError::RateLimited(e) if e.reason() == Reason::NoPermitInTime));
    for r in held {
        r.commit();
    }
}

/// A `ManualClock` the test and the limiter share.
#[derive(Clone)]
struct Shared(std::sync::Arc<ritmo_core::ManualClock>);

impl ritmo_core::Clock for Shared {
    fn now(&self) -> u64 {
        self.0.now()
    }
    fn tick_rate(&self) -> ritmo_core::TickRate {
        self.0.tick_rate()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_decision_reports_the_key_status_from_the_same_call() {
    let Some(server) = support::Server::start() else {
        return;
    };
    let clock = Shared(std::sync::Arc::new(ritmo_core::ManualClock::starting_at(
        1_000_000_000,
    )));
    let config = Config::new(4, Duration::from_millis(400)).unwrap(); // T = 100 ms
    let keyed: ritmo_redis::RedisKeyedRateLimiter<str> = ritmo_redis::builder("status", config)
        .clock(clock.clone())
        .connect_keyed(server.url())
        .unwrap();
    let ms = Duration::from_millis;
    let r = keyed
        .reserve_with_status("k", 1, Some(Duration::ZERO))
        .await
        .unwrap();
    assert_eq!(r.wait_time(), Duration::ZERO);
    let status = r.permit().status().unwrap();
    assert_eq!((status.remaining(), status.reset()), (3, ms(100)));
    r.commit();
    let p = keyed.try_acquire_n("k", 3).await.unwrap();
    assert_eq!(
        p.status().map(|s| (s.remaining(), s.reset())),
        Some((0, ms(100)))
    );
    clock.0.advance(ms(30));
    let refusal = keyed
        .reserve_with_status("k", 1, Some(Duration::ZERO))
        .await
        .unwrap_err();
    assert!(matches!(refusal.error, AcquireError::RateLimited(e) if e.retry_after() == ms(70)));
    assert_eq!(
        refusal.status.map(|s| (s.remaining(), s.reset())),
        Some((0, ms(70)))
    );
    // A longer max_wait than the config's (0) for this call only.
    let r = keyed
        .reserve_with_status("k", 2, Some(ms(200)))
        .await
        .unwrap();
    assert_eq!(r.wait_time(), ms(170));
    assert_eq!(r.permit().status().map(|s| s.remaining()), Some(0));
    assert!(r.cancel().await);
    let refusal = keyed
        .reserve_with_status("k", 5, Some(ms(200)))
        .await
        .unwrap_err();
    assert!(matches!(refusal.error, AcquireError::InvalidPermits(_)));
    assert_eq!(refusal.status, None);
    assert_eq!(keyed.retry_after_n("k", 2).await.unwrap(), ms(170));
    assert!(matches!(
        keyed.retry_after_n("k", 5).await,
        Err(ritmo_redis::AcquireOrStoreError::InvalidPermits(_))
    ));
    let r = keyed.reserve_n_within("k", 1, ms(70)).await.unwrap();
    assert!(!r.is_ready() && r.wait_time() == ms(70));
    assert!(matches!(
        keyed.reserve_n_within("k", 1, ms(70)).await,
        Err(AcquireError::RateLimited(_))
    ));
    drop(r);
    clock.0.advance(ms(370));
    // the dropped reservation went back in the background
    let mut available = 0;
    for _ in 0..100 {
        available = keyed.available_permits("k").await.unwrap();
        if available == 4 {
            break;
        }
        tokio::time::sleep(ms(10)).await;
    }
    assert_eq!(available, 4);
}

/// The blocking limiter reports the key's status from the same script call as the async one, and
/// gives a dropped reservation back before `drop` returns.
#[test]
fn blocking_decisions_report_the_key_status_from_the_same_call() {
    let Some(server) = support::Server::start() else {
        return;
    };
    let clock = Shared(std::sync::Arc::new(ritmo_core::ManualClock::starting_at(
        1_000_000_000,
    )));
    let config = Config::new(4, Duration::from_millis(400)).unwrap(); // T = 100 ms
    let keyed: blocking::RedisKeyedRateLimiter<str> = ritmo_redis::builder("status", config)
        .clock(clock.clone())
        .connect_blocking_keyed(server.url())
        .unwrap();
    let ms = Duration::from_millis;
    let status = |p: ritmo_redis::Permit| p.status().map(|s| (s.remaining(), s.reset()));
    let r = keyed.reserve_with_status("k", 1, None).unwrap();
    assert_eq!(status(r.commit()), Some((3, ms(100))));
    assert_eq!(
        status(keyed.try_acquire_n("k", 3).unwrap()),
        Some((0, ms(100)))
    );
    clock.0.advance(ms(30));
    let refusal = keyed.reserve_with_status("k", 1, None).unwrap_err();
    assert!(matches!(refusal.error, AcquireError::RateLimited(e) if e.retry_after() == ms(70)));
    assert_eq!(
        refusal.status.map(|s| (s.remaining(), s.reset())),
        Some((0, ms(70)))
    );
    // A longer max_wait than the config's (0) for this call only.
    let r = keyed.reserve_with_status("k", 2, Some(ms(200))).unwrap();
    assert_eq!(r.wait_time(), ms(170));
    assert!(r.cancel());
    let refusal = keyed.reserve_with_status("k", 5, None).unwrap_err();
    assert!(matches!(refusal.error, AcquireError::InvalidPermits(_)));
    assert_eq!(refusal.status, None);
    let r = keyed.reserve_n_within("k", 1, ms(70)).unwrap();
    assert_eq!(r.wait_time(), ms(70));
    assert!(keyed.reserve_n_within("k", 1, ms(70)).is_err());
    drop(r);
    // Given back at once: the same slot is there to reserve again.
    assert_eq!(
        keyed.reserve_n_within("k", 1, ms(70)).unwrap().wait_time(),
        ms(70)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_runs_the_work_only_with_a_permit() {
    let Some(server) = support::Server::start() else {
        return;
    };
    let config = Config::new(1, Duration::from_secs(100)).unwrap();
    let limiter = ritmo_redis::builder("call", config)
        .connect(server.url())
        .unwrap();
    assert_eq!(limiter.call(async { 7 }).await.unwrap(), 7);
    let mut ran = false;
    let refused = limiter.call(async { ran = true }).await;
    assert!(refused.is_err() && !ran, "refused: the work never starts");
    #[derive(Debug)]
    enum MyError {
        Limited,
    }
    impl From<ritmo_core::RateLimitExceeded> for MyError {
        fn from(_: ritmo_core::RateLimitExceeded) -> Self {
            MyError::Limited
        }
    }
    let r: Result<(), MyError> = limiter.try_call(async { Ok(()) }).await;
    assert!(matches!(r, Err(MyError::Limited)));

    let url = server.url();
    tokio::task::spawn_blocking(move || {
        let keyed: blocking::RedisKeyedRateLimiter<str> = ritmo_redis::builder("call-b", config)
            .connect_blocking_keyed(url)
            .unwrap();
        assert_eq!(keyed.call("a", || 1).unwrap(), 1);
        assert!(keyed.call("a", || panic!("must not run")).is_err());
        assert_eq!(
            keyed
                .try_call::<_, ritmo_core::RateLimitExceeded>("b", || Ok(2))
                .unwrap(),
            2
        );
    })
    .await
    .unwrap();
}

/// Ids and client keys full of the bytes the key layout uses (braces, colons, percent signs) and
/// of bytes Redis clients trip on (CRLF, NUL, non-UTF-8, 1 KB): every (id, key) pair has a quota
/// of its own, and one limiter's keys share its hash tag.
#[test]
fn hostile_ids_and_keys_never_share_a_quota() {
    let Some(server) = support::Server::start() else {
        return;
    };
    let config = Config::new(1, Duration::from_secs(60)).unwrap();
    let keyed = |id: &'static str| -> blocking::RedisKeyedRateLimiter<[u8]> {
        ritmo_redis::builder(id, config)
            .connect_blocking_keyed(server.url())
            .unwrap()
    };
    let long = vec![b'}'; 1024];
    let pairs: Vec<(&'static str, Option<&[u8]>)> = vec![
        // The two collisions: keyed "a}:b" + "c" against keyed "a" + "b}:c", and the
        // single "x}:y" against keyed "x" + "y}".
        ("a}:b", Some(b"c")),
        ("a", Some(b"b}:c")),
        ("x}:y", None),
        ("x", Some(b"y}")),
        ("x", Some(b"")),
        ("x", None),
        ("", None),
        ("", Some(b"")),
        (":", Some(b"")),
        ("{", Some(b"}")),
        ("%7D", Some(b"%")),
        ("}", Some(b"%7D")),
        ("a\r\n", Some(b"\0\xff\xfe")),
        ("a", Some(b"\r\n\0\xff\xfe")),
        ("a", Some(&long)),
        ("a", Some(&long[1..])),
    ];
    for (id, key) in &pairs {
        let granted = match key {
            Some(key) => keyed(id).try_acquire(key).map(|p| p.source()),
            None => ritmo_redis::builder(id, config)
                .connect_blocking(server.url())
                .unwrap()
                .try_acquire()
                .map(|p| p.source()),
        };
        assert_eq!(
            granted.map_err(|e| e.reason()),
            Ok(Source::Store),
            "{id:?} / {key:?} found its quota already spent by another pair"
        );
    }
    let keys: Vec<Vec<u8>> = redis::cmd("KEYS")
        .arg("*")
        .query(&mut server.conn())
        .unwrap();
    assert_eq!(keys.len(), pairs.len(), "one Redis key per pair");
    // Each key's hash tag (the bytes between the first `{` and the next `}`) is its limiter's.
    for key in &keys {
        let open = key.iter().position(|&b| b == b'{').unwrap();
        let close = open + key[open..].iter().position(|&b| b == b'}').unwrap();
        let tag = &key[open + 1..close];
        assert!(
            tag.starts_with(b"ritmo:") && !tag.contains(&b'{'),
            "{key:?}"
        );
    }
}
