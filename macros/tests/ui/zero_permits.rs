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
    #[rate_limited(permits = 0, period = "1s")]
    fn search(&self) -> Result<(), ApiError>;
}
fn main() {}
