//! Every dialect a server sends, over real HTTP on 127.0.0.1, on tokio's paused clock: a
//! scripted server answers with one dialect, and the client holds that key exactly until the
//! reset the dialect names (the expected waits below are worked out from the fields' meaning,
//! not taken from the code), then sends again.
//!
//! The scripted replies carry their own `Date` (21 Oct 2015, years before the clock of the
//! machine running the test): a reset given as an HTTP-date or a Unix time then holds for the
//! time the server meant only if it is measured against that `Date`; against the machine's clock
//! it would be long past.

#[path = "support/raw.rs"]
mod raw;

use std::net::SocketAddr;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::Empty;
use hyper_util::client::legacy::{Client, connect::HttpConnector};
use hyper_util::rt::TokioExecutor;
use ritmo_client::{Cause, ClientLayer, HostKey, MaxWait, Outbound, RateLimited};
use ritmo_core::Config;
use tower::{Layer, ServiceExt};

/// The scripted replies' `Date`: 2015-10-21 07:28:00 UTC.
const DATE: &[u8] = b"date: Wed, 21 Oct 2015 07:28:00 GMT";
/// That `Date` as a Unix time in seconds.
const DATE_UNIX: u64 = 1_445_412_480;

type Svc = RateLimited<Client<HttpConnector, Empty<Bytes>>, HostKey>;

/// A client with room enough that only the server's words hold it: 100 per second, waiting up
/// to 2 h (so that a request given its own `MaxWait` is the only thing that refuses), holds
/// capped at 2 h (above the longest dialect's 1h2m3.5s).
fn client() -> (Outbound<HostKey>, Svc) {
    let config = Config::new(100, Duration::from_secs(1))
        .unwrap()
        .with_max_wait(Duration::from_secs(7200));
    let outbound = Outbound::per_host("dialects", config)
        .max_hold(Duration::from_secs(7200))
        .build();
    let hyper = Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
    let svc = ClientLayer::new(outbound.clone()).layer(hyper);
    (outbound, svc)
}

fn get(addr: SocketAddr, max_wait: Option<Duration>) -> Request<Empty<Bytes>> {
    let mut request = Request::get(format!("http://{addr}/v1/x"))
        .body(Empty::new())
        .unwrap();
    if let Some(d) = max_wait {
        request.extensions_mut().insert(MaxWait(d));
    }
    request
}

/// The first request gets `first`; the key (named from the address as text) is then held for
/// exactly `hold`: a request that will not wait is refused until the last millisecond of it,
/// without reaching the server, and sent once it has passed.
async fn holds_exactly(name: &str, first: Vec<u8>, hold: Duration) {
    let (addr, log) = raw::serve(vec![first]).await;
    let (outbound, svc) = client();
    let key: HostKey = addr.to_string().parse().expect("an address is a host:port");

    let response = svc.clone().oneshot(get(addr, None)).await.expect("sent");
    drop(response);
    assert_eq!(outbound.held_for(&key), Some(hold), "{name}: the hold");

    let ms = Duration::from_millis(1);
    tokio::time::advance(hold - ms).await;
    let refused = svc
        .clone()
        .oneshot(get(addr, Some(Duration::ZERO)))
        .await
        .expect_err("refused while held");
    let limited = refused.limited().expect("a refusal, not a transport error");
    assert_eq!(limited.cause(), Cause::ServerHold, "{name}");
    assert_eq!(limited.retry_after(), ms, "{name}: what is left");
    assert!(
        refused
            .to_string()
            .ends_with("retry after 1ms (held by the server)"),
        "{name}: {refused}"
    );
    assert_eq!(log.count(), 1, "{name}: nothing sent while held");

    tokio::time::advance(ms).await;
    assert_eq!(outbound.held_for(&key), None, "{name}: the hold has ended");
    let response = svc
        .oneshot(get(addr, Some(Duration::ZERO)))
        .await
        .expect("sent once the hold ends");
    assert_eq!(response.status(), StatusCode::OK, "{name}");
    assert_eq!(log.count(), 2, "{name}");
}

#[tokio::test(start_paused = true)]
async fn retry_after_seconds_and_fractions() {
    holds_exactly(
        "429 Retry-After: 2",
        raw::reply(429, &[b"retry-after: 2"]),
        Duration::from_secs(2),
    )
    .await;
    holds_exactly(
        "503 Retry-After: 1.5",
        raw::reply(503, &[b"retry-after: 1.5"]),
        Duration::from_millis(1500),
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn retry_after_http_date_against_the_response_s_date() {
    holds_exactly(
        "Retry-After: an HTTP-date 30 s after the response's Date",
        raw::reply(429, &[DATE, b"retry-after: Wed, 21 Oct 2015 07:28:30 GMT"]),
        Duration::from_secs(30),
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn x_ratelimit_reset_after_fractional_seconds() {
    holds_exactly(
        "X-RateLimit-Reset-After: 1.5",
        raw::reply(
            200,
            &[
                b"x-ratelimit-limit: 5",
                b"x-ratelimit-remaining: 0",
                b"x-ratelimit-reset-after: 1.5",
            ],
        ),
        Duration::from_millis(1500),
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn per_resource_pairs_with_go_durations() {
    holds_exactly(
        "x-ratelimit-remaining-requests: 0, x-ratelimit-reset-requests: 6m0s",
        raw::reply(
            200,
            &[
                b"x-ratelimit-limit-requests: 60",
                b"x-ratelimit-remaining-requests: 0",
                b"x-ratelimit-reset-requests: 6m0s",
                b"x-ratelimit-limit-tokens: 150000",
                b"x-ratelimit-remaining-tokens: 149000",
                b"x-ratelimit-reset-tokens: 1h",
            ],
        ),
        Duration::from_secs(360),
    )
    .await;
    holds_exactly(
        "x-ratelimit-remaining-tokens: 0, x-ratelimit-reset-tokens: 1h2m3.5s",
        raw::reply(
            200,
            &[
                b"x-ratelimit-remaining-requests: 59",
                b"x-ratelimit-reset-requests: 1s",
                b"x-ratelimit-remaining-tokens: 0",
                b"x-ratelimit-reset-tokens: 1h2m3.5s",
            ],
        ),
        Duration::from_millis(3_723_500),
    )
    .await;
    holds_exactly(
        "x-ratelimit-reset-tokens: 20ms",
        raw::reply(
            429,
            &[
                b"x-ratelimit-remaining-tokens: 0",
                b"x-ratelimit-reset-tokens: 20ms",
            ],
        ),
        Duration::from_millis(20),
    )
    .await;
    holds_exactly(
        "both spent: the later reset",
        raw::reply(
            200,
            &[
                b"x-ratelimit-remaining-requests: 0",
                b"x-ratelimit-reset-requests: 1s",
                b"x-ratelimit-remaining-tokens: 0",
                b"x-ratelimit-reset-tokens: 20ms",
            ],
        ),
        Duration::from_secs(1),
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn older_drafts_ratelimit_limit_remaining_reset() {
    holds_exactly(
        "RateLimit-Limit / -Remaining / -Reset",
        raw::reply(
            200,
            &[
                b"ratelimit-limit: 100",
                b"ratelimit-remaining: 0",
                b"ratelimit-reset: 7",
            ],
        ),
        Duration::from_secs(7),
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn x_ratelimit_reset_as_seconds_unix_seconds_and_unix_milliseconds() {
    holds_exactly(
        "X-RateLimit-Reset: 30 (seconds to wait)",
        raw::reply(
            200,
            &[b"x-ratelimit-remaining: 0", b"x-ratelimit-reset: 30"],
        ),
        Duration::from_secs(30),
    )
    .await;
    let unix_secs = format!("x-ratelimit-reset: {}", DATE_UNIX + 45);
    holds_exactly(
        "X-RateLimit-Reset: a Unix time in seconds, 45 s after the Date",
        raw::reply(
            200,
            &[DATE, b"x-ratelimit-remaining: 0", unix_secs.as_bytes()],
        ),
        Duration::from_secs(45),
    )
    .await;
    let unix_ms = format!("x-ratelimit-reset: {}", DATE_UNIX * 1000 + 2500);
    holds_exactly(
        "X-RateLimit-Reset: a Unix time in milliseconds, 2.5 s after the Date",
        raw::reply(
            200,
            &[DATE, b"x-ratelimit-remaining: 0", unix_ms.as_bytes()],
        ),
        Duration::from_millis(2500),
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_millisecond_reset_without_a_date_is_not_read_as_a_huge_wait() {
    // No `Date`: the machine's clock stands in, so the exact wait depends on how long the
    // exchange took; what is asserted is that it is the minute asked for at most, not the
    // 2-hour cap a wait of 1.7x10^12 seconds would be cut to.
    let now_ms = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    let reset = format!("x-ratelimit-reset: {}", now_ms + 60_000);
    let (addr, _log) = raw::serve(vec![raw::reply(
        200,
        &[b"x-ratelimit-remaining: 0", reset.as_bytes()],
    )])
    .await;
    let (outbound, svc) = client();
    svc.oneshot(get(addr, None)).await.unwrap();
    let key = HostKey::try_from(&format!("http://{addr}/").parse::<http::Uri>().unwrap()).unwrap();
    let held = outbound.held_for(&key).expect("held");
    assert!(held <= Duration::from_secs(60), "{held:?}");
}

#[tokio::test(start_paused = true)]
async fn requests_remaining_hold_nothing() {
    let (addr, log) = raw::serve(vec![raw::reply(
        200,
        &[
            b"x-ratelimit-remaining-requests: 3",
            b"x-ratelimit-reset-requests: 6m0s",
            b"ratelimit-remaining: 9",
            b"ratelimit-reset: 7",
            b"x-ratelimit-remaining: 1",
            b"x-ratelimit-reset-after: 2",
        ],
    )])
    .await;
    let (outbound, svc) = client();
    svc.clone().oneshot(get(addr, None)).await.unwrap();
    assert_eq!(outbound.keys_held(), 0);
    svc.oneshot(get(addr, Some(Duration::ZERO))).await.unwrap();
    assert_eq!(log.count(), 2);
}

#[tokio::test(start_paused = true)]
async fn hostile_values_are_capped_or_ignored() {
    let cap = Duration::from_secs(7200);
    for (name, lines, hold) in [
        (
            "an enormous Reset-After",
            vec![
                &b"x-ratelimit-remaining: 0"[..],
                b"x-ratelimit-reset-after: 99999999999999999999999999",
            ],
            Some(cap),
        ),
        (
            "an enormous Go duration",
            vec![
                &b"x-ratelimit-remaining-requests: 0"[..],
                b"x-ratelimit-reset-requests: 9999999999999999999h",
            ],
            Some(cap),
        ),
        (
            "a Unix time in milliseconds at the end of u64",
            vec![
                &b"x-ratelimit-remaining: 0"[..],
                b"x-ratelimit-reset: 18446744073709551615",
            ],
            Some(cap),
        ),
        (
            "a Date in 1970 against a reset in 2015",
            vec![
                &b"date: Thu, 01 Jan 1970 00:00:00 GMT"[..],
                b"x-ratelimit-remaining: 0",
                b"x-ratelimit-reset: 1445412480",
            ],
            Some(cap),
        ),
        (
            "garbage",
            vec![
                &b"x-ratelimit-remaining: 0"[..],
                b"x-ratelimit-reset: 1e9",
                b"x-ratelimit-reset-after: -3",
                b"ratelimit-remaining: 0",
                b"ratelimit-reset: soon",
                b"x-ratelimit-remaining-tokens: 0",
                b"x-ratelimit-reset-tokens: 5 minutes",
            ],
            None,
        ),
        (
            "a negative remaining",
            vec![
                &b"x-ratelimit-remaining-requests: -1"[..],
                b"x-ratelimit-reset-requests: 1s",
            ],
            None,
        ),
    ] {
        let (addr, _log) = raw::serve(vec![raw::reply(200, &lines)]).await;
        let (outbound, svc) = client();
        svc.oneshot(get(addr, None)).await.expect(name);
        let key: HostKey = addr.to_string().parse().unwrap();
        assert_eq!(outbound.held_for(&key), hold, "{name}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_request_s_own_max_wait_overrides_the_client_s() {
    let (addr, log) = raw::serve(vec![raw::reply(429, &[b"retry-after: 3"])]).await;
    // The client's own max_wait is zero: without an override, a held request fails at once.
    let config = Config::new(100, Duration::from_secs(1)).unwrap();
    let outbound = Outbound::per_host("own-wait", config).build();
    let hyper = Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
    let svc = ClientLayer::new(outbound.clone()).layer(hyper);

    svc.clone().oneshot(get(addr, None)).await.unwrap();
    let refused = svc.clone().oneshot(get(addr, None)).await.unwrap_err();
    assert_eq!(
        refused.limited().unwrap().retry_after(),
        Duration::from_secs(3)
    );
    // 2 s of its own are not enough either.
    let refused = svc
        .clone()
        .oneshot(get(addr, Some(Duration::from_secs(2))))
        .await
        .unwrap_err();
    assert_eq!(refused.limited().unwrap().cause(), Cause::ServerHold);
    assert_eq!(log.count(), 1);
    // 3 s of its own are: it waits the hold out and is sent when it ends, exactly.
    svc.oneshot(get(addr, Some(Duration::from_secs(3))))
        .await
        .unwrap();
    let at = log.arrivals();
    assert_eq!(at.len(), 2);
    assert_eq!(at[1] - at[0], Duration::from_secs(3));
    assert_eq!(outbound.stats().limited_server, 2);
}

#[tokio::test(start_paused = true)]
async fn a_shorter_own_max_wait_refuses_what_the_client_would_wait_for() {
    let (addr, log) = raw::serve(vec![]).await;
    // One request per second, waiting up to 5 s: the second would wait its second.
    let config = Config::new(1, Duration::from_secs(1))
        .unwrap()
        .with_max_wait(Duration::from_secs(5));
    let outbound = Outbound::per_host("own-wait", config).build();
    let hyper = Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
    let svc = ClientLayer::new(outbound.clone()).layer(hyper);
    svc.clone().oneshot(get(addr, None)).await.unwrap();
    let refused = svc
        .clone()
        .oneshot(get(addr, Some(Duration::from_millis(999))))
        .await
        .unwrap_err();
    let limited = refused.limited().unwrap();
    assert_eq!(limited.cause(), Cause::LocalQuota);
    assert_eq!(limited.retry_after(), Duration::from_secs(1));
    assert_eq!(log.count(), 1);
    svc.oneshot(get(addr, None)).await.unwrap();
    let at = log.arrivals();
    assert_eq!(at[1] - at[0], Duration::from_secs(1));
}
