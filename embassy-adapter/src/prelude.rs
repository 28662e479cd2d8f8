//! The traits firmware on Embassy needs in scope, and the types it names most:
//! `use ritmo::embassy::prelude::*;`.
//!
//! [`AsyncExt`](crate::AsyncExt) is imported anonymously (`as _`): its methods
//! (`acquire_async()`, `call_async(..)`, ...) are in scope, and its name never clashes with
//! ritmo-std's tokio `AsyncExt` when both preludes are in use.
//!
//! ```
//! use core::time::Duration;
//! use ritmo::embassy::prelude::*;
//!
//! static RADIO: EmbassyRateLimiter =
//!     RateLimiter::new("radio", const_config!(36, Duration::from_secs(3600)), EmbassyClock);
//!
//! async fn send() -> Result<(), RateLimitExceeded> {
//!     RADIO.acquire_async().await
//! }
//! # let _ = send;
//! ```

pub use ritmo_core::prelude::*;

pub use crate::AsyncExt as _;
pub use crate::{AsyncRateLimitedWrite, EmbassyClock, EmbassyRateLimiter};
/// What [`AsyncRateLimitedWrite`] waits with.
pub use ritmo_core::ClockWait;
