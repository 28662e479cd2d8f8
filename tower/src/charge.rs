//! Charge by outcome: after the response, a classifier decides whether the request keeps its
//! permit or gives it back.
//!
//! A returned permit obeys the tail rule: it goes back only if no later request took a permit of
//! the same key since (otherwise two requests would share one slot and the bound would break), so
//! a refund under load may return nothing. The default, [`ChargeAll`], keeps every permit.

use http::{Response, StatusCode};

/// What a classifier decided about a served request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Charge {
    /// The request keeps its permit.
    Keep,
    /// The permit goes back (by the tail rule).
    Refund,
}

/// Sees a request's outcome (its response, or the inner service's error) and decides the charge.
pub trait Classify<Resp, E>: Send + Sync + 'static {
    /// The charge for this outcome.
    fn classify(&self, outcome: Result<&Resp, &E>) -> Charge;

    /// Whether it may ever say [`Charge::Refund`] (default: yes). A classifier that never does
    /// lets the layer take permits for good, on the store's fastest path.
    fn may_refund(&self) -> bool {
        true
    }
}

/// Keeps every permit, whatever the outcome: the default.
///
/// ```
/// use ritmo::tower::charge::{Charge, ChargeAll, Classify};
/// let outcome: Result<&u16, &()> = Ok(&500);
/// assert_eq!(ChargeAll.classify(outcome), Charge::Keep);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct ChargeAll;

impl<Resp, E> Classify<Resp, E> for ChargeAll {
    fn classify(&self, _outcome: Result<&Resp, &E>) -> Charge {
        Charge::Keep
    }

    fn may_refund(&self) -> bool {
        false
    }
}

/// Decides an HTTP response's charge by its status code; inner errors are charged. See
/// [`by_status`].
#[derive(Debug, Clone, Copy)]
pub struct ByStatus<F>(F);

/// Charges an HTTP response by its status: `f(status)`.
///
/// ```
/// use http::{Response, StatusCode};
/// use ritmo::tower::charge::{by_status, Charge, Classify};
/// // Do not charge `304 Not Modified` or server errors.
/// let c = by_status(|s: StatusCode| {
///     if s == StatusCode::NOT_MODIFIED || s.is_server_error() { Charge::Refund } else { Charge::Keep }
/// });
/// let not_modified = Response::builder().status(304).body(()).unwrap();
/// let ok = Response::new(());
/// assert_eq!(Classify::<_, ()>::classify(&c, Ok(&not_modified)), Charge::Refund);
/// assert_eq!(Classify::<_, ()>::classify(&c, Ok(&ok)), Charge::Keep);
/// ```
pub fn by_status<F>(f: F) -> ByStatus<F>
where
    F: Fn(StatusCode) -> Charge + Send + Sync + 'static,
{
    ByStatus(f)
}

/// Does not charge `304 Not Modified` or any `5xx` (the server's fault, not the client's):
/// `by_status` with that rule.
///
/// ```
/// use http::Response;
/// use ritmo::tower::charge::{not_304_or_5xx, Charge, Classify};
/// let c = not_304_or_5xx();
/// let failed = Response::builder().status(503).body(()).unwrap();
/// assert_eq!(Classify::<_, ()>::classify(&c, Ok(&failed)), Charge::Refund);
/// ```
pub fn not_304_or_5xx() -> ByStatus<fn(StatusCode) -> Charge> {
    ByStatus(|status| {
        if status == StatusCode::NOT_MODIFIED || status.is_server_error() {
            Charge::Refund
        } else {
            Charge::Keep
        }
    })
}

impl<B, E, F> Classify<Response<B>, E> for ByStatus<F>
where
    F: Fn(StatusCode) -> Charge + Send + Sync + 'static,
{
    fn classify(&self, outcome: Result<&Response<B>, &E>) -> Charge {
        match outcome {
            Ok(response) => (self.0)(response.status()),
            Err(_) => Charge::Keep,
        }
    }
}

/// A classifier from any function of the outcome: see [`from_fn`].
#[derive(Debug, Clone, Copy)]
pub struct FromFn<F>(F);

/// Classifies by `f(outcome)`: for non-HTTP services, or to look at more than the status.
///
/// ```
/// use ritmo::tower::charge::{from_fn, Charge, Classify};
/// // A service answering `Result<u32, String>`: charge only what succeeded.
/// let c = from_fn(|outcome: Result<&u32, &String>| if outcome.is_ok() { Charge::Keep } else { Charge::Refund });
/// assert_eq!(c.classify(Err(&"down".to_string())), Charge::Refund);
/// ```
pub fn from_fn<F>(f: F) -> FromFn<F> {
    FromFn(f)
}

impl<Resp, E, F> Classify<Resp, E> for FromFn<F>
where
    F: Fn(Result<&Resp, &E>) -> Charge + Send + Sync + 'static,
{
    fn classify(&self, outcome: Result<&Resp, &E>) -> Charge {
        (self.0)(outcome)
    }
}

/// Decides a gRPC response's charge by the `grpc-status` in its headers; inner errors are
/// charged. See [`by_grpc_status`].
#[derive(Debug, Clone, Copy)]
pub struct ByGrpcStatus<F>(F);

/// Charges a gRPC response by its `grpc-status`: `f(code, http_status)`, `code` being `None`
/// when the response's headers carry none.
///
/// The classifier sees the response when it arrives, before its body: a call that failed before
/// sending any message (tonic answers a handler's `Err(Status)` so, and so does this layer) has
/// its status there, in a trailers-only response. A call that sent messages has its status in
/// the trailers, after the body, where no classifier of this layer looks: it is classified with
/// `None` (a unary call that sent its reply succeeded; a stream that fails midway is charged).
///
/// ```
/// use ritmo::tower::charge::{by_grpc_status, Charge, Classify};
/// use ritmo::tower::grpc::code;
/// // Refund calls the handler refused as not found (5) as well as unavailable ones.
/// let c = by_grpc_status(|code_: Option<u32>, _| match code_ {
///     Some(5 | code::UNAVAILABLE) => Charge::Refund,
///     _ => Charge::Keep,
/// });
/// let not_found = http::Response::builder().header("grpc-status", "5").body(()).unwrap();
/// assert_eq!(Classify::<_, ()>::classify(&c, Ok(&not_found)), Charge::Refund);
/// ```
pub fn by_grpc_status<F>(f: F) -> ByGrpcStatus<F>
where
    F: Fn(Option<u32>, StatusCode) -> Charge + Send + Sync + 'static,
{
    ByGrpcStatus(f)
}

/// The gRPC twin of [`not_304_or_5xx`]: does not charge a call that failed on the server's side,
/// `grpc-status` `UNKNOWN` (2: a handler's unknown error or panic), `DEADLINE_EXCEEDED` (4),
/// `INTERNAL` (13), `UNAVAILABLE` (14) or `DATA_LOSS` (15), nor a response with an HTTP `5xx`
/// (a proxy's or the transport's failure). The client's own doing is charged: `CANCELLED`,
/// `INVALID_ARGUMENT`, `NOT_FOUND`, `UNIMPLEMENTED`, `RESOURCE_EXHAUSTED` and the rest. What it
/// can see is what [`by_grpc_status`] says: a status in the response's headers.
///
/// ```
/// use ritmo::tower::charge::{not_grpc_server_error, Charge, Classify};
/// let c = not_grpc_server_error();
/// let unavailable = http::Response::builder().header("grpc-status", "14").body(()).unwrap();
/// let invalid = http::Response::builder().header("grpc-status", "3").body(()).unwrap();
/// assert_eq!(Classify::<_, ()>::classify(&c, Ok(&unavailable)), Charge::Refund);
/// assert_eq!(Classify::<_, ()>::classify(&c, Ok(&invalid)), Charge::Keep);
/// ```
pub fn not_grpc_server_error() -> ByGrpcStatus<fn(Option<u32>, StatusCode) -> Charge> {
    use crate::grpc::code;
    ByGrpcStatus(|grpc, http| match grpc {
        Some(
            code::UNKNOWN
            | code::DEADLINE_EXCEEDED
            | code::INTERNAL
            | code::UNAVAILABLE
            | code::DATA_LOSS,
        ) => Charge::Refund,
        _ if http.is_server_error() => Charge::Refund,
        _ => Charge::Keep,
    })
}

impl<B, E, F> Classify<Response<B>, E> for ByGrpcStatus<F>
where
    F: Fn(Option<u32>, StatusCode) -> Charge + Send + Sync + 'static,
{
    fn classify(&self, outcome: Result<&Response<B>, &E>) -> Charge {
        match outcome {
            Ok(response) => (self.0)(
                crate::grpc::grpc_status(response.headers()),
                response.status(),
            ),
            Err(_) => Charge::Keep,
        }
    }
}
