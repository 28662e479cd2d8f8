//! The reqwest middleware over real HTTP on 127.0.0.1: the same rules as the tower layer (one
//! send loop): holds obeyed, broken fields ignored, a 429 retried once.

mod support;

use std::time::Duration;

use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};
use ritmo_client::reqwest::RateLimitMiddleware;
use ritmo_client::{Cause, HostKey, Limited, Outbound};
use ritmo_core::Config;
use support::{Reply, serve};

fn client(max_wait: Duration, retry: bool) -> (Outbound<HostKey>, ClientWithMiddleware) {
    let config = Config::new(100, Duration::from_secs(1))
        .unwrap()
        .with_max_wait(max_wait);
    let outbound = Outbound::per_host("backend", config)
        .retry_once(retry)
        .build();
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(RateLimitMiddleware::new(outbound.clone()))
        .build();
    (outbound, client)
}

fn limited(err: reqwest_middleware::Error) -> Limited {
    match err {
        reqwest_middleware::Error::Middleware(e) => {
            *e.downcast_ref::<Limited>().expect("a Limited")
        }
        other => panic!("not a refusal: {other}"),
    }
}

#[tokio::test]
async fn obeys_a_hold_and_refuses_without_sending() {
    let (addr, script) = serve(vec![Reply::new(200).header("ratelimit", "\"api\";r=0;t=2")]).await;
    let (_, client) = client(Duration::ZERO, false);
    let url = format!("http://{addr}/x");
    assert_eq!(client.get(&url).send().await.unwrap().status(), 200);
    let refused = limited(client.get(&url).send().await.unwrap_err());
    assert_eq!(refused.cause(), Cause::ServerHold);
    assert!(refused.retry_after() > Duration::from_secs(1));
    assert_eq!(script.count(), 1);
}

#[tokio::test]
async fn ignores_broken_fields() {
    let (addr, script) = serve(vec![
        Reply::new(429)
            .header("retry-after", "-3")
            .header("ratelimit", "\"api\";r=0;t=")
            .header("x-ratelimit-remaining", "0")
            .header("x-ratelimit-reset", "1600000000"),
    ])
    .await;
    let (outbound, client) = client(Duration::ZERO, false);
    let url = format!("http://{addr}/x");
    assert_eq!(client.get(&url).send().await.unwrap().status(), 429);
    assert_eq!(client.get(&url).send().await.unwrap().status(), 200);
    assert_eq!(script.count(), 2);
    assert_eq!(outbound.stats().holds, 0);
}

#[tokio::test]
async fn retries_a_get_once() {
    let (addr, script) = serve(vec![Reply::new(429).header("retry-after", "1")]).await;
    let (outbound, client) = client(Duration::from_secs(3), true);
    let url = format!("http://{addr}/x");
    assert_eq!(client.get(&url).send().await.unwrap().status(), 200);
    let at = script.arrivals();
    assert_eq!(at.len(), 2);
    assert!(at[1] - at[0] >= Duration::from_secs(1), "sent while held");
    assert_eq!(outbound.stats().retried, 1);

    // A POST is not repeated.
    let (addr, script) = serve(vec![Reply::new(429).header("retry-after", "1")]).await;
    let url = format!("http://{addr}/x");
    assert_eq!(
        client
            .post(&url)
            .body("order")
            .send()
            .await
            .unwrap()
            .status(),
        429
    );
    assert_eq!(script.count(), 1);
}

#[tokio::test]
async fn a_request_s_own_max_wait_through_with_extension() {
    // Built through the re-export (`ritmo::client::reqwest_middleware` to a user of the facade):
    // the reqwest-middleware, and its reqwest, this crate implements.
    use ritmo_client::reqwest_middleware::{ClientBuilder, reqwest};
    let (addr, script) = serve(vec![Reply::new(429).header("retry-after", "1")]).await;
    let config = Config::new(100, Duration::from_secs(1))
        .unwrap()
        .with_max_wait(Duration::from_secs(5));
    let outbound = Outbound::per_host("backend", config).build();
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(ritmo_client::reqwest::RateLimitMiddleware::new(outbound))
        .build();
    let url = format!("http://{addr}/x");
    assert_eq!(client.get(&url).send().await.unwrap().status(), 429);
    // The client would wait out the second; this request would rather not wait at all.
    let refused = limited(
        client
            .get(&url)
            .with_extension(ritmo_client::MaxWait(Duration::ZERO))
            .send()
            .await
            .unwrap_err(),
    );
    assert_eq!(refused.cause(), Cause::ServerHold);
    assert_eq!(script.count(), 1, "not sent");
    // Without its own, the client's 5 s: it waits the hold out and is sent.
    assert_eq!(client.get(&url).send().await.unwrap().status(), 200);
    assert_eq!(script.count(), 2);
}
