//! The traits a program on std needs in scope, and the types it names most:
//! `use ritmo::server::prelude::*;`.
//!
//! [`BlockingExt`] gives a limiter `acquire()`, `acquire_n(k)`, `call(..)`, `call_n(..)` and
//! `try_call(..)`, [`KeyedBlockingExt`] a keyed limiter the same for a key; with the `tokio`
//! feature, [`tokio::AsyncExt`](crate::tokio::AsyncExt) and `KeyedAsyncExt` give the same names
//! with an `_async` suffix. The async trait is imported anonymously (`as _`):
//! its methods are in scope, and its name never clashes with another crate's `AsyncExt`.
//! [`Limit`](crate::Limit) is imported so too: `reserve_owned` on an `Arc` of any kind.
//!
//! ```
//! use std::time::Duration;
//! use ritmo::server::prelude::*;
//!
//! let limiter = ritmo::server::limiter("api", Config::new(2, Duration::from_secs(1))?);
//! limiter.acquire()?;
//! assert_eq!(limiter.call(|| "sent")?, "sent");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub use ritmo_core::prelude::*;

pub use crate::blocking::BlockingExt;
#[cfg(feature = "tokio")]
pub use crate::keyed::KeyedAsyncExt as _;
pub use crate::keyed::KeyedBlockingExt;
#[cfg(feature = "tokio")]
pub use crate::tokio::AsyncExt as _;
pub use crate::{Interrupt, Limit as _, StdRateLimiter};
