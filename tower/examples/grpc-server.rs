//! A tonic server limited by ritmo per client IP: 2 calls per 10 s per address (a keyed limiter
//! of at most 100 000 live clients), read from the `TcpConnectInfo` tonic records for each
//! connection (feature `tonic`). A refused call gets `RESOURCE_EXHAUSTED` with `retry-after`,
//! the RateLimit fields and a `google.rpc.RetryInfo` detail; calls that fail on the server's
//! side (`UNAVAILABLE`, `INTERNAL`, ...) are not charged. The service is tonic-health's
//! (`grpc.health.v1.Health`), generated code that needs no protoc.
//!
//! ```sh
//! cargo run -p ritmo-tower --features tonic --example grpc-server        # port 50051
//! PORT=0 cargo run -p ritmo-tower --features tonic --example grpc-server # any free port
//! grpcurl -plaintext 127.0.0.1:50051 grpc.health.v1.Health/Check         # twice: SERVING
//! grpcurl -plaintext 127.0.0.1:50051 grpc.health.v1.Health/Check         # ResourceExhausted
//! ```
//!
//! It binds 127.0.0.1 only and prints its address on the first line.

use std::io::Write as _;
use std::sync::LazyLock;
use std::time::Duration;

use ritmo::Config;
use ritmo::server::{IpKey, KeyedRateLimiter};
use ritmo::tower::RateLimitLayer;
use ritmo::tower::charge::not_grpc_server_error;
use ritmo::tower::key::PeerIp;
use tonic::transport::Server;
use tonic::transport::server::TcpIncoming;

/// Each client IP's quota: 2 calls per 10 s (a burst of 2, then one every 5 s).
static CALLS: LazyLock<KeyedRateLimiter<IpKey>> = LazyLock::new(|| {
    let config = Config::new(2, Duration::from_secs(10)).expect("a valid config");
    KeyedRateLimiter::new("calls", config, 100_000)
});

/// The port: the first argument, else `PORT`, else 50051; 0 picks any free port.
fn port() -> Result<u16, String> {
    let text = std::env::args()
        .nth(1)
        .or_else(|| std::env::var("PORT").ok())
        .unwrap_or_else(|| "50051".to_string());
    text.parse()
        .map_err(|_| format!("not a port number: {text:?} (give 0-65535; 0 = any free port)"))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let port = port()?;
    // One layer for the whole server: `.grpc()` answers in gRPC's form (tonic's body type has no
    // `From<String>`, which HTTP mode's text body needs).
    let store: &'static KeyedRateLimiter<IpKey> = &CALLS;
    let layer = RateLimitLayer::new(store, PeerIp::new())
        .grpc()
        .charge(not_grpc_server_error());
    let (_reporter, health) = tonic_health::server::health_reporter();
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!("listening on http://{}", listener.local_addr()?);
    std::io::stdout().flush()?;
    Server::builder()
        .layer(layer)
        .add_service(health)
        .serve_with_incoming(TcpIncoming::from(listener))
        .await?;
    Ok(())
}
