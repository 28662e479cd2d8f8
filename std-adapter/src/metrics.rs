//! Metrics through the [`metrics`] facade (feature `metrics`): the application installs whatever
//! exporter it likes (Prometheus, StatsD, OpenTelemetry); ritmo only records.
//!
//! | metric | kind | labels | recorded |
//! | --- | --- | --- | --- |
//! | `ritmo_admitted_total` | counter | `limiter` | by [`record`], from the limiter's own count |
//! | `ritmo_available_permits` | gauge | `limiter` | by [`record`] |
//! | `ritmo_permits` | gauge | `limiter` | by [`record`]: permits per period |
//! | `ritmo_rejected_total` | counter | `limiter`, `reason` | by [`MetricsListener`], per rejection |
//! | `ritmo_waited_total` | counter | `limiter` | by [`MetricsListener`], per reservation that waits |
//! | `ritmo_wait_seconds` | histogram | `limiter` | by [`MetricsListener`]: each wait, known when reserved |
//! | `ritmo_released_total` | counter | `limiter`, `returned` | by [`MetricsListener`], per reservation given up |
//!
//! The labels are the limiter's id and small fixed sets (`reason`: `no_permit_in_time`,
//! `interrupted`, `cancelled`; `returned`: `true`, `false`): never a label per client key, so
//! the number of series is the number of limiters, not the number of clients.
//!
//! What it costs the admitted call: one relaxed atomic add to a counter on a cache line of its own
//! (ritmo-core's `counters`), and nothing else: the listener is called on rejections and waits
//! only, and gauges and the admitted counter are read when the application calls [`record`]
//! (before each scrape, or on a timer). `benches/RESULTS.md` has the measured numbers.
//!
//! ```
//! use std::time::Duration;
//! use ritmo_core::{Config, ManualClock, RateLimiter};
//! use ritmo_std::metrics::{self, MetricsListener};
//!
//! static METRICS: MetricsListener = MetricsListener::new();
//! let clock = ManualClock::new();
//! let api = RateLimiter::new("api", Config::new(2, Duration::from_secs(1))?, &clock)
//!     .with_listener(&METRICS);
//! let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
//! let text = metrics::with_recorder(&recorder, || {
//!     metrics::describe();
//!     api.try_acquire().unwrap();
//!     api.try_acquire().unwrap();
//!     assert!(api.try_acquire().is_err());
//!     metrics::record(&api); // before a scrape
//!     recorder.handle().render()
//! });
//! assert!(text.contains(r#"ritmo_admitted_total{limiter="api"} 2"#));
//! assert!(text.contains(r#"ritmo_rejected_total{limiter="api",reason="no_permit_in_time"} 1"#));
//! assert!(text.contains(r#"ritmo_available_permits{limiter="api"} 0"#));
//! # Ok::<(), ritmo_core::ConfigError>(())
//! ```

use ritmo_core::{Bands, Clock, Event, Listener, RateLimiter, Reason, Registry};

/// Calls admitted at once, per limiter (counter).
pub const ADMITTED: &str = "ritmo_admitted_total";
/// Permits that would pass right now, per limiter (gauge).
pub const AVAILABLE: &str = "ritmo_available_permits";
/// Permits per period, per limiter (gauge).
pub const PERMITS: &str = "ritmo_permits";
/// Calls refused, per limiter and reason (counter).
pub const REJECTED: &str = "ritmo_rejected_total";
/// Calls that reserved a later permit and wait for it, per limiter (counter).
pub const WAITED: &str = "ritmo_waited_total";
/// How long calls wait for their permits, in seconds, per limiter (histogram).
pub const WAIT_SECONDS: &str = "ritmo_wait_seconds";
/// Reservations given up before their slot, per limiter and whether the permits went back
/// (counter).
pub const RELEASED: &str = "ritmo_released_total";

/// Runs `f` with `recorder` installed for the current thread only (tests and examples); a
/// re-export of [`metrics::with_local_recorder`] so that callers need not name the facade.
pub fn with_recorder<T>(recorder: &dyn metrics::Recorder, f: impl FnOnce() -> T) -> T {
    metrics::with_local_recorder(recorder, f)
}

/// Describes every ritmo metric (unit and help text) to the installed recorder; call it once at
/// start-up, after installing the recorder.
pub fn describe() {
    use metrics::{Unit, describe_counter, describe_gauge, describe_histogram};
    describe_counter!(ADMITTED, Unit::Count, "Calls admitted at once");
    describe_gauge!(AVAILABLE, Unit::Count, "Permits that would pass right now");
    describe_gauge!(PERMITS, Unit::Count, "Permits per period");
    describe_counter!(REJECTED, Unit::Count, "Calls refused");
    describe_counter!(WAITED, Unit::Count, "Calls that waited for a later permit");
    describe_histogram!(WAIT_SECONDS, Unit::Seconds, "Wait for a permit");
    describe_counter!(
        RELEASED,
        Unit::Count,
        "Reservations given up before their slot"
    );
}

/// The `reason` label of a rejection.
fn reason_label(reason: Reason) -> &'static str {
    match reason {
        Reason::NoPermitInTime => "no_permit_in_time",
        Reason::Interrupted => "interrupted",
        Reason::Cancelled => "cancelled",
        _ => "other",
    }
}

/// A [`Listener`] that records rejections, waits and released reservations of every limiter it is
/// installed on, labelled by the limiter's id. One `static` serves any number of limiters.
///
/// Admitted calls are not published to listeners; [`record`] reads their count.
#[derive(Debug, Clone, Copy, Default)]
pub struct MetricsListener;

impl MetricsListener {
    /// The listener (a `const`, for a `static`).
    pub const fn new() -> Self {
        MetricsListener
    }
}

impl Listener for MetricsListener {
    fn on_event(&self, event: &Event) {
        match *event {
            Event::Rejected(e) => {
                metrics::counter!(REJECTED, "limiter" => e.id(), "reason" => reason_label(e.reason()))
                    .increment(1);
            }
            Event::Waiting { id, wait, .. } => {
                metrics::counter!(WAITED, "limiter" => id).increment(1);
                metrics::histogram!(WAIT_SECONDS, "limiter" => id).record(wait.as_secs_f64());
            }
            Event::Released { id, returned, .. } => {
                let returned = if returned { "true" } else { "false" };
                metrics::counter!(RELEASED, "limiter" => id, "returned" => returned).increment(1);
            }
            _ => {}
        }
    }

    fn wants_waiting(&self) -> bool {
        true
    }
}

/// Records a limiter's admitted count and its available permits (call it before a scrape, or on
/// a timer: reading takes nothing from the limiter).
pub fn record<C: Clock>(limiter: &RateLimiter<C>) {
    let id = limiter.id();
    metrics::counter!(ADMITTED, "limiter" => id).absolute(limiter.admitted_count());
    metrics::gauge!(AVAILABLE, "limiter" => id).set(f64::from(limiter.available_permits()));
    metrics::gauge!(PERMITS, "limiter" => id).set(f64::from(limiter.config().permits()));
}

/// [`record`] for every limiter of a registry.
pub fn record_registry<C: Clock, const N: usize>(registry: &Registry<C, N>) {
    for limiter in registry.iter() {
        record(limiter);
    }
}

/// [`record`] for a [`Bands`]: its admitted count, and its available permits (the smallest of its
/// bands').
pub fn record_bands<C: Clock, const B: usize>(bands: &Bands<C, B>) {
    let id = bands.id();
    metrics::counter!(ADMITTED, "limiter" => id).absolute(bands.admitted_count());
    metrics::gauge!(AVAILABLE, "limiter" => id).set(f64::from(bands.available_permits()));
}
