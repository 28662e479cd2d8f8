//! Helpers shared by the tests: limiters that live for the whole test binary, a small keyed store,
//! and header readers.
#![allow(dead_code)]

use std::collections::HashMap;
use std::future::Pending;
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::HeaderMap;
use ritmo_core::Reservation;
use ritmo_core::{Clock, Config, RateLimiter};
use ritmo_tower::{Decision, Denial, Grant, Policy, Status, Store};

/// A limiter that lives as long as the test binary (the layer's store is `&'static`).
pub fn leak<C: Clock + Sync + 'static>(
    id: &'static str,
    config: Config,
    clock: C,
) -> &'static RateLimiter<C> {
    Box::leak(Box::new(RateLimiter::with_clock(id, config, clock)))
}

/// One limiter per key, all on one clock: enough of a keyed store to test per-key limiting
/// through the layer's `Store` trait (the keyed limiter of ritmo-std replaces it when merged).
pub struct MapStore<K, C: Clock + 'static> {
    id: &'static str,
    config: Config,
    clock: C,
    map: Arc<Mutex<HashMap<K, &'static RateLimiter<C>>>>,
}

impl<K, C: Clock + Clone> Clone for MapStore<K, C> {
    fn clone(&self) -> Self {
        MapStore {
            id: self.id,
            config: self.config,
            clock: self.clock.clone(),
            map: Arc::clone(&self.map),
        }
    }
}

impl<K: Hash + Eq + Clone, C: Clock + Clone + Sync + 'static> MapStore<K, C> {
    pub fn new(id: &'static str, config: Config, clock: C) -> Self {
        MapStore {
            id,
            config,
            clock,
            map: Arc::default(),
        }
    }

    pub fn limiter(&self, key: &K) -> &'static RateLimiter<C> {
        let mut map = self.map.lock().unwrap();
        map.entry(key.clone())
            .or_insert_with(|| leak(self.id, self.config, self.clock.clone()))
    }

    pub fn keys(&self) -> usize {
        self.map.lock().unwrap().len()
    }
}

impl<K, C> Store for MapStore<K, C>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    C: Clock + Clone + Send + Sync + 'static,
{
    type Key = K;
    type Permit = Reservation<'static, C>;
    type Acquire = Pending<Result<Grant<Reservation<'static, C>>, Denial>>;

    fn policy(&self) -> Policy {
        Policy::new(self.id, self.config.permits(), self.config.period())
    }

    fn acquire(
        &self,
        key: &K,
        permits: u32,
        max_wait: Option<Duration>,
    ) -> Decision<Self::Permit, Self::Acquire> {
        let limiter = self.limiter(key);
        Store::acquire(&limiter, &(), permits, max_wait)
    }

    fn status(&self, key: &K) -> Option<Status> {
        Store::status(&self.limiter(key), &())
    }
}

/// A header as text.
pub fn header<'a>(headers: &'a HeaderMap, name: &str) -> &'a str {
    headers
        .get(name)
        .unwrap_or_else(|| panic!("no {name} header in {headers:?}"))
        .to_str()
        .unwrap()
}

/// The `r` and `t` parameters of a `RateLimit` field `"name";r=..;t=..`, and its name.
pub fn ratelimit(headers: &HeaderMap) -> (String, u32, u64) {
    let value = header(headers, "ratelimit");
    let (name, params) = parse_item(value);
    let r = params["r"].parse().unwrap();
    let t = params["t"].parse().unwrap();
    (name, r, t)
}

/// The `q` and `w` parameters of a `RateLimit-Policy` field, and its name.
pub fn policy(headers: &HeaderMap) -> (String, u32, u64) {
    let value = header(headers, "ratelimit-policy");
    let (name, params) = parse_item(value);
    (
        name,
        params["q"].parse().unwrap(),
        params["w"].parse().unwrap(),
    )
}

/// A structured-field item `"name";a=1;b=2` (strict: a quoted string, then integer parameters).
fn parse_item(value: &str) -> (String, HashMap<String, String>) {
    let rest = value.strip_prefix('"').expect("item is a string");
    let (name, rest) = rest.split_once('"').expect("closed string");
    let mut params = HashMap::new();
    for param in rest.split(';').skip(1) {
        let (k, v) = param.split_once('=').expect("key=value");
        assert!(
            v.bytes().all(|b| b.is_ascii_digit()),
            "integer parameter: {value}"
        );
        params.insert(k.to_string(), v.to_string());
    }
    assert!(rest.is_empty() || rest.starts_with(';'), "{value}");
    (name.to_string(), params)
}

/// Whole seconds, rounded up.
pub fn ceil_secs(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}

/// What the fields must say for a limiter right now: (remaining, seconds until one more).
pub fn expected<C: Clock>(limiter: &RateLimiter<C>) -> (u32, u64) {
    let r = limiter.available_permits();
    let t = if r >= limiter.config().permits() {
        0
    } else {
        ceil_secs(limiter.retry_after_n(r + 1).unwrap())
    };
    (r, t)
}

/// A real axum server on 127.0.0.1:0 with connection info, and a real HTTP client.
pub mod net {
    use std::net::{IpAddr, SocketAddr};

    use bytes::Bytes;
    use http::{Request, Response};
    use http_body_util::{BodyExt, Empty};
    use hyper_util::client::legacy::Client;
    use hyper_util::client::legacy::connect::HttpConnector;
    use hyper_util::rt::TokioExecutor;

    /// Serves `app` on 127.0.0.1, any port; returns its address. The server stops with the test's
    /// runtime.
    pub async fn serve(app: axum::Router) -> SocketAddr {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            axum::serve(
                listener,
                app.into_make_service_with_connect_info::<SocketAddr>(),
            )
            .await
            .unwrap();
        });
        addr
    }

    /// An HTTP/1 client whose connections come from `local` (any 127.x.y.z address is loopback
    /// on Linux, so one machine can play many clients).
    pub fn client(local: IpAddr) -> Client<HttpConnector, Empty<Bytes>> {
        let mut connector = HttpConnector::new();
        connector.set_local_address(Some(local));
        Client::builder(TokioExecutor::new()).build(connector)
    }

    /// GETs `path`, returns the response with its body as text.
    pub async fn get(
        client: &Client<HttpConnector, Empty<Bytes>>,
        addr: SocketAddr,
        path: &str,
    ) -> Response<String> {
        let request = Request::get(format!("http://{addr}{path}"))
            .body(Empty::new())
            .unwrap();
        let response = client.request(request).await.unwrap();
        let (parts, body) = response.into_parts();
        let bytes = body.collect().await.unwrap().to_bytes();
        Response::from_parts(parts, String::from_utf8(bytes.to_vec()).unwrap())
    }
}
