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
use tokio::time::{Instant, sleep_until};

use crate::common::{Refund, verbs};
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

impl<K: StoreKey + ?Sized> RedisKeyedRateLimiter<K> {
    pub(crate) fn open(inner: Inner, client: redis::Client) -> Result<Self, Error> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(Error::NoRuntime);
        }
        let timeout = inner.timeout;
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

    /// The acquire script's reply for `call`: through the gathering task when there is one.
    async fn ask(&self, call: &Call) -> Result<Vec<i64>, Cause> {
        let reply = match &self.batch {
            Some(batch) => batch.acquire(&self.inner, call).await,
            None => {
                let args = self.inner.acquire_args(call);
                run(&self.conn, &self.inner, &ACQUIRE, &call.key, &args).await
            }
        };
        // The connection manager reconnects by itself after a broken connection: a reply after
        // one is a reconnect.
        match &reply {
            Ok(_) => self.inner.counts.links.up(),
            Err(cause) if Links::is_link_fault(cause) => self.inner.counts.links.broke(),
            Err(_) => {}
        }
        reply
    }
}

/// One script call, bounded by the limiter's timeout whatever the connection does.
async fn run<T: redis::FromRedisValue>(
    conn: &impl AsyncConnection,
    inner: &Inner,
    script: &Script,
    key: &[u8],
    args: &[String],
) -> Result<T, Cause> {
    let mut conn = conn.clone();
    let mut invocation = script.key(key);
    for arg in args {
        invocation.arg(arg.as_str());
    }
    let timeout = inner.timeout;
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
    permit: Permit,
    k: u32,
    ready_at: Instant,
    /// How to give the permits back, while they can be (a store reservation not yet used).
    refund: Option<Refund<C>>,
}

impl<C: AsyncConnection> Drop for Reservation<C> {
    fn drop(&mut self) {
        // Given back in the background: a destructor cannot wait. Outside a runtime (the runtime
        // shutting down) the permits stay taken, which never lets more through than the quota.
        if let Some(refund) = self.refund.take()
            && let Ok(handle) = tokio::runtime::Handle::try_current()
        {
            handle.spawn(give_back(refund));
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

impl<C: AsyncConnection> RedisRateLimiter<C> {
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
}

verbs! {
    flavour: [async] [.await],
    generics: [C: AsyncConnection] [C],
    types: RedisKeyedRateLimiter<K, C>, RedisKeyedRateLimiter<(), C>, RedisRateLimiter<C>,
        Reservation<C>, C,
    connect: connect, connect_keyed,
    waiting: "without blocking a thread",
        " Dropping the future while it waits gives the permits back (if nothing was reserved \
        after them).",
}
