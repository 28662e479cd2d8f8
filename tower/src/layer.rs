//! [`RateLimitLayer`] and its service, [`RateLimit`].

use core::fmt;
use core::time::Duration;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use http::StatusCode;
use ritmo_core::RateLimitExceeded;
use tower_layer::Layer;

use crate::charge::{Charge, ChargeAll, Classify};
use crate::headers::PolicyFields;
use crate::key::KeyExtractor;
use crate::reject::DefaultResponse;
use crate::store::{Decision, Denial, Grant, Permit, Policy, Status, Store};

mod future;
mod mode;
mod policy;
mod service;

pub use future::ResponseFuture;
use future::{Held, Next, Phase, decide};
pub use mode::{Detect, Errors, Fields, Grpc, Http, Mode, Protocol};
pub use service::RateLimit;

/// What to do with a request whose key extractor found no key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum MissingKey {
    /// Refuse it: HTTP mode answers with this status (no rate-limit fields), error mode fails with
    /// [`MissingKeyError`](crate::MissingKeyError).
    Reject(StatusCode),
    /// Serve it without limiting it.
    Pass,
}

/// Something the layer reports to the function given to [`RateLimitLayer::on_event`]. Events carry
/// the limiter's id, never the request's key (keys can be personal data).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LayerEvent {
    /// A request was refused; `enforced` is `false` in shadow mode (it was served anyway).
    Rejected {
        /// The limiter's error (id, reason, `retry_after`).
        error: RateLimitExceeded,
        /// Whether the request was really refused (`false`: shadow mode served it).
        enforced: bool,
    },
    /// A request waits `wait` for its slot before it runs.
    Waiting {
        /// How long.
        wait: Duration,
    },
    /// A request's permit was given back.
    Refunded {
        /// Why.
        cause: RefundCause,
        /// Whether it went back (`false`: later requests were queued behind it, the slot stays
        /// unused).
        returned: bool,
    },
    /// A request had no key.
    MissingKey {
        /// Whether it was served anyway ([`MissingKey::Pass`]).
        served: bool,
    },
}

/// Why a permit was given back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RefundCause {
    /// The classifier said so after the response.
    Classified,
    /// The request was dropped (the client went away) while it waited for its slot.
    Dropped,
    /// The inner service failed before the request could run.
    NotRun,
}

/// A thin pointer (the box holds the vtable), so that every request's future stays small.
type Listener = Arc<Box<dyn Fn(&LayerEvent) + Send + Sync>>;

/// The layer's settings, as its builder methods set them.
#[derive(Clone)]
struct Settings<St, X, M, Cl> {
    store: St,
    extractor: X,
    mode: M,
    classify: Cl,
    cost: u32,
    /// The layer's own max wait; `None`: the store's own, as it is when each request comes.
    max_wait: Option<Duration>,
    shadow: bool,
    admitted_fields: bool,
    missing_key: MissingKey,
    /// The policy and its fields' values rendered once.
    fields: PolicyFields,
    /// Each policy of a store of several (tiers), its fields rendered once; else empty.
    tiers: Arc<[PolicyFields]>,
    listener: Option<Listener>,
}

/// The layer's settings (read through it, by `Deref`) and what the layer learns as it serves:
/// shared by every clone of the layer, its services and their futures.
struct Shared<St, X, M, Cl> {
    settings: Settings<St, X, M, Cl>,
    /// Whether a request may wait for its slot: the layer's own max wait is not zero, or (without
    /// one) the store's own let requests wait when last read (when the layer was built, and
    /// after each refusal since). While none may, permits are taken on the store's fast path.
    waits: AtomicBool,
    /// Whether the layer has logged that its extractor cannot find a key (once per layer).
    told_missing: AtomicBool,
    /// What [`crate::metrics::record`] reports.
    #[cfg(feature = "metrics")]
    counts: crate::metrics::Counts,
}

impl<St, X, M, Cl> core::ops::Deref for Shared<St, X, M, Cl> {
    type Target = Settings<St, X, M, Cl>;

    #[inline(always)]
    fn deref(&self) -> &Self::Target {
        &self.settings
    }
}

impl<St: Store, X, M, Cl> Shared<St, X, M, Cl> {
    /// A layer's shared state for `settings`, as it is before the first request.
    fn new(settings: Settings<St, X, M, Cl>) -> Self {
        let waits = (settings.max_wait).map_or_else(|| settings.store.may_wait(), |w| !w.is_zero());
        Shared {
            settings,
            waits: AtomicBool::new(waits),
            told_missing: AtomicBool::new(false),
            #[cfg(feature = "metrics")]
            counts: crate::metrics::Counts::default(),
        }
    }
}

impl<St, X, M, Cl> Shared<St, X, M, Cl> {
    /// Logs, once, why requests have no key when that is a setup error.
    #[cold]
    fn tell_missing(&self, why: &str) {
        if !self.told_missing.swap(true, Ordering::Relaxed) {
            let outcome = match self.missing_key {
                MissingKey::Reject(status) => format!("refused with {status}"),
                MissingKey::Pass => "served without any limit".to_owned(),
            };
            tracing::error!(
                policy = self.fields.policy().name(),
                "ritmo rate-limit layer: a request has no rate-limit key and is {outcome}: {why}"
            );
        }
    }

    /// Without a max wait of its own, reads again whether the store's own lets requests wait
    /// (after a refusal: its config may have changed) and keeps the answer for the next
    /// requests; `false` with one.
    #[cold]
    fn own_waits_now(&self) -> bool
    where
        St: Store,
    {
        let waits = self.max_wait.is_none() && self.store.may_wait();
        self.waits.store(waits, Ordering::Relaxed);
        waits
    }

    fn publish(&self, event: LayerEvent) {
        if let Some(listener) = &self.listener {
            listener(&event);
        }
    }
}

impl<St, X, M, Cl> Settings<St, X, M, Cl> {
    /// The same settings with the mode and the classifier `f` makes of this one's.
    fn recast<M2, Cl2>(self, f: impl FnOnce(M, Cl) -> (M2, Cl2)) -> Settings<St, X, M2, Cl2> {
        let (mode, classify) = f(self.mode, self.classify);
        Settings {
            store: self.store,
            extractor: self.extractor,
            mode,
            classify,
            cost: self.cost,
            max_wait: self.max_wait,
            shadow: self.shadow,
            admitted_fields: self.admitted_fields,
            missing_key: self.missing_key,
            fields: self.fields,
            tiers: self.tiers,
            listener: self.listener,
        }
    }
}

/// A `tower::Layer` limiting requests by a key, through a [`Store`] (ritmo's limiter, a keyed
/// limiter, a shared remote store).
///
/// Cloning it, and the services it makes, copies one `Arc`: no lock, no `Buffer`, and every clone
/// limits through the same store.
///
/// A request without a key is refused with `400` (see [`missing_key`](Self::missing_key)). When
/// the extractor says that can only be a setup error ([`KeyExtractor::why_missing`]: `PeerIp` on
/// a server that records no connection address, an axum app without feature `axum`), the `400`'s
/// body says how to fix it, and the layer logs it once as a `tracing` error too. For the per-IP
/// keys (`PeerIp`, `ForwardedIp`) the server must record each connection's address:
///
/// - axum: serve the app with `app.into_make_service_with_connect_info::<SocketAddr>()` (and turn
///   on feature `axum`, of ritmo or ritmo-tower);
/// - hyper: insert the peer's `SocketAddr` into each request's extensions (in the
///   `service_fn` that hyper's connection calls, where the accepted stream's address is known);
/// - tonic: copy `TcpConnectInfo::remote_addr()` (which tonic's server inserts) into the
///   request's extensions as a `SocketAddr`, in a layer before this one.
///
/// ```
/// use std::time::Duration;
/// use ritmo::{Config, RateLimiter};
/// use ritmo::server::StdClock;
/// use ritmo::tower::{key::Global, RateLimitLayer};
///
/// static API: std::sync::LazyLock<RateLimiter<StdClock>> = std::sync::LazyLock::new(|| {
///     RateLimiter::with_clock("api", Config::new(100, Duration::from_secs(1)).unwrap(), StdClock::new())
/// });
/// let layer = RateLimitLayer::new(&*API, Global);
/// # let _ = layer;
/// ```
pub struct RateLimitLayer<St, X, M = Http<DefaultResponse>, Cl = ChargeAll> {
    shared: Arc<Shared<St, X, M, Cl>>,
}

impl<St, X, M, Cl> Clone for RateLimitLayer<St, X, M, Cl> {
    fn clone(&self) -> Self {
        RateLimitLayer {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<St: fmt::Debug, X: fmt::Debug, M, Cl> fmt::Debug for RateLimitLayer<St, X, M, Cl> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.shared;
        f.debug_struct("RateLimitLayer")
            .field("store", &s.store)
            .field("extractor", &s.extractor)
            .field("policy", s.fields.policy())
            .field("cost", &s.cost)
            .field("max_wait", &s.max_wait)
            .field("shadow", &s.shadow)
            .field("admitted_fields", &s.admitted_fields)
            .field("missing_key", &s.missing_key)
            .finish_non_exhaustive()
    }
}

/// A layer setting that cannot hold: one request costing more permits than the quota has would
/// never pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CostError {
    cost: u32,
    quota: u32,
}

impl CostError {
    /// The permits one request was to cost.
    pub const fn cost(&self) -> u32 {
        self.cost
    }

    /// The quota of the store's policy.
    pub const fn quota(&self) -> u32 {
        self.quota
    }
}

impl fmt::Display for CostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "RITMO-ATR-003: a request costing {} permits can never pass a quota of {}",
            self.cost, self.quota
        )
    }
}

impl std::error::Error for CostError {}

impl<St: Store, X> RateLimitLayer<St, X> {
    /// Limits requests through `store`, keyed by `extractor`, in HTTP mode: rejected requests get
    /// `429` with `Retry-After`, `RateLimit-Policy` and `RateLimit`; admitted ones get
    /// `RateLimit-Policy` and `RateLimit`; a request may wait for its slot up to the limiter
    /// config's `max_wait` (see [`max_wait`](Self::max_wait)); one permit per request; every
    /// response charged; a request without a key refused with `400`.
    pub fn new(store: St, extractor: X) -> Self {
        let policy = store.policy();
        let settings = Settings {
            fields: PolicyFields::new(policy),
            tiers: policy::tier_policies(&store),
            store,
            extractor,
            mode: Http(DefaultResponse),
            classify: ChargeAll,
            cost: 1,
            max_wait: None,
            shadow: false,
            admitted_fields: true,
            missing_key: MissingKey::Reject(StatusCode::BAD_REQUEST),
            listener: None,
        };
        RateLimitLayer {
            shared: Arc::new(Shared::new(settings)),
        }
    }
}

impl<St: Store + Clone, X: Clone, M: Clone, Cl: Clone> RateLimitLayer<St, X, M, Cl> {
    /// The layer rebuilt with `f` applied to its settings (the layer is being configured: they
    /// are moved, or copied where a clone holds them too), its state as before a first request.
    fn map<M2, Cl2>(
        self,
        f: impl FnOnce(Settings<St, X, M, Cl>) -> Settings<St, X, M2, Cl2>,
    ) -> RateLimitLayer<St, X, M2, Cl2> {
        let settings = Arc::try_unwrap(self.shared)
            .map_or_else(|shared| shared.settings.clone(), |shared| shared.settings);
        RateLimitLayer {
            shared: Arc::new(Shared::new(f(settings))),
        }
    }

    /// Lets a request wait up to `max_wait` for its slot instead of being refused (zero refuses
    /// at once). Without it, each request waits up to the limiter config's `max_wait` as it is
    /// when the request comes (a tiered limiter's: the key's tier's; a config changed live
    /// applies from the next request). A request that may wait reserves its permit and sleeps
    /// (on tokio's timer, holding no thread) until its slot, then runs. Waiters
    /// are served in the order they reserved. A request dropped while it waits (the client went
    /// away) gives its permit back if nobody reserved after it.
    #[must_use]
    pub fn max_wait(self, max_wait: Duration) -> Self {
        self.map(|s| Settings {
            max_wait: Some(max_wait),
            ..s
        })
    }

    /// Each request takes `cost` permits (default 1). Fails if `cost` is 0 or more than the quota.
    pub fn cost(self, cost: u32) -> Result<Self, CostError> {
        let quota = self.shared.least_quota();
        if cost == 0 || cost > quota {
            return Err(CostError { cost, quota });
        }
        Ok(self.map(|s| Settings { cost, ..s }))
    }

    /// Shadow mode: requests are counted and get the rate-limit fields, and rejections are
    /// reported to [`on_event`](Self::on_event) with `enforced: false`, but every request is
    /// served. To try a limit on live traffic before enforcing it.
    #[must_use]
    pub fn shadow(self, shadow: bool) -> Self {
        self.map(|s| Settings { shadow, ..s })
    }

    /// Whether admitted responses carry `RateLimit-Policy` and `RateLimit` (default: yes).
    /// Rejected responses always do.
    #[must_use]
    pub fn admitted_fields(self, on: bool) -> Self {
        self.map(|s| Settings {
            admitted_fields: on,
            ..s
        })
    }

    /// What to do with a request that has no key (default: refuse with `400`).
    #[must_use]
    pub fn missing_key(self, policy: MissingKey) -> Self {
        self.map(|s| Settings {
            missing_key: policy,
            ..s
        })
    }

    /// Names the policy in the fields (default: the limiter's id; a tier's name for a tiered store).
    #[must_use]
    pub fn policy_name(self, name: &'static str) -> Self {
        self.map(|s| {
            let policy = s.fields.policy().named(name);
            Settings {
                fields: PolicyFields::new(policy),
                ..s
            }
        })
    }

    /// Calls `f` for every [`LayerEvent`] (rejections, waits, refunds, missing keys). Called on
    /// the request's task: keep it quick.
    #[must_use]
    pub fn on_event(self, f: impl Fn(&LayerEvent) + Send + Sync + 'static) -> Self {
        let listener: Listener = Arc::new(Box::new(f));
        self.map(|s| Settings {
            listener: Some(listener),
            ..s
        })
    }

    /// Decides after each response whether the request keeps its permit (see
    /// [`charge`](crate::charge)); e.g. [`not_304_or_5xx`](crate::charge::not_304_or_5xx).
    #[must_use]
    pub fn charge<Cl2: Clone>(self, classify: Cl2) -> RateLimitLayer<St, X, M, Cl2> {
        self.map(|s| s.recast(|mode, _| (mode, classify)))
    }

    /// HTTP mode with rejection responses built by `on_reject` (see
    /// [`respond_with`](crate::respond_with)). The layer adds `Retry-After`, `RateLimit-Policy`
    /// and `RateLimit` to them unless they are already set.
    #[must_use]
    pub fn on_reject<R: Clone>(self, on_reject: R) -> RateLimitLayer<St, X, Http<R>, Cl> {
        self.with_mode(Http(on_reject))
    }

    /// Error mode: a rejected request fails with [`RateLimitExceeded`] in tower's `BoxError`
    /// (`error.downcast_ref::<RateLimitExceeded>()`), so a retry policy can wait `retry_after`
    /// and a circuit breaker can tell "too many requests" from a failure. For non-HTTP services,
    /// and for stacks whose outer layers handle errors (axum: `HandleErrorLayer`).
    #[must_use]
    pub fn errors(self) -> RateLimitLayer<St, X, Errors, Cl> {
        self.with_mode(Errors)
    }

    /// gRPC mode: every refusal is gRPC's trailers-only answer (HTTP `200`, `grpc-status: 8`
    /// `RESOURCE_EXHAUSTED`, `retry-after`, the RateLimit fields and a `RetryInfo` detail; a
    /// request without a key gets `INVALID_ARGUMENT` by default): see [`grpc`](crate::grpc).
    /// For tonic servers, whose body type has no `From<String>`; HTTP mode already answers
    /// gRPC calls so on a server that mixes both.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ritmo::{Config, RateLimiter};
    /// use ritmo::server::StdClock;
    /// use ritmo::tower::{key::Global, RateLimitLayer};
    ///
    /// static API: std::sync::LazyLock<RateLimiter<StdClock>> = std::sync::LazyLock::new(|| {
    ///     RateLimiter::with_clock("api", Config::new(100, Duration::from_secs(1)).unwrap(), StdClock::new())
    /// });
    /// let layer = RateLimitLayer::new(&*API, Global).grpc();
    /// // tonic::transport::Server::builder().layer(layer).add_service(...)
    /// # let _ = layer;
    /// ```
    #[must_use]
    pub fn grpc(self) -> RateLimitLayer<St, X, Grpc, Cl> {
        self.with_mode(Grpc)
    }

    fn with_mode<M2>(self, mode: M2) -> RateLimitLayer<St, X, M2, Cl> {
        self.map(|s| s.recast(|_, classify| (mode, classify)))
    }
}

impl<St, X, M, Cl> RateLimitLayer<St, X, M, Cl> {
    /// The store it limits through.
    pub fn store(&self) -> &St {
        &self.shared.store
    }

    /// The policy it reports.
    pub fn policy(&self) -> &Policy {
        self.shared.fields.policy()
    }

    /// Its policy name and counts, for [`crate::metrics::record`].
    #[cfg(feature = "metrics")]
    pub(crate) fn counts(&self) -> (&'static str, &crate::metrics::Counts) {
        (self.shared.fields.policy().name(), &self.shared.counts)
    }
}

impl<S, St, X, M, Cl> Layer<S> for RateLimitLayer<St, X, M, Cl> {
    type Service = RateLimit<S, St, X, M, Cl>;

    fn layer(&self, inner: S) -> Self::Service {
        RateLimit {
            inner,
            shared: Arc::clone(&self.shared),
        }
    }
}
