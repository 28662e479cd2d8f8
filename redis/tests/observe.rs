//! Faults seen through `tracing` and `metrics`: one event when the failure policy takes over and
//! one when the store answers again (not one per call), counters of the calls the policy answered
//! and refused, and the "fallback active" gauge.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use metrics_exporter_prometheus::PrometheusBuilder;
use ritmo_core::{Config, Reason};
use ritmo_redis::{FailurePolicy, Source};

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

/// The value of one series in Prometheus text, if present.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
}

#[test]
fn a_switch_to_the_fallback_and_back_is_one_event_each_and_counted() {
    let Some(server) = support::Server::start() else {
        return;
    };
    let limiter = ritmo_redis::builder("obs", Config::new(100, Duration::from_secs(1)).unwrap())
        .timeout(Duration::from_millis(100))
        .on_unavailable(FailurePolicy::Local(
            Config::new(3, Duration::from_secs(60)).unwrap(),
        ))
        .connect_blocking(server.url())
        .unwrap();
    let collect = Arc::new(Collect::default());
    let recorder = PrometheusBuilder::new().build_recorder();
    let (text, active_while_away) = metrics::with_local_recorder(&recorder, || {
        tracing::subscriber::with_default(collect.clone(), || {
            assert_eq!(limiter.try_acquire().unwrap().source(), Source::Store);
            server.pause();
            assert_eq!(limiter.try_acquire().unwrap().source(), Source::Fallback);
            assert_eq!(limiter.try_acquire().unwrap().source(), Source::Fallback);
            // The local quota (3 a minute, one charged by the store's grant) is spent: the
            // fallback refuses.
            assert_eq!(
                limiter.try_acquire().unwrap_err().reason(),
                Reason::NoPermitInTime
            );
            let active = sample(
                &recorder.handle().render(),
                r#"ritmo_redis_fallback_active{limiter="obs"}"#,
            );
            server.resume();
            assert_eq!(limiter.try_acquire().unwrap().source(), Source::Store);
            assert_eq!(limiter.try_acquire().unwrap().source(), Source::Store);
            (recorder.handle().render(), active)
        })
    });
    let events = collect.0.lock().unwrap().clone();
    assert_eq!(events.len(), 2, "{events:#?}");
    assert!(
        events[0].starts_with(
            r#"ritmo WARN message=Redis unavailable: the failure policy decides id="obs" policy="local" error="#
        ),
        "{}",
        events[0]
    );
    assert_eq!(
        events[1],
        r#"ritmo INFO message=Redis answers again: the shared quota decides id="obs" policy="local""#
    );
    assert_eq!(active_while_away, Some(1.0));
    assert_eq!(
        sample(&text, r#"ritmo_redis_fallback_active{limiter="obs"}"#),
        Some(0.0)
    );
    assert_eq!(
        sample(
            &text,
            r#"ritmo_redis_fallback_total{limiter="obs",policy="local"}"#
        ),
        Some(3.0)
    );
    assert_eq!(
        sample(
            &text,
            r#"ritmo_rejected_total{limiter="obs",reason="unavailable"}"#
        ),
        None
    );
}

#[test]
fn calls_refused_as_unavailable_are_counted() {
    let refusing = support::Refusing::bind();
    let limiter = ritmo_redis::builder("down", Config::new(10, Duration::from_secs(1)).unwrap())
        .timeout(Duration::from_millis(100))
        .connect_blocking(refusing.url())
        .unwrap();
    let recorder = PrometheusBuilder::new().build_recorder();
    let text = metrics::with_local_recorder(&recorder, || {
        for _ in 0..3 {
            assert_eq!(
                limiter.try_acquire().unwrap_err().reason(),
                Reason::Unavailable
            );
        }
        recorder.handle().render()
    });
    assert_eq!(
        sample(
            &text,
            r#"ritmo_rejected_total{limiter="down",reason="unavailable"}"#
        ),
        Some(3.0)
    );
    assert_eq!(
        sample(&text, r#"ritmo_redis_fallback_active{limiter="down"}"#),
        Some(1.0)
    );
}
