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
    fn duplicate(&self) -> Self;
}
fn main() {}
