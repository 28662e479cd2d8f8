//! Blocking waits: [`ParkWait`] parks the calling thread until its slot, and an [`Interrupt`]
//! from another thread wakes it early.
//!
//! A waiting call has already reserved its slot, so it only needs to sleep until the
//! clock reaches it: [`std::thread::park_timeout`] for the time left, in a loop that re-reads the
//! clock after every wake-up (spurious or early ones just park again). Nothing spins.
//!
//! Rust threads have no built-in interruption, so ritmo's is an explicit token, in the spirit of
//! a cancellation token: an [`Interrupt`] is a cheap, cloneable handle to one flag. Each thread has
//! its own ([`Interrupt::current`]), which the plain [`acquire`](crate::BlockingExt::acquire)
//! observes, and a program can make shared ones ([`Interrupt::new`], one per shutdown, say) and
//! wait with [`ParkWait::with_interrupt`]. `interrupt()` sets the flag and unparks every thread
//! waiting on it; a waiter that sees the flag gives its permit back (if no later call reserved one behind it) and fails
//! with [`Reason::Interrupted`](crate::ritmo::Reason::Interrupted). The flag stays set until the
//! caller [`clear`](Interrupt::clear)s it, so the interruption stays observable afterwards, and
//! later waits on the same token fail at once until then.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::{self, Thread};

use ritmo_core::{Clock, Interrupted, Wait};

struct Inner {
    interrupted: AtomicBool,
    /// Threads parked in a wait that observes this token.
    waiters: Mutex<Vec<Thread>>,
}

/// A handle that interrupts blocking waits: clone it, send it to another thread, call
/// [`interrupt`](Interrupt::interrupt) there.
///
/// ```
/// use std::time::Duration;
/// use ritmo::{Config, Reason};
/// use ritmo::server::{BlockingExt, Interrupt};
///
/// let config = Config::new(1, Duration::from_secs(60))?.with_max_wait(Duration::from_secs(120));
/// let limiter = &ritmo::server::limiter("api", config);
/// limiter.try_acquire().unwrap(); // the next permit is a minute away
///
/// std::thread::scope(|s| {
///     let (tx, rx) = std::sync::mpsc::channel();
///     let waiter = s.spawn(move || {
///         tx.send(Interrupt::current()).unwrap(); // this thread's own token
///         let result = limiter.acquire();
///         (result, Interrupt::current().is_interrupted())
///     });
///     let handle = rx.recv().unwrap();
///     while limiter.retry_after() < Duration::from_secs(61) {
///         std::thread::yield_now(); // until the waiter has reserved its slot
///     }
///     handle.interrupt();
///     let (result, still_flagged) = waiter.join().unwrap();
///     assert_eq!(result.unwrap_err().reason(), Reason::Interrupted);
///     assert!(still_flagged);
/// });
/// # Ok::<(), ritmo::ConfigError>(())
/// ```
#[derive(Clone)]
pub struct Interrupt {
    inner: Arc<Inner>,
}

impl fmt::Debug for Interrupt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Interrupt")
            .field("interrupted", &self.is_interrupted())
            .finish_non_exhaustive()
    }
}

impl Default for Interrupt {
    fn default() -> Self {
        Self::new()
    }
}

thread_local! {
    static CURRENT: Interrupt = Interrupt::new();
}

impl Interrupt {
    /// A new token, not interrupted, that no thread observes until one waits with it
    /// ([`ParkWait::with_interrupt`]).
    ///
    /// ```
    /// let shutdown = ritmo::server::Interrupt::new();
    /// assert!(!shutdown.is_interrupted());
    /// ```
    pub fn new() -> Self {
        Interrupt {
            inner: Arc::new(Inner {
                interrupted: AtomicBool::new(false),
                waiters: Mutex::new(Vec::new()),
            }),
        }
    }

    /// The calling thread's own token: what [`BlockingExt::acquire`](crate::BlockingExt::acquire)
    /// and the call wrappers observe. Hand a clone to another thread to let it interrupt this one.
    ///
    /// ```
    /// use ritmo::server::Interrupt;
    /// let mine = Interrupt::current();
    /// mine.interrupt();
    /// assert!(Interrupt::current().is_interrupted()); // the same flag
    /// assert!(mine.clear());
    /// assert!(!std::thread::spawn(|| Interrupt::current().is_interrupted()).join().unwrap());
    /// ```
    pub fn current() -> Self {
        // During the thread's own teardown (a wait inside another thread-local's destructor) the
        // token is gone: such a wait gets a fresh token that nobody else can interrupt.
        CURRENT
            .try_with(Interrupt::clone)
            .unwrap_or_else(|_| Interrupt::new())
    }

    /// Sets the flag and wakes every thread waiting on this token. A thread that starts waiting
    /// afterwards fails at once, until the flag is [`clear`](Interrupt::clear)ed.
    ///
    /// ```
    /// let token = ritmo::server::Interrupt::new();
    /// token.interrupt();
    /// assert!(token.is_interrupted());
    /// ```
    pub fn interrupt(&self) {
        self.inner.interrupted.store(true, Ordering::SeqCst);
        let waiters = self
            .inner
            .waiters
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for thread in waiters.iter() {
            thread.unpark();
        }
    }

    /// Whether the flag is set. It stays set after a wait it ended, until cleared.
    ///
    /// ```
    /// assert!(!ritmo::server::Interrupt::new().is_interrupted());
    /// ```
    pub fn is_interrupted(&self) -> bool {
        self.inner.interrupted.load(Ordering::SeqCst)
    }

    /// Clears the flag; returns whether it was set.
    ///
    /// ```
    /// let token = ritmo::server::Interrupt::new();
    /// token.interrupt();
    /// assert!(token.clear());
    /// assert!(!token.clear());
    /// ```
    pub fn clear(&self) -> bool {
        self.inner.interrupted.swap(false, Ordering::SeqCst)
    }

    /// Registers the calling thread as a waiter; the guard removes it again.
    fn register(&self) -> Registration<'_> {
        let current = thread::current();
        let id = current.id();
        self.inner
            .waiters
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(current);
        Registration { token: self, id }
    }
}

struct Registration<'a> {
    token: &'a Interrupt,
    id: thread::ThreadId,
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        let mut waiters = self
            .token
            .inner
            .waiters
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(i) = waiters.iter().position(|t| t.id() == self.id) {
            waiters.swap_remove(i);
        }
    }
}

/// Waits by parking the calling thread until the clock reaches the deadline; an [`Interrupt`]
/// ends the wait early. Implements core's [`Wait`], so it works with
/// [`RateLimiter::acquire_with`](crate::ritmo::RateLimiter::acquire_with) and
/// [`Reservation::wait_with`](crate::ritmo::Reservation::wait_with) on any clock.
///
/// The time left is converted with the clock's [`TickRate`](crate::ritmo::TickRate) and parked
/// for in one go; after each wake-up (the timeout, an `unpark` from elsewhere, or a spurious one)
/// the clock is read again, so the wait never ends before the deadline and never busy-spins.
///
/// ```
/// use std::time::Duration;
/// use ritmo::{Clock, Config};
/// use ritmo::server::{Interrupt, ParkWait};
///
/// let config = Config::new(1, Duration::from_millis(20))?.with_max_wait(Duration::from_secs(1));
/// let limiter = ritmo::server::limiter("api", config);
/// let shutdown = Interrupt::new();
/// limiter.try_acquire().unwrap();
/// let reservation = limiter.reserve().unwrap();
/// let slot = reservation.slot();
/// reservation.wait_with(&mut ParkWait::with_interrupt(&shutdown)).unwrap();
/// assert!(limiter.clock().now() >= slot);
/// # Ok::<(), ritmo::ConfigError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct ParkWait {
    interrupt: Option<Interrupt>,
}

impl ParkWait {
    /// A wait that observes the waiting thread's own token ([`Interrupt::current`]).
    ///
    /// ```
    /// let _wait = ritmo::server::ParkWait::new();
    /// ```
    pub fn new() -> Self {
        ParkWait { interrupt: None }
    }

    /// A wait that observes `interrupt` instead of the thread's own token.
    ///
    /// ```
    /// let shutdown = ritmo::server::Interrupt::new();
    /// let _wait = ritmo::server::ParkWait::with_interrupt(&shutdown);
    /// ```
    pub fn with_interrupt(interrupt: &Interrupt) -> Self {
        ParkWait {
            interrupt: Some(interrupt.clone()),
        }
    }

    /// Parks until `clock` reads at least `deadline`, or `token` is interrupted.
    fn park_until<C: Clock + ?Sized>(
        token: &Interrupt,
        clock: &C,
        deadline: u64,
    ) -> Result<(), Interrupted> {
        let _registered = token.register();
        let rate = clock.tick_rate();
        loop {
            // Checked after registering: an `interrupt()` that ran before the registration is
            // seen here, one that runs after it unparks this thread.
            if token.is_interrupted() {
                return Err(Interrupted);
            }
            let now = clock.now();
            if now >= deadline {
                return Ok(());
            }
            thread::park_timeout(rate.duration_ceil(deadline - now));
        }
    }
}

impl<C: Clock + ?Sized> Wait<C> for ParkWait {
    fn wait_until(&mut self, clock: &C, deadline: u64) -> Result<(), Interrupted> {
        match &self.interrupt {
            Some(token) => Self::park_until(token, clock, deadline),
            None => Self::park_until(&Interrupt::current(), clock, deadline),
        }
    }
}
