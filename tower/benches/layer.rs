//! The layer's cost per request beside tower_governor's, on the same axum app, in one run.
//!
//! ```sh
//! cargo bench -p ritmo-tower --features axum --bench layer            # measure, print ratios
//! cargo bench -p ritmo-tower --features axum --bench layer -- --test  # smoke: each runs once
//! scripts/tower-instructions                                          # instructions per request
//! ```
//!
//! Each iteration sends one request through the whole service stack with `oneshot` (a clone of
//! the router, the layer, routing, the handler, the response) and polls it once with a no-op
//! waker: every stack here answers on the first poll, so no runtime is measured. The layer's
//! overhead is a stack's time minus the same app under `tower::layer::util::Identity` (what axum
//! charges any layer: a boxed service and future); the ratio compares the two overheads. Both
//! limiters get a quota no run can spend (every request admitted) and read the same counter (TSC
//! through quanta): ritmo its `StdClock`, governor its `QuantaClock`.

use std::future::Future;
use std::hint::black_box;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::pin;
use std::sync::{Arc, LazyLock};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, SystemTime};

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::routing::get;
use criterion::Criterion;
use http::Request;
use ritmo_core::{Config, RateLimiter};
use ritmo_std::{IpKey, KeyedRateLimiter, StdClock};
use ritmo_tower::RateLimitLayer;
use ritmo_tower::key::{Global, PeerIp};
use tower::ServiceExt;
use tower::layer::util::Identity;
use tower_governor::GovernorLayer;
use tower_governor::governor::GovernorConfigBuilder;
use tower_governor::key_extractor::{GlobalKeyExtractor, PeerIpKeyExtractor};

/// A burst of `u32::MAX`, one permit per nanosecond: every measured request is admitted.
static UNLIMITED: LazyLock<RateLimiter<StdClock>> = LazyLock::new(|| {
    let config = Config::new(u32::MAX, Duration::from_nanos(u64::from(u32::MAX))).unwrap();
    RateLimiter::with_clock("bench", config, StdClock::new())
});

/// The same quota for each client IP.
static PER_IP: LazyLock<KeyedRateLimiter<IpKey>> = LazyLock::new(|| {
    let config = Config::new(u32::MAX, Duration::from_nanos(u64::from(u32::MAX))).unwrap();
    KeyedRateLimiter::new("bench", config, 1024)
});

fn app() -> Router {
    Router::new().route("/", get(|| async { "ok" }))
}

fn request() -> Request<Body> {
    let mut request = Request::get("/").body(Body::empty()).unwrap();
    request
        .extensions_mut()
        .insert(ConnectInfo(SocketAddr::from(([127, 0, 0, 1], 40000))));
    request
}

/// One request through `router`, polled once.
#[inline(always)]
fn send(router: &Router) {
    let future = pin!(router.clone().oneshot(request()));
    let mut cx = Context::from_waker(Waker::noop());
    match future.poll(&mut cx) {
        Poll::Ready(Ok(response)) => {
            debug_assert_eq!(response.status(), 200);
            black_box(response);
        }
        _ => panic!("the stack did not answer on the first poll"),
    }
}

/// Every stack, each router as `axum::serve` runs it: `into_make_service` calls
/// `with_state(())`, which turns each route (with its layers) into a service once, instead of once
/// per request as a `Router` used directly as a `Service` does before `with_state`.
fn stacks() -> Vec<(&'static str, Router)> {
    all_stacks()
        .into_iter()
        .map(|(name, router)| (name, router.with_state::<()>(())))
        .collect()
}

fn all_stacks() -> Vec<(&'static str, Router)> {
    vec![
        ("app_alone", app()),
        ("identity", app().layer(Identity::new())),
        (
            "ritmo",
            app().layer(RateLimitLayer::new(&*UNLIMITED, Global)),
        ),
        (
            "ritmo_no_fields",
            app().layer(RateLimitLayer::new(&*UNLIMITED, Global).admitted_fields(false)),
        ),
        (
            "tower_governor",
            app().layer(GovernorLayer::new(Arc::new(
                GovernorConfigBuilder::default()
                    .per_nanosecond(1)
                    .burst_size(u32::MAX)
                    .key_extractor(GlobalKeyExtractor)
                    .finish()
                    .unwrap(),
            ))),
        ),
        (
            "tower_governor_headers",
            app().layer(GovernorLayer::new(Arc::new(
                GovernorConfigBuilder::default()
                    .per_nanosecond(1)
                    .burst_size(u32::MAX)
                    .key_extractor(GlobalKeyExtractor)
                    .use_headers()
                    .finish()
                    .unwrap(),
            ))),
        ),
        (
            "ritmo_per_ip",
            app().layer(RateLimitLayer::new(&*PER_IP, PeerIp::new()).admitted_fields(false)),
        ),
        (
            "tower_governor_per_ip",
            app().layer(GovernorLayer::new(Arc::new(
                GovernorConfigBuilder::default()
                    .per_nanosecond(1)
                    .burst_size(u32::MAX)
                    .key_extractor(PeerIpKeyExtractor)
                    .finish()
                    .unwrap(),
            ))),
        ),
    ]
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("layer_admitted");
    for (name, router) in &stacks() {
        group.bench_function(*name, |b| b.iter(|| send(router)));
    }
    group.finish();
}

/// Where criterion writes: `$CRITERION_HOME`, else `$CARGO_TARGET_DIR/criterion`, else the
/// workspace's `target/criterion`.
fn output_directory() -> PathBuf {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return home.into();
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"));
    target.join("criterion")
}

fn median_ns(dir: &Path, function: &str, since: SystemTime) -> Option<f64> {
    let path = dir
        .join("layer_admitted")
        .join(function)
        .join("new/estimates.json");
    let fresh = std::fs::metadata(&path).ok()?.modified().ok()? >= since;
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).ok()?).ok()?;
    fresh.then(|| json["median"]["point_estimate"].as_f64())?
}

fn print_ratios(dir: &Path, since: SystemTime) {
    let Some(base) = median_ns(dir, "identity", since) else {
        return;
    };
    println!("\nmedian ns per request; overhead = stack - identity layer ({base:.1} ns)");
    let overhead = |f: &str| median_ns(dir, f, since).map(|t| (t, t - base));
    for (ours, theirs) in [
        ("ritmo", "tower_governor_headers"),
        ("ritmo_no_fields", "tower_governor"),
        ("ritmo_per_ip", "tower_governor_per_ip"),
    ] {
        if let (Some((a, oa)), Some((b, ob))) = (overhead(ours), overhead(theirs)) {
            println!(
                "{ours:<16} {a:>8.1} (+{oa:>6.1})   {theirs:<23} {b:>8.1} (+{ob:>6.1})   overhead ratio {:.2}",
                oa / ob
            );
        }
    }
}

/// The same stacks measured in interleaved rounds (each round runs every stack once, in a rotating
/// order), keeping each stack's fastest round: on a shared machine, load that comes and goes hits
/// every stack alike, and the minimum is the run least disturbed by it.
fn interleaved(rounds: usize, per_round: u32) {
    let stacks = stacks();
    let mut best = vec![f64::INFINITY; stacks.len()];
    for round in 0..rounds {
        for i in 0..stacks.len() {
            let k = (i + round) % stacks.len();
            let router = &stacks[k].1;
            let start = std::time::Instant::now();
            for _ in 0..per_round {
                send(router);
            }
            let ns = start.elapsed().as_nanos() as f64 / f64::from(per_round);
            best[k] = best[k].min(ns);
        }
    }
    // Net of the identity layer: what any layer on `Router::layer` costs axum is not the layer's.
    let base = best[1];
    println!(
        "\ninterleaved: {rounds} rounds of {per_round} requests per stack, fastest round, \
         overhead net of the identity layer"
    );
    for ((name, _), ns) in stacks.iter().zip(&best) {
        println!("{name:<24} {ns:>8.1} ns  overhead {:>7.1} ns", ns - base);
    }
    let overhead = |name: &str| {
        let i = stacks.iter().position(|(n, _)| *n == name).unwrap();
        best[i] - base
    };
    println!(
        "overhead ratio ritmo/tower_governor_headers {:.2}, ritmo_no_fields/tower_governor {:.2}, \
         ritmo_per_ip/tower_governor_per_ip {:.2}",
        overhead("ritmo") / overhead("tower_governor_headers"),
        overhead("ritmo_no_fields") / overhead("tower_governor"),
        overhead("ritmo_per_ip") / overhead("tower_governor_per_ip")
    );
}

/// `n` requests through `router`: the loop `scripts/tower-instructions` counts under callgrind.
#[inline(never)]
fn measured_loop(router: &Router, n: u32) {
    for _ in 0..n {
        send(black_box(router));
    }
}

/// `layer count <stack> <n>`: runs `n` requests through one stack (after one warm-up request),
/// for callgrind. Prints nothing on success.
fn count(args: &[String]) {
    let (Some(name), Some(n)) = (args.get(2), args.get(3).and_then(|n| n.parse().ok())) else {
        eprintln!("usage: layer count <stack> <requests>");
        std::process::exit(2);
    };
    let Some((_, router)) = stacks().into_iter().find(|(s, _)| s == name) else {
        eprintln!("unknown stack {name}");
        std::process::exit(2);
    };
    send(&router);
    measured_loop(&router, n);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("count") {
        return count(&args);
    }
    let smoke = args.iter().any(|a| a == "--test");
    let since = SystemTime::now() - Duration::from_secs(1);
    let dir = output_directory();
    let mut c = Criterion::default()
        .output_directory(&dir)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(40)
        .configure_from_args();
    bench(&mut c);
    c.final_summary();
    print_ratios(&dir, since);
    if smoke {
        interleaved(1, 10);
    } else {
        interleaved(30, 20_000);
    }
}
