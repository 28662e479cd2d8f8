#![doc = include_str!("../README.md")]
#![no_std]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub use ritmo_core::*;

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

/// The traits a program needs in scope, and the types it names most: `use ritmo::prelude::*;`.
///
/// Always core's ([`Clock`], [`ManualTime`], [`Wait`], [`Listener`], [`Config`],
/// [`RateLimiter`], ...); with `std`, [`BlockingExt`](ritmo_std::BlockingExt) (`acquire()`,
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
