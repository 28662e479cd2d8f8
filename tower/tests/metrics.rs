//! Feature `metrics`: the layer's counts as a Prometheus exporter renders them.

mod support;

use std::convert::Infallible;
use std::time::Duration;

use http::{Request, Response, StatusCode};
use metrics_exporter_prometheus::PrometheusBuilder;
use ritmo_core::{Config, ManualClock};
use ritmo_tower::key::from_fn;
use ritmo_tower::{RateLimitLayer, metrics};
use support::leak;
use tower::{Layer, ServiceExt, service_fn};

async fn ok(_: Request<()>) -> Result<Response<String>, Infallible> {
    Ok(Response::new("ok".to_string()))
}

fn keyed(key: Option<&str>) -> Request<()> {
    let mut builder = Request::get("/");
    if let Some(key) = key {
        builder = builder.header("x-api-key", key);
    }
    builder.body(()).unwrap()
}

/// One quota for every request that has an API key (requests without one have no key).
fn has_key() -> impl ritmo_tower::key::KeyExtractor<Request<()>, Key = ()> {
    from_fn(|r: &Request<()>| r.headers().contains_key("x-api-key").then_some(()))
}

/// What one call of `metrics::record` renders.
fn rendered<St, X, M, Cl>(layer: &RateLimitLayer<St, X, M, Cl>) -> String {
    let recorder = PrometheusBuilder::new().build_recorder();
    ::metrics::with_local_recorder(&recorder, || {
        metrics::describe();
        metrics::record(layer);
        recorder.handle().render()
    })
}

/// The layer's series have names of their own, apart from the limiter's (`ritmo_admitted_total`,
/// `ritmo_rejected_total`): summed over every series of one name, each request counts once.
#[test]
fn the_series_are_the_layer_s_own() {
    assert_eq!(metrics::ADMITTED, "ritmo_http_requests_admitted_total");
    assert_eq!(metrics::REJECTED, "ritmo_http_requests_rejected_total");
    assert_eq!(
        metrics::SHADOW_REJECTED,
        "ritmo_http_requests_shadow_rejected_total"
    );
}

#[tokio::test]
async fn admitted_rejected_and_missing_keys_are_counted_per_layer() {
    let clock: &'static ManualClock = Box::leak(Box::new(ManualClock::new()));
    let limiter = leak(
        "api",
        Config::new(2, Duration::from_secs(1)).unwrap(),
        clock,
    );
    let layer = RateLimitLayer::new(limiter, has_key());
    let svc = layer.layer(service_fn(ok));
    let mut statuses = Vec::new();
    for key in [Some("a"), Some("a"), Some("a"), None, Some("b")] {
        statuses.push(svc.clone().oneshot(keyed(key)).await.unwrap().status());
    }
    assert_eq!(
        statuses,
        [200, 200, 429, 400, 429].map(|s| StatusCode::from_u16(s).unwrap())
    );
    let text = rendered(&layer);
    assert!(
        text.contains(r#"ritmo_http_requests_admitted_total{layer="api"} 2"#),
        "{text}"
    );
    assert!(
        text.contains(
            r#"ritmo_http_requests_rejected_total{layer="api",reason="no_permit_in_time"} 2"#
        ),
        "{text}"
    );
    assert!(
        text.contains(r#"ritmo_http_requests_rejected_total{layer="api",reason="missing_key"} 1"#),
        "{text}"
    );
    assert!(
        text.contains(r#"ritmo_http_requests_shadow_rejected_total{layer="api"} 0"#),
        "{text}"
    );
}

#[tokio::test]
async fn shadow_mode_counts_would_be_rejections_apart() {
    let clock: &'static ManualClock = Box::leak(Box::new(ManualClock::new()));
    let limiter = leak(
        "shadowed",
        Config::new(1, Duration::from_secs(1)).unwrap(),
        clock,
    );
    let layer = RateLimitLayer::new(limiter, has_key())
        .shadow(true)
        .policy_name("trial");
    let svc = layer.layer(service_fn(ok));
    for _ in 0..3 {
        let response = svc.clone().oneshot(keyed(Some("a"))).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
    }
    let text = rendered(&layer);
    assert!(
        text.contains(r#"ritmo_http_requests_admitted_total{layer="trial"} 1"#),
        "{text}"
    );
    assert!(
        text.contains(r#"ritmo_http_requests_shadow_rejected_total{layer="trial"} 2"#),
        "{text}"
    );
    assert!(
        text.contains(
            r#"ritmo_http_requests_rejected_total{layer="trial",reason="no_permit_in_time"} 0"#
        ),
        "{text}"
    );
}
