//! Ignored and capped server values are reported as `tracing` events (target `ritmo_client`),
//! and values that are read are not.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use http::{HeaderMap, HeaderValue, StatusCode};
use ritmo_client::Outbound;
use ritmo_client::headers::server_wait;
use ritmo_core::Config;

/// Collects each event's target and message.
#[derive(Clone, Default)]
struct Collect(Arc<Mutex<Vec<(String, String)>>>);

struct Message(String);

impl tracing::field::Visit for Message {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
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
        let mut message = Message(String::new());
        event.record(&mut message);
        self.0
            .lock()
            .unwrap()
            .push((event.metadata().target().to_string(), message.0));
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

fn events_of(f: impl FnOnce()) -> Vec<(String, String)> {
    let collect = Collect::default();
    tracing::subscriber::with_default(collect.clone(), f);
    collect.0.lock().unwrap().clone()
}

fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for &(n, v) in pairs {
        h.append(n, HeaderValue::from_static(v));
    }
    h
}

#[test]
fn each_ignored_value_is_an_event() {
    let now = SystemTime::now();
    for (pairs, status) in [
        (vec![("retry-after", "soon")], 429),
        (vec![("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT")], 503),
        (vec![("ratelimit", "\"a\";r=0;t=2, ((")], 200),
        (vec![("ratelimit", "\"a\";r=0")], 200),
        (
            vec![
                ("x-ratelimit-remaining", "0"),
                ("x-ratelimit-reset", "1600000000"),
            ],
            200,
        ),
        (
            vec![("x-ratelimit-remaining", "-1"), ("x-ratelimit-reset", "2")],
            200,
        ),
        (
            vec![
                ("x-ratelimit-remaining", "0"),
                ("x-ratelimit-reset-after", "-1.5"),
            ],
            200,
        ),
        (
            vec![
                ("x-ratelimit-remaining-tokens", "0"),
                ("x-ratelimit-reset-tokens", "6 minutes"),
            ],
            200,
        ),
        (
            vec![
                ("ratelimit-remaining", "0"),
                ("ratelimit-reset", "1600000000000"),
            ],
            200,
        ),
    ] {
        let h = headers(&pairs);
        let status = StatusCode::from_u16(status).unwrap();
        let events = events_of(|| assert_eq!(server_wait(status, &h, now), None));
        assert_eq!(events.len(), 1, "{pairs:?}: {events:?}");
        assert_eq!(events[0].0, "ritmo_client");
        assert!(events[0].1.contains("ignored"), "{events:?}");
    }
}

#[test]
fn values_that_are_read_are_silent() {
    let h = headers(&[("retry-after", "3"), ("ratelimit", "\"a\";r=0;t=2")]);
    let events = events_of(|| {
        assert_eq!(
            server_wait(StatusCode::TOO_MANY_REQUESTS, &h, SystemTime::now()),
            Some(Duration::from_secs(3))
        );
    });
    assert!(events.is_empty(), "{events:?}");
    let h = headers(&[
        ("date", "Wed, 21 Oct 2015 07:28:00 GMT"),
        ("x-ratelimit-remaining-requests", "0"),
        ("x-ratelimit-reset-requests", "6m0s"),
        ("x-ratelimit-remaining", "0"),
        ("x-ratelimit-reset-after", "1.5"),
        ("x-ratelimit-reset", "1445412480500"),
        ("ratelimit-remaining", "0"),
        ("ratelimit-reset", "7"),
    ]);
    let events = events_of(|| {
        assert_eq!(
            server_wait(StatusCode::OK, &h, SystemTime::now()),
            Some(Duration::from_secs(360))
        );
    });
    assert!(events.is_empty(), "{events:?}");
}

#[test]
fn a_hold_beyond_max_hold_is_capped_with_an_event() {
    let config = Config::new(10, Duration::from_secs(1)).unwrap();
    let outbound = Outbound::global("api", config)
        .max_hold(Duration::from_secs(60))
        .build();
    let h = headers(&[("retry-after", "86400")]);
    let events = events_of(|| {
        let held = outbound.observe(&(), StatusCode::TOO_MANY_REQUESTS, &h);
        assert_eq!(held, Some(Duration::from_secs(60)));
    });
    assert_eq!(events.len(), 1, "{events:?}");
    assert!(events[0].1.contains("capped"), "{events:?}");
    assert!(outbound.held_for(&()).unwrap() <= Duration::from_secs(60));
}
