//! The async limiters, on tokio and redis-rs's `ConnectionManager` (or any async connection the
//! caller brings: a `MultiplexedConnection`, a Redis Cluster connection).
//!
//! A limiter built inside a tokio runtime runs one small task that gathers the acquire calls
//! waiting at the same moment into one script call (see [`gather`]); peeks and refunds go out on
//! their own.

use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use redis::Script;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use ritmo_core::{AcquireError, Config, RateLimitExceeded};
use tokio::sync::{Semaphore, mpsc, oneshot};

use crate::common::{keyed_accessors, reservation_accessors, reservation_debug, single_accessors};
use crate::error::Cause;
use crate::observe::Links;
use crate::script::{ACQUIRE, PEEK, REFUND};
use crate::{
    AcquireOrStoreError, Builder, Call, Decision, Error, Inner, KeyStatus, Permit, Refusal,
    StoreError, StoreKey,
};

/// An async connection a limiter can run its scripts on: redis-rs's `ConnectionManager` (what
/// [`Builder::connect`] opens), a `MultiplexedConnection`, or a Redis Cluster connection
/// (redis-rs's `cluster-async` feature: every key of a limiter carries one hash tag, so its
/// scripts run on the node that holds it). Implemented for every cheap-to-clone async connection.
pub trait AsyncConnection: redis::aio::ConnectionLike + Clone + Send + Sync + 'static {}

impl<C: redis::aio::ConnectionLike + Clone + Send + Sync + 'static> AsyncConnection for C {}

/// One shared quota per key, in Redis, for async code on tokio.
///
/// Every process that builds a limiter with the same id (and prefix) on the same Redis shares each
/// key's quota: a key's state is one Redis string, changed atomically by a Lua script in one round
/// trip per call. Methods mirror ritmo's in-process keyed limiter, awaited; they never wait longer
/// than the timeout for the store, then the failure policy decides.
///
/// Cloning is cheap and shares the connection.
///
/// ```no_run
/// use std::time::Duration;
/// use ritmo::Config;
/// use ritmo::redis::RedisKeyedRateLimiter;
/// use ritmo::keyed::Keyed;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let per_ip = RedisKeyedRateLimiter::<std::net::IpAddr>::builder("login", Config::new(5, Duration::from_secs(60))?)
///     .connect_keyed("redis://127.0.0.1/")?;
/// let client: std::net::IpAddr = "203.0.113.7".parse()?;
/// match per_ip.try_acquire(&client).await {
///     Ok(_) => { /* handle the login */ }
///     Err(e) => println!("429, retry after {:?}", e.retry_after()),
/// }
/// # Ok(()) }
/// ```
pub struct RedisKeyedRateLimiter<K: ?Sized, C = ConnectionManager> {
    inner: Arc<Inner>,
    conn: C,
    /// Gathers concurrent acquire calls into one script call; `None` outside a tokio runtime.
    batch: Option<Batcher>,
    key: PhantomData<fn(&K)>,
}

impl<K: ?Sized, C: Clone> Clone for RedisKeyedRateLimiter<K, C> {
    fn clone(&self) -> Self {
        RedisKeyedRateLimiter {
            inner: self.inner.clone(),
            conn: self.conn.clone(),
            batch: self.batch.clone(),
            key: PhantomData,
        }
    }
}

/// The most requests one acquire script call decides.
const MAX_BATCH: usize = 128;
/// The most acquire script calls of one limiter on the wire at once: while they are, requests
/// gather for the next one.
const IN_FLIGHT: usize = 4;

/// A request waiting for the next acquire script call: its key, its arguments (increment,
/// max_wait), and where its four reply values go.
struct Job {
    key: Vec<u8>,
    args: [String; 2],
    reply: oneshot::Sender<Result<[i64; 4], Cause>>,
}

/// The sending end of a limiter's gathering task: each acquire call sends its request there and
/// awaits its answer. The task ends when the last clone of the limiter is dropped.
#[derive(Clone)]
struct Batcher(mpsc::UnboundedSender<Job>);

impl Batcher {
    /// Starts the gathering task on the current runtime, if there is one.
    fn start<C: AsyncConnection>(inner: Arc<Inner>, conn: C) -> Option<Self> {
        let runtime = tokio::runtime::Handle::try_current().ok()?;
        let (tx, rx) = mpsc::unbounded_channel();
        runtime.spawn(gather(inner, conn, rx));
        Some(Batcher(tx))
    }

    /// One request's reply `[status, now, a, b]`, within `timeout` in all (waiting for the
    /// script call included).
    async fn acquire(&self, inner: &Inner, call: &Call) -> Result<Vec<i64>, Cause> {
        let timeout = inner.timeout;
        let (reply, answer) = oneshot::channel();
        let job = Job {
            key: call.key.clone(),
            args: inner.acquire_request(call),
            reply,
        };
        if self.0.send(job).is_err() {
            return Err(gone());
        }
        match tokio::time::timeout(timeout, answer).await {
            Ok(Ok(reply)) => reply.map(|r| r.to_vec()),
            Ok(Err(_)) => Err(gone()),
            Err(_) => Err(Cause::Timeout(timeout)),
        }
    }
}

/// The gathering task stopped (its runtime shut down): the policy decides.
fn gone() -> Cause {
    Cause::Redis(redis::RedisError::from((
        redis::ErrorKind::Client,
        "the limiter's gathering task has stopped (its tokio runtime shut down)",
    )))
}

/// Takes the requests that wait, up to [`MAX_BATCH`], into one acquire script call, with at most
/// [`IN_FLIGHT`] calls on the wire: one request alone goes out at once; under load, requests
/// gather while earlier calls travel. Each decision stays exact: the script decides the requests
/// in order, each on the state the ones before it left, at one instant.
async fn gather<C: AsyncConnection>(
    inner: Arc<Inner>,
    conn: C,
    mut requests: mpsc::UnboundedReceiver<Job>,
) {
    let slots = Arc::new(Semaphore::new(IN_FLIGHT));
    while let Some(first) = requests.recv().await {
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return;
        };
        let mut jobs = vec![first];
        while jobs.len() < MAX_BATCH {
            match requests.try_recv() {
                Ok(job) => jobs.push(job),
                Err(_) => break,
            }
        }
        // Requests whose caller gave up (its deadline passed) are not sent.
        jobs.retain(|job| !job.reply.is_closed());
        if jobs.is_empty() {
            continue;
        }
        let (inner, conn) = (inner.clone(), conn.clone());
        tokio::spawn(async move {
            let _slot = slot;
            decide_batch(&inner, conn, jobs).await;
        });
    }
}

/// One acquire script call for `jobs`; each gets its own four values, or the call's error.
async fn decide_batch<C: AsyncConnection>(inner: &Inner, mut conn: C, jobs: Vec<Job>) {
    let mut invocation = ACQUIRE.prepare_invoke();
    for job in &jobs {
        invocation.key(job.key.as_slice());
    }
    for arg in inner.acquire_head() {
        invocation.arg(arg);
    }
    for job in &jobs {
        invocation
            .arg(job.args[0].as_str())
            .arg(job.args[1].as_str());
    }
    let timeout = inner.timeout;
    let reply =
        match tokio::time::timeout(timeout, invocation.invoke_async::<Vec<i64>>(&mut conn)).await {
            Ok(Ok(reply)) if reply.len() == 4 * jobs.len() => Ok(reply),
            Ok(Ok(_)) => Err(Cause::Redis(redis::RedisError::from((
                redis::ErrorKind::Parse,
                "the acquire script's reply does not have four values per request",
            )))),
            Ok(Err(e)) => Err(Cause::Redis(e)),
            Err(_) => Err(Cause::Timeout(timeout)),
        };
    for (i, job) in jobs.into_iter().enumerate() {
        let answer = match &reply {
            Ok(r) => Ok([r[4 * i], r[4 * i + 1], r[4 * i + 2], r[4 * i + 3]]),
            Err(e) => Err(e.clone()),
        };
        // A caller that gave up meanwhile has its policy's answer already.
        let _ = job.reply.send(answer);
    }
}

impl<K: ?Sized, C> std::fmt::Debug for RedisKeyedRateLimiter<K, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.fmt(f)
    }
}

impl<K: StoreKey + ?Sized> RedisKeyedRateLimiter<K> {
    /// Settings for a limiter named `id` on `config`; finish with
    /// [`connect_keyed`](Builder::connect_keyed).
    pub fn builder(id: &'static str, config: Config) -> Builder {
        Builder::new(id, config)
    }

    pub(crate) fn open(
        inner: Inner,
        client: redis::Client,
        timeout: Duration,
    ) -> Result<Self, Error> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(Error::NoRuntime);
        }
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(Some(timeout))
            .set_min_delay(Duration::from_millis(10))
            .set_max_delay(Duration::from_millis(500))
            .set_number_of_retries(2);
        let conn =
            ConnectionManager::new_lazy_with_config(client, config).map_err(Error::Connection)?;
        Ok(Self::with_connection(inner, conn))
    }
}

impl<K: StoreKey + ?Sized, C: AsyncConnection> RedisKeyedRateLimiter<K, C> {
    pub(crate) fn with_connection(inner: Inner, conn: C) -> Self {
        let inner = Arc::new(inner);
        RedisKeyedRateLimiter {
            batch: Batcher::start(inner.clone(), conn.clone()),
            inner,
            conn,
            key: PhantomData,
        }
    }

    keyed_accessors!();

    /// Takes one permit for `key` if there is one now; otherwise a refusal saying how long until
    /// there would be (or [`Reason::Unavailable`](crate::ritmo::Reason::Unavailable), per the
    /// failure policy).
    pub async fn try_acquire(&self, key: &K) -> Result<Permit, RateLimitExceeded> {
        match self.decide(self.inner.call_one(key, false, 1)).await {
            Decision::Granted { permit, .. } => Ok(permit),
            Decision::Rejected(e, _) => Err(e),
        }
    }

    /// Takes `k` permits for `key` at once, as one unit (`1 <= k <= permits`, else
    /// [`AcquireError::InvalidPermits`]).
    pub async fn try_acquire_n(&self, key: &K, k: u32) -> Result<Permit, AcquireError> {
        match self.decide(self.inner.call(key, k, false)?).await {
            Decision::Granted { permit, .. } => Ok(permit),
            Decision::Rejected(e, _) => Err(e.into()),
        }
    }

    /// Reserves one permit for `key` if it arrives within the config's `max_wait`; the
    /// reservation says how long to wait. Dropping it before [`wait`](Reservation::wait) or
    /// [`commit`](Reservation::commit) gives the permit back if nothing was reserved after it.
    pub async fn reserve(&self, key: &K) -> Result<Reservation<C>, RateLimitExceeded> {
        let reserved = self.reserve_call(self.inner.call_one(key, true, 1)).await;
        reserved.map_err(|(e, _)| e)
    }

    /// Reserves `k` permits for `key` within `max_wait` (see [`reserve`](Self::reserve)).
    pub async fn reserve_n(&self, key: &K, k: u32) -> Result<Reservation<C>, AcquireError> {
        let reserved = self.reserve_call(self.inner.call(key, k, true)?).await;
        Ok(reserved.map_err(|(e, _)| e)?)
    }

    /// Reserves `k` permits for `key` if they arrive within `max_wait` (instead of the config's
    /// `max_wait`, for this call only).
    pub async fn reserve_n_within(
        &self,
        key: &K,
        k: u32,
        max_wait: Duration,
    ) -> Result<Reservation<C>, AcquireError> {
        self.reserve_with_status(key, k, Some(max_wait))
            .await
            .map_err(|r| r.error)
    }

    /// Reserves `k` permits for `key` within `max_wait` (`None`: the config's), reporting the
    /// key's status from the same script call either way (granted: [`Permit::status`]; refused:
    /// [`Refusal::status`]): for layers that report quotas, such as the HTTP `RateLimit` fields,
    /// without a second round trip.
    pub async fn reserve_with_status(
        &self,
        key: &K,
        k: u32,
        max_wait: Option<Duration>,
    ) -> Result<Reservation<C>, Refusal> {
        let mut call = self.inner.call(key, k, true).map_err(|e| Refusal {
            error: e.into(),
            status: None,
        })?;
        if let Some(max_wait) = max_wait {
            call.max_wait = self.inner.wait_bound(max_wait);
        }
        let reserved = self.reserve_call(call).await;
        reserved.map_err(|(e, status)| Refusal::new(e.into(), status))
    }

    /// How long until `key` would get `k` permits at once (zero: now). Takes nothing.
    pub async fn retry_after_n(&self, key: &K, k: u32) -> Result<Duration, AcquireOrStoreError> {
        let call = self.inner.call(key, k, false)?;
        let reply = self.peek(&call.key).await;
        Ok(self.inner.retry_after_n(&call.key, k, reply)?)
    }

    /// The reservation `call` decided, or the refusal and the key's status the store read.
    async fn reserve_call(
        &self,
        call: Call,
    ) -> Result<Reservation<C>, (RateLimitExceeded, Option<KeyStatus>)> {
        match self.decide(&call).await {
            Decision::Granted {
                permit,
                written,
                increment,
            } => Ok(self.reservation(call, permit, written, increment)),
            Decision::Rejected(e, status) => Err((e, status)),
        }
    }

    /// Takes one permit for `key`, waiting for it (without blocking a thread) if it arrives within
    /// `max_wait`. Dropping the future while it waits gives the permit back (tail rule).
    pub async fn acquire(&self, key: &K) -> Result<Permit, RateLimitExceeded> {
        Ok(self.reserve(key).await?.wait().await)
    }

    /// Takes `k` permits for `key`, waiting within `max_wait` (see [`acquire`](Self::acquire)).
    pub async fn acquire_n(&self, key: &K, k: u32) -> Result<Permit, AcquireError> {
        Ok(self.reserve_n(key, k).await?.wait().await)
    }

    /// Runs `work` once `key` has a permit (waiting within `max_wait`, as
    /// [`acquire`](Self::acquire)); refused, `work` never starts. The time spent waiting for the
    /// permit is not part of `work`'s own timeouts.
    pub async fn call<F: std::future::Future>(
        &self,
        key: &K,
        work: F,
    ) -> Result<F::Output, RateLimitExceeded> {
        self.acquire(key).await?;
        Ok(work.await)
    }

    /// [`call`](Self::call) for work that fails with its own error type, which a refusal converts
    /// into.
    pub async fn try_call<T, E: From<RateLimitExceeded>>(
        &self,
        key: &K,
        work: impl std::future::Future<Output = Result<T, E>>,
    ) -> Result<T, E> {
        self.acquire(key).await?;
        work.await
    }

    /// How many single permits `key` would get right now without waiting, in `0..=permits`.
    /// Takes nothing.
    pub async fn available_permits(&self, key: &K) -> Result<u32, StoreError> {
        let redis_key = self.inner.redis_key(key);
        let reply = self.peek(&redis_key).await;
        self.inner.available(&redis_key, reply)
    }

    /// How long until `key` would get one permit (zero: now). Takes nothing.
    pub async fn retry_after(&self, key: &K) -> Result<Duration, StoreError> {
        let redis_key = self.inner.redis_key(key);
        let reply = self.peek(&redis_key).await;
        self.inner.retry_after(&redis_key, reply)
    }

    async fn peek(&self, redis_key: &[u8]) -> Result<Vec<i64>, Cause> {
        if !self.inner.config.enabled() {
            return Ok(Vec::new());
        }
        let args = [self.inner.now_arg()];
        run(&PEEK, &self.conn, self.inner.timeout, redis_key, &args).await
    }

    async fn decide(&self, call: impl std::borrow::Borrow<Call>) -> Decision {
        let call = call.borrow();
        if let Some(d) = self.inner.disabled() {
            return d;
        }
        let reply = match &self.batch {
            Some(batch) => batch.acquire(&self.inner, call).await,
            None => {
                let args = self.inner.acquire_args(call);
                run(&ACQUIRE, &self.conn, self.inner.timeout, &call.key, &args).await
            }
        };
        // The connection manager reconnects by itself after a broken connection: a reply after
        // one is a reconnect.
        match &reply {
            Ok(_) => self.inner.counts.links.up(),
            Err(cause) if Links::is_link_fault(cause) => self.inner.counts.links.broke(),
            Err(_) => {}
        }
        self.inner.decide(call, reply)
    }

    fn reservation(
        &self,
        call: Call,
        permit: Permit,
        written: u64,
        increment: u64,
    ) -> Reservation<C> {
        Reservation {
            inner: self.inner.clone(),
            conn: self.conn.clone(),
            key: call.key,
            k: call.k,
            ready_at: tokio::time::Instant::now() + permit.wait(),
            permit,
            written,
            increment,
            pending: written != 0,
        }
    }
}

/// One script call, bounded by `timeout` whatever the connection does.
async fn run<const N: usize, T: redis::FromRedisValue, C: AsyncConnection>(
    script: &Script,
    conn: &C,
    timeout: Duration,
    key: &[u8],
    args: &[String; N],
) -> Result<T, Cause> {
    let mut conn = conn.clone();
    let mut invocation = script.key(key);
    for arg in args {
        invocation.arg(arg.as_str());
    }
    match tokio::time::timeout(timeout, invocation.invoke_async::<T>(&mut conn)).await {
        Ok(Ok(reply)) => Ok(reply),
        Ok(Err(e)) => Err(Cause::Redis(e)),
        Err(_) => Err(Cause::Timeout(timeout)),
    }
}

/// Permits reserved in the store, to be waited for ([`wait`](Reservation::wait)), used at once
/// ([`commit`](Reservation::commit)) or given back ([`cancel`](Reservation::cancel), or by
/// dropping it).
///
/// Permits go back only if no later reservation was made for the same key (the state still holds
/// what this one wrote): otherwise later callers are already queued behind it, and giving it back
/// would let two calls share one slot, so the slot stays unused. Permits granted by the in-process
/// fallback are not given back.
#[must_use = "dropping a reservation gives its permits back"]
pub struct Reservation<C: AsyncConnection = ConnectionManager> {
    inner: Arc<Inner>,
    conn: C,
    key: Vec<u8>,
    k: u32,
    ready_at: tokio::time::Instant,
    permit: Permit,
    written: u64,
    increment: u64,
    /// The permits can still be given back (a store reservation not yet used).
    pending: bool,
}

reservation_debug!(impl<C: AsyncConnection> std::fmt::Debug for Reservation<C>);

impl<C: AsyncConnection> Reservation<C> {
    reservation_accessors!();

    /// How long from now until the permits arrive (zero once they have).
    pub fn remaining(&self) -> Duration {
        self.ready_at
            .saturating_duration_since(tokio::time::Instant::now())
    }

    /// Sleeps until the permits arrive (without blocking a thread), then uses them. Dropping this
    /// future before then gives them back.
    pub async fn wait(mut self) -> Permit {
        tokio::time::sleep_until(self.ready_at).await;
        self.pending = false;
        self.permit
    }

    /// Gives the permits back now; `true` if they went back (nothing was reserved after them),
    /// `false` if the slot stays unused or the store could not be asked in time.
    pub async fn cancel(mut self) -> bool {
        if !std::mem::replace(&mut self.pending, false) {
            return false;
        }
        refund(
            &self.inner,
            &self.conn,
            &self.key,
            self.written,
            self.increment,
        )
        .await
    }
}

async fn refund<C: AsyncConnection>(
    inner: &Inner,
    conn: &C,
    key: &[u8],
    written: u64,
    increment: u64,
) -> bool {
    let args = inner.refund_args(written, increment);
    matches!(
        run::<4, i64, C>(&REFUND, conn, inner.timeout, key, &args).await,
        Ok(1)
    )
}

impl<C: AsyncConnection> Drop for Reservation<C> {
    fn drop(&mut self) {
        if !self.pending {
            return;
        }
        // Given back in the background: a destructor cannot wait. Outside a runtime (the runtime
        // shutting down) the permits stay taken, which never lets more through than the quota.
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            let (inner, conn, key) = (
                self.inner.clone(),
                self.conn.clone(),
                std::mem::take(&mut self.key),
            );
            let (written, increment) = (self.written, self.increment);
            handle.spawn(async move {
                refund(&inner, &conn, &key, written, increment).await;
            });
        }
    }
}

/// One shared quota in Redis, for async code on tokio: [`RedisKeyedRateLimiter`] with a single
/// key, `{ritmo:<id>}`.
///
/// ```no_run
/// use std::time::Duration;
/// use ritmo::Config;
/// use ritmo::redis::{FailurePolicy, RedisRateLimiter};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// // Every instance of the service shares 10 calls per second to the geocoding API.
/// let geocoding = RedisRateLimiter::builder("geocoding", Config::new(10, Duration::from_secs(1))?)
///     .on_unavailable(FailurePolicy::Reject)
///     .connect("redis://127.0.0.1/")?;
/// geocoding.try_acquire().await?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct RedisRateLimiter<C = ConnectionManager>(pub(crate) RedisKeyedRateLimiter<(), C>);

impl<C> From<RedisKeyedRateLimiter<(), C>> for RedisRateLimiter<C> {
    fn from(keyed: RedisKeyedRateLimiter<(), C>) -> Self {
        RedisRateLimiter(keyed)
    }
}

impl RedisRateLimiter {
    /// Settings for a limiter named `id` on `config`; finish with [`connect`](Builder::connect).
    pub fn builder(id: &'static str, config: Config) -> Builder {
        Builder::new(id, config)
    }
}

impl<C: AsyncConnection> RedisRateLimiter<C> {
    single_accessors!();

    /// Takes one permit if there is one now.
    pub async fn try_acquire(&self) -> Result<Permit, RateLimitExceeded> {
        self.0.try_acquire(&()).await
    }

    /// Takes `k` permits at once, as one unit.
    pub async fn try_acquire_n(&self, k: u32) -> Result<Permit, AcquireError> {
        self.0.try_acquire_n(&(), k).await
    }

    /// Reserves one permit if it arrives within `max_wait`.
    pub async fn reserve(&self) -> Result<Reservation<C>, RateLimitExceeded> {
        self.0.reserve(&()).await
    }

    /// Reserves `k` permits within `max_wait`.
    pub async fn reserve_n(&self, k: u32) -> Result<Reservation<C>, AcquireError> {
        self.0.reserve_n(&(), k).await
    }

    /// Takes one permit, waiting for it within `max_wait`.
    pub async fn acquire(&self) -> Result<Permit, RateLimitExceeded> {
        self.0.acquire(&()).await
    }

    /// Takes `k` permits, waiting for them within `max_wait`.
    pub async fn acquire_n(&self, k: u32) -> Result<Permit, AcquireError> {
        self.0.acquire_n(&(), k).await
    }

    /// Runs `work` once a permit is had (waiting within `max_wait`); refused, it never starts.
    pub async fn call<F: std::future::Future>(
        &self,
        work: F,
    ) -> Result<F::Output, RateLimitExceeded> {
        self.0.call(&(), work).await
    }

    /// [`call`](Self::call) for work with its own error type.
    pub async fn try_call<T, E: From<RateLimitExceeded>>(
        &self,
        work: impl std::future::Future<Output = Result<T, E>>,
    ) -> Result<T, E> {
        self.0.try_call(&(), work).await
    }

    /// How many single permits would pass right now without waiting. Takes nothing.
    pub async fn available_permits(&self) -> Result<u32, StoreError> {
        self.0.available_permits(&()).await
    }

    /// How long until one permit would pass (zero: now). Takes nothing.
    pub async fn retry_after(&self) -> Result<Duration, StoreError> {
        self.0.retry_after(&()).await
    }
}

/// Its admitted and rejected calls, faults and reconnects (see [`crate::metrics`]).
#[cfg(feature = "metrics")]
impl<K: ?Sized, C> ritmo_std::metrics::Recordable for RedisKeyedRateLimiter<K, C> {
    fn record(&self) {
        let inner = &self.inner;
        let away = inner.away.load(std::sync::atomic::Ordering::Relaxed);
        crate::observe::record(inner.id, away, &inner.counts, &inner.counts.links);
    }
}

/// Its admitted and rejected calls, faults and reconnects (see [`crate::metrics`]).
#[cfg(feature = "metrics")]
impl<C> ritmo_std::metrics::Recordable for RedisRateLimiter<C> {
    fn record(&self) {
        self.0.record();
    }
}
