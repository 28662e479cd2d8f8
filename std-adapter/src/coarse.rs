//! [`CoarseClock`]: a cached reading that one upkeep thread refreshes, so that a call reads one
//! atomic instead of the hardware counter.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use ritmo_core::{Clock, ErrorCode, FixedRateClock, TickRate};

use crate::clock::InstantClock;

/// A clock that reads a cached value: an upkeep thread takes a reading of an inner clock every
/// `resolution` and stores it, and [`now`](Clock::now) loads that one atomic.
///
/// For machines whose counter is slow to read: on many virtual machines a TSC read costs 25 to
/// 40 ns, which is then the whole cost of an admitted call on [`StdClock`](crate::StdClock);
/// on this clock a call costs one load more than on a fake clock.
///
/// # Late, never early
///
/// Every value `now()` returns is a reading the inner clock gave in the past (the largest one
/// taken so far), so the clock **lags real time by up to one resolution and never leads it**
/// (plus however late the operating system runs the upkeep thread: under heavy load, more). A
/// limiter on it sees time pass in steps, late:
///
/// - a permit is never handed out before its slot: every admission and every wake-up happens
///   at a real time at or after the reading it was decided on;
/// - a call that waits for its slot sleeps until the cached reading reaches it, so it wakes **at
///   most one resolution late** (the next refresh after the slot);
/// - the limiter's bound (`permits + floor(w / T)` in any window `w`, `T = period / permits`)
///   holds exactly in the clock's readings; measured in real time, a window `w` sees at most
///   `permits + floor((w + lag) / T)` admissions, where `lag` is the largest lag behind real
///   time: a call admitted on a stale reading can sit closer in real time to the next one than
///   `T`. That is at most `ceil(lag / T)` permits more in a short window (one, while the lag
///   stays under `T`), never more in the long run: over any long run the rate a caller sees
///   stays at or below the configured rate.
///
/// Choose the resolution well below the emission interval `T` of the limiters on it (the
/// default, [`DEFAULT_RESOLUTION`](Self::DEFAULT_RESOLUTION), suits rates up to thousands per
/// second); on a limiter whose `T` is below the resolution, permits arrive in bursts at each
/// refresh, never more of them.
///
/// # The upkeep thread
///
/// [`CoarseClock::new`] starts one thread (named `ritmo-coarse-clock`) that refreshes the
/// reading and then parks for `resolution`. Clones share the reading and the thread; when the
/// last clone is dropped the thread is woken, stops and is joined before the drop returns. Give
/// every limiter a clone of one clock ([`CoarseClock::global`] is one for the whole process)
/// rather than a new clock each: each new clock is one more thread waking every resolution.
///
/// # Ticks
///
/// The ticks are the inner clock's; the default inner clock is [`InstantClock`], nanoseconds
/// since a process-wide epoch, so a coarse clock needs no scaling on the hot path (a limiter on
/// a 1 GHz clock uses readings as they are), implements [`FixedRateClock`], and its readings
/// compare with those of every other `InstantClock` and default `CoarseClock`. The upkeep thread
/// pays for converting the counter to nanoseconds, once per resolution.
///
/// ```
/// use std::time::Duration;
/// use ritmo::{Config, RateLimiter};
/// use ritmo::server::CoarseClock;
///
/// let clock = CoarseClock::new(); // one upkeep thread, refreshing every DEFAULT_RESOLUTION
/// let api = RateLimiter::with_clock("api", Config::new(2, Duration::from_secs(1))?, clock.clone());
/// let search = RateLimiter::with_clock("search", Config::new(5, Duration::from_secs(1))?, clock);
/// assert!(api.try_acquire().is_ok() && api.try_acquire().is_ok());
/// assert!(api.try_acquire().is_err());
/// assert!(search.try_acquire().is_ok());
/// # Ok::<(), ritmo::ConfigError>(())
/// ```
///
/// Driven by hand, on a fake inner clock, the lag is plain to see:
///
/// ```
/// use ritmo::{Clock, ManualClock};
/// use ritmo::server::CoarseClock;
///
/// static INNER: ManualClock = ManualClock::new();
/// let coarse = CoarseClock::manual(&INNER); // refreshed only by `refresh()`
/// INNER.advance_ticks(1_000);
/// assert_eq!(coarse.now(), 0); // behind the inner clock, never ahead
/// assert_eq!(coarse.refresh(), 1_000);
/// assert_eq!(coarse.now(), 1_000);
/// ```
pub struct CoarseClock<C = InstantClock> {
    shared: Arc<Shared<C>>,
    /// The upkeep thread's owner: dropping the last one stops the thread. `None` for a clock
    /// refreshed by hand.
    upkeep: Option<Arc<Upkeep<C>>>,
}

struct Shared<C> {
    reading: AtomicU64,
    inner: C,
    resolution: Option<Duration>,
    stop: AtomicBool,
}

impl<C: Clock> Shared<C> {
    #[inline]
    fn refresh(&self) -> u64 {
        let reading = self.inner.now();
        // `fetch_max`: a refresh by hand racing the upkeep thread, or an inner clock that steps
        // back, never moves the reading backwards; what it holds is still a reading taken.
        let before = self.reading.fetch_max(reading, Ordering::Release);
        before.max(reading)
    }
}

struct Upkeep<C> {
    shared: Arc<Shared<C>>,
    thread: Option<JoinHandle<()>>,
}

impl<C> Drop for Upkeep<C> {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            // The thread only refreshes and parks: once woken it sees `stop` and returns. A panic
            // in the inner clock ended it already; there is nothing left to stop then.
            let _ = thread.join();
        }
    }
}

impl CoarseClock<InstantClock> {
    /// The upkeep thread's default refresh period: 500 µs.
    ///
    /// Chosen by measurement (`cargo bench --bench coarse_resolution`; the table is in the
    /// repository's `benches/RESULTS.md`): a parked thread wakes some 50 µs late on Linux, so the
    /// clock lags by about half a resolution plus that on average; each wake-up costs the upkeep
    /// thread a few microseconds of CPU. Measured twice on a loaded 2-core VM: at 500 µs it lags
    /// by about 0.3 ms on average and under 0.9 ms in 99 % of readings, waking about 1 600 times a
    /// second for about 1.2 % of one core; 250 µs took twice the wake-ups and CPU (2.6 to 3 %)
    /// without a matching cut in the lag, and 1 ms doubled the lag for about the same CPU.
    pub const DEFAULT_RESOLUTION: Duration = Duration::from_micros(500);

    /// A coarse clock on [`InstantClock`] (nanoseconds), refreshed every
    /// [`DEFAULT_RESOLUTION`](Self::DEFAULT_RESOLUTION).
    ///
    /// # Panics
    ///
    /// If the operating system cannot start a thread, as [`std::thread::spawn`] does; use
    /// [`with_upkeep`](CoarseClock::with_upkeep) to get that as an error.
    ///
    /// ```
    /// use ritmo::Clock;
    /// let clock = ritmo::server::CoarseClock::new();
    /// assert!(clock.now() <= ritmo::server::InstantClock.now());
    /// ```
    pub fn new() -> Self {
        match Self::with_upkeep(InstantClock, Self::DEFAULT_RESOLUTION) {
            Ok(clock) => clock,
            Err(err) => panic!("ritmo: cannot start the coarse clock's upkeep thread: {err}"),
        }
    }

    /// A coarse clock on [`InstantClock`] refreshed every `resolution`. A zero resolution is
    /// [`UpkeepError::ZeroResolution`] (code `RITMO-ATR-002`): the upkeep thread would never
    /// sleep.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ritmo::ErrorCode;
    /// use ritmo::server::CoarseClock;
    ///
    /// let clock = CoarseClock::with_resolution(Duration::from_micros(100))?;
    /// assert_eq!(clock.resolution(), Some(Duration::from_micros(100)));
    /// let err = CoarseClock::with_resolution(Duration::ZERO).unwrap_err();
    /// assert_eq!(err.code(), Some(ErrorCode::ZeroPeriod));
    /// assert_eq!(err.to_string(), "RITMO-ATR-002: the coarse clock's resolution is zero");
    /// # Ok::<(), ritmo::server::UpkeepError>(())
    /// ```
    pub fn with_resolution(resolution: Duration) -> Result<Self, UpkeepError> {
        Self::with_upkeep(InstantClock, resolution)
    }

    /// One coarse clock for the whole process, started on first use with the default
    /// resolution and never stopped (a `static` holds it): the simplest way to give every
    /// limiter of a program the same clock and one upkeep thread.
    ///
    /// # Panics
    ///
    /// On first use, if the operating system cannot start a thread.
    ///
    /// ```
    /// use ritmo::Clock;
    /// let a = ritmo::server::CoarseClock::global();
    /// let b = ritmo::server::CoarseClock::global();
    /// assert!(a.shares_reading_with(&b)); // one reading, one upkeep thread
    /// assert!(a.now() <= ritmo::server::InstantClock.now());
    /// ```
    pub fn global() -> Self {
        static GLOBAL: OnceLock<CoarseClock> = OnceLock::new();
        GLOBAL.get_or_init(CoarseClock::new).clone()
    }
}

impl Default for CoarseClock<InstantClock> {
    fn default() -> Self {
        Self::new()
    }
}

/// Why a [`CoarseClock`] with an upkeep thread could not be made.
#[derive(Debug)]
#[non_exhaustive]
pub enum UpkeepError {
    /// The resolution is zero (`RITMO-ATR-002`): the upkeep thread would never sleep.
    ZeroResolution,
    /// The operating system could not start the upkeep thread.
    Spawn(std::io::Error),
}

impl UpkeepError {
    /// The stable code of an invalid argument (`RITMO-ATR-002` for a zero resolution); `None`
    /// when the operating system refused the thread.
    ///
    /// ```
    /// # use ritmo::ErrorCode;
    /// assert_eq!(ritmo::server::UpkeepError::ZeroResolution.code(), Some(ErrorCode::ZeroPeriod));
    /// ```
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            UpkeepError::ZeroResolution => Some(ErrorCode::ZeroPeriod),
            UpkeepError::Spawn(_) => None,
        }
    }
}

impl fmt::Display for UpkeepError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UpkeepError::ZeroResolution => write!(
                f,
                "{}: the coarse clock's resolution is zero",
                ErrorCode::ZeroPeriod.as_str()
            ),
            UpkeepError::Spawn(err) => {
                write!(f, "cannot start the coarse clock's upkeep thread: {err}")
            }
        }
    }
}

impl std::error::Error for UpkeepError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            UpkeepError::ZeroResolution => None,
            UpkeepError::Spawn(err) => Some(err),
        }
    }
}

impl<C: Clock + Send + Sync + 'static> CoarseClock<C> {
    /// A coarse clock on `inner`, refreshed every `resolution` by a new upkeep thread. Its ticks
    /// are `inner`'s.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ritmo::Clock;
    /// use ritmo::server::{CoarseClock, StdClock};
    ///
    /// // Cached raw counter ticks instead of nanoseconds.
    /// let clock = CoarseClock::with_upkeep(StdClock::new(), Duration::from_micros(500))?;
    /// assert_eq!(clock.tick_rate(), clock.inner().tick_rate());
    /// # Ok::<(), ritmo::server::UpkeepError>(())
    /// ```
    pub fn with_upkeep(inner: C, resolution: Duration) -> Result<Self, UpkeepError> {
        if resolution.is_zero() {
            return Err(UpkeepError::ZeroResolution);
        }
        let shared = Arc::new(Shared {
            reading: AtomicU64::new(0),
            inner,
            resolution: Some(resolution),
            stop: AtomicBool::new(false),
        });
        // The first reading is taken here, so the clock is never behind by more than the time
        // since it was made.
        shared.refresh();
        let for_thread = Arc::clone(&shared);
        let thread = thread::Builder::new()
            .name("ritmo-coarse-clock".into())
            .spawn(move || upkeep(&for_thread, resolution))
            .map_err(UpkeepError::Spawn)?;
        let upkeep = Arc::new(Upkeep {
            shared: Arc::clone(&shared),
            thread: Some(thread),
        });
        Ok(CoarseClock {
            shared,
            upkeep: Some(upkeep),
        })
    }
}

/// The upkeep thread: refresh, park for `resolution`, until told to stop. `park_timeout` may
/// return early (a spurious wake-up): that only refreshes once more.
fn upkeep<C: Clock>(shared: &Shared<C>, resolution: Duration) {
    while !shared.stop.load(Ordering::Acquire) {
        shared.refresh();
        thread::park_timeout(resolution);
    }
}

impl<C: Clock> CoarseClock<C> {
    /// A coarse clock on `inner` with no upkeep thread: its reading moves only when
    /// [`refresh`](Self::refresh) is called. For a program with its own loop (refresh once per
    /// turn), and for tests that decide exactly when the reading moves.
    ///
    /// ```
    /// use ritmo::{Clock, ManualClock};
    /// use ritmo::server::CoarseClock;
    ///
    /// let coarse = CoarseClock::manual(ManualClock::new());
    /// coarse.inner().advance_ticks(5);
    /// assert_eq!((coarse.now(), coarse.refresh()), (0, 5));
    /// assert_eq!(coarse.resolution(), None);
    /// ```
    pub fn manual(inner: C) -> Self {
        let shared = Arc::new(Shared {
            reading: AtomicU64::new(0),
            inner,
            resolution: None,
            stop: AtomicBool::new(false),
        });
        shared.refresh();
        CoarseClock {
            shared,
            upkeep: None,
        }
    }

    /// Takes a reading of the inner clock now and stores it (what the upkeep thread does every
    /// resolution); returns the reading the clock holds afterwards. The reading never moves
    /// backwards, even if the inner clock does.
    ///
    /// ```
    /// use ritmo::Clock;
    /// let clock = ritmo::server::CoarseClock::new();
    /// let reading = clock.refresh();
    /// assert!(clock.now() >= reading);
    /// ```
    pub fn refresh(&self) -> u64 {
        self.shared.refresh()
    }

    /// The clock it caches readings of.
    ///
    /// ```
    /// use ritmo::Clock;
    /// let clock = ritmo::server::CoarseClock::new();
    /// assert!(clock.now() <= clock.inner().now()); // behind, never ahead
    /// ```
    pub fn inner(&self) -> &C {
        &self.shared.inner
    }

    /// How often the upkeep thread refreshes the reading; `None` for a clock refreshed by hand
    /// ([`manual`](Self::manual)).
    ///
    /// ```
    /// let clock = ritmo::server::CoarseClock::new();
    /// assert_eq!(clock.resolution(), Some(ritmo::server::CoarseClock::DEFAULT_RESOLUTION));
    /// ```
    pub fn resolution(&self) -> Option<Duration> {
        self.shared.resolution
    }

    /// Whether `other` is a clone of this clock (one reading, one upkeep thread).
    ///
    /// ```
    /// let a = ritmo::server::CoarseClock::new();
    /// assert!(a.shares_reading_with(&a.clone()));
    /// assert!(!a.shares_reading_with(&ritmo::server::CoarseClock::new()));
    /// ```
    pub fn shares_reading_with(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }
}

impl<C> Clone for CoarseClock<C> {
    fn clone(&self) -> Self {
        CoarseClock {
            shared: Arc::clone(&self.shared),
            upkeep: self.upkeep.clone(),
        }
    }
}

impl<C> fmt::Debug for CoarseClock<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CoarseClock")
            .field("reading", &self.shared.reading.load(Ordering::Relaxed))
            .field("resolution", &self.shared.resolution)
            .finish_non_exhaustive()
    }
}

impl<C: Clock> Clock for CoarseClock<C> {
    /// The cached reading: one atomic load.
    #[inline(always)]
    fn now(&self) -> u64 {
        // Relaxed: the reading is a number, nothing else is published through it, and the
        // limiter's own state is what orders its calls.
        self.shared.reading.load(Ordering::Relaxed)
    }

    #[inline]
    fn tick_rate(&self) -> TickRate {
        self.shared.inner.tick_rate()
    }
}

impl<C: FixedRateClock> FixedRateClock for CoarseClock<C> {
    const TICK_RATE: TickRate = C::TICK_RATE;
}

#[cfg(test)]
mod tests {
    use super::*;
    use ritmo_core::ManualClock;
    use std::sync::Weak;
    use std::time::Instant;

    fn weak(clock: &CoarseClock<InstantClock>) -> Weak<Shared<InstantClock>> {
        Arc::downgrade(&clock.shared)
    }

    #[test]
    fn the_upkeep_thread_stops_when_the_last_clone_drops() {
        let clock = CoarseClock::with_resolution(Duration::from_millis(50)).unwrap();
        let shared = weak(&clock);
        let clone = clock.clone();
        drop(clock);
        // A clone still holds it: the thread and its reading live on.
        assert!(shared.upgrade().is_some());
        drop(clone);
        // The drop woke and joined the thread, which held the last other reference.
        assert!(
            shared.upgrade().is_none(),
            "the upkeep thread outlived the last clock"
        );
    }

    #[test]
    fn a_clone_keeps_the_reading_moving() {
        let clock = CoarseClock::with_resolution(Duration::from_micros(200)).unwrap();
        let clone = clock.clone();
        drop(clock);
        let start = clone.now();
        let deadline = Instant::now() + Duration::from_secs(10);
        while clone.now() == start {
            assert!(Instant::now() < deadline, "the reading never moved");
            thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn a_manual_clock_has_no_thread_and_moves_only_on_refresh() {
        let coarse = CoarseClock::manual(ManualClock::new());
        assert!(coarse.upkeep.is_none());
        coarse.inner().advance_ticks(7);
        assert_eq!(coarse.now(), 0);
        assert_eq!(coarse.refresh(), 7);
        assert_eq!(coarse.now(), 7);
    }

    #[test]
    fn a_zero_resolution_is_an_error_not_a_thread() {
        let err = CoarseClock::with_upkeep(InstantClock, Duration::ZERO).unwrap_err();
        assert!(matches!(err, UpkeepError::ZeroResolution), "{err:?}");
        assert_eq!(err.code(), Some(ErrorCode::ZeroPeriod));
        assert!(err.to_string().starts_with("RITMO-ATR-002"));
        assert!(CoarseClock::with_resolution(Duration::ZERO).is_err());
    }

    #[test]
    fn the_tick_rate_is_the_inner_clocks() {
        let clock = CoarseClock::new();
        assert_eq!(clock.tick_rate(), TickRate::NANOS);
        assert_eq!(<CoarseClock as FixedRateClock>::TICK_RATE, TickRate::NANOS);
        let manual = CoarseClock::manual(ManualClock::<32_768>::with_reading(0));
        assert_eq!(manual.tick_rate(), TickRate::from_hz(32_768));
    }
}
