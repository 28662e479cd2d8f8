//! The small trait the layer limits through, and its implementation for ritmo's [`RateLimiter`].
//!
//! A [`Store`] admits or reserves permits by key and reports what the response headers need. It is
//! a cheap handle (`&'static` limiter, `Arc`, a client to a remote store): the layer clones it into
//! every service and future, so there is no lock and no `Buffer` per request.

use core::fmt;
use core::future::{Future, Pending};
use core::time::Duration;

use core::hash::Hash;
use core::ops::Deref;
use std::sync::Arc;

use ritmo_core::keyed::{KeyCharge, KeyReservation, Keyed, KeyedStore};
use ritmo_core::{
    AcquireError, Bands, BandsReservation, Clock, Config, Held, Holder, RateLimiter, Reservation,
};
use ritmo_std::{Limit, OwnedBandsReservation, OwnedReservation};

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
/// service and every response future. Implemented, `&'static` and `Arc`, for every in-process
/// kind: `RateLimiter<C>` and `Bands<C, B>` (one global quota, key `()`), `Keyed<K, S>` (one
/// quota per key, tiered or not, whatever its store: `KeyedRateLimiter`, `KeyedLimiter`); for the Redis limiters (ritmo-redis, feature `tower`);
/// and for `Arc<S>` of any store. An in-process kind's permit is its reservation, borrowed from a
/// `&'static` limiter or owning the `Arc` (no lock and no allocation per request).
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

    /// Whether the store's own max wait lets any request wait now (its limiter config's
    /// `max_wait` is not zero; a tiered limiter's, any tier's). A layer without a max wait of its
    /// own reads it when it is built and again after each refusal: while it is `false` (and
    /// nothing could give permits back) the layer takes permits on [`take`](Self::take)'s fast
    /// path, and a refusal there under a config that now lets requests wait is reserved through
    /// [`acquire`](Self::acquire) instead. The default: `true` (always through `acquire`).
    fn may_wait(&self) -> bool {
        true
    }

    /// Takes `permits` for `key` now, or reserves them if their slot comes within `max_wait`;
    /// otherwise refuses at once without changing anything. `max_wait` is the layer's own when it
    /// was given one; `None`: the store's own, its limiter config's `max_wait` as it is when the
    /// request comes (a config changed live applies to the next request). In-process stores
    /// decide at once ([`Decision::Now`]); remote stores return the round trip as a future
    /// ([`Decision::Later`]).
    fn acquire(
        &self,
        key: &Self::Key,
        permits: u32,
        max_wait: Option<Duration>,
    ) -> Decision<Self::Permit, Self::Acquire>;

    /// The key's status now, read without taking anything; `None` if the store cannot read it
    /// without a round trip (the layer then reports the status the [`Grant`] carried).
    fn status(&self, key: &Self::Key) -> Option<Status>;

    /// Takes `permits` for `key` now for good, or refuses at once: the fast path the layer takes
    /// when nothing could give the permits back (its own max wait zero, a classifier that never
    /// refunds).
    /// `None` (the default) if the store has no such path; the layer then uses
    /// [`acquire`](Self::acquire).
    fn take(&self, key: &Self::Key, permits: u32) -> Option<Result<(), Denial>> {
        let _ = (key, permits);
        None
    }
}

/// A reservation of any kind is a request's permits: borrowing a `&'static` limiter
/// ([`Reservation<'static, C>`](crate::ritmo::Reservation)) or owning an `Arc` of it
/// ([`OwnedReservation<C>`](crate::ritmo::server::OwnedReservation) and the bands' and keyed
/// limiter's likewise).
impl<R, T> Permit for Held<R, T>
where
    R: Deref<Target: Holder<T>> + Send + 'static,
    T: Send + 'static,
{
    fn commit(self) {
        Held::commit(self);
    }

    fn refund(self) -> bool {
        self.cancel()
    }

    fn remaining(&self) -> Duration {
        Held::remaining(self)
    }
}

/// What the stores of ritmo's in-process kinds (one limiter, bands, a keyed limiter, tiered or
/// not) read of their limiter, whether the layer holds it `&'static` or by `Arc`.
pub(crate) trait Kind: Limit {
    /// Every policy a key may follow (a tier's, a band's).
    fn kind_policies(&self) -> Vec<Policy>;

    /// The number of the policy `key` follows now.
    fn kind_policy_of(&self, _key: &Self::Key) -> usize {
        0
    }

    /// Whether a request may wait under the config in force.
    fn kind_may_wait(&self) -> bool;

    /// `key`'s permits available now and the quota of the policy it follows (`None`: no tier,
    /// nothing ever passes).
    fn available(&self, key: &Self::Key) -> (u32, Option<u32>);

    /// How long until `permits` would pass at once for `key`.
    fn wait_for(&self, key: &Self::Key, permits: u32) -> Duration;
}

/// `key`'s status now: the permits available, and how long until one more is (zero when its
/// policy's quota is whole). If another request took permits between the two reads, the reset
/// is later, never earlier.
fn kind_status<L: Kind>(limiter: &L, key: &L::Key) -> Status {
    match limiter.available(key) {
        (_, None) => Status::new(0, limiter.wait_for(key, 1)),
        (remaining, Some(quota)) if remaining >= quota => Status::new(quota, Duration::ZERO),
        (remaining, Some(_)) => Status::new(remaining, limiter.wait_for(key, remaining + 1)),
    }
}

/// A refusal of `key`, with its status and the policy it follows. Cold: the admitted path stays
/// small.
#[cold]
#[inline(never)]
fn kind_denial<L: Kind>(limiter: &L, key: &L::Key, error: AcquireError) -> Denial {
    Denial::new(error, kind_status(limiter, key)).with_policy(limiter.kind_policy_of(key))
}

/// What an in-process store's [`Decision::Later`] would hold: never used.
type Settled<P> = Pending<Result<Grant<P>, Denial>>;

/// The layer's decision on a reservation: the wait it was made with (zero when its permits
/// were there), read without the clock.
fn granted<R, T, L: Kind>(
    limiter: &L,
    key: &L::Key,
    reserved: Result<Held<R, T>, AcquireError>,
) -> Decision<Held<R, T>, Settled<Held<R, T>>>
where
    R: Deref<Target: Holder<T>>,
{
    Decision::Now(match reserved {
        Ok(reservation) => {
            let wait = reservation.wait_time();
            Ok(Grant::new(reservation, wait, None))
        }
        Err(error) => Err(kind_denial(limiter, key, error)),
    })
}

/// [`Limit::reserve_for`] on a `&'static` limiter: the reservation borrows it for `'static`.
fn borrowed<L: Limit>(
    limiter: &&'static L,
    key: &L::Key,
    permits: u32,
    max_wait: Option<Duration>,
) -> Result<Held<&'static L, L::Charge>, AcquireError> {
    limiter.reserve_for(key, permits, max_wait)
}

/// A [`Store`]'s methods for a handle (`&'static L`, `Arc<L>`) of an in-process kind `L`, given
/// the handle's permit and how it reserves.
macro_rules! kind_store {
    ($key_type:ty, $permit:ty, $reserve:path) => {
        type Key = $key_type;
        type Permit = $permit;
        type Acquire = Settled<$permit>;

        fn policy(&self) -> Policy {
            self.kind_policies()[0]
        }

        fn policies(&self) -> Vec<Policy> {
            self.kind_policies()
        }

        fn policy_of(&self, key: &Self::Key) -> usize {
            self.kind_policy_of(key)
        }

        fn may_wait(&self) -> bool {
            self.kind_may_wait()
        }

        fn acquire(
            &self,
            key: &Self::Key,
            permits: u32,
            max_wait: Option<Duration>,
        ) -> Decision<$permit, Self::Acquire> {
            granted(&**self, key, $reserve(self, key, permits, max_wait))
        }

        fn status(&self, key: &Self::Key) -> Option<Status> {
            Some(kind_status(&**self, key))
        }

        #[inline]
        fn take(&self, key: &Self::Key, permits: u32) -> Option<Result<(), Denial>> {
            let taken = self.try_acquire_for(key, permits);
            Some(taken.map_err(|error| kind_denial(&**self, key, error)))
        }
    };
}

/// One global quota (key `()`) on a `&'static` limiter.
impl<C: Clock + Send + Sync + 'static> Store for &'static RateLimiter<C> {
    kind_store!((), Reservation<'static, C>, borrowed);
}

/// One global quota (key `()`) on a limiter shared by `Arc`.
impl<C: Clock + Send + Sync + 'static> Store for Arc<RateLimiter<C>> {
    kind_store!((), OwnedReservation<C>, Limit::reserve_owned);
}

/// One global quota of several bands (key `()`), on `&'static` bands: a request passes if every
/// band admits it; its status is the band that binds (the fewest permits left).
impl<C: Clock + Send + Sync + 'static, const B: usize> Store for &'static Bands<C, B> {
    kind_store!((), BandsReservation<'static, C, B>, borrowed);
}

/// One global quota of several bands (key `()`), on bands shared by `Arc`.
impl<C: Clock + Send + Sync + 'static, const B: usize> Store for Arc<Bands<C, B>> {
    kind_store!((), OwnedBandsReservation<C, B>, Limit::reserve_owned);
}

/// One quota per key on a `&'static` keyed limiter, whatever its store (the std map, the fixed
/// table); with tiers, each key its tier's, reported under the tier's name (one policy per tier).
impl<K, S> Store for &'static Keyed<K, S>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    S: KeyedStore<K> + 'static,
    Keyed<K, S>: Send + Sync,
{
    kind_store!(K, KeyReservation<'static, K, Keyed<K, S>>, borrowed);
}

/// One quota per key (with tiers, each key its tier's) on a keyed limiter shared by `Arc`.
impl<K, S> Store for Arc<Keyed<K, S>>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    S: KeyedStore<K> + 'static,
    Keyed<K, S>: Send + Sync,
{
    kind_store!(
        K,
        Held<Arc<Keyed<K, S>>, KeyCharge<K>>,
        Limit::reserve_owned
    );
}

impl<C: Clock + Send + Sync + 'static> Kind for RateLimiter<C> {
    fn kind_policies(&self) -> Vec<Policy> {
        let config = self.config();
        vec![Policy::new(self.id(), config.permits(), config.period())]
    }

    fn kind_may_wait(&self) -> bool {
        !self.config().max_wait().is_zero()
    }

    fn available(&self, _key: &()) -> (u32, Option<u32>) {
        // `permits()`, not `config()`: the config in force is read under a lock.
        (self.available_permits(), Some(self.permits()))
    }

    fn wait_for(&self, _key: &(), permits: u32) -> Duration {
        self.retry_after_n(permits).unwrap_or(Duration::ZERO)
    }
}

impl<C: Clock + Send + Sync + 'static, const B: usize> Kind for Bands<C, B> {
    /// One policy per band, named by the bands' id.
    fn kind_policies(&self) -> Vec<Policy> {
        let id = self.id();
        let policy = |config: Config| Policy::new(id, config.permits(), config.period());
        self.configs().into_iter().map(policy).collect()
    }

    /// The band with the fewest permits left (the first of equals): the one that binds.
    fn kind_policy_of(&self, _key: &()) -> usize {
        let left = self.available_permits_per_band();
        (0..B).min_by_key(|&band| left[band]).unwrap_or(0)
    }

    fn kind_may_wait(&self) -> bool {
        !self.max_wait().is_zero()
    }

    fn available(&self, key: &()) -> (u32, Option<u32>) {
        let band = self.kind_policy_of(key);
        let quota = self.configs().get(band).map(Config::permits);
        (self.available_permits(), quota)
    }

    fn wait_for(&self, _key: &(), permits: u32) -> Duration {
        self.retry_after_n(permits).unwrap_or(Duration::ZERO)
    }
}

impl<K, S> Kind for Keyed<K, S>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    S: KeyedStore<K> + 'static,
    Keyed<K, S>: Send + Sync,
{
    /// One policy per tier, named by the tier (for one config, the limiter's id).
    fn kind_policies(&self) -> Vec<Policy> {
        self.tier_configs()
            .map(|(name, config)| Policy::new(name, config.permits(), config.period()))
            .collect()
    }

    fn kind_policy_of(&self, key: &K) -> usize {
        self.tier_index(key).unwrap_or(0)
    }

    /// Any tier's.
    fn kind_may_wait(&self) -> bool {
        self.tier_configs()
            .any(|(_, config)| !config.max_wait().is_zero())
    }

    fn available(&self, key: &K) -> (u32, Option<u32>) {
        let quota = self.config_of(key).map(|config| config.permits());
        (self.available_permits(key), quota)
    }

    fn wait_for(&self, key: &K, permits: u32) -> Duration {
        if permits == 1 {
            return self.retry_after(key);
        }
        self.retry_after_n(key, permits).unwrap_or(Duration::ZERO)
    }
}

/// Any store behind an `Arc`: the layer's clones share the one store.
impl<S: Store> Store for Arc<S> {
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

    fn may_wait(&self) -> bool {
        (**self).may_wait()
    }

    fn acquire(
        &self,
        key: &S::Key,
        permits: u32,
        max_wait: Option<Duration>,
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
