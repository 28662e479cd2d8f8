//! An axum server limited by ritmo-tower: 5 requests per 10 s per client IP (a keyed limiter of at
//! most 100 000 live clients), the IETF fields on every response, `429` with `Retry-After` past
//! the quota, and `304`/`5xx` not charged. `GET /metrics` serves the limiter's metrics and the
//! layer's in Prometheus text (the limiter's admitted and rejected calls and live keys, the
//! layer's admitted and refused requests: ritmo's own counts, read at each scrape); that route is
//! not rate limited, so a scraper is never refused.
//!
//! ```sh
//! cargo run -p ritmo-tower --features axum,metrics --example http-server        # port 3000
//! PORT=0 cargo run -p ritmo-tower --features axum,metrics --example http-server # any free port
//! cargo run -p ritmo-tower --features axum,metrics --example http-server -- 8080
//! curl -i http://127.0.0.1:3000/          # 200, RateLimit: "api";r=4;t=2
//! curl -i http://127.0.0.1:3000/status/304 # not charged
//! curl http://127.0.0.1:3000/metrics      # ritmo_admitted_total{limiter="api"} 1,
//!                                         # ritmo_http_requests_admitted_total{layer="api"} 1 ...
//! ```
//!
//! It binds 127.0.0.1 only and prints its address on the first line.

use std::io::Write as _;
use std::net::SocketAddr;
use std::sync::LazyLock;
use std::time::Duration;

use axum::Router;
use axum::extract::Path;
use axum::http::{StatusCode, header};
use axum::routing::get;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

use ritmo::Config;
use ritmo::server::{IpKey, KeyedRateLimiter};
use ritmo::tower::charge::not_304_or_5xx;
use ritmo::tower::key::PeerIp;
use ritmo::tower::{RateLimitLayer, metrics};

/// The quota of each client IP: 5 requests per 10 s (a burst of 5, then one every 2 s).
static API: LazyLock<KeyedRateLimiter<IpKey>> = LazyLock::new(|| {
    let config = Config::new(5, Duration::from_secs(10)).expect("a valid config");
    KeyedRateLimiter::new("api", config, 100_000)
});

/// `GET /metrics`: records the limiter and the layer (ritmo's counts and gauges, read now), then
/// renders everything the recorder holds in Prometheus' text format.
fn scrape<St, X, M, Cl>(
    prometheus: &PrometheusHandle,
    layer: &RateLimitLayer<St, X, M, Cl>,
) -> ([(header::HeaderName, &'static str); 1], String) {
    ritmo::server::metrics::record_all(&[&*API]);
    metrics::record(layer);
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        prometheus.render(),
    )
}

/// The port: the first argument, else `PORT`, else 3000; 0 picks any free port.
fn port() -> Result<u16, String> {
    let text = std::env::args()
        .nth(1)
        .or_else(|| std::env::var("PORT").ok())
        .unwrap_or_else(|| "3000".to_string());
    text.parse()
        .map_err(|_| format!("not a port number: {text:?} (give 0-65535; 0 = any free port)"))
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let port = match port() {
        Ok(port) => port,
        Err(message) => {
            eprintln!("http-server: {message}");
            std::process::exit(2);
        }
    };
    let prometheus = match PrometheusBuilder::new().install_recorder() {
        Ok(handle) => handle,
        Err(e) => {
            eprintln!("http-server: cannot install the metrics recorder: {e}");
            std::process::exit(1);
        }
    };
    ritmo::server::metrics::describe();
    metrics::describe();
    let layer = RateLimitLayer::new(&*API, PeerIp::new()).charge(not_304_or_5xx());
    let counted = layer.clone(); // for `/metrics`: clones share the counts
    let app = Router::new()
        .route("/", get(|| async { "hello from ritmo\n" }))
        .route(
            "/status/{code}",
            get(|Path(code): Path<u16>| async move {
                StatusCode::from_u16(code).unwrap_or(StatusCode::BAD_REQUEST)
            }),
        )
        .layer(layer)
        // Added after the layer, so outside it: a scrape is never limited nor counted.
        .route(
            "/metrics",
            get(move || async move { scrape(&prometheus, &counted) }),
        );
    let listener = match tokio::net::TcpListener::bind(("127.0.0.1", port)).await {
        Ok(listener) => listener,
        Err(e) => {
            eprintln!("http-server: cannot listen on 127.0.0.1:{port}: {e}");
            std::process::exit(1);
        }
    };
    let addr = listener
        .local_addr()
        .expect("a bound socket has an address");
    println!("listening on http://{addr}");
    let _ = std::io::stdout().flush();
    let service = app.into_make_service_with_connect_info::<SocketAddr>();
    if let Err(e) = axum::serve(listener, service).await {
        eprintln!("http-server: {e}");
        std::process::exit(1);
    }
}
