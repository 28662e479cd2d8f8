//! The stores for limiters shared by `Arc` (`Arc<RateLimiter<C>>`, `Arc<KeyedRateLimiter<K, C>>`).
//!
//! A limiter's reservation borrows the limiter, and a request's permit must outlive the call that
//! made it. With a `&'static` limiter the reservation is `'static`; with an `Arc` the permit has to
//! own the `Arc` and the reservation that borrows it. An `async` block owns both safely (the
//! compiler builds the self-reference, pinned in a box): it makes the reservation, then waits for
//! the permit's orders (commit, refund, read the time left), each given by polling it once.
//! Dropping the permit drops the block, and with it the reservation, which gives its permits back
//! by the tail rule, as a reservation does.
//!
//! One allocation per request that reserves, on these stores only; a `&'static` limiter needs
//! none.

use core::fmt;
use core::future::{Future, Pending};
use core::pin::Pin;
use core::task::{Context, Poll, Waker};
use core::time::Duration;
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use ritmo_core::keyed::TierSet;
use ritmo_core::{AcquireError, Clock, RateLimiter, Reservation};
use ritmo_std::{KeyedRateLimiter, KeyedReservation};

use crate::store::{
    Decision, Denial, Grant, Permit, Policy, Status, Store, keyed_denial, keyed_policies,
    keyed_status, limiter_status,
};

/// What a permit asks of its reservation.
#[derive(Debug, Clone, Copy)]
enum Order {
    Commit,
    Refund,
    Remaining,
}

/// What the permit and its reservation's block share.
#[derive(Debug, Default)]
struct Mailbox {
    /// The reservation's first answer: the wait for its slot, or the refusal.
    decided: Option<Result<Duration, AcquireError>>,
    order: Option<Order>,
    remaining: Duration,
    returned: bool,
}

fn lock(mailbox: &Mutex<Mailbox>) -> MutexGuard<'_, Mailbox> {
    // A panic while the lock was held leaves plain numbers behind: still readable.
    mailbox.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The next order, once the permit has given one.
struct NextOrder<'a>(&'a Mutex<Mailbox>);

impl Future for NextOrder<'_> {
    type Output = Order;

    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Order> {
        // Polled only by the permit, right after it wrote an order: no waker to keep.
        match lock(self.0).order.take() {
            Some(order) => Poll::Ready(order),
            None => Poll::Pending,
        }
    }
}

/// A reservation of either kind, as the block drives it.
trait Reserved: Send {
    fn commit(self);
    fn cancel(self) -> bool;
    fn remaining(&self) -> Duration;
    fn is_ready(&self) -> bool;
}

impl<C: Clock + Sync> Reserved for Reservation<'_, C> {
    fn commit(self) {
        Reservation::commit(self);
    }
    fn cancel(self) -> bool {
        Reservation::cancel(self)
    }
    fn remaining(&self) -> Duration {
        Reservation::remaining(self)
    }
    fn is_ready(&self) -> bool {
        Reservation::is_ready(self)
    }
}

impl<K, C, P> Reserved for KeyedReservation<'_, K, C, P>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    C: Clock + Send + Sync,
    P: TierSet<K> + Sync,
{
    fn commit(self) {
        KeyedReservation::commit(self);
    }
    fn cancel(self) -> bool {
        KeyedReservation::cancel(self)
    }
    fn remaining(&self) -> Duration {
        KeyedReservation::remaining(self)
    }
    fn is_ready(&self) -> bool {
        KeyedReservation::is_ready(self)
    }
}

/// Reports the reservation (or the refusal), then carries out the permit's orders until it is
/// committed or refunded.
async fn serve<R: Reserved>(
    decision: Result<R, AcquireError>,
    max_wait: Duration,
    mailbox: &Mutex<Mailbox>,
) {
    let reservation = match decision {
        Ok(reservation) => reservation,
        Err(error) => {
            lock(mailbox).decided = Some(Err(error));
            return;
        }
    };
    let wait = if max_wait.is_zero() || reservation.is_ready() {
        Duration::ZERO
    } else {
        reservation.remaining()
    };
    lock(mailbox).decided = Some(Ok(wait));
    loop {
        match NextOrder(mailbox).await {
            Order::Remaining => {
                let remaining = reservation.remaining();
                lock(mailbox).remaining = remaining;
            }
            Order::Commit => return reservation.commit(),
            Order::Refund => {
                let returned = reservation.cancel();
                lock(mailbox).returned = returned;
                return;
            }
        }
    }
}

type Block = Pin<Box<dyn Future<Output = ()> + Send>>;

/// The permits of a request on a limiter shared by `Arc`: its reservation, owned with the `Arc`.
pub struct OwnedPermit {
    block: Mutex<Block>,
    mailbox: Arc<Mutex<Mailbox>>,
}

impl fmt::Debug for OwnedPermit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnedPermit").finish_non_exhaustive()
    }
}

impl OwnedPermit {
    /// Runs `block` to its first stop: the reservation made, or refused.
    fn start(
        block: impl Future<Output = ()> + Send + 'static,
        mailbox: Arc<Mutex<Mailbox>>,
    ) -> Result<(OwnedPermit, Duration), AcquireError> {
        let permit = OwnedPermit {
            block: Mutex::new(Box::pin(block)),
            mailbox,
        };
        permit.poll();
        let decided = lock(&permit.mailbox).decided.take();
        // The block decides before its first stop; a refusal has nothing to give back.
        decided
            .unwrap_or(Ok(Duration::ZERO))
            .map(|wait| (permit, wait))
    }

    fn poll(&self) {
        let mut block = self.block.lock().unwrap_or_else(PoisonError::into_inner);
        let _ = block.as_mut().poll(&mut Context::from_waker(Waker::noop()));
    }

    fn order(&self, order: Order) {
        lock(&self.mailbox).order = Some(order);
        self.poll();
    }
}

impl Permit for OwnedPermit {
    fn commit(self) {
        self.order(Order::Commit);
    }

    fn refund(self) -> bool {
        self.order(Order::Refund);
        lock(&self.mailbox).returned
    }

    fn remaining(&self) -> Duration {
        self.order(Order::Remaining);
        lock(&self.mailbox).remaining
    }
}

/// One global quota, on a limiter shared by `Arc` (key `()`).
impl<C: Clock + Send + Sync + 'static> Store for Arc<RateLimiter<C>> {
    type Key = ();
    type Permit = OwnedPermit;
    type Acquire = Pending<Result<Grant<OwnedPermit>, Denial>>;

    fn policy(&self) -> Policy {
        let config = self.config();
        Policy::new(self.id(), config.permits(), config.period())
    }

    fn max_wait(&self) -> Duration {
        self.config().max_wait()
    }

    fn acquire(
        &self,
        _key: &(),
        permits: u32,
        max_wait: Duration,
    ) -> Decision<OwnedPermit, Self::Acquire> {
        let mailbox = Arc::new(Mutex::new(Mailbox::default()));
        let (limiter, shared) = (Arc::clone(self), Arc::clone(&mailbox));
        let block = async move {
            let decision = if max_wait == limiter.config().max_wait() {
                limiter.reserve_n(permits)
            } else {
                limiter.reserve_n_within(permits, max_wait)
            };
            serve(decision, max_wait, &shared).await;
        };
        Decision::Now(match OwnedPermit::start(block, mailbox) {
            Ok((permit, wait)) => Ok(Grant::new(permit, wait, None)),
            Err(error) => Err(Denial::new(error, limiter_status(self))),
        })
    }

    fn status(&self, _key: &()) -> Option<Status> {
        Some(limiter_status(self))
    }

    fn take(&self, key: &(), permits: u32) -> Option<Result<(), Denial>> {
        let _ = key;
        let taken = if permits == 1 {
            self.try_acquire().map_err(AcquireError::from)
        } else {
            self.try_acquire_n(permits)
        };
        Some(taken.map_err(|error| Denial::new(error, limiter_status(self))))
    }
}

/// One quota per key, on a keyed limiter shared by `Arc`; with tiers, each key its tier's.
impl<K, C, P> Store for Arc<KeyedRateLimiter<K, C, P>>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    C: Clock + Send + Sync + 'static,
    P: TierSet<K> + Send + Sync + 'static,
{
    type Key = K;
    type Permit = OwnedPermit;
    type Acquire = Pending<Result<Grant<OwnedPermit>, Denial>>;

    fn policy(&self) -> Policy {
        keyed_policies(self)[0]
    }

    fn policies(&self) -> Vec<Policy> {
        keyed_policies(self)
    }

    fn policy_of(&self, key: &K) -> usize {
        self.tier_index(key).unwrap_or(0)
    }

    fn max_wait(&self) -> Duration {
        self.config().max_wait()
    }

    fn acquire(
        &self,
        key: &K,
        permits: u32,
        max_wait: Duration,
    ) -> Decision<OwnedPermit, Self::Acquire> {
        let mailbox = Arc::new(Mutex::new(Mailbox::default()));
        let (limiter, shared, owned_key) = (Arc::clone(self), Arc::clone(&mailbox), key.clone());
        let block = async move {
            let decision = if max_wait == limiter.config().max_wait() {
                limiter.reserve_n(&owned_key, permits)
            } else {
                limiter.reserve_n_within(&owned_key, permits, max_wait)
            };
            serve(decision, max_wait, &shared).await;
        };
        Decision::Now(match OwnedPermit::start(block, mailbox) {
            Ok((permit, wait)) => Ok(Grant::new(permit, wait, None)),
            Err(error) => Err(keyed_denial(self, key, error)),
        })
    }

    fn status(&self, key: &K) -> Option<Status> {
        Some(keyed_status(self, key))
    }

    fn take(&self, key: &K, permits: u32) -> Option<Result<(), Denial>> {
        let taken = if permits == 1 {
            self.try_acquire(key).map_err(AcquireError::from)
        } else {
            self.try_acquire_n(key, permits)
        };
        Some(taken.map_err(|error| keyed_denial(self, key, error)))
    }
}
