//! What a Prometheus scrape of ritmo's metrics reads: a short run of three limiters (one of them
//! several bands at once), then the exposition text, rendered without an HTTP listener.
//!
//! ```text
//! cargo run --example metrics --features metrics
//! ```

use std::time::Duration;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};
use ritmo::server::metrics::{self as ritmo_metrics, MetricsListener};
use ritmo::{AdvanceClock, Bands, Config, ManualClock, RateLimiter};

static METRICS: MetricsListener = MetricsListener::new();

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The application owns the recorder; a server would also serve `handle.render()` on /metrics.
    // Buckets make the wait time a Prometheus histogram (without them it renders as a summary).
    let recorder = PrometheusBuilder::new()
        .set_buckets_for_metric(
            Matcher::Full(ritmo_metrics::WAIT_SECONDS.to_owned()),
            &[0.001, 0.01, 0.1, 0.25, 0.5, 1.0, 5.0],
        )?
        .build_recorder();
    let handle = recorder.handle();
    metrics::set_global_recorder(recorder)?;
    ritmo_metrics::describe();

    // A fake clock keeps the output the same on every run.
    let clock = ManualClock::new();
    let search = RateLimiter::new("search", Config::new(10, Duration::from_secs(1))?, &clock)
        .with_listener(&METRICS);
    let geocoding = RateLimiter::new(
        "geocoding",
        Config::new(2, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1)),
        &clock,
    )
    .with_listener(&METRICS);
    let upstream = Bands::new(
        "upstream",
        [
            Config::new(5, Duration::from_secs(1))?,
            Config::new(8, Duration::from_secs(3600))?,
        ],
        &clock,
    )
    .with_listener(&METRICS);

    for _ in 0..3 {
        for _ in 0..12 {
            let _ = search.try_acquire(); // 10 pass, 2 are rejected
        }
        for _ in 0..3 {
            let _ = geocoding.acquire_with(&mut AdvanceClock); // the third waits 500 ms
        }
        for _ in 0..4 {
            let _ = upstream.try_acquire(); // the hourly band runs out in the second round
        }
        clock.advance(Duration::from_secs(1));
    }

    ritmo_metrics::record(&search);
    ritmo_metrics::record(&geocoding);
    ritmo_metrics::record_bands(&upstream);
    print!("{}", handle.render());
    Ok(())
}
