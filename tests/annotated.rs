#![allow(missing_docs, async_fn_in_trait, clippy::len_without_is_empty)]
//! `#[ritmo::limited]` and `#[ritmo::rate_limited]`: what the generated code does, call by call,
//! on fake clocks (and the std clock where parking and interruption are the point).

use core::future::Future;
use core::pin::pin;
use core::task::{Context, Poll, Waker};
use core::time::Duration;
use std::cell::Cell;
use std::sync::atomic::{AtomicU32, Ordering};

use ritmo::{
    Clock, ConfigError, ErrorCode, ManualClock, RateLimitExceeded, Reason, Registry, RegistryError,
    Settings,
};

const MS: u64 = 1_000_000;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point(pub i32, pub i32);

#[derive(Debug, PartialEq)]
pub enum ApiError {
    Limited(RateLimitExceeded),
    NotFound,
}

impl From<RateLimitExceeded> for ApiError {
    fn from(e: RateLimitExceeded) -> Self {
        ApiError::Limited(e)
    }
}

fn limited<T: core::fmt::Debug>(r: Result<T, ApiError>) -> RateLimitExceeded {
    match r {
        Err(ApiError::Limited(e)) => e,
        other => panic!("expected a rejection, got {other:?}"),
    }
}

/// Polls a future that must be ready at once (on a `ManualClock` waits advance the clock).
fn now_or_never<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("the future waited on a ManualClock"),
    }
}

#[ritmo::limited]
pub trait SearchApi {
    #[rate_limited(permits = 10, period = "1s")]
    fn search(&self, query: &str) -> Result<String, ApiError>;

    #[rate_limited(name = "geocoding", permits = 5, period = "1s", max_wait = "500ms")]
    fn geocode(&self, address: &str) -> Result<Point, ApiError>;

    #[rate_limited(name = "geocoding", permits = 5, period = "1s", max_wait = "500ms")]
    async fn reverse(&self, at: Point) -> Result<String, ApiError>;

    fn unlimited(&self) -> u32;
}

/// Counts the calls that reach it.
#[derive(Debug, Default)]
struct Backend {
    calls: AtomicU32,
}

impl Backend {
    fn calls(&self) -> u32 {
        self.calls.load(Ordering::SeqCst)
    }
    fn hit(&self) {
        self.calls.fetch_add(1, Ordering::SeqCst);
    }
}

impl SearchApi for &Backend {
    fn search(&self, query: &str) -> Result<String, ApiError> {
        self.hit();
        Ok(format!("results for {query}"))
    }
    fn geocode(&self, address: &str) -> Result<Point, ApiError> {
        self.hit();
        if address.is_empty() {
            return Err(ApiError::NotFound);
        }
        Ok(Point(address.len() as i32, 0))
    }
    async fn reverse(&self, at: Point) -> Result<String, ApiError> {
        self.hit();
        Ok(format!("{},{}", at.0, at.1))
    }
    fn unlimited(&self) -> u32 {
        self.hit();
        42
    }
}

#[test]
fn the_design_pages_story_burst_rejection_and_a_permit_every_100_ms() {
    static CLOCK: ManualClock = ManualClock::new();
    static REGISTRY: Registry<&ManualClock, 4> = Registry::new(&CLOCK);
    let backend = Backend::default();
    let api = SearchApiLimited::new(&backend, &REGISTRY).unwrap();

    for i in 0..10 {
        assert_eq!(
            api.search(&format!("q{i}")).unwrap(),
            format!("results for q{i}")
        );
    }
    let rejected = limited(api.search("one too many"));
    assert_eq!(
        backend.calls(),
        10,
        "a rejected call never reaches the backend"
    );
    assert_eq!(rejected.reason(), Reason::NoPermitInTime);
    assert_eq!(rejected.retry_after(), Duration::from_millis(100));
    assert_eq!(
        rejected.id(),
        "annotated::SearchApi::search(&str)",
        "the id is <module path>::<Trait>::<method>(<parameter types>)"
    );

    CLOCK.advance(Duration::from_millis(100));
    assert_eq!(api.search("next").unwrap(), "results for next");
    limited(api.search("again"));
    assert_eq!(backend.calls(), 11);
    assert_eq!(CLOCK.now(), 100 * MS, "max_wait 0: nothing waited");

    // Unlimited methods are delegated as they are.
    for _ in 0..20 {
        assert_eq!(api.unlimited(), 42);
    }
    assert_eq!(
        REGISTRY
            .get("annotated::SearchApi::search(&str)")
            .unwrap()
            .available_permits(),
        0
    );
}

#[test]
fn methods_sharing_a_name_share_one_limiter_and_waiting_advances_the_manual_clock() {
    static CLOCK: ManualClock = ManualClock::new();
    static REGISTRY: Registry<&ManualClock, 4> = Registry::new(&CLOCK);
    let backend = Backend::default();
    let api = SearchApiLimited::new(&backend, &REGISTRY).unwrap();
    assert!(core::ptr::eq(
        api.limiter("geocode").unwrap(),
        api.limiter("reverse").unwrap()
    ));
    assert_eq!(api.limiter("geocode").unwrap().id(), "geocoding");
    assert!(api.limiter("unlimited").is_none());

    // The burst of 5, spent by both methods.
    for _ in 0..3 {
        api.geocode("Lisbon").unwrap();
    }
    for _ in 0..2 {
        now_or_never(api.reverse(Point(1, 2))).unwrap();
    }
    assert_eq!(CLOCK.now(), 0);
    // The next waits 200 ms (1 s / 5) for its permit: the fake clock advances instead.
    assert_eq!(api.geocode("Porto").unwrap(), Point(5, 0));
    assert_eq!(CLOCK.now(), 200 * MS);
    // An async call waits the same way.
    assert_eq!(now_or_never(api.reverse(Point(3, 4))).unwrap(), "3,4");
    assert_eq!(CLOCK.now(), 400 * MS);
    // Two reservations ahead would be 600 ms: more than max_wait, rejected at once.
    api.geocode("Faro").unwrap(); // waits to 600 ms
    assert_eq!(CLOCK.now(), 600 * MS);
    let calls = backend.calls();
    let first = api.limiter("geocode").unwrap();
    first.try_acquire().unwrap_err();
    first.reserve().unwrap().commit(); // someone else books the next slot (800 ms)
    first.reserve().unwrap().commit(); // and the one after (1000 ms)
    let rejected = limited(api.geocode("Braga"));
    assert_eq!(rejected.retry_after(), Duration::from_millis(600));
    assert_eq!(CLOCK.now(), 600 * MS, "a rejection waits for nothing");
    assert_eq!(backend.calls(), calls, "and never reaches the backend");
    let rejected = limited(now_or_never(api.reverse(Point(0, 0))));
    assert_eq!(rejected.id(), "geocoding");
    // An error of the backend's own passes through untouched.
    CLOCK.advance(Duration::from_secs(5));
    assert_eq!(api.geocode(""), Err(ApiError::NotFound));
}

#[ritmo::limited]
pub trait Geocoder {
    #[rate_limited(name = "geocoding", permits = 6, period = "1s")]
    fn locate(&self, address: &str) -> Result<Point, ApiError>;
}

impl Geocoder for () {
    fn locate(&self, _: &str) -> Result<Point, ApiError> {
        Ok(Point(0, 0))
    }
}

#[ritmo::limited]
pub trait Mismatched {
    #[rate_limited(name = "shared", permits = 1, period = "1s")]
    fn a(&self) -> Result<(), ApiError>;
    #[rate_limited(name = "shared", permits = 1, period = "2s")]
    fn b(&self) -> Result<(), ApiError>;
}

impl Mismatched for () {
    fn a(&self) -> Result<(), ApiError> {
        Ok(())
    }
    fn b(&self) -> Result<(), ApiError> {
        Ok(())
    }
}

#[test]
fn a_shared_name_with_another_config_fails_construction_with_reg_008() {
    static CLOCK: ManualClock = ManualClock::new();
    static REGISTRY: Registry<&ManualClock, 4> = Registry::new(&CLOCK);
    let backend = Backend::default();
    SearchApiLimited::new(&backend, &REGISTRY).unwrap();
    let err = GeocoderLimited::new((), &REGISTRY).unwrap_err();
    assert_eq!(
        (err.code(), err.id()),
        (ErrorCode::ConfigMismatch, "geocoding")
    );
    assert!(err.to_string().starts_with("RITMO-REG-008"));
    // Within one trait too.
    let err = MismatchedLimited::new((), &REGISTRY).unwrap_err();
    assert_eq!(
        (err.code(), err.id()),
        (ErrorCode::ConfigMismatch, "shared")
    );
    // A full registry is REG-010.
    let small: Registry<&ManualClock, 1> = Registry::new(&CLOCK);
    let err = SearchApiLimited::new(&backend, &small).unwrap_err();
    assert_eq!(err.code(), ErrorCode::RegistryFull);
}

#[test]
fn settings_override_the_literal_attribute_by_attribute() {
    let clock = ManualClock::new();
    let registry: Registry<&ManualClock, 4> = Registry::new(&clock);
    let settings = Settings::new(&[
        ("configs.geocoding.max-wait", "0"),
        ("instances.geocoding.permits", "2"),
        ("instances.annotated::SearchApi::search(&str).permits", "3"),
    ]);
    let backend = Backend::default();
    let api = SearchApiLimited::with_settings(&backend, &registry, &settings).unwrap();
    let search = api.limiter("search").unwrap().config();
    // The config as the limiter applies it: the period is 3 emission intervals, each rounded up
    // to a whole nanosecond.
    assert_eq!(search.permits(), 3);
    assert!(search.period().abs_diff(Duration::from_secs(1)) < Duration::from_nanos(3));
    let geo = api.limiter("geocode").unwrap().config();
    assert_eq!((geo.permits(), geo.max_wait()), (2, Duration::ZERO));
    for _ in 0..3 {
        api.search("x").unwrap();
    }
    limited(api.search("x"));
    api.geocode("a").unwrap();
    api.geocode("b").unwrap();
    limited(api.geocode("c")); // max_wait 0 from configs.geocoding: no waiting
    assert_eq!(clock.now(), 0);

    // Without settings that name them, the literal stands.
    let clock = ManualClock::new();
    let registry: Registry<&ManualClock, 4> = Registry::new(&clock);
    let api = SearchApiLimited::with_settings(&backend, &registry, &Settings::new(&[("a.b", "c")]))
        .unwrap();
    assert_eq!(api.limiter("search").unwrap().config().permits(), 10);

    // A value that makes no valid config is REG-003, naming its key.
    let registry: Registry<&ManualClock, 4> = Registry::new(&clock);
    let bad = Settings::new(&[("instances.geocoding.permits", "0")]);
    let err = SearchApiLimited::with_settings(&backend, &registry, &bad).unwrap_err();
    let settings = err.settings().expect("a settings error");
    assert_eq!(
        (err.code(), settings.cause()),
        (ErrorCode::InvalidSetting, Some(ErrorCode::InvalidPermits))
    );
    assert_eq!(settings.key(), "instances.geocoding.permits");
    let bad = Settings::new(&[("instances.geocoding.period", "soon")]);
    let err = SearchApiLimited::with_settings(&backend, &registry, &bad).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidDuration);
}

#[cfg(feature = "serde")]
#[test]
fn settings_from_toml_and_the_environment() {
    use ritmo::server::settings::OwnedSettings;
    let file = OwnedSettings::from_toml_str("[instances.geocoding]\npermits = 4\n").unwrap();
    let env = OwnedSettings::from_env_map([("RITMO_CONFIGS_GEOCODING_MAX_WAIT", "0")]).unwrap();
    let settings = file.then(env);
    let clock = ManualClock::new();
    let registry: Registry<&ManualClock, 4> = Registry::new(&clock);
    let backend = Backend::default();
    let api = SearchApiLimited::with_settings(&backend, &registry, &settings.settings()).unwrap();
    let geo = api.limiter("reverse").unwrap().config();
    assert_eq!((geo.permits(), geo.max_wait()), (4, Duration::ZERO));
}

const PERMITS: u32 = 2;
const NONE: u32 = 0;

#[ritmo::limited]
pub trait Computed {
    #[rate_limited(permits = PERMITS, period = Duration::from_millis(10), max_wait = "0", enabled = true)]
    fn fine(&self) -> Result<u8, ApiError>;
}

#[ritmo::limited]
pub trait ComputedBadly {
    #[rate_limited(permits = NONE, period = "1s")]
    fn broken(&self) -> Result<u8, ApiError>;
}

#[ritmo::limited]
pub trait Disabled {
    #[rate_limited(permits = 1, period = "1h", enabled = false)]
    fn free(&self) -> Result<u8, ApiError>;
}

impl Computed for () {
    fn fine(&self) -> Result<u8, ApiError> {
        Ok(1)
    }
}
impl ComputedBadly for () {
    fn broken(&self) -> Result<u8, ApiError> {
        Ok(1)
    }
}
impl Disabled for () {
    fn free(&self) -> Result<u8, ApiError> {
        Ok(1)
    }
}

#[test]
fn limits_given_as_expressions_are_checked_when_the_wrapper_is_built() {
    let clock = ManualClock::new();
    let registry: Registry<&ManualClock, 4> = Registry::new(&clock);
    let api = ComputedLimited::new((), &registry).unwrap();
    assert_eq!(
        api.limiter("fine").unwrap().config().period(),
        Duration::from_millis(10)
    );
    api.fine().unwrap();
    api.fine().unwrap();
    limited(api.fine());
    let err: RegistryError = ComputedBadlyLimited::new((), &registry).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidPermits);
    assert_eq!(
        err.config().map(ConfigError::code),
        Some(ErrorCode::InvalidPermits)
    );
}

#[test]
fn a_disabled_limit_lets_every_call_through() {
    let clock = ManualClock::new();
    let registry: Registry<&ManualClock, 4> = Registry::new(&clock);
    let api = DisabledLimited::new((), &registry).unwrap();
    for _ in 0..100 {
        api.free().unwrap();
    }
    assert_eq!(api.limiter("free").unwrap().available_permits(), 1);
}

// ---- generics, lifetimes, &mut self, self, default methods, where clauses, impl Trait ----

#[ritmo::limited]
pub trait Store<K>
where
    K: Clone,
{
    type Error;
    const KIND: &'static str;

    #[rate_limited(permits = 2, period = "1s")]
    fn put(&mut self, key: K, value: impl Into<String>) -> Result<(), Self::Error>;

    #[rate_limited(permits = 3, period = "1s")]
    fn get<'a>(&'a self, key: &K) -> Result<Option<&'a str>, Self::Error>
    where
        K: PartialEq;

    /// A default method, limited: the wrapper still calls the store's own version.
    #[rate_limited(name = "store-len", permits = 1, period = "1s")]
    fn len(&self) -> Result<usize, Self::Error> {
        Ok(0)
    }

    fn describe(&self) -> String {
        format!("a {} store", Self::KIND)
    }

    #[rate_limited(name = "store-drain", permits = 1, period = "1s")]
    fn drain(self) -> Result<Vec<(K, String)>, Self::Error>
    where
        Self: Sized;

    fn kind() -> &'static str
    where
        Self: Sized,
    {
        Self::KIND
    }
}

#[derive(Debug, Clone, Default)]
struct VecStore(Vec<(u8, String)>);

impl Store<u8> for VecStore {
    type Error = ApiError;
    const KIND: &'static str = "vec";

    fn put(&mut self, key: u8, value: impl Into<String>) -> Result<(), ApiError> {
        self.0.push((key, value.into()));
        Ok(())
    }
    fn get<'a>(&'a self, key: &u8) -> Result<Option<&'a str>, ApiError> {
        Ok(self
            .0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str()))
    }
    fn len(&self) -> Result<usize, ApiError> {
        Ok(self.0.len())
    }
    fn drain(self) -> Result<Vec<(u8, String)>, ApiError> {
        Ok(self.0)
    }
}

#[test]
fn generic_traits_keep_working_through_the_wrapper() {
    let clock = ManualClock::new();
    let registry: Registry<&ManualClock, 8> = Registry::new(&clock);
    let mut store = StoreLimited::new(VecStore::default(), &registry).unwrap();
    store.put(1, "one").unwrap();
    store.put(2, String::from("two")).unwrap();
    limited(store.put(3, "three"));
    assert_eq!(store.inner().0.len(), 2, "the rejected put never ran");
    assert_eq!(store.get(&2).unwrap(), Some("two"));
    assert_eq!(store.get(&9).unwrap(), None);
    store.get(&1).unwrap();
    limited(store.get(&1));
    assert_eq!(
        store.len().unwrap(),
        2,
        "the store's own len, not the default"
    );
    limited(store.len());
    assert_eq!(store.describe(), "a vec store");
    assert_eq!(
        <StoreLimited<VecStore, &ManualClock> as Store<u8>>::KIND,
        "vec"
    );
    assert_eq!(StoreLimited::<VecStore, &ManualClock>::kind(), "vec");
    assert_eq!(
        store.limiter("put").unwrap().id(),
        "annotated::Store::put(K, impl Into<String>)"
    );
    assert_eq!(
        store.limiter("get").unwrap().id(),
        "annotated::Store::get(&K)"
    );
    assert_eq!(store.clone().drain().unwrap().len(), 2);
    limited(store.clone().drain());
    clock.advance(Duration::from_secs(1));
    assert_eq!(store.into_inner().0.len(), 2);
}

// ---- free functions, inherent methods, impl blocks ----

static FN_CLOCK: ManualClock = ManualClock::new();
static FN_LIMITERS: Registry<&ManualClock, 8> = Registry::new(&FN_CLOCK);

static PINGS: AtomicU32 = AtomicU32::new(0);

#[ritmo::rate_limited(permits = 2, period = "1s", registry = FN_LIMITERS)]
fn ping(n: u32) -> Result<u32, ApiError> {
    PINGS.fetch_add(1, Ordering::SeqCst);
    if n == 0 {
        return Err(ApiError::NotFound);
    }
    Ok(n + 1)
}

#[ritmo::rate_limited(name = "fn-shared", permits = 1, period = "1s", max_wait = "1s", registry = FN_LIMITERS)]
async fn fetch(n: u32) -> Result<u32, RateLimitExceeded> {
    Ok(n * 2)
}

#[ritmo::rate_limited(name = "fn-shared", permits = 1, period = "1s", max_wait = "1s", registry = FN_LIMITERS)]
fn fetch_now(n: u32) -> Result<u32, RateLimitExceeded> {
    Ok(n * 3)
}

#[derive(Debug)]
struct Client {
    calls: Cell<u32>,
}

impl Client {
    #[ritmo::rate_limited(permits = 1, period = "1s", registry = FN_LIMITERS)]
    fn get(&self, path: &str) -> Result<usize, ApiError> {
        self.calls.set(self.calls.get() + 1);
        Ok(path.len())
    }
}

#[derive(Debug)]
struct Uploader;

#[ritmo::limited(registry = FN_LIMITERS)]
impl Uploader {
    #[rate_limited(permits = 1, period = "1s")]
    fn upload(&mut self, bytes: &[u8]) -> Result<usize, ApiError> {
        Ok(bytes.len())
    }

    fn unlimited(&self) -> u8 {
        1
    }
}

#[test]
fn limited_functions_and_methods_share_the_named_registry() {
    assert_eq!(ping(1).unwrap(), 2);
    assert_eq!(
        ping(0),
        Err(ApiError::NotFound),
        "the body's own error and early return"
    );
    let rejected = limited(ping(5));
    assert_eq!(
        PINGS.load(Ordering::SeqCst),
        2,
        "the rejected call's body never ran"
    );
    assert_eq!(rejected.id(), "annotated::ping(u32)");

    // Two functions sharing a name share a limiter; the second waits by advancing the clock.
    let before = FN_CLOCK.now();
    assert_eq!(now_or_never(fetch(2)), Ok(4));
    assert_eq!(fetch_now(2), Ok(6));
    assert_eq!(FN_CLOCK.now(), before + 1_000 * MS);
    assert_eq!(FN_LIMITERS.get("fn-shared").unwrap().available_permits(), 0);

    let client = Client {
        calls: Cell::new(0),
    };
    assert_eq!(client.get("/a").unwrap(), 2);
    limited(client.get("/b"));
    assert_eq!(client.calls.get(), 1);
    assert!(FN_LIMITERS.get("annotated::get(&str)").is_ok());

    let mut up = Uploader;
    assert_eq!(up.upload(b"abc").unwrap(), 3);
    limited(up.upload(b"d"));
    assert_eq!(up.unlimited(), 1);
    assert!(
        FN_LIMITERS
            .get("annotated::Uploader::upload(&[u8])")
            .is_ok()
    );
}

#[cfg(feature = "std")]
mod std_clock {
    use super::*;
    use ritmo::server::{Interrupt, StdClock};
    use std::sync::LazyLock;

    #[ritmo::rate_limited(permits = 3, period = "1h")]
    fn on_the_default_registry() -> Result<(), RateLimitExceeded> {
        Ok(())
    }

    /// Named without its clock, the wrapper is on the server's default clock.
    struct Service {
        api: SearchApiLimited<'static, &'static Backend>,
    }

    #[test]
    fn the_wrappers_clock_defaults_to_the_std_clock() {
        static BACKEND: Backend = Backend {
            calls: AtomicU32::new(0),
        };
        let service = Service {
            api: SearchApiLimited::new(&BACKEND, ritmo::server::default_registry()).unwrap(),
        };
        assert_eq!(service.api.search("x").unwrap(), "results for x");
        let _: &ritmo::RateLimiter<StdClock> = service.api.limiter("search").unwrap();
    }

    #[test]
    fn without_a_registry_the_limiter_lives_in_the_default_one() {
        for _ in 0..3 {
            on_the_default_registry().unwrap();
        }
        assert!(on_the_default_registry().is_err());
        let limiter = ritmo::server::default_registry()
            .get("annotated::std_clock::on_the_default_registry()")
            .unwrap();
        assert_eq!(limiter.config().permits(), 3);
    }

    static PARKING: LazyLock<Registry<StdClock, 4>> =
        LazyLock::new(|| Registry::new(StdClock::new()));

    static RAN: AtomicU32 = AtomicU32::new(0);

    #[ritmo::rate_limited(permits = 1, period = "20ms", max_wait = "10s", registry = PARKING)]
    fn parks(n: u32) -> Result<u32, RateLimitExceeded> {
        RAN.fetch_add(1, Ordering::SeqCst);
        Ok(n)
    }

    #[ritmo::rate_limited(permits = 1, period = "1h", max_wait = "2h", registry = PARKING)]
    fn parks_long() -> Result<(), RateLimitExceeded> {
        RAN.fetch_add(100, Ordering::SeqCst);
        Ok(())
    }

    #[test]
    fn a_plain_function_parks_until_its_slot_and_can_be_interrupted() {
        assert_eq!(parks(1), Ok(1));
        assert_eq!(parks(2), Ok(2)); // parked for its slot, about 20 ms
        assert_eq!(RAN.load(Ordering::SeqCst), 2);

        parks_long().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = std::thread::spawn(move || {
            tx.send(Interrupt::current()).unwrap();
            parks_long()
        });
        let handle = rx.recv().unwrap();
        let limiter = PARKING.get("annotated::std_clock::parks_long()").unwrap();
        while limiter.retry_after() < Duration::from_secs(3600 + 1800) {
            std::thread::yield_now(); // until the waiter has reserved its slot
        }
        handle.interrupt();
        let err = waiter.join().unwrap().unwrap_err();
        assert_eq!(err.reason(), Reason::Interrupted);
        assert_eq!(
            RAN.load(Ordering::SeqCst),
            102,
            "the interrupted call never ran"
        );
        // Its permit went back: the next slot is an hour away again, not two.
        assert!(limiter.retry_after() <= Duration::from_secs(3600));
    }
}

#[cfg(feature = "tokio")]
mod on_tokio {
    use super::*;
    use ritmo::server::TokioClock;

    /// Async only: `TokioClock` sleeps, it does not block threads.
    #[ritmo::limited]
    pub trait Reverse {
        #[rate_limited(name = "geocoding", permits = 5, period = "1s", max_wait = "500ms")]
        async fn reverse(&self, at: Point) -> Result<String, ApiError>;
    }

    impl Reverse for &Backend {
        async fn reverse(&self, at: Point) -> Result<String, ApiError> {
            SearchApi::reverse(self, at).await
        }
    }

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn an_async_call_sleeps_for_its_slot_and_dropping_it_returns_the_permit() {
        let clock = TokioClock::new();
        let registry: Registry<TokioClock, 4> = Registry::new(clock);
        let backend = Backend::default();
        let api = ReverseLimited::new(&backend, &registry).unwrap();
        for _ in 0..5 {
            api.reverse(Point(0, 0)).await.unwrap();
        }
        let start = clock.now();
        // Sleeps (paused time jumps) 200 ms for its slot, without a thread.
        api.reverse(Point(1, 1)).await.unwrap();
        assert!(clock.now() >= start + 200 * MS);
        assert_eq!(backend.calls(), 6);

        // A call dropped while it waits gives its permit back (it was the last reservation).
        let limiter = api.limiter("reverse").unwrap();
        let wait_before = limiter.retry_after();
        {
            let mut call = pin!(api.reverse(Point(2, 2)));
            let polled = core::future::poll_fn(|cx| Poll::Ready(call.as_mut().poll(cx))).await;
            assert!(polled.is_pending());
            assert!(limiter.retry_after() > wait_before);
        }
        assert_eq!(limiter.retry_after(), wait_before);
        assert_eq!(backend.calls(), 6, "the dropped call never ran");
    }
}

// ---- functions returning `impl Future + Send` (not `async fn`) ----

static FUTURE_CLOCK: ManualClock = ManualClock::new();
static FUTURE_LIMITERS: Registry<&ManualClock, 4> = Registry::new(&FUTURE_CLOCK);
static FUTURE_BODIES: AtomicU32 = AtomicU32::new(0);

/// A free function that returns its future: the body runs only once the permit is taken.
#[ritmo::rate_limited(permits = 2, period = "1s", registry = FUTURE_LIMITERS)]
fn lookup(n: u32) -> impl Future<Output = Result<u32, ApiError>> + Send {
    FUTURE_BODIES.fetch_add(1, Ordering::SeqCst);
    async move { Ok(n + 100) }
}

/// A trait whose methods return their futures: the wrapper limits them (without `+ Send`: the
/// wrapper works over any clock, whose sleep is not known to be `Send`).
#[ritmo::limited]
trait Search {
    #[rate_limited(permits = 1, period = "1s")]
    fn find(&self, q: u32) -> impl Future<Output = Result<u32, ApiError>>;

    #[rate_limited(permits = 1, period = "1s")]
    fn store(&mut self, q: u32) -> impl Future<Output = Result<u32, ApiError>>;
}

#[derive(Debug, Default)]
struct Finder {
    stored: u32,
}

// Written as a function returning its future on purpose: that is the form under test.
#[allow(clippy::manual_async_fn)]
impl Search for Finder {
    fn find(&self, q: u32) -> impl Future<Output = Result<u32, ApiError>> {
        async move { Ok(q * 10) }
    }

    fn store(&mut self, q: u32) -> impl Future<Output = Result<u32, ApiError>> {
        self.stored += q;
        let total = self.stored;
        async move { Ok(total) }
    }
}

/// A trait that promises `Send` futures, limited on its implementation's method.
trait Remote {
    fn call(&self, q: u32) -> impl Future<Output = Result<u32, ApiError>> + Send;
}

struct Server;

#[allow(clippy::manual_async_fn)]
impl Remote for Server {
    #[ritmo::rate_limited(permits = 1, period = "1s", registry = FUTURE_LIMITERS)]
    fn call(&self, q: u32) -> impl Future<Output = Result<u32, ApiError>> + Send {
        async move { Ok(q + 1) }
    }
}

fn assert_send<T: Send>(t: T) -> T {
    t
}

#[test]
fn functions_returning_impl_future_send_are_limited_when_polled() {
    assert_eq!(now_or_never(assert_send(lookup(1))), Ok(101));
    assert_eq!(now_or_never(lookup(2)), Ok(102));
    let refused = limited(now_or_never(lookup(3)));
    assert_eq!(refused.reason(), Reason::NoPermitInTime);
    assert_eq!(
        FUTURE_BODIES.load(Ordering::SeqCst),
        2,
        "a refused call never runs the body"
    );

    static TRAIT_CLOCK: ManualClock = ManualClock::new();
    static TRAIT_LIMITERS: Registry<&ManualClock, 4> = Registry::new(&TRAIT_CLOCK);
    let mut api = SearchLimited::new(Finder::default(), &TRAIT_LIMITERS).unwrap();
    assert_eq!(now_or_never(api.find(4)), Ok(40));
    assert_eq!(
        limited(now_or_never(api.find(5))).reason(),
        Reason::NoPermitInTime
    );
    assert_eq!(now_or_never(api.store(7)), Ok(7));
    limited(now_or_never(api.store(8)));
    TRAIT_CLOCK.advance(Duration::from_secs(1));
    assert_eq!(now_or_never(api.store(9)), Ok(16));
    assert_eq!(
        api.into_inner().stored,
        16,
        "the refused call never reached the backend"
    );

    assert_eq!(now_or_never(assert_send(Server.call(1))), Ok(2));
    assert_eq!(
        limited(now_or_never(Server.call(2))).reason(),
        Reason::NoPermitInTime
    );
}
