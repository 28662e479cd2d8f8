//! The small trait the layer limits through, and its implementation for ritmo's [`RateLimiter`].
//!
//! A [`Store`] admits or reserves permits by key and reports what the response headers need. It is
//! a cheap handle (`&'static` limiter, `Arc`, a client to a remote store): the layer clones it into
//! every service and future, so there is no lock and no `Buffer` per request.

use core::fmt;
use core::future::{Future, Pending};
use core::time::Duration;

use core::hash::Hash;

use ritmo_core::keyed::{OneTier, TierSet};
use ritmo_core::{AcquireError, Clock, RateLimiter, Reservation};
use ritmo_std::{KeyedRateLimiter, KeyedReservation};

/// A quota policy, as the `RateLimit-Policy` field states it: `quota` permits per `window`.
///
/// ```
/// use core::time::Duration;
/// use ritmo::tower::Policy;
/// let p = Policy::new("api", 10, Duration::from_secs(1));
/// assert_eq!((p.quota(), p.window()), (10, Duration::from_secs(1)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Policy {
    name: &'static str,
    quota: u32,
    window: Duration,
}

impl Policy {
    /// A policy named `name` allowing `quota` permits per `window`.
    pub const fn new(name: &'static str, quota: u32, window: Duration) -> Self {
        Policy {
            name,
            quota,
            window,
        }
    }

    /// The policy's name (the limiter's id unless the layer renames it).
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// Permits per window.
    pub const fn quota(&self) -> u32 {
        self.quota
    }

    /// The window the quota is for (the limiter's period).
    pub const fn window(&self) -> Duration {
        self.window
    }

    /// The same policy under another name.
    #[must_use]
    pub const fn named(mut self, name: &'static str) -> Self {
        self.name = name;
        self
    }
}

/// What one key's limit looks like at one moment: the `RateLimit` field's numbers.
///
/// With GCRA nothing resets at the end of a window: permits come back one at a time, one every
/// `window / quota`. So `remaining` is the number of permits that would pass right now without
/// waiting, and `reset` is how long until the next one comes back (zero when the quota is full:
/// nothing is owed). Both come from one reading of the limiter's state.
///
/// ```
/// use core::time::Duration;
/// use ritmo::tower::Status;
/// let s = Status::new(3, Duration::from_millis(250));
/// assert_eq!((s.remaining(), s.reset()), (3, Duration::from_millis(250)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Status {
    remaining: u32,
    reset: Duration,
}

impl Status {
    /// `remaining` permits now, the next one back after `reset`.
    pub const fn new(remaining: u32, reset: Duration) -> Self {
        Status { remaining, reset }
    }

    /// Permits that would pass right now without waiting.
    pub const fn remaining(&self) -> u32 {
        self.remaining
    }

    /// How long until one more permit is available (zero when the quota is full).
    pub const fn reset(&self) -> Duration {
        self.reset
    }
}

/// Permits a store gave a request: taken at once, or reserved for a slot `wait` from now.
#[derive(Debug)]
#[non_exhaustive]
pub struct Grant<P> {
    /// The permits: commit them when the request is served, or refund them.
    pub permit: P,
    /// How long the request must wait for its slot (zero if the permits were there at once).
    pub wait: Duration,
    /// The key's status right after the decision, for stores that cannot read it again later
    /// ([`Store::status`] returns `None`); in-process stores leave it `None`.
    pub status: Option<Status>,
}

impl<P> Grant<P> {
    /// Permits taken (`wait` zero) or reserved.
    pub const fn new(permit: P, wait: Duration, status: Option<Status>) -> Self {
        Grant {
            permit,
            wait,
            status,
        }
    }
}

/// A store's refusal: the error (with `retry_after`) and the key's status at that moment.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Denial {
    /// Why: rate limited (with `retry_after`), or more permits than the quota asked for.
    pub error: AcquireError,
    /// The key's status when the request was refused.
    pub status: Status,
    /// Which of the store's [`policies`](Store::policies) the key follows (0 for a store of one).
    pub policy: usize,
}

impl Denial {
    /// A refusal with the key's status.
    pub const fn new(error: AcquireError, status: Status) -> Self {
        Denial {
            error,
            status,
            policy: 0,
        }
    }

    /// The same refusal, of a key that follows the store's policy number `policy` (a tier).
    #[must_use]
    pub const fn with_policy(mut self, policy: usize) -> Self {
        self.policy = policy;
        self
    }
}

/// The error, then the key's status: `... (0 permits left, the next in 250ms)`.
///
/// ```
/// use core::time::Duration;
/// use ritmo::{AcquireError, Config, ManualClock, RateLimiter};
/// use ritmo::tower::{Denial, Status};
/// let limiter = RateLimiter::new("api", Config::new(1, Duration::from_secs(1))?, ManualClock::new());
/// limiter.try_acquire()?;
/// let error = AcquireError::from(limiter.try_acquire().unwrap_err());
/// let denial = Denial::new(error, Status::new(0, Duration::from_millis(250)));
/// let boxed: Box<dyn std::error::Error> = Box::new(denial);
/// assert!(boxed.to_string().ends_with("(0 permits left, the next in 250ms)"), "{boxed}");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
impl fmt::Display for Denial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({} permits left, the next in {:?})",
            self.error,
            self.status.remaining(),
            self.status.reset()
        )
    }
}

impl std::error::Error for Denial {}

/// A store's answer: decided now, or a future to await.
#[derive(Debug)]
pub enum Decision<P, F> {
    /// Decided at once (in-process stores).
    Now(Result<Grant<P>, Denial>),
    /// Decided after a round trip (remote stores).
    Later(F),
}

/// Permits held by one request until its outcome is known.
///
/// Contract: dropping a permit that was neither committed nor refunded refunds it (a request
/// dropped while waiting for its slot gives its permit back); a refund obeys the tail rule (the
/// permits go back only if no later request took or reserved permits of the same key since, so
/// that two requests never share one slot).
pub trait Permit: Send + 'static {
    /// Keeps the permits: the request ran.
    fn commit(self);

    /// Gives the permits back; returns whether they went back (`false` when later requests were
    /// queued behind this one, or when a remote store returns them in the background).
    fn refund(self) -> bool;

    /// How long until the permit's slot arrives: zero once the request may run.
    fn remaining(&self) -> Duration;
}

/// Where the layer takes permits: a limiter, a keyed limiter, a remote store.
///
/// Implement it for a cheap, clonable handle (`&'static` or `Arc`): the layer clones it into every
/// service and every response future. Implemented for `&'static RateLimiter<C>` and
/// `Arc<RateLimiter<C>>` (one global quota, key `()`), `&'static KeyedRateLimiter<K, C>` and
/// `Arc<KeyedRateLimiter<K, C>>` (one quota per key), the Redis limiters (ritmo-redis, feature
/// `tower`), and `Arc<S>` of any store.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a store the rate-limit layer can take permits from",
    label = "not a `Store`",
    note = "give the layer a `&'static` limiter (`RateLimitLayer::new(&*LIMITER, key)` on a `static` or `LazyLock`) or an `Arc` of one: `RateLimitLayer::new(Arc::clone(&limiter), key)`"
)]
pub trait Store: Clone + Send + Sync + 'static {
    /// What requests are limited by: `()` for one global quota, an IP address, an API key.
    type Key: Clone + Send + 'static;
    /// The permits a request holds until it is served.
    type Permit: Permit;
    /// A decision to come: what [`Decision::Later`] holds for a remote store (a boxed future);
    /// in-process stores never use it (`core::future::Pending`).
    type Acquire: Future<Output = Result<Grant<Self::Permit>, Denial>> + Send + Unpin + 'static;

    /// The quota every key gets (the `RateLimit-Policy` field); for a store whose keys follow
    /// one of several [`policies`](Self::policies) (tiers), the first.
    fn policy(&self) -> Policy;

    /// Every policy a key of this store may follow, by number: one per tier of a tiered keyed
    /// limiter. The layer renders each one's `RateLimit-Policy` value once, when it is built.
    /// The default: [`policy`](Self::policy) alone.
    fn policies(&self) -> Vec<Policy> {
        vec![self.policy()]
    }

    /// The number, in [`policies`](Self::policies), of the policy `key` follows now (its tier);
    /// the default 0. A number out of range reports the first policy.
    fn policy_of(&self, key: &Self::Key) -> usize {
        let _ = key;
        0
    }

    /// How long a request may wait for its slot unless the layer says otherwise: the limiter
    /// config's `max_wait` (zero: refuse at once). The default is zero.
    fn max_wait(&self) -> Duration {
        Duration::ZERO
    }

    /// Takes `permits` for `key` now, or reserves them if their slot comes within `max_wait`;
    /// otherwise refuses at once without changing anything. In-process stores decide at once
    /// ([`Decision::Now`]); remote stores return the round trip as a future ([`Decision::Later`]).
    fn acquire(
        &self,
        key: &Self::Key,
        permits: u32,
        max_wait: Duration,
    ) -> Decision<Self::Permit, Self::Acquire>;

    /// The key's status now, read without taking anything; `None` if the store cannot read it
    /// without a round trip (the layer then reports the status the [`Grant`] carried).
    fn status(&self, key: &Self::Key) -> Option<Status>;

    /// Takes `permits` for `key` now for good, or refuses at once: the fast path the layer takes
    /// when nothing could give the permits back (no waiting, a classifier that never refunds).
    /// `None` (the default) if the store has no such path; the layer then uses
    /// [`acquire`](Self::acquire).
    fn take(&self, key: &Self::Key, permits: u32) -> Option<Result<(), Denial>> {
        let _ = (key, permits);
        None
    }
}

/// The permits of a request on a [`RateLimiter`]: its [`Reservation`].
#[derive(Debug)]
pub struct LimiterPermit<C: Clock + 'static>(Reservation<'static, C>);

impl<C: Clock + 'static> LimiterPermit<C> {
    /// The instant the permits are due, as a reading of the limiter's clock: for a request
    /// admitted at once, the reading its decision was made at.
    pub fn slot(&self) -> u64 {
        self.0.slot()
    }
}

impl<C: Clock + Sync + 'static> Permit for LimiterPermit<C> {
    fn commit(self) {
        self.0.commit();
    }

    fn refund(self) -> bool {
        self.0.cancel()
    }

    fn remaining(&self) -> Duration {
        self.0.remaining()
    }
}

/// The status of a limiter right now: the permits available, and how long until one more is.
pub(crate) fn limiter_status<C: Clock>(limiter: &RateLimiter<C>) -> Status {
    // `permits()`, not `config()`: the config in force is read under a lock.
    let permits = limiter.permits();
    let remaining = limiter.available_permits();
    if remaining >= permits {
        return Status::new(permits, Duration::ZERO);
    }
    // How long until `remaining + 1` permits would pass at once: when the next one comes back.
    // If another request took permits between the two reads this is later, never earlier.
    let reset = limiter
        .retry_after_n(remaining + 1)
        .unwrap_or(Duration::ZERO);
    Status::new(remaining, reset)
}

impl<C: Clock + Sync + 'static> Store for &'static RateLimiter<C> {
    type Key = ();
    type Permit = LimiterPermit<C>;
    type Acquire = Pending<Result<Grant<LimiterPermit<C>>, Denial>>;

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
    ) -> Decision<LimiterPermit<C>, Self::Acquire> {
        // The config's own `max_wait` is already in the limiter's units: no conversion.
        let decision = if max_wait == self.config().max_wait() {
            self.reserve_n(permits)
        } else {
            self.reserve_n_within(permits, max_wait)
        };
        Decision::Now(match decision {
            Ok(reservation) => {
                // With no waiting allowed, a reservation is always for now; otherwise a clock read
                // and a compare, where converting the wait to a `Duration` divides.
                let wait = if max_wait.is_zero() || reservation.is_ready() {
                    Duration::ZERO
                } else {
                    reservation.remaining()
                };
                Ok(Grant::new(LimiterPermit(reservation), wait, None))
            }
            Err(error) => Err(Denial::new(error, limiter_status(self))),
        })
    }

    fn status(&self, _key: &()) -> Option<Status> {
        Some(limiter_status(self))
    }

    fn take(&self, _key: &(), permits: u32) -> Option<Result<(), Denial>> {
        let taken = if permits == 1 {
            self.try_acquire().map_err(AcquireError::from)
        } else {
            self.try_acquire_n(permits)
        };
        Some(taken.map_err(|error| Denial::new(error, limiter_status(self))))
    }
}

/// The permits of a request on a [`KeyedRateLimiter`]: its [`KeyedReservation`].
#[derive(Debug)]
pub struct KeyedPermit<
    K: Hash + Eq + Clone + 'static,
    C: Clock + 'static,
    P: TierSet<K> + 'static = OneTier,
>(KeyedReservation<'static, K, C, P>);

impl<K: Hash + Eq + Clone + 'static, C: Clock + 'static, P: TierSet<K> + 'static>
    KeyedPermit<K, C, P>
{
    /// The instant the permits are due, as a reading of the limiter's clock (for a request
    /// admitted at once, the reading its decision was made at).
    pub fn slot(&self) -> u64 {
        self.0.slot()
    }
}

impl<K, C, P> Permit for KeyedPermit<K, C, P>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    C: Clock + Send + Sync + 'static,
    P: TierSet<K> + Send + Sync + 'static,
{
    fn commit(self) {
        self.0.commit();
    }

    fn refund(self) -> bool {
        self.0.cancel()
    }

    fn remaining(&self) -> Duration {
        self.0.remaining()
    }
}

/// One key's status, on its own tier: the permits available, and how long until one more is.
pub(crate) fn keyed_status<K: Hash + Eq + Clone, C: Clock, P: TierSet<K>>(
    limiter: &KeyedRateLimiter<K, C, P>,
    key: &K,
) -> Status {
    let Some(config) = limiter.config_of(key) else {
        // No tier: nothing will ever pass.
        return Status::new(0, limiter.retry_after(key));
    };
    let permits = config.permits();
    let remaining = limiter.available_permits(key);
    if remaining >= permits {
        return Status::new(permits, Duration::ZERO);
    }
    let reset = limiter
        .retry_after_n(key, remaining + 1)
        .unwrap_or(Duration::ZERO);
    Status::new(remaining, reset)
}

/// A keyed limiter: one quota per key; with tiers, each key its tier's, reported under the tier's
/// name (one policy per tier).
impl<K, C, P> Store for &'static KeyedRateLimiter<K, C, P>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    C: Clock + Send + Sync + 'static,
    P: TierSet<K> + Send + Sync + 'static,
{
    type Key = K;
    type Permit = KeyedPermit<K, C, P>;
    type Acquire = Pending<Result<Grant<KeyedPermit<K, C, P>>, Denial>>;

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
    ) -> Decision<KeyedPermit<K, C, P>, Self::Acquire> {
        // The config's own `max_wait` (each tier's own, for a tiered limiter).
        let decision = if max_wait == self.config().max_wait() {
            self.reserve_n(key, permits)
        } else {
            self.reserve_n_within(key, permits, max_wait)
        };
        Decision::Now(match decision {
            Ok(reservation) => {
                let wait = if max_wait.is_zero() || reservation.is_ready() {
                    Duration::ZERO
                } else {
                    reservation.remaining()
                };
                Ok(Grant::new(KeyedPermit(reservation), wait, None))
            }
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

/// A keyed limiter's policies: one per tier, named by the tier (for one config, the limiter's id).
pub(crate) fn keyed_policies<K, C, P: TierSet<K>>(
    limiter: &KeyedRateLimiter<K, C, P>,
) -> Vec<Policy> {
    limiter
        .tier_configs()
        .into_iter()
        .map(|(name, config)| Policy::new(name, config.permits(), config.period()))
        .collect()
}

/// A keyed limiter's refusal of `key`, with its status and its tier's policy.
pub(crate) fn keyed_denial<K: Hash + Eq + Clone, C: Clock, P: TierSet<K>>(
    limiter: &KeyedRateLimiter<K, C, P>,
    key: &K,
    error: AcquireError,
) -> Denial {
    Denial::new(error, keyed_status(limiter, key)).with_policy(limiter.tier_index(key).unwrap_or(0))
}

/// Any store behind an `Arc`: the layer's clones share the one store.
impl<S: Store> Store for std::sync::Arc<S> {
    type Key = S::Key;
    type Permit = S::Permit;
    type Acquire = S::Acquire;

    fn policy(&self) -> Policy {
        (**self).policy()
    }

    fn policies(&self) -> Vec<Policy> {
        (**self).policies()
    }

    fn policy_of(&self, key: &S::Key) -> usize {
        (**self).policy_of(key)
    }

    fn max_wait(&self) -> Duration {
        (**self).max_wait()
    }

    fn acquire(
        &self,
        key: &S::Key,
        permits: u32,
        max_wait: Duration,
    ) -> Decision<S::Permit, S::Acquire> {
        (**self).acquire(key, permits, max_wait)
    }

    fn status(&self, key: &S::Key) -> Option<Status> {
        (**self).status(key)
    }

    fn take(&self, key: &S::Key, permits: u32) -> Option<Result<(), Denial>> {
        (**self).take(key, permits)
    }
}
