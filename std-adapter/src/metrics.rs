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
//! | `ritmo_keys` | gauge | `limiter` | by [`record`] of a keyed limiter: keys being limited now |
//!
//! The labels are the limiter's id and small fixed sets (`reason`: `no_permit_in_time`,
//! `key_capacity`, `interrupted`, `cancelled`; `returned`: `true`, `false`; `band`: a band's
//! index): never a label per client key, so the number of series is the number of limiters, not
//! the number of clients.
//!
//! # Every kind
//!
//! Each kind of limiter implements [`Recordable`]; [`record_all`] records a set of them, of any
//! kinds, in one call before a scrape (a [`Registry`] records each of its limiters):
//!
//! | kind | series [`Recordable::record`] writes |
//! | --- | --- |
//! | [`RateLimiter`] | `ritmo_admitted_total`, `ritmo_available_permits`, `ritmo_permits` |
//! | [`Bands`] | per band (label `band`: `0`, `1`, ...): `ritmo_admitted_total` (the same for every band: a call passes all of them or none), `ritmo_available_permits`, `ritmo_permits` |
//! | [`Registry`] | what [`RateLimiter`] writes, for each of its limiters |
//! | [`KeyedLimiter`](crate::ritmo::KeyedLimiter) (ritmo-core) and [`KeyedRateLimiter`](crate::KeyedRateLimiter) | `ritmo_admitted_total`, `ritmo_waited_total`, `ritmo_rejected_total` (`reason`: `no_permit_in_time`, `key_capacity`, and `unknown_tier` for a tiered one), `ritmo_keys`, `ritmo_permits` (per key) |
//! | ritmo-redis's limiters (its feature `metrics`) | see `ritmo::redis::metrics` |
//!
//! A keyed limiter keeps its own counts of rejections (every key together), so it needs no
//! [`MetricsListener`]; one installed anyway records the same numbers.
//!
//! # Cost
//!
//! What it costs the admitted call: a relaxed load and store of a counter on a cache line of its
//! own (ritmo-core's `counters`), and nothing else: the listener is called on rejections and waits
//! only, and gauges and counts are read when the application calls [`record`] or [`record_all`]
//! (before each scrape, or on a timer). A keyed limiter counts its rejections the same way.
//! `benches/RESULTS.md` has the measured numbers. The counts are statistics: exact while one
//! core at a time counts, they may undercount (never overcount) when two cores count at the same
//! instant.
//!
//! ```
//! use std::time::Duration;
//! use ritmo::{Config, ManualClock, RateLimiter};
//! use ritmo::server::metrics::{self, MetricsListener};
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
//! # Ok::<(), ritmo::ConfigError>(())
//! ```

use std::hash::Hash;

use ritmo_core::keyed::{Keyed, KeyedStore, TierSet};
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
/// Keys a keyed limiter is limiting right now, per limiter (gauge): never a label per key.
pub const KEYS: &str = "ritmo_keys";

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
    describe_gauge!(KEYS, Unit::Count, "Keys being limited now");
}

/// The `reason` label of a rejection.
fn reason_label(reason: Reason) -> &'static str {
    match reason {
        Reason::NoPermitInTime => "no_permit_in_time",
        Reason::Interrupted => "interrupted",
        Reason::Cancelled => "cancelled",
        Reason::KeyCapacity => "key_capacity",
        Reason::Unavailable => "unavailable",
        Reason::UnknownTier => "unknown_tier",
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

/// A limiter of any kind whose series can be recorded before a scrape: every kind of ritmo's
/// implements it ([`RateLimiter`], [`Bands`], [`Registry`], ritmo-core's [`KeyedLimiter`](crate::ritmo::KeyedLimiter),
/// [`KeyedRateLimiter`](crate::KeyedRateLimiter), and ritmo-redis's limiters with its feature `metrics`), and so do
/// references, `Box`es and `Arc`s of them. See the [module docs](self) for the series of each.
///
/// ```
/// use std::time::Duration;
/// use ritmo::{Bands, Config, ManualClock, RateLimiter};
/// use ritmo::server::KeyedRateLimiter;
/// use ritmo::server::metrics;
///
/// let clock = ManualClock::new();
/// let global = RateLimiter::new("global", Config::new(100, Duration::from_secs(1))?, &clock);
/// let tiers = Bands::new("tiers", [Config::new(2, Duration::from_secs(1))?,
///                                  Config::new(10, Duration::from_secs(60))?], &clock);
/// let per_ip = KeyedRateLimiter::with_clock("per_ip", Config::new(1, Duration::from_secs(1))?, 2, &clock);
/// global.try_acquire().unwrap();
/// tiers.try_acquire().unwrap();
/// per_ip.try_acquire(&1u8).unwrap();
/// per_ip.try_acquire(&2u8).unwrap();
/// assert!(per_ip.try_acquire(&1u8).is_err()); // its permit is spent
/// assert!(per_ip.try_acquire(&3u8).is_err()); // no room for a third key
///
/// let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
/// let text = metrics::with_recorder(&recorder, || {
///     metrics::record_all(&[&global, &tiers, &per_ip]); // before each scrape
///     recorder.handle().render()
/// });
/// assert!(text.contains(r#"ritmo_admitted_total{limiter="global"} 1"#));
/// assert!(text.contains(r#"ritmo_available_permits{limiter="tiers",band="1"} 9"#));
/// assert!(text.contains(r#"ritmo_admitted_total{limiter="per_ip"} 2"#));
/// assert!(text.contains(r#"ritmo_rejected_total{limiter="per_ip",reason="key_capacity"} 1"#));
/// assert!(text.contains(r#"ritmo_keys{limiter="per_ip"} 2"#));
/// # Ok::<(), ritmo::ConfigError>(())
/// ```
pub trait Recordable {
    /// Records this limiter's counts and gauges, read now, to the installed recorder. Takes
    /// nothing from the limiter.
    fn record(&self);
}

/// Records every limiter of `limiters`, of any kinds (call it before each scrape, or on a timer).
///
/// ```
/// # use std::time::Duration;
/// # use ritmo::{Config, ManualClock, RateLimiter};
/// # use ritmo::server::metrics;
/// let clock = ManualClock::new();
/// let a = RateLimiter::new("a", Config::new(1, Duration::from_secs(1))?, &clock);
/// let b = RateLimiter::new("b", Config::new(1, Duration::from_secs(1))?, &clock);
/// metrics::record_all(&[&a, &b]); // no recorder installed: records nowhere
/// # Ok::<(), ritmo::ConfigError>(())
/// ```
pub fn record_all(limiters: &[&dyn Recordable]) {
    for limiter in limiters {
        limiter.record();
    }
}

impl<T: Recordable + ?Sized> Recordable for &T {
    fn record(&self) {
        (**self).record();
    }
}

impl<T: Recordable + ?Sized> Recordable for Box<T> {
    fn record(&self) {
        (**self).record();
    }
}

impl<T: Recordable + ?Sized> Recordable for std::sync::Arc<T> {
    fn record(&self) {
        (**self).record();
    }
}

impl<C: Clock> Recordable for RateLimiter<C> {
    fn record(&self) {
        record(self);
    }
}

impl<C: Clock, const N: usize> Recordable for Registry<C, N> {
    fn record(&self) {
        record_registry(self);
    }
}

impl<C: Clock, const B: usize> Recordable for Bands<C, B> {
    fn record(&self) {
        record_bands(self);
    }
}

/// The series of a keyed limiter, whatever its store: its counts (every key together) and its
/// live keys. The `unknown_tier` refusals only of a tiered limiter (one whose keys keep a tier:
/// an untiered one never has any).
impl<K: Hash + Eq + Clone, S: KeyedStore<K>> Recordable for Keyed<K, S> {
    fn record(&self) {
        let (rate, snapshot) = (self.key_rules().key_rate(), self.snapshot());
        let tiered = core::mem::size_of::<<S::Tiers as TierSet<K>>::Index>() != 0;
        let id = rate.id();
        metrics::counter!(ADMITTED, "limiter" => id).absolute(rate.admitted_count());
        metrics::counter!(WAITED, "limiter" => id).absolute(rate.waited_count());
        let reasons: &[Reason] = if tiered {
            &[
                Reason::NoPermitInTime,
                Reason::KeyCapacity,
                Reason::UnknownTier,
            ]
        } else {
            &[Reason::NoPermitInTime, Reason::KeyCapacity]
        };
        for &reason in reasons {
            metrics::counter!(REJECTED, "limiter" => id, "reason" => reason_label(reason))
                .absolute(rate.rejected_count(reason));
        }
        metrics::gauge!(KEYS, "limiter" => id).set(snapshot.live_keys as f64);
        metrics::gauge!(PERMITS, "limiter" => id).set(f64::from(snapshot.permits));
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

/// [`record`] for a [`Bands`], per band (label `band`: its index): its admitted count (the same
/// for every band: a call passes all of them or none), and each band's available permits and
/// permits per period.
pub fn record_bands<C: Clock, const B: usize>(bands: &Bands<C, B>) {
    let id = bands.id();
    let admitted = bands.admitted_count();
    let available = bands.available_permits_per_band();
    for (i, (config, available)) in bands.configs().iter().zip(available).enumerate() {
        let band = i.to_string();
        metrics::counter!(ADMITTED, "limiter" => id, "band" => band.clone()).absolute(admitted);
        metrics::gauge!(AVAILABLE, "limiter" => id, "band" => band.clone())
            .set(f64::from(available));
        metrics::gauge!(PERMITS, "limiter" => id, "band" => band).set(f64::from(config.permits()));
    }
}
