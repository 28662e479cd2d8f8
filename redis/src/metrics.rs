//! Redis faults as metrics, through the [`metrics`](https://docs.rs/metrics) facade (feature
//! `metrics`), with the names and labels of `ritmo::server::metrics`: the application installs the
//! exporter, ritmo only records.
//!
//! | metric | kind | labels | recorded |
//! | --- | --- | --- | --- |
//! | `ritmo_admitted_total` | counter | `limiter` | by `record`: calls the store admitted at once |
//! | `ritmo_waited_total` | counter | `limiter` | by `record`: calls the store gave a later slot |
//! | `ritmo_rejected_total` | counter | `limiter`, `reason="no_permit_in_time"` | by `record`: calls the store refused |
//! | `ritmo_rejected_total` | counter | `limiter`, `reason="unavailable"` | per call refused because the store did not answer in time (policy `Reject`, or the local fallback's table full) |
//! | `ritmo_redis_fallback_total` | counter | `limiter`, `policy` (`local`, `admit`) | per call the failure policy answered instead of the store |
//! | `ritmo_redis_fallback_active` | gauge | `limiter` | 1 from the first call the store failed, 0 again from the first it answered |
//! | `ritmo_redis_reconnects_total` | counter | `limiter` | by `record`: connections made after one failed (see [`RECONNECTS`]) |
//!
//! Faults (the last four) are recorded as they happen, and again, from the limiter's own counts,
//! by [`Recordable::record`](crate::ritmo::server::metrics::Recordable::record), which every Redis limiter
//! implements (call it, or `ritmo::server::metrics::record_all`, before each scrape); the counts of
//! calls the store answered and of reconnects are read by `record` only. Labels are the
//! limiter's id and fixed words, never a client key. A call the store answers costs one relaxed
//! atomic load and one atomic add more, beside its round trip.
//!
//! With feature `tracing`, an event marks each switch: `WARN` when the failure policy takes over
//! (with the error), `INFO` when the store answers again.
//!
//! ```
//! # #[cfg(feature = "blocking")] {
//! use std::time::Duration;
//! use ritmo::Config;
//! use ritmo::redis::FailurePolicy;
//!
//! // Nothing listens on port 1: every call falls back to the policy.
//! let limiter = ritmo::redis::builder("api", Config::new(10, Duration::from_secs(1))?)
//!     .on_unavailable(FailurePolicy::Admit)
//!     .connect_blocking("redis://127.0.0.1:1/")?;
//! let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
//! let text = metrics::with_local_recorder(&recorder, || {
//!     ritmo::redis::metrics::describe();
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
/// Connections made after one failed, per limiter (counter): a blocking limiter counts each
/// connection its pool opens after a connection broke (closed, reset, timed out in the middle of a
/// reply) or could not be made; an async limiter, whose connection manager reconnects by itself,
/// counts each call answered after a call failed because its connection was closed, reset or
/// refused.
pub const RECONNECTS: &str = "ritmo_redis_reconnects_total";

/// Describes the series above to the installed recorder (units and help text); optional.
pub fn describe() {
    use metrics::{Unit, describe_counter, describe_gauge};
    describe_counter!(REJECTED, Unit::Count, "Calls refused");
    describe_counter!(
        FALLBACK,
        Unit::Count,
        "Calls the failure policy answered instead of Redis"
    );
    describe_counter!(
        RECONNECTS,
        Unit::Count,
        "Connections to Redis made after one failed"
    );
    describe_gauge!(
        FALLBACK_ACTIVE,
        Unit::Count,
        "1 while the failure policy answers in place of Redis"
    );
}
