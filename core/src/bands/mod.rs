//! [`Bands`]: several limits on one stream of calls ("10 per second and 1000 per hour"), decided
//! together: a call passes only if every band has room for it, and then every band is charged.
//!
//! # How a call is decided
//!
//! One clock reading `now`. For each band the GCRA rules give the instant its permits for the call
//! arrive (`now` if they are there already). The call's slot is the latest of these: the wait is
//! the longest band's. If that wait is within `max_wait`, every band is charged *as of that slot*
//! (`tat := max(tat, slot) + k*T`, which each band admits at that instant by construction), one
//! compare-and-swap per band, in band order. A band whose state changed in the meantime is decided
//! again with the value found; if it no longer has room at the slot (another call took it), the
//! bands already charged are given back by the tail rule (a band's charge goes back only if no
//! later call charged that band after it) and the whole call is decided again from fresh readings.
//!
//! Why this keeps every band within its own bound, whatever the interleaving: every charge that
//! stays is a GCRA-conforming charge of that band at the instant the call runs, and the GCRA bound
//! (at most `n + floor(w / T)` calls in any window of length `w`) holds for any set of conforming
//! charges, in whatever order they land. A charge given back by the tail rule is as if it never
//! happened; one that cannot be given back stays, so it can only make the band stricter.
//!
//! What concurrency can cost is the other way round: a call may be refused that a sequential run
//! would have admitted (a band briefly charged by a call that then gives it back, or a charge that
//! could not be given back because someone queued behind it). Sequentially that never happens:
//! a lone caller decides on values nobody changes, so every charge goes through.
//!
//! A rejected call only loads each band's state; it changes nothing.

use core::fmt;
use core::time::Duration;

use crate::clock::{Clock, FixedRateClock, TickRate};
use crate::config::Config;
use crate::event::Listener;
use crate::rate::Rate;
use crate::state::State;
use crate::sync::Latch;

mod acquire;
mod charge;
#[cfg(feature = "reconfigure")]
mod live;
mod numbers;
mod peek;
mod reservation;

pub use reservation::{BandsCharge, BandsReservation};

/// Several rate limits applied together to one stream of calls: "10 per second *and* 1000 per
/// hour", or a per-second limit plus a daily quota.
///
/// A call is admitted only if every band admits it, and then every band is charged; a call
/// refused by one band takes nothing from the others, so a throttled caller never drains a shared
/// daily quota. A call that must wait waits for the slowest band. `B` bands live inline (no heap),
/// and a `Bands` can be a `static` ([`Bands::new`] is `const`).
///
/// Under concurrency no band ever admits more than its own bound; two racing calls may
/// occasionally see one refused that a sequential run would have admitted (the module docs of
/// `bands.rs` explain when).
///
/// A band whose config is disabled (`enabled = false`) is left out of every decision.
///
/// ```
/// use core::time::Duration;
/// use ritmo::{Bands, Config, ManualClock};
///
/// let clock = ManualClock::new();
/// let api = Bands::new(
///     "api",
///     [
///         Config::new(10, Duration::from_secs(1))?,   // 10 per second
///         Config::new(15, Duration::from_secs(3600))?, // and 15 per hour
///     ],
///     &clock,
/// );
/// for _ in 0..10 {
///     api.try_acquire().unwrap(); // the per-second burst
/// }
/// assert!(api.try_acquire().is_err()); // the second band is full
/// clock.advance(Duration::from_secs(1));
/// for _ in 0..5 {
///     api.try_acquire().unwrap();
/// }
/// // 15 in the hour: the per-second band has room again, the hourly one does not.
/// // Its next permit comes 4 minutes (one hour / 15) after the first call: 239 s from now.
/// let err = api.try_acquire().unwrap_err();
/// assert_eq!(err.retry_after(), Duration::from_secs(239));
/// # Ok::<(), ritmo::ConfigError>(())
/// ```
pub struct Bands<C, const B: usize> {
    states: [State; B],
    /// Makes a charge of every band, and a refund, one step (zero-sized on microcontrollers,
    /// where that step is a critical section).
    latch: Latch,
    /// The numbers it was built with; with the feature `reconfigure`, in force until the first
    /// [`reconfigure`](Bands::reconfigure) (see [`numbers`](Bands::numbers)). Their clock units
    /// (`unit_hz`, `shift`) never change.
    rates: [Rate; B],
    configs: [Config; B],
    id: &'static str,
    /// The longest a call may wait for its slot, in units.
    max_wait: u64,
    /// The most permits one call may take: the smallest `permits` of the bands.
    max_permits: u32,
    /// Whether [`with_max_wait`](Bands::with_max_wait) set `max_wait`: a reconfigure then keeps
    /// it, instead of taking the longest of the new configs'.
    #[cfg(feature = "reconfigure")]
    explicit_max_wait: bool,
    /// The numbers and states after a reconfigure (unused until then).
    #[cfg(feature = "reconfigure")]
    live: live::BandsLive<B>,
    listener: Option<&'static dyn Listener>,
    clock: C,
    /// Calls admitted at once, for metrics.
    #[cfg(feature = "counters")]
    admitted: crate::state::Counter,
}

impl<C, const B: usize> fmt::Debug for Bands<C, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let numbers = self.numbers();
        let tats = self.tats(&numbers).unwrap_or([u64::MAX; B]);
        f.debug_struct("Bands")
            .field("id", &self.id)
            .field("configs", &self.configs())
            .field("tats", &tats)
            .field("has_listener", &self.listener.is_some())
            .finish_non_exhaustive()
    }
}

impl<C: FixedRateClock, const B: usize> Bands<C, B> {
    const_fn! {
    /// Bands named `id` on `clock`, one per config, in a `const` context if need be.
    ///
    /// A call may wait as long as the longest `max_wait` among the configs
    /// ([`with_max_wait`](Self::with_max_wait) sets it explicitly). `B = 0` does not compile.
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::{const_config, Bands, ManualClock};
    ///
    /// static CLOCK: ManualClock = ManualClock::new();
    /// // A radio: 1 frame per second, and a 1% duty cycle of 36 frames per hour.
    /// static RADIO: Bands<&ManualClock, 2> = Bands::new(
    ///     "radio",
    ///     [const_config!(1, Duration::from_secs(1)), const_config!(36, Duration::from_secs(3600))],
    ///     &CLOCK,
    /// );
    /// assert!(RADIO.try_acquire().is_ok());
    /// assert!(RADIO.try_acquire().is_err());
    /// ```
    ///
    /// ```compile_fail
    /// use ritmo::{Bands, Config, ManualClock};
    /// let none: Bands<ManualClock, 0> = Bands::new("x", [], ManualClock::new());
    /// ```
    pub fn new(id: &'static str, configs: [Config; B], clock: C) -> Self {
        Self::build(id, configs, clock, C::TICK_RATE)
    }
    }
}

impl<C: Clock, const B: usize> Bands<C, B> {
    /// Bands on a clock whose tick rate is known only at run time.
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::{Bands, Config, ManualClock};
    /// let b = Bands::with_clock("x", [Config::new(2, Duration::from_secs(1))?; 2], ManualClock::new());
    /// assert_eq!(b.available_permits(), 2);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn with_clock(id: &'static str, configs: [Config; B], clock: C) -> Self {
        let tick = clock.tick_rate();
        Self::build(id, configs, clock, tick)
    }
}

/// Each band's config in the clock's units, the longest `max_wait` and the most permits one call
/// may take ([`max_permits`]).
const fn rates<const B: usize>(configs: &[Config; B], tick: TickRate) -> ([Rate; B], u64, u32) {
    const { assert!(B > 0, "Bands needs at least one band") };
    let mut rates = [Rate::new(&configs[0], tick); B];
    let mut max_wait = 0;
    let mut i = 0;
    while i < B {
        rates[i] = Rate::new(&configs[i], tick);
        if rates[i].max_wait > max_wait {
            max_wait = rates[i].max_wait;
        }
        i += 1;
    }
    (rates, max_wait, max_permits(&rates))
}

/// The most permits one call may take: the smallest `permits` of the enabled bands (a disabled
/// band is left out of every decision), or of all bands if none is enabled (as a disabled
/// limiter still refuses more than its `permits`).
const fn max_permits<const B: usize>(rates: &[Rate; B]) -> u32 {
    let (mut enabled, mut all) = (u32::MAX, u32::MAX);
    let mut i = 0;
    while i < B {
        let permits = rates[i].permits;
        if permits < all {
            all = permits;
        }
        if rates[i].enabled() && permits < enabled {
            enabled = permits;
        }
        i += 1;
    }
    if enabled == u32::MAX { all } else { enabled }
}

impl<C, const B: usize> Bands<C, B> {
    /// The states and the numbers they are counted in, for save and restore (`persist.rs`);
    /// `None` once reconfigured (the states then live elsewhere, in other numbers).
    pub(crate) fn persisted(&self) -> Option<(&[State; B], &[Rate; B])> {
        #[cfg(feature = "reconfigure")]
        if self.live.changed() {
            return None;
        }
        Some((&self.states, &self.rates))
    }

    const_fn! {
    fn build(id: &'static str, configs: [Config; B], clock: C, tick: TickRate) -> Self {
        let (rates, max_wait, max_permits) = rates(&configs, tick);
        Bands {
            states: State::array(),
            latch: Latch::new(),
            rates,
            configs,
            id,
            max_wait,
            max_permits,
            #[cfg(feature = "reconfigure")]
            explicit_max_wait: false,
            #[cfg(feature = "reconfigure")]
            live: live::BandsLive::new(configs),
            listener: None,
            clock,
            #[cfg(feature = "counters")]
            admitted: crate::state::Counter::new(),
        }
    }
    }

    /// The same bands, letting a call wait up to `max_wait` for its slot (instead of the longest
    /// `max_wait` of the configs).
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::{Bands, Config, ManualClock};
    /// let b = Bands::new("x", [Config::new(1, Duration::from_secs(1))?; 2], ManualClock::new())
    ///     .with_max_wait(Duration::from_secs(1));
    /// b.try_acquire().unwrap();
    /// assert_eq!(b.reserve().unwrap().wait_time(), Duration::from_secs(1));
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    #[must_use]
    pub const fn with_max_wait(mut self, max_wait: Duration) -> Self {
        self.max_wait = self.rates[0].units_floor(max_wait);
        #[cfg(feature = "reconfigure")]
        {
            self.explicit_max_wait = true;
        }
        self
    }

    /// The same bands, reporting rejections and released reservations to `listener`.
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::{Bands, Config, Event, Listener, ManualClock};
    /// struct Quiet;
    /// impl Listener for Quiet { fn on_event(&self, _: &Event) {} }
    /// static QUIET: Quiet = Quiet;
    /// let b = Bands::new("x", [Config::new(1, Duration::from_secs(1))?; 2], ManualClock::new())
    ///     .with_listener(&QUIET);
    /// # b.try_acquire().unwrap();
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    #[must_use]
    pub const fn with_listener(mut self, listener: &'static dyn Listener) -> Self {
        self.listener = Some(listener);
        self
    }

    /// Its id.
    pub const fn id(&self) -> &'static str {
        self.id
    }

    /// The bands' configs in force, in order: the ones it was built with, or the last ones given
    /// to `reconfigure` (feature `reconfigure`).
    pub fn configs(&self) -> [Config; B] {
        #[cfg(feature = "reconfigure")]
        if self.live.changed() {
            return self.live.configs();
        }
        self.configs
    }

    /// The clock it reads.
    pub const fn clock(&self) -> &C {
        &self.clock
    }

    /// The longest a call may wait for its slot.
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::{Bands, Config, ManualClock};
    /// let fast = Config::new(10, Duration::from_secs(1))?.with_max_wait(Duration::from_millis(300));
    /// let slow = Config::new(100, Duration::from_secs(60))?;
    /// let b = Bands::new("x", [fast, slow], ManualClock::new());
    /// assert_eq!(b.max_wait(), Duration::from_millis(300));
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn max_wait(&self) -> Duration {
        self.rates[0].wait_duration(self.numbers().max_wait)
    }

    /// How many calls it has admitted at once since it was built (calls that waited are
    /// reported to the listener as [`Event::Waiting`](crate::Event::Waiting)). Wraps at `u64::MAX`.
    #[cfg(feature = "counters")]
    #[cfg_attr(docsrs, doc(cfg(feature = "counters")))]
    pub fn admitted_count(&self) -> u64 {
        self.admitted.get()
    }
}
