//! [`ClientLayer`]: the client's rate limiting as a `tower::Layer` for any
//! `Service<http::Request<B>>` (hyper-util's client, a tonic channel, your own).

use core::future::{Future, poll_fn};
use core::pin::Pin;
use core::task::{Context, Poll, ready};
use std::hash::Hash;

use http::{Request, Response};
use pin_project_lite::pin_project;
use tower_layer::Layer;
use tower_service::Service;

use crate::error::Error;
use crate::outbound::{MaxWait, Outbound, PerKey, Target, Transport, default_port};
use ritmo_tower::Store;

/// How a request is copied for a retry, before it is sent ([`ClientLayer::replay_with`]).
///
/// Implemented by [`NoReplay`] (never: the default), [`CloneBody`] (bodies that are `Clone`:
/// `String`, `Bytes`, `Full<Bytes>`, ...), and by any `Fn(&Request<B>) -> Option<Request<B>>`.
pub trait Replay<B> {
    /// A copy of the request to send again, or `None` if it cannot be sent twice (a stream).
    fn replay(&self, request: &Request<B>) -> Option<Request<B>>;
}

/// Never retries: no request is copied.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoReplay;

impl<B> Replay<B> for NoReplay {
    fn replay(&self, _: &Request<B>) -> Option<Request<B>> {
        None
    }
}

/// Copies requests whose body is `Clone` (method, URI, version, headers, body; extensions are
/// not copied).
#[derive(Debug, Clone, Copy, Default)]
pub struct CloneBody;

impl<B: Clone> Replay<B> for CloneBody {
    fn replay(&self, request: &Request<B>) -> Option<Request<B>> {
        let mut copy = Request::new(request.body().clone());
        *copy.method_mut() = request.method().clone();
        *copy.uri_mut() = request.uri().clone();
        *copy.version_mut() = request.version();
        *copy.headers_mut() = request.headers().clone();
        Some(copy)
    }
}

impl<B, F: Fn(&Request<B>) -> Option<Request<B>>> Replay<B> for F {
    fn replay(&self, request: &Request<B>) -> Option<Request<B>> {
        self(request)
    }
}

/// The request's target: the URI's host and port, else the `Host` header's.
pub(crate) fn target_of<B>(request: &Request<B>) -> Target<'_> {
    let (uri, headers) = (request.uri(), request.headers());
    let scheme = uri.scheme_str();
    let (host, port) = match uri.host() {
        Some(host) => (Some(host), uri.port_u16()),
        // The header's host lives in a parsed copy: keep only its port, and the host text as
        // the header spells it (lower-cased by `HostKey`).
        None => match headers.get(http::header::HOST).map(|h| h.to_str()) {
            Some(Ok(text)) => match text.parse::<http::uri::Authority>() {
                Ok(at) => (
                    Some(text.rsplit_once(':').map_or(text, |t| t.0)),
                    at.port_u16(),
                ),
                Err(_) => (None, None),
            },
            _ => (None, None),
        },
    };
    let port = port.or_else(|| default_port(scheme?));
    Target::new(request.method(), scheme, host, port, uri.path(), headers)
}

/// The client's rate limiting as a `tower::Layer`: a permit of the client's quota per request,
/// the server's holds obeyed, see [`Outbound`] for the rules.
///
/// ```
/// use std::time::Duration;
/// use ritmo::Config;
/// use ritmo::client::{ClientLayer, CloneBody, Outbound};
///
/// let config = Config::new(10, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(5));
/// let outbound = Outbound::per_host("backend", config).retry_once(true).build();
/// let layer = ClientLayer::new(outbound.clone()).replay_with(CloneBody);
/// // let client = tower::ServiceBuilder::new().layer(layer).service(hyper_util_client);
/// # let _ = layer;
/// # Ok::<(), ritmo::ConfigError>(())
/// ```
#[derive(Debug)]
pub struct ClientLayer<K: 'static, R = NoReplay, Q = PerKey<K>> {
    outbound: Outbound<K, Q>,
    replay: R,
}

impl<K, R: Clone, Q> Clone for ClientLayer<K, R, Q> {
    fn clone(&self) -> Self {
        let (outbound, replay) = (self.outbound.clone(), self.replay.clone());
        ClientLayer { outbound, replay }
    }
}

impl<K, Q> ClientLayer<K, NoReplay, Q> {
    /// A layer over `outbound` that never retries (see [`replay_with`](Self::replay_with)).
    pub fn new(outbound: Outbound<K, Q>) -> Self {
        ClientLayer {
            outbound,
            replay: NoReplay,
        }
    }
}

impl<K, R, Q> ClientLayer<K, R, Q> {
    /// How requests are copied for the retry of a `429` (retries also need
    /// [`Builder::retry_once`](crate::Builder::retry_once)).
    pub fn replay_with<R2>(self, replay: R2) -> ClientLayer<K, R2, Q> {
        ClientLayer {
            outbound: self.outbound,
            replay,
        }
    }
}

impl<S, K, R: Clone, Q> Layer<S> for ClientLayer<K, R, Q> {
    type Service = RateLimited<S, K, R, Q>;

    fn layer(&self, inner: S) -> Self::Service {
        let ClientLayer { outbound, replay } = self.clone();
        RateLimited {
            inner,
            outbound,
            replay,
        }
    }
}

/// A service whose requests wait for the client's quota and the server's holds
/// ([`ClientLayer`]).
#[derive(Debug)]
pub struct RateLimited<S, K: 'static, R = NoReplay, Q = PerKey<K>> {
    inner: S,
    outbound: Outbound<K, Q>,
    replay: R,
}

impl<S: Clone, K, R: Clone, Q> Clone for RateLimited<S, K, R, Q> {
    fn clone(&self) -> Self {
        let (inner, replay) = (self.inner.clone(), self.replay.clone());
        let outbound = self.outbound.clone();
        RateLimited {
            inner,
            outbound,
            replay,
        }
    }
}

impl<S, K, R, Q> RateLimited<S, K, R, Q> {
    /// The client's limiter and holds.
    pub fn outbound(&self) -> &Outbound<K, Q> {
        &self.outbound
    }

    /// The wrapped service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }
}

/// What waits, retries or reads a hold: the one send loop, boxed (it borrows the shared limiter).
type SendLoop<T, E> = Pin<Box<dyn Future<Output = Result<T, Error<E>>> + Send>>;

pin_project! {
    /// The future of a [`RateLimited`] service.
    ///
    /// A request that neither waits nor may be retried, while no server holds any key (the common
    /// case), took its permit in `call` and is the inner service's future, its response read for
    /// the server's fields when it arrives; any other runs the send loop, boxed.
    pub struct ResponseFuture<F, K: 'static, T, E, Q = PerKey<K>> {
        #[pin]
        state: State<F, K, T, E, Q>,
    }
}

pin_project! {
    #[project = StateProj]
    enum State<F, K: 'static, T, E, Q> {
        Sent { #[pin] future: F, key: K, outbound: Outbound<K, Q> },
        Loop { future: SendLoop<T, E> },
    }
}

impl<F, K, T, E, Q> core::fmt::Debug for ResponseFuture<F, K, T, E, Q> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let sent = matches!(self.state, State::Sent { .. });
        f.debug_struct("ResponseFuture")
            .field("sent", &sent)
            .finish_non_exhaustive()
    }
}

impl<F, K, RB, E, Q> Future for ResponseFuture<F, K, Response<RB>, E, Q>
where
    F: Future<Output = Result<Response<RB>, E>>,
    K: Hash + Eq + Clone + Send + Sync + 'static,
    Q: Store<Key = K>,
{
    type Output = Result<Response<RB>, Error<E>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().state.project() {
            StateProj::Sent {
                future,
                key,
                outbound,
            } => {
                let result = ready!(future.poll(cx));
                // Read in place (the response is moved once, to the caller). Most responses
                // carry no field at all: not even a call to read them.
                if let Ok(response) = &result
                    && !response.headers().is_empty()
                {
                    outbound.observe(key, response.status(), response.headers());
                }
                Poll::Ready(result.map_err(Error::Service))
            }
            StateProj::Loop { future } => future.as_mut().poll(cx),
        }
    }
}

struct TowerTransport<S>(S);

impl<S, B, RB> Transport<Request<B>> for TowerTransport<S>
where
    S: Service<Request<B>, Response = Response<RB>> + Send + 'static,
    S::Future: Send,
    B: Send + 'static,
    RB: 'static,
{
    type Response = Response<RB>;
    type Error = S::Error;

    async fn send(&mut self, request: Request<B>) -> Result<Response<RB>, S::Error> {
        poll_fn(|cx| self.0.poll_ready(cx)).await?;
        self.0.call(request).await
    }
}

impl<S, K, R, B, RB, Q> Service<Request<B>> for RateLimited<S, K, R, Q>
where
    Q: Store<Key = K>,
    S: Service<Request<B>, Response = Response<RB>> + Clone + Send + 'static,
    S::Future: Send,
    S::Error: Send,
    K: Hash + Eq + Clone + Send + Sync + 'static,
    R: Replay<B>,
    B: Send + 'static,
    RB: Send + 'static,
{
    type Response = Response<RB>;
    type Error = Error<S::Error>;
    type Future = ResponseFuture<S::Future, K, Response<RB>, S::Error, Q>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Error::Service)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let key = self.outbound.key_with(|| target_of(&request));
        let replay = if self.outbound.may_retry(request.method()) {
            self.replay.replay(&request)
        } else {
            None
        };
        // Nothing to wait for and nothing to retry: the permit is taken now and the request
        // goes to the instance `poll_ready` made ready.
        if replay.is_none() && self.outbound.take_now(&key) {
            return ResponseFuture {
                state: State::Sent {
                    future: self.inner.call(request),
                    key,
                    outbound: self.outbound.clone(),
                },
            };
        }
        // The instance polled ready goes with this request; this service keeps a fresh clone.
        let clone = self.inner.clone();
        let inner = core::mem::replace(&mut self.inner, clone);
        let outbound = self.outbound.clone();
        let max_wait = outbound.max_wait(request.extensions().get::<MaxWait>());
        ResponseFuture {
            state: State::Loop {
                future: Box::pin(async move {
                    let mut transport = TowerTransport(inner);
                    outbound
                        .run(key, request, replay, max_wait, &mut transport)
                        .await
                }),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets() {
        let r = Request::get("http://Example.com:8080/a").body(()).unwrap();
        let t = target_of(&r);
        assert_eq!(
            (t.host, t.port, t.path),
            (Some("Example.com"), Some(8080), "/a")
        );
        let r = Request::get("https://example.com/").body(()).unwrap();
        assert_eq!(target_of(&r).port, Some(443));
        let r = Request::get("/x")
            .header("host", "h.example:81")
            .body(())
            .unwrap();
        let t = target_of(&r);
        assert_eq!((t.host, t.port), (Some("h.example"), Some(81)));
        let r = Request::get("/x")
            .header("host", "bad host")
            .body(())
            .unwrap();
        assert_eq!(target_of(&r).host, None);
    }
}
