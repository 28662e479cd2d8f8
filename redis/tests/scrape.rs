//! `ritmo_std::metrics::record_all` on Redis limiters: the calls the store admitted, made wait
//! and refused, the failure policy's answers, the "fallback active" gauge and reconnects after a
//! restarted server, read from a real Prometheus recorder's rendered text. (A process of its own:
//! tests/observe.rs captures `tracing` events, which other tests' events would race.)

mod support;

use std::time::Duration;

use metrics_exporter_prometheus::PrometheusBuilder;
use ritmo_core::{Config, Reason};
use ritmo_redis::{FailurePolicy, Source};

/// The value of one series in Prometheus text, if present.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|l| {
        l.strip_prefix(series)?
            .strip_prefix(' ')?
            .trim()
            .parse()
            .ok()
    })
}

/// Renders what `record_all` writes for `limiters`.
fn scrape(limiters: &[&dyn ritmo_std::metrics::Recordable]) -> String {
    let recorder = PrometheusBuilder::new().build_recorder();
    metrics::with_local_recorder(&recorder, || {
        ritmo_std::metrics::record_all(limiters);
        recorder.handle().render()
    })
}

/// The series of limiter `id` that `record` writes, in a fixed order: admitted, waited,
/// rejected (no permit), rejected (unavailable), answered by the fallback (admit, local), fallback
/// active, reconnects.
fn series(text: &str, id: &str) -> [Option<f64>; 8] {
    [
        format!(r#"ritmo_admitted_total{{limiter="{id}"}}"#),
        format!(r#"ritmo_waited_total{{limiter="{id}"}}"#),
        format!(r#"ritmo_rejected_total{{limiter="{id}",reason="no_permit_in_time"}}"#),
        format!(r#"ritmo_rejected_total{{limiter="{id}",reason="unavailable"}}"#),
        format!(r#"ritmo_redis_fallback_total{{limiter="{id}",policy="admit"}}"#),
        format!(r#"ritmo_redis_fallback_total{{limiter="{id}",policy="local"}}"#),
        format!(r#"ritmo_redis_fallback_active{{limiter="{id}"}}"#),
        format!(r#"ritmo_redis_reconnects_total{{limiter="{id}"}}"#),
    ]
    .map(|s| sample(text, &s))
}

#[test]
fn record_reads_the_calls_the_store_admitted_made_wait_and_refused() {
    let Some(server) = support::Server::start() else {
        return;
    };
    let config = Config::new(2, Duration::from_secs(60))
        .unwrap()
        .with_max_wait(Duration::from_secs(30));
    let limiter = ritmo_redis::builder("answered", config)
        .connect_blocking(server.url())
        .unwrap();
    let keyed = ritmo_redis::builder("answered-keyed", config)
        .connect_blocking_keyed::<str>(server.url())
        .unwrap();
    limiter.try_acquire().unwrap();
    limiter.try_acquire().unwrap();
    assert!(limiter.try_acquire().is_err());
    let waiting = limiter.reserve().unwrap(); // the next slot, 30 s away
    assert!(!waiting.is_ready());
    waiting.commit();
    assert!(limiter.reserve().is_err()); // 60 s away: past max_wait
    keyed.try_acquire("a").unwrap();
    keyed.try_acquire("b").unwrap();
    let text = scrape(&[&limiter, &keyed]);
    let f = Some;
    assert_eq!(
        series(&text, "answered"),
        [
            f(2.0),
            f(1.0),
            f(2.0),
            f(0.0),
            f(0.0),
            f(0.0),
            f(0.0),
            f(0.0)
        ]
    );
    assert_eq!(
        series(&text, "answered-keyed"),
        [
            f(2.0),
            f(0.0),
            f(0.0),
            f(0.0),
            f(0.0),
            f(0.0),
            f(0.0),
            f(0.0)
        ]
    );
    assert!(!text.contains("key="), "a per-key label in {text}");
}

#[test]
fn a_blocking_limiter_counts_a_reconnect_after_the_server_restarts() {
    let Some(mut server) = support::Server::start() else {
        return;
    };
    let limiter = ritmo_redis::builder(
        "restarted",
        Config::new(100, Duration::from_secs(1)).unwrap(),
    )
    .timeout(Duration::from_millis(500))
    .connect_blocking(server.url())
    .unwrap();
    assert_eq!(limiter.try_acquire().unwrap().source(), Source::Store);
    let before = scrape(&[&limiter]);
    server.kill();
    // The pooled connection is closed and no new one can be made: refused as unavailable.
    assert_eq!(
        limiter.try_acquire().unwrap_err().reason(),
        Reason::Unavailable
    );
    let away = scrape(&[&limiter]);
    server.restart();
    assert_eq!(limiter.try_acquire().unwrap().source(), Source::Store);
    assert_eq!(limiter.try_acquire().unwrap().source(), Source::Store);
    let after = scrape(&[&limiter]);
    let f = Some;
    assert_eq!(
        series(&before, "restarted"),
        [
            f(1.0),
            f(0.0),
            f(0.0),
            f(0.0),
            f(0.0),
            f(0.0),
            f(0.0),
            f(0.0)
        ]
    );
    assert_eq!(
        series(&away, "restarted"),
        [
            f(1.0),
            f(0.0),
            f(0.0),
            f(1.0),
            f(0.0),
            f(0.0),
            f(1.0),
            f(0.0)
        ]
    );
    assert_eq!(
        series(&after, "restarted"),
        [
            f(3.0),
            f(0.0),
            f(0.0),
            f(1.0),
            f(0.0),
            f(0.0),
            f(0.0),
            f(1.0)
        ]
    );
}

#[test]
fn the_fallback_counts_of_record_match_what_the_policy_answered() {
    // Nothing listens on this port: every call falls back.
    let refusing = support::Refusing::bind();
    let admit = ritmo_redis::builder("fb-admit", Config::new(10, Duration::from_secs(1)).unwrap())
        .timeout(Duration::from_millis(100))
        .on_unavailable(FailurePolicy::Admit)
        .connect_blocking(refusing.url())
        .unwrap();
    let local = ritmo_redis::builder("fb-local", Config::new(10, Duration::from_secs(1)).unwrap())
        .timeout(Duration::from_millis(100))
        .on_unavailable(FailurePolicy::Local(
            Config::new(2, Duration::from_secs(60)).unwrap(),
        ))
        .connect_blocking(refusing.url())
        .unwrap();
    for _ in 0..3 {
        assert_eq!(admit.try_acquire().unwrap().source(), Source::Open);
    }
    local.try_acquire().unwrap();
    local.try_acquire().unwrap();
    assert_eq!(
        local.try_acquire().unwrap_err().reason(),
        Reason::NoPermitInTime
    );
    let text = scrape(&[&admit, &local]);
    let f = Some;
    assert_eq!(
        series(&text, "fb-admit"),
        [
            f(0.0),
            f(0.0),
            f(0.0),
            f(0.0),
            f(3.0),
            f(0.0),
            f(1.0),
            f(0.0)
        ]
    );
    assert_eq!(
        series(&text, "fb-local"),
        [
            f(0.0),
            f(0.0),
            f(0.0),
            f(0.0),
            f(0.0),
            f(3.0),
            f(1.0),
            f(0.0)
        ]
    );
}

#[test]
fn an_async_limiter_counts_its_answers_and_a_reconnect_after_the_server_restarts() {
    let Some(mut server) = support::Server::start() else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let limiter = runtime.block_on(async {
        ritmo_redis::builder(
            "async-restarted",
            Config::new(2, Duration::from_secs(60)).unwrap(),
        )
        .timeout(Duration::from_millis(500))
        .connect(server.url())
        .unwrap()
    });
    runtime.block_on(async {
        limiter.try_acquire().await.unwrap();
        limiter.try_acquire().await.unwrap();
        assert!(limiter.try_acquire().await.is_err());
    });
    let before = scrape(&[&limiter]);
    server.kill();
    runtime.block_on(async {
        assert_eq!(
            limiter.try_acquire().await.unwrap_err().reason(),
            Reason::Unavailable
        );
    });
    server.restart();
    // The connection manager reconnects in the background: the store answers again within a
    // generous deadline (its first answer is a full burst: the restarted server lost the state).
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let mut unavailable = 1.0;
    runtime.block_on(async {
        loop {
            match limiter.try_acquire().await {
                Ok(permit) => {
                    assert_eq!(permit.source(), Source::Store);
                    break;
                }
                Err(e) => {
                    assert_eq!(e.reason(), Reason::Unavailable);
                    unavailable += 1.0;
                    assert!(
                        std::time::Instant::now() < deadline,
                        "no answer after the restart"
                    );
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    });
    let after = scrape(&[&limiter]);
    let f = Some;
    assert_eq!(
        series(&before, "async-restarted"),
        [
            f(2.0),
            f(0.0),
            f(1.0),
            f(0.0),
            f(0.0),
            f(0.0),
            f(0.0),
            f(0.0)
        ]
    );
    assert_eq!(
        series(&after, "async-restarted"),
        [
            f(3.0),
            f(0.0),
            f(1.0),
            f(unavailable),
            f(0.0),
            f(0.0),
            f(0.0),
            f(1.0)
        ]
    );
}
