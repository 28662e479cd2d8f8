//! A layer whose key extractor can never find its key says so: one `tracing` error naming the
//! fix, the first time, instead of answering `400` to every request without a word.

use std::convert::Infallible;
use std::future::{Ready, ready};
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::{HeaderName, Request, Response, StatusCode};
use ritmo_core::{Config, ManualClock};
use ritmo_std::{IpKey, KeyedRateLimiter};
use ritmo_tower::RateLimitLayer;
use ritmo_tower::key::{ForwardedIp, Header, PeerIp};
use tower::util::ServiceFn;
use tower::{Layer, Service, ServiceExt, service_fn};

/// Everything the subscriber writes.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

fn keyed() -> &'static KeyedRateLimiter<IpKey, ManualClock> {
    let config = Config::new(5, Duration::from_secs(1)).unwrap();
    Box::leak(Box::new(KeyedRateLimiter::with_clock(
        "per-ip",
        config,
        100,
        ManualClock::new(),
    )))
}

/// The inner service: answers `200 ok`.
type Handler = fn(Request<()>) -> Ready<Result<Response<String>, Infallible>>;

/// Sends `n` requests without a connection address through `layer` and returns their statuses
/// and what was logged.
fn run<L>(layer: L, n: usize) -> (Vec<StatusCode>, String)
where
    L: Layer<ServiceFn<Handler>>,
    L::Service: Service<Request<()>, Response = Response<String>, Error = Infallible> + Clone,
{
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let handler: Handler = |_| ready(Ok(Response::new("ok".to_owned())));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let statuses = tracing::subscriber::with_default(subscriber, || {
        let service = layer.layer(service_fn(handler));
        (0..n)
            .map(|_| {
                let call = service.clone().oneshot(Request::new(()));
                runtime.block_on(call).unwrap().status()
            })
            .collect()
    });
    (statuses, captured.text())
}

#[test]
fn peer_ip_without_a_connection_address_logs_one_error_with_the_fix() {
    let (statuses, log) = run(RateLimitLayer::new(keyed(), PeerIp::new()), 3);
    assert_eq!(statuses, vec![StatusCode::BAD_REQUEST; 3]);
    assert_eq!(log.matches("ERROR").count(), 1, "{log}");
    assert!(log.contains("no rate-limit key"), "{log}");
    assert!(log.contains("refused with 400"), "{log}");
    assert!(
        log.contains("into_make_service_with_connect_info::<SocketAddr>()"),
        "{log}"
    );
    assert!(log.contains("per-ip"), "{log}");
    // Each server the docs name, with its fix: axum above, hyper and tonic here.
    assert!(log.contains("(hyper)") || log.contains("on hyper"), "{log}");
    assert!(
        log.contains("on tonic") && log.contains("TcpConnectInfo"),
        "{log}"
    );
}

#[test]
fn forwarded_ip_without_a_connection_address_logs_too() {
    let key = ForwardedIp::trusting(["10.0.0.0/8".parse().unwrap()]);
    let (statuses, log) = run(RateLimitLayer::new(keyed(), key), 2);
    assert_eq!(statuses, vec![StatusCode::BAD_REQUEST; 2]);
    assert_eq!(log.matches("ERROR").count(), 1, "{log}");
}

#[test]
fn a_request_without_an_optional_header_is_no_setup_error() {
    let config = Config::new(5, Duration::from_secs(1)).unwrap();
    let by_key: &'static KeyedRateLimiter<http::HeaderValue, ManualClock> = Box::leak(Box::new(
        KeyedRateLimiter::with_clock("by-key", config, 100, ManualClock::new()),
    ));
    let layer = RateLimitLayer::new(by_key, Header::new(HeaderName::from_static("x-api-key")));
    let (statuses, log) = run(layer, 2);
    assert_eq!(statuses, vec![StatusCode::BAD_REQUEST; 2]);
    assert!(log.is_empty(), "{log}");
}

/// The `400` itself names the fix (nobody reads a log nobody subscribed to): the axum call, the
/// hyper and the tonic ways; a request that may lack its key (an optional header) gets the plain
/// answer.
#[test]
fn the_400_body_says_how_to_record_the_connection_address() {
    let handler: Handler = |_| ready(Ok(Response::new("ok".to_owned())));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let by_ip = RateLimitLayer::new(keyed(), PeerIp::new()).layer(service_fn(handler));
    let response = runtime.block_on(by_ip.oneshot(Request::new(()))).unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let body = response.into_body();
    assert!(
        body.starts_with("Bad Request: no rate-limit key: "),
        "{body}"
    );
    for fix in [
        "into_make_service_with_connect_info::<SocketAddr>()",
        "insert the peer's `SocketAddr` into each request's extensions (hyper)",
        "on tonic, ",
    ] {
        assert!(body.contains(fix), "{body}");
    }

    let config = Config::new(5, Duration::from_secs(1)).unwrap();
    let by_key: &'static KeyedRateLimiter<http::HeaderValue, ManualClock> = Box::leak(Box::new(
        KeyedRateLimiter::with_clock("by-key", config, 100, ManualClock::new()),
    ));
    let header = Header::new(HeaderName::from_static("x-api-key"));
    let by_key = RateLimitLayer::new(by_key, header).layer(service_fn(handler));
    let response = runtime.block_on(by_key.oneshot(Request::new(()))).unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert_eq!(response.into_body(), "Bad Request: no rate-limit key\n");
}
