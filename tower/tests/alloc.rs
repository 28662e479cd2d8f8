//! Heap allocations per request of the layer, beside tower_governor's, on the same axum app: each
//! stack's count less the same app's under `tower::layer::util::Identity` (what any layer given to
//! axum's `Router::layer` costs axum) is the layer's own. Prints the table benches/RESULTS.md
//! keeps, and fails if ritmo's layer allocates for an admitted request through the global or the
//! per-IP layer, `&'static` or `Arc`, taking its permit for good or holding a reservation that a
//! classifier may refund.
//!
//! Its own test binary without the test harness (`harness = false`): the counting allocator
//! (`stats_alloc`'s, since ritmo forbids `unsafe` and a `GlobalAlloc` needs it) counts every
//! thread, so nothing else may run while a stack is measured.
//!
//! `cargo test -p ritmo-tower --features axum --test alloc`

use std::alloc::System;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::routing::get;
use http::Request;
use ritmo_core::{Config, RateLimiter};
use ritmo_std::{IpKey, KeyedRateLimiter, StdClock};
use ritmo_tower::RateLimitLayer;
use ritmo_tower::charge::not_304_or_5xx;
use ritmo_tower::key::{Global, PeerIp};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};
use tower::ServiceExt;
use tower::layer::util::Identity;
use tower_governor::GovernorLayer;
use tower_governor::governor::GovernorConfigBuilder;
use tower_governor::key_extractor::{GlobalKeyExtractor, PeerIpKeyExtractor};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Requests per stack.
const REQUESTS: u64 = 1000;

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

/// One request through `router`, polled once; its status.
fn send(router: &Router) -> u16 {
    let future = pin!(router.clone().oneshot(request()));
    match future.poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(Ok(response)) => response.status().as_u16(),
        _ => panic!("the stack did not answer on the first poll"),
    }
}

/// Allocations per request through `router` (after one unmeasured request), and the status
/// every measured request got.
fn allocations(router: &Router) -> (f64, u16) {
    send(router);
    let region = Region::new(GLOBAL);
    let mut status = 0;
    for _ in 0..REQUESTS {
        status = send(router);
    }
    let stats = region.change();
    (stats.allocations as f64 / REQUESTS as f64, status)
}

/// `permits` per `period`, on the server clock.
fn config(permits: u32, period: Duration) -> Config {
    Config::new(permits, period).unwrap()
}

/// A burst of `u32::MAX`, one permit per nanosecond: every request is admitted.
fn unlimited() -> Config {
    config(u32::MAX, Duration::from_nanos(u64::from(u32::MAX)))
}

/// One permit an hour: after the first, every request is refused.
fn one_an_hour() -> Config {
    config(1, Duration::from_secs(3600))
}

fn global(config: Config) -> RateLimiter<StdClock> {
    RateLimiter::with_clock("alloc", config, StdClock::new())
}

fn per_ip(config: Config) -> KeyedRateLimiter<IpKey> {
    KeyedRateLimiter::new("alloc", config, 1024)
}

fn leak<T>(value: T) -> &'static T {
    Box::leak(Box::new(value))
}

fn governor(per_ip: bool, burst: u32, period: Duration) -> Router {
    let mut builder = GovernorConfigBuilder::default();
    builder.period(period).burst_size(burst);
    if per_ip {
        let config = builder.key_extractor(PeerIpKeyExtractor).finish().unwrap();
        app().layer(GovernorLayer::new(Arc::new(config)))
    } else {
        let config = builder.key_extractor(GlobalKeyExtractor).finish().unwrap();
        app().layer(GovernorLayer::new(Arc::new(config)))
    }
}

/// Every stack, as `axum::serve` runs it (`with_state` once), for requests `admitted` or not.
fn stacks(admitted: bool) -> Vec<(&'static str, Router)> {
    let c = if admitted { unlimited() } else { one_an_hour() };
    let (burst, period) = if admitted {
        (u32::MAX, Duration::from_nanos(1))
    } else {
        (1, Duration::from_secs(3600))
    };
    let stacks = vec![
        ("identity", app().layer(Identity::new())),
        (
            "ritmo global &'static",
            app().layer(RateLimitLayer::new(leak(global(c)), Global)),
        ),
        (
            "ritmo global Arc",
            app().layer(RateLimitLayer::new(Arc::new(global(c)), Global)),
        ),
        (
            "ritmo per-IP &'static",
            app().layer(RateLimitLayer::new(leak(per_ip(c)), PeerIp::new())),
        ),
        (
            "ritmo per-IP Arc",
            app().layer(RateLimitLayer::new(Arc::new(per_ip(c)), PeerIp::new())),
        ),
        (
            "ritmo global Arc, charged by outcome",
            app().layer(RateLimitLayer::new(Arc::new(global(c)), Global).charge(not_304_or_5xx())),
        ),
        (
            "ritmo per-IP Arc, charged by outcome",
            app().layer(
                RateLimitLayer::new(Arc::new(per_ip(c)), PeerIp::new()).charge(not_304_or_5xx()),
            ),
        ),
        ("tower_governor global", governor(false, burst, period)),
        ("tower_governor per-IP", governor(true, burst, period)),
    ];
    stacks
        .into_iter()
        .map(|(name, router)| (name, router.with_state::<()>(())))
        .collect()
}

/// Waiting: 1 permit per 10 s with a `max_wait` of an hour: after the first, each request
/// reserves a slot and waits for it (one poll: pending; the future is then dropped, which gives
/// the slot back, so every request finds the same wait). The stack's whole count per request:
/// the app is not reached, so there is no identity count to take off.
fn waiting(router: &Router) -> f64 {
    let wait = || {
        let future = pin!(router.clone().oneshot(request()));
        let pending = future
            .poll(&mut Context::from_waker(Waker::noop()))
            .is_pending();
        assert!(pending, "a waiting request answered at once");
    };
    send(router);
    wait();
    let region = Region::new(GLOBAL);
    for _ in 0..REQUESTS {
        wait();
    }
    region.change().allocations as f64 / REQUESTS as f64
}

fn main() {
    // A waiting request sleeps on tokio's timer: a runtime to register it with, made before any
    // count.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let _entered = runtime.enter();
    let mut failed = Vec::new();
    println!("| stack | admitted (own) | refused (less identity's 200) | waiting (whole stack) |");
    println!("|---|---|---|---|");
    let admitted = stacks(true);
    let refused = stacks(false);
    let (identity, _) = allocations(&admitted[0].1);
    let (identity_refused, _) = allocations(&refused[0].1);
    let wait_config = config(1, Duration::from_secs(10)).with_max_wait(Duration::from_secs(3600));
    let waiting_stacks = [
        app().layer(RateLimitLayer::new(leak(global(wait_config)), Global)),
        app().layer(RateLimitLayer::new(Arc::new(global(wait_config)), Global)),
        app().layer(RateLimitLayer::new(
            leak(per_ip(wait_config)),
            PeerIp::new(),
        )),
        app().layer(RateLimitLayer::new(
            Arc::new(per_ip(wait_config)),
            PeerIp::new(),
        )),
    ];
    for (i, ((name, ok), (_, no))) in admitted.iter().zip(&refused).enumerate() {
        let (a, status) = allocations(ok);
        assert_eq!(status, 200, "{name}: admitted");
        let (r, status) = if i == 0 {
            (identity_refused, 429)
        } else {
            allocations(no)
        };
        assert_eq!(status, 429, "{name}: refused");
        let w = match waiting_stacks.get(i.wrapping_sub(1)) {
            Some(router) => format!("{:.2}", waiting(&router.clone().with_state::<()>(()))),
            None => "–".to_string(),
        };
        let own = a - identity;
        if i == 0 {
            println!("| {name} (the stack's own count) | {a:.2} | {identity_refused:.2} | – |");
        } else {
            println!("| {name} | {own:.2} | {:.2} | {w} |", r - identity_refused);
        }
        if name.starts_with("ritmo") && own != 0.0 {
            failed.push(format!(
                "{name}: {own} allocations of its own per admitted request"
            ));
        }
    }
    assert!(failed.is_empty(), "{failed:#?}");
}
