//! How a rejection surfaces ([`Mode`]): [`Http`] answers `429` with the rate-limit fields (and
//! gRPC calls in gRPC's form), [`Grpc`] answers every request in gRPC's form, [`Errors`] fails
//! the call; and the fields of an admitted response ([`Fields`]).

use std::borrow::Cow;

use http::{HeaderValue, Request, Response, StatusCode, header};
use ritmo_core::AcquireError;

use crate::grpc;
use crate::headers::{self, PolicyFields, RATELIMIT, RATELIMIT_POLICY};
use crate::reject::{BoxError, MissingKeyError, OnReject, Rejection};
use crate::store::{Policy, Status};

/// How a rejection surfaces: the mode of a [`RateLimitLayer`](crate::RateLimitLayer).
///
/// [`Http`] (the default) answers `429` with the rate-limit fields and keeps the inner service's
/// error type, so the stack stays infallible for axum. [`Errors`] fails the call with
/// [`RateLimitExceeded`](crate::ritmo::RateLimitExceeded) boxed in tower's `BoxError`, for non-HTTP services, retry policies and
/// circuit breakers.
pub trait Mode<Resp, E>: Send + Sync + 'static {
    /// The service's error type in this mode.
    type Error;
    /// The outcome of a rejected request, answered in `protocol`'s form.
    fn rejected(
        &self,
        rejection: &Rejection,
        policy_header: &HeaderValue,
        protocol: Protocol,
    ) -> Result<Resp, Self::Error>;
    /// The outcome of a request the store could not decide (more permits than the quota).
    fn store_failed(&self, error: AcquireError, protocol: Protocol) -> Result<Resp, Self::Error>;
    /// The outcome of a request without a key, refused with `status` (in gRPC's form: the
    /// `grpc-status` [`code_for_status`](crate::grpc::code_for_status) gives).
    fn missing_key(&self, status: StatusCode, protocol: Protocol) -> Result<Resp, Self::Error>;
    /// The outcome of a request without a key when that can only be a setup error, `why` saying
    /// how to fix it ([`KeyExtractor::why_missing`](crate::key::KeyExtractor::why_missing)); by
    /// default the same as [`missing_key`](Self::missing_key). [`Http`] writes `why` in the body.
    fn missing_key_because(
        &self,
        status: StatusCode,
        why: &'static str,
        protocol: Protocol,
    ) -> Result<Resp, Self::Error> {
        let _ = why;
        self.missing_key(status, protocol)
    }
    /// The inner service's error in this mode (its `poll_ready` failed).
    fn error(&self, error: E) -> Self::Error;
    /// The outcome of a served request, with the fields to set if any.
    fn served(
        &self,
        result: Result<Resp, E>,
        fields: Option<Fields<'_>>,
    ) -> Result<Resp, Self::Error>;
    /// Whether served responses can carry fields (computing them is skipped otherwise).
    fn wants_fields(&self) -> bool;
}

/// The rate-limit fields for one response.
#[derive(Debug, Clone, Copy)]
pub struct Fields<'a> {
    pub(super) fields: &'a PolicyFields,
    pub(super) status: Status,
}

impl Fields<'_> {
    /// The policy (`RateLimit-Policy`).
    pub fn policy(&self) -> &Policy {
        self.fields.policy()
    }

    /// The key's status (`RateLimit`).
    pub fn status(&self) -> &Status {
        &self.status
    }
}

/// The form a refusal takes for one request: an HTTP status, or gRPC's trailers-only answer
/// (see [`grpc`](crate::grpc)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Protocol {
    /// An HTTP status (`429`, `400`, `500`) and a body.
    Http,
    /// HTTP `200` with a `grpc-status`, no body.
    Grpc,
}

/// Which [`Protocol`] a mode answers a request in: read from the request only when it is
/// refused (or waits on a store that answers later), never on the path of an admitted request.
pub trait Detect<Req> {
    /// The form of this request's refusals.
    fn protocol(&self, request: &Req) -> Protocol;
}

/// HTTP mode: rejections are responses built by `R` (default: [`DefaultResponse`](crate::DefaultResponse), a `429`).
///
/// A gRPC call (its `content-type` starts with `application/grpc`, see
/// [`is_grpc`](crate::grpc::is_grpc)) is answered in gRPC's form instead (`grpc-status: 8`, the
/// same fields, an empty body made with `From<String>`), so one layer serves an axum app and the
/// tonic services routed beside it. For a body type without `From<String>` (tonic's), use
/// [`Grpc`] mode.
#[derive(Debug, Clone, Copy, Default)]
pub struct Http<R>(pub(super) R);

/// gRPC mode: every request's refusal is gRPC's trailers-only answer (HTTP `200`,
/// `grpc-status: 8` `RESOURCE_EXHAUSTED`, `grpc-message`, `retry-after`, the RateLimit fields and
/// a `google.rpc.RetryInfo` in `grpc-status-details-bin`; see [`grpc`](crate::grpc)), its body
/// the response body type's `Default` (any body tonic 0.12 to 0.14 serves). The inner service's
/// errors pass through unchanged.
#[derive(Debug, Clone, Copy, Default)]
pub struct Grpc;

impl<B, R> Detect<Request<B>> for Http<R> {
    fn protocol(&self, request: &Request<B>) -> Protocol {
        if grpc::is_grpc(request) {
            Protocol::Grpc
        } else {
            Protocol::Http
        }
    }
}

impl<Req> Detect<Req> for Grpc {
    fn protocol(&self, _request: &Req) -> Protocol {
        Protocol::Grpc
    }
}

impl<Req> Detect<Req> for Errors {
    fn protocol(&self, _request: &Req) -> Protocol {
        Protocol::Http
    }
}

/// Error mode: rejections are `Err(BoxError)` holding a [`RateLimitExceeded`](crate::ritmo::RateLimitExceeded) (a request without
/// a key: [`MissingKeyError`]); the inner service's errors are boxed too.
#[derive(Debug, Clone, Copy, Default)]
pub struct Errors;

fn set_if_absent(headers: &mut http::HeaderMap, name: http::HeaderName, value: HeaderValue) {
    if !headers.contains_key(&name) {
        headers.insert(name, value);
    }
}

impl<B: From<String>, E, R: OnReject<B>> Mode<Response<B>, E> for Http<R> {
    type Error = E;

    fn rejected(
        &self,
        rejection: &Rejection,
        policy_header: &HeaderValue,
        protocol: Protocol,
    ) -> Result<Response<B>, E> {
        if protocol == Protocol::Grpc {
            return Ok(grpc::refusal(
                B::from(String::new()),
                rejection,
                policy_header,
            ));
        }
        let mut response = self.0.respond(rejection);
        let headers = response.headers_mut();
        // Never earlier than the end of the `RateLimit` field's effective window (draft -11 §6).
        let window = headers::effective_window_secs(&rejection.policy, &rejection.status);
        set_if_absent(
            headers,
            header::RETRY_AFTER,
            HeaderValue::from(rejection.retry_after_secs().max(window)),
        );
        set_if_absent(headers, RATELIMIT_POLICY, policy_header.clone());
        set_if_absent(
            headers,
            RATELIMIT,
            headers::status_value(&rejection.policy, &rejection.status),
        );
        Ok(response)
    }

    fn store_failed(&self, error: AcquireError, protocol: Protocol) -> Result<Response<B>, E> {
        if protocol == Protocol::Grpc {
            let body = B::from(String::new());
            return Ok(grpc::status_response(
                body,
                grpc::code::INTERNAL,
                &error.to_string(),
            ));
        }
        let mut response = Response::new(B::from(format!("{error}\n")));
        *response.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
        Ok(response)
    }

    fn missing_key(&self, status: StatusCode, protocol: Protocol) -> Result<Response<B>, E> {
        Ok(no_key(status, NO_KEY.into(), protocol))
    }

    fn missing_key_because(
        &self,
        status: StatusCode,
        why: &'static str,
        protocol: Protocol,
    ) -> Result<Response<B>, E> {
        Ok(no_key(status, format!("{NO_KEY}: {why}").into(), protocol))
    }

    fn error(&self, error: E) -> E {
        error
    }

    #[inline]
    fn served(
        &self,
        result: Result<Response<B>, E>,
        fields: Option<Fields<'_>>,
    ) -> Result<Response<B>, E> {
        with_fields(result, fields)
    }

    fn wants_fields(&self) -> bool {
        true
    }
}

/// HTTP mode's refusal of a request without a key, `message` saying so: `status` and the message
/// in the body, or in gRPC's form.
fn no_key<B: From<String>>(
    status: StatusCode,
    message: Cow<str>,
    protocol: Protocol,
) -> Response<B> {
    if protocol == Protocol::Grpc {
        let code = grpc::code_for_status(status);
        return grpc::status_response(B::from(String::new()), code, &message);
    }
    let reason = status.canonical_reason().unwrap_or("Rejected");
    let mut response = Response::new(B::from(format!("{reason}: {message}\n")));
    *response.status_mut() = status;
    response
}

/// Sets an admitted response's fields, in place (the response is not moved out and back): what
/// HTTP and gRPC mode both do with a served response.
#[inline]
fn with_fields<B, E>(
    mut result: Result<Response<B>, E>,
    fields: Option<Fields<'_>>,
) -> Result<Response<B>, E> {
    if let (Ok(response), Some(f)) = (&mut result, fields) {
        f.fields.set(response.headers_mut(), &f.status);
    }
    result
}

/// What a gRPC refusal of a request without a key says.
const NO_KEY: &str = "no rate-limit key";

impl<B: Default, E> Mode<Response<B>, E> for Grpc {
    type Error = E;

    fn rejected(
        &self,
        rejection: &Rejection,
        policy_header: &HeaderValue,
        _: Protocol,
    ) -> Result<Response<B>, E> {
        Ok(grpc::refusal(B::default(), rejection, policy_header))
    }

    fn store_failed(&self, error: AcquireError, _: Protocol) -> Result<Response<B>, E> {
        let message = error.to_string();
        Ok(grpc::status_response(
            B::default(),
            grpc::code::INTERNAL,
            &message,
        ))
    }

    fn missing_key(&self, status: StatusCode, _: Protocol) -> Result<Response<B>, E> {
        let code = grpc::code_for_status(status);
        Ok(grpc::status_response(B::default(), code, NO_KEY))
    }

    fn error(&self, error: E) -> E {
        error
    }

    #[inline]
    fn served(
        &self,
        result: Result<Response<B>, E>,
        fields: Option<Fields<'_>>,
    ) -> Result<Response<B>, E> {
        with_fields(result, fields)
    }

    fn wants_fields(&self) -> bool {
        true
    }
}

impl<Resp, E: Into<BoxError>> Mode<Resp, E> for Errors {
    type Error = BoxError;

    fn rejected(
        &self,
        rejection: &Rejection,
        _: &HeaderValue,
        _: Protocol,
    ) -> Result<Resp, BoxError> {
        Err(Box::new(rejection.error))
    }

    fn store_failed(&self, error: AcquireError, _: Protocol) -> Result<Resp, BoxError> {
        Err(Box::new(error))
    }

    fn missing_key(&self, _status: StatusCode, _: Protocol) -> Result<Resp, BoxError> {
        Err(Box::new(MissingKeyError))
    }

    fn error(&self, error: E) -> BoxError {
        error.into()
    }

    fn served(
        &self,
        result: Result<Resp, E>,
        _fields: Option<Fields<'_>>,
    ) -> Result<Resp, BoxError> {
        result.map_err(Into::into)
    }

    fn wants_fields(&self) -> bool {
        false
    }
}
