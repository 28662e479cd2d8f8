//! Errors of building a limiter, and of a store that did not answer.

use core::fmt;
use core::time::Duration;

use ritmo_core::ErrorCode;

/// A limiter could not be built.
///
/// ```
/// use std::time::Duration;
/// use ritmo::{Config, ErrorCode};
/// use ritmo::redis::RedisRateLimiter;
///
/// // Redis keeps time in microseconds: two million permits per second is finer than that.
/// let config = Config::new(2_000_000, Duration::from_secs(1))?;
/// let err = RedisRateLimiter::builder("api", config).connect_blocking("redis://127.0.0.1:1/").unwrap_err();
/// assert_eq!(err.code(), Some(ErrorCode::TooFast));
/// assert!(err.to_string().starts_with("RITMO-REG-001"));
/// # Ok::<(), ritmo::ConfigError>(())
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The config gives less than one microsecond per permit, the finest time Redis keeps
    /// (`RITMO-REG-001`).
    TooFast {
        /// The config's permits per period.
        permits: u32,
        /// The config's period.
        period: Duration,
    },
    /// The connection settings are not valid (a malformed URL, an unknown scheme).
    Connection(redis::RedisError),
    /// The async limiter was built outside a tokio runtime.
    NoRuntime,
    /// The timeout is zero: no store could ever answer in time.
    ZeroTimeout,
}

impl Error {
    /// The stable ritmo error code, where the mistake has one.
    ///
    /// ```
    /// # use ritmo::redis::Error;
    /// assert_eq!(Error::NoRuntime.code(), None);
    /// ```
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            Error::TooFast { .. } => Some(ErrorCode::TooFast),
            _ => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::TooFast { permits, period } => write!(
                f,
                "{}: {permits} permits per {period:?} is less than 1 us per permit, finer than \
                 the microseconds a shared store keeps",
                ErrorCode::TooFast
            ),
            Error::Connection(e) => write!(f, "invalid Redis connection settings: {e}"),
            Error::NoRuntime => f.write_str(
                "the async Redis limiter must be built inside a tokio runtime (use the blocking \
                 one elsewhere)",
            ),
            Error::ZeroTimeout => f.write_str("the store timeout must be longer than zero"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Connection(e) => Some(e),
            _ => None,
        }
    }
}

/// The store did not answer a peek ([`available_permits`](crate::RedisRateLimiter::available_permits),
/// [`retry_after`](crate::RedisRateLimiter::retry_after)) within the timeout, and the failure
/// policy has no in-process limiter to answer instead.
///
/// ```
/// use std::time::Duration;
/// use ritmo::Config;
/// use ritmo::redis::RedisRateLimiter;
///
/// // Nothing listens on port 1: the peek fails with the store's error, at once.
/// let limiter = RedisRateLimiter::builder("api", Config::new(5, Duration::from_secs(1))?)
///     .timeout(Duration::from_millis(50))
///     .connect_blocking("redis://127.0.0.1:1/")?;
/// let err = limiter.available_permits().unwrap_err();
/// assert_eq!(err.id(), "api");
/// assert!(!err.is_timeout());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct StoreError {
    id: &'static str,
    cause: Cause,
}

#[derive(Debug, Clone)]
pub(crate) enum Cause {
    Timeout(Duration),
    Redis(redis::RedisError),
}

impl StoreError {
    pub(crate) fn new(id: &'static str, cause: Cause) -> Self {
        StoreError { id, cause }
    }

    /// The id of the limiter whose store failed.
    pub fn id(&self) -> &'static str {
        self.id
    }

    /// Whether the store did not answer within the timeout (as opposed to an error it or the
    /// connection reported).
    pub fn is_timeout(&self) -> bool {
        matches!(self.cause, Cause::Timeout(_))
            || self.redis_error().is_some_and(|e| e.is_timeout())
    }

    /// The client's error, when there was one (not a timeout of ritmo's own).
    pub fn redis_error(&self) -> Option<&redis::RedisError> {
        match &self.cause {
            Cause::Redis(e) => Some(e),
            Cause::Timeout(_) => None,
        }
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.cause {
            Cause::Timeout(t) => write!(
                f,
                "rate limiter '{}': the store did not answer within {t:?}",
                self.id
            ),
            Cause::Redis(e) => write!(f, "rate limiter '{}': store error: {e}", self.id),
        }
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.redis_error().map(|e| e as _)
    }
}

/// A peek for `k` permits that could not be answered: `k` is not a valid request (0, or more
/// than the limiter's permits), or the store did not answer.
///
/// ```
/// use ritmo::redis::AcquireOrStoreError;
/// # fn check(e: AcquireOrStoreError) {
/// match e {
///     AcquireOrStoreError::InvalidPermits(e) => println!("{e}"),
///     AcquireOrStoreError::Store(e) => println!("{e}"),
///     _ => {}
/// }
/// # }
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum AcquireOrStoreError {
    /// The request can never be granted.
    InvalidPermits(ritmo_core::InvalidPermits),
    /// The store did not answer in time.
    Store(StoreError),
}

impl From<ritmo_core::InvalidPermits> for AcquireOrStoreError {
    fn from(e: ritmo_core::InvalidPermits) -> Self {
        AcquireOrStoreError::InvalidPermits(e)
    }
}

impl From<StoreError> for AcquireOrStoreError {
    fn from(e: StoreError) -> Self {
        AcquireOrStoreError::Store(e)
    }
}

impl fmt::Display for AcquireOrStoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AcquireOrStoreError::InvalidPermits(e) => e.fmt(f),
            AcquireOrStoreError::Store(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for AcquireOrStoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            AcquireOrStoreError::InvalidPermits(e) => Some(e),
            AcquireOrStoreError::Store(e) => Some(e),
        }
    }
}
