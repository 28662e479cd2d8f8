//! What a rejected request gets: a `429` response (HTTP mode, built by a function you may replace)
//! or an error (error mode, [`RateLimitExceeded`] inside tower's `BoxError`).

use core::fmt;
use core::time::Duration;

use http::{HeaderValue, Response, StatusCode, header};
use ritmo_core::RateLimitExceeded;

use crate::headers::retry_after_secs;
use crate::store::{Policy, Status};

/// tower's boxed error: what the error mode's services fail with.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A request the limiter refused: the error, the policy and the key's status at that moment.
#[derive(Debug, Clone, Copy)]
pub struct Rejection {
    pub(crate) error: RateLimitExceeded,
    pub(crate) policy: Policy,
    pub(crate) status: Status,
}

impl Rejection {
    /// A rejection with `error`, under `policy`, with the key's `status` (to test a response
    /// function of your own).
    pub const fn new(error: RateLimitExceeded, policy: Policy, status: Status) -> Self {
        Rejection {
            error,
            policy,
            status,
        }
    }

    /// The limiter's error (its id, reason and `retry_after`).
    pub const fn error(&self) -> &RateLimitExceeded {
        &self.error
    }

    /// The policy the request was refused under.
    pub const fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The key's status when it was refused.
    pub const fn status(&self) -> &Status {
        &self.status
    }

    /// How long until the request would pass.
    pub const fn retry_after(&self) -> Duration {
        self.error.retry_after()
    }

    /// The `Retry-After` value: whole seconds, rounded up, at least 1.
    pub fn retry_after_secs(&self) -> u64 {
        retry_after_secs(self.error.retry_after())
    }
}

/// Builds the response for a rejected request (HTTP mode). The layer then adds `Retry-After`,
/// `RateLimit-Policy` and `RateLimit` unless the response already has them, so a custom body
/// never loses the fields.
pub trait OnReject<B>: Send + Sync + 'static {
    /// The response for `rejection`.
    fn respond(&self, rejection: &Rejection) -> Response<B>;
}

/// `429 Too Many Requests` with a one-line plain-text body: the default.
///
/// ```
/// use core::time::Duration;
/// use ritmo::tower::{DefaultResponse, OnReject};
/// # use ritmo::{Config, ManualClock, RateLimiter};
/// # let limiter = RateLimiter::new("x", Config::new(1, Duration::from_secs(1)).unwrap(), ManualClock::new());
/// # limiter.try_acquire().unwrap();
/// # let error = limiter.try_acquire().unwrap_err();
/// let policy = ritmo::tower::Policy::new("x", 1, Duration::from_secs(1));
/// let rejection = ritmo::tower::Rejection::new(error, policy, ritmo::tower::Status::new(0, error.retry_after()));
/// let response: http::Response<String> = DefaultResponse.respond(&rejection);
/// assert_eq!(response.status(), 429);
/// assert_eq!(response.body(), "Too Many Requests: retry after 1 s\n");
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct DefaultResponse;

impl<B: From<String>> OnReject<B> for DefaultResponse {
    fn respond(&self, rejection: &Rejection) -> Response<B> {
        let body = format!(
            "Too Many Requests: retry after {} s\n",
            rejection.retry_after_secs()
        );
        let mut response = Response::new(B::from(body));
        *response.status_mut() = StatusCode::TOO_MANY_REQUESTS;
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        response
    }
}

/// A rejection response from any function: see [`respond_with`].
#[derive(Debug, Clone, Copy)]
pub struct RespondWith<F>(F);

/// Rejected requests get `f(&rejection)`.
///
/// ```
/// use http::{Response, StatusCode};
/// use ritmo::tower::{respond_with, OnReject, Rejection};
/// let json = respond_with(|r: &Rejection| {
///     Response::builder()
///         .status(StatusCode::TOO_MANY_REQUESTS)
///         .header("content-type", "application/problem+json")
///         .body(format!(r#"{{"title":"slow down","retry_after":{}}}"#, r.retry_after_secs()))
///         .unwrap()
/// });
/// # let _: &dyn OnReject<String> = &json;
/// ```
pub fn respond_with<B, F>(f: F) -> RespondWith<F>
where
    F: Fn(&Rejection) -> Response<B> + Send + Sync + 'static,
{
    RespondWith(f)
}

impl<B, F> OnReject<B> for RespondWith<F>
where
    F: Fn(&Rejection) -> Response<B> + Send + Sync + 'static,
{
    fn respond(&self, rejection: &Rejection) -> Response<B> {
        (self.0)(rejection)
    }
}

/// The error a request without a key fails with (error mode, [`MissingKey::Reject`](crate::MissingKey)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MissingKeyError;

impl fmt::Display for MissingKeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the request has no rate-limit key")
    }
}

impl std::error::Error for MissingKeyError {}
