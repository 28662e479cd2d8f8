//! The future of a rate-limited call: the store's decision, the wait for the slot, the inner
//! call, then the charge by outcome and the fields on the response.

use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll, ready};
use core::time::Duration;
use std::sync::Arc;

use pin_project_lite::pin_project;
use ritmo_core::AcquireError;
use tokio::time::{Instant, Sleep};
use tower_service::Service;

use super::*;
use crate::reject::Rejection;

/// What follows a store's decision.
pub(super) enum Next<P: Permit, O> {
    /// Run the request once `wait` has passed (admitted, or served anyway in shadow mode; zero:
    /// now).
    Run {
        held: Held<P>,
        wait: Duration,
        grant_status: Option<Status>,
    },
    /// Answer without running (rejected).
    Done(O),
}

#[inline]
pub(super) fn decide<St, X, M, Cl, Resp, E>(
    shared: &Shared<St, X, M, Cl>,
    decision: Result<Grant<St::Permit>, Denial>,
    protocol: impl FnOnce() -> Protocol,
) -> Next<St::Permit, Result<Resp, M::Error>>
where
    St: Store,
    M: Mode<Resp, E>,
{
    match decision {
        Ok(Grant {
            permit,
            wait,
            status,
            ..
        }) => {
            #[cfg(feature = "metrics")]
            shared.counts.admitted();
            if !wait.is_zero() {
                shared.publish(LayerEvent::Waiting { wait });
            }
            let held = Held {
                permit: Some(permit),
                started: false,
            };
            Next::Run {
                held,
                wait,
                grant_status: status,
            }
        }
        Err(Denial {
            error,
            status,
            policy,
            ..
        }) => {
            let error = match error {
                AcquireError::RateLimited(e) => e,
                // Cannot happen through this layer, which checked its cost against the quota;
                // a store of another kind could still answer it.
                other => {
                    #[cfg(feature = "metrics")]
                    shared.counts.rejected(crate::metrics::Refused::Other);
                    return Next::Done(shared.mode.store_failed(other, protocol()));
                }
            };
            let enforced = !shared.shadow;
            #[cfg(feature = "metrics")]
            match (enforced, error.reason()) {
                (false, _) => shared.counts.shadow_rejected(),
                (true, ritmo_core::Reason::NoPermitInTime) => {
                    shared.counts.rejected(crate::metrics::Refused::Limited);
                }
                (true, _) => shared.counts.rejected(crate::metrics::Refused::Other),
            }
            shared.publish(LayerEvent::Rejected { error, enforced });
            if enforced {
                let fields = shared.policy_at(policy);
                let rejection = Rejection::new(error, *fields.policy(), status);
                let protocol = protocol();
                Next::Done(
                    shared
                        .mode
                        .rejected(&rejection, fields.policy_header(), protocol),
                )
            } else {
                // Shadow mode: served without a permit, reported as it stands.
                Next::Run {
                    held: Held::none(),
                    wait: Duration::ZERO,
                    grant_status: Some(status),
                }
            }
        }
    }
}

/// A permit held by a request's future: refunded if the future is dropped before the request
/// runs, kept once it runs (a request that started keeps its permit even if it is dropped). The
/// future does both when it goes ([`ResponseFuture`]'s drop), with the layer's listener.
pub(super) struct Held<P: Permit> {
    pub(super) permit: Option<P>,
    pub(super) started: bool,
}

impl<P: Permit> Held<P> {
    #[inline(always)]
    pub(super) fn none() -> Self {
        Held {
            permit: None,
            started: false,
        }
    }

    pub(super) fn refund(&mut self, cause: RefundCause, listener: Option<&Listener>) {
        if let Some(permit) = self.permit.take() {
            Self::give_back(permit, cause, listener);
        }
    }

    /// Gives `permit` back, and tells the listener whether it went back.
    #[inline(always)]
    fn give_back(permit: P, cause: RefundCause, listener: Option<&Listener>) {
        let returned = permit.refund();
        if let Some(listener) = listener {
            listener(&LayerEvent::Refunded { cause, returned });
        }
    }

    /// What a future's drop does with the permit it still held: kept if the request started,
    /// else given back.
    #[cold]
    #[inline(never)]
    fn settle(permit: P, started: bool, listener: Option<&Listener>) {
        if started {
            permit.commit();
        } else {
            Self::give_back(permit, RefundCause::Dropped, listener);
        }
    }
}

pin_project! {
    #[project = StateProj]
    pub(super) enum State<F, O, Sl> {
        // The inner call is running.
        Call { #[pin] future: F },
        // Not yet running: the store's answer, the wait for the slot, the inner service's
        // readiness. Boxed, so that the common case (admitted at once) moves a small future.
        Slow { slow: Pin<Box<Sl>> },
        // Answered without running (refused, no key): boxed, so that the future of every
        // admitted request does not carry room for a whole response.
        Done { output: Option<Box<O>> },
    }
}

pin_project! {
    pub(super) struct Slow<A, S, Req> {
        #[pin]
        phase: Phase<A>,
        inner: S,
        request: Option<Req>,
    }
}

pin_project! {
    #[project = PhaseProj]
    pub(super) enum Phase<A> {
        // The store's answer; `protocol`: the form of a refusal, read from the request.
        Acquire { #[pin] future: A, protocol: Protocol },
        Wait { #[pin] sleep: Sleep },
        Ready,
    }
}

pin_project! {
    /// The future of a [`RateLimit`] call: acquire (and wait), then the inner call, then the
    /// charge and the fields.
    pub struct ResponseFuture<S, Req, St, X, M, Cl>
    where
        S: Service<Req>,
        St: Store,
        M: Mode<S::Response, S::Error>,
    {
        #[pin]
        state: State<S::Future, Result<S::Response, M::Error>, Slow<St::Acquire, S, Req>>,
        key: Option<St::Key>,
        held: Held<St::Permit>,
        grant_status: Option<Status>,
        shared: Arc<Shared<St, X, M, Cl>>,
    }
    impl<S, Req, St, X, M, Cl> PinnedDrop for ResponseFuture<S, Req, St, X, M, Cl>
    where
        S: Service<Req>,
        St: Store,
        M: Mode<S::Response, S::Error>,
    {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            // Most requests hold nothing here (taken for good, or already committed): the rest
            // is out of line, so that their drop stays a check. The permit is taken, not
            // borrowed, so that the field's own drop after this one has nothing left to test.
            if let Some(permit) = this.held.permit.take() {
                Held::settle(permit, this.held.started, this.shared.listener.as_ref());
            }
        }
    }
}

impl<S, Req, St, X, M, Cl> fmt::Debug for ResponseFuture<S, Req, St, X, M, Cl>
where
    S: Service<Req>,
    St: Store,
    M: Mode<S::Response, S::Error>,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseFuture")
            .field("policy", self.shared.fields.policy())
            .field("holds_permit", &self.held.permit.is_some())
            .finish_non_exhaustive()
    }
}

impl<S, Req, St, X, M, Cl> ResponseFuture<S, Req, St, X, M, Cl>
where
    S: Service<Req>,
    St: Store,
    M: Mode<S::Response, S::Error>,
{
    pub(super) fn done(
        output: Result<S::Response, M::Error>,
        shared: Arc<Shared<St, X, M, Cl>>,
    ) -> Self {
        ResponseFuture {
            state: State::Done {
                output: Some(Box::new(output)),
            },
            key: None,
            held: Held::none(),
            grant_status: None,
            shared,
        }
    }

    pub(super) fn slow(
        phase: Phase<St::Acquire>,
        inner: S,
        request: Req,
        key: St::Key,
        held: Held<St::Permit>,
        grant_status: Option<Status>,
        shared: Arc<Shared<St, X, M, Cl>>,
    ) -> Self {
        ResponseFuture {
            state: State::Slow {
                slow: Box::pin(Slow {
                    phase,
                    inner,
                    request: Some(request),
                }),
            },
            key: Some(key),
            held,
            grant_status,
            shared,
        }
    }

    #[inline(always)]
    pub(super) fn running(
        future: S::Future,
        key: Option<St::Key>,
        held: Held<St::Permit>,
        grant_status: Option<Status>,
        shared: Arc<Shared<St, X, M, Cl>>,
    ) -> Self {
        ResponseFuture {
            state: State::Call { future },
            key,
            held,
            grant_status,
            shared,
        }
    }
}

impl<S, Req, St, X, M, Cl> Future for ResponseFuture<S, Req, St, X, M, Cl>
where
    S: Service<Req>,
    St: Store,
    M: Mode<S::Response, S::Error>,
    Cl: Classify<S::Response, S::Error>,
{
    type Output = Result<S::Response, M::Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        loop {
            let this = self.as_mut().project();
            let StateProj::Call { future } = this.state.project() else {
                // Not running yet, or answered without running: out of line.
                if let Some(output) = ready!(poll_start(self.as_mut(), cx)) {
                    return Poll::Ready(output);
                }
                continue;
            };
            let shared = &**this.shared;
            if this.held.permit.is_none() && !(shared.admitted_fields && shared.mode.wants_fields())
            {
                // Nothing to do after the response: the inner future's output, passed through.
                return future
                    .poll(cx)
                    .map(|result| shared.mode.served(result, None));
            }
            let (held, key, grant_status) = (this.held, this.key, *this.grant_status);
            // The response is handled where the inner future's poll returns it (one move), and
            // the finished inner future goes with this one (as tower's own futures do): no state
            // to switch.
            return future.poll(cx).map(|result| {
                let fields = after_response(held, key.as_ref(), grant_status, shared, &result);
                shared.mode.served(result, fields)
            });
        }
    }
}

/// After the response: the charge by outcome (a permit kept is committed when `held` goes: it
/// is marked started), and the fields to set on the response.
#[inline(never)]
fn after_response<'s, St, X, M, Cl, Resp, E>(
    held: &mut Held<St::Permit>,
    key: Option<&St::Key>,
    grant_status: Option<Status>,
    shared: &'s Shared<St, X, M, Cl>,
    result: &Result<Resp, E>,
) -> Option<Fields<'s>>
where
    St: Store,
    M: Mode<Resp, E>,
    Cl: Classify<Resp, E>,
{
    if held.permit.is_some() && shared.classify.classify(result.as_ref()) == Charge::Refund {
        held.refund(RefundCause::Classified, shared.listener.as_ref());
    }
    if !(shared.admitted_fields && shared.mode.wants_fields()) {
        return None;
    }
    let fields = shared.policy_for(key);
    key.and_then(|key| shared.store.status(key))
        .or(grant_status)
        .map(|status| Fields { fields, status })
}

/// The states of a [`ResponseFuture`] before it runs the inner call: the store's answer, the
/// wait for the slot, the inner service's readiness; and a refusal's answer. `Ready(None)` once
/// the inner call runs (the state is `Call`), `Ready(Some(_))` when the request is answered
/// without running. Out of line: most requests never come here.
#[inline(never)]
fn poll_start<S, Req, St, X, M, Cl>(
    future: Pin<&mut ResponseFuture<S, Req, St, X, M, Cl>>,
    cx: &mut Context<'_>,
) -> Poll<Option<Result<S::Response, M::Error>>>
where
    S: Service<Req>,
    St: Store,
    M: Mode<S::Response, S::Error>,
{
    let mut this = future.project();
    loop {
        match this.state.as_mut().project() {
            StateProj::Slow { slow } => {
                let slow = slow.as_mut().project();
                let mut phase = slow.phase;
                match phase.as_mut().project() {
                    PhaseProj::Acquire { future, protocol } => {
                        let decision = ready!(future.poll(cx));
                        let protocol = *protocol;
                        match decide(this.shared, decision, || protocol) {
                            Next::Run {
                                held,
                                wait,
                                grant_status,
                            } => {
                                *this.held = held;
                                *this.grant_status = grant_status;
                                phase.set(match wait.is_zero() {
                                    true => Phase::Ready,
                                    false => Phase::Wait {
                                        sleep: tokio::time::sleep(wait),
                                    },
                                });
                            }
                            Next::Done(output) => {
                                this.state.set(State::Done { output: None });
                                return Poll::Ready(Some(output));
                            }
                        }
                    }
                    PhaseProj::Wait { mut sleep } => {
                        ready!(sleep.as_mut().poll(cx));
                        let left = this
                            .held
                            .permit
                            .as_ref()
                            .map_or(Duration::ZERO, Permit::remaining);
                        if left.is_zero() {
                            phase.set(Phase::Ready);
                        } else {
                            // The timer and the limiter's clock may disagree by a tick:
                            // sleep again.
                            sleep.reset(Instant::now() + left);
                        }
                    }
                    PhaseProj::Ready => {
                        if let Err(e) = ready!(slow.inner.poll_ready(cx)) {
                            this.held
                                .refund(RefundCause::NotRun, this.shared.listener.as_ref());
                            this.state.set(State::Done { output: None });
                            return Poll::Ready(Some(this.shared.mode.served(Err(e), None)));
                        }
                        let request = slow.request.take().expect("request sent twice");
                        this.held.started = true;
                        let future = slow.inner.call(request);
                        this.state.set(State::Call { future });
                    }
                }
            }
            StateProj::Call { .. } => return Poll::Ready(None),
            StateProj::Done { output } => {
                return Poll::Ready(Some(*output.take().expect("polled after completion")));
            }
        }
    }
}
