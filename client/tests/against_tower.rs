//! A client behind `ClientLayer` against a server limited by ritmo-tower, over real HTTP on
//! 127.0.0.1: it learns from the server's fields and never receives a `429` after its first one.

mod support;

use std::time::Duration;

use axum::Router;
use axum::routing::get;
use http::{Request, StatusCode};
use ritmo_client::{ClientLayer, Outbound};
use ritmo_core::{Config, RateLimiter};
use ritmo_std::StdClock;
use ritmo_tower::RateLimitLayer;
use ritmo_tower::key::Global;
use tower::{Layer, ServiceExt};

/// The server's quota: a burst of 5, then one every `period / 5`, far below the client's own 100
/// per second: only the server's fields can keep the client from its 429s.
async fn limited_server(admitted_fields: bool, period: Duration) -> std::net::SocketAddr {
    let config = Config::new(5, period).unwrap();
    let limiter: &'static RateLimiter<StdClock> = Box::leak(Box::new(RateLimiter::with_clock(
        "api",
        config,
        StdClock::new(),
    )));
    let app = Router::new()
        .route("/", get(|| async { "ok" }))
        .layer(RateLimitLayer::new(limiter, Global).admitted_fields(admitted_fields));
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    addr
}

async fn run(
    admitted_fields: bool,
    period: Duration,
    requests: usize,
) -> (Vec<u16>, ritmo_client::Stats) {
    let addr = limited_server(admitted_fields, period).await;
    let config = Config::new(100, Duration::from_secs(1))
        .unwrap()
        .with_max_wait(Duration::from_secs(3));
    let outbound = Outbound::per_host("client", config).build();
    let svc = ClientLayer::new(outbound.clone()).layer(support::hyper_client());
    let mut statuses = Vec::new();
    for _ in 0..requests {
        let req = Request::get(format!("http://{addr}/"))
            .body(String::new())
            .unwrap();
        let response = svc
            .clone()
            .oneshot(req)
            .await
            .expect("sent within max_wait");
        let status = response.status();
        assert!(
            status == StatusCode::OK || status == StatusCode::TOO_MANY_REQUESTS,
            "unexpected {status}"
        );
        statuses.push(status.as_u16());
    }
    (statuses, outbound.stats())
}

#[tokio::test]
async fn learns_from_admitted_responses_and_never_gets_a_429() {
    let (statuses, stats) = tokio::time::timeout(
        Duration::from_secs(30),
        run(true, Duration::from_secs(1), 12),
    )
    .await
    .expect("ends within its deadline");
    assert_eq!(
        statuses,
        vec![200; 12],
        "RateLimit r=0 on a 200 holds the client before a 429"
    );
    assert!(stats.waited_server >= 1, "{stats:?}");
}

#[tokio::test]
async fn a_429_is_never_followed_by_another() {
    // Without fields on admitted responses the client only learns from a 429 (Retry-After and
    // RateLimit): it then waits for the server's reset, so the next request is admitted. (It
    // cannot know how much of the refilled quota is left: without `adopt_policies` one 429 per
    // refill is the most it can get; with ritmo-tower's default fields, none.) 5 per 5 s: one
    // permit back a second, so the burst's 429 comes whatever the machine's speed, and then
    // each refill's.
    let (statuses, stats) = tokio::time::timeout(
        Duration::from_secs(30),
        run(false, Duration::from_secs(5), 10),
    )
    .await
    .expect("ends within its deadline");
    assert_eq!(
        statuses[..6],
        [200, 200, 200, 200, 200, 429],
        "the burst, then the first 429"
    );
    for pair in statuses.windows(2) {
        assert!(pair != [429, 429], "a 429 right after a 429: {statuses:?}");
    }
    assert!(stats.waited_server >= 1, "{stats:?}");
}
