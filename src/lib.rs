// In these docs the README's guide links go to the guides right here (of a link reference
// defined twice, the first definition wins); on GitHub and crates.io its docs.rs links stay. A
// guide that needs a feature is linked here only with it (docs.rs builds every feature).
#![doc = "[basics]: crate::guide::basics"]
#![doc = "[keyed]: crate::guide::keyed"]
#![doc = "[registry]: crate::guide::registry"]
#![doc = "[bands]: crate::guide::bands"]
#![doc = "[reconfigure]: crate::guide::reconfigure"]
#![doc = "[settings]: crate::guide::settings"]
#![doc = "[metrics]: crate::guide::metrics"]
#![doc = "[firmware]: crate::guide::firmware"]
#![doc = "[testing]: crate::guide::testing"]
#![doc = "[errors]: crate::guide::errors"]
#![doc = "[performance]: crate::guide::performance"]
#![doc = "[reliability]: crate::guide::reliability"]
#![doc = "[design]: crate::guide::design"]
#![cfg_attr(feature = "macros", doc = "[annotations]: crate::guide::annotations")]
#![cfg_attr(feature = "std", doc = "[server]: crate::guide::server")]
#![cfg_attr(feature = "tower", doc = "[http]: crate::guide::http")]
#![cfg_attr(feature = "client", doc = "[client]: crate::guide::client")]
#![cfg_attr(feature = "redis", doc = "[redis]: crate::guide::redis")]
#![doc = include_str!("../README.md")]
#![no_std]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub use ritmo_core::*;

pub mod guide;

/// The std adapter (feature `std`): a fast server clock, blocking waits with interruption, call
/// wrappers, and with `tokio` async waits (`ritmo::server::tokio`) and with `settings` the
/// TOML/environment loader (`ritmo::server::settings`).
///
/// It is named `server`, not `std`, so that `use ritmo::*;` never shadows the standard library.
/// (A module of re-exports rather than a renamed crate, so that the compiler's "import this
/// trait" hints name paths that exist: `ritmo::server::tokio::AsyncExt`; `scripts/check-hints`
/// checks them.)
///
/// ```
/// # #[cfg(feature = "std")]
/// let _ = ritmo::server::VERSION;
/// ```
#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
pub mod server {
    #[doc(inline)]
    pub use ritmo_std::*;
}

/// The Embassy adapter (feature `embassy`): an embassy-time clock and async waits.
///
/// ```
/// # #[cfg(feature = "embassy")]
/// let _ = ritmo::embassy::VERSION;
/// ```
#[cfg(feature = "embassy")]
#[cfg_attr(docsrs, doc(cfg(feature = "embassy")))]
pub mod embassy {
    #[doc(inline)]
    pub use ritmo_embassy::*;
}

#[cfg(feature = "macros")]
pub use ritmo_macros::{limited, rate_limited};

/// What the code the attributes generate calls: not public API.
#[doc(hidden)]
pub mod __private {
    pub use ritmo_core::__private::*;

    /// The clock a generated wrapper's type names by default: `StdClock`, as a server's.
    #[cfg(feature = "std")]
    pub type DefaultClock = ritmo_std::StdClock;

    /// The process-wide registry of functions limited without naming one.
    #[cfg(feature = "std")]
    pub fn default_registry<T>()
    -> &'static Registry<ritmo_std::StdClock, { ritmo_std::DEFAULT_REGISTRY_CAPACITY }> {
        ritmo_std::default_registry()
    }

    /// Without std there is no process-wide registry: the bound says so at compile time.
    #[cfg(not(feature = "std"))]
    pub fn default_registry<T: NeedsRegistry>() -> &'static Registry<NoClock, 1> {
        T::unreachable()
    }

    /// Only for the error message of a limited function without a registry on `no_std`.
    #[cfg(not(feature = "std"))]
    #[diagnostic::on_unimplemented(
        message = "a #[rate_limited] function needs `registry = path::TO::STATIC` without ritmo's `std` feature",
        label = "no process-wide default registry on no_std",
        note = "name a `static` `ritmo::Registry` on your clock: #[rate_limited(permits = .., period = \"..\", registry = LIMITERS)]"
    )]
    pub trait NeedsRegistry {
        /// Never called: no type implements this trait.
        fn unreachable() -> !;
    }

    /// The clock of a registry that cannot exist.
    #[cfg(not(feature = "std"))]
    #[derive(Debug, Clone)]
    pub struct NoClock;

    // Waits of a clock that never exists: only so that the missing registry is the one error.
    #[cfg(not(feature = "std"))]
    impl BlockingClock for NoClock {
        fn block_until(&self, _deadline: u64) -> Result<(), crate::Interrupted> {
            Ok(())
        }
    }

    #[cfg(not(feature = "std"))]
    impl AsyncClock for NoClock {
        fn sleep_until(&self, _deadline: u64) -> impl core::future::Future<Output = ()> {
            core::future::ready(())
        }
    }

    #[cfg(not(feature = "std"))]
    impl Clock for NoClock {
        fn now(&self) -> u64 {
            0
        }
        fn tick_rate(&self) -> crate::TickRate {
            crate::TickRate::NANOS
        }
    }
}

/// One quota shared by many processes, in Redis or Valkey (feature `redis`): the same GCRA, run
/// atomically by a Lua script (async on tokio, and blocking).
///
/// A module of re-exports, as [`server`] is, so that the compiler's import hints name
/// `ritmo::redis::...` paths, which a program depending on `ritmo` alone can write.
///
/// ```
/// # #[cfg(feature = "redis")]
/// let _ = ritmo::redis::DEFAULT_TIMEOUT;
/// ```
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub mod redis {
    #[doc(inline)]
    pub use ritmo_redis::*;
}

/// The HTTP layer (feature `tower`): a `tower::Layer` for axum, hyper and tonic, with `429`,
/// `Retry-After` and the IETF `RateLimit` fields. On axum, turn on feature `axum` too, so that
/// the per-IP keys read axum's connection info. The [HTTP guide](crate::guide::http) has the rest.
///
/// ```
/// # #[cfg(feature = "axum")]
/// # {
/// use std::{net::SocketAddr, time::Duration};
/// use axum::{routing::get, Router};
/// use ritmo::Config;
/// use ritmo::server::{IpKey, KeyedRateLimiter};
/// use ritmo::tower::{key::PeerIp, RateLimitLayer};
///
/// // 100 requests a minute per client IP, for up to 100 000 clients being limited at once.
/// let config = Config::new(100, Duration::from_secs(60))?;
/// let per_ip: &'static KeyedRateLimiter<IpKey> =
///     Box::leak(Box::new(KeyedRateLimiter::new("per-ip", config, 100_000)));
/// let app: Router = Router::new()
///     .route("/", get(|| async { "hello" }))
///     .layer(RateLimitLayer::new(per_ip, PeerIp::new()));
/// // `PeerIp` reads the address axum records with connect info (else: `400` naming this fix):
/// let service = app.into_make_service_with_connect_info::<SocketAddr>();
/// // axum::serve(listener, service).await
/// # let _ = service;
/// # }
/// # Ok::<(), ritmo::ConfigError>(())
/// ```
///
/// A module of re-exports, as [`server`] is, so that the compiler's import hints name
/// `ritmo::tower::...` paths, which a program depending on `ritmo` alone can write.
#[cfg(feature = "tower")]
#[cfg_attr(docsrs, doc(cfg(feature = "tower")))]
pub mod tower {
    #[doc(inline)]
    pub use ritmo_tower::*;
}

/// The client side, beside the server side above: a `tower::Layer` for HTTP clients (hyper,
/// tonic) that keeps a dependency's quota per host and holds back when its server says wait
/// (`Retry-After`, the IETF `RateLimit` fields and their older drafts, `X-RateLimit-*` with its
/// per-resource and `Reset-After` forms: [`client::headers`]); with feature `reqwest`, the same
/// as a `reqwest_middleware::Middleware` in `ritmo::client::reqwest`.
///
/// A module of re-exports, as [`server`] is, so that it has pages of its own in these docs and
/// the compiler's import hints name `ritmo::client::...` paths. With feature `reqwest`,
/// `ritmo::client::reqwest_middleware` is the reqwest-middleware it implements (0.5, for
/// reqwest 0.13): build your client with it, and the versions match.
///
/// ```
/// # #[cfg(feature = "client")]
/// assert_eq!(ritmo::client::DEFAULT_MAX_HOLD, core::time::Duration::from_secs(3600));
/// ```
#[cfg(feature = "client")]
#[cfg_attr(docsrs, doc(cfg(feature = "client")))]
pub mod client {
    #[doc(inline)]
    pub use ritmo_client::*;
}

/// The traits a program needs in scope, and the types it names most: `use ritmo::prelude::*;`.
///
/// Always core's ([`Clock`], [`ManualTime`], [`Wait`], [`Listener`], [`Config`],
/// [`RateLimiter`], ...); with `std`, `BlockingExt` (`acquire()`,
/// `call(..)`) and, with `tokio`, tokio's `AsyncExt` (`acquire_async()`, `call_async(..)`);
/// with `embassy`, Embassy's `AsyncExt` (the same `_async` names). The async traits are imported
/// anonymously (`as _`), so that tokio's and Embassy's never clash: their methods are in scope,
/// their names are not.
///
/// ```
/// use core::time::Duration;
/// use ritmo::prelude::*;
///
/// let clock = ManualClock::new();
/// let config = Config::new(1, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
/// let limiter = RateLimiter::new("api", config, &clock);
/// limiter.acquire_advancing()?;
/// limiter.acquire_advancing()?; // advances the fake clock to the next slot
/// assert_eq!(clock.now(), 1_000_000_000);
/// # Ok::<(), Box<dyn core::error::Error>>(())
/// ```
///
/// Without the prelude (or the trait itself) in scope, a server limiter has no `acquire()`; the
/// compiler then suggests `use ritmo::prelude::BlockingExt;`.
///
/// ```compile_fail
/// # #[cfg(not(feature = "std"))] compile_error!("needs std");
/// use std::time::Duration;
/// let limiter = ritmo::server::limiter("api", ritmo::Config::new(1, Duration::from_secs(1)).unwrap());
/// limiter.acquire().unwrap(); // error[E0599]: no method named `acquire`
/// ```
pub mod prelude {
    pub use ritmo_core::prelude::*;
    #[cfg(feature = "embassy")]
    pub use ritmo_embassy::prelude::*;
    #[cfg(feature = "std")]
    pub use ritmo_std::prelude::*;
}
