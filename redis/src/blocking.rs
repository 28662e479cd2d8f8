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

use crate::common::{Refund, verbs};
use crate::error::Cause;
use crate::script::{ACQUIRE, PEEK, REFUND};
use crate::{
    AcquireOrStoreError, Builder, Call, Decision, Inner, KeyStatus, Permit, Refusal, StoreError,
    StoreKey,
};

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

    /// Runs the script on the slot's connection (opening one if it has none). A connection that
    /// failed is dropped from the slot.
    fn run_in<T: redis::FromRedisValue>(
        &self,
        slot: &mut Slot<'_>,
        deadline: Instant,
        inner: &Inner,
        script: &Script,
        key: &[u8],
        args: &[String],
    ) -> Result<T, Cause> {
        let mut conn = match slot.conn.take() {
            Some(conn) => conn,
            None => self.connect(deadline, inner)?,
        };
        let result = invoke(&mut conn, deadline, inner.timeout, script, key, args);
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
            inner.counts.links.broke();
        }
        result
    }

    /// A fresh connection, its database selected, by `deadline`.
    fn connect(&self, deadline: Instant, inner: &Inner) -> Result<Connection, Cause> {
        let conn = self.open(deadline, inner.timeout);
        match &conn {
            Ok(_) => inner.counts.links.up(),
            Err(_) => inner.counts.links.broke(),
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

/// Runs `script` once with `key` and `args`, within the limiter's timeout in all: waiting for a
/// slot, connecting, selecting the database, loading the script and running it share one
/// deadline.
fn run<T: redis::FromRedisValue>(
    pool: &Pool,
    inner: &Inner,
    script: &Script,
    key: &[u8],
    args: &[String],
) -> Result<T, Cause> {
    let deadline = Instant::now() + inner.timeout;
    let mut slot = pool.slot(deadline, inner.timeout)?;
    let from_pool = slot.conn.is_some();
    match pool.run_in(&mut slot, deadline, inner, script, key, args) {
        // A pooled connection the server closed (it restarted): once more on a fresh one, in
        // the time left. Had the first call run before the reply was lost, the retry charges
        // twice: a permit lost, never one too many.
        Err(Cause::Redis(e))
            if from_pool && !e.is_timeout() && (e.is_connection_dropped() || e.is_io_error()) =>
        {
            pool.run_in(&mut slot, deadline, inner, script, key, args)
        }
        other => other,
    }
}

/// Sleeps the thread until `at`.
fn sleep_until(at: Instant) {
    std::thread::sleep(at.saturating_duration_since(Instant::now()));
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
    conn: Arc<Pool>,
    key: PhantomData<fn(&K)>,
}

impl<K: ?Sized> Clone for RedisKeyedRateLimiter<K> {
    fn clone(&self) -> Self {
        RedisKeyedRateLimiter {
            inner: self.inner.clone(),
            conn: self.conn.clone(),
            key: PhantomData,
        }
    }
}

impl<K: StoreKey + ?Sized> RedisKeyedRateLimiter<K> {
    pub(crate) fn open(inner: Inner, pool: Pool) -> Self {
        RedisKeyedRateLimiter {
            inner: Arc::new(inner),
            conn: Arc::new(pool),
            key: PhantomData,
        }
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

    /// The acquire script's reply for `call`.
    fn ask(&self, call: &Call) -> Result<Vec<i64>, Cause> {
        let args = self.inner.acquire_args(call);
        run(&self.conn, &self.inner, &ACQUIRE, &call.key, &args)
    }
}

/// Permits reserved in the store (see [`crate::Reservation`]): [`wait`](Reservation::wait),
/// [`commit`](Reservation::commit), or give them back with [`cancel`](Reservation::cancel) or by
/// dropping it (one round trip, within the timeout).
#[must_use = "dropping a reservation gives its permits back"]
pub struct Reservation {
    permit: Permit,
    k: u32,
    ready_at: Instant,
    /// How to give the permits back, while they can be (a store reservation not yet used).
    refund: Option<Refund<Arc<Pool>>>,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if let Some(refund) = self.refund.take() {
            give_back(refund);
        }
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

impl RedisRateLimiter {
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
}

verbs! {
    flavour: [] [],
    generics: [] [],
    types: RedisKeyedRateLimiter<K>, RedisKeyedRateLimiter<()>, RedisRateLimiter, Reservation,
        Arc<Pool>,
    connect: connect_blocking, connect_blocking_keyed,
    waiting: "sleeping the thread", "",
}
