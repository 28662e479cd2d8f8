//! `ritmo_std::metrics` and `ritmo_std::tracing`: what an exporter or a subscriber receives, on a
//! fake clock. Metrics are read back from a real Prometheus recorder's rendered text.
#![cfg(all(feature = "metrics", feature = "tracing"))]

use std::sync::Mutex;
use std::time::Duration;

use metrics_exporter_prometheus::PrometheusBuilder;
use ritmo_core::{AdvanceClock, Bands, Config, ManualClock, RateLimiter, Registry, Tee};
use ritmo_std::metrics::{self, MetricsListener};
use ritmo_std::tracing::TracingListener;

static METRICS: MetricsListener = MetricsListener::new();

/// The value of the one sample line that starts with `series` (name and labels).
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[test]
fn counters_gauges_and_the_wait_histogram_per_limiter_id() {
    let recorder = PrometheusBuilder::new().build_recorder();
    let clock = ManualClock::new();
    let config = Config::new(2, Duration::from_secs(1))
        .unwrap()
        .with_max_wait(Duration::from_secs(1));
    let api = RateLimiter::new("api", config, &clock).with_listener(&METRICS);
    let other = RateLimiter::new("other", config, &clock).with_listener(&METRICS);
    let text = metrics::with_recorder(&recorder, || {
        metrics::describe();
        api.try_acquire().unwrap();
        api.try_acquire_n(1).unwrap();
        assert!(api.try_acquire().is_err());
        assert!(api.try_acquire().is_err());
        api.acquire_with(&mut AdvanceClock).unwrap(); // waits 500 ms
        let r = api.reserve().unwrap(); // waits 500 ms more, then given back (the tail)
        assert!(r.cancel());
        other.try_acquire().unwrap();
        metrics::record(&api);
        metrics::record(&other);
        recorder.handle().render()
    });
    let s = |series: &str| sample(&text, series);
    assert_eq!(s(r#"ritmo_admitted_total{limiter="api"}"#), Some(2.0));
    assert_eq!(s(r#"ritmo_admitted_total{limiter="other"}"#), Some(1.0));
    assert_eq!(
        s(r#"ritmo_rejected_total{limiter="api",reason="no_permit_in_time"}"#),
        Some(2.0)
    );
    assert_eq!(s(r#"ritmo_waited_total{limiter="api"}"#), Some(2.0));
    assert_eq!(s(r#"ritmo_wait_seconds_count{limiter="api"}"#), Some(2.0));
    assert_eq!(s(r#"ritmo_wait_seconds_sum{limiter="api"}"#), Some(1.0));
    assert_eq!(
        s(r#"ritmo_released_total{limiter="api",returned="true"}"#),
        Some(1.0)
    );
    // At 500 ms: the waiter's permit arrived and was used; the cancelled one went back.
    assert_eq!(s(r#"ritmo_available_permits{limiter="api"}"#), Some(0.0));
    assert_eq!(s(r#"ritmo_available_permits{limiter="other"}"#), Some(1.0));
    assert_eq!(s(r#"ritmo_permits{limiter="api"}"#), Some(2.0));
    // Only ids and fixed label values: no series for anything else.
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        assert!(
            line.contains(r#"limiter="api""#) || line.contains(r#"limiter="other""#),
            "{line}"
        );
    }
}

#[test]
fn a_registry_and_bands_are_recorded_too() {
    static CLOCK: ManualClock = ManualClock::new();
    static REGISTRY: Registry<&ManualClock, 4> = Registry::new(&CLOCK);
    let recorder = PrometheusBuilder::new().build_recorder();
    let a = REGISTRY
        .get_or_create("reg-a", Config::new(3, Duration::from_secs(1)).unwrap())
        .unwrap();
    a.try_acquire().unwrap();
    let clock = ManualClock::new();
    let bands = Bands::new(
        "bands",
        [
            Config::new(5, Duration::from_secs(1)).unwrap(),
            Config::new(2, Duration::from_secs(60)).unwrap(),
        ],
        &clock,
    )
    .with_listener(&METRICS);
    let text = metrics::with_recorder(&recorder, || {
        bands.try_acquire().unwrap();
        bands.try_acquire().unwrap();
        assert!(bands.try_acquire().is_err());
        metrics::record_registry(&REGISTRY);
        metrics::record_bands(&bands);
        recorder.handle().render()
    });
    assert_eq!(
        sample(&text, r#"ritmo_admitted_total{limiter="reg-a"}"#),
        Some(1.0)
    );
    assert_eq!(
        sample(&text, r#"ritmo_available_permits{limiter="reg-a"}"#),
        Some(2.0)
    );
    assert_eq!(
        sample(&text, r#"ritmo_admitted_total{limiter="bands"}"#),
        Some(2.0)
    );
    assert_eq!(
        sample(
            &text,
            r#"ritmo_rejected_total{limiter="bands",reason="no_permit_in_time"}"#
        ),
        Some(1.0)
    );
}

/// A subscriber that keeps each event's target, level, message and fields as text.
#[derive(Default)]
struct Collect(Mutex<Vec<String>>);

struct Fields(String);
impl tracing::field::Visit for Fields {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.push_str(&format!(" {}={:?}", field.name(), value));
    }
}

impl tracing::Subscriber for Collect {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut fields = Fields(format!(
            "{} {}",
            event.metadata().target(),
            event.metadata().level()
        ));
        event.record(&mut fields);
        self.0.lock().unwrap().push(fields.0);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[test]
fn tracing_events_for_rejections_waits_and_refunds_with_the_id() {
    static LOG: TracingListener = TracingListener::new();
    static BOTH: Tee<&TracingListener, &MetricsListener> = Tee(&LOG, &METRICS);
    let clock = ManualClock::new();
    let config = Config::new(1, Duration::from_secs(1))
        .unwrap()
        .with_max_wait(Duration::from_secs(1));
    let api = RateLimiter::new("api", config, &clock).with_listener(&BOTH);
    let collect = std::sync::Arc::new(Collect::default());
    tracing::subscriber::with_default(collect.clone(), || {
        api.try_acquire().unwrap(); // admitted: nothing
        let r = api.reserve().unwrap(); // waits 1 s
        assert!(api.reserve_n_within(1, Duration::ZERO).is_err());
        assert!(r.cancel()); // the tail: goes back
    });
    let events = collect.0.lock().unwrap().clone();
    assert_eq!(events.len(), 3, "{events:#?}");
    assert_eq!(
        events[0],
        r#"ritmo TRACE message=waiting for a permit id="api" permits=1 wait_ms=1000"#
    );
    assert_eq!(
        events[1],
        r#"ritmo INFO message=rate limited id="api" reason="no permit in time" retry_after_ms=2000"#
    );
    assert_eq!(
        events[2],
        r#"ritmo DEBUG message=reservation given up id="api" permits=1 reason="cancelled" returned=true"#
    );
}
