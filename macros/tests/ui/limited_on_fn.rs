use ritmo::{RateLimitExceeded};

#[derive(Debug)]
pub struct ApiError;
impl From<RateLimitExceeded> for ApiError {
    fn from(_: RateLimitExceeded) -> Self {
        ApiError
    }
}

#[ritmo::limited]
fn search() -> Result<(), ApiError> {
    Ok(())
}
fn main() {}
