//! A tonic channel through the client layer, against a tonic server behind ritmo-tower's gRPC
//! mode on 127.0.0.1 (tonic-health's generated service: no protoc). Tokio's clock is paused, so
//! the client's holds follow `tokio::time::advance`; the server's limiter runs on a
//! `ManualClock`. The server counts every request that reaches it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use ritmo_client::{Cause, ClientLayer, Error, HostKey, Outbound, RateLimited};
use ritmo_core::{Config, ManualClock, RateLimiter};
use ritmo_tower::RateLimitLayer;
use ritmo_tower::key::Global;
use tokio::net::TcpListener;
use tonic::Code;
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Channel, Endpoint, Server};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;

type Client = HealthClient<RateLimited<Channel, HostKey>>;

const RETRY_AFTER_ONLY: &[&str] = &["ratelimit", "ratelimit-policy", "grpc-status-details-bin"];
const RETRY_INFO_ONLY: &[&str] = &["ratelimit", "ratelimit-policy", "retry-after"];

struct Backend {
    origin: http::Uri,
    clock: &'static ManualClock,
    /// Requests that reached the server (refused ones included).
    seen: Arc<AtomicU32>,
}

/// A tonic server whose quota is `permits` per `period`, counting every request it receives, and
/// leaving out of its responses the fields `strip` names (to show each signal is read alone).
async fn backend(permits: u32, period: Duration, strip: &'static [&'static str]) -> Backend {
    let clock: &'static ManualClock = Box::leak(Box::new(ManualClock::new()));
    let config = Config::new(permits, period).unwrap();
    let limiter = Box::leak(Box::new(RateLimiter::with_clock("rpc", config, clock)));
    let seen = Arc::new(AtomicU32::new(0));
    let count = Arc::clone(&seen);
    let (_reporter, health) = tonic_health::server::health_reporter();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap())
        .parse()
        .unwrap();
    tokio::spawn(
        Server::builder()
            .layer(tower::util::MapResponseLayer::new(
                move |mut response: http::Response<tonic::body::Body>| {
                    for name in strip {
                        response.headers_mut().remove(*name);
                    }
                    response
                },
            ))
            .layer(tower::util::MapRequestLayer::new(
                move |request: http::Request<tonic::body::Body>| {
                    count.fetch_add(1, Ordering::Relaxed);
                    request
                },
            ))
            // Admitted calls carry no RateLimit field (its `r=0` would already hold the
            // client): the hold comes from the refusal alone.
            .layer(
                RateLimitLayer::new(&*limiter, Global)
                    .admitted_fields(false)
                    .grpc(),
            )
            .add_service(health)
            .serve_with_incoming(TcpIncoming::from(listener)),
    );
    Backend {
        origin,
        clock,
        seen,
    }
}

async fn client(backend: &Backend, outbound: &Outbound<HostKey>) -> Client {
    let channel = Endpoint::from_shared(backend.origin.to_string())
        .unwrap()
        .connect()
        .await
        .unwrap();
    let layered = tower::ServiceBuilder::new()
        .layer(ClientLayer::new(outbound.clone()))
        .service(channel);
    // A generated client sends relative URIs; its origin keys its calls by host:port.
    HealthClient::with_origin(layered, backend.origin.clone())
}

async fn check(client: &mut Client) -> Result<(), tonic::Status> {
    let request = HealthCheckRequest {
        service: String::new(),
    };
    client.check(request).await.map(|_| ())
}

fn key(backend: &Backend) -> HostKey {
    let uri = &backend.origin;
    let h = http::HeaderMap::new();
    let target = ritmo_client::Target::new(
        &http::Method::POST,
        uri.scheme_str(),
        uri.host(),
        uri.port_u16(),
        "/",
        &h,
    );
    HostKey::of(&target)
}

#[tokio::test(start_paused = true)]
async fn a_tonic_channel_holds_after_resource_exhausted_and_sends_nothing_until_it_ends() {
    // The refusal says `grpc-status: 8` and `retry-after: 30`, nothing else.
    let server = backend(1, Duration::from_secs(30), RETRY_AFTER_ONLY).await;
    // The client's own quota is generous: only the server's hold stops it.
    let outbound =
        Outbound::per_host("rpc", Config::new(100, Duration::from_secs(1)).unwrap()).build();
    let mut client = client(&server, &outbound).await;

    check(&mut client).await.unwrap();
    let refused = check(&mut client).await.unwrap_err();
    assert_eq!(refused.code(), Code::ResourceExhausted);
    assert_eq!(server.seen.load(Ordering::Relaxed), 2);
    // The server's words (retry-after 30, RetryInfo 30 s) hold the channel's key, and only it.
    assert_eq!(
        outbound.held_for(&key(&server)),
        Some(Duration::from_secs(30))
    );
    assert_eq!(outbound.keys_held(), 1);

    // Within the hold every call is refused locally, as RESOURCE_EXHAUSTED, without being sent.
    for _ in 0..3 {
        tokio::time::advance(Duration::from_secs(9)).await;
        let local = check(&mut client).await.unwrap_err();
        assert_eq!(local.code(), Code::ResourceExhausted, "{local:?}");
        let source = std::error::Error::source(&local).expect("the layer's error as the source");
        let error = source
            .downcast_ref::<Error<tonic::transport::Error>>()
            .expect("ritmo_client::Error");
        assert_eq!(error.limited().unwrap().cause(), Cause::ServerHold);
    }
    assert_eq!(server.seen.load(Ordering::Relaxed), 2);

    // The hold ends (and the server's quota is back): the next call is sent and passes.
    tokio::time::advance(Duration::from_secs(3)).await;
    server.clock.advance(Duration::from_secs(30));
    assert_eq!(outbound.held_for(&key(&server)), None);
    check(&mut client).await.unwrap();
    assert_eq!(server.seen.load(Ordering::Relaxed), 3);
}

#[tokio::test(start_paused = true)]
async fn a_call_within_max_wait_waits_out_the_hold_then_is_sent_once() {
    // The refusal's wait is in its `RetryInfo` detail only.
    let server = backend(1, Duration::from_secs(20), RETRY_INFO_ONLY).await;
    let config = Config::new(100, Duration::from_secs(1))
        .unwrap()
        .with_max_wait(Duration::from_secs(60));
    let outbound = Outbound::per_host("rpc", config).build();
    let mut client = client(&server, &outbound).await;
    check(&mut client).await.unwrap();
    assert_eq!(
        check(&mut client).await.unwrap_err().code(),
        Code::ResourceExhausted
    );
    server.clock.advance(Duration::from_secs(20));

    let start = tokio::time::Instant::now();
    let mut waiting = client.clone();
    let call = tokio::spawn(async move { check(&mut waiting).await });
    // Up to the end of the hold, the waiting call has sent nothing.
    tokio::time::sleep(Duration::from_secs(19)).await;
    assert_eq!(server.seen.load(Ordering::Relaxed), 2);
    call.await.unwrap().unwrap();
    assert!(start.elapsed() >= Duration::from_secs(20));
    assert_eq!(server.seen.load(Ordering::Relaxed), 3);
    assert_eq!(outbound.stats().waited_server, 1);
}

#[tokio::test(start_paused = true)]
async fn each_channel_is_held_by_its_own_origin() {
    let a = backend(1, Duration::from_secs(30), &[]).await;
    let b = backend(5, Duration::from_secs(30), &[]).await;
    let outbound =
        Outbound::per_host("rpc", Config::new(100, Duration::from_secs(1)).unwrap()).build();
    let mut to_a = client(&a, &outbound).await;
    let mut to_b = client(&b, &outbound).await;
    check(&mut to_a).await.unwrap();
    assert_eq!(
        check(&mut to_a).await.unwrap_err().code(),
        Code::ResourceExhausted
    );
    // A's hold leaves B's calls alone.
    for _ in 0..3 {
        check(&mut to_b).await.unwrap();
    }
    assert!(outbound.held_for(&key(&a)).is_some());
    assert_eq!(outbound.held_for(&key(&b)), None);
    assert_eq!(b.seen.load(Ordering::Relaxed), 3);
}
