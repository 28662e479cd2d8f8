//! gRPC and bare hyper, end to end on 127.0.0.1: a tonic server (tonic-health's generated
//! service: no protoc) behind the layer, called by tonic's own client; per-IP keys from tonic's
//! connection info; the gRPC charge rule; HTTP mode answering gRPC calls in gRPC's form; a bare
//! hyper 1 server with the address inserted per connection. The limiters run on `ManualClock`s,
//! so every expected value comes from the reference model at a known instant.

use std::convert::Infallible;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use base64::Engine as _;
use http::{Request, Response, StatusCode};
use ritmo_core::{Config, ManualClock, RateLimiter};
use ritmo_std::KeyedRateLimiter;
use ritmo_test_support::{Gcra, Outcome, Units};
use ritmo_tower::charge::{ChargeAll, not_grpc_server_error};
use ritmo_tower::key::{Global, IpKey, PeerIp};
use ritmo_tower::{LayerEvent, RateLimitLayer, RefundCause};
use tokio::net::TcpListener;
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Channel, Endpoint, Server};
use tonic::{Code, Status};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;
use tonic_types::StatusExt as _;
use tower::{Layer, ServiceExt, service_fn};

const NS: u64 = 1_000_000_000;

fn clock() -> &'static ManualClock {
    Box::leak(Box::new(ManualClock::new()))
}

fn limiter(
    config: Config,
    clock: &'static ManualClock,
) -> &'static RateLimiter<&'static ManualClock> {
    Box::leak(Box::new(RateLimiter::with_clock("rpc", config, clock)))
}

/// A listener on 127.0.0.1, as tonic's incoming stream (tonic records `TcpConnectInfo`).
async fn listen() -> (SocketAddr, TcpIncoming) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    (addr, TcpIncoming::from(listener))
}

async fn channel(addr: SocketAddr, from: Option<IpAddr>) -> Channel {
    Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .local_address(from)
        .connect()
        .await
        .unwrap()
}

async fn check(client: &mut HealthClient<Channel>) -> Result<(), Status> {
    let request = HealthCheckRequest {
        service: String::new(),
    };
    client.check(request).await.map(|_| ())
}

fn metadata(status: &Status, name: &str) -> String {
    status
        .metadata()
        .get(name)
        .unwrap_or_else(|| panic!("no {name} in {status:?}"))
        .to_str()
        .unwrap()
        .to_owned()
}

/// The reference: what the model says the third and the fourth call must be told.
fn model_wait(model: &mut Gcra, now: u64) -> Duration {
    match model.try_acquire(now, 1) {
        Outcome::Rejected { retry_after } => retry_after,
        other => panic!("the model admits the call: {other:?}"),
    }
}

/// What a refusal of `wait` must carry, by SPEC §11 and §22a: `retry-after` whole seconds
/// rounded up, and a `RetryInfo` delay never short (and at most a millisecond long, its rounding).
fn assert_refusal(status: &Status, wait: Duration) {
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    let retry_after: u64 = metadata(status, "retry-after").parse().unwrap();
    assert_eq!(
        retry_after,
        wait.as_secs() + u64::from(wait.subsec_nanos() > 0)
    );
    let delay = status
        .get_details_retry_info()
        .and_then(|info| info.retry_delay)
        .expect("a RetryInfo detail with a delay");
    assert!(
        delay >= wait,
        "RetryInfo {delay:?} is shorter than the wait {wait:?}"
    );
    assert!(
        delay < wait + Duration::from_millis(1),
        "{delay:?} for {wait:?}"
    );
    assert!(metadata(status, "ratelimit-policy").starts_with("\"rpc\";q=2;w=10"));
    assert!(metadata(status, "ratelimit").starts_with("\"rpc\";r=0;t="));
    assert!(
        status.message().contains("retry after"),
        "{}",
        status.message()
    );
}

#[tokio::test]
async fn tonic_refuses_the_third_call_with_resource_exhausted_and_retry_info() {
    let clock = clock();
    let config = Config::new(2, Duration::from_secs(10)).unwrap();
    let layer = RateLimitLayer::new(limiter(config, clock), Global).grpc();
    let (_reporter, health) = tonic_health::server::health_reporter();
    let (addr, incoming) = listen().await;
    tokio::spawn(
        Server::builder()
            .layer(layer)
            .add_service(health)
            .serve_with_incoming(incoming),
    );
    let mut client = HealthClient::new(channel(addr, None).await);
    let mut model = Gcra::new(Units::new(NS), config);

    for _ in 0..2 {
        assert_eq!(model.try_acquire(0, 1), Outcome::Admitted);
        check(&mut client).await.unwrap();
    }
    let refused = check(&mut client).await.unwrap_err();
    assert_refusal(&refused, model_wait(&mut model, 0));

    // Later, at an instant that is no whole millisecond: the delay is rounded up.
    clock.advance(Duration::from_nanos(1_234_567_891));
    let refused = check(&mut client).await.unwrap_err();
    let wait = model_wait(&mut model, 1_234_567_891);
    assert_ne!(wait.subsec_nanos() % 1_000_000, 0);
    assert_refusal(&refused, wait);

    // Once the wait is over, the call passes.
    clock.advance(wait);
    check(&mut client).await.unwrap();
}

#[tokio::test]
async fn per_ip_on_tonic_keeps_two_client_addresses_apart() {
    let clock = clock();
    let config = Config::new(1, Duration::from_secs(60)).unwrap();
    let store: &'static KeyedRateLimiter<IpKey, &'static ManualClock> = Box::leak(Box::new(
        KeyedRateLimiter::with_clock("per-ip", config, 16, clock),
    ));
    let layer = RateLimitLayer::new(store, PeerIp::new()).grpc();
    let (_reporter, health) = tonic_health::server::health_reporter();
    let (addr, incoming) = listen().await;
    tokio::spawn(
        Server::builder()
            .layer(layer)
            .add_service(health)
            .serve_with_incoming(incoming),
    );
    let a = Some(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)));
    let b = Some(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 3)));
    let mut first = HealthClient::new(channel(addr, a).await);
    let mut second = HealthClient::new(channel(addr, b).await);
    // A fresh connection from the same address shares its quota: the key is the address.
    let mut first_again = HealthClient::new(channel(addr, a).await);

    check(&mut first).await.unwrap();
    let refused = check(&mut first_again).await.unwrap_err();
    assert_eq!(refused.code(), Code::ResourceExhausted);
    check(&mut second).await.unwrap();
    let refused = check(&mut second).await.unwrap_err();
    assert_eq!(refused.code(), Code::ResourceExhausted);
    assert_eq!(store.len(), 2);
}

/// tonic-health's service behind a switch: while `down`, every call fails as a handler's
/// `Err(Status::unavailable(..))` does (trailers-only, `grpc-status: 14`).
#[derive(Clone)]
struct Flaky<S> {
    inner: S,
    down: Arc<AtomicBool>,
}

impl<S, B> tower::Service<Request<B>> for Flaky<S>
where
    S: tower::Service<Request<B>, Response = Response<tonic::body::Body>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = Response<tonic::body::Body>;
    type Error = S::Error;
    type Future =
        std::pin::Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        if self.down.load(Ordering::Relaxed) {
            return Box::pin(async { Ok(Status::unavailable("backend down").into_http()) });
        }
        Box::pin(self.inner.call(request))
    }
}

async fn flaky_server<Cl>(
    clock: &'static ManualClock,
    charge: Cl,
    refunds: Arc<AtomicU32>,
) -> (HealthClient<Channel>, Arc<AtomicBool>)
where
    Cl: Clone + ritmo_tower::charge::Classify<Response<tonic::body::Body>, Infallible>,
{
    let config = Config::new(1, Duration::from_secs(60)).unwrap();
    let layer = RateLimitLayer::new(limiter(config, clock), Global)
        .grpc()
        .charge(charge)
        .on_event(move |event| {
            if let LayerEvent::Refunded {
                cause: RefundCause::Classified,
                returned: true,
            } = event
            {
                refunds.fetch_add(1, Ordering::Relaxed);
            }
        });
    let down = Arc::new(AtomicBool::new(true));
    let switch = Arc::clone(&down);
    let (_reporter, health) = tonic_health::server::health_reporter();
    let (addr, incoming) = listen().await;
    tokio::spawn(
        Server::builder()
            .layer(layer)
            .layer(tower::layer::layer_fn(move |inner| Flaky {
                inner,
                down: Arc::clone(&switch),
            }))
            .add_service(health)
            .serve_with_incoming(incoming),
    );
    (HealthClient::new(channel(addr, None).await), down)
}

#[tokio::test]
async fn a_failed_call_is_refunded_under_the_grpc_charge_rule() {
    let refunds = Arc::new(AtomicU32::new(0));
    let (mut client, down) =
        flaky_server(clock(), not_grpc_server_error(), Arc::clone(&refunds)).await;
    // A quota of one: each failed call gives its permit back, so none is refused.
    for _ in 0..3 {
        let failed = check(&mut client).await.unwrap_err();
        assert_eq!(failed.code(), Code::Unavailable, "{failed:?}");
    }
    assert_eq!(refunds.load(Ordering::Relaxed), 3);
    down.store(false, Ordering::Relaxed);
    check(&mut client).await.unwrap();
    let refused = check(&mut client).await.unwrap_err();
    assert_eq!(refused.code(), Code::ResourceExhausted);
    assert_eq!(refunds.load(Ordering::Relaxed), 3);

    // The control: charging every call, the failed call keeps the one permit.
    let refunds = Arc::new(AtomicU32::new(0));
    let (mut client, _down) = flaky_server(clock(), ChargeAll, Arc::clone(&refunds)).await;
    assert_eq!(
        check(&mut client).await.unwrap_err().code(),
        Code::Unavailable
    );
    assert_eq!(
        check(&mut client).await.unwrap_err().code(),
        Code::ResourceExhausted
    );
    assert_eq!(refunds.load(Ordering::Relaxed), 0);
}

fn grpc_request() -> Request<String> {
    Request::post("/grpc.health.v1.Health/Check")
        .header("content-type", "application/grpc")
        .body(String::new())
        .unwrap()
}

async fn hello(_request: Request<String>) -> Result<Response<String>, Infallible> {
    Ok(Response::new("hello".to_owned()))
}

#[tokio::test]
async fn http_mode_answers_grpc_calls_in_grpc_form_and_pages_with_429() {
    let clock = clock();
    let config = Config::new(1, Duration::from_secs(4)).unwrap();
    let svc = RateLimitLayer::new(limiter(config, clock), Global).layer(service_fn(hello));
    svc.clone().oneshot(grpc_request()).await.unwrap();

    let refused = svc.clone().oneshot(grpc_request()).await.unwrap();
    assert_eq!(refused.status(), StatusCode::OK);
    let h = refused.headers();
    assert_eq!(h["content-type"], "application/grpc");
    assert_eq!(h["grpc-status"], "8");
    assert_eq!(h["retry-after"], "4");
    assert_eq!(h["grpc-message"], "Too Many Requests: retry after 4 s");
    assert!(h.contains_key("ratelimit") && h.contains_key("ratelimit-policy"));
    assert!(
        refused.body().is_empty(),
        "a trailers-only answer has no body"
    );
    // The detail, decoded by tonic (an implementation of its own) from the header as sent.
    let bytes = base64::engine::general_purpose::STANDARD_NO_PAD
        .decode(h["grpc-status-details-bin"].as_bytes())
        .unwrap();
    let status = Status::with_details(Code::ResourceExhausted, "x", bytes.into());
    let delay = status
        .get_details_retry_info()
        .unwrap()
        .retry_delay
        .unwrap();
    assert_eq!(delay, Duration::from_secs(4));

    let page = svc
        .oneshot(Request::get("/").body(String::new()).unwrap())
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(page.headers().get("grpc-status").is_none());
}

#[tokio::test]
async fn a_grpc_call_without_a_key_gets_a_grpc_status_not_a_reset() {
    let store: &'static KeyedRateLimiter<IpKey, &'static ManualClock> =
        Box::leak(Box::new(KeyedRateLimiter::with_clock(
            "per-ip",
            Config::new(1, Duration::from_secs(1)).unwrap(),
            4,
            clock(),
        )));
    let svc = RateLimitLayer::new(store, PeerIp::new()).layer(service_fn(hello));
    let refused = svc.clone().oneshot(grpc_request()).await.unwrap();
    assert_eq!(refused.status(), StatusCode::OK);
    assert_eq!(refused.headers()["grpc-status"], "3"); // INVALID_ARGUMENT
    // The message names the setup error a missing connection address can only be.
    let message = refused.headers()["grpc-message"].to_str().unwrap();
    assert!(
        message.starts_with("no rate-limit key: no connection address"),
        "{message}"
    );
    let page = svc
        .oneshot(Request::get("/").body(String::new()).unwrap())
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn bare_hyper_answers_200_then_429_with_both_fields() {
    use http_body_util::{BodyExt, Empty, Full};
    use hyper::body::{Bytes, Incoming};
    use hyper_util::rt::{TokioExecutor, TokioIo};

    let config = Config::new(1, Duration::from_secs(30)).unwrap();
    let store: &'static KeyedRateLimiter<IpKey, &'static ManualClock> = Box::leak(Box::new(
        KeyedRateLimiter::with_clock("per-ip", config, 16, clock()),
    ));
    // The layer is built once; each connection inserts its peer's address into its requests.
    let layer = RateLimitLayer::new(store, PeerIp::new());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (stream, peer) = listener.accept().await.unwrap();
            let svc = tower::ServiceBuilder::new()
                .map_request(move |mut request: Request<Incoming>| {
                    request.extensions_mut().insert(peer);
                    request
                })
                .layer(layer.clone())
                .service_fn(|_: Request<Incoming>| async {
                    Ok::<_, Infallible>(Response::new(Full::new(Bytes::from("hello"))))
                });
            let svc = hyper_util::service::TowerToHyperService::new(svc);
            tokio::spawn(
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc),
            );
        }
    });
    let client = hyper_util::client::legacy::Client::builder(TokioExecutor::new())
        .build_http::<Empty<Bytes>>();
    let uri: http::Uri = format!("http://{addr}/").parse().unwrap();
    let first = client.get(uri.clone()).await.unwrap();
    assert_eq!(first.status(), StatusCode::OK);
    assert!(first.headers().contains_key("ratelimit"));
    assert_eq!(
        first.into_body().collect().await.unwrap().to_bytes(),
        "hello"
    );
    let second = client.get(uri).await.unwrap();
    assert_eq!(second.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(second.headers()["retry-after"], "30");
    assert_eq!(second.headers()["ratelimit-policy"], "\"per-ip\";q=1;w=30");
    assert!(
        second.headers()["ratelimit"]
            .to_str()
            .unwrap()
            .starts_with("\"per-ip\";r=0;t=")
    );
    assert_eq!(store.len(), 1);
}
