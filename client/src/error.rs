//! Errors: a request the client did not send ([`Limited`]), or the wrapped service's own error.

use core::fmt;
use core::time::Duration;

use ritmo_core::{HumanDuration, RateLimitExceeded};

/// What stopped a request from being sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Cause {
    /// The client's own quota had no permit within `max_wait`.
    LocalQuota,
    /// The server asked this key to wait, and its wait ends beyond `max_wait`.
    ServerHold,
}

/// A request that was not sent: the limiter's refusal (with `retry_after`) and its cause.
///
/// For [`Cause::ServerHold`], `retry_after` is what is left of the server's wait (capped at the
/// client's `max_hold`).
///
/// ```
/// use std::time::Duration;
/// use ritmo::{RateLimitExceeded, Reason};
/// use ritmo::client::{Cause, Limited};
/// let e = Limited::new(
///     RateLimitExceeded::from_parts("api", Reason::NoPermitInTime, Duration::from_secs(3)),
///     Cause::ServerHold,
/// );
/// assert_eq!(e.retry_after(), Duration::from_secs(3));
/// assert_eq!(e.to_string(), "rate limiter 'api': no permit in time; retry after 3s (held by the server)");
/// // Printed as a person reads it, rounded up to the millisecond (never short of the wait).
/// let e = Limited::new(
///     RateLimitExceeded::from_parts("api", Reason::NoPermitInTime, Duration::from_nanos(29_999_943_846)),
///     Cause::LocalQuota,
/// );
/// assert_eq!(e.to_string(), "rate limiter 'api': no permit in time; retry after 30s (the client's own quota)");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limited {
    error: RateLimitExceeded,
    cause: Cause,
}

impl Limited {
    /// A refusal with its cause.
    pub const fn new(error: RateLimitExceeded, cause: Cause) -> Self {
        Limited { error, cause }
    }

    /// The limiter's refusal: id, reason and `retry_after`.
    pub const fn rate_limit_exceeded(&self) -> &RateLimitExceeded {
        &self.error
    }

    /// How long until a request for this key could be sent, if nobody else takes the slot.
    pub const fn retry_after(&self) -> Duration {
        self.error.retry_after()
    }

    /// Why the request was not sent.
    pub const fn cause(&self) -> Cause {
        self.cause
    }
}

impl From<Limited> for RateLimitExceeded {
    fn from(l: Limited) -> Self {
        l.error
    }
}

/// The limiter's refusal as a person reads it: the `retry_after` rounded up to the millisecond
/// and written in the largest units that fit (`250ms`, `1.5s`, `30s`, `2m5s`, `1h`), never
/// short of the real wait.
impl fmt::Display for Limited {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "rate limiter '{}': {}; retry after {}",
            self.error.id(),
            self.error.reason(),
            HumanDuration(self.error.retry_after())
        )?;
        match self.cause {
            Cause::LocalQuota => f.write_str(" (the client's own quota)"),
            Cause::ServerHold => f.write_str(" (held by the server)"),
        }
    }
}

impl std::error::Error for Limited {
    /// The limiter's [`RateLimitExceeded`]; with feature `tonic`, a `tonic::Status`
    /// `RESOURCE_EXHAUSTED` instead, so that tonic reports a call not sent as that (see
    /// [`grpc`](crate::grpc)).
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        #[cfg(feature = "tonic")]
        return Some(crate::grpc::status_of(self.cause));
        #[cfg(not(feature = "tonic"))]
        Some(&self.error)
    }
}

/// The error of a rate-limited client service: not sent ([`Error::Limited`]), or the wrapped
/// service failed ([`Error::Service`]).
///
/// Into tower's `BoxError` it stays reachable: `err.downcast_ref::<Error<E>>()`, and from there
/// [`Error::limited`].
#[derive(Debug)]
#[non_exhaustive]
pub enum Error<E> {
    /// Not sent: no permit within `max_wait`, or the server's hold lasts beyond it.
    Limited(Limited),
    /// The wrapped service's error.
    Service(E),
}

impl<E> Error<E> {
    /// The refusal, if the request was not sent.
    pub fn limited(&self) -> Option<&Limited> {
        match self {
            Error::Limited(l) => Some(l),
            Error::Service(_) => None,
        }
    }
}

impl<E> From<Limited> for Error<E> {
    fn from(l: Limited) -> Self {
        Error::Limited(l)
    }
}

impl<E: fmt::Display> fmt::Display for Error<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Limited(l) => write!(f, "request not sent: {l}"),
            Error::Service(e) => e.fmt(f),
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for Error<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Limited(l) => Some(l),
            Error::Service(e) => Some(e),
        }
    }
}
