//! A bare hyper 1 server (no framework) limited by ritmo per client IP: 2 requests per 10 s per
//! address. The layer is built once, outside the accept loop (one quota for the whole server);
//! each connection inserts its peer's `SocketAddr` into its requests' extensions, where
//! [`PeerIp`] reads it. Refused requests get `429` with `Retry-After`, `RateLimit-Policy` and
//! `RateLimit`.
//!
//! ```sh
//! cargo run -p ritmo-tower --example hyper-server        # port 3001
//! PORT=0 cargo run -p ritmo-tower --example hyper-server # any free port
//! curl -i http://127.0.0.1:3001/   # 200, 200, then 429
//! ```
//!
//! It binds 127.0.0.1 only and prints its address on the first line.

use std::convert::Infallible;
use std::io::Write as _;
use std::sync::LazyLock;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use ritmo::Config;
use ritmo::server::{IpKey, KeyedRateLimiter};
use ritmo::tower::RateLimitLayer;
use ritmo::tower::key::PeerIp;
use tower::ServiceBuilder;

/// Each client IP's quota: 2 requests per 10 s.
static API: LazyLock<KeyedRateLimiter<IpKey>> = LazyLock::new(|| {
    let config = Config::new(2, Duration::from_secs(10)).expect("a valid config");
    KeyedRateLimiter::new("api", config, 100_000)
});

async fn hello(_: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    Ok(Response::new(Full::new(Bytes::from_static(b"hello\n"))))
}

/// The port: the first argument, else `PORT`, else 3001; 0 picks any free port.
fn port() -> Result<u16, String> {
    let text = std::env::args()
        .nth(1)
        .or_else(|| std::env::var("PORT").ok())
        .unwrap_or_else(|| "3001".to_string());
    text.parse()
        .map_err(|_| format!("not a port number: {text:?} (give 0-65535; 0 = any free port)"))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let port = port()?;
    // Built once: a layer built per connection would still share `API`, but would log a
    // misconfiguration once per connection instead of once.
    let store: &'static KeyedRateLimiter<IpKey> = &API;
    let layer = RateLimitLayer::new(store, PeerIp::new());
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!("listening on http://{}", listener.local_addr()?);
    std::io::stdout().flush()?;
    loop {
        let (stream, peer) = listener.accept().await?;
        let service = ServiceBuilder::new()
            // The connection's address, where the key extractor looks for it.
            .map_request(move |mut request: Request<Incoming>| {
                request.extensions_mut().insert(peer);
                request
            })
            .layer(layer.clone())
            .service_fn(hello);
        let connection = hyper::server::conn::http1::Builder::new()
            .serve_connection(TokioIo::new(stream), TowerToHyperService::new(service));
        // Spawned as it is: inside an `async move` block that awaits it, rustc (1.95) fails to
        // prove the future `Send` for a `&'static` store ("implementation of `Store` is not
        // general enough", a known limit of its async lifetime inference).
        tokio::spawn(connection);
    }
}
