//! A bounded load test on loopback: several clients per IP flood a real server for a fixed time
//! (2 s; it stops by itself), each IP limited to its own quota. Checked afterwards: for every key,
//! the admissions (at the instants the limiter decided them) never exceed
//! `permits + floor(w / T)` in any window `w`; every request got 200 or 429 and nothing else; a
//! polite client sending below its quota was never throttled.

mod support;

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::routing::get;
use ritmo_core::{Clock, Config};
use ritmo_std::KeyedReservation;
use ritmo_std::StdClock;
use ritmo_std::{IpKey, KeyedRateLimiter};
use ritmo_tower::key::PeerIp;
use ritmo_tower::{Decision, Policy, RateLimitLayer, Status, Store};
use support::net::{client, get as fetch, serve};

const RUN: Duration = Duration::from_secs(2);
const PERMITS: u32 = 40;
const PERIOD: Duration = Duration::from_secs(1);

type Keyed = &'static KeyedRateLimiter<IpKey, StdClock>;

/// The per-IP keyed limiter, recording for each admission the clock reading it decided at.
#[derive(Clone)]
struct Recording {
    inner: Keyed,
    admitted: Arc<Mutex<HashMap<IpKey, Vec<u64>>>>,
}

impl Store for Recording {
    type Key = IpKey;
    type Permit = KeyedReservation<'static, IpKey, StdClock>;
    type Acquire = <Keyed as Store>::Acquire;

    fn policy(&self) -> Policy {
        Store::policy(&self.inner)
    }

    fn acquire(
        &self,
        key: &IpKey,
        permits: u32,
        max_wait: Option<Duration>,
    ) -> Decision<Self::Permit, Self::Acquire> {
        let decision = Store::acquire(&self.inner, key, permits, max_wait);
        if let Decision::Now(Ok(grant)) = &decision {
            let mut admitted = self.admitted.lock().unwrap();
            admitted.entry(*key).or_default().push(grant.permit.slot());
        }
        decision
    }

    fn status(&self, key: &IpKey) -> Option<Status> {
        Store::status(&self.inner, key)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn admitted_per_key_never_exceed_the_bound_and_nothing_else_is_throttled() {
    let clock = StdClock::new();
    let config = Config::new(PERMITS, PERIOD).unwrap();
    let store = Recording {
        inner: Box::leak(Box::new(KeyedRateLimiter::with_clock(
            "load",
            config,
            64,
            clock.clone(),
        ))),
        admitted: Arc::default(),
    };
    let app = Router::new().route("/", get(|| async { "ok" }));
    let addr = serve(app.layer(RateLimitLayer::new(store.clone(), PeerIp::new()))).await;

    let counts: Arc<Mutex<HashMap<(IpAddr, u16), u64>>> = Arc::default();
    let deadline = tokio::time::Instant::now() + RUN;
    let mut tasks = Vec::new();
    // 4 flooding IPs with 2 connections each, as fast as they can.
    for ip in 10..14u8 {
        for _ in 0..2 {
            let counts = Arc::clone(&counts);
            tasks.push(tokio::spawn(async move {
                let local = IpAddr::V4(Ipv4Addr::new(127, 0, 0, ip));
                let http = client(local);
                while tokio::time::Instant::now() < deadline {
                    let status = fetch(&http, addr, "/").await.status().as_u16();
                    *counts.lock().unwrap().entry((local, status)).or_default() += 1;
                }
            }));
        }
    }
    // A polite client: one request every 100 ms, a quarter of its quota.
    let polite = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 99));
    let polite_429 = Arc::new(AtomicU64::new(0));
    {
        let polite_429 = Arc::clone(&polite_429);
        let counts = Arc::clone(&counts);
        tasks.push(tokio::spawn(async move {
            let http = client(polite);
            let mut tick = tokio::time::interval(Duration::from_millis(100));
            while tokio::time::Instant::now() < deadline {
                tick.tick().await;
                let status = fetch(&http, addr, "/").await.status().as_u16();
                if status == 429 {
                    polite_429.fetch_add(1, Ordering::Relaxed);
                }
                *counts.lock().unwrap().entry((polite, status)).or_default() += 1;
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }

    let counts = counts.lock().unwrap().clone();
    let admitted = store.admitted.lock().unwrap().clone();
    assert_eq!(
        polite_429.load(Ordering::Relaxed),
        0,
        "the polite client was throttled"
    );
    assert!(
        counts
            .keys()
            .all(|(_, status)| *status == 200 || *status == 429),
        "{counts:?}"
    );
    // T in the limiter's clock ticks, rounded up as the limiter does.
    let tick_hz = u128::from(clock.tick_rate().hz());
    let t = (PERIOD.as_nanos() * tick_hz).div_ceil(1_000_000_000 * u128::from(PERMITS));
    for (ip, slots) in &admitted {
        let ok = counts.get(&(ip.ip(), 200)).copied().unwrap_or(0);
        assert_eq!(
            slots.len() as u64,
            ok,
            "{ip}: every admission was answered 200"
        );
        let mut slots = slots.clone();
        slots.sort_unstable();
        // Every window that starts and ends at an admission: the tightest ones.
        for i in 0..slots.len() {
            for j in i..slots.len() {
                let w = u128::from(slots[j] - slots[i]);
                let bound = u128::from(PERMITS) + w / t;
                let n = (j - i + 1) as u128;
                assert!(
                    n <= bound,
                    "{ip}: {n} admitted within {w} ticks, bound {bound}"
                );
            }
        }
        if ip.ip() != polite {
            // The floods were limited, and the accounting adds up.
            assert!(
                counts.get(&(ip.ip(), 429)).copied().unwrap_or(0) > 0,
                "{ip} was never limited"
            );
        }
    }
    assert_eq!(admitted.len(), 5, "{counts:?}");
    let total: u64 = counts.values().sum();
    println!("{total} requests in {RUN:?}: {counts:?}");
}
