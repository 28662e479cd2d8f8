#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]
// Without `blocking` or `async` the crate has its types and builder, but nothing to connect with.
#![cfg_attr(not(any(feature = "blocking", feature = "async")), allow(dead_code))]

// Intra-doc links to the other ritmo crates' items, by the paths the `ritmo` facade gives
// them (`crate::ritmo::Config`, `crate::ritmo::server::StdClock`): written by
// scripts/facade-paths, which keeps the docs free of sub-crate paths. Docs builds only.
#[cfg(doc)]
#[allow(unused_imports)]
mod ritmo {
    pub use ritmo_core::*;
    pub mod server {
        pub use ritmo_std::*;
    }
    #[cfg(feature = "tower")]
    pub mod tower {
        pub use ritmo_tower::*;
    }
}

#[cfg(feature = "async")]
mod aio;
#[cfg(feature = "blocking")]
#[cfg_attr(docsrs, doc(cfg(feature = "blocking")))]
pub mod blocking;
#[cfg(any(feature = "async", feature = "blocking"))]
mod common;
mod error;
mod inner;
mod key;
mod local;
#[cfg(feature = "metrics")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
pub mod metrics;
mod observe;
mod rate;
mod script;
#[cfg(feature = "tower")]
#[cfg_attr(docsrs, doc(cfg(feature = "tower")))]
mod tower;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use redis::IntoConnectionInfo;
use ritmo_core::Clock;

#[cfg(feature = "async")]
#[cfg_attr(docsrs, doc(cfg(feature = "async")))]
pub use aio::{AsyncConnection, RedisKeyedRateLimiter, RedisRateLimiter, Reservation};
pub use error::{AcquireOrStoreError, Error, StoreError};
pub use key::StoreKey;
/// The Redis client crate this one is built on, for its `Client` and connection settings.
pub use redis;
pub use ritmo_core::{AcquireError, Config, RateLimitExceeded, Reason};

#[cfg(any(feature = "async", feature = "blocking"))]
pub(crate) use inner::{Call, Decision};
pub(crate) use inner::{Inner, Policy};
use local::Local;
use rate::StoreRate;

/// The timeout a limiter gives the store unless told otherwise: 100 ms.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(100);

/// How much longer keys live in Redis when the time comes from a caller's clock
/// ([`Builder::clock`]): 10 s.
pub const DEFAULT_CLOCK_MARGIN: Duration = Duration::from_secs(10);

/// The most keys the in-process fallback keeps unless told otherwise.
pub const DEFAULT_FALLBACK_KEYS: usize = 65_536;

/// The most connections a blocking limiter opens at once unless told otherwise
/// ([`Builder::pool_size`]): 16.
pub const DEFAULT_POOL_SIZE: usize = 16;

/// What a limiter does when the store does not answer within its timeout (or answers with an
/// error): declared once, when it is built.
///
/// ```
/// use std::time::Duration;
/// use ritmo::Config;
/// use ritmo::redis::FailurePolicy;
///
/// // Four instances share 100 per second: each keeps a quarter to itself while Redis is away.
/// let fallback = FailurePolicy::Local(Config::new(25, Duration::from_secs(1))?);
/// assert_ne!(fallback, FailurePolicy::Reject);
/// # Ok::<(), ritmo::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum FailurePolicy {
    /// Refuse the call with [`Reason::Unavailable`] and a `retry_after` of the timeout: nothing
    /// gets through that the shared quota did not grant (fail closed). The default.
    #[default]
    Reject,
    /// Let the call through, uncounted (fail open): the service stays up, unprotected.
    Admit,
    /// Decide in this process with its own limiter on this config (per key, for a keyed limiter).
    /// With `N` processes sharing the quota, give each `permits / N`: all of them together then
    /// stay within the shared quota. While the store answers, every permit it grants is charged
    /// to the local limiter too, so a failover starts from this process's recent use, not from a
    /// fresh burst. Reservations wait within this config's own `max_wait`, and are not given
    /// back when cancelled (a slot left unused never lets more through).
    Local(Config),
}

/// Where an admitted call's permit came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Source {
    /// The shared quota in the store.
    Store,
    /// The in-process fallback limiter ([`FailurePolicy::Local`]), the store being unavailable.
    Fallback,
    /// Let through uncounted by [`FailurePolicy::Admit`], the store being unavailable.
    Open,
    /// The limiter's config is disabled: every call passes, nothing is counted.
    Disabled,
}

/// An admitted call: where its permit came from, the store's clock when it was granted, and how
/// long the call had to wait for it.
///
/// ```
/// # use std::time::Duration;
/// use ritmo::redis::{Permit, Source};
/// fn log(p: Permit) {
///     if p.source() == Source::Store {
///         println!("granted at {} us on the store's clock", p.store_time_micros().unwrap());
///     }
/// }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Permit {
    source: Source,
    at: Option<u64>,
    wait: Duration,
    status: Option<KeyStatus>,
}

impl Permit {
    pub(crate) fn new(source: Source, at: Option<u64>, wait: Duration) -> Self {
        Permit {
            source,
            at,
            wait,
            status: None,
        }
    }

    /// The key's quota right after this permit was granted, read in the same script call (no
    /// extra round trip); `None` when the store did not decide.
    pub fn status(&self) -> Option<KeyStatus> {
        self.status
    }

    /// Where the permit came from.
    pub fn source(&self) -> Source {
        self.source
    }

    /// The store's clock (microseconds: Redis `TIME`, or the caller's clock when one was given)
    /// at the moment the script granted the permit; `None` when the store did not decide.
    /// A reserved permit's slot is this plus [`wait`](Permit::wait).
    pub fn store_time_micros(&self) -> Option<u64> {
        self.at
    }

    /// How long from the decision until the permit arrived (zero: at once).
    pub fn wait(&self) -> Duration {
        self.wait
    }
}

/// One key's quota at one moment, as the store saw it: the permits that would pass right then
/// without waiting, and how long until one more comes back (zero when the quota is full). With
/// GCRA nothing resets at once: permits come back one every `period / permits`.
///
/// ```
/// use std::time::Duration;
/// use ritmo::redis::KeyStatus;
/// let s = KeyStatus::new(3, Duration::from_millis(100));
/// assert_eq!((s.remaining(), s.reset()), (3, Duration::from_millis(100)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyStatus {
    remaining: u32,
    reset: Duration,
}

impl KeyStatus {
    /// `remaining` permits now, one more back after `reset`.
    pub const fn new(remaining: u32, reset: Duration) -> Self {
        KeyStatus { remaining, reset }
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

/// A refusal from [`RedisKeyedRateLimiter::reserve_n_within`]: the error, and the key's status
/// read by the same script call (`None` when the store did not decide: the failure policy did, or
/// the request was invalid).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Refusal {
    /// Why: rate limited (with `retry_after`), the store unavailable, or an invalid `k`.
    pub error: ritmo_core::AcquireError,
    /// The key's quota when the request was refused.
    pub status: Option<KeyStatus>,
}

/// The error, then the key's status when the store read it: `... (0 permits left, the next in
/// 250ms)`.
///
/// ```
/// use core::time::Duration;
/// use ritmo::{AcquireError, Config, ManualClock, RateLimiter};
/// use ritmo::redis::{KeyStatus, Refusal};
/// let limiter = RateLimiter::new("api", Config::new(1, Duration::from_secs(1))?, ManualClock::new());
/// limiter.try_acquire()?;
/// let error = AcquireError::from(limiter.try_acquire().unwrap_err());
/// let refusal = Refusal::new(error, Some(KeyStatus::new(0, Duration::from_millis(250))));
/// let boxed: Box<dyn std::error::Error> = Box::new(refusal);
/// assert!(boxed.to_string().ends_with("(0 permits left, the next in 250ms)"), "{boxed}");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.error)?;
        match self.status {
            Some(s) => write!(
                f,
                " ({} permits left, the next in {:?})",
                s.remaining(),
                s.reset()
            ),
            None => Ok(()),
        }
    }
}

impl std::error::Error for Refusal {}

impl Refusal {
    /// A refusal: the error, and the key's status if the store read it.
    pub const fn new(error: ritmo_core::AcquireError, status: Option<KeyStatus>) -> Self {
        Refusal { error, status }
    }
}

/// Settings for a limiter named `id` on `config`, shared through Redis; finish with one of the
/// [`Builder`]'s `connect` methods (async or blocking, one quota or one per key).
///
/// ```
/// use std::time::Duration;
/// use ritmo::Config;
/// let builder = ritmo::redis::builder("api", Config::new(10, Duration::from_secs(1))?)
///     .timeout(Duration::from_millis(20));
/// # Ok::<(), ritmo::ConfigError>(())
/// ```
pub fn builder(id: &'static str, config: Config) -> Builder {
    Builder::new(id, config)
}

/// Settings for a Redis-backed limiter: id, config, key prefix, timeout, failure policy, clock.
/// Finish with one of the `connect` methods.
///
/// ```no_run
/// use std::time::Duration;
/// use ritmo::Config;
/// use ritmo::redis::{FailurePolicy, RedisKeyedRateLimiter};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let per_user = RedisKeyedRateLimiter::<str>::builder("api", Config::new(10, Duration::from_secs(1))?)
///     .timeout(Duration::from_millis(50))
///     .on_unavailable(FailurePolicy::Local(Config::new(3, Duration::from_secs(1))?))
///     .connect_keyed::<str>("redis://127.0.0.1/")?;
/// per_user.try_acquire("alice").await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
#[must_use]
pub struct Builder {
    id: &'static str,
    config: Config,
    prefix: String,
    timeout: Duration,
    policy: FailurePolicy,
    fallback_keys: usize,
    pool_size: usize,
    clock: Option<Arc<dyn Clock + Send + Sync>>,
    margin: Option<Duration>,
}

impl std::fmt::Debug for Builder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Builder")
            .field("id", &self.id)
            .field("config", &self.config)
            .field("prefix", &self.prefix)
            .field("timeout", &self.timeout)
            .field("policy", &self.policy)
            .field("caller_clock", &self.clock.is_some())
            .finish_non_exhaustive()
    }
}

impl Builder {
    /// A limiter named `id` (its keys in Redis start with `{ritmo:<id>}`) on `config`, with the
    /// default timeout ([`DEFAULT_TIMEOUT`]), the [`FailurePolicy::Reject`] policy and Redis's
    /// own clock.
    pub fn new(id: &'static str, config: Config) -> Self {
        Builder {
            id,
            config,
            prefix: "ritmo".into(),
            timeout: DEFAULT_TIMEOUT,
            policy: FailurePolicy::Reject,
            fallback_keys: DEFAULT_FALLBACK_KEYS,
            pool_size: DEFAULT_POOL_SIZE,
            clock: None,
            margin: None,
        }
    }

    /// The first part of every Redis key (default `ritmo`): keys are `{<prefix>:<id>}` and
    /// `{<prefix>:<id>}:<key>`, prefix and id with `%`, `{`, `}` and `:` written as `%25`, `%7B`,
    /// `%7D` and `%3A` so that no two (prefix, id, key) triples share a Redis key; the braces are
    /// a Redis Cluster hash tag, so one limiter's keys share one slot.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// How long a call waits for the store's answer before the failure policy decides instead:
    /// one deadline for the whole call, waiting for a pooled connection, connecting, the
    /// handshake (`AUTH`, `SELECT`), loading the script and running it included.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// What to do when the store does not answer in time.
    pub fn on_unavailable(mut self, policy: FailurePolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The most keys the in-process fallback keeps at once (default [`DEFAULT_FALLBACK_KEYS`]);
    /// beyond that, a new key is refused with [`Reason::Unavailable`] while the store is away.
    pub fn fallback_capacity(mut self, keys: usize) -> Self {
        self.fallback_keys = keys;
        self
    }

    /// The most connections a blocking limiter keeps open at once (default
    /// [`DEFAULT_POOL_SIZE`], at least 1): a call beyond that waits for a connection to come
    /// back, within the timeout, and then the failure policy decides. The async limiters share
    /// one multiplexed connection and ignore it.
    pub fn pool_size(mut self, connections: usize) -> Self {
        self.pool_size = connections.max(1);
        self
    }

    /// Reads the time from `clock` and sends it with every call, instead of the script reading
    /// Redis's `TIME`: for managed services that forbid `TIME` in scripts, and for tests on a
    /// `ManualClock`. Every process sharing a quota must then read the same clock (the same
    /// epoch): a process whose clock runs behind gets permits early. Keys still expire on Redis's
    /// own clock, after the time the caller's clock says they are needed; a caller's clock
    /// running slower than real time could see a key expire early (a fresh burst), so with a
    /// caller's clock keys live [`DEFAULT_CLOCK_MARGIN`] longer unless
    /// [`expiry_margin`](Builder::expiry_margin) says otherwise.
    pub fn clock(mut self, clock: impl Clock + Send + Sync + 'static) -> Self {
        self.clock = Some(Arc::new(clock));
        self
    }

    /// How much longer than needed a key lives in Redis (rounded up to the millisecond): zero on
    /// Redis's own clock, where a key expires exactly when its burst is full again;
    /// [`DEFAULT_CLOCK_MARGIN`] with a caller's clock. A longer life costs memory, never a
    /// decision (a key whose burst is full behaves as an absent one).
    pub fn expiry_margin(mut self, margin: Duration) -> Self {
        self.margin = Some(margin);
        self
    }

    fn inner(self, keyed: bool) -> Result<Inner, Error> {
        if self.timeout.is_zero() {
            return Err(Error::ZeroTimeout);
        }
        let rate = StoreRate::new(&self.config)?;
        let policy = match self.policy {
            FailurePolicy::Reject => Policy::Reject,
            FailurePolicy::Admit => Policy::Admit,
            FailurePolicy::Local(config) => {
                Policy::Local(Box::new(Local::new(self.id, config, self.fallback_keys)))
            }
        };
        let margin = self.margin.unwrap_or(if self.clock.is_some() {
            DEFAULT_CLOCK_MARGIN
        } else {
            Duration::ZERO
        });
        let margin_ms = rate::saturate(margin.as_nanos().div_ceil(1_000_000)).to_string();
        Ok(Inner {
            id: self.id,
            config: self.config,
            rate,
            base: key::base_key(&self.prefix, self.id),
            keyed,
            timeout: self.timeout,
            policy,
            clock: self.clock,
            margin_ms,
            away: AtomicBool::new(false),
            counts: observe::Counts::default(),
        })
    }

    /// The connection settings, without redis-rs's `CLIENT SETINFO` handshake: two round trips
    /// that carry nothing ritmo needs, and each of which would wait for a hung server.
    fn info(info: impl IntoConnectionInfo) -> Result<redis::ConnectionInfo, Error> {
        let info = info.into_connection_info().map_err(Error::Connection)?;
        let redis = info.redis_settings().clone().set_skip_set_lib_name();
        Ok(info.set_redis_settings(redis))
    }
}

#[cfg(feature = "async")]
#[cfg_attr(docsrs, doc(cfg(feature = "async")))]
impl Builder {
    /// An async limiter with one quota, on tokio. Connects lazily (a store that is down now is
    /// handled by the failure policy at each call) and reconnects by itself. Must be called inside
    /// a tokio runtime with its timer enabled.
    pub fn connect(self, info: impl IntoConnectionInfo) -> Result<RedisRateLimiter, Error> {
        self.open(info, false).map(RedisRateLimiter::from)
    }

    /// An async limiter with one quota per key, on tokio (see [`connect`](Builder::connect)).
    pub fn connect_keyed<K: StoreKey + ?Sized>(
        self,
        info: impl IntoConnectionInfo,
    ) -> Result<RedisKeyedRateLimiter<K>, Error> {
        self.open(info, true)
    }

    /// An async limiter with one quota, on a connection the caller opened: a
    /// `MultiplexedConnection`, a Redis Cluster connection (see [`AsyncConnection`]). The
    /// timeout still bounds every call; reconnecting is the connection's business.
    pub fn connect_with<C: AsyncConnection>(self, conn: C) -> Result<RedisRateLimiter<C>, Error> {
        Ok(aio::RedisKeyedRateLimiter::with_connection(self.inner(false)?, conn).into())
    }

    /// An async limiter with one quota per key, on a connection the caller opened (see
    /// [`connect_with`](Builder::connect_with)).
    pub fn connect_keyed_with<K: StoreKey + ?Sized, C: AsyncConnection>(
        self,
        conn: C,
    ) -> Result<RedisKeyedRateLimiter<K, C>, Error> {
        Ok(aio::RedisKeyedRateLimiter::with_connection(
            self.inner(true)?,
            conn,
        ))
    }

    /// An async limiter on a connection manager of its own.
    fn open<K: StoreKey + ?Sized>(
        self,
        info: impl IntoConnectionInfo,
        keyed: bool,
    ) -> Result<RedisKeyedRateLimiter<K>, Error> {
        let client = redis::Client::open(Self::info(info)?).map_err(Error::Connection)?;
        aio::RedisKeyedRateLimiter::open(self.inner(keyed)?, client)
    }
}

#[cfg(feature = "blocking")]
#[cfg_attr(docsrs, doc(cfg(feature = "blocking")))]
impl Builder {
    /// A blocking limiter with one quota. Connects at its first call, and again after an error.
    pub fn connect_blocking(
        self,
        info: impl IntoConnectionInfo,
    ) -> Result<blocking::RedisRateLimiter, Error> {
        self.pooled(info, false)
            .map(blocking::RedisRateLimiter::from)
    }

    /// A blocking limiter with one quota per key.
    pub fn connect_blocking_keyed<K: StoreKey + ?Sized>(
        self,
        info: impl IntoConnectionInfo,
    ) -> Result<blocking::RedisKeyedRateLimiter<K>, Error> {
        self.pooled(info, true)
    }

    /// A blocking limiter on a pool of its own: the connections select no database themselves,
    /// the pool does (in the time the call has left).
    fn pooled<K: StoreKey + ?Sized>(
        self,
        info: impl IntoConnectionInfo,
        keyed: bool,
    ) -> Result<blocking::RedisKeyedRateLimiter<K>, Error> {
        let info = Self::info(info)?;
        let db = info.redis_settings().db();
        let redis = info.redis_settings().clone().set_db(0);
        let client =
            redis::Client::open(info.set_redis_settings(redis)).map_err(Error::Connection)?;
        let pool = blocking::Pool::new(client, db, self.pool_size);
        Ok(blocking::RedisKeyedRateLimiter::open(
            self.inner(keyed)?,
            pool,
        ))
    }
}

#[cfg(all(test, feature = "blocking"))]
mod tests {
    use super::*;

    /// Nothing listens on port 1: every call fails at once, and the policy decides.
    const NOWHERE: &str = "redis://127.0.0.1:1/";

    fn config() -> Config {
        Config::new(2, Duration::from_secs(10)).unwrap()
    }

    #[test]
    fn reject_refuses_with_unavailable_and_the_timeout_as_retry_after() {
        let limiter = builder("r", config())
            .timeout(Duration::from_millis(30))
            .connect_blocking(NOWHERE)
            .unwrap();
        let err = limiter.try_acquire().unwrap_err();
        assert_eq!(err.reason(), Reason::Unavailable);
        assert_eq!(err.retry_after(), Duration::from_millis(30));
        assert!(limiter.reserve().is_err());
        assert!(limiter.available_permits().is_err());
        assert!(matches!(
            limiter.try_acquire_n(3),
            Err(AcquireError::InvalidPermits(_))
        ));
    }

    #[test]
    fn admit_lets_everything_through_uncounted() {
        let limiter = builder("a", config())
            .on_unavailable(FailurePolicy::Admit)
            .connect_blocking(NOWHERE)
            .unwrap();
        for _ in 0..10 {
            let p = limiter.try_acquire().unwrap();
            assert_eq!((p.source(), p.store_time_micros()), (Source::Open, None));
        }
    }

    #[test]
    fn local_decides_per_key_in_process() {
        let local = Config::new(1, Duration::from_secs(10)).unwrap();
        let keyed: blocking::RedisKeyedRateLimiter<str> = builder("l", config())
            .on_unavailable(FailurePolicy::Local(local))
            .fallback_capacity(2)
            .connect_blocking_keyed(NOWHERE)
            .unwrap();
        assert_eq!(keyed.try_acquire("a").unwrap().source(), Source::Fallback);
        let err = keyed.try_acquire("a").unwrap_err();
        assert_eq!(err.reason(), Reason::NoPermitInTime);
        assert!(err.retry_after() > Duration::from_secs(9));
        assert_eq!(keyed.available_permits("a").unwrap(), 0);
        assert_eq!(keyed.try_acquire("b").unwrap().source(), Source::Fallback);
        // Two live keys fill the fallback's table: a third is refused as unavailable.
        assert_eq!(
            keyed.try_acquire("c").unwrap_err().reason(),
            Reason::Unavailable
        );
        // k above the local burst but within the shared one: unavailable, not invalid.
        let AcquireError::RateLimited(e) = keyed.try_acquire_n("a", 2).unwrap_err() else {
            panic!("2 is a valid request for the shared quota")
        };
        assert_eq!(e.reason(), Reason::Unavailable);
    }

    #[cfg(feature = "async")]
    #[tokio::test]
    async fn the_async_client_never_hangs_on_a_dead_address() {
        let limiter = builder("x", config())
            .timeout(Duration::from_millis(50))
            .connect(NOWHERE)
            .unwrap();
        let err = limiter.try_acquire().await.unwrap_err();
        assert_eq!(err.reason(), Reason::Unavailable);
        assert!(limiter.retry_after().await.is_err());
    }
}
