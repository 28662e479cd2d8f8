//! How a rejection surfaces ([`Mode`]): [`Http`] answers `429` with the rate-limit fields,
//! [`Errors`] fails the call; and the fields of an admitted response ([`Fields`]).

use http::{HeaderValue, Response, StatusCode, header};
use ritmo_core::AcquireError;

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
    /// The outcome of a rejected request.
    fn rejected(
        &self,
        rejection: &Rejection,
        policy_header: &HeaderValue,
    ) -> Result<Resp, Self::Error>;
    /// The outcome of a request the store could not decide (more permits than the quota).
    fn store_failed(&self, error: AcquireError) -> Result<Resp, Self::Error>;
    /// The outcome of a request without a key, refused with `status`.
    fn missing_key(&self, status: StatusCode) -> Result<Resp, Self::Error>;
    /// The outcome of a request without a key when that can only be a setup error, `why` saying
    /// how to fix it ([`KeyExtractor::why_missing`](crate::key::KeyExtractor::why_missing)); by
    /// default the same as [`missing_key`](Self::missing_key). [`Http`] writes `why` in the body.
    fn missing_key_because(
        &self,
        status: StatusCode,
        why: &'static str,
    ) -> Result<Resp, Self::Error> {
        let _ = why;
        self.missing_key(status)
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

/// HTTP mode: rejections are responses built by `R` (default: [`DefaultResponse`](crate::DefaultResponse), a `429`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Http<R>(pub(super) R);

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
    ) -> Result<Response<B>, E> {
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

    fn store_failed(&self, error: AcquireError) -> Result<Response<B>, E> {
        let mut response = Response::new(B::from(format!("{error}\n")));
        *response.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
        Ok(response)
    }

    fn missing_key(&self, status: StatusCode) -> Result<Response<B>, E> {
        let reason = status.canonical_reason().unwrap_or("Rejected");
        let mut response = Response::new(B::from(format!("{reason}: no rate-limit key\n")));
        *response.status_mut() = status;
        Ok(response)
    }

    fn missing_key_because(&self, status: StatusCode, why: &'static str) -> Result<Response<B>, E> {
        let reason = status.canonical_reason().unwrap_or("Rejected");
        let body = format!("{reason}: no rate-limit key: {why}\n");
        let mut response = Response::new(B::from(body));
        *response.status_mut() = status;
        Ok(response)
    }

    fn error(&self, error: E) -> E {
        error
    }

    #[inline]
    fn served(
        &self,
        mut result: Result<Response<B>, E>,
        fields: Option<Fields<'_>>,
    ) -> Result<Response<B>, E> {
        // Set in place: the response is not moved out and back.
        if let (Ok(response), Some(f)) = (&mut result, fields) {
            f.fields.set(response.headers_mut(), &f.status);
        }
        result
    }

    fn wants_fields(&self) -> bool {
        true
    }
}

impl<Resp, E: Into<BoxError>> Mode<Resp, E> for Errors {
    type Error = BoxError;

    fn rejected(&self, rejection: &Rejection, _: &HeaderValue) -> Result<Resp, BoxError> {
        Err(Box::new(rejection.error))
    }

    fn store_failed(&self, error: AcquireError) -> Result<Resp, BoxError> {
        Err(Box::new(error))
    }

    fn missing_key(&self, _status: StatusCode) -> Result<Resp, BoxError> {
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
