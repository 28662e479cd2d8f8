//! A tonic client that obeys its server's holds: tonic-health's generated client on a channel
//! through ritmo's client layer, calling a tonic server (started here, on 127.0.0.1) that ritmo
//! limits to 3 calls per second and that answers in gRPC's form (`RESOURCE_EXHAUSTED`,
//! `retry-after`, `RetryInfo`, the RateLimit fields).
//!
//! The client's own quota is generous; it waits (up to 5 s) whenever the server's fields say the
//! quota is spent, so all 9 calls pass and none is refused by the server.
//!
//! ```sh
//! cargo run -p ritmo-client --features tonic --example grpc-client
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use ritmo::client::{ClientLayer, Outbound};
use ritmo::server::StdClock;
use ritmo::tower::RateLimitLayer;
use ritmo::tower::key::Global;
use ritmo::{Config, RateLimiter};
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Endpoint, Server};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The server: 3 calls per second for everyone, refusals in gRPC's form.
    let server_quota = Config::new(3, Duration::from_secs(1))?;
    let limiter: &'static RateLimiter<StdClock> = Box::leak(Box::new(RateLimiter::with_clock(
        "calls",
        server_quota,
        StdClock::new(),
    )));
    let refused_by_server = Arc::new(AtomicU32::new(0));
    let refused = Arc::clone(&refused_by_server);
    let layer = RateLimitLayer::new(limiter, Global)
        .grpc()
        .on_event(move |event| {
            if let ritmo::tower::LayerEvent::Rejected { .. } = event {
                refused.fetch_add(1, Ordering::Relaxed);
            }
        });
    let (_reporter, health) = tonic_health::server::health_reporter();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let origin: http::Uri = format!("http://{}", listener.local_addr()?).parse()?;
    tokio::spawn(
        Server::builder()
            .layer(layer)
            .add_service(health)
            .serve_with_incoming(TcpIncoming::from(listener)),
    );

    // The client: its own quota (100 per second), waiting up to 5 s for it or a server's hold.
    let config = Config::new(100, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(5));
    let outbound = Outbound::per_host("backend", config).build();
    let channel = Endpoint::from_shared(origin.to_string())?.connect().await?;
    let channel = tower::ServiceBuilder::new()
        .layer(ClientLayer::new(outbound.clone()))
        .service(channel);
    // The origin keys the calls by host:port (a generated client sends relative URIs).
    let mut client = HealthClient::with_origin(channel, origin);

    let mut failed = 0;
    for _ in 0..9 {
        let request = HealthCheckRequest {
            service: String::new(),
        };
        if let Err(status) = client.check(request).await {
            println!("call failed: {:?} {}", status.code(), status.message());
            failed += 1;
        }
    }
    let stats = outbound.stats();
    println!("sent: {}", stats.sent);
    println!("waited for the server's hold: {}", stats.waited_server);
    println!(
        "refused without sending: {}",
        stats.limited_local + stats.limited_server
    );
    println!(
        "refused by the server: {}",
        refused_by_server.load(Ordering::Relaxed)
    );
    println!("calls that failed: {failed}");
    Ok(())
}
