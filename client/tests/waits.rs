//! Waiting on tokio's paused clock: a dropped request gives its permit back, and a hold that
//! begins while a request waits for its slot is obeyed too.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::{Request, Response};
use ritmo_client::{ClientLayer, Outbound};
use ritmo_core::Config;
use tokio::time::Instant;
use tower::{Layer, ServiceExt, service_fn};

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap()
}

type Log = Arc<Mutex<Vec<u64>>>;

/// A service that records when each request arrives and answers the first with `first` after
/// `delay`, the rest with a plain `200` at once.
fn recorder(
    start: Instant,
    first: Response<()>,
    delay: Duration,
) -> (
    impl tower::Service<
        Request<()>,
        Response = Response<()>,
        Error = std::convert::Infallible,
        Future = impl Send,
    > + Clone
    + Send
    + 'static,
    Log,
) {
    let sent: Arc<Mutex<Vec<u64>>> = Arc::default();
    let first = Arc::new(Mutex::new(Some(first)));
    let log = Arc::clone(&sent);
    let svc = service_fn(move |_req: Request<()>| {
        log.lock().unwrap().push(ms(start.elapsed()));
        let answer = first.lock().unwrap().take();
        async move {
            match answer {
                Some(a) => {
                    tokio::time::sleep(delay).await;
                    Ok(a)
                }
                None => Ok(Response::new(())),
            }
        }
    });
    (svc, sent)
}

fn req() -> Request<()> {
    Request::get("http://api.test/").body(()).unwrap()
}

#[tokio::test(start_paused = true)]
async fn dropping_a_waiting_request_gives_its_permit_back() {
    let start = Instant::now();
    let config = Config::new(1, Duration::from_secs(1))
        .unwrap()
        .with_max_wait(Duration::from_secs(5));
    let outbound = Outbound::per_host("api", config).build();
    let (inner, sent) = recorder(start, Response::new(()), Duration::ZERO);
    let svc = ClientLayer::new(outbound).layer(inner);

    svc.clone().oneshot(req()).await.unwrap(); // the burst of one, at 0
    let waiting = tokio::spawn(svc.clone().oneshot(req())); // reserves the slot at 1 s
    tokio::time::sleep(Duration::from_millis(500)).await;
    waiting.abort(); // dropped while it waits: nothing sent, its slot goes back
    assert!(waiting.await.unwrap_err().is_cancelled());
    svc.oneshot(req()).await.unwrap();
    assert_eq!(
        *sent.lock().unwrap(),
        vec![0, 1000],
        "the third takes the dropped one's slot"
    );
}

#[tokio::test(start_paused = true)]
async fn a_hold_that_begins_during_a_wait_is_obeyed() {
    let start = Instant::now();
    let config = Config::new(1, Duration::from_secs(1))
        .unwrap()
        .with_max_wait(Duration::from_secs(5));
    let outbound = Outbound::per_host("api", config).build();
    // The first request's 429 (wait 3 s) arrives at 500 ms, while the second waits for its slot
    // at 1 s: the second gives the slot back and is sent when the hold ends, at 3.5 s.
    let too_many = Response::builder()
        .status(429)
        .header("retry-after", "3")
        .body(())
        .unwrap();
    let (inner, sent) = recorder(start, too_many, Duration::from_millis(500));
    let svc = ClientLayer::new(outbound.clone()).layer(inner);

    let first = tokio::spawn(svc.clone().oneshot(req()));
    tokio::time::sleep(Duration::from_millis(100)).await;
    let second = tokio::spawn(svc.clone().oneshot(req()));
    assert_eq!(first.await.unwrap().unwrap().status(), 429);
    second.await.unwrap().unwrap();
    assert_eq!(*sent.lock().unwrap(), vec![0, 3500]);
    let stats = outbound.stats();
    assert_eq!((stats.waited_local, stats.waited_server), (1, 1));
}

#[tokio::test(start_paused = true)]
async fn a_long_hold_fails_fast_with_the_servers_retry_after() {
    let start = Instant::now();
    let config = Config::new(10, Duration::from_secs(1))
        .unwrap()
        .with_max_wait(Duration::from_secs(2));
    let outbound = Outbound::global("api", config).build();
    let held = Response::builder()
        .status(503)
        .header("retry-after", "30")
        .body(())
        .unwrap();
    let (inner, sent) = recorder(start, held, Duration::ZERO);
    let svc = ClientLayer::new(outbound.clone()).layer(inner);
    svc.clone().oneshot(req()).await.unwrap();
    tokio::time::sleep(Duration::from_secs(10)).await;
    let err = svc.oneshot(req()).await.unwrap_err();
    let limited = err.limited().unwrap();
    assert_eq!(limited.retry_after(), Duration::from_secs(20));
    assert_eq!(
        ms(start.elapsed()),
        10_000,
        "refused at once, without waiting"
    );
    assert_eq!(sent.lock().unwrap().len(), 1);
    assert_eq!(outbound.held_for(&()), Some(Duration::from_secs(20)));
}

/// A global quota (one limiter, no map of keys) waits for its slot, gives a dropped waiter's slot
/// back and refuses beyond `max_wait` as a keyed one does.
#[tokio::test(start_paused = true)]
async fn a_global_quota_waits_gives_back_and_refuses() {
    let start = Instant::now();
    let config = Config::new(1, Duration::from_secs(1))
        .unwrap()
        .with_max_wait(Duration::from_millis(1500));
    let outbound = Outbound::global("api", config).build();
    let (inner, sent) = recorder(start, Response::new(()), Duration::ZERO);
    let svc = ClientLayer::new(outbound.clone()).layer(inner);

    svc.clone().oneshot(req()).await.unwrap(); // the burst of one, at 0
    let waiting = tokio::spawn(svc.clone().oneshot(req())); // reserves the slot at 1 s
    tokio::time::sleep(Duration::from_millis(500)).await;
    waiting.abort(); // dropped while it waits: nothing sent, its slot goes back
    assert!(waiting.await.unwrap_err().is_cancelled());
    svc.clone().oneshot(req()).await.unwrap(); // the dropped one's slot, at 1 s
    let second = tokio::spawn(svc.clone().oneshot(req())); // the slot at 2 s: 1 s of waiting
    for _ in 0..4 {
        tokio::task::yield_now().await;
    }
    // The next slot, at 3 s, is 2 s away: beyond the 1.5 s this client may wait.
    let err = svc.clone().oneshot(req()).await.unwrap_err();
    let limited = err.limited().expect("refused by the quota");
    assert_eq!(limited.cause(), ritmo_client::Cause::LocalQuota);
    assert_eq!(ms(start.elapsed()), 1000, "refused at once");
    second.await.unwrap().unwrap();
    assert_eq!(*sent.lock().unwrap(), vec![0, 1000, 2000]);
    let stats = outbound.stats();
    assert_eq!((stats.sent, stats.limited_local), (3, 1));
}
