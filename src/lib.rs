#![doc = include_str!("../README.md")]
#![no_std]

pub use ritmo_core::*;

/// The std adapter: a fast server clock, blocking waits with interruption, call wrappers.
///
/// ```
/// # #[cfg(feature = "std")]
/// let _ = ritmo::std::VERSION;
/// ```
#[cfg(feature = "std")]
pub use ritmo_std as std;

/// The Embassy adapter: an embassy-time clock and async waits.
///
/// ```
/// # #[cfg(feature = "embassy")]
/// let _ = ritmo::embassy::VERSION;
/// ```
#[cfg(feature = "embassy")]
pub use ritmo_embassy as embassy;

/// One quota shared by many processes, in Redis or Valkey: the same GCRA, run atomically by a Lua
/// script (async on tokio, and blocking).
///
/// ```
/// # #[cfg(feature = "redis")]
/// let _ = ritmo::redis::DEFAULT_TIMEOUT;
/// ```
#[cfg(feature = "redis")]
pub use ritmo_redis as redis;
/// The HTTP layer: a `tower::Layer` for axum, hyper and tonic, with `429`, `Retry-After` and the
/// IETF `RateLimit` fields.
///
/// ```
/// # #[cfg(feature = "tower")]
/// assert_eq!(ritmo::tower::headers::retry_after_secs(core::time::Duration::from_millis(1)), 1);
/// ```
#[cfg(feature = "tower")]
pub use ritmo_tower as tower;
