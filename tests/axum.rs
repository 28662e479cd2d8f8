//! The servers of the guides built from the facade alone (`ritmo = { features = ["axum"] }`, and
//! `"metrics"` for the last), over real HTTP on 127.0.0.1:
//! - per IP: each client address has its own quota, and no request is refused for want of a key;
//! - per API key on plans (tiers): a free key and a paid key get their own limits and their own
//!   `RateLimit-Policy` names, and an upgrade mid-way hands out no fresh burst;
//! - `/metrics`: the counts a scrape reads are the statuses the clients saw.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::LazyLock;
use std::time::Duration;

use axum::Router;
use axum::routing::get;
use ritmo::Config;
use ritmo::server::{IpKey, KeyedRateLimiter};
use ritmo::tower::RateLimitLayer;
use ritmo::tower::key::PeerIp;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket};

/// One `KeyedRateLimiter<IpKey>` and `PeerIp`: the keyed limiter's IP key is the layer's.
static PER_IP: LazyLock<KeyedRateLimiter<IpKey>> = LazyLock::new(|| {
    let config = Config::new(2, Duration::from_secs(60)).expect("a valid config");
    KeyedRateLimiter::new("per-ip", config, 1_000)
});

/// The status code of `GET /` sent from `local` (a loopback address) to `server`.
async fn status(local: Ipv4Addr, server: SocketAddr) -> u16 {
    let response = get_text(local, server, "/", "").await;
    response.split(' ').nth(1).unwrap().parse().unwrap()
}

/// The whole response (status line, fields, body) to `GET path` with the `extra` header lines,
/// sent from `local` (a loopback address) to `server`.
async fn get_text(local: Ipv4Addr, server: SocketAddr, path: &str, extra: &str) -> String {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(SocketAddr::new(IpAddr::V4(local), 0)).unwrap();
    let mut stream = socket.connect(server).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nhost: ritmo\r\n{extra}connection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.unwrap();
    String::from_utf8_lossy(&response).into_owned()
}

/// The value of field `name` in `response` (lowercase name).
fn field<'a>(response: &'a str, name: &str) -> Option<&'a str> {
    response.lines().find_map(|line| {
        let (n, v) = line.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

/// Serves `app` on 127.0.0.1 with each connection's peer address; returns the address.
async fn serve(app: Router) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let server = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(
            listener,
            app.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .await
        .unwrap();
    });
    server
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_ip_axum_server_from_the_facade() {
    let app = Router::new()
        .route("/", get(|| async { "ok" }))
        .layer(RateLimitLayer::new(&*PER_IP, PeerIp::new()));
    let server = serve(app).await;
    let (a, b) = (Ipv4Addr::new(127, 0, 0, 2), Ipv4Addr::new(127, 0, 0, 3));
    let run = async {
        assert_eq!(status(a, server).await, 200);
        assert_eq!(status(a, server).await, 200);
        assert_eq!(status(a, server).await, 429);
        assert_eq!(status(b, server).await, 200);
    };
    tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .expect("the server answers within 30 s");
    assert_eq!(PER_IP.available_permits(&IpKey::from(a)), 0);
    assert_eq!(PER_IP.available_permits(&IpKey::from(b)), 1);
}

/// API keys upgraded to the paid plan while the server runs.
static UPGRADED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// The plan of an API key, as the HTTP guide's server has it: `pk_live_*` and upgraded keys are
/// paid (tier 1), every other key free (tier 0).
fn plan(api_key: &axum::http::HeaderValue) -> usize {
    let key = api_key.to_str().unwrap_or("");
    let upgraded = UPGRADED.lock().unwrap().iter().any(|k| k == key);
    usize::from(key.starts_with("pk_live_") || upgraded)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_tier_api_key_server_from_the_facade() {
    use ritmo::keyed::{Tier, Tiers};
    use ritmo::tower::key::Header;

    let tiers = Tiers::new(
        [
            Tier::of(0, "free", Config::new(2, Duration::from_secs(60)).unwrap()),
            Tier::of(1, "paid", Config::new(5, Duration::from_secs(60)).unwrap()),
        ],
        plan,
    );
    let api = std::sync::Arc::new(KeyedRateLimiter::tiered("api", tiers, 1_000));
    let app = Router::new()
        .route("/", get(|| async { "ok" }))
        .layer(RateLimitLayer::new(
            std::sync::Arc::clone(&api),
            Header::new(axum::http::HeaderName::from_static("x-api-key")),
        ));
    let server = serve(app).await;
    let local = Ipv4Addr::LOCALHOST;
    let call = |key: &'static str| async move {
        let text = get_text(local, server, "/", &format!("x-api-key: {key}\r\n")).await;
        let status: u16 = text.split(' ').nth(1).unwrap().parse().unwrap();
        let policy = field(&text, "ratelimit-policy").map(str::to_owned);
        (status, policy)
    };
    let run = async {
        // A free key: 2 a minute, reported as the "free" policy.
        for _ in 0..2 {
            let (status, policy) = call("anon-1").await;
            assert_eq!(status, 200);
            assert_eq!(policy.as_deref(), Some(r#""free";q=2;w=60"#));
        }
        assert_eq!(call("anon-1").await.0, 429);
        // A paid key: 5 a minute, its own policy.
        for _ in 0..5 {
            let (status, policy) = call("pk_live_7").await;
            assert_eq!(status, 200);
            assert_eq!(policy.as_deref(), Some(r#""paid";q=5;w=60"#));
        }
        assert_eq!(call("pk_live_7").await.0, 429);
        // The free key upgrades: its next response names the paid plan, and it gets no fresh
        // burst (what it had left, none, carries over: it waits for its next permit).
        UPGRADED.lock().unwrap().push("anon-1".to_owned());
        let (status, policy) = call("anon-1").await;
        assert_eq!(status, 429, "an upgrade is not a fresh burst");
        assert_eq!(policy.as_deref(), Some(r#""paid";q=5;w=60"#));
    };
    tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .expect("the server answers within 30 s");
}

/// The value of the Prometheus sample `series` (name and labels as rendered) in `text`.
#[cfg(feature = "metrics")]
fn sample(text: &str, series: &str) -> u64 {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.trim().parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no sample {series} in:\n{text}")) as u64
}

#[cfg(feature = "metrics")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_endpoint_from_the_facade_counts_what_clients_saw() {
    use ritmo::server::metrics;
    use std::sync::Arc;

    // The process's recorder, as a server installs it (the only one of this test binary; a
    // thread-local recorder would not reach the server's tasks).
    let handle = metrics_exporter_prometheus::PrometheusBuilder::new()
        .install_recorder()
        .expect("the only recorder of this test binary");
    metrics::describe();

    let per_ip: Arc<KeyedRateLimiter<IpKey>> = Arc::new(KeyedRateLimiter::new(
        "scraped",
        Config::new(3, Duration::from_secs(60)).unwrap(),
        1_000,
    ));
    let scraped = Arc::clone(&per_ip);
    let app = Router::new()
        .route("/", get(|| async { "ok" }))
        .layer(RateLimitLayer::new(Arc::clone(&per_ip), PeerIp::new()))
        // Added after the layer: the scrape itself is not rate limited.
        .route(
            "/metrics",
            get(move || {
                let (scraped, handle) = (Arc::clone(&scraped), handle.clone());
                async move {
                    metrics::record_all(&[&*scraped]);
                    handle.render()
                }
            }),
        );
    let server = serve(app).await;
    let run = async {
        let (mut ok, mut refused) = (0u64, 0u64);
        for i in 0..10u8 {
            // Two clients, alternating: each has its own 3.
            let local = Ipv4Addr::new(127, 0, 0, 10 + i % 2);
            match status(local, server).await {
                200 => ok += 1,
                429 => refused += 1,
                other => panic!("unexpected status {other}"),
            }
        }
        assert_eq!((ok, refused), (6, 4));
        let text = get_text(Ipv4Addr::LOCALHOST, server, "/metrics", "").await;
        assert!(text.starts_with("HTTP/1.1 200"), "{text}");
        assert_eq!(
            sample(&text, r#"ritmo_admitted_total{limiter="scraped"}"#),
            ok
        );
        assert_eq!(
            sample(
                &text,
                r#"ritmo_rejected_total{limiter="scraped",reason="no_permit_in_time"}"#
            ),
            refused
        );
        assert_eq!(sample(&text, r#"ritmo_keys{limiter="scraped"}"#), 2);
    };
    tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .expect("the server answers within 30 s");
}
