use ritmo::{RateLimitExceeded};

#[derive(Debug)]
pub struct ApiError;
impl From<RateLimitExceeded> for ApiError {
    fn from(_: RateLimitExceeded) -> Self {
        ApiError
    }
}

pub trait Api {
    #[ritmo::rate_limited(permits = 10, period = "1s")]
    fn search(&self) -> Result<(), ApiError>;
}
fn main() {}
