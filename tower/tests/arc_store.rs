//! The layer on limiters shared by `Arc`, as on `&'static` ones: the same decisions, waits,
//! refunds by outcome (tail rule) and the permit of a request dropped while waiting given back.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::{Request, Response, StatusCode};
use ritmo_core::{Config, ManualClock, RateLimiter};
use ritmo_std::{IpKey, KeyedRateLimiter, TokioClock};
use ritmo_tower::charge::not_304_or_5xx;
use ritmo_tower::key::{Global, PeerIp};
use ritmo_tower::{LayerEvent, RateLimitLayer, RefundCause};
use tower::{Layer, ServiceExt, service_fn};

async fn handler(request: Request<()>) -> Result<Response<String>, Infallible> {
    let status = request
        .uri()
        .path()
        .trim_start_matches('/')
        .parse::<u16>()
        .ok()
        .and_then(|s| StatusCode::from_u16(s).ok())
        .unwrap_or(StatusCode::OK);
    let mut response = Response::new("ok".to_string());
    *response.status_mut() = status;
    Ok(response)
}

fn get(path: &str) -> Request<()> {
    Request::get(path).body(()).unwrap()
}

#[tokio::test]
async fn an_arc_limiter_admits_rejects_and_refunds_by_outcome() {
    let limiter = Arc::new(RateLimiter::new(
        "arc",
        Config::new(2, Duration::from_secs(60)).unwrap(),
        ManualClock::new(),
    ));
    let svc = RateLimitLayer::new(Arc::clone(&limiter), Global)
        .charge(not_304_or_5xx())
        .layer(service_fn(handler));
    // A 304 gives its permit back (a reservation was made: the classifier may refund).
    assert_eq!(
        svc.clone().oneshot(get("/304")).await.unwrap().status(),
        304
    );
    assert_eq!(limiter.available_permits(), 2);
    for _ in 0..2 {
        assert_eq!(svc.clone().oneshot(get("/")).await.unwrap().status(), 200);
    }
    assert_eq!(limiter.available_permits(), 0);
    let refused = svc.clone().oneshot(get("/")).await.unwrap();
    assert_eq!(refused.status(), 429);
    assert_eq!(refused.headers()["retry-after"], "30");
}

#[tokio::test(start_paused = true)]
async fn an_arc_limiter_lets_requests_wait_and_takes_back_a_dropped_one() {
    let limiter = Arc::new(RateLimiter::with_clock(
        "arc-wait",
        Config::new(1, Duration::from_secs(1)).unwrap(),
        TokioClock::new(),
    ));
    let refunds = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&refunds);
    let svc = RateLimitLayer::new(Arc::clone(&limiter), Global)
        .max_wait(Duration::from_secs(5))
        .on_event(move |e| {
            if let LayerEvent::Refunded { cause, returned } = e {
                seen.lock().unwrap().push((*cause, *returned));
            }
        })
        .layer(service_fn(handler));
    svc.clone().oneshot(get("/")).await.unwrap();
    // Waits its slot (1 s), then runs.
    let start = tokio::time::Instant::now();
    assert_eq!(svc.clone().oneshot(get("/")).await.unwrap().status(), 200);
    assert!(start.elapsed() >= Duration::from_secs(1));
    // A request dropped while it waits gives its permit back.
    let waiting = tokio::spawn(svc.clone().oneshot(get("/")));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(limiter.retry_after(), Duration::from_millis(1700));
    waiting.abort();
    assert!(waiting.await.unwrap_err().is_cancelled());
    assert_eq!(*refunds.lock().unwrap(), vec![(RefundCause::Dropped, true)]);
    assert_eq!(limiter.retry_after(), Duration::from_millis(700));
}

#[tokio::test]
async fn an_arc_keyed_limiter_keeps_one_quota_per_client() {
    let keyed = Arc::new(KeyedRateLimiter::with_clock(
        "arc-per-ip",
        Config::new(1, Duration::from_secs(10)).unwrap(),
        100,
        ManualClock::new(),
    ));
    let svc = RateLimitLayer::new(Arc::clone(&keyed), PeerIp::new())
        .charge(not_304_or_5xx())
        .layer(service_fn(handler));
    let from = |ip: [u8; 4], path: &str| {
        let mut request = get(path);
        request
            .extensions_mut()
            .insert(SocketAddr::from((ip, 5555)));
        request
    };
    assert_eq!(
        svc.clone()
            .oneshot(from([1, 1, 1, 1], "/500"))
            .await
            .unwrap()
            .status(),
        500
    );
    assert_eq!(
        keyed.available_permits(&IpKey::from(std::net::Ipv4Addr::new(1, 1, 1, 1))),
        1
    );
    assert_eq!(
        svc.clone()
            .oneshot(from([1, 1, 1, 1], "/"))
            .await
            .unwrap()
            .status(),
        200
    );
    assert_eq!(
        svc.clone()
            .oneshot(from([1, 1, 1, 1], "/"))
            .await
            .unwrap()
            .status(),
        429
    );
    assert_eq!(
        svc.clone()
            .oneshot(from([2, 2, 2, 2], "/"))
            .await
            .unwrap()
            .status(),
        200
    );
    assert_eq!(keyed.len(), 2);
}

/// The one keyed type behind the layer whatever its store: the heap-free table, a `static` built
/// in a `const` context, keeps one quota per client and refunds by outcome as the map does.
#[tokio::test]
async fn a_static_fixed_table_keeps_one_quota_per_client() {
    use ritmo_core::const_config;
    use ritmo_core::keyed::KeyedLimiter;
    static CLOCK: ManualClock = ManualClock::new();
    static TABLE: KeyedLimiter<IpKey, &ManualClock, 8> = KeyedLimiter::new(
        "table-per-ip",
        const_config!(1, Duration::from_secs(10)),
        &CLOCK,
        7,
    );
    let svc = RateLimitLayer::new(&TABLE, PeerIp::new())
        .charge(not_304_or_5xx())
        .layer(service_fn(handler));
    let status = |ip: [u8; 4], path: &str| {
        let mut request = get(path);
        request
            .extensions_mut()
            .insert(SocketAddr::from((ip, 5555)));
        let svc = svc.clone();
        async move { svc.oneshot(request).await.unwrap() }
    };
    assert_eq!(status([1, 1, 1, 1], "/500").await.status(), 500);
    let one = IpKey::from(std::net::Ipv4Addr::new(1, 1, 1, 1));
    assert_eq!(
        TABLE.available_permits(&one),
        1,
        "a 500 gives its permit back"
    );
    assert_eq!(status([1, 1, 1, 1], "/").await.status(), 200);
    let refused = status([1, 1, 1, 1], "/").await;
    assert_eq!(refused.status(), 429);
    assert_eq!(refused.headers()["retry-after"], "10");
    assert_eq!(status([2, 2, 2, 2], "/").await.status(), 200);
}
