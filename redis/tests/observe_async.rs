//! The async limiters' switches to the failure policy and back, as `tracing` events: one when the
//! policy takes over, one when the store answers again (tests/observe.rs has the blocking ones). A
//! process of its own with one test: events from other tests' threads cannot race its subscriber.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use ritmo_core::Config;
use ritmo_redis::{FailurePolicy, Source};

/// A subscriber that keeps each event's target, level and fields as text.
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
fn an_async_limiter_marks_each_switch_to_the_fallback_and_back_with_one_event() {
    let Some(server) = support::Server::start() else {
        return;
    };
    let collect = Arc::new(Collect::default());
    tracing::subscriber::with_default(collect.clone(), || {
        // One thread: the limiter decides on the thread the subscriber is set on.
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let limiter = ritmo_redis::builder(
                "obs-async",
                Config::new(100, Duration::from_secs(1)).unwrap(),
            )
            .timeout(Duration::from_millis(100))
            .on_unavailable(FailurePolicy::Admit)
            .connect(server.url())
            .unwrap();
            assert_eq!(limiter.try_acquire().await.unwrap().source(), Source::Store);
            server.pause();
            assert_eq!(limiter.try_acquire().await.unwrap().source(), Source::Open);
            assert_eq!(limiter.try_acquire().await.unwrap().source(), Source::Open);
            server.resume();
            // Answers to the calls that timed out may come first on the connection: within a
            // generous deadline, the store answers again.
            let deadline = std::time::Instant::now() + Duration::from_secs(20);
            while limiter.try_acquire().await.unwrap().source() != Source::Store {
                assert!(
                    std::time::Instant::now() < deadline,
                    "the store never answered"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            assert_eq!(limiter.try_acquire().await.unwrap().source(), Source::Store);
        });
    });
    let events = collect.0.lock().unwrap().clone();
    assert_eq!(events.len(), 2, "{events:#?}");
    assert_eq!(
        events[0],
        r#"ritmo WARN message=Redis unavailable: the failure policy decides id="obs-async" policy="admit" error=no answer within 100 ms"#
    );
    assert_eq!(
        events[1],
        r#"ritmo INFO message=Redis answers again: the shared quota decides id="obs-async" policy="admit""#
    );
}
