//! [`TracingListener`] (feature `tracing`): a limiter's events as [`tracing`] events, for
//! whatever subscriber the application installs.
//!
//! | event | level | fields |
//! | --- | --- | --- |
//! | a call rejected | `INFO` | `id`, `reason`, `retry_after_ms` |
//! | a reservation waits | `TRACE` | `id`, `permits`, `wait_ms` |
//! | a reservation given up (refund) | `DEBUG` | `id`, `permits`, `reason`, `returned` |
//!
//! All under the target `ritmo`, so `RUST_LOG=ritmo=debug` (with `tracing-subscriber`'s env
//! filter) shows them. Admitted calls emit nothing.
//!
//! ```
//! use std::time::Duration;
//! use ritmo::{Config, ManualClock, RateLimiter};
//! use ritmo::server::tracing::TracingListener;
//!
//! static LOG: TracingListener = TracingListener::new();
//! let api = RateLimiter::new("api", Config::new(1, Duration::from_secs(1))?, ManualClock::new())
//!     .with_listener(&LOG);
//! api.try_acquire().unwrap();
//! assert!(api.try_acquire().is_err()); // emits "rate limited" with id = "api"
//! # Ok::<(), ritmo::ConfigError>(())
//! ```

use ritmo_core::{Event, Listener};

/// A [`Listener`] that emits each event of the limiters it is installed on as a `tracing` event
/// under the target `ritmo`, with the limiter's id. One `static` serves any number of limiters.
#[derive(Debug, Clone, Copy, Default)]
pub struct TracingListener;

impl TracingListener {
    /// The listener (a `const`, for a `static`).
    pub const fn new() -> Self {
        TracingListener
    }
}

/// Milliseconds, for a field a human reads.
fn millis(d: core::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl Listener for TracingListener {
    fn on_event(&self, event: &Event) {
        match *event {
            Event::Rejected(e) => tracing::info!(
                target: "ritmo",
                id = e.id(),
                reason = e.reason().as_str(),
                retry_after_ms = millis(e.retry_after()),
                "rate limited"
            ),
            Event::Waiting { id, permits, wait } => tracing::trace!(
                target: "ritmo",
                id,
                permits,
                wait_ms = millis(wait),
                "waiting for a permit"
            ),
            Event::Released {
                id,
                permits,
                reason,
                returned,
            } => tracing::debug!(
                target: "ritmo",
                id,
                permits,
                reason = reason.as_str(),
                returned,
                "reservation given up"
            ),
            _ => {}
        }
    }

    fn wants_waiting(&self) -> bool {
        true
    }
}
