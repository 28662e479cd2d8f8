//! Adopting a server's announced policy, on tokio's paused clock: the client in front of a
//! ritmo-tower server (in process, on the same paused clock, so every instant is exact).

use std::convert::Infallible;
use std::time::Duration;

use http::{Request, Response, StatusCode};
use ritmo_client::{ClientLayer, Outbound};
use ritmo_core::{Config, RateLimiter};
use ritmo_std::TokioClock;
use ritmo_tower::RateLimitLayer;
use ritmo_tower::key::Global;
use tower::{Layer, ServiceExt, service_fn};

/// Sends `n` requests one after the other, each as soon as the client lets it, to a server
/// allowing 5 per second that sends its fields only on its 429s; returns the statuses.
async fn statuses(adopt: bool, n: usize) -> (Vec<u16>, ritmo_client::Stats) {
    let server_quota = Config::new(5, Duration::from_secs(1)).unwrap();
    let limiter: &'static RateLimiter<TokioClock> = Box::leak(Box::new(RateLimiter::with_clock(
        "api",
        server_quota,
        TokioClock::new(),
    )));
    let server = RateLimitLayer::new(limiter, Global)
        .admitted_fields(false)
        .layer(service_fn(|_: Request<()>| async {
            Ok::<_, Infallible>(Response::new(String::new()))
        }));
    let config = Config::new(100, Duration::from_secs(1))
        .unwrap()
        .with_max_wait(Duration::from_secs(3));
    let outbound = Outbound::per_host("client", config)
        .adopt_policies(adopt)
        .build();
    let client = ClientLayer::new(outbound.clone()).layer(server);
    let mut out = Vec::new();
    for _ in 0..n {
        let req = Request::get("http://api.test/").body(()).unwrap();
        let response = client
            .clone()
            .oneshot(req)
            .await
            .expect("sent within max_wait");
        out.push(response.status().as_u16());
    }
    (out, outbound.stats())
}

#[tokio::test(start_paused = true)]
async fn an_adopted_policy_leaves_only_the_first_429() {
    let (got, stats) = statuses(true, 30).await;
    assert_eq!(got.iter().filter(|&&s| s == 429).count(), 1, "{got:?}");
    assert_eq!(
        got[5], 429,
        "the burst of 5, then the 429 that announces q=5;w=1"
    );
    assert!(
        stats.waited_local > 0,
        "paced by the adopted policy: {stats:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn without_adoption_each_refill_costs_a_429() {
    // The same run without the option: the server's words only hold the client until each
    // reset, so it learns the quota again after every refill (what the option is for).
    let (got, _) = statuses(false, 30).await;
    assert!(got.iter().filter(|&&s| s == 429).count() > 1, "{got:?}");
}

#[tokio::test(start_paused = true)]
async fn a_looser_policy_never_speeds_the_client_up() {
    let config = Config::new(2, Duration::from_secs(10)).unwrap();
    let outbound = Outbound::global("client", config)
        .adopt_policies(true)
        .build();
    let loose = service_fn(|_: Request<()>| async {
        let mut r = Response::new(());
        r.headers_mut()
            .insert("ratelimit-policy", "\"api\";q=1000;w=1".parse().unwrap());
        Ok::<_, Infallible>(r)
    });
    let client = ClientLayer::new(outbound).layer(loose);
    for _ in 0..2 {
        let req = Request::get("http://api.test/").body(()).unwrap();
        assert_eq!(
            client.clone().oneshot(req).await.unwrap().status(),
            StatusCode::OK
        );
    }
    let req = Request::get("http://api.test/").body(()).unwrap();
    let err = client.oneshot(req).await.unwrap_err();
    assert_eq!(
        err.limited().unwrap().cause(),
        ritmo_client::Cause::LocalQuota
    );
}

#[tokio::test(start_paused = true)]
async fn an_announced_policy_changed_later_is_reconfigured_not_refilled() {
    // The server announces 4 per 10 s, then (from the 4th response) 2 per 10 s.
    let config = Config::new(100, Duration::from_secs(1)).unwrap();
    let outbound = Outbound::global("client", config)
        .adopt_policies(true)
        .build();
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let server = {
        let calls = calls.clone();
        service_fn(move |_: Request<()>| {
            let n = calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            async move {
                let policy = if n < 3 {
                    "\"api\";q=4;w=10"
                } else {
                    "\"api\";q=2;w=10"
                };
                let mut r = Response::new(());
                r.headers_mut()
                    .insert("ratelimit-policy", policy.parse().unwrap());
                Ok::<_, Infallible>(r)
            }
        })
    };
    let client = ClientLayer::new(outbound).layer(server);
    let send = || {
        client
            .clone()
            .oneshot(Request::get("http://api.test/").body(()).unwrap())
    };
    send().await.unwrap(); // adopts 4 per 10 s (this one was sent before: not charged to it)
    send().await.unwrap(); // 3 left
    send().await.unwrap(); // 2 left
    send().await.unwrap(); // 1 left; now 2 per 10 s: min(1, 2) = 1, no fresh burst of 2
    send().await.unwrap(); // the last one
    assert!(
        send().await.is_err(),
        "a reconfigure hands out no fresh burst"
    );
    // 5 s later, 2 per 10 s has given one permit back (4 per 10 s would have given two).
    tokio::time::sleep(Duration::from_secs(5)).await;
    send().await.unwrap();
    let err = send().await.unwrap_err();
    assert_eq!(
        err.limited().unwrap().cause(),
        ritmo_client::Cause::LocalQuota
    );
}
