use ritmo::{RateLimitExceeded};

#[derive(Debug)]
pub struct ApiError;
impl From<RateLimitExceeded> for ApiError {
    fn from(_: RateLimitExceeded) -> Self {
        ApiError
    }
}

#[ritmo::limited]
pub trait Api {
    type Error;
    #[rate_limited(permits = 10, period = "1s")]
    fn search(&self) -> Result<(), Self::Error>;
}

struct Backend;
impl Api for Backend {
    type Error = std::fmt::Error;
    fn search(&self) -> Result<(), std::fmt::Error> {
        Ok(())
    }
}

static CLOCK: ritmo::ManualClock = ritmo::ManualClock::new();
static REGISTRY: ritmo::Registry<&ritmo::ManualClock, 2> = ritmo::Registry::new(&CLOCK);

pub fn build() {
    let api = ApiLimited::new(Backend, &REGISTRY).unwrap();
    let _ = api.search();
}
fn main() {}
