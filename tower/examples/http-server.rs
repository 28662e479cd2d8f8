//! An axum server limited by ritmo-tower: 5 requests per 10 s per client IP (a keyed limiter of at
//! most 100 000 live clients), the IETF fields on every response, `429` with `Retry-After` past
//! the quota, and `304`/`5xx` not charged.
//!
//! ```sh
//! cargo run -p ritmo-tower --features axum --example http-server        # port 3000
//! PORT=0 cargo run -p ritmo-tower --features axum --example http-server # any free port
//! cargo run -p ritmo-tower --features axum --example http-server -- 8080
//! curl -i http://127.0.0.1:3000/          # 200, RateLimit: "api";r=4;t=2
//! curl -i http://127.0.0.1:3000/status/304 # not charged
//! ```
//!
//! It binds 127.0.0.1 only and prints its address on the first line.

use std::io::Write as _;
use std::net::SocketAddr;
use std::sync::LazyLock;
use std::time::Duration;

use axum::Router;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::routing::get;

use ritmo_core::Config;
use ritmo_std::{IpKey, KeyedRateLimiter};
use ritmo_tower::RateLimitLayer;
use ritmo_tower::charge::not_304_or_5xx;
use ritmo_tower::key::PeerIp;

/// The quota of each client IP: 5 requests per 10 s (a burst of 5, then one every 2 s).
static API: LazyLock<KeyedRateLimiter<IpKey>> = LazyLock::new(|| {
    let config = Config::new(5, Duration::from_secs(10)).expect("a valid config");
    KeyedRateLimiter::new("api", config, 100_000)
});

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
    let app = Router::new()
        .route("/", get(|| async { "hello from ritmo\n" }))
        .route(
            "/status/{code}",
            get(|Path(code): Path<u16>| async move {
                StatusCode::from_u16(code).unwrap_or(StatusCode::BAD_REQUEST)
            }),
        )
        .layer(RateLimitLayer::new(&*API, PeerIp::new()).charge(not_304_or_5xx()));
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
