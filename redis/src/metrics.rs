//! Redis faults as metrics, through the [`metrics`](https://docs.rs/metrics) facade (feature
//! `metrics`), with the names and labels of `ritmo_std::metrics`: the application installs the
//! exporter, ritmo only records.
//!
//! | metric | kind | labels | recorded |
//! | --- | --- | --- | --- |
//! | `ritmo_rejected_total` | counter | `limiter`, `reason="unavailable"` | per call refused because the store did not answer in time (policy `Reject`, or the local fallback's table full) |
//! | `ritmo_redis_fallback_total` | counter | `limiter`, `policy` (`local`, `admit`) | per call the failure policy answered instead of the store |
//! | `ritmo_redis_fallback_active` | gauge | `limiter` | 1 from the first call the store failed, 0 again from the first it answered |
//!
//! Labels are the limiter's id and fixed words, never a client key. A call the store answers
//! costs one relaxed atomic load more; nothing is recorded for it.
//!
//! ```
//! # #[cfg(feature = "blocking")] {
//! use std::time::Duration;
//! use ritmo_core::Config;
//! use ritmo_redis::FailurePolicy;
//!
//! // Nothing listens on port 1: every call falls back to the policy.
//! let limiter = ritmo_redis::builder("api", Config::new(10, Duration::from_secs(1))?)
//!     .on_unavailable(FailurePolicy::Admit)
//!     .connect_blocking("redis://127.0.0.1:1/")?;
//! let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
//! let text = metrics::with_local_recorder(&recorder, || {
//!     ritmo_redis::metrics::describe();
//!     limiter.try_acquire().unwrap();
//!     recorder.handle().render()
//! });
//! assert!(text.contains(r#"ritmo_redis_fallback_total{limiter="api",policy="admit"} 1"#));
//! assert!(text.contains(r#"ritmo_redis_fallback_active{limiter="api"} 1"#));
//! # }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

/// Calls refused, per limiter and reason (counter): ritmo-std's series, here with
/// `reason="unavailable"`.
pub const REJECTED: &str = ritmo_std::metrics::REJECTED;
/// Calls the failure policy answered instead of the store, per limiter and policy (counter).
pub const FALLBACK: &str = "ritmo_redis_fallback_total";
/// 1 while a limiter's failure policy answers in place of the store, else 0 (gauge).
pub const FALLBACK_ACTIVE: &str = "ritmo_redis_fallback_active";

/// Describes the series above to the installed recorder (units and help text); optional.
pub fn describe() {
    use metrics::{Unit, describe_counter, describe_gauge};
    describe_counter!(REJECTED, Unit::Count, "Calls refused");
    describe_counter!(
        FALLBACK,
        Unit::Count,
        "Calls the failure policy answered instead of Redis"
    );
    describe_gauge!(
        FALLBACK_ACTIVE,
        Unit::Count,
        "1 while the failure policy answers in place of Redis"
    );
}
