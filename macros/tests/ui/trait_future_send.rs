use core::future::Future;
use ritmo::RateLimitExceeded;

#[ritmo::limited]
pub trait Api {
    #[rate_limited(permits = 10, period = "1s")]
    fn fetch(&self) -> impl Future<Output = Result<u32, RateLimitExceeded>> + Send;
}
fn main() {}
