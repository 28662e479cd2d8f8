use ritmo::{RateLimitExceeded};

#[derive(Debug)]
pub struct ApiError;
impl From<RateLimitExceeded> for ApiError {
    fn from(_: RateLimitExceeded) -> Self {
        ApiError
    }
}

#[ritmo::rate_limited(permits = 10, period = "1s")]
fn fire() {}
fn main() {}
