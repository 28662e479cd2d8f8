//! `ritmo_std::metrics` and `ritmo_std::tracing`: what an exporter or a subscriber receives, on a
//! fake clock. Metrics are read back from a real Prometheus recorder's rendered text.
#![cfg(all(feature = "metrics", feature = "tracing"))]

use std::sync::Mutex;
use std::time::Duration;

use metrics_exporter_prometheus::PrometheusBuilder;
use ritmo_core::{
    AdvanceClock, Bands, Config, KeyedLimiter, ManualClock, RateLimiter, Reason, Registry, Tee,
};
use ritmo_std::KeyedRateLimiter;
use ritmo_std::metrics::{self, MetricsListener, Recordable};
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
    // Per band: the admitted count (the same for each), each band's available permits and
    // permits per period.
    for (band, available, permits) in [("0", 3.0, 5.0), ("1", 0.0, 2.0)] {
        assert_eq!(
            sample(
                &text,
                &format!(r#"ritmo_admitted_total{{limiter="bands",band="{band}"}}"#)
            ),
            Some(2.0)
        );
        assert_eq!(
            sample(
                &text,
                &format!(r#"ritmo_available_permits{{limiter="bands",band="{band}"}}"#)
            ),
            Some(available)
        );
        assert_eq!(
            sample(
                &text,
                &format!(r#"ritmo_permits{{limiter="bands",band="{band}"}}"#)
            ),
            Some(permits)
        );
    }
    assert_eq!(
        sample(
            &text,
            r#"ritmo_rejected_total{limiter="bands",reason="no_permit_in_time"}"#
        ),
        Some(1.0)
    );
}

/// A key's label never appears: the series of a keyed limiter are per limiter id.
fn assert_no_key_label(text: &str) {
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        assert!(!line.contains("key="), "a per-key label: {line}");
    }
}

#[test]
fn a_core_keyed_limiter_counts_admitted_waited_rejected_by_reason_and_live_keys() {
    let clock = ManualClock::new();
    let config = Config::new(2, Duration::from_secs(1))
        .unwrap()
        .with_max_wait(Duration::from_millis(500));
    let peers: KeyedLimiter<u32, _, 2> = KeyedLimiter::with_clock("peers", config, &clock, 7);
    let recorder = PrometheusBuilder::new().build_recorder();
    let text = metrics::with_recorder(&recorder, || {
        peers.try_acquire(&1).unwrap();
        peers.try_acquire(&1).unwrap();
        assert!(peers.try_acquire(&1).is_err()); // no_permit_in_time
        let waiting = peers.reserve(&1).unwrap(); // a slot 500 ms away: waited
        assert!(!waiting.is_ready());
        waiting.commit();
        peers.try_acquire(&2).unwrap();
        let full = peers.try_acquire(&3).unwrap_err(); // two live keys: no room
        assert_eq!(full.reason(), Reason::KeyCapacity);
        metrics::record_all(&[&peers]);
        recorder.handle().render()
    });
    assert_eq!(
        sample(&text, r#"ritmo_admitted_total{limiter="peers"}"#),
        Some(3.0)
    );
    assert_eq!(
        sample(&text, r#"ritmo_waited_total{limiter="peers"}"#),
        Some(1.0)
    );
    assert_eq!(
        sample(
            &text,
            r#"ritmo_rejected_total{limiter="peers",reason="no_permit_in_time"}"#
        ),
        Some(1.0)
    );
    assert_eq!(
        sample(
            &text,
            r#"ritmo_rejected_total{limiter="peers",reason="key_capacity"}"#
        ),
        Some(1.0)
    );
    assert_eq!(sample(&text, r#"ritmo_keys{limiter="peers"}"#), Some(2.0));
    assert_eq!(
        sample(&text, r#"ritmo_permits{limiter="peers"}"#),
        Some(2.0)
    );
    assert_no_key_label(&text);
}

#[test]
fn a_std_keyed_limiter_counts_a_key_capacity_rejection_and_its_keys_gauge_follows_the_clock() {
    let clock = ManualClock::new();
    let per_ip = KeyedRateLimiter::with_clock(
        "per_ip",
        Config::new(1, Duration::from_secs(1)).unwrap(),
        3,
        &clock,
    );
    let recorder = PrometheusBuilder::new().build_recorder();
    let (full, later) = metrics::with_recorder(&recorder, || {
        for key in 1..=3u32 {
            per_ip.try_acquire(&key).unwrap();
        }
        assert!(per_ip.try_acquire(&2).is_err()); // no_permit_in_time
        assert!(per_ip.try_acquire_n(&3, 1).is_err()); // no_permit_in_time
        let err = per_ip.try_acquire(&4).unwrap_err(); // three live keys: no room
        assert_eq!(err.reason(), Reason::KeyCapacity);
        metrics::record_all(&[&per_ip]);
        let full = recorder.handle().render();
        clock.advance(Duration::from_secs(1)); // every key idle again
        per_ip.try_acquire(&4).unwrap();
        metrics::record_all(&[&per_ip]);
        (full, recorder.handle().render())
    });
    assert_eq!(
        sample(&full, r#"ritmo_admitted_total{limiter="per_ip"}"#),
        Some(3.0)
    );
    assert_eq!(
        sample(
            &full,
            r#"ritmo_rejected_total{limiter="per_ip",reason="no_permit_in_time"}"#
        ),
        Some(2.0)
    );
    assert_eq!(
        sample(
            &full,
            r#"ritmo_rejected_total{limiter="per_ip",reason="key_capacity"}"#
        ),
        Some(1.0)
    );
    assert_eq!(sample(&full, r#"ritmo_keys{limiter="per_ip"}"#), Some(3.0));
    assert_eq!(
        sample(&full, r#"ritmo_waited_total{limiter="per_ip"}"#),
        Some(0.0)
    );
    // A second scrape: the counts go on from where they were, the gauge is what it is now.
    assert_eq!(
        sample(&later, r#"ritmo_admitted_total{limiter="per_ip"}"#),
        Some(4.0)
    );
    assert_eq!(sample(&later, r#"ritmo_keys{limiter="per_ip"}"#), Some(1.0));
    assert_no_key_label(&later);
}

#[test]
fn one_call_records_limiters_of_every_kind_behind_references_and_arcs() {
    static CLOCK: ManualClock = ManualClock::new();
    static REGISTRY: Registry<&ManualClock, 2> = Registry::new(&CLOCK);
    REGISTRY
        .get_or_create("kinds-reg", Config::new(4, Duration::from_secs(1)).unwrap())
        .unwrap()
        .try_acquire()
        .unwrap();
    let config = Config::new(4, Duration::from_secs(1)).unwrap();
    let single = RateLimiter::new("kinds-single", config, &CLOCK);
    let bands = Bands::new("kinds-bands", [config, config], &CLOCK);
    let table: KeyedLimiter<u8, _, 4> = KeyedLimiter::with_clock("kinds-table", config, &CLOCK, 1);
    let map = std::sync::Arc::new(KeyedRateLimiter::with_clock("kinds-map", config, 4, &CLOCK));
    single.try_acquire().unwrap();
    bands.try_acquire().unwrap();
    table.try_acquire(&1).unwrap();
    map.try_acquire(&1u8).unwrap();
    let boxed: Box<dyn Recordable> = Box::new(single);
    let recorder = PrometheusBuilder::new().build_recorder();
    let text = metrics::with_recorder(&recorder, || {
        metrics::record_all(&[&REGISTRY, &boxed, &bands, &table, &map]);
        recorder.handle().render()
    });
    for series in [
        r#"ritmo_admitted_total{limiter="kinds-reg"}"#,
        r#"ritmo_admitted_total{limiter="kinds-single"}"#,
        r#"ritmo_admitted_total{limiter="kinds-bands",band="1"}"#,
        r#"ritmo_admitted_total{limiter="kinds-table"}"#,
        r#"ritmo_admitted_total{limiter="kinds-map"}"#,
    ] {
        assert_eq!(sample(&text, series), Some(1.0), "{series} in {text}");
    }
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

/// An untiered keyed limiter can never refuse a call for an unknown tier: it exports no
/// `unknown_tier` series (an always-zero series would only add noise to a dashboard); a tiered
/// one does, counting each such refusal (core's table and std's map alike).
#[test]
fn unknown_tier_is_a_series_of_tiered_keyed_limiters_only() {
    use ritmo_core::keyed::{Tier, Tiers};
    let config = Config::new(1, Duration::from_secs(1)).unwrap();
    let clock = ManualClock::new();
    let plain_map = KeyedRateLimiter::with_clock("plain_map", config, 4, &clock);
    let plain_table: KeyedLimiter<u8, _, 4> =
        KeyedLimiter::with_clock("plain_table", config, &clock, 0);
    let by_key = |key: &u8| if *key == 0 { "only" } else { "none" };
    let tiered_map = KeyedRateLimiter::tiered_with_clock(
        "tiered_map",
        Tiers::new([Tier::new("only", config)], by_key),
        4,
        &clock,
    );
    let tiered_table: KeyedLimiter<u8, _, 4, _> = KeyedLimiter::tiered_with_clock(
        "tiered_table",
        Tiers::new([Tier::new("only", config)], by_key),
        &clock,
        0,
    );
    let recorder = PrometheusBuilder::new().build_recorder();
    let text = metrics::with_recorder(&recorder, || {
        plain_map.try_acquire(&1u8).unwrap();
        plain_table.try_acquire(&1).unwrap();
        assert_eq!(
            tiered_map.try_acquire(&1).unwrap_err().reason(),
            Reason::UnknownTier
        );
        assert_eq!(
            tiered_table.try_acquire(&1).unwrap_err().reason(),
            Reason::UnknownTier
        );
        assert!(tiered_table.try_acquire(&0).is_ok());
        metrics::record_all(&[&plain_map, &plain_table, &tiered_map, &tiered_table]);
        recorder.handle().render()
    });
    for plain in ["plain_map", "plain_table"] {
        assert_eq!(
            sample(
                &text,
                &format!(r#"ritmo_admitted_total{{limiter="{plain}"}}"#)
            ),
            Some(1.0),
            "{text}"
        );
        assert!(
            !text.contains(&format!(r#"{{limiter="{plain}",reason="unknown_tier"}}"#)),
            "{text}"
        );
        assert_eq!(
            sample(
                &text,
                &format!(r#"ritmo_rejected_total{{limiter="{plain}",reason="no_permit_in_time"}}"#)
            ),
            Some(0.0)
        );
    }
    for tiered in ["tiered_map", "tiered_table"] {
        assert_eq!(
            sample(
                &text,
                &format!(r#"ritmo_rejected_total{{limiter="{tiered}",reason="unknown_tier"}}"#)
            ),
            Some(1.0),
            "{text}"
        );
    }
}
