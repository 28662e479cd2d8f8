//! The design page's `SearchApi`, annotated with `#[ritmo::limited]`, calling a real HTTP
//! backend through `ritmo::client`'s layer: the backend is a `ritmo::tower` server started in the
//! same run on 127.0.0.1, with a quota of its own (5 per 2 s) that the client does not know.
//!
//! ```text
//! cargo run -p ritmo-client --example http-client
//! ```
//!
//! The client's own quota is 2 per 200 ms (a burst of 2, then one every 100 ms), so the third
//! search waits for it; the server's burst of 5 runs out first, and its `RateLimit: ...;r=0`
//! holds the client until the server's reset. It prints how many requests it sent, how many
//! waited for the client's own quota and how many for the server's reset, and how many `429`s
//! it received (none: it listens before it is refused).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::routing::get;
use http::{Request, StatusCode};
use http_body_util::BodyExt;
use hyper_util::client::legacy::{Client, connect::HttpConnector};
use hyper_util::rt::TokioExecutor;
use ritmo::client::{ClientLayer, HostKey, Outbound, RateLimited};
use ritmo::server::{StdClock, TokioClock};
use ritmo::tower::RateLimitLayer;
use ritmo::tower::key::Global;
use ritmo::{Config, RateLimitExceeded, RateLimiter, Registry};
use tower::{Layer, ServiceExt};

/// What a search fails with: not sent (a limiter said no), or the HTTP exchange failed.
#[derive(Debug)]
pub enum ApiError {
    /// Not sent: the annotation's quota, the client's quota, or the server's hold said no.
    Limited(RateLimitExceeded),
    /// The request failed, or the server answered with an error status.
    Http(String),
}

impl From<RateLimitExceeded> for ApiError {
    fn from(e: RateLimitExceeded) -> Self {
        ApiError::Limited(e)
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ApiError::Limited(e) => write!(f, "not sent: {e}"),
            ApiError::Http(e) => write!(f, "http: {e}"),
        }
    }
}

impl std::error::Error for ApiError {}

/// The search API: the annotation allows 20 searches per second, each waiting up to 3 s.
#[ritmo::limited]
#[allow(async_fn_in_trait)]
pub trait SearchApi {
    /// Searches the backend.
    #[rate_limited(permits = 20, period = "1s", max_wait = "3s")]
    async fn search(&self, query: &str) -> Result<String, ApiError>;
}

/// The HTTP backend: hyper's client behind `ritmo::client`'s layer.
struct HttpBackend {
    base: String,
    client: RateLimited<Client<HttpConnector, String>, HostKey>,
    too_many: AtomicU64,
}

impl SearchApi for HttpBackend {
    async fn search(&self, query: &str) -> Result<String, ApiError> {
        let request = Request::get(format!("{}/search?q={query}", self.base))
            .body(String::new())
            .map_err(|e| ApiError::Http(e.to_string()))?;
        let response = match self.client.clone().oneshot(request).await {
            Ok(response) => response,
            Err(ritmo::client::Error::Limited(l)) => return Err(ApiError::Limited(l.into())),
            Err(e) => return Err(ApiError::Http(e.to_string())),
        };
        let status = response.status();
        if status == StatusCode::TOO_MANY_REQUESTS {
            self.too_many.fetch_add(1, Ordering::Relaxed);
        }
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| ApiError::Http(e.to_string()))?
            .to_bytes();
        if !status.is_success() {
            return Err(ApiError::Http(status.to_string()));
        }
        Ok(String::from_utf8_lossy(&body).into_owned())
    }
}

/// The backend server: `ritmo::tower`'s layer, 5 searches per 2 s for everyone, its fields on
/// every response (the defaults).
async fn start_server() -> SocketAddr {
    let quota = Config::new(5, Duration::from_secs(2)).expect("a valid config");
    let limiter: &'static RateLimiter<StdClock> = Box::leak(Box::new(RateLimiter::with_clock(
        "search-backend",
        quota,
        StdClock::new(),
    )));
    let app = Router::new()
        .route(
            "/search",
            get(|uri: http::Uri| async move {
                format!("results for {}", uri.query().unwrap_or_default())
            }),
        )
        .layer(RateLimitLayer::new(limiter, Global));
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .expect("a free port on 127.0.0.1");
    let addr = listener.local_addr().expect("a bound address");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    addr
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    const SEARCHES: usize = 12;
    let addr = start_server().await;
    println!("backend: http://{addr} (ritmo::tower, 5 per 2 s)");

    // The client's own quota for each host: 2 per 200 ms, a request waiting up to 3 s.
    let config = Config::new(2, Duration::from_millis(200))?.with_max_wait(Duration::from_secs(3));
    let outbound = Outbound::per_host("search-client", config).build();
    let hyper = Client::builder(TokioExecutor::new()).build_http::<String>();
    let backend = HttpBackend {
        base: format!("http://{addr}"),
        client: ClientLayer::new(outbound.clone()).layer(hyper),
        too_many: AtomicU64::new(0),
    };
    let registry: Registry<TokioClock, 4> = Registry::new(TokioClock::new());
    let api = SearchApiLimited::new(backend, &registry)?;

    let start = Instant::now();
    for i in 0..SEARCHES {
        let result = api.search(&format!("q{i}")).await;
        let at = start.elapsed().as_millis();
        match result {
            Ok(body) => println!("[{at:>5} ms] search {i}: {body}"),
            Err(e) => println!("[{at:>5} ms] search {i}: {e}"),
        }
    }
    let stats = outbound.stats();
    let too_many = api.inner().too_many.load(Ordering::Relaxed);
    println!("sent: {}", stats.sent);
    println!("waited for the local quota: {}", stats.waited_local);
    println!("waited for the server's reset: {}", stats.waited_server);
    println!(
        "refused without sending: {}",
        stats.limited_local + stats.limited_server
    );
    println!("429s received: {too_many}");
    Ok(())
}
