//! The layer through tower's `oneshot`, on fake clocks: every status code and field value checked
//! against the limiter's state, waiting, refunds, charge by outcome, shadow and error modes, and
//! composition with `Timeout`, `ConcurrencyLimit` and a retry policy.

mod support;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::{Request, Response, StatusCode};
use ritmo_core::{Config, ManualClock, RateLimitExceeded, Reason};
use ritmo_std::TokioClock;
use ritmo_tower::charge::not_304_or_5xx;
use ritmo_tower::key::{Global, Header, IpKey, PeerIp, from_fn};
use ritmo_tower::{
    BoxError, LayerEvent, MissingKey, MissingKeyError, RateLimitLayer, RefundCause, Rejection,
    Store, respond_with,
};
use support::{MapStore, ceil_secs, expected, header, leak, policy, ratelimit};
use tower::{Layer, Service, ServiceBuilder, ServiceExt, service_fn};

type Resp = Response<String>;

/// A handler answering with the status the path names (`/304` → 304), 200 otherwise.
async fn handler(request: Request<()>) -> Result<Resp, Infallible> {
    let status = request
        .uri()
        .path()
        .trim_start_matches('/')
        .parse::<u16>()
        .ok()
        .and_then(|s| StatusCode::from_u16(s).ok())
        .unwrap_or(StatusCode::OK);
    let mut response = Response::new("ok".to_string());
    *response.status_mut() = status;
    Ok(response)
}

fn get(path: &str) -> Request<()> {
    Request::get(path).body(()).unwrap()
}

fn clock() -> &'static ManualClock {
    Box::leak(Box::new(ManualClock::new()))
}

#[tokio::test]
async fn burst_then_429_with_every_field_matching_the_limiter() {
    let clock = clock();
    let limiter = leak(
        "api",
        Config::new(3, Duration::from_secs(1)).unwrap(),
        clock,
    );
    let svc = RateLimitLayer::new(limiter, Global).layer(service_fn(handler));

    for _ in 0..3 {
        let response = svc.clone().oneshot(get("/")).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let (name, r, t) = ratelimit(response.headers());
        assert_eq!(name, "api");
        assert_eq!((r, t), expected(limiter));
        assert_eq!(policy(response.headers()), ("api".to_string(), 3, 1));
        assert!(response.headers().get("retry-after").is_none());
    }
    let response = svc.clone().oneshot(get("/")).await.unwrap();
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    let retry = limiter.retry_after();
    assert_eq!(retry, Duration::from_nanos(333_333_334));
    assert_eq!(header(response.headers(), "retry-after"), "1");
    assert_eq!(ratelimit(response.headers()), ("api".to_string(), 0, 1));
    assert_eq!(expected(limiter), (0, 1));
    assert_eq!(policy(response.headers()), ("api".to_string(), 3, 1));
    assert_eq!(response.body(), "Too Many Requests: retry after 1 s\n");

    // One permit comes back every 333.3 ms; after a quiet period the full burst is back: r = q, t = 0.
    clock.advance(Duration::from_millis(334));
    let response = svc.clone().oneshot(get("/")).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(ratelimit(response.headers()).1, 0);
    clock.advance(Duration::from_secs(5));
    assert_eq!(expected(limiter), (3, 0));
    let response = svc.clone().oneshot(get("/")).await.unwrap();
    assert_eq!(ratelimit(response.headers()), ("api".to_string(), 2, 1));
}

#[tokio::test]
async fn retry_after_is_whole_seconds_rounded_up_and_never_early() {
    let clock = clock();
    let limiter = leak(
        "slow",
        Config::new(1, Duration::from_secs(10)).unwrap(),
        clock,
    );
    let svc = RateLimitLayer::new(limiter, Global).layer(service_fn(handler));
    svc.clone().oneshot(get("/")).await.unwrap();
    for (advance_ms, expect) in [(0, 10), (2_500, 8), (7_000, 1), (499, 1)] {
        clock.advance(Duration::from_millis(advance_ms));
        let response = svc.clone().oneshot(get("/")).await.unwrap();
        assert_eq!(response.status(), 429);
        let secs: u64 = header(response.headers(), "retry-after").parse().unwrap();
        assert_eq!(secs, expect);
        assert_eq!(secs, ceil_secs(limiter.retry_after()).max(1));
        // The reset never comes before the permit: t matches Retry-After on a rejection.
        assert_eq!(ratelimit(response.headers()).2, secs);
    }
    clock.advance(Duration::from_millis(1));
    assert_eq!(svc.clone().oneshot(get("/")).await.unwrap().status(), 200);
}

#[tokio::test]
async fn policy_window_of_a_sub_second_period_never_overstates_the_rate() {
    let limiter = leak(
        "fast",
        Config::new(5, Duration::from_millis(500)).unwrap(),
        clock(),
    );
    let svc = RateLimitLayer::new(limiter, Global)
        .policy_name("per-second")
        .layer(service_fn(handler));
    let response = svc.oneshot(get("/")).await.unwrap();
    assert_eq!(
        policy(response.headers()),
        ("per-second".to_string(), 10, 1)
    );
    assert_eq!(ratelimit(response.headers()).0, "per-second");
}

#[tokio::test]
async fn custom_rejection_response_keeps_the_fields() {
    let limiter = leak(
        "json",
        Config::new(1, Duration::from_secs(2)).unwrap(),
        clock(),
    );
    let svc = RateLimitLayer::new(limiter, Global)
        .on_reject(respond_with(|r: &Rejection| {
            Response::builder()
                .status(StatusCode::SERVICE_UNAVAILABLE)
                .header("content-type", "application/problem+json")
                .body(format!(
                    "{{\"violated-policies\":[\"{}\"]}}",
                    r.policy().name()
                ))
                .unwrap()
        }))
        .layer(service_fn(handler));
    svc.clone().oneshot(get("/")).await.unwrap();
    let response = svc.clone().oneshot(get("/")).await.unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(response.body(), "{\"violated-policies\":[\"json\"]}");
    assert_eq!(header(response.headers(), "retry-after"), "2");
    assert_eq!(ratelimit(response.headers()), ("json".to_string(), 0, 2));
    assert_eq!(policy(response.headers()), ("json".to_string(), 1, 2));
}

#[tokio::test]
async fn charge_by_outcome_returns_304_and_5xx_permits() {
    let limiter = leak(
        "etag",
        Config::new(2, Duration::from_secs(60)).unwrap(),
        clock(),
    );
    let svc = RateLimitLayer::new(limiter, Global)
        .charge(not_304_or_5xx())
        .layer(service_fn(handler));
    for path in ["/304", "/500", "/503", "/304"] {
        let response = svc.clone().oneshot(get(path)).await.unwrap();
        assert_eq!(response.status().as_str(), &path[1..]);
        // The fields are read after the refund: the truth, not one permit short, and `t` of a
        // whole quota: nothing owed, nothing to wait for (it answered a reset 30 s away).
        assert_eq!(ratelimit(response.headers()), ("etag".to_string(), 2, 0));
        assert_eq!(limiter.available_permits(), 2);
    }
    // One permit spent: the next comes back in 30 s; both spent: the next in 30 s too.
    for expect in [1, 0] {
        let response = svc.clone().oneshot(get("/")).await.unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(
            ratelimit(response.headers()),
            ("etag".to_string(), expect, 30)
        );
    }
    assert_eq!(
        svc.clone().oneshot(get("/304")).await.unwrap().status(),
        429
    );
}

#[tokio::test]
async fn a_refund_obeys_the_tail_rule() {
    // A slow request is classified "refund" after a later request took the next permit: giving
    // it back would let two requests share one slot, so it stays charged.
    let limiter = leak(
        "tail",
        Config::new(3, Duration::from_secs(60)).unwrap(),
        clock(),
    );
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&events);
    let (release_tx, release_rx) = tokio::sync::oneshot::channel::<()>();
    let release_rx = Arc::new(tokio::sync::Mutex::new(Some(release_rx)));
    let slow = service_fn(move |request: Request<()>| {
        let release_rx = Arc::clone(&release_rx);
        async move {
            if request.uri().path() == "/slow" {
                let rx = release_rx.lock().await.take().unwrap();
                rx.await.unwrap();
                return handler(get("/500")).await;
            }
            handler(request).await
        }
    });
    let svc = RateLimitLayer::new(limiter, Global)
        .charge(not_304_or_5xx())
        .on_event(move |e| seen.lock().unwrap().push(*e))
        .layer(slow);
    let first = tokio::spawn(svc.clone().oneshot(get("/slow")));
    while limiter.available_permits() == 3 {
        tokio::task::yield_now().await;
    }
    svc.clone().oneshot(get("/fast")).await.unwrap();
    assert_eq!(limiter.available_permits(), 1);
    release_tx.send(()).unwrap();
    let response = first.await.unwrap().unwrap();
    assert_eq!(response.status(), 500);
    assert_eq!(
        *events.lock().unwrap(),
        vec![LayerEvent::Refunded {
            cause: RefundCause::Classified,
            returned: false
        }]
    );
    assert_eq!(limiter.available_permits(), 1);
    assert_eq!(ratelimit(response.headers()).1, 1);
    // A refund at the tail does go back.
    let response = svc.clone().oneshot(get("/500")).await.unwrap();
    assert_eq!(ratelimit(response.headers()).1, 1);
}

#[tokio::test]
async fn shadow_mode_never_rejects_but_reports() {
    let limiter = leak(
        "shadow",
        Config::new(2, Duration::from_secs(1)).unwrap(),
        clock(),
    );
    let rejected = Arc::new(AtomicU32::new(0));
    let count = Arc::clone(&rejected);
    let svc = RateLimitLayer::new(limiter, Global)
        .shadow(true)
        .on_event(move |e| {
            if let LayerEvent::Rejected { enforced, error } = e {
                assert!(!enforced);
                assert_eq!(error.reason(), Reason::NoPermitInTime);
                count.fetch_add(1, Ordering::Relaxed);
            }
        })
        .layer(service_fn(handler));
    for i in 0..6 {
        let response = svc.clone().oneshot(get("/")).await.unwrap();
        assert_eq!(response.status(), 200);
        assert!(response.headers().get("retry-after").is_none());
        let (_, r, t) = ratelimit(response.headers());
        assert_eq!(r, if i == 0 { 1 } else { 0 });
        assert_eq!((r, t), expected(limiter));
    }
    assert_eq!(rejected.load(Ordering::Relaxed), 4);
}

#[tokio::test]
async fn missing_key_rejects_or_passes_as_chosen() {
    let limiter_store = MapStore::<IpKey, _>::new(
        "by-ip",
        Config::new(1, Duration::from_secs(1)).unwrap(),
        clock(),
    );
    let strict =
        RateLimitLayer::new(limiter_store.clone(), PeerIp::new()).layer(service_fn(handler));
    // No connection info: the server forgot `into_make_service_with_connect_info`.
    assert_eq!(
        strict.clone().oneshot(get("/")).await.unwrap().status(),
        400
    );
    let lenient = RateLimitLayer::new(limiter_store.clone(), PeerIp::new())
        .missing_key(MissingKey::Pass)
        .layer(service_fn(handler));
    for _ in 0..5 {
        let response = lenient.clone().oneshot(get("/")).await.unwrap();
        assert_eq!(response.status(), 200);
        assert!(response.headers().get("ratelimit").is_none());
    }
    assert_eq!(limiter_store.keys(), 0);
    let errors = RateLimitLayer::new(limiter_store, PeerIp::new())
        .errors()
        .layer(service_fn(handler));
    let error = errors.oneshot(get("/")).await.unwrap_err();
    assert!(error.downcast_ref::<MissingKeyError>().is_some());
}

#[tokio::test]
async fn keys_are_independent() {
    let store = MapStore::<IpKey, _>::new(
        "per-key",
        Config::new(2, Duration::from_secs(1)).unwrap(),
        clock(),
    );
    let by_ip = RateLimitLayer::new(store.clone(), PeerIp::new()).layer(service_fn(handler));
    let from = |ip: [u8; 4]| {
        let mut request = get("/");
        request
            .extensions_mut()
            .insert(SocketAddr::from((ip, 5555)));
        request
    };
    for _ in 0..2 {
        assert_eq!(
            by_ip
                .clone()
                .oneshot(from([1, 1, 1, 1]))
                .await
                .unwrap()
                .status(),
            200
        );
    }
    assert_eq!(
        by_ip
            .clone()
            .oneshot(from([1, 1, 1, 1]))
            .await
            .unwrap()
            .status(),
        429
    );
    // Another client still has its whole burst.
    let response = by_ip.clone().oneshot(from([2, 2, 2, 2])).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(ratelimit(response.headers()).1, 1);

    let by_api_key = RateLimitLayer::new(
        MapStore::new(
            "per-api-key",
            Config::new(1, Duration::from_secs(1)).unwrap(),
            clock(),
        ),
        Header::new(http::HeaderName::from_static("x-api-key")),
    )
    .layer(service_fn(handler));
    let with_key = |k: &str| Request::get("/").header("x-api-key", k).body(()).unwrap();
    assert_eq!(
        by_api_key
            .clone()
            .oneshot(with_key("a"))
            .await
            .unwrap()
            .status(),
        200
    );
    assert_eq!(
        by_api_key
            .clone()
            .oneshot(with_key("a"))
            .await
            .unwrap()
            .status(),
        429
    );
    assert_eq!(
        by_api_key
            .clone()
            .oneshot(with_key("b"))
            .await
            .unwrap()
            .status(),
        200
    );

    let by_path = RateLimitLayer::new(
        MapStore::new(
            "per-path",
            Config::new(1, Duration::from_secs(1)).unwrap(),
            clock(),
        ),
        from_fn(|r: &Request<()>| Some(r.uri().path().to_owned())),
    )
    .layer(service_fn(handler));
    assert_eq!(
        by_path.clone().oneshot(get("/x")).await.unwrap().status(),
        200
    );
    assert_eq!(
        by_path.clone().oneshot(get("/x")).await.unwrap().status(),
        429
    );
    assert_eq!(
        by_path.clone().oneshot(get("/y")).await.unwrap().status(),
        200
    );
}

#[tokio::test]
async fn cost_is_checked_against_the_quota() {
    let limiter = leak(
        "cost",
        Config::new(4, Duration::from_secs(1)).unwrap(),
        clock(),
    );
    let error = RateLimitLayer::new(limiter, Global).cost(5).unwrap_err();
    assert_eq!((error.cost(), error.quota()), (5, 4));
    assert!(error.to_string().starts_with("RITMO-ATR-003"));
    assert!(RateLimitLayer::new(limiter, Global).cost(0).is_err());
    let svc = RateLimitLayer::new(limiter, Global)
        .cost(2)
        .unwrap()
        .layer(service_fn(handler));
    let response = svc.clone().oneshot(get("/")).await.unwrap();
    assert_eq!(ratelimit(response.headers()).1, 2);
    svc.clone().oneshot(get("/")).await.unwrap();
    assert_eq!(svc.clone().oneshot(get("/")).await.unwrap().status(), 429);
}

#[tokio::test(start_paused = true)]
async fn waiting_requests_run_at_their_slot_in_order() {
    let clock = TokioClock::new();
    let limiter = leak(
        "wait",
        Config::new(2, Duration::from_secs(1)).unwrap(),
        clock,
    );
    let waits = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&waits);
    let svc = RateLimitLayer::new(limiter, Global)
        .max_wait(Duration::from_secs(1))
        .on_event(move |e| {
            if let LayerEvent::Waiting { wait } = e {
                seen.lock().unwrap().push(*wait);
            }
        })
        .layer(service_fn(handler));
    let start = tokio::time::Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..4 {
        tasks.push(tokio::spawn(svc.clone().oneshot(get("/"))));
        tokio::task::yield_now().await;
    }
    // The 5th would wait 1.5 s: refused at once.
    let refused = svc.clone().oneshot(get("/")).await.unwrap();
    assert_eq!(refused.status(), 429);
    assert_eq!(header(refused.headers(), "retry-after"), "2");
    for task in tasks {
        assert_eq!(task.await.unwrap().unwrap().status(), 200);
    }
    assert_eq!(
        *waits.lock().unwrap(),
        vec![Duration::from_millis(500), Duration::from_millis(1000)]
    );
    assert!(start.elapsed() >= Duration::from_secs(1));
}

#[tokio::test(start_paused = true)]
async fn a_request_dropped_while_waiting_returns_its_permit() {
    let limiter = leak(
        "drop",
        Config::new(1, Duration::from_secs(1)).unwrap(),
        TokioClock::new(),
    );
    let refunds = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&refunds);
    let calls = Arc::new(AtomicU32::new(0));
    let counted = Arc::clone(&calls);
    let svc = RateLimitLayer::new(limiter, Global)
        .max_wait(Duration::from_secs(5))
        .on_event(move |e| {
            if let LayerEvent::Refunded { cause, returned } = e {
                seen.lock().unwrap().push((*cause, *returned));
            }
        })
        .layer(service_fn(move |r| {
            counted.fetch_add(1, Ordering::Relaxed);
            handler(r)
        }));
    svc.clone().oneshot(get("/")).await.unwrap();
    let waiting = tokio::spawn(svc.clone().oneshot(get("/")));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(limiter.retry_after(), Duration::from_millis(1700));
    waiting.abort();
    assert!(waiting.await.unwrap_err().is_cancelled());
    assert_eq!(*refunds.lock().unwrap(), vec![(RefundCause::Dropped, true)]);
    assert_eq!(limiter.retry_after(), Duration::from_millis(700));
    assert_eq!(calls.load(Ordering::Relaxed), 1);
}

#[tokio::test(start_paused = true)]
async fn waiting_for_a_permit_does_not_count_against_the_inner_timeout() {
    let limiter = leak(
        "timeout",
        Config::new(1, Duration::from_secs(1)).unwrap(),
        TokioClock::new(),
    );
    let svc = ServiceBuilder::new()
        .layer(
            RateLimitLayer::new(limiter, Global)
                .max_wait(Duration::from_secs(2))
                .errors(),
        )
        .timeout(Duration::from_millis(200))
        .concurrency_limit(1)
        .service(service_fn(|r: Request<()>| async move {
            tokio::time::sleep(Duration::from_millis(150)).await;
            handler(r).await
        }));
    svc.clone().oneshot(get("/")).await.unwrap();
    // Waits 850 ms for its permit (due 1 s after the first took it), then runs 150 ms under a
    // 200 ms timeout: passes.
    let start = tokio::time::Instant::now();
    let response = svc.clone().oneshot(get("/")).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(start.elapsed(), Duration::from_millis(1000));
    // The inner timeout still works for the call itself.
    let slow = ServiceBuilder::new()
        .layer(
            RateLimitLayer::new(
                leak(
                    "t2",
                    Config::new(1, Duration::from_secs(1)).unwrap(),
                    TokioClock::new(),
                ),
                Global,
            )
            .errors(),
        )
        .timeout(Duration::from_millis(100))
        .service(service_fn(|r: Request<()>| async move {
            tokio::time::sleep(Duration::from_millis(150)).await;
            handler(r).await
        }));
    let error = slow.oneshot(get("/")).await.unwrap_err();
    assert!(error.is::<tower::timeout::error::Elapsed>());
}

#[tokio::test(start_paused = true)]
async fn a_waiting_request_holds_no_bulkhead_slot() {
    // ConcurrencyLimit(1) inside the limiter: a request waiting for its permit does not take the
    // only slot, so a request with a permit runs meanwhile.
    let limiter = leak(
        "bulkhead",
        Config::new(2, Duration::from_secs(2)).unwrap(),
        TokioClock::new(),
    );
    let svc = ServiceBuilder::new()
        .layer(RateLimitLayer::new(limiter, Global).max_wait(Duration::from_secs(5)))
        .concurrency_limit(1)
        .service(service_fn(handler));
    svc.clone().oneshot(get("/")).await.unwrap();
    svc.clone().oneshot(get("/")).await.unwrap();
    let waiting = tokio::spawn(svc.clone().oneshot(get("/")));
    tokio::task::yield_now().await;
    assert!(!waiting.is_finished());
    waiting.await.unwrap().unwrap();
}

/// A retry policy that honours `retry_after`: a rejected call is retried once its permit is due,
/// at most `attempts` times; other errors are not retried.
#[derive(Clone)]
struct RetryAfter {
    attempts: u32,
}

impl<E> tower::retry::Policy<Request<()>, Resp, E> for RetryAfter
where
    E: std::ops::Deref<Target = dyn std::error::Error + Send + Sync>,
{
    type Future = tokio::time::Sleep;

    fn retry(
        &mut self,
        _req: &mut Request<()>,
        result: &mut Result<Resp, E>,
    ) -> Option<Self::Future> {
        let error = result.as_ref().err()?;
        let limited = error.downcast_ref::<RateLimitExceeded>()?;
        if self.attempts == 0 {
            return None;
        }
        self.attempts -= 1;
        Some(tokio::time::sleep(limited.retry_after()))
    }

    fn clone_request(&mut self, req: &Request<()>) -> Option<Request<()>> {
        let mut clone = Request::new(());
        *clone.uri_mut() = req.uri().clone();
        Some(clone)
    }
}

#[tokio::test(start_paused = true)]
async fn a_retry_policy_honours_retry_after() {
    let limiter = leak(
        "retry",
        Config::new(1, Duration::from_secs(3)).unwrap(),
        TokioClock::new(),
    );
    let svc = ServiceBuilder::new()
        .retry(RetryAfter { attempts: 1 })
        .layer(RateLimitLayer::new(limiter, Global).errors())
        .service(service_fn(handler));
    svc.clone().oneshot(get("/")).await.unwrap();
    let start = tokio::time::Instant::now();
    let response = svc.clone().oneshot(get("/")).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(start.elapsed(), Duration::from_secs(3));
    // With no attempts left the rejection comes through, still a RateLimitExceeded.
    let once = ServiceBuilder::new()
        .retry(RetryAfter { attempts: 0 })
        .layer(RateLimitLayer::new(limiter, Global).errors())
        .service(service_fn(handler));
    let error = once.oneshot(get("/")).await.unwrap_err();
    assert_eq!(
        error.downcast_ref::<RateLimitExceeded>().unwrap().id(),
        "retry"
    );
}

/// The smallest circuit breaker: opens after `threshold` consecutive failures. Rate-limit
/// rejections are not failures of the service behind it, so they are ignored.
#[derive(Clone)]
struct Breaker<S> {
    inner: S,
    failures: Arc<AtomicU32>,
}

fn counts_as_failure(error: &BoxError) -> bool {
    !error.is::<RateLimitExceeded>()
}

impl<S> Service<Request<()>> for Breaker<S>
where
    S: Service<Request<()>, Response = Resp, Error = BoxError> + Clone + Send + 'static,
    S::Future: Send,
{
    type Response = Resp;
    type Error = BoxError;
    type Future =
        std::pin::Pin<Box<dyn std::future::Future<Output = Result<Resp, BoxError>> + Send>>;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<()>) -> Self::Future {
        let failures = Arc::clone(&self.failures);
        if failures.load(Ordering::Relaxed) >= 3 {
            return Box::pin(async { Err::<Resp, BoxError>("circuit open".into()) });
        }
        let future = self.inner.call(request);
        Box::pin(async move {
            let result = future.await;
            match &result {
                Err(e) if counts_as_failure(e) => failures.fetch_add(1, Ordering::Relaxed),
                Err(_) => 0,
                Ok(_) => failures.swap(0, Ordering::Relaxed),
            };
            result
        })
    }
}

#[tokio::test]
async fn a_breaker_outside_the_limiter_ignores_rejections() {
    let limiter = leak(
        "breaker",
        Config::new(1, Duration::from_secs(60)).unwrap(),
        clock(),
    );
    let failures = Arc::new(AtomicU32::new(0));
    let svc = Breaker {
        inner: RateLimitLayer::new(limiter, Global)
            .errors()
            .layer(service_fn(handler)),
        failures: Arc::clone(&failures),
    };
    svc.clone().oneshot(get("/")).await.unwrap();
    for _ in 0..10 {
        let error = svc.clone().oneshot(get("/")).await.unwrap_err();
        let limited = error
            .downcast_ref::<RateLimitExceeded>()
            .expect("a rate-limit rejection");
        assert_eq!(limited.retry_after(), limiter.retry_after());
    }
    assert_eq!(
        failures.load(Ordering::Relaxed),
        0,
        "rejections never open the breaker"
    );
}

#[tokio::test]
async fn layer_clones_share_one_quota() {
    let limiter = leak(
        "clones",
        Config::new(5, Duration::from_secs(60)).unwrap(),
        clock(),
    );
    let layer = RateLimitLayer::new(limiter, Global);
    let mut statuses = Vec::new();
    for i in 0..8 {
        // A fresh clone of the layer and a fresh service each time: one quota all the same.
        let svc = layer.clone().layer(service_fn(handler));
        let svc = if i % 2 == 0 { svc.clone() } else { svc };
        statuses.push(svc.oneshot(get("/")).await.unwrap().status().as_u16());
    }
    assert_eq!(statuses, [200, 200, 200, 200, 200, 429, 429, 429]);
}

#[tokio::test(start_paused = true)]
async fn the_limiter_configs_max_wait_is_the_default() {
    let config = Config::new(1, Duration::from_secs(1))
        .unwrap()
        .with_max_wait(Duration::from_secs(1));
    let limiter = leak("config-wait", config, TokioClock::new());
    let svc = RateLimitLayer::new(limiter, Global).layer(service_fn(handler));
    svc.clone().oneshot(get("/")).await.unwrap();
    let start = tokio::time::Instant::now();
    assert_eq!(svc.clone().oneshot(get("/")).await.unwrap().status(), 200);
    assert_eq!(start.elapsed(), Duration::from_secs(1));
    // The layer's own setting wins.
    let refusing = RateLimitLayer::new(limiter, Global)
        .max_wait(Duration::ZERO)
        .layer(service_fn(handler));
    assert_eq!(refusing.oneshot(get("/")).await.unwrap().status(), 429);
}

/// Without a max wait of its own, the layer follows the limiter's config as it is when each
/// request comes (SPEC §14: a reconfigure takes effect at once), not as it was when the layer
/// was built.
#[tokio::test(start_paused = true)]
async fn a_config_changed_live_sets_the_wait_of_the_next_request() {
    let refusing = Config::new(1, Duration::from_secs(1)).unwrap();
    let waiting = refusing.with_max_wait(Duration::from_secs(1));
    let limiter = leak("live-wait", refusing, TokioClock::new());
    let svc = RateLimitLayer::new(limiter, Global).layer(service_fn(handler));
    assert_eq!(svc.clone().oneshot(get("/")).await.unwrap().status(), 200);
    assert_eq!(svc.clone().oneshot(get("/")).await.unwrap().status(), 429);
    // Now a request may wait 1 s: the next permit's slot is 1 s away, so it waits and runs.
    limiter.reconfigure(waiting);
    let start = tokio::time::Instant::now();
    assert_eq!(svc.clone().oneshot(get("/")).await.unwrap().status(), 200);
    assert_eq!(start.elapsed(), Duration::from_secs(1));
    // And back: refused at once, nothing waited.
    limiter.reconfigure(refusing);
    let start = tokio::time::Instant::now();
    assert_eq!(svc.clone().oneshot(get("/")).await.unwrap().status(), 429);
    assert_eq!(start.elapsed(), Duration::ZERO);
}

/// A max wait the layer was given is its own, even when it equals the limiter config's: a key
/// on a tier whose own config refuses at once still waits the layer's time.
#[tokio::test(start_paused = true)]
async fn a_layers_own_max_wait_equal_to_the_configs_is_still_its_own() {
    use ritmo_core::keyed::{Tier, Tiers};
    use ritmo_std::KeyedRateLimiter;
    let wait = Duration::from_secs(60);
    let tiers = Tiers::new(
        [
            // The first tier's config is the limiter's `config()`.
            Tier::of(0, "free", Config::new(1, wait).unwrap().with_max_wait(wait)),
            Tier::of(1, "paid", Config::new(1, Duration::from_secs(1)).unwrap()),
        ],
        (|key: &String| usize::from(key.starts_with("paid"))) as fn(&String) -> usize,
    );
    let limiter = Arc::new(KeyedRateLimiter::tiered_with_clock(
        "tiered-wait",
        tiers,
        100,
        TokioClock::new(),
    ));
    assert_eq!(limiter.config().max_wait(), wait);
    let by_path =
        from_fn(|r: &Request<()>| Some(r.uri().path().trim_start_matches('/').to_owned()));
    let svc = RateLimitLayer::new(Arc::clone(&limiter), by_path)
        .max_wait(wait)
        .layer(service_fn(handler));
    assert_eq!(
        svc.clone().oneshot(get("/paid")).await.unwrap().status(),
        200
    );
    // The paid tier's own config would refuse; the layer's 60 s lets it wait its 1 s.
    let start = tokio::time::Instant::now();
    assert_eq!(
        svc.clone().oneshot(get("/paid")).await.unwrap().status(),
        200
    );
    assert_eq!(start.elapsed(), Duration::from_secs(1));
    // Without a wait of its own, the layer follows each key's tier: the paid key is refused.
    let own = RateLimitLayer::new(limiter, from_fn(|_: &Request<()>| Some("paid".to_owned())))
        .layer(service_fn(handler));
    let start = tokio::time::Instant::now();
    assert_eq!(own.oneshot(get("/")).await.unwrap().status(), 429);
    assert_eq!(start.elapsed(), Duration::ZERO);
}

/// A store that answers after a round trip, as a remote one does, and cannot read a key's status
/// without one: the fields come from the status its answer carried.
#[derive(Clone)]
struct Remote(&'static ritmo_core::RateLimiter<&'static ManualClock>);

impl ritmo_tower::Store for Remote {
    type Key = ();
    type Permit = ritmo_core::Reservation<'static, &'static ManualClock>;
    type Acquire = std::pin::Pin<
        Box<
            dyn std::future::Future<
                    Output = Result<ritmo_tower::Grant<Self::Permit>, ritmo_tower::Denial>,
                > + Send,
        >,
    >;

    fn policy(&self) -> ritmo_tower::Policy {
        ritmo_tower::Store::policy(&self.0)
    }

    fn acquire(
        &self,
        _key: &(),
        permits: u32,
        max_wait: Option<Duration>,
    ) -> ritmo_tower::Decision<Self::Permit, Self::Acquire> {
        let limiter = self.0;
        ritmo_tower::Decision::Later(Box::pin(async move {
            tokio::task::yield_now().await;
            let ritmo_tower::Decision::Now(decision) =
                ritmo_tower::Store::acquire(&limiter, &(), permits, max_wait)
            else {
                unreachable!()
            };
            decision.map(|grant| {
                let status = ritmo_tower::Store::status(&limiter, &()).unwrap();
                ritmo_tower::Grant::new(grant.permit, grant.wait, Some(status))
            })
        }))
    }

    fn status(&self, _key: &()) -> Option<ritmo_tower::Status> {
        None
    }
}

#[tokio::test]
async fn a_store_that_answers_later() {
    let limiter = leak(
        "remote",
        Config::new(2, Duration::from_secs(1)).unwrap(),
        clock(),
    );
    let svc = RateLimitLayer::new(Remote(limiter), Global).layer(service_fn(handler));
    for expect in [1, 0] {
        let response = svc.clone().oneshot(get("/")).await.unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(
            ratelimit(response.headers()),
            ("remote".to_string(), expect, 1)
        );
    }
    let response = svc.clone().oneshot(get("/")).await.unwrap();
    assert_eq!(response.status(), 429);
    assert_eq!(header(response.headers(), "retry-after"), "1");
    // A gRPC call refused after the round trip is answered in gRPC's form all the same.
    let call = Request::post("/pkg.Svc/Method")
        .header("content-type", "application/grpc")
        .body(())
        .unwrap();
    let response = svc.clone().oneshot(call).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(header(response.headers(), "grpc-status"), "8");
    assert_eq!(header(response.headers(), "retry-after"), "1");
}

#[tokio::test]
async fn a_store_behind_an_arc_is_a_store() {
    let store = Arc::new(MapStore::new(
        "shared",
        Config::new(1, Duration::from_secs(1)).unwrap(),
        clock(),
    ));
    let service = RateLimitLayer::new(Arc::clone(&store), Global).layer(service_fn(handler));
    let first = service.clone().oneshot(get("/")).await.unwrap();
    assert_eq!(first.status(), 200);
    assert_eq!(ratelimit(first.headers()).1, 0);
    let second = service.clone().oneshot(get("/")).await.unwrap();
    assert_eq!(second.status(), 429);
    // The layer limited through the store the Arc shares.
    assert_eq!(store.status(&()).unwrap().remaining(), 0);
}
