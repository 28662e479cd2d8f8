//! The client layer takes its quota through the server layer's `Store`, so every kind is a
//! client's quota: one limiter (`Outbound::global`), a keyed limiter (`Outbound::per_host`), and,
//! through `Outbound::with_quota`, `Bands` and a tiered keyed limiter. For each, requests made
//! together on tokio's paused clock are compared with the one reference model of SPEC's rules
//! (`ritmo-test-support`): each request is sent at once, sent after its slot's wait, or refused
//! with the model's `retry_after`, and the client's counts agree. (A Redis quota: ritmo-redis's
//! `tests/client.rs`.)

use std::collections::{BTreeMap, HashMap};
use std::convert::Infallible;
use std::future::ready;
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::{Request, Response};
use ritmo_client::{ClientLayer, Outbound, Target};
use ritmo_core::keyed::{Tier, Tiers};
use ritmo_core::{Bands, Config};
use ritmo_std::{KeyedRateLimiter, TokioClock};
use ritmo_test_support::{BandsModel, Gcra, KeyedModel, Outcome, TieredModel, Units};
use ritmo_tower::Store;
use tokio::time::Instant;
use tower::{Layer, ServiceExt, service_fn};

/// What became of one request: sent this long after the start, or refused with this
/// `retry_after`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seen {
    Sent(Duration),
    Refused(Duration),
}

impl Seen {
    /// The model's answer to a reservation made at the start (the clock reading 0).
    fn of(outcome: &Outcome) -> Seen {
        match outcome {
            Outcome::Reserved { wait, .. } => Seen::Sent(*wait),
            Outcome::Rejected { retry_after } => Seen::Refused(*retry_after),
            other => panic!("the model answered {other:?}"),
        }
    }
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn host(target: &Target<'_>) -> String {
    target.host.unwrap_or_default().to_owned()
}

/// Sends one request to each of `hosts`, all made at the start (each reserves its slot before
/// the next is made), through a `ClientLayer` on `outbound`; what became of each, and the
/// client's counts checked against it.
async fn drive<K, Q>(outbound: Outbound<K, Q>, hosts: &[&str]) -> Vec<Seen>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    Q: Store<Key = K>,
{
    let start = Instant::now();
    let arrived: Arc<Mutex<BTreeMap<usize, Duration>>> = Arc::default();
    let log = Arc::clone(&arrived);
    let inner = service_fn(move |request: Request<()>| {
        let n = request.headers()["x-n"].to_str().unwrap().parse().unwrap();
        log.lock().unwrap().insert(n, start.elapsed());
        ready(Ok::<_, Infallible>(Response::new(())))
    });
    let svc = ClientLayer::new(outbound.clone()).layer(inner);
    let mut requests = Vec::new();
    for (n, host) in hosts.iter().enumerate() {
        let request = Request::get(format!("http://{host}/"))
            .header("x-n", n)
            .body(())
            .unwrap();
        requests.push(tokio::spawn(svc.clone().oneshot(request)));
        tokio::task::yield_now().await;
    }
    let mut seen = Vec::new();
    for (n, request) in requests.into_iter().enumerate() {
        seen.push(match request.await.unwrap() {
            Ok(_) => Seen::Sent(arrived.lock().unwrap()[&n]),
            Err(error) => Seen::Refused(error.limited().unwrap().retry_after()),
        });
    }
    let stats = outbound.stats();
    let count = |f: fn(&Seen) -> bool| seen.iter().filter(|s| f(s)).count() as u64;
    assert_eq!(stats.sent, count(|s| matches!(s, Seen::Sent(_))));
    assert_eq!(
        stats.waited_local,
        count(|s| matches!(s, Seen::Sent(w) if !w.is_zero()))
    );
    assert_eq!(
        stats.limited_local,
        count(|s| matches!(s, Seen::Refused(_)))
    );
    seen
}

/// 3 per 1.5 s, waiting up to 1.2 s: a burst of 3, then one every 500 ms while the wait fits.
#[tokio::test(start_paused = true)]
async fn one_limiter() {
    let config = Config::new(3, ms(1500)).unwrap().with_max_wait(ms(1200));
    let seen = drive(Outbound::global("one", config).build(), &["a"; 7]).await;
    let mut model = Gcra::new(Units::NANOS, config);
    let expected: Vec<Seen> = (0..7)
        .map(|_| Seen::of(&model.reserve_within(0, 1, config.max_wait()).0))
        .collect();
    assert_eq!(seen, expected);
    // Not vacuous: some sent at once, some after a wait, some refused.
    assert!(expected.contains(&Seen::Sent(ms(0))) && expected.contains(&Seen::Sent(ms(1000))));
    assert!(matches!(expected[6], Seen::Refused(_)));
}

/// 2 per second and 3 per minute together, waiting up to 1.2 s: the minute's band refuses the
/// fourth (its slot 20 s away), where the second's alone would have let it wait.
#[tokio::test(start_paused = true)]
async fn bands() {
    let configs = [
        Config::new(2, ms(1000)).unwrap(),
        Config::new(3, Duration::from_secs(60)).unwrap(),
    ];
    let max_wait = ms(1200);
    let store = Arc::new(Bands::new("bands", configs, TokioClock::new()));
    let config = configs[0].with_max_wait(max_wait);
    let outbound = Outbound::with_quota("bands", config, Arc::clone(&store), |_: &Target<'_>| ());
    let seen = drive(outbound.build(), &["a"; 5]).await;
    let mut model = BandsModel::new(Units::NANOS, &configs, max_wait);
    let expected: Vec<Seen> = (0..5)
        .map(|_| Seen::of(&model.reserve_within(0, 1, max_wait).0))
        .collect();
    assert_eq!(seen, expected);
    assert_eq!(expected[2], Seen::Sent(ms(500)));
    assert_eq!(expected[3], Seen::Refused(Duration::from_secs(20)));
    assert_eq!(store.available_permits_per_band(), [0, 0]);
}

/// One quota per host (2 per second, waiting up to 600 ms): two hosts' requests interleaved,
/// each host on its own.
#[tokio::test(start_paused = true)]
async fn keyed_per_host() {
    let config = Config::new(2, ms(1000)).unwrap().with_max_wait(ms(600));
    let hosts = [
        "a.test", "b.test", "a.test", "a.test", "b.test", "a.test", "b.test", "b.test",
    ];
    let seen = drive(Outbound::per_host("hosts", config).build(), &hosts).await;
    let mut model = KeyedModel::new(Units::NANOS, config, ritmo_client::DEFAULT_MAX_KEYS);
    let expected: Vec<Seen> = hosts
        .iter()
        .map(|h| {
            Seen::of(
                &model
                    .reserve_within(&format!("{h}:80"), 0, 1, config.max_wait())
                    .0,
            )
        })
        .collect();
    assert_eq!(seen, expected);
    assert_eq!(expected[5], Seen::Refused(ms(1000)));
}

/// A tiered keyed limiter, each host on the plan a map gives it (free: 1 per second; pro: 2 per
/// 500 ms), the client waiting up to 300 ms.
#[tokio::test(start_paused = true)]
async fn tiered_keyed() {
    let free = Config::new(1, ms(1000)).unwrap();
    let pro = Config::new(2, ms(500)).unwrap();
    let plans: HashMap<String, &'static str> = [("pro.test".to_owned(), "pro")].into();
    let tiers = Tiers::new(
        [Tier::new("free", free), Tier::new("pro", pro)],
        move |h: &String| plans.get(h).copied().unwrap_or("free"),
    );
    let store = Arc::new(KeyedRateLimiter::tiered_with_clock(
        "plans",
        tiers,
        100,
        TokioClock::new(),
    ));
    let config = free.with_max_wait(ms(300));
    let outbound = Outbound::with_quota("plans", config, store, host);
    let hosts = [
        "free.test",
        "pro.test",
        "pro.test",
        "free.test",
        "pro.test",
        "pro.test",
    ];
    let seen = drive(outbound.build(), &hosts).await;
    let mut model = TieredModel::new(Units::NANOS, vec![free, pro], 100);
    model.set_tier(&"pro.test".to_owned(), 1);
    let expected: Vec<Seen> = hosts
        .iter()
        .map(|h| Seen::of(&model.reserve_within(&h.to_string(), 0, 1, Some(ms(300))).0))
        .collect();
    assert_eq!(seen, expected);
    assert_eq!(expected[4], Seen::Sent(ms(250)));
    assert_eq!(expected[3], Seen::Refused(ms(1000)));
}
