use ritmo::{RateLimitExceeded};

#[derive(Debug)]
pub struct ApiError;
impl From<RateLimitExceeded> for ApiError {
    fn from(_: RateLimitExceeded) -> Self {
        ApiError
    }
}

pub struct PlainError;

#[ritmo::limited]
pub trait Api {
    #[rate_limited(permits = 10, period = "1s")]
    fn search(&self) -> Result<(), PlainError>;
}
fn main() {}
