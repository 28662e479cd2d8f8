//! The client's rate limiting for reqwest, as a [`reqwest_middleware::Middleware`] (feature
//! `reqwest`): the same rules and the same send loop as the tower layer (see [`Outbound`]).
//!
//! It implements the `Middleware` of **reqwest-middleware 0.5**, over **reqwest 0.13**: with
//! other versions (reqwest 0.12, reqwest-middleware 0.4) `.with(..)` fails with `E0277`. Build
//! the client through the re-export [`ritmo::client::reqwest_middleware`](crate::reqwest_middleware)
//! (and its `reqwest`) and the versions match.
//!
//! ```no_run
//! use std::time::Duration;
//! use ritmo::Config;
//! use ritmo::client::reqwest::RateLimitMiddleware;
//! use ritmo::client::reqwest_middleware::{ClientBuilder, reqwest};
//! use ritmo::client::{MaxWait, Outbound};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let config = Config::new(10, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(5));
//! let outbound = Outbound::per_host("github", config).retry_once(true).build();
//! let client = ClientBuilder::new(reqwest::Client::new())
//!     .with(RateLimitMiddleware::new(outbound.clone()))
//!     .build();
//! let response = client.get("http://127.0.0.1:3000/").send().await?;
//! // One request's own max_wait, in place of the client's 5 s.
//! let quick = client
//!     .get("http://127.0.0.1:3000/health")
//!     .with_extension(MaxWait(Duration::from_millis(100)))
//!     .send()
//!     .await?;
//! # let _ = (response, quick);
//! # Ok(())
//! # }
//! ```
//!
//! A request that is not sent fails with `reqwest_middleware::Error::Middleware` holding a
//! [`Limited`](crate::Limited): `err` as `anyhow::Error` → `downcast_ref::<Limited>()`.
//! Requests are copied for the retry with `reqwest::Request::try_clone` (a streamed body cannot
//! be, and is never retried). A request's own [`MaxWait`] is read from
//! reqwest-middleware's extensions (`RequestBuilder::with_extension`).

use core::future::Future;
use std::hash::Hash;

use http::{Extensions, HeaderMap, StatusCode};
use reqwest::{Request, Response};
use reqwest_middleware::{Middleware, Next};

use crate::error::Error;
use crate::outbound::{MaxWait, Outbound, PerKey, ResponseView, Target, Transport};
use ritmo_tower::Store;

/// The client's quota and the server's holds for a `reqwest_middleware::ClientWithMiddleware`.
#[derive(Debug)]
pub struct RateLimitMiddleware<K: 'static, Q = PerKey<K>> {
    outbound: Outbound<K, Q>,
}

impl<K, Q> Clone for RateLimitMiddleware<K, Q> {
    fn clone(&self) -> Self {
        let outbound = self.outbound.clone();
        RateLimitMiddleware { outbound }
    }
}

impl<K, Q> RateLimitMiddleware<K, Q> {
    /// A middleware over `outbound` (retries as `outbound` was built to do).
    pub fn new(outbound: Outbound<K, Q>) -> Self {
        RateLimitMiddleware { outbound }
    }

    /// The client's limiter and holds.
    pub fn outbound(&self) -> &Outbound<K, Q> {
        &self.outbound
    }
}

impl ResponseView for Response {
    fn status(&self) -> StatusCode {
        Response::status(self)
    }
    fn headers(&self) -> &HeaderMap {
        Response::headers(self)
    }
}

struct NextTransport<'a> {
    next: Next<'a>,
    extensions: &'a mut Extensions,
}

impl Transport<Request> for NextTransport<'_> {
    type Response = Response;
    type Error = reqwest_middleware::Error;

    fn send(
        &mut self,
        request: Request,
    ) -> impl Future<Output = Result<Response, reqwest_middleware::Error>> + Send + '_ {
        self.next.clone().run(request, self.extensions)
    }
}

#[async_trait::async_trait]
impl<K, Q> Middleware for RateLimitMiddleware<K, Q>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    Q: Store<Key = K>,
{
    async fn handle(
        &self,
        request: Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<Response> {
        let url = request.url();
        let target = Target::new(
            request.method(),
            Some(url.scheme()),
            url.host_str(),
            url.port_or_known_default(),
            url.path(),
            request.headers(),
        );
        let key = self.outbound.key_of(&target);
        let replay = if self.outbound.may_retry(request.method()) {
            request.try_clone()
        } else {
            None
        };
        let max_wait = self.outbound.max_wait(extensions.get::<MaxWait>());
        let mut transport = NextTransport { next, extensions };
        match self
            .outbound
            .run(key, request, replay, max_wait, &mut transport)
            .await
        {
            Ok(response) => Ok(response),
            Err(Error::Limited(limited)) => Err(reqwest_middleware::Error::middleware(limited)),
            Err(Error::Service(e)) => Err(e),
        }
    }
}
