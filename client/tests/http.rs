//! Over real HTTP on 127.0.0.1: a scripted server answers with each field syntax (and broken
//! ones), and the client behind `ClientLayer` obeys or ignores each as documented.

mod support;

use std::net::SocketAddr;
use std::time::{Duration, SystemTime};

use http::{Method, Request, StatusCode};
use hyper_util::client::legacy::{Client, connect::HttpConnector};
use ritmo_client::{Cause, ClientLayer, CloneBody, HostKey, Outbound, RateLimited};
use ritmo_core::Config;
use support::{Reply, hyper_client, serve};
use tower::{Layer, ServiceExt};

type Svc = RateLimited<Client<HttpConnector, String>, HostKey, CloneBody>;

fn client(config: Config, max_hold: Option<Duration>, retry: bool) -> (Outbound<HostKey>, Svc) {
    let mut builder = Outbound::per_host("backend", config).retry_once(retry);
    if let Some(cap) = max_hold {
        builder = builder.max_hold(cap);
    }
    let outbound = builder.build();
    let svc = ClientLayer::new(outbound.clone())
        .replay_with(CloneBody)
        .layer(hyper_client());
    (outbound, svc)
}

fn roomy(max_wait: Duration) -> Config {
    Config::new(100, Duration::from_secs(1))
        .unwrap()
        .with_max_wait(max_wait)
}

fn get(addr: SocketAddr) -> Request<String> {
    Request::get(format!("http://{addr}/x"))
        .body(String::new())
        .unwrap()
}

fn unix_in(secs: i64) -> String {
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    (now as i64 + secs).to_string()
}

fn http_date_in(secs: u64) -> String {
    httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(secs))
}

/// Sends the scripted first reply's request, then one more at once with `max_wait` zero:
/// returns the second call's refusal (if any) and how many requests reached the server.
async fn second_after(
    first: Reply,
    max_hold: Option<Duration>,
) -> (Option<ritmo_client::Limited>, usize) {
    let (addr, script) = serve(vec![first]).await;
    let (_, svc) = client(roomy(Duration::ZERO), max_hold, false);
    let r1 = svc.clone().oneshot(get(addr)).await.expect("first is sent");
    drop(r1);
    let second = svc.oneshot(get(addr)).await;
    let limited = match second {
        Ok(_) => None,
        Err(e) => Some(*e.limited().expect("a refusal, not a transport error")),
    };
    (limited, script.count())
}

#[tokio::test]
async fn obeys_every_syntax() {
    let s = Duration::from_secs;
    let cases: Vec<(&str, Reply, Option<Duration>, Duration, Duration)> = vec![
        (
            "429 Retry-After seconds",
            Reply::new(429).header("retry-after", "2"),
            None,
            s(1),
            s(2),
        ),
        (
            "503 Retry-After seconds",
            Reply::new(503).header("retry-after", "2"),
            None,
            s(1),
            s(2),
        ),
        (
            "429 Retry-After HTTP-date",
            Reply::new(429).header("retry-after", http_date_in(3)),
            None,
            s(1),
            s(3),
        ),
        (
            "RateLimit r=0",
            Reply::new(200).header("ratelimit", "\"api\";r=0;t=2"),
            None,
            s(1),
            s(2),
        ),
        (
            "RateLimit, several policies, a partition key",
            Reply::new(200).header("ratelimit", "\"a\";r=5;t=1, \"b\";r=0;t=2;pk=:AQI=:"),
            None,
            s(1),
            s(2),
        ),
        (
            "RateLimit over two field lines, token names",
            Reply::new(200)
                .header("ratelimit", "a;r=5;t=1")
                .header("ratelimit", "b;r=0;t=2"),
            None,
            s(1),
            s(2),
        ),
        (
            "X-RateLimit seconds",
            Reply::new(200)
                .header("x-ratelimit-remaining", "0")
                .header("x-ratelimit-reset", "2"),
            None,
            s(1),
            s(2),
        ),
        (
            "X-RateLimit Unix time",
            Reply::new(200)
                .header("x-ratelimit-remaining", "0")
                .header("x-ratelimit-reset", unix_in(3)),
            None,
            s(1),
            s(3),
        ),
        (
            "duplicate, conflicting Retry-After: the longest",
            Reply::new(429)
                .header("retry-after", "1")
                .header("retry-after", "2"),
            None,
            s(1),
            s(2),
        ),
        (
            "fractional Retry-After, rounded up",
            Reply::new(429).header("retry-after", "1.5"),
            None,
            s(1),
            Duration::from_millis(1500),
        ),
        (
            "enormous Retry-After, capped at max_hold",
            Reply::new(429).header("retry-after", "99999999999999999999999"),
            Some(s(2)),
            s(1),
            s(2),
        ),
        (
            "two hours, capped at the default hour",
            Reply::new(429).header("retry-after", "7200"),
            None,
            s(3590),
            s(3600),
        ),
        (
            "RateLimit-Policy alongside, Retry-After decides",
            Reply::new(429)
                .header("ratelimit-policy", "\"api\";q=5;w=10")
                .header("retry-after", "2"),
            None,
            s(1),
            s(2),
        ),
    ];
    for (name, first, cap, low, high) in cases {
        let (limited, sent) = second_after(first, cap).await;
        let limited = limited.unwrap_or_else(|| panic!("{name}: the second request was sent"));
        assert_eq!(sent, 1, "{name}: nothing is sent while held");
        assert_eq!(limited.cause(), Cause::ServerHold, "{name}");
        let ra = limited.retry_after();
        assert!(
            ra > low && ra <= high,
            "{name}: retry_after {ra:?} not in ({low:?}, {high:?}]"
        );
    }
}

#[tokio::test]
async fn ignores_what_it_cannot_read() {
    let cases: Vec<(&str, Reply)> = vec![
        ("429 without fields", Reply::new(429)),
        (
            "Retry-After a word",
            Reply::new(429).header("retry-after", "soon"),
        ),
        (
            "Retry-After negative",
            Reply::new(429).header("retry-after", "-5"),
        ),
        (
            "Retry-After exponent",
            Reply::new(429).header("retry-after", "1e3"),
        ),
        (
            "Retry-After past date",
            Reply::new(429).header("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT"),
        ),
        (
            "Retry-After binary",
            Reply::new(503).header("retry-after", b"\x80\xff"),
        ),
        (
            "Retry-After on a 200",
            Reply::new(200).header("retry-after", "5"),
        ),
        (
            "Retry-After on a 301",
            Reply::new(301).header("retry-after", "5"),
        ),
        (
            "RateLimit r=0 without t",
            Reply::new(200).header("ratelimit", "\"a\";r=0"),
        ),
        (
            "RateLimit that does not parse",
            Reply::new(200).header("ratelimit", "\"a\";r=0;t=2, (("),
        ),
        (
            "RateLimit negative t",
            Reply::new(200).header("ratelimit", "\"a\";r=0;t=-2"),
        ),
        (
            "RateLimit decimal t",
            Reply::new(200).header("ratelimit", "\"a\";r=0;t=2.5"),
        ),
        (
            "RateLimit quota left",
            Reply::new(200).header("ratelimit", "\"a\";r=3;t=9"),
        ),
        (
            "RateLimit-Policy alone",
            Reply::new(200).header("ratelimit-policy", "\"a\";q=1;w=60"),
        ),
        (
            "X-RateLimit past Unix time",
            Reply::new(200)
                .header("x-ratelimit-remaining", "0")
                .header("x-ratelimit-reset", "1600000000"),
        ),
        (
            "X-RateLimit negative remaining",
            Reply::new(200)
                .header("x-ratelimit-remaining", "-1")
                .header("x-ratelimit-reset", "2"),
        ),
        (
            "X-RateLimit garbage reset",
            Reply::new(200)
                .header("x-ratelimit-remaining", "0")
                .header("x-ratelimit-reset", "abc"),
        ),
        (
            "X-RateLimit reset without remaining",
            Reply::new(200).header("x-ratelimit-reset", "2"),
        ),
    ];
    for (name, first) in cases {
        let (limited, sent) = second_after(first, None).await;
        assert!(limited.is_none(), "{name}: refused {limited:?}");
        assert_eq!(sent, 2, "{name}");
    }
}

#[tokio::test]
async fn waits_out_a_hold_within_max_wait() {
    let (addr, script) = serve(vec![Reply::new(429).header("retry-after", "1")]).await;
    let (outbound, svc) = client(roomy(Duration::from_secs(3)), None, false);
    let first = svc.clone().oneshot(get(addr)).await.unwrap();
    assert_eq!(first.status(), StatusCode::TOO_MANY_REQUESTS);
    let second = svc.oneshot(get(addr)).await.unwrap();
    assert_eq!(second.status(), StatusCode::OK);
    let at = script.arrivals();
    assert!(
        at[1] - at[0] >= Duration::from_secs(1),
        "sent while held: {:?}",
        at[1] - at[0]
    );
    let stats = outbound.stats();
    assert_eq!((stats.sent, stats.waited_server, stats.holds), (2, 1, 1));
}

#[tokio::test]
async fn retries_a_429_once_for_idempotent_methods() {
    let (addr, script) = serve(vec![Reply::new(429).header("retry-after", "1")]).await;
    let (outbound, svc) = client(roomy(Duration::from_secs(3)), None, true);
    let response = svc.clone().oneshot(get(addr)).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK, "the retry's answer");
    let at = script.arrivals();
    assert_eq!(at.len(), 2);
    assert!(at[1] - at[0] >= Duration::from_secs(1));
    assert_eq!(outbound.stats().retried, 1);

    // A POST is not repeated unless the user says it may be.
    let (addr, script) = serve(vec![Reply::new(429).header("retry-after", "1")]).await;
    let (_, svc) = client(roomy(Duration::from_secs(3)), None, true);
    let post = Request::builder()
        .method(Method::POST)
        .uri(format!("http://{addr}/x"))
        .body("order".to_string())
        .unwrap();
    let response = svc.oneshot(post).await.unwrap();
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(script.count(), 1);

    // A wait beyond max_wait is not retried: the 429 comes back at once.
    let (addr, script) = serve(vec![Reply::new(429).header("retry-after", "5")]).await;
    let (_, svc) = client(roomy(Duration::from_secs(1)), None, true);
    let response = svc.oneshot(get(addr)).await.unwrap();
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(script.count(), 1);
}

#[tokio::test]
async fn local_quota_refuses_without_sending() {
    let (addr, script) = serve(Vec::new()).await;
    let config = Config::new(1, Duration::from_secs(10)).unwrap();
    let (outbound, svc) = client(config, None, false);
    svc.clone().oneshot(get(addr)).await.unwrap();
    let err = svc.oneshot(get(addr)).await.unwrap_err();
    let limited = err.limited().unwrap();
    assert_eq!(limited.cause(), Cause::LocalQuota);
    assert!(limited.retry_after() > Duration::from_secs(9));
    assert_eq!(script.count(), 1);
    assert_eq!(outbound.stats().limited_local, 1);
}

#[tokio::test]
async fn holds_are_per_host() {
    let (held, held_script) = serve(vec![Reply::new(429).header("retry-after", "30")]).await;
    let (free, free_script) = serve(Vec::new()).await;
    let (outbound, svc) = client(roomy(Duration::ZERO), None, false);
    svc.clone().oneshot(get(held)).await.unwrap();
    assert!(svc.clone().oneshot(get(held)).await.is_err());
    assert_eq!(
        svc.oneshot(get(free)).await.unwrap().status(),
        StatusCode::OK
    );
    assert_eq!((held_script.count(), free_script.count()), (1, 1));
    assert_eq!(outbound.keys_held(), 1);
}
