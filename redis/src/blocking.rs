//! The blocking limiters: the same as the async ones, for threads that may block, on redis-rs's
//! synchronous connections.
//!
//! Each call borrows an idle connection (or opens one), runs one script and puts the connection
//! back; a connection that failed is dropped, and a call whose pooled connection turns out closed
//! runs once more on a fresh one, so a restarted Redis is picked up without restarting anything.
//!
//! One deadline bounds each call: waiting for a connection, connecting, selecting the database,
//! loading the script and running it all share the limiter's timeout (each step gets the time
//! left, not a timeout of its own). At most [`Builder::pool_size`] connections are open at once
//! ([`DEFAULT_POOL_SIZE`](crate::DEFAULT_POOL_SIZE) by default); a caller beyond that waits for one
//! to come back, within its timeout, and past it the failure policy decides.

use std::marker::PhantomData;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use redis::{Connection, ConnectionLike, Script};
use ritmo_core::{AcquireError, Config, RateLimitExceeded};

use crate::common::{keyed_accessors, reservation_accessors, reservation_debug, single_accessors};
use crate::error::Cause;
use crate::observe::Links;
use crate::script::{ACQUIRE, PEEK, REFUND};
use crate::{AcquireOrStoreError, Builder, Call, Decision, Inner, Permit, StoreError, StoreKey};

/// Connections to one server, reused across calls and threads: at most `max` open at once.
pub(crate) struct Pool {
    /// Connects without `CLIENT SETINFO` and without `SELECT`: the pool selects `db` itself, so
    /// that every step of a call runs in the time the call has left.
    client: redis::Client,
    db: i64,
    max: usize,
    state: Mutex<PoolState>,
    /// Signalled when a connection goes back to the pool or is closed.
    freed: Condvar,
    /// Connections made after one failed (feature `metrics`).
    pub(crate) links: Links,
}

struct PoolState {
    idle: Vec<Connection>,
    /// Connections open or being opened, idle ones included.
    open: usize,
}

/// A caller's share of the pool: a connection (or the right to open one), given back when
/// dropped. A slot whose connection was dropped (failed) frees its place for another caller.
struct Slot<'a> {
    pool: &'a Pool,
    conn: Option<Connection>,
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let mut state = self.pool.state();
        match self.conn.take() {
            Some(conn) => state.idle.push(conn),
            None => state.open -= 1,
        }
        drop(state);
        self.pool.freed.notify_one();
    }
}

/// The time left before `deadline`, or the timeout's error once it has passed.
fn left(deadline: Instant, timeout: Duration) -> Result<Duration, Cause> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(Cause::Timeout(timeout));
    }
    Ok(left)
}

/// Bounds the next command's reads and writes by the time left.
fn bound(conn: &Connection, deadline: Instant, timeout: Duration) -> Result<(), Cause> {
    let left = left(deadline, timeout)?;
    conn.set_read_timeout(Some(left)).map_err(Cause::Redis)?;
    conn.set_write_timeout(Some(left)).map_err(Cause::Redis)
}

impl Pool {
    pub(crate) fn new(client: redis::Client, db: i64, max: usize) -> Self {
        Pool {
            client,
            db,
            max: max.max(1),
            state: Mutex::new(PoolState {
                idle: Vec::new(),
                open: 0,
            }),
            freed: Condvar::new(),
            links: Links::default(),
        }
    }

    fn state(&self) -> MutexGuard<'_, PoolState> {
        // A panic elsewhere while holding the lock leaves the state consistent: every change to
        // it is one step.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// An idle connection, or the right to open one, or (the pool full) a wait until one of those
    /// frees up, until `deadline` at most.
    fn slot(&self, deadline: Instant, timeout: Duration) -> Result<Slot<'_>, Cause> {
        let mut state = self.state();
        loop {
            if let Some(conn) = state.idle.pop() {
                return Ok(Slot {
                    pool: self,
                    conn: Some(conn),
                });
            }
            if state.open < self.max {
                state.open += 1;
                return Ok(Slot {
                    pool: self,
                    conn: None,
                });
            }
            let wait = left(deadline, timeout)?;
            state = self
                .freed
                .wait_timeout(state, wait)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Runs `script` once with `key` and `args`, within `timeout` in all: waiting for a slot,
    /// connecting, selecting the database, loading the script and running it share one deadline.
    fn run<T: redis::FromRedisValue>(
        &self,
        timeout: Duration,
        script: &Script,
        key: &[u8],
        args: &[String],
    ) -> Result<T, Cause> {
        let deadline = Instant::now() + timeout;
        let mut slot = self.slot(deadline, timeout)?;
        let from_pool = slot.conn.is_some();
        match self.run_in(&mut slot, deadline, timeout, script, key, args) {
            // A pooled connection the server closed (it restarted): once more on a fresh one, in
            // the time left. Had the first call run before the reply was lost, the retry charges
            // twice: a permit lost, never one too many.
            Err(Cause::Redis(e))
                if from_pool
                    && !e.is_timeout()
                    && (e.is_connection_dropped() || e.is_io_error()) =>
            {
                self.run_in(&mut slot, deadline, timeout, script, key, args)
            }
            other => other,
        }
    }

    /// Runs the script on the slot's connection (opening one if it has none). A connection that
    /// failed is dropped from the slot.
    fn run_in<T: redis::FromRedisValue>(
        &self,
        slot: &mut Slot<'_>,
        deadline: Instant,
        timeout: Duration,
        script: &Script,
        key: &[u8],
        args: &[String],
    ) -> Result<T, Cause> {
        let mut conn = match slot.conn.take() {
            Some(conn) => conn,
            None => self.connect(deadline, timeout)?,
        };
        let result = invoke(&mut conn, deadline, timeout, script, key, args);
        // An error the server sent leaves the connection usable; anything else (a timeout in the
        // middle of a reply, a closed socket) does not.
        let usable = match &result {
            Ok(_) => true,
            Err(Cause::Redis(e)) => matches!(e.kind(), redis::ErrorKind::Server(_)),
            Err(_) => false,
        };
        if usable && conn.is_open() {
            slot.conn = Some(conn);
        } else {
            self.links.broke();
        }
        result
    }

    /// A fresh connection, its database selected, by `deadline`.
    fn connect(&self, deadline: Instant, timeout: Duration) -> Result<Connection, Cause> {
        let conn = self.open(deadline, timeout);
        match &conn {
            Ok(_) => self.links.up(),
            Err(_) => self.links.broke(),
        }
        conn
    }

    /// [`connect`](Self::connect), uncounted.
    fn open(&self, deadline: Instant, timeout: Duration) -> Result<Connection, Cause> {
        let mut conn = self
            .client
            .get_connection_with_timeout(left(deadline, timeout)?)
            .map_err(Cause::Redis)?;
        if self.db != 0 {
            bound(&conn, deadline, timeout)?;
            redis::cmd("SELECT")
                .arg(self.db)
                .query::<()>(&mut conn)
                .map_err(Cause::Redis)?;
        }
        Ok(conn)
    }
}

/// `EVALSHA`, and after `NOSCRIPT` (a server restarted, or `SCRIPT FLUSH`) `SCRIPT LOAD` and
/// `EVALSHA` again: each command bounded by the time left before `deadline`.
fn invoke<T: redis::FromRedisValue>(
    conn: &mut Connection,
    deadline: Instant,
    timeout: Duration,
    script: &Script,
    key: &[u8],
    args: &[String],
) -> Result<T, Cause> {
    let mut evalsha = redis::cmd("EVALSHA");
    evalsha.arg(script.get_hash()).arg(1).arg(key);
    for arg in args {
        evalsha.arg(arg.as_str());
    }
    bound(conn, deadline, timeout)?;
    match evalsha.query::<T>(conn) {
        Err(e) if e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript) => {
            bound(conn, deadline, timeout)?;
            script.load(conn).map_err(Cause::Redis)?;
            bound(conn, deadline, timeout)?;
            evalsha.query::<T>(conn).map_err(Cause::Redis)
        }
        other => other.map_err(Cause::Redis),
    }
}

/// One shared quota per key, in Redis, for threads that may block (see
/// [`RedisKeyedRateLimiter`](crate::RedisKeyedRateLimiter), its async twin). `Clone`, `Send` and
/// `Sync`: share it across threads.
///
/// ```no_run
/// use std::time::Duration;
/// use ritmo::Config;
/// use ritmo::redis::blocking::RedisKeyedRateLimiter;
/// use ritmo::keyed::Keyed;
///
/// let per_user = RedisKeyedRateLimiter::<str>::builder("api", Config::new(10, Duration::from_secs(1))?)
///     .connect_blocking_keyed::<str>("redis://127.0.0.1/")?;
/// if per_user.try_acquire("alice").is_ok() {
///     // serve alice
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct RedisKeyedRateLimiter<K: ?Sized> {
    inner: Arc<Inner>,
    pool: Arc<Pool>,
    key: PhantomData<fn(&K)>,
}

impl<K: ?Sized> Clone for RedisKeyedRateLimiter<K> {
    fn clone(&self) -> Self {
        RedisKeyedRateLimiter {
            inner: self.inner.clone(),
            pool: self.pool.clone(),
            key: PhantomData,
        }
    }
}

impl<K: ?Sized> std::fmt::Debug for RedisKeyedRateLimiter<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.fmt(f)
    }
}

impl<K: StoreKey + ?Sized> RedisKeyedRateLimiter<K> {
    /// Settings for a limiter named `id` on `config`; finish with
    /// [`connect_blocking_keyed`](Builder::connect_blocking_keyed).
    pub fn builder(id: &'static str, config: Config) -> Builder {
        Builder::new(id, config)
    }

    pub(crate) fn open(inner: Inner, pool: Pool) -> Self {
        RedisKeyedRateLimiter {
            inner: Arc::new(inner),
            pool: Arc::new(pool),
            key: PhantomData,
        }
    }

    keyed_accessors!();

    /// Takes one permit for `key` if there is one now.
    pub fn try_acquire(&self, key: &K) -> Result<Permit, RateLimitExceeded> {
        match self.decide(&self.inner.call_one(key, false, 1)) {
            Decision::Granted { permit, .. } => Ok(permit),
            Decision::Rejected(e, _) => Err(e),
        }
    }

    /// Takes `k` permits for `key` at once, as one unit (`1 <= k <= permits`).
    pub fn try_acquire_n(&self, key: &K, k: u32) -> Result<Permit, AcquireError> {
        match self.decide(&self.inner.call(key, k, false)?) {
            Decision::Granted { permit, .. } => Ok(permit),
            Decision::Rejected(e, _) => Err(e.into()),
        }
    }

    /// Reserves one permit for `key` if it arrives within `max_wait`.
    pub fn reserve(&self, key: &K) -> Result<Reservation, RateLimitExceeded> {
        self.reserve_call(self.inner.call_one(key, true, 1))
    }

    /// Reserves `k` permits for `key` within `max_wait`.
    pub fn reserve_n(&self, key: &K, k: u32) -> Result<Reservation, AcquireError> {
        Ok(self.reserve_call(self.inner.call(key, k, true)?)?)
    }

    /// Reserves `k` permits for `key` if they arrive within `max_wait` (instead of the config's
    /// `max_wait`, for this call only).
    pub fn reserve_n_within(
        &self,
        key: &K,
        k: u32,
        max_wait: Duration,
    ) -> Result<Reservation, AcquireError> {
        let mut call = self.inner.call(key, k, true)?;
        call.max_wait = self.inner.wait_bound(max_wait);
        Ok(self.reserve_call(call)?)
    }

    /// How long until `key` would get `k` permits at once (zero: now). Takes nothing.
    pub fn retry_after_n(&self, key: &K, k: u32) -> Result<Duration, AcquireOrStoreError> {
        let call = self.inner.call(key, k, false)?;
        let reply = self.peek(&call.key);
        Ok(self.inner.retry_after_n(&call.key, k, reply)?)
    }

    /// Takes one permit for `key`, sleeping the thread until it arrives if that is within
    /// `max_wait`.
    pub fn acquire(&self, key: &K) -> Result<Permit, RateLimitExceeded> {
        Ok(self.reserve(key)?.wait())
    }

    /// Takes `k` permits for `key`, sleeping within `max_wait`.
    pub fn acquire_n(&self, key: &K, k: u32) -> Result<Permit, AcquireError> {
        Ok(self.reserve_n(key, k)?.wait())
    }

    /// Runs `work` once `key` has a permit (sleeping within `max_wait`, as
    /// [`acquire`](Self::acquire)); refused, `work` never runs.
    pub fn call<T>(&self, key: &K, work: impl FnOnce() -> T) -> Result<T, RateLimitExceeded> {
        self.acquire(key)?;
        Ok(work())
    }

    /// [`call`](Self::call) for work that fails with its own error type, which a refusal converts
    /// into.
    pub fn try_call<T, E: From<RateLimitExceeded>>(
        &self,
        key: &K,
        work: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E> {
        self.acquire(key)?;
        work()
    }

    /// How many single permits `key` would get right now without waiting. Takes nothing.
    pub fn available_permits(&self, key: &K) -> Result<u32, StoreError> {
        let redis_key = self.inner.redis_key(key);
        let reply = self.peek(&redis_key);
        self.inner.available(&redis_key, reply)
    }

    /// How long until `key` would get one permit (zero: now). Takes nothing.
    pub fn retry_after(&self, key: &K) -> Result<Duration, StoreError> {
        let redis_key = self.inner.redis_key(key);
        let reply = self.peek(&redis_key);
        self.inner.retry_after(&redis_key, reply)
    }

    fn peek(&self, redis_key: &[u8]) -> Result<Vec<i64>, Cause> {
        if !self.inner.config.enabled() {
            return Ok(Vec::new());
        }
        self.pool.run(
            self.inner.timeout,
            &PEEK,
            redis_key,
            &[self.inner.now_arg()],
        )
    }

    fn decide(&self, call: &Call) -> Decision {
        if let Some(d) = self.inner.disabled() {
            return d;
        }
        let args = self.inner.acquire_args(call);
        let reply = self
            .pool
            .run(self.inner.timeout, &ACQUIRE, &call.key, &args);
        self.inner.decide(call, reply)
    }

    fn reserve_call(&self, call: Call) -> Result<Reservation, RateLimitExceeded> {
        match self.decide(&call) {
            Decision::Granted {
                permit,
                written,
                increment,
            } => Ok(Reservation {
                inner: self.inner.clone(),
                pool: self.pool.clone(),
                ready_at: Instant::now() + permit.wait(),
                key: call.key,
                k: call.k,
                permit,
                written,
                increment,
                pending: written != 0,
            }),
            Decision::Rejected(e, _) => Err(e),
        }
    }
}

/// Permits reserved in the store (see [`crate::Reservation`]): [`wait`](Reservation::wait),
/// [`commit`](Reservation::commit), or give them back with [`cancel`](Reservation::cancel) or by
/// dropping it (one round trip, within the timeout).
#[must_use = "dropping a reservation gives its permits back"]
pub struct Reservation {
    inner: Arc<Inner>,
    pool: Arc<Pool>,
    key: Vec<u8>,
    k: u32,
    ready_at: Instant,
    permit: Permit,
    written: u64,
    increment: u64,
    pending: bool,
}

reservation_debug!(impl std::fmt::Debug for Reservation);

impl Reservation {
    reservation_accessors!();

    /// How long from now until the permits arrive (zero once they have).
    pub fn remaining(&self) -> Duration {
        self.ready_at.saturating_duration_since(Instant::now())
    }

    /// Sleeps the thread until the permits arrive, then uses them.
    pub fn wait(mut self) -> Permit {
        let left = self.ready_at.saturating_duration_since(Instant::now());
        if !left.is_zero() {
            std::thread::sleep(left);
        }
        self.pending = false;
        self.permit
    }

    /// Gives the permits back; `true` if they went back (nothing was reserved after them).
    pub fn cancel(mut self) -> bool {
        self.refund()
    }

    fn refund(&mut self) -> bool {
        if !std::mem::replace(&mut self.pending, false) {
            return false;
        }
        let args = self.inner.refund_args(self.written, self.increment);
        matches!(
            self.pool
                .run::<i64>(self.inner.timeout, &REFUND, &self.key, &args),
            Ok(1)
        )
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.refund();
    }
}

/// One shared quota in Redis for threads that may block: [`RedisKeyedRateLimiter`] with a single
/// key.
///
/// ```no_run
/// use std::time::Duration;
/// use ritmo::Config;
/// use ritmo::redis::blocking::RedisRateLimiter;
///
/// let geocoding = RedisRateLimiter::builder("geocoding", Config::new(10, Duration::from_secs(1))?)
///     .connect_blocking("redis://127.0.0.1/")?;
/// match geocoding.try_acquire() {
///     Ok(permit) => println!("granted at {:?} us", permit.store_time_micros()),
///     Err(e) => println!("{e}"),
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct RedisRateLimiter(RedisKeyedRateLimiter<()>);

impl From<RedisKeyedRateLimiter<()>> for RedisRateLimiter {
    fn from(keyed: RedisKeyedRateLimiter<()>) -> Self {
        RedisRateLimiter(keyed)
    }
}

impl RedisRateLimiter {
    /// Settings for a limiter named `id` on `config`; finish with
    /// [`connect_blocking`](Builder::connect_blocking).
    pub fn builder(id: &'static str, config: Config) -> Builder {
        Builder::new(id, config)
    }

    single_accessors!();

    /// Takes one permit if there is one now.
    pub fn try_acquire(&self) -> Result<Permit, RateLimitExceeded> {
        self.0.try_acquire(&())
    }

    /// Takes `k` permits at once, as one unit.
    pub fn try_acquire_n(&self, k: u32) -> Result<Permit, AcquireError> {
        self.0.try_acquire_n(&(), k)
    }

    /// Reserves one permit if it arrives within `max_wait`.
    pub fn reserve(&self) -> Result<Reservation, RateLimitExceeded> {
        self.0.reserve(&())
    }

    /// Reserves `k` permits within `max_wait`.
    pub fn reserve_n(&self, k: u32) -> Result<Reservation, AcquireError> {
        self.0.reserve_n(&(), k)
    }

    /// Takes one permit, sleeping within `max_wait`.
    pub fn acquire(&self) -> Result<Permit, RateLimitExceeded> {
        self.0.acquire(&())
    }

    /// Takes `k` permits, sleeping within `max_wait`.
    pub fn acquire_n(&self, k: u32) -> Result<Permit, AcquireError> {
        self.0.acquire_n(&(), k)
    }

    /// Runs `work` once a permit is had (sleeping within `max_wait`); refused, it never runs.
    pub fn call<T>(&self, work: impl FnOnce() -> T) -> Result<T, RateLimitExceeded> {
        self.0.call(&(), work)
    }

    /// [`call`](Self::call) for work with its own error type.
    pub fn try_call<T, E: From<RateLimitExceeded>>(
        &self,
        work: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E> {
        self.0.try_call(&(), work)
    }

    /// How many single permits would pass right now without waiting. Takes nothing.
    pub fn available_permits(&self) -> Result<u32, StoreError> {
        self.0.available_permits(&())
    }

    /// How long until one permit would pass (zero: now). Takes nothing.
    pub fn retry_after(&self) -> Result<Duration, StoreError> {
        self.0.retry_after(&())
    }
}

/// Its admitted and rejected calls, faults and reconnects (see [`crate::metrics`]).
#[cfg(feature = "metrics")]
impl<K: ?Sized> ritmo_std::metrics::Recordable for RedisKeyedRateLimiter<K> {
    fn record(&self) {
        let inner = &self.inner;
        let away = inner.away.load(std::sync::atomic::Ordering::Relaxed);
        crate::observe::record(inner.id, away, &inner.counts, &self.pool.links);
    }
}

/// Its admitted and rejected calls, faults and reconnects (see [`crate::metrics`]).
#[cfg(feature = "metrics")]
impl ritmo_std::metrics::Recordable for RedisRateLimiter {
    fn record(&self) {
        self.0.record();
    }
}
