//! Per-key quotas over real HTTP (SPEC §18): a tiered keyed limiter as the layer's store, keyed by
//! an API key header mapped to a plan by the user's function, on an axum server on 127.0.0.1. A
//! free key and a paid key each get their own limit and their own `RateLimit-Policy` name; an
//! upgrade mid-way reports the new plan at once and hands out no fresh burst.

mod support;

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::routing::get;
use bytes::Bytes;
use http::{HeaderName, HeaderValue, Request, Response};
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use ritmo_core::keyed::{Tier, Tiers};
use ritmo_core::{Config, ManualClock};
use ritmo_std::KeyedRateLimiter;
use ritmo_tower::RateLimitLayer;
use ritmo_tower::key::Header;
use support::net::{client, serve};
use support::{header, policy, ratelimit};

/// The API keys on the paid plan: `pk_paid_*`, and those upgraded since.
static UPGRADED: Mutex<BTreeSet<Vec<u8>>> = Mutex::new(BTreeSet::new());

/// The user's plan function: the tier of an API key (0 free, 1 paid).
fn plan(api_key: &HeaderValue) -> usize {
    let bytes = api_key.as_bytes();
    let upgraded = UPGRADED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .contains(bytes);
    usize::from(bytes.starts_with(b"pk_paid_") || upgraded)
}

/// GETs `/` with `x-api-key: key`.
async fn fetch(
    client: &Client<HttpConnector, Empty<Bytes>>,
    addr: SocketAddr,
    key: &str,
) -> Response<String> {
    let request = Request::get(format!("http://{addr}/"))
        .header("x-api-key", key)
        .body(Empty::new())
        .unwrap();
    let response = client.request(request).await.unwrap();
    let (parts, body) = response.into_parts();
    let bytes = body.collect().await.unwrap().to_bytes();
    Response::from_parts(parts, String::from_utf8(bytes.to_vec()).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn free_and_paid_keys_get_their_own_limits_and_policy_names_and_an_upgrade_no_fresh_burst() {
    // A clock that moves only when the test says: every field compared exactly.
    let clock: &'static ManualClock = Box::leak(Box::new(ManualClock::new()));
    let tiers = Tiers::new(
        [
            Tier::of(0, "free", Config::new(2, Duration::from_secs(60)).unwrap()),
            Tier::of(1, "paid", Config::new(5, Duration::from_secs(60)).unwrap()),
        ],
        plan,
    );
    let limiter = Arc::new(KeyedRateLimiter::tiered_with_clock(
        "api", tiers, 1_000, clock,
    ));
    let layer = RateLimitLayer::new(
        Arc::clone(&limiter),
        Header::new(HeaderName::from_static("x-api-key")),
    );
    let addr = serve(
        Router::new()
            .route("/", get(|| async { "ok\n" }))
            .layer(layer),
    )
    .await;
    let http = client(IpAddr::V4(Ipv4Addr::LOCALHOST));

    // The free key: 2 a minute, reported as "free".
    for left in [1, 0] {
        let response = fetch(&http, addr, "sk_free_1").await;
        assert_eq!(response.status(), 200);
        assert_eq!(policy(response.headers()), ("free".to_string(), 2, 60));
        assert_eq!(ratelimit(response.headers()).1, left);
    }
    let refused = fetch(&http, addr, "sk_free_1").await;
    assert_eq!(refused.status(), 429);
    assert_eq!(policy(refused.headers()), ("free".to_string(), 2, 60));
    assert_eq!(header(refused.headers(), "retry-after"), "30");

    // The paid key: 5 a minute, reported as "paid"; the free key's spending never touched it.
    for left in (0..5).rev() {
        let response = fetch(&http, addr, "pk_paid_1").await;
        assert_eq!(response.status(), 200);
        assert_eq!(policy(response.headers()), ("paid".to_string(), 5, 60));
        assert_eq!(
            ratelimit(response.headers()),
            ("paid".to_string(), left, 12)
        );
    }
    let refused = fetch(&http, addr, "pk_paid_1").await;
    assert_eq!(refused.status(), 429);
    assert_eq!(policy(refused.headers()), ("paid".to_string(), 5, 60));

    // The free key is upgraded mid-way: its fields name the paid plan at once, and it gets no
    // fresh burst (its spent quota carries over: 0 now, the next permit at the paid spacing).
    UPGRADED.lock().unwrap().insert(b"sk_free_1".to_vec());
    let refused = fetch(&http, addr, "sk_free_1").await;
    assert_eq!(refused.status(), 429);
    assert_eq!(policy(refused.headers()), ("paid".to_string(), 5, 60));
    assert_eq!(ratelimit(refused.headers()), ("paid".to_string(), 0, 12));
    assert_eq!(header(refused.headers(), "retry-after"), "12");
    assert_eq!(
        limiter.available_permits(&HeaderValue::from_static("sk_free_1")),
        0
    );

    // 12 s later the paid rate gives it one permit (the free rate would need 30 s).
    clock.advance(Duration::from_secs(12));
    let response = fetch(&http, addr, "sk_free_1").await;
    assert_eq!(response.status(), 200);
    assert_eq!(policy(response.headers()), ("paid".to_string(), 5, 60));
    assert_eq!(fetch(&http, addr, "sk_free_1").await.status(), 429);

    // A key never seen on the free plan still gets the free quota.
    let response = fetch(&http, addr, "sk_free_2").await;
    assert_eq!(response.status(), 200);
    assert_eq!(policy(response.headers()), ("free".to_string(), 2, 60));
}

/// Tier 0, 1, or an index with no tier for keys starting `bad`.
fn plan_or_none(api_key: &HeaderValue) -> usize {
    match api_key.as_bytes().first() {
        Some(b'p') => 1,
        Some(b'b') => 7,
        _ => 0,
    }
}

/// The same on a `&'static` tiered limiter, in the layer alone: admitted and refused responses
/// carry the key's tier's policy, a request costing more than the smallest tier's quota is a
/// setup error, and a key whose plan function answers no tier is refused, never a panic.
#[tokio::test]
async fn a_static_tiered_store_reports_each_keys_tier_and_refuses_a_key_with_no_tier() {
    use tower::{Layer, ServiceExt, service_fn};

    let tiers = Tiers::new(
        [
            Tier::of(0, "free", Config::new(1, Duration::from_secs(10)).unwrap()),
            Tier::of(1, "paid", Config::new(3, Duration::from_secs(10)).unwrap()),
        ],
        plan_or_none as fn(&HeaderValue) -> usize,
    );
    let limiter: &'static KeyedRateLimiter<HeaderValue, ManualClock, Tiers<HeaderValue, 2, usize>> =
        Box::leak(Box::new(KeyedRateLimiter::tiered_with_clock(
            "api",
            tiers,
            100,
            ManualClock::new(),
        )));
    let layer = RateLimitLayer::new(limiter, Header::new(HeaderName::from_static("x-api-key")));
    assert_eq!(layer.clone().cost(2).unwrap_err().quota(), 1);
    let svc = layer.layer(service_fn(|_: Request<()>| async {
        Ok::<_, std::convert::Infallible>(Response::new(String::from("ok")))
    }));
    let call = |key: &'static str| {
        let svc = svc.clone();
        async move {
            let request = Request::get("/").header("x-api-key", key).body(()).unwrap();
            svc.oneshot(request).await.unwrap()
        }
    };
    let free = call("free-1").await;
    assert_eq!(
        (free.status().as_u16(), policy(free.headers())),
        (200, ("free".into(), 1, 10))
    );
    let refused = call("free-1").await;
    assert_eq!(refused.status(), 429);
    assert_eq!(policy(refused.headers()), ("free".to_string(), 1, 10));
    for left in [2, 1, 0] {
        let paid = call("paid-1").await;
        assert_eq!(paid.status(), 200);
        assert_eq!(ratelimit(paid.headers()), ("paid".to_string(), left, 4));
        assert_eq!(policy(paid.headers()), ("paid".to_string(), 3, 10));
    }
    let none = call("bad-1").await;
    assert_eq!(none.status(), 429);
    assert_eq!(limiter.keys_held(), 2);
}
