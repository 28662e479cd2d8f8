//! End to end: a real axum server on 127.0.0.1:0, a real HTTP client (hyper-util), and every
//! status code and field value checked against the limiter's state.

mod support;

use std::net::{IpAddr, Ipv4Addr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::http::StatusCode;
use axum::routing::get;
use ritmo_core::{Config, ManualClock};
use ritmo_std::{IpKey, KeyedRateLimiter, StdClock};
use ritmo_tower::charge::not_304_or_5xx;
use ritmo_tower::key::{ForwardedIp, Global, PeerIp};
use ritmo_tower::{LayerEvent, RateLimitLayer, RefundCause};
use support::net::{client, get as fetch, serve};
use support::{expected, header, leak, policy, ratelimit};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn loopback(last: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(127, 0, 0, last))
}

fn app() -> Router {
    Router::new().route("/", get(|| async { "hello\n" })).route(
        "/status/{code}",
        get(
            |axum::extract::Path(code): axum::extract::Path<u16>| async move {
                StatusCode::from_u16(code).unwrap_or(StatusCode::BAD_REQUEST)
            },
        ),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statuses_and_every_field_match_the_limiter() {
    // A fake clock that never moves: the limiter's state only changes with requests, so each
    // response's fields can be compared with it exactly.
    let clock: &'static ManualClock = Box::leak(Box::new(ManualClock::new()));
    let limiter = leak(
        "e2e",
        Config::new(4, Duration::from_secs(2)).unwrap(),
        clock,
    );
    let addr = serve(app().layer(RateLimitLayer::new(limiter, Global))).await;
    let http = client(loopback(1));
    for _ in 0..4 {
        let response = fetch(&http, addr, "/").await;
        assert_eq!(response.status(), 200);
        assert_eq!(response.body(), "hello\n");
        let (name, r, t) = ratelimit(response.headers());
        assert_eq!(name, "e2e");
        assert_eq!((r, t), expected(limiter));
        assert_eq!(policy(response.headers()), ("e2e".to_string(), 4, 2));
    }
    for _ in 0..3 {
        let response = fetch(&http, addr, "/").await;
        assert_eq!(response.status(), 429);
        let retry: u64 = header(response.headers(), "retry-after").parse().unwrap();
        assert_eq!(retry, support::ceil_secs(limiter.retry_after()).max(1));
        assert_eq!(retry, 1);
        assert_eq!(ratelimit(response.headers()), ("e2e".to_string(), 0, 1));
        assert_eq!(expected(limiter), (0, 1));
        assert_eq!(
            header(response.headers(), "content-type"),
            "text/plain; charset=utf-8"
        );
        assert_eq!(response.body(), "Too Many Requests: retry after 1 s\n");
    }
    clock.advance(Duration::from_millis(500));
    let response = fetch(&http, addr, "/").await;
    assert_eq!(response.status(), 200);
    assert_eq!(ratelimit(response.headers()).1, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_client_ip_has_its_own_quota() {
    let clock: &'static ManualClock = Box::leak(Box::new(ManualClock::new()));
    let config = Config::new(2, Duration::from_secs(1)).unwrap();
    let keyed: &'static KeyedRateLimiter<IpKey, &ManualClock> = Box::leak(Box::new(
        KeyedRateLimiter::with_clock("per-ip", config, 1000, clock),
    ));
    let addr = serve(app().layer(RateLimitLayer::new(keyed, PeerIp::new()))).await;
    let (a, b) = (client(loopback(2)), client(loopback(3)));
    assert_eq!(fetch(&a, addr, "/").await.status(), 200);
    assert_eq!(fetch(&a, addr, "/").await.status(), 200);
    assert_eq!(fetch(&a, addr, "/").await.status(), 429);
    let response = fetch(&b, addr, "/").await;
    assert_eq!(response.status(), 200);
    assert_eq!(ratelimit(response.headers()).1, 1);
    assert_eq!(keyed.available_permits(&IpKey::new(loopback(3))), 1);
    assert_eq!(keyed.available_permits(&IpKey::new(loopback(2))), 0);
    assert_eq!(
        keyed.retry_after(&IpKey::new(loopback(2))),
        Duration::from_millis(500)
    );
    assert_eq!(keyed.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn charge_by_outcome_over_http() {
    let clock: &'static ManualClock = Box::leak(Box::new(ManualClock::new()));
    let limiter = leak(
        "etag",
        Config::new(2, Duration::from_secs(10)).unwrap(),
        clock,
    );
    let layer = RateLimitLayer::new(limiter, Global).charge(not_304_or_5xx());
    let addr = serve(app().layer(layer)).await;
    let http = client(loopback(4));
    for path in ["/status/304", "/status/500", "/status/502", "/status/304"] {
        let response = fetch(&http, addr, path).await;
        assert_eq!(response.status().as_str(), &path[8..]);
        // Read after the refund: the quota whole, nothing to wait for (it read `t=5`).
        assert_eq!(ratelimit(response.headers()), ("etag".to_string(), 2, 0));
    }
    assert_eq!(limiter.available_permits(), 2);
    let response = fetch(&http, addr, "/status/404").await;
    assert_eq!(response.status(), 404);
    // One spent: the next back in 5 s.
    assert_eq!(ratelimit(response.headers()), ("etag".to_string(), 1, 5));
    assert_eq!(fetch(&http, addr, "/").await.status(), 200);
    assert_eq!(fetch(&http, addr, "/status/304").await.status(), 429);
    assert_eq!(limiter.available_permits(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_disconnects_while_waiting_returns_its_permit() {
    // The real clock: one permit every 2 s, requests may wait up to 5 s.
    let limiter = leak(
        "disconnect",
        Config::new(1, Duration::from_secs(2)).unwrap(),
        StdClock::new(),
    );
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let served = Arc::new(Mutex::new(0u32));
    let count = Arc::clone(&served);
    let layer = RateLimitLayer::new(limiter, Global)
        .max_wait(Duration::from_secs(5))
        .on_event(move |e| {
            let _ = tx.send(*e);
        });
    let app = Router::new().route(
        "/",
        get(move || {
            *count.lock().unwrap() += 1;
            async { "ran\n" }
        }),
    );
    let addr = serve(app.layer(layer)).await;
    let http = client(loopback(5));
    assert_eq!(fetch(&http, addr, "/").await.status(), 200);
    // The second request waits for its slot (~2 s): send it by hand, then hang up.
    let mut socket = tokio::net::TcpStream::connect(addr).await.unwrap();
    socket
        .write_all(b"GET / HTTP/1.1\r\nhost: test\r\n\r\n")
        .await
        .unwrap();
    let waiting = tokio::time::timeout(Duration::from_secs(2), rx.recv())
        .await
        .unwrap();
    assert!(
        matches!(waiting, Some(LayerEvent::Waiting { .. })),
        "{waiting:?}"
    );
    let owed = limiter.retry_after();
    assert!(owed > Duration::from_secs(2), "two permits owed: {owed:?}");
    socket.shutdown().await.unwrap();
    let mut rest = Vec::new();
    let _ = socket.read_to_end(&mut rest).await;
    drop(socket);
    let refund = tokio::time::timeout(Duration::from_secs(1), rx.recv())
        .await
        .unwrap();
    assert_eq!(
        refund,
        Some(LayerEvent::Refunded {
            cause: RefundCause::Dropped,
            returned: true
        })
    );
    assert!(
        limiter.retry_after() <= Duration::from_secs(2),
        "the permit came back"
    );
    assert!(rest.is_empty(), "no response for a request that never ran");
    assert_eq!(*served.lock().unwrap(), 1, "the dropped request never ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_a_trusted_proxy_the_rightmost_untrusted_forwarded_address_is_the_key() {
    // The "proxy" is every 127.x address; clients are named by X-Forwarded-For.
    let clock: &'static ManualClock = Box::leak(Box::new(ManualClock::new()));
    let config = Config::new(1, Duration::from_secs(60)).unwrap();
    let keyed: &'static KeyedRateLimiter<IpKey, &ManualClock> = Box::leak(Box::new(
        KeyedRateLimiter::with_clock("xff", config, 1000, clock),
    ));
    let key = ForwardedIp::trusting(["127.0.0.0/8".parse().unwrap()]);
    let addr = serve(app().layer(RateLimitLayer::new(keyed, key))).await;
    let http = client(loopback(7));
    let send = |xff: &'static str| {
        let http = http.clone();
        async move {
            let request = http::Request::get(format!("http://{addr}/"))
                .header("x-forwarded-for", xff)
                .body(http_body_util::Empty::<bytes::Bytes>::new())
                .unwrap();
            http.request(request).await.unwrap().status()
        }
    };
    assert_eq!(send("203.0.113.5").await, 200);
    // The same client, spoofing entries to the left of what the proxy wrote: same key, limited.
    assert_eq!(send("1.1.1.1, 203.0.113.5").await, 429);
    assert_eq!(send("8.8.8.8, 203.0.113.5, 127.0.0.9").await, 429);
    // Another client has its own quota.
    assert_eq!(send("198.51.100.7").await, 200);
    assert_eq!(keyed.available_permits(&"203.0.113.5".parse().unwrap()), 0);
    assert_eq!(keyed.available_permits(&"1.1.1.1".parse().unwrap()), 1);
    assert_eq!(keyed.len(), 2);
}

/// What a user writes first: a `KeyedRateLimiter<IpAddr>` (not `IpKey`) behind `PeerIp`, whose
/// key type follows the store's. Over real HTTP: 200 while the client's quota lasts, then 429;
/// another client has its own quota, and the key is the client's address.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_per_ip_server_keyed_by_ip_addr_answers_200_then_429() {
    use std::sync::LazyLock;
    static PER_IP: LazyLock<KeyedRateLimiter<IpAddr>> = LazyLock::new(|| {
        let config = Config::new(2, Duration::from_secs(3600)).expect("a valid config");
        KeyedRateLimiter::new("per-ip-addr", config, 1000)
    });
    let addr = serve(app().layer(RateLimitLayer::new(&*PER_IP, PeerIp::new()))).await;
    let (a, b) = (client(loopback(21)), client(loopback(22)));
    assert_eq!(fetch(&a, addr, "/").await.status(), 200);
    assert_eq!(fetch(&a, addr, "/").await.status(), 200);
    let refused = fetch(&a, addr, "/").await;
    assert_eq!(refused.status(), 429);
    assert!(refused.headers().contains_key("retry-after"));
    assert_eq!(fetch(&b, addr, "/").await.status(), 200);
    assert_eq!(PER_IP.available_permits(&loopback(21)), 0);
    assert_eq!(PER_IP.available_permits(&loopback(22)), 1);
}
