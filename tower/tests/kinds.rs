//! The layer takes every in-process kind as it takes one limiter, `&'static` or shared by `Arc`:
//! bands (a request passes if every band admits it; the fields are the binding band's) and a
//! tiered keyed limiter (each key its tier's quota and policy). Every field is compared with
//! numbers worked out from the rules: GCRA per band, `r` the permits that would pass now, `t`
//! and `Retry-After` the time until the next one, in whole seconds rounded up.

mod support;

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use http::{HeaderName, HeaderValue, Request, Response, StatusCode};
use ritmo_core::keyed::{Tier, Tiers};
use ritmo_core::{Bands, Config, ManualClock};
use ritmo_std::KeyedRateLimiter;
use ritmo_tower::key::{Global, Header};
use ritmo_tower::{RateLimitLayer, Store};
use support::{policy, ratelimit};
use tower::{Layer, ServiceExt, service_fn};

async fn handler(_request: Request<()>) -> Result<Response<String>, Infallible> {
    Ok(Response::new("ok".to_string()))
}

fn clock() -> &'static ManualClock {
    Box::leak(Box::new(ManualClock::new()))
}

fn bands(clock: &'static ManualClock) -> Bands<&'static ManualClock, 2> {
    let configs = [
        Config::new(2, Duration::from_secs(60)).unwrap(),
        Config::new(3, Duration::from_secs(3600)).unwrap(),
    ];
    Bands::new("bands", configs, clock)
}

/// Bands behind the layer: 2 per 60 s and 3 per hour, on a clock that moves only when told.
async fn bands_answer_200_then_429_with_the_binding_bands_fields<St>(store: St, clock: &ManualClock)
where
    St: Store<Key = ()>,
{
    let svc = RateLimitLayer::new(store, Global).layer(service_fn(handler));
    let call = || async {
        let response = svc
            .clone()
            .oneshot(Request::get("/").body(()).unwrap())
            .await
            .unwrap();
        let retry = response
            .headers()
            .get("retry-after")
            .map(|v| v.to_str().unwrap().to_string());
        (
            response.status(),
            ratelimit(response.headers()),
            policy(response.headers()),
            retry,
        )
    };
    let minute = || ("bands".to_string(), 2, 60);
    let hour = || ("bands".to_string(), 3, 3600);
    // The first band binds: 1 then 0 left; its next permit in 30 s (60 s / 2).
    let (status, rl, pol, retry) = call().await;
    assert_eq!(
        (status, rl, pol, retry),
        (StatusCode::OK, ("bands".into(), 1, 30), minute(), None)
    );
    let (status, rl, pol, retry) = call().await;
    assert_eq!(
        (status, rl, pol, retry),
        (StatusCode::OK, ("bands".into(), 0, 30), minute(), None)
    );
    let (status, rl, pol, retry) = call().await;
    assert_eq!(
        (status, rl, pol, retry),
        (
            StatusCode::TOO_MANY_REQUESTS,
            ("bands".into(), 0, 30),
            minute(),
            Some("30".into())
        )
    );
    // A minute on: the first band is whole (2), the hour's has 1 of 3 left (one every 1200 s):
    // it binds. After one more request nothing passes until the hour band's next permit, at
    // 1200 s from the start: 1140 s away.
    clock.advance(Duration::from_secs(60));
    let (status, rl, pol, retry) = call().await;
    assert_eq!(
        (status, rl, pol, retry),
        (StatusCode::OK, ("bands".into(), 0, 1140), hour(), None)
    );
    let (status, rl, pol, retry) = call().await;
    assert_eq!(
        (status, rl, pol, retry),
        (
            StatusCode::TOO_MANY_REQUESTS,
            ("bands".into(), 0, 1140),
            hour(),
            Some("1140".into())
        )
    );
}

#[tokio::test]
async fn static_bands_answer_200_then_429_with_the_binding_bands_fields() {
    let clock = clock();
    let store: &'static Bands<_, 2> = Box::leak(Box::new(bands(clock)));
    bands_answer_200_then_429_with_the_binding_bands_fields(store, clock).await;
}

#[tokio::test]
async fn arc_bands_answer_200_then_429_with_the_binding_bands_fields() {
    let clock = clock();
    let store = Arc::new(bands(clock));
    bands_answer_200_then_429_with_the_binding_bands_fields(Arc::clone(&store), clock).await;
    // Every permit the requests took is still taken: nothing was handed back on the way.
    assert_eq!(store.available_permits_per_band(), [1, 0]);
}

/// The plan of an API key: 0 free, 1 paid.
fn plan(key: &HeaderValue) -> usize {
    usize::from(key.as_bytes().starts_with(b"paid_"))
}

/// The plans, picked by [`plan`].
type Plans = Tiers<HeaderValue, 2, usize>;

fn tiered(
    clock: &'static ManualClock,
) -> KeyedRateLimiter<HeaderValue, &'static ManualClock, Plans> {
    let tiers = Tiers::new(
        [
            Tier::of(0, "free", Config::new(2, Duration::from_secs(60)).unwrap()),
            Tier::of(1, "paid", Config::new(5, Duration::from_secs(60)).unwrap()),
        ],
        plan as fn(&HeaderValue) -> usize,
    );
    KeyedRateLimiter::tiered_with_clock("api", tiers, 100, clock)
}

/// A tiered keyed limiter behind the layer, keyed by `x-api-key`: a free key gets 2 per 60 s
/// under the policy "free", a paid key 5 per 60 s under "paid", each on its own.
async fn tiers_answer_200_then_429_with_each_keys_tier<St>(store: St)
where
    St: Store<Key = HeaderValue>,
{
    let svc = RateLimitLayer::new(store, Header::new(HeaderName::from_static("x-api-key")))
        .layer(service_fn(handler));
    let call = |key: &'static str| {
        let svc = svc.clone();
        async move {
            let request = Request::get("/").header("x-api-key", key).body(()).unwrap();
            let response = svc.oneshot(request).await.unwrap();
            let retry = response
                .headers()
                .get("retry-after")
                .map(|v| v.to_str().unwrap().to_string());
            (
                response.status(),
                ratelimit(response.headers()),
                policy(response.headers()),
                retry,
            )
        }
    };
    let free = || ("free".to_string(), 2, 60);
    let paid = || ("paid".to_string(), 5, 60);
    // Free: 2, one back every 30 s.
    assert_eq!(
        call("free_1").await,
        (StatusCode::OK, ("free".into(), 1, 30), free(), None)
    );
    assert_eq!(
        call("free_1").await,
        (StatusCode::OK, ("free".into(), 0, 30), free(), None)
    );
    assert_eq!(
        call("free_1").await,
        (
            StatusCode::TOO_MANY_REQUESTS,
            ("free".into(), 0, 30),
            free(),
            Some("30".into())
        )
    );
    // Paid, at the same instant: its own 5, one back every 12 s.
    for left in (0..5).rev() {
        assert_eq!(
            call("paid_1").await,
            (StatusCode::OK, ("paid".into(), left, 12), paid(), None)
        );
    }
    assert_eq!(
        call("paid_1").await,
        (
            StatusCode::TOO_MANY_REQUESTS,
            ("paid".into(), 0, 12),
            paid(),
            Some("12".into())
        )
    );
    // Another free key is untouched by both.
    assert_eq!(
        call("free_2").await,
        (StatusCode::OK, ("free".into(), 1, 30), free(), None)
    );
}

#[tokio::test]
async fn a_static_tiered_keyed_limiter_answers_each_key_by_its_tier() {
    let store: &'static KeyedRateLimiter<_, _, _> = Box::leak(Box::new(tiered(clock())));
    tiers_answer_200_then_429_with_each_keys_tier(store).await;
}

#[tokio::test]
async fn an_arc_tiered_keyed_limiter_answers_each_key_by_its_tier() {
    tiers_answer_200_then_429_with_each_keys_tier(Arc::new(tiered(clock()))).await;
}
