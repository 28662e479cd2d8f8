//! Features `axum` and `metrics`, over real HTTP: a server that records both its layer and the
//! keyed limiter behind it counts each request once under each metric name, so that the sum over
//! every series of `ritmo_rejected_total` is the number of `429`s the clients saw (and the same
//! for the admitted requests and for the layer's own names).

mod support;

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use axum::Router;
use axum::routing::get;
use metrics_exporter_prometheus::PrometheusBuilder;
use ritmo::server::{IpKey, KeyedRateLimiter};
use ritmo::tower::key::PeerIp;
use ritmo::tower::{RateLimitLayer, metrics};
use ritmo::{Config, ManualClock};

use support::net::{client, get as fetch, serve};

/// The sum of every sample of the metric `name` (any labels) in Prometheus text; `None` if the
/// text has no series of that name.
fn sum(text: &str, name: &str) -> Option<f64> {
    let mut total = None;
    for line in text.lines() {
        let Some(rest) = line.strip_prefix(name) else {
            continue;
        };
        if !(rest.starts_with('{') || rest.starts_with(' ')) {
            continue; // a longer name with this one as its prefix
        }
        let value: f64 = rest.rsplit(' ').next().unwrap().parse().unwrap();
        *total.get_or_insert(0.0) += value;
    }
    total
}

// One thread runs the server and the clients: the limiter's own counts are statistics kept
// with a plain load and store, exact while one core at a time admits and documented to undercount
// (never overcount) when two cores admit at the same instant, which a runtime of two workers
// made happen (44 counted of 45 requests, about once in a few CI runs). Each name's sum is
// checked exactly where it is exact; the layer's own counts are atomic and exact anywhere.
#[tokio::test(flavor = "current_thread")]
async fn after_a_flood_each_metric_name_sums_to_what_the_clients_saw() {
    // A clock that never moves: each client IP has 4 permits for the whole test.
    let clock: &'static ManualClock = Box::leak(Box::new(ManualClock::new()));
    let config = Config::new(4, Duration::from_secs(60)).unwrap();
    let per_ip: &'static KeyedRateLimiter<IpKey, &ManualClock> = Box::leak(Box::new(
        KeyedRateLimiter::with_clock("per_ip", config, 1000, clock),
    ));
    let layer = RateLimitLayer::new(per_ip, PeerIp::new());
    let counted = layer.clone();
    let addr = serve(
        Router::new()
            .route("/", get(|| async { "hi" }))
            .layer(layer),
    )
    .await;

    // Three clients, 15 requests each, all in flight at once.
    let mut requests = Vec::new();
    for last in [11, 12, 13] {
        let http = client(IpAddr::V4(Ipv4Addr::new(127, 0, 0, last)));
        for _ in 0..15 {
            let http = http.clone();
            requests.push(tokio::spawn(async move {
                fetch(&http, addr, "/").await.status().as_u16()
            }));
        }
    }
    let (mut ok, mut limited) = (0.0, 0.0);
    for request in requests {
        match request.await.unwrap() {
            200 => ok += 1.0,
            429 => limited += 1.0,
            other => panic!("unexpected status {other}"),
        }
    }
    assert_eq!(ok + limited, 45.0);
    assert!(limited > 0.0, "the flood was not limited");

    let recorder = PrometheusBuilder::new().build_recorder();
    let text = ::metrics::with_local_recorder(&recorder, || {
        ritmo::server::metrics::describe();
        metrics::describe();
        ritmo::server::metrics::record_all(&[per_ip]);
        metrics::record(&counted);
        recorder.handle().render()
    });
    // The limiter's names, labelled `limiter`.
    assert_eq!(sum(&text, "ritmo_admitted_total"), Some(ok), "{text}");
    assert_eq!(sum(&text, "ritmo_rejected_total"), Some(limited), "{text}");
    // The layer's own names, labelled `layer`.
    assert_eq!(
        sum(&text, "ritmo_http_requests_admitted_total"),
        Some(ok),
        "{text}"
    );
    assert_eq!(
        sum(&text, "ritmo_http_requests_rejected_total"),
        Some(limited),
        "{text}"
    );
    assert!(text.contains(r#"ritmo_admitted_total{limiter="per_ip"}"#));
    assert!(text.contains(r#"ritmo_http_requests_admitted_total{layer="per_ip"}"#));
    // An untiered limiter: no always-zero `unknown_tier` series.
    assert!(!text.contains("unknown_tier"), "{text}");
}
