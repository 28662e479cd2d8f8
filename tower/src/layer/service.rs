//! [`RateLimit`], the service a [`RateLimitLayer`] makes: each request's key and permit, then
//! its future.

use core::task::{Context, Poll};

use tower_service::Service;

use super::*;

/// The service a [`RateLimitLayer`] makes: limits requests, then calls the inner service.
///
/// `poll_ready` is always ready: the inner service is cloned into each request's future and
/// asked for readiness only once the request has its permit (and has waited for its slot), so a
/// waiting request holds no slot of an inner `ConcurrencyLimit`, and its wait does not count
/// against an inner `Timeout`.
pub struct RateLimit<S, St, X, M = Http<DefaultResponse>, Cl = ChargeAll> {
    pub(super) inner: S,
    pub(super) shared: Arc<Shared<St, X, M, Cl>>,
}

impl<S: Clone, St, X, M, Cl> Clone for RateLimit<S, St, X, M, Cl> {
    fn clone(&self) -> Self {
        RateLimit {
            inner: self.inner.clone(),
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<S: fmt::Debug, St, X, M, Cl> fmt::Debug for RateLimit<S, St, X, M, Cl> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimit")
            .field("inner", &self.inner)
            .field("policy", self.shared.fields.policy())
            .finish_non_exhaustive()
    }
}

impl<S, Req, St, X, M, Cl> Service<Req> for RateLimit<S, St, X, M, Cl>
where
    S: Service<Req> + Clone,
    St: Store,
    X: KeyExtractor<Req, Key = St::Key>,
    M: Mode<S::Response, S::Error> + Detect<Req>,
    Cl: Classify<S::Response, S::Error>,
{
    type Response = S::Response;
    type Error = M::Error;
    type Future = ResponseFuture<S, Req, St, X, M, Cl>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // The inner service made ready here serves the next request that may run at once; a
        // request that must wait (or whose store answers later) runs on a clone that is asked
        // for readiness only when its slot comes.
        self.inner
            .poll_ready(cx)
            .map_err(|e| self.shared.mode.error(e))
    }

    // A key that is nothing (one global quota: nothing of the request is read) is decided
    // where the caller calls, which then builds the future in place; any other key is extracted
    // out of line, where the request is copied fewer times (measured, benches/RESULTS.md).
    #[inline]
    fn call(&mut self, request: Req) -> Self::Future {
        if size_of::<St::Key>() == 0 {
            self.admit(request)
        } else {
            self.admit_keyed(request)
        }
    }
}

impl<S, St, X, M, Cl> RateLimit<S, St, X, M, Cl>
where
    St: Store,
{
    /// [`admit`](Self::admit), not inlined.
    #[inline(never)]
    fn admit_keyed<Req>(&mut self, request: Req) -> ResponseFuture<S, Req, St, X, M, Cl>
    where
        S: Service<Req> + Clone,
        X: KeyExtractor<Req, Key = St::Key>,
        M: Mode<S::Response, S::Error> + Detect<Req>,
        Cl: Classify<S::Response, S::Error>,
    {
        self.admit(request)
    }

    /// The request's key, and its permit: on the common path, taken for good and the request
    /// sent to the inner service; any other in [`call_rest`](Self::call_rest).
    #[inline(always)]
    fn admit<Req>(&mut self, request: Req) -> ResponseFuture<S, Req, St, X, M, Cl>
    where
        S: Service<Req> + Clone,
        X: KeyExtractor<Req, Key = St::Key>,
        M: Mode<S::Response, S::Error> + Detect<Req>,
        Cl: Classify<S::Response, S::Error>,
    {
        let shared = &*self.shared;
        let key = shared.extractor.extract(&request);
        // Nothing could give the permit back (no waiting, no refunds): take it for good, on the
        // store's fastest path. Admitted (the common case), the request goes straight to the
        // inner service that `poll_ready` made ready, and its future is built in one place.
        if let Some(k) = &key
            && !shared.classify.may_refund()
            && !shared.waits.load(Ordering::Relaxed)
        {
            return match shared.store.take(k, shared.cost) {
                Some(Ok(())) => {
                    #[cfg(feature = "metrics")]
                    shared.counts.admitted();
                    // The inner call first: nothing to drop if it unwinds, so that its future
                    // can be made where this one returns it, not moved there.
                    let future = self.inner.call(request);
                    let shared = Arc::clone(&self.shared);
                    ResponseFuture::running(future, key, Held::none(), None, shared)
                }
                taken => self.call_rest(request, key, taken.and_then(Result::err)),
            };
        }
        self.call_rest(request, key, None)
    }

    /// Every request but one admitted on the take-for-good path: no key, refused, reserved,
    /// waiting, or decided by a remote store later. Not inlined, so that the common path stays
    /// a small function.
    #[inline(never)]
    fn call_rest<Req>(
        &mut self,
        request: Req,
        key: Option<St::Key>,
        refused: Option<Denial>,
    ) -> ResponseFuture<S, Req, St, X, M, Cl>
    where
        S: Service<Req> + Clone,
        X: KeyExtractor<Req, Key = St::Key>,
        M: Mode<S::Response, S::Error> + Detect<Req>,
        Cl: Classify<S::Response, S::Error>,
    {
        let shared = Arc::clone(&self.shared);
        let Some(key) = key else {
            let why = shared.extractor.why_missing(&request);
            if let Some(why) = why {
                shared.tell_missing(why);
            }
            let served = shared.missing_key == MissingKey::Pass;
            shared.publish(LayerEvent::MissingKey { served });
            return match shared.missing_key {
                MissingKey::Reject(status) => {
                    #[cfg(feature = "metrics")]
                    shared.counts.rejected(crate::metrics::Refused::MissingKey);
                    let protocol = shared.mode.protocol(&request);
                    let output = match why {
                        Some(why) => shared.mode.missing_key_because(status, why, protocol),
                        None => shared.mode.missing_key(status, protocol),
                    };
                    ResponseFuture::done(output, shared)
                }
                MissingKey::Pass => {
                    let future = self.inner.call(request);
                    ResponseFuture::running(future, None, Held::none(), None, shared)
                }
            };
        };
        // Refused on the fast path: answered now, or (shadow mode) served anyway; unless the
        // store's own max wait now lets it wait (its config changed since it was last read):
        // reserved below.
        if let Some(denial) = refused
            && !shared.own_waits_now()
        {
            return match decide(&shared, Err(denial), || shared.mode.protocol(&request)) {
                Next::Done(output) => ResponseFuture::done(output, shared),
                Next::Run { grant_status, .. } => {
                    let future = self.inner.call(request);
                    ResponseFuture::running(future, Some(key), Held::none(), grant_status, shared)
                }
            };
        }
        let decision = match shared.store.acquire(&key, shared.cost, shared.max_wait) {
            Decision::Now(decision) => decision,
            Decision::Later(future) => {
                let protocol = shared.mode.protocol(&request);
                let phase = Phase::Acquire { future, protocol };
                let inner = self.inner.clone();
                return ResponseFuture::slow(
                    phase,
                    inner,
                    request,
                    key,
                    Held::none(),
                    None,
                    shared,
                );
            }
        };
        // Admitted at once (the common case): straight to the inner service that `poll_ready`
        // made ready.
        let decision = match decision {
            Ok(grant) if grant.wait.is_zero() => {
                #[cfg(feature = "metrics")]
                shared.counts.admitted();
                let held = Held {
                    permit: Some(grant.permit),
                    started: true,
                };
                let future = self.inner.call(request);
                return ResponseFuture::running(future, Some(key), held, grant.status, shared);
            }
            // Refused under the store's own max wait: it may no longer let requests wait.
            Err(denial) if shared.max_wait.is_none() && shared.waits.load(Ordering::Relaxed) => {
                shared.own_waits_now();
                Err(denial)
            }
            other => other,
        };
        match decide(&shared, decision, || shared.mode.protocol(&request)) {
            Next::Run {
                mut held,
                wait,
                grant_status,
            } if wait.is_zero() => {
                held.started = true;
                let future = self.inner.call(request);
                ResponseFuture::running(future, Some(key), held, grant_status, shared)
            }
            Next::Run {
                held,
                wait,
                grant_status,
            } => {
                let phase = Phase::Wait {
                    sleep: tokio::time::sleep(wait),
                };
                let inner = self.inner.clone();
                ResponseFuture::slow(phase, inner, request, key, held, grant_status, shared)
            }
            Next::Done(output) => ResponseFuture::done(output, shared),
        }
    }
}
