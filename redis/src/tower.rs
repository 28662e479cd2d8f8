//! The HTTP layer's store (`ritmo-tower`'s `Store`) for the Redis limiters: swapping an in-process
//! quota for one shared by every instance is one line, the store given to the layer.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use ritmo_core::{AcquireError, RateLimitExceeded};
use ritmo_tower::{Decision, Denial, Grant, Policy, Status, Store};

use crate::{
    AsyncConnection, KeyStatus, RedisKeyedRateLimiter, RedisRateLimiter, Reservation, StoreKey,
};

fn status(s: KeyStatus) -> Status {
    Status::new(s.remaining(), s.reset())
}

/// The status of a refusal the store did not decide (the failure policy did): nothing left until
/// the retry.
fn unknown_status(error: &AcquireError) -> Status {
    let retry = error
        .rate_limited()
        .map_or(Duration::ZERO, RateLimitExceeded::retry_after);
    Status::new(0, retry)
}

impl<C: AsyncConnection> ritmo_tower::Permit for Reservation<C> {
    fn commit(self) {
        Reservation::commit(self);
    }

    /// Gives the permits back in the background (a destructor cannot wait for Redis): returns
    /// `false`, as the trait asks of remote stores.
    fn refund(self) -> bool {
        drop(self);
        false
    }

    fn remaining(&self) -> Duration {
        Reservation::remaining(self)
    }
}

type Acquire<C> = Pin<Box<dyn Future<Output = Result<Grant<Reservation<C>>, Denial>> + Send>>;

async fn acquire<K: StoreKey + ?Sized, C: AsyncConnection>(
    limiter: &RedisKeyedRateLimiter<K, C>,
    key: &K,
    permits: u32,
    max_wait: Option<Duration>,
) -> Result<Grant<Reservation<C>>, Denial> {
    match limiter.reserve_with_status(key, permits, max_wait).await {
        Ok(reservation) => {
            let permit = reservation.permit();
            Ok(Grant::new(
                reservation,
                permit.wait(),
                permit.status().map(status),
            ))
        }
        Err(refusal) => {
            let status = refusal
                .status
                .map_or_else(|| unknown_status(&refusal.error), status);
            Err(Denial::new(refusal.error, status))
        }
    }
}

/// One quota per key, shared through Redis: the layer's key type is the limiter's.
impl<K, C> Store for RedisKeyedRateLimiter<K, C>
where
    K: StoreKey + Clone + Send + Sync + 'static,
    C: AsyncConnection,
{
    type Key = K;
    type Permit = Reservation<C>;
    type Acquire = Acquire<C>;

    fn policy(&self) -> Policy {
        Policy::new(self.id(), self.config().permits(), self.config().period())
    }

    fn acquire(
        &self,
        key: &K,
        permits: u32,
        max_wait: Option<Duration>,
    ) -> Decision<Self::Permit, Self::Acquire> {
        let (limiter, key) = (self.clone(), key.clone());
        Decision::Later(Box::pin(async move {
            acquire(&limiter, &key, permits, max_wait).await
        }))
    }

    /// Read with the decision instead (no second round trip).
    fn status(&self, _key: &K) -> Option<Status> {
        None
    }
}

/// One quota for every request, shared through Redis: the keyed store of its one key.
impl<C: AsyncConnection> Store for RedisRateLimiter<C> {
    type Key = ();
    type Permit = Reservation<C>;
    type Acquire = Acquire<C>;

    fn policy(&self) -> Policy {
        Store::policy(&self.0)
    }

    fn acquire(
        &self,
        key: &(),
        permits: u32,
        max_wait: Option<Duration>,
    ) -> Decision<Self::Permit, Self::Acquire> {
        Store::acquire(&self.0, key, permits, max_wait)
    }

    fn status(&self, _key: &()) -> Option<Status> {
        None
    }
}
