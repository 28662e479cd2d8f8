//! [`RateLimiter`]: a clock, a config converted to the clock's ticks, and one word of state.
//!
//! One idea per file: this one holds the limiter and its constructors; `acquire.rs` the calls
//! that take permits (one way to refuse, every fast path through [`State`]); `peek.rs` the calls
//! that only look; `reservation.rs` the [`Reservation`] a waiting call holds; `crate::rate` the
//! conversion of a [`Config`] into the limiter's time unit.

use core::fmt;

use crate::clock::{Clock, FixedRateClock, TickRate};
use crate::config::Config;
use crate::event::Listener;
use crate::state::State;
#[cfg(feature = "reconfigure")]
use crate::sync::Flag;
use crate::sync::U64Cell;

mod acquire;
#[cfg(not(feature = "reconfigure"))]
mod fixed;
mod generated;
#[cfg(feature = "reconfigure")]
mod live;
mod peek;
mod reservation;

pub(crate) use crate::rate::Rate;
pub use reservation::{LimiterCharge, Reservation};

/// What a limiter reports about itself: its id, the permits that would pass right now, and its
/// permits per period.
///
/// ```
/// use core::time::Duration;
/// use ritmo::{Config, ManualClock, RateLimiter, Snapshot};
/// let limiter = RateLimiter::new("api", Config::new(10, Duration::from_secs(1))?, ManualClock::new());
/// limiter.try_acquire_n(3).unwrap();
/// let snapshot: Snapshot = limiter.snapshot();
/// assert_eq!(
///     (snapshot.id, snapshot.available_permits, snapshot.permits),
///     ("api", 7, 10)
/// );
/// # Ok::<(), ritmo::ConfigError>(())
/// ```
///
/// With the `serde` feature it is `Serialize` (a metrics endpoint, a status page) and
/// `Deserialize` from data that lives as long as the program (the id is a `&'static str`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct Snapshot {
    /// The limiter's id.
    pub id: &'static str,
    /// Calls of one permit that would pass right now without waiting.
    pub available_permits: u32,
    /// Permits per period.
    pub permits: u32,
}

/// A GCRA rate limiter: at most `permits` calls per `period`, evenly spaced, with a burst of up to
/// `permits` after a quiet moment.
///
/// All state is one `u64` (`tat`, the instant the next permit arrives), changed by one
/// compare-and-swap. An admitted call costs one clock read and one CAS, a rejected one a clock read
/// and a load; neither allocates. Build it in a `const` context on a clock with a constant tick
/// rate ([`RateLimiter::new`]), or at run time on any clock ([`RateLimiter::with_clock`]).
///
/// ```
/// use core::time::Duration;
/// use ritmo::{Config, ManualClock, RateLimiter};
///
/// let clock = ManualClock::new();
/// let search = RateLimiter::new("search", Config::new(10, Duration::from_secs(1))?, &clock);
/// for _ in 0..10 {
///     search.try_acquire().unwrap(); // a full burst of 10 passes at once
/// }
/// assert!(search.try_acquire().is_err()); // the 11th is rejected
/// clock.advance(Duration::from_millis(100)); // one permit every 100 ms
/// assert!(search.try_acquire().is_ok());
/// assert!(search.try_acquire().is_err());
/// # Ok::<(), ritmo::ConfigError>(())
/// ```
pub struct RateLimiter<C> {
    state: State,
    rate: Rate,
    id: &'static str,
    listener: Option<&'static dyn Listener>,
    clock: C,
    /// Enabled and without a listener, and never reconfigured: a refusal only returns its error.
    /// (Without the feature `reconfigure` the flag never changes after construction and lives in
    /// `Rate`'s padding instead: a limiter on a 32-bit microcontroller then fits 64 bytes.)
    #[cfg(feature = "reconfigure")]
    plain_reject: Flag,
    /// The state and config after a [`reconfigure`](Self::reconfigure); unused before.
    #[cfg(feature = "reconfigure")]
    live: live::Live,
    /// Calls admitted at once, for metrics.
    #[cfg(feature = "counters")]
    admitted: crate::state::Counter,
}

impl<C> fmt::Debug for RateLimiter<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimiter")
            .field("id", &self.id)
            .field("config", &self.config())
            .field("reconfigured", &self.reconfigured())
            .field("tat", &self.state.tat())
            .field("has_listener", &self.listener.is_some())
            .finish_non_exhaustive()
    }
}

impl<C> RateLimiter<C> {
    /// Runs `f` on the numbers a call decides with, the state under them and the generation they
    /// belong to, read together: the ones the limiter was built with and its own state word
    /// (`seq` 0), or (feature `reconfigure`) those of the last reconfigure and the word of their
    /// generation. Every verb reads them the same way; only where they come from differs. `f`
    /// is written out once for each, so that a limiter never reconfigured reads its fields in
    /// place.
    #[inline(always)]
    pub(super) fn with_numbers<R>(&self, f: impl FnOnce(&Rate, u64, u32) -> R) -> R {
        #[cfg(feature = "reconfigure")]
        if self.reconfigured() {
            return self.with_live_numbers(f);
        }
        f(&self.rate, self.state.tat(), 0)
    }

    /// [`with_numbers`](Self::with_numbers) on a reconfigured limiter, out of line: `f`'s copy
    /// for the numbers a reconfigure set costs a limiter never reconfigured nothing.
    #[cfg(feature = "reconfigure")]
    #[cold]
    #[inline(never)]
    fn with_live_numbers<R>(&self, f: impl FnOnce(&Rate, u64, u32) -> R) -> R {
        let (rate, tat, seq) = self.live.read(&self.rate);
        f(&rate, tat, seq)
    }

    /// The word that holds the state under the numbers of generation `seq`.
    #[inline(always)]
    pub(super) fn word(&self, seq: u32) -> &U64Cell {
        #[cfg(feature = "reconfigure")]
        if seq != 0 {
            return self.live.tat(seq);
        }
        let _ = seq;
        self.state.word()
    }

    /// Whether the numbers of generation `seq` are still in force (no reconfigure since).
    #[inline(always)]
    pub(super) fn still(&self, seq: u32) -> bool {
        #[cfg(feature = "reconfigure")]
        return self.live.still(seq);
        #[cfg(not(feature = "reconfigure"))]
        {
            let _ = seq;
            true
        }
    }
}

/// # Constructors
impl<C: FixedRateClock> RateLimiter<C> {
    const_fn! {
    /// A limiter named `id` on `clock`, in a `const` context if need be: a `static` limiter on a
    /// microcontroller.
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::{const_config, ManualClock, RateLimiter};
    ///
    /// static CLOCK: ManualClock = ManualClock::new();
    /// static RADIO: RateLimiter<&ManualClock> =
    ///     RateLimiter::new("radio", const_config!(36, Duration::from_secs(3600)), &CLOCK);
    /// assert_eq!(RADIO.available_permits(), 36);
    /// ```
    pub fn new(id: &'static str, config: Config, clock: C) -> Self {
        Self::build(id, config, clock, C::TICK_RATE)
    }
    }
}

impl<C: Clock> RateLimiter<C> {
    /// A limiter named `id` on a clock whose tick rate is known only at run time (a TSC clock
    /// calibrated at start-up, say).
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::{Clock, Config, RateLimiter, TickRate};
    ///
    /// struct Calibrated { hz: u64 }
    /// impl Clock for Calibrated {
    ///     fn now(&self) -> u64 { 0 }
    ///     fn tick_rate(&self) -> TickRate { TickRate::from_hz(self.hz) }
    /// }
    /// let limiter = RateLimiter::with_clock("api", Config::new(2, Duration::from_secs(1))?, Calibrated { hz: 2_900_000_000 });
    /// assert_eq!(limiter.available_permits(), 2);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn with_clock(id: &'static str, config: Config, clock: C) -> Self {
        let tick = clock.tick_rate();
        Self::build(id, config, clock, tick)
    }

    /// The state and the numbers it is counted in, for save and restore (`persist.rs`); `None`
    /// once reconfigured (the state then lives elsewhere, in other numbers).
    pub(crate) fn persisted(&self) -> Option<(&State, &Rate)> {
        #[cfg(feature = "reconfigure")]
        if self.reconfigured() {
            return None;
        }
        Some((&self.state, &self.rate))
    }

    /// Whether this limiter applies `config`: built with it on this clock, it would be this
    /// limiter (a registry's check that two users of one id agree).
    pub(crate) fn applies(&self, config: &Config) -> bool {
        #[cfg_attr(feature = "reconfigure", allow(unused_mut))]
        let mut rate = Rate::new(config, self.clock.tick_rate());
        #[cfg(not(feature = "reconfigure"))]
        {
            rate.plain_reject = self.rate.plain_reject; // the listener is not part of the config
        }
        rate == self.rate
    }
}

impl<C> RateLimiter<C> {
    const_fn! {
    fn build(id: &'static str, config: Config, clock: C, tick: TickRate) -> Self {
        RateLimiter {
            state: State::new(),
            rate: Rate::new(&config, tick),
            id,
            listener: None,
            clock,
            #[cfg(feature = "reconfigure")]
            plain_reject: Flag::new(config.enabled()),
            #[cfg(feature = "reconfigure")]
            live: live::Live::new(config),
            #[cfg(feature = "counters")]
            admitted: crate::state::Counter::new(),
        }
    }
    }

    /// The same limiter, reporting rejections and released reservations to `listener`.
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::{const_config, Event, Listener, ManualClock, RateLimiter};
    /// struct Log;
    /// impl Listener for Log {
    ///     fn on_event(&self, _event: &Event) {}
    /// }
    /// static CLOCK: ManualClock = ManualClock::new();
    /// static API: RateLimiter<&ManualClock> =
    ///     RateLimiter::new("api", const_config!(5, Duration::from_secs(1)), &CLOCK).with_listener(&Log);
    /// # assert!(API.try_acquire().is_ok());
    /// ```
    #[must_use]
    pub const fn with_listener(mut self, listener: &'static dyn Listener) -> Self {
        self.listener = Some(listener);
        #[cfg(feature = "reconfigure")]
        {
            self.plain_reject = Flag::new(false);
        }
        #[cfg(not(feature = "reconfigure"))]
        {
            self.rate.plain_reject = false;
        }
        self
    }

    /// The limiter's id.
    ///
    /// ```
    /// # use ritmo::{Config, ManualClock, RateLimiter};
    /// # use core::time::Duration;
    /// let l = RateLimiter::new("geocoding", Config::new(5, Duration::from_secs(1)).unwrap(), ManualClock::new());
    /// assert_eq!(l.id(), "geocoding");
    /// ```
    pub const fn id(&self) -> &'static str {
        self.id
    }

    /// The clock it reads.
    ///
    /// ```
    /// # use ritmo::{Clock, Config, ManualClock, RateLimiter};
    /// # use core::time::Duration;
    /// let l = RateLimiter::new("x", Config::new(5, Duration::from_secs(1)).unwrap(), ManualClock::starting_at(9));
    /// assert_eq!(l.clock().now(), 9);
    /// ```
    pub const fn clock(&self) -> &C {
        &self.clock
    }
}
