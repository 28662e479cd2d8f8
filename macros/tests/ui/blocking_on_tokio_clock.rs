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
    #[rate_limited(permits = 10, period = "1s", max_wait = "1s")]
    fn search(&self) -> Result<(), ApiError>;
}

struct Backend;
impl Api for Backend {
    fn search(&self) -> Result<(), ApiError> {
        Ok(())
    }
}

pub fn build(registry: &ritmo::Registry<ritmo::server::TokioClock, 2>) {
    let api = ApiLimited::new(Backend, registry).unwrap();
    let _ = api.search();
}
fn main() {}
