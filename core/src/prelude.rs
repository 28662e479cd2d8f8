//! The traits a program needs in scope, and the types it names most:
//! `use ritmo::prelude::*;`.
//!
//! ```
//! use core::time::Duration;
//! use ritmo::prelude::*;
//!
//! let clock = ManualClock::new();
//! let limiter = RateLimiter::new("api", Config::new(1, Duration::from_secs(1))?, &clock);
//! limiter.try_acquire()?;
//! assert_eq!(clock.now(), 0); // `Clock::now`, in scope through the prelude
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub use crate::keyed::Keyed;
pub use crate::{
    AcquireError, Clock, Config, FixedRateClock, Listener, ManualClock, ManualTime,
    RateLimitExceeded, RateLimiter, Wait, const_config,
};
