//! A per-IP axum server built from the facade alone (`ritmo = { features = ["axum"] }`), over real
//! HTTP on 127.0.0.1: each client address has its own quota, and no request is refused for want
//! of a key.

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
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(SocketAddr::new(IpAddr::V4(local), 0)).unwrap();
    let mut stream = socket.connect(server).await.unwrap();
    stream
        .write_all(b"GET / HTTP/1.1\r\nhost: ritmo\r\nconnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.unwrap();
    let text = String::from_utf8_lossy(&response);
    text.split(' ').nth(1).unwrap().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_ip_axum_server_from_the_facade() {
    let app = Router::new()
        .route("/", get(|| async { "ok" }))
        .layer(RateLimitLayer::new(&*PER_IP, PeerIp::new()));
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
