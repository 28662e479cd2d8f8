//! The design page's `SearchApi`, annotated: `#[ritmo::limited]` generates `SearchApiLimited`,
//! which takes a permit before it calls the backend. On a `ManualClock`, so it runs instantly and
//! prints the same thing every time.
//!
//! ```text
//! cargo run --example annotated
//! ```

use core::future::Future;
use core::pin::pin;
use core::task::{Context, Poll, Waker};
use core::time::Duration;
use std::fmt;

use ritmo::{Clock, ManualClock, RateLimitExceeded, Registry};

/// A point on the map.
#[derive(Debug, Clone, Copy)]
pub struct Point {
    /// Degrees north.
    pub latitude: f64,
    /// Degrees east.
    pub longitude: f64,
}

/// What the API's calls fail with: a rejection by the limiter, or the backend's own error.
#[derive(Debug)]
pub enum ApiError {
    /// No permit in time: the backend was never called.
    Limited(RateLimitExceeded),
    /// The backend knows no such address.
    NotFound,
}

impl From<RateLimitExceeded> for ApiError {
    fn from(e: RateLimitExceeded) -> Self {
        ApiError::Limited(e)
    }
}

impl std::error::Error for ApiError {}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApiError::Limited(e) => write!(f, "rejected: {e}"),
            ApiError::NotFound => f.write_str("not found"),
        }
    }
}

/// A search API with a quota of 10 searches per second, and a geocoding quota of 5 per second
/// that `geocode` and `reverse` share.
#[ritmo::limited]
#[allow(async_fn_in_trait)]
pub trait SearchApi {
    /// Searches.
    #[rate_limited(permits = 10, period = "1s")]
    fn search(&self, query: &str) -> Result<String, ApiError>;

    /// An address to a point; waits up to 500 ms for a permit.
    #[rate_limited(name = "geocoding", permits = 5, period = "1s", max_wait = "500ms")]
    fn geocode(&self, address: &str) -> Result<Point, ApiError>;

    /// A point to an address, asynchronously; waits up to 500 ms for a permit.
    #[rate_limited(name = "geocoding", permits = 5, period = "1s", max_wait = "500ms")]
    async fn reverse(&self, at: Point) -> Result<String, ApiError>;
}

/// The backend the wrapper calls.
struct Backend;

impl SearchApi for Backend {
    fn search(&self, query: &str) -> Result<String, ApiError> {
        Ok(format!("results for {query}"))
    }
    fn geocode(&self, address: &str) -> Result<Point, ApiError> {
        match address {
            "" => Err(ApiError::NotFound),
            _ => Ok(Point {
                latitude: 38.7,
                longitude: -9.1,
            }),
        }
    }
    async fn reverse(&self, at: Point) -> Result<String, ApiError> {
        Ok(format!("{:.1},{:.1}", at.latitude, at.longitude))
    }
}

static CLOCK: ManualClock = ManualClock::new();
static REGISTRY: Registry<&ManualClock, 8> = Registry::new(&CLOCK);

fn at() -> String {
    format!("[{:>4} ms]", CLOCK.now() / 1_000_000)
}

fn show<T: fmt::Debug>(what: &str, result: Result<T, ApiError>) {
    match result {
        Ok(value) => println!("{} {what}: ok, {value:?}", at()),
        Err(e) => println!("{} {what}: {e}", at()),
    }
}

/// Runs a future that is ready at once: on a `ManualClock` a waiting call advances the clock
/// instead of sleeping, so nothing here ever pends.
fn now<F: Future>(future: F) -> F::Output {
    match pin!(future).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => output,
        Poll::Pending => unreachable!("nothing waits on a ManualClock"),
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let api = SearchApiLimited::new(Backend, &REGISTRY)?;

    println!("search: 10 per second, a full burst of 10 at once");
    for i in 0..10 {
        api.search(&format!("q{i}")).expect("the burst passes");
    }
    println!("{} 10 searches passed", at());
    show("the 11th search", api.search("one too many"));
    CLOCK.advance(Duration::from_millis(100));
    show("after 100 ms, one more", api.search("next"));
    show("and the one after it", api.search("again"));

    println!("\ngeocode and reverse share \"geocoding\": 5 per second, waiting up to 500 ms");
    for _ in 0..3 {
        api.geocode("Lisbon")?;
    }
    for _ in 0..2 {
        now(api.reverse(Point {
            latitude: 41.1,
            longitude: -8.6,
        }))?;
    }
    println!("{} 3 geocodes and 2 reverses spent the burst", at());
    show("geocode waits 200 ms for its permit", api.geocode("Porto"));
    show(
        "reverse waits another 200 ms",
        now(api.reverse(Point {
            latitude: 37.0,
            longitude: -7.9,
        })),
    );
    let shared = api.limiter("geocode").expect("geocode is limited");
    // Someone else books the next two slots (at 700 and 900 ms).
    shared.reserve().expect("a slot within 500 ms").commit();
    shared.reserve().expect("a slot within 500 ms").commit();
    show(
        "a geocode 600 ms away (over max_wait) is rejected at once",
        api.geocode("Faro"),
    );
    println!(
        "\nlimiters: {}",
        REGISTRY
            .snapshot()
            .iter()
            .map(|s| format!("{} ({}/{} available)", s.id, s.available_permits, s.permits))
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(())
}
