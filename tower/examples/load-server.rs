//! The server `scripts/load` measures: one axum app answering `"ok"` on `/`, under one stack
//! (no layer, an identity layer, ritmo-tower or tower_governor, global or per client IP, with or
//! without the rate-limit fields) and one quota. It binds 127.0.0.1 only, prints its port on the
//! first line, and serves until killed.
//!
//! ```sh
//! cargo run --release -p ritmo-tower --features axum --example load-server -- ritmo_per_ip admit
//! ```
//!
//! Stacks: `app_alone`, `identity`, `ritmo`, `ritmo_no_fields`, `ritmo_per_ip`,
//! `ritmo_per_ip_no_fields`, `tower_governor`, `tower_governor_headers`, `tower_governor_per_ip`,
//! `tower_governor_per_ip_headers`. Quotas:
//! - `admit`: a quota no load spends (a burst of `u32::MAX`, one permit per nanosecond);
//! - `refuse`: 500 per second (a burst of 500, then one every 2 ms): a flood of tens of thousands
//!   of requests per second is about 99 % refused;
//! - `full`: per client IP, 10 per hour, in a store already holding `FULL` live clients (ritmo's
//!   `max_keys` is `FULL`: each new address is refused for want of room; tower_governor's store
//!   has no bound, so it admits each new address and grows).
//!
//! Workers: `LOAD_WORKERS` (default 1), so that the load generator keeps a core of its own on a
//! two-core machine.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::routing::get;
use ritmo_core::{Config, RateLimiter};
use ritmo_std::{IpKey, KeyedRateLimiter, StdClock};
use ritmo_tower::RateLimitLayer;
use ritmo_tower::key::{Global, PeerIp};
use tower::layer::util::Identity;
use tower_governor::GovernorLayer;
use tower_governor::governor::GovernorConfigBuilder;
use tower_governor::key_extractor::{GlobalKeyExtractor, PeerIpKeyExtractor};

/// Live clients a `full` store holds before the load starts.
const FULL: u32 = 100_000;

/// A client the load never uses: 10.x.y.z.
fn filler(i: u32) -> IpAddr {
    IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + i))
}

/// ritmo's config and tower_governor's (period per permit in ns, burst) for `quota`.
fn quota(quota: &str) -> Result<(Config, u64, u32), String> {
    let hour = Duration::from_secs(3600);
    match quota {
        "admit" => Ok((
            Config::new(u32::MAX, Duration::from_nanos(u64::from(u32::MAX)))
                .map_err(|e| e.to_string())?,
            1,
            u32::MAX,
        )),
        "refuse" => Ok((
            Config::new(500, Duration::from_secs(1)).map_err(|e| e.to_string())?,
            2_000_000,
            500,
        )),
        "full" => Ok((
            Config::new(10, hour).map_err(|e| e.to_string())?,
            hour.as_nanos() as u64 / 10,
            10,
        )),
        other => Err(format!("unknown quota {other:?} (admit, refuse, full)")),
    }
}

fn app() -> Router {
    Router::new().route("/", get(|| async { "ok" }))
}

/// The app under `stack` with `quota`.
fn stack(stack: &str, which: &str) -> Result<Router, String> {
    let (config, nanos, burst) = quota(which)?;
    let full = which == "full";
    let global = || -> &'static RateLimiter<StdClock> {
        Box::leak(Box::new(RateLimiter::with_clock(
            "load",
            config,
            StdClock::new(),
        )))
    };
    let per_ip = || -> &'static KeyedRateLimiter<IpKey> {
        let max = if full { FULL as usize } else { 1_000_000 };
        let store = Box::leak(Box::new(KeyedRateLimiter::new("load", config, max)));
        if full {
            for i in 0..FULL {
                let _ = store.try_acquire(&IpKey::from(filler(i)));
            }
        }
        store
    };
    macro_rules! governor {
        ($extractor:expr, $headers:expr) => {{
            let mut builder = GovernorConfigBuilder::default();
            builder
                .per_nanosecond(nanos)
                .burst_size(burst)
                .key_extractor($extractor);
            if $headers {
                let config = builder.use_headers().finish().ok_or("a governor config")?;
                if full {
                    for i in 0..FULL {
                        let _ = config.limiter().check_key(&filler(i));
                    }
                }
                app().layer(GovernorLayer::new(Arc::new(config)))
            } else {
                let config = builder.finish().ok_or("a governor config")?;
                if full {
                    for i in 0..FULL {
                        let _ = config.limiter().check_key(&filler(i));
                    }
                }
                app().layer(GovernorLayer::new(Arc::new(config)))
            }
        }};
    }
    Ok(match stack {
        "app_alone" => app(),
        "identity" => app().layer(Identity::new()),
        "ritmo" => app().layer(RateLimitLayer::new(global(), Global)),
        "ritmo_no_fields" => {
            app().layer(RateLimitLayer::new(global(), Global).admitted_fields(false))
        }
        "ritmo_per_ip" => app().layer(RateLimitLayer::new(per_ip(), PeerIp::new())),
        "ritmo_per_ip_no_fields" => {
            app().layer(RateLimitLayer::new(per_ip(), PeerIp::new()).admitted_fields(false))
        }
        "tower_governor" => governor!(GlobalKeyExtractor, false),
        "tower_governor_headers" => governor!(GlobalKeyExtractor, true),
        "tower_governor_per_ip" => governor!(PeerIpKeyExtractor, false),
        "tower_governor_per_ip_headers" => governor!(PeerIpKeyExtractor, true),
        other => return Err(format!("unknown stack {other:?}")),
    })
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(name), Some(which)) = (args.first(), args.get(1)) else {
        eprintln!("usage: load-server <stack> <admit|refuse|full>");
        std::process::exit(2);
    };
    let router = match stack(name, which) {
        Ok(router) => router,
        Err(e) => {
            eprintln!("load-server: {e}");
            std::process::exit(2);
        }
    };
    let workers = std::env::var("LOAD_WORKERS")
        .ok()
        .and_then(|w| w.parse().ok())
        .unwrap_or(1);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
            .await
            .expect("bind 127.0.0.1");
        let port = listener.local_addr().expect("an address").port();
        println!("{port}");
        axum::serve(
            listener,
            router.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .await
        .expect("serve");
    });
}
