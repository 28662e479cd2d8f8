//! ritmo-client's layer on a quota shared through Redis: the client takes its quota through the
//! server layer's `Store`, so a Redis limiter is one argument of `Outbound::with_quota`. Requests
//! made together go through the layer to an in-process service; what was sent at once, sent
//! after a wait and refused is compared with the reference model of SPEC's rules
//! (`ritmo-test-support`, in the store's microseconds), and the quota is seen spent in Redis by
//! another limiter, as another process would see it.

mod support;

use std::convert::Infallible;
use std::future::ready;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use http::{Request, Response};
use ritmo::client::{Cause, ClientLayer, Outbound, Stats, Target};
use ritmo_core::Config;
use ritmo_test_support::{Gcra, Outcome, Units};
use tower::{Layer, ServiceExt, service_fn};

/// Requests to each of `hosts`, made together through a `ClientLayer` on `outbound`, over a
/// service that counts what reaches it; the client's counts, after checking that every request
/// the client counts as sent reached the service and that every other was refused by the quota.
async fn drive<K, Q>(outbound: Outbound<K, Q>, hosts: &[&str]) -> Stats
where
    K: std::hash::Hash + Eq + Clone + Send + Sync + 'static,
    Q: ritmo::tower::Store<Key = K>,
{
    let served = Arc::new(AtomicU64::new(0));
    let count = Arc::clone(&served);
    let inner = service_fn(move |_: Request<()>| {
        count.fetch_add(1, Ordering::Relaxed);
        ready(Ok::<_, Infallible>(Response::new(())))
    });
    let svc = ClientLayer::new(outbound.clone()).layer(inner);
    let requests: Vec<_> = hosts
        .iter()
        .map(|host| {
            let request = Request::get(format!("http://{host}/")).body(()).unwrap();
            tokio::spawn(svc.clone().oneshot(request))
        })
        .collect();
    let mut refused = 0;
    for request in requests {
        if let Err(error) = request.await.unwrap() {
            let limited = error.limited().expect("only the quota refuses");
            assert_eq!(limited.cause(), Cause::LocalQuota);
            assert!(!limited.retry_after().is_zero());
            refused += 1;
        }
    }
    let stats = outbound.stats();
    assert_eq!(stats.sent, served.load(Ordering::Relaxed));
    assert_eq!(stats.limited_local, refused);
    stats
}

/// What the model says of `n` reservations made at one instant on a fresh quota, each waiting
/// within `max_wait`: how many are admitted at once, after a wait, and refused.
fn reference(config: Config, max_wait: Duration, n: usize) -> (u64, u64, u64) {
    let mut model = Gcra::new(Units::MICROS, config);
    let (mut at_once, mut waited, mut refused) = (0, 0, 0);
    for _ in 0..n {
        match model.reserve_within(0, 1, max_wait).0 {
            Outcome::Reserved { wait, .. } if wait.is_zero() => at_once += 1,
            Outcome::Reserved { .. } => waited += 1,
            Outcome::Rejected { .. } => refused += 1,
            other => panic!("the model answered {other:?}"),
        }
    }
    (at_once, waited, refused)
}

/// One quota for every request (2 per second, the client waiting up to 1.25 s): a burst of 2,
/// then slots 500 ms apart, those within 1.25 s waited for, the rest refused at once. The wait
/// bound lies halfway between two slots, so the time the requests take to reach Redis (well
/// under 250 ms) changes no request's fate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_redis_quota_waits_in_turn_then_refuses() {
    let Some(server) = support::Server::start() else {
        return;
    };
    let config = Config::new(2, Duration::from_secs(1)).unwrap();
    let max_wait = Duration::from_millis(1250);
    let limiter = ritmo_redis::builder("client", config)
        .connect(server.url())
        .unwrap();
    let outbound = Outbound::with_quota(
        "client",
        config.with_max_wait(max_wait),
        limiter,
        |_: &Target<'_>| (),
    )
    .build();
    let stats = drive(outbound, &["api.test"; 6]).await;
    let (at_once, waited, refused) = reference(config, max_wait, 6);
    assert_eq!(
        (at_once, waited, refused),
        (2, 2, 2),
        "the scenario shows all three"
    );
    assert_eq!(
        (stats.sent, stats.waited_local, stats.limited_local),
        (at_once + waited, waited, refused)
    );
}

/// One quota per host, shared through Redis (2 per 100 s, no waiting): each host gets its own
/// burst, the rest are refused, and another limiter on the same server finds the quotas spent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_quota_per_host_is_spent_for_every_process() {
    let Some(server) = support::Server::start() else {
        return;
    };
    let config = Config::new(2, Duration::from_secs(100)).unwrap();
    let limiter: ritmo_redis::RedisKeyedRateLimiter<String> = ritmo_redis::builder("hosts", config)
        .connect_keyed(server.url())
        .unwrap();
    let host = |t: &Target<'_>| t.host.unwrap_or_default().to_owned();
    let outbound = Outbound::with_quota("hosts", config, limiter, host).build();
    let hosts = ["a.test", "b.test", "a.test", "a.test", "b.test", "a.test"];
    let stats = drive(outbound, &hosts).await;
    let (a, b) = (
        reference(config, Duration::ZERO, 4),
        reference(config, Duration::ZERO, 2),
    );
    assert_eq!((a, b), ((2, 0, 2), (2, 0, 0)), "the scenario shows both");
    assert_eq!(
        (stats.sent, stats.waited_local, stats.limited_local),
        (a.0 + b.0, 0, a.2 + b.2)
    );
    let other: ritmo_redis::blocking::RedisKeyedRateLimiter<String> =
        ritmo_redis::builder("hosts", config)
            .connect_blocking_keyed(server.url())
            .unwrap();
    let left = tokio::task::spawn_blocking(move || {
        let a = other.available_permits(&"a.test".to_owned()).unwrap();
        let b = other.available_permits(&"b.test".to_owned()).unwrap();
        (a, b)
    });
    assert_eq!(left.await.unwrap(), (0, 0));
}
