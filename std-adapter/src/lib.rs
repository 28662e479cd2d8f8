//! The std adapter of ritmo: a fast server clock, blocking waits with interruption, call
//! wrappers, and (feature `tokio`) async waits.
//!
//! - [`StdClock`], the default: a raw CPU counter read (~10 ns) whose rate is calibrated once;
//!   [`InstantClock`] on `std::time::Instant` (~25 ns, constant tick rate, `static` limiters).
//!   [`CoarseClock`]: a cached reading an upkeep thread refreshes, one atomic load a call, for
//!   machines whose counter is slow to read (it lags by up to a resolution, never leads).
//!   The [`clock` module docs](crate::clock) say how they were chosen.
//! - [`limiter`] / [`StdRateLimiter`]: a limiter on a [`StdClock`] in one line.
//! - [`BlockingExt`]: `acquire()` / `acquire_n(k)` park the thread until their slot;
//!   `call(|| work())`, `call_n`, `try_call` run work only once a permit is had.
//! - [`Interrupt`] / [`ParkWait`]: interrupt a waiting thread from another one; its permit goes
//!   back and the call fails with [`Reason::Interrupted`](crate::ritmo::Reason::Interrupted).
//! - [`KeyedRateLimiter`]: one quota per client (per IP with [`IpKey`], per user, per API key) in
//!   a sharded map capped at `max_keys`, reclaiming idle keys exactly, with no background thread.
//! - [`Limit`]: every kind through one trait, with reservations that own a limiter shared by
//!   `Arc` ([`OwnedReservation`], [`OwnedBandsReservation`], [`OwnedKeyedReservation`]), to hold
//!   across `.await`.
//! - [`tokio::AsyncExt`] and [`tokio::TokioClock`] (feature `tokio`): `acquire_async().await`,
//!   `call_async(fut)`.
//! - [`prelude`]: `use ritmo::server::prelude::*;` brings the traits these methods come from.
//!
//! ```
//! use std::time::Duration;
//! use ritmo::Config;
//! use ritmo::server::prelude::*;
//!
//! let config = Config::new(10, Duration::from_secs(1))?.with_max_wait(Duration::from_millis(250));
//! let search = ritmo::server::limiter("search", config);
//! for _ in 0..10 {
//!     search.acquire()?; // the burst passes at once
//! }
//! let hits = search.call(|| 3)?; // parks ~100 ms for the next permit, then runs
//! assert_eq!((hits, search.available_permits()), (3, 0));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]

// Intra-doc links to the other ritmo crates' items, by the paths the `ritmo` facade gives
// them (`crate::ritmo::Config`, `crate::ritmo::server::StdClock`): written by
// scripts/facade-paths, which keeps the docs free of sub-crate paths. Docs builds only.
#[cfg(doc)]
#[allow(unused_imports)]
mod ritmo {
    pub use ritmo_core::*;
}

mod annotated;
mod blocking;
pub mod clock;
mod coarse;
pub mod keyed;
#[cfg(feature = "metrics")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
pub mod metrics;
mod owned;
pub mod prelude;
#[cfg(feature = "settings")]
#[cfg_attr(docsrs, doc(cfg(feature = "settings")))]
pub mod settings;
#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
pub mod tokio;
#[cfg(feature = "tracing")]
#[cfg_attr(docsrs, doc(cfg(feature = "tracing")))]
pub mod tracing;
mod wait;

/// The README's examples, run as doctests (they import `ritmo::...`, as a facade user does).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

pub use annotated::{DEFAULT_REGISTRY_CAPACITY, default_registry};
pub use blocking::BlockingExt;
pub use clock::{InstantClock, StdClock};
pub use coarse::{CoarseClock, UpkeepError};
#[cfg(feature = "tokio")]
pub use keyed::KeyedAsyncExt;
pub use keyed::{IpKey, KeyedBlockingExt, KeyedRateLimiter, KeyedReservation, ShardedMap};
pub use owned::{Limit, OwnedBandsReservation, OwnedKeyedReservation, OwnedReservation};
#[cfg(feature = "tokio")]
pub use tokio::{AsyncExt, TokioClock};
pub use wait::{Interrupt, ParkWait};

use ritmo_core::{Config, RateLimiter};

/// The crate's version.
///
/// ```
/// assert!(!ritmo::server::VERSION.is_empty());
/// ```
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// A limiter on the default server clock.
///
/// ```
/// use std::time::Duration;
/// use ritmo::server::StdRateLimiter;
/// struct Client {
///     limiter: StdRateLimiter,
/// }
/// let client = Client {
///     limiter: ritmo::server::limiter("api", ritmo::Config::new(5, Duration::from_secs(1))?),
/// };
/// assert_eq!(client.limiter.available_permits(), 5);
/// # Ok::<(), ritmo::ConfigError>(())
/// ```
pub type StdRateLimiter = RateLimiter<StdClock>;

/// A limiter named `id` on a new [`StdClock`]: the usual way to make one on a server.
///
/// ```
/// use std::time::Duration;
/// let api = ritmo::server::limiter("api", ritmo::Config::new(2, Duration::from_secs(1))?);
/// assert!(api.try_acquire().is_ok());
/// assert!(api.try_acquire().is_ok());
/// assert!(api.try_acquire().is_err());
/// # Ok::<(), ritmo::ConfigError>(())
/// ```
pub fn limiter(id: &'static str, config: Config) -> StdRateLimiter {
    RateLimiter::with_clock(id, config, StdClock::new())
}
