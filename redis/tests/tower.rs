//! ritmo-tower's HTTP layer on a quota shared through Redis: the same layer, the store swapped in
//! one line (`RateLimitLayer::new(redis_limiter, extractor)`).

mod support;

use std::convert::Infallible;
use std::time::Duration;

use http::{HeaderValue, Request, Response, StatusCode};
use ritmo_core::Config;
use ritmo_tower::RateLimitLayer;
use ritmo_tower::Store;
use ritmo_tower::key::{Global, Header};
use tower::{Layer, ServiceExt, service_fn};

async fn handler(_: Request<()>) -> Result<Response<String>, Infallible> {
    Ok(Response::new("ok".into()))
}

fn get(api_key: &str) -> Request<()> {
    Request::get("/")
        .header("x-api-key", api_key)
        .body(())
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_global_quota_through_redis() {
    let Some(server) = support::Server::start() else {
        return;
    };
    // 2 per 100 s: the time the test takes changes nothing.
    let limiter = ritmo_redis::builder("http", Config::new(2, Duration::from_secs(100)).unwrap())
        .connect(server.url())
        .unwrap();
    let policy = limiter.policy();
    assert_eq!(
        (policy.name(), policy.quota(), policy.window()),
        ("http", 2, Duration::from_secs(100))
    );
    let svc = RateLimitLayer::new(limiter.clone(), Global).layer(service_fn(handler));
    for _ in 0..2 {
        let response = svc.clone().oneshot(get("a")).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
    }
    let response = svc.clone().oneshot(get("a")).await.unwrap();
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    let retry: u64 = response.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((49..=50).contains(&retry), "Retry-After {retry}");
    let fields = response.headers()["ratelimit"].to_str().unwrap();
    assert!(fields.contains("r=0"), "{fields}");
    // The quota is Redis's: another process (here, a second limiter) sees it spent.
    let other = ritmo_redis::builder("http", Config::new(2, Duration::from_secs(100)).unwrap())
        .connect_blocking(server.url())
        .unwrap();
    assert_eq!(
        tokio::task::spawn_blocking(move || other.available_permits().unwrap())
            .await
            .unwrap(),
        0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quota_per_api_key_through_redis() {
    let Some(server) = support::Server::start() else {
        return;
    };
    let limiter: ritmo_redis::RedisKeyedRateLimiter<HeaderValue> =
        ritmo_redis::builder("keys", Config::new(1, Duration::from_secs(100)).unwrap())
            .connect_keyed(server.url())
            .unwrap();
    let svc = RateLimitLayer::new(
        limiter,
        Header::new(http::HeaderName::from_static("x-api-key")),
    )
    .layer(service_fn(handler));
    assert_eq!(
        svc.clone().oneshot(get("alice")).await.unwrap().status(),
        StatusCode::OK
    );
    assert_eq!(
        svc.clone().oneshot(get("bob")).await.unwrap().status(),
        StatusCode::OK
    );
    let response = svc.clone().oneshot(get("alice")).await.unwrap();
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    let mut conn = server.conn();
    let exists: i64 = redis::cmd("EXISTS")
        .arg("{ritmo:keys}:alice")
        .query(&mut conn)
        .unwrap();
    assert_eq!(exists, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_down_is_a_refusal_under_reject() {
    let Some(mut server) = support::Server::start() else {
        return;
    };
    let limiter = ritmo_redis::builder("down", Config::new(5, Duration::from_secs(1)).unwrap())
        .timeout(Duration::from_millis(100))
        .connect(server.url())
        .unwrap();
    server.kill();
    let decided = match Store::acquire(&limiter, &(), 1, Some(Duration::ZERO)) {
        ritmo_tower::Decision::Now(decided) => decided,
        ritmo_tower::Decision::Later(round_trip) => round_trip.await,
    };
    let denial = match decided {
        Ok(_) => panic!("admitted with the store down"),
        Err(denial) => denial,
    };
    let error = denial.error.rate_limited().copied().unwrap();
    assert_eq!(error.reason(), ritmo_core::Reason::Unavailable);
    assert_eq!(denial.status.remaining(), 0);
}

/// A layer without a max wait of its own waits within the Redis limiter config's: the second
/// request's slot is 200 ms away, within the config's 1 s, so it waits and runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_redis_configs_max_wait_is_the_layers_default() {
    let Some(server) = support::Server::start() else {
        return;
    };
    let config = Config::new(1, Duration::from_millis(200))
        .unwrap()
        .with_max_wait(Duration::from_secs(1));
    let limiter = ritmo_redis::builder("wait", config)
        .connect(server.url())
        .unwrap();
    let waits = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = std::sync::Arc::clone(&waits);
    let svc = RateLimitLayer::new(limiter, Global)
        .on_event(move |event| {
            if let ritmo_tower::LayerEvent::Waiting { wait } = event {
                seen.lock().unwrap().push(*wait);
            }
        })
        .layer(service_fn(handler));
    for _ in 0..2 {
        let response = svc.clone().oneshot(get("a")).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
    }
    let waits = waits.lock().unwrap();
    assert_eq!(waits.len(), 1, "{waits:?}");
    assert!(
        !waits[0].is_zero() && waits[0] <= Duration::from_secs(1),
        "{waits:?}"
    );
}
