//! Metrics of the layer through the [`metrics`] facade (feature `metrics`): the application
//! installs whatever exporter it likes (Prometheus, StatsD, OpenTelemetry); the layer only counts.
//!
//! | metric | kind | labels | what |
//! | --- | --- | --- | --- |
//! | `ritmo_http_requests_admitted_total` | counter | `layer` | requests given their permits (at once, or after a wait) |
//! | `ritmo_http_requests_rejected_total` | counter | `layer`, `reason` | requests refused: `no_permit_in_time` (`429`), `missing_key` (`400`, no key: [`MissingKey::Reject`](crate::MissingKey::Reject)), `other` |
//! | `ritmo_http_requests_shadow_rejected_total` | counter | `layer` | shadow mode: requests that would have been refused, served anyway |
//!
//! The names are the layer's own, apart from the limiter's (`ritmo_admitted_total`,
//! `ritmo_rejected_total`, ... labelled `limiter`, recorded by `ritmo::server::metrics`): an
//! application that records both its layer and the limiter behind it counts each request once
//! under each name, so the sum over every series of one name means one thing (every `429` once in
//! `sum(ritmo_rejected_total)`, every refusal of the layer, `400`s included, once in
//! `sum(ritmo_http_requests_rejected_total)`). The `layer` label is the layer's policy name (the
//! limiter's id unless [`policy_name`](crate::RateLimitLayer::policy_name) renames it), never a
//! client key. Shadow mode's would-be rejections have a counter of their own: summed with the
//! real ones they would count requests that were served.
//!
//! The layer keeps the counts itself, in relaxed atomics shared by its clones: a request pays one
//! relaxed add (and without the feature, nothing). [`record`] hands them to the recorder: call it
//! before each scrape, or on a timer.
//!
//! ```
//! use std::time::Duration;
//! use ritmo::{Config, RateLimiter};
//! use ritmo::server::StdClock;
//! use ritmo::tower::{key::Global, metrics, RateLimitLayer};
//!
//! static API: std::sync::LazyLock<RateLimiter<StdClock>> = std::sync::LazyLock::new(|| {
//!     RateLimiter::with_clock("api", Config::new(100, Duration::from_secs(1)).unwrap(), StdClock::new())
//! });
//! let layer = RateLimitLayer::new(&*API, Global);
//! let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
//! let text = ::metrics::with_local_recorder(&recorder, || {
//!     metrics::record(&layer); // before a scrape
//!     recorder.handle().render()
//! });
//! assert!(text.contains(r#"ritmo_http_requests_admitted_total{layer="api"} 0"#));
//! ```

use core::sync::atomic::{AtomicU64, Ordering};

use crate::RateLimitLayer;

/// Requests given their permits, per layer (counter).
pub const ADMITTED: &str = "ritmo_http_requests_admitted_total";
/// Requests refused, per layer and reason (counter).
pub const REJECTED: &str = "ritmo_http_requests_rejected_total";
/// Shadow mode: requests that would have been refused and were served, per layer (counter).
pub const SHADOW_REJECTED: &str = "ritmo_http_requests_shadow_rejected_total";

/// The `reason` labels of [`REJECTED`], in the order of [`Counts::rejected`].
const REASONS: [&str; 3] = ["no_permit_in_time", "missing_key", "other"];

/// Why a request was refused, as counted.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Refused {
    /// Rate limited.
    Limited = 0,
    /// No key.
    MissingKey = 1,
    /// Anything else a store answered.
    Other = 2,
}

/// A layer's counts, shared by its clones: relaxed atomics, read by [`record`].
#[derive(Debug, Default)]
pub(crate) struct Counts {
    admitted: AtomicU64,
    rejected: [AtomicU64; 3],
    shadow: AtomicU64,
}

impl Counts {
    #[inline(always)]
    pub(crate) fn admitted(&self) {
        self.admitted.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn rejected(&self, why: Refused) {
        self.rejected[why as usize].fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn shadow_rejected(&self) {
        self.shadow.fetch_add(1, Ordering::Relaxed);
    }
}

/// Describes the layer's metrics (unit and help text) to the installed recorder; call it once at
/// start-up, after installing the recorder (beside `ritmo::server::metrics::describe()` for the
/// limiters).
pub fn describe() {
    use metrics::{Unit, describe_counter};
    describe_counter!(
        ADMITTED,
        Unit::Count,
        "Requests the HTTP layer gave their permits"
    );
    describe_counter!(
        REJECTED,
        Unit::Count,
        "Requests the HTTP layer refused (429 rate limited, 400 no key)"
    );
    describe_counter!(
        SHADOW_REJECTED,
        Unit::Count,
        "Requests shadow mode would have refused (served anyway)"
    );
}

/// Records a layer's counts (admitted, rejected by reason, shadow-mode would-be rejections),
/// labelled `layer` = its policy name. Call it before a scrape, or on a timer; any clone of the
/// layer records the same counts.
pub fn record<St, X, M, Cl>(layer: &RateLimitLayer<St, X, M, Cl>) {
    let (id, counts) = layer.counts();
    metrics::counter!(ADMITTED, "layer" => id).absolute(counts.admitted.load(Ordering::Relaxed));
    for (reason, count) in REASONS.iter().zip(&counts.rejected) {
        metrics::counter!(REJECTED, "layer" => id, "reason" => *reason)
            .absolute(count.load(Ordering::Relaxed));
    }
    metrics::counter!(SHADOW_REJECTED, "layer" => id)
        .absolute(counts.shadow.load(Ordering::Relaxed));
}
