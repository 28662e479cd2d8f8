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

use crate::clock::{Clock, FixedRateClock, ManualTime, TickRate};
use crate::config::Config;
use crate::error::{AcquireError, InvalidPermits, RateLimitExceeded, Reason};
use crate::event::{Event, Listener};
use crate::gcra;
use crate::rate::Rate;
use crate::state::{State, until_won};
use crate::sync::{Backoff, Latch};
use crate::wait::{AdvanceClock, Wait};

#[cfg(feature = "reconfigure")]
mod live;
mod reservation;

use crate::reservation::Held;

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
    /// reported to the listener as [`Event::Waiting`]). Wraps at `u64::MAX`.
    #[cfg(feature = "counters")]
    #[cfg_attr(docsrs, doc(cfg(feature = "counters")))]
    pub fn admitted_count(&self) -> u64 {
        self.admitted.get()
    }

    /// The numbers in force and the sequence number they belong to (0 until a reconfigure).
    #[inline]
    fn numbers(&self) -> Numbers<B> {
        #[cfg(feature = "reconfigure")]
        if self.live.changed() {
            return self.live.read(&self.rates);
        }
        Numbers {
            rates: self.rates,
            max_wait: self.max_wait,
            max_permits: self.max_permits,
            seq: 0,
        }
    }

    /// The words that hold the states in the generation of sequence number `seq`: a reconfigure
    /// moves the states from one set to the other.
    #[inline]
    fn states(&self, seq: u32) -> &[State; B] {
        #[cfg(feature = "reconfigure")]
        if (seq >> 1) & 1 == 1 {
            return self.live.states();
        }
        let _ = seq;
        &self.states
    }

    /// Every band's state under `numbers`, or `None` if a reconfigure began in the meantime
    /// (the states read may then be half moved: decide again).
    #[inline]
    fn tats(&self, numbers: &Numbers<B>) -> Option<[u64; B]> {
        let mut tats = [0u64; B];
        for (tat, state) in tats.iter_mut().zip(self.states(numbers.seq)) {
            *tat = state.tat();
        }
        #[cfg(feature = "reconfigure")]
        if !self.live.still(numbers.seq) {
            return None;
        }
        Some(tats)
    }

    /// Stores `tats` as the state of every enabled band of `numbers` (under the latch, once the
    /// call has decided for every band).
    #[inline]
    fn store(&self, numbers: &Numbers<B>, tats: &[u64; B]) {
        let states = self.states(numbers.seq);
        for (i, rate) in numbers.rates.iter().enumerate() {
            if rate.enabled() {
                states[i].set(tats[i]);
            }
        }
    }

    fn check_permits(&self, k: u32, numbers: &Numbers<B>) -> Result<(), InvalidPermits> {
        if k == 0 || k > numbers.max_permits {
            Err(InvalidPermits::new(self.id, k, numbers.max_permits))
        } else {
            Ok(())
        }
    }

    fn rejected(&self, wait: u64) -> RateLimitExceeded {
        let error = RateLimitExceeded::new(
            self.id,
            Reason::NoPermitInTime,
            wait,
            self.rates[0].unit_hz,
            self.rates[0].shift,
        );
        if let Some(listener) = self.listener {
            listener.on_event(&Event::Rejected(error));
        }
        error
    }
}

/// The bands' numbers at one moment: the ones built in, or those of the last reconfigure.
#[derive(Clone, Copy)]
struct Numbers<const B: usize> {
    rates: [Rate; B],
    max_wait: u64,
    max_permits: u32,
    /// The sequence number they belong to (0: never reconfigured): which states they apply to.
    seq: u32,
}

impl<const B: usize> Numbers<B> {
    fn increments(&self, k: u32) -> [u64; B] {
        let mut increments = [0u64; B];
        for (inc, rate) in increments.iter_mut().zip(&self.rates) {
            *inc = rate.increment(k);
        }
        increments
    }

    /// The call's slot given the bands' states `tats`: `Ok(slot)`, or `Err(wait)` if some band
    /// can never admit it (`u64::MAX`).
    fn slot(&self, tats: &[u64; B], now: u64, increments: &[u64; B]) -> Result<u64, u64> {
        let mut slot = now;
        for (i, rate) in self.rates.iter().enumerate() {
            if !rate.enabled() {
                continue;
            }
            match gcra::check(tats[i], now, increments[i], rate.window()) {
                Ok(_) => {}
                Err(u64::MAX) => return Err(u64::MAX),
                Err(wait) => slot = slot.max(now.saturating_add(wait)),
            }
        }
        Ok(slot)
    }
}

/// The outcome of one attempt to charge every band.
enum Charge<const B: usize> {
    /// Every band charged: what each band's state became, the call's slot and wait.
    Done {
        written: [u64; B],
        /// How far each band's state moved (`written - previous`): a refund by the tail rule
        /// steps it back by exactly this, to the state it had before the call, also
        /// in a band that was idle then, so that the reservation before it is the newest again.
        moved: [u64; B],
        slot: u64,
        wait: u64,
        /// The sequence number of the numbers it was decided with.
        seq: u32,
    },
    /// Refused: the wait (units) until the slowest band's permits arrive.
    Refused(u64),
    /// `k` is 0 or above the smallest band's `permits` (given).
    Invalid(u32),
}

impl<C: Clock, const B: usize> Bands<C, B> {
    fn now_units(&self) -> u64 {
        self.rates[0].units(self.clock.now())
    }

    /// Charges every enabled band for `k` permits if their permits arrive within `max_wait`
    /// units (`None`: the bands' own).
    fn charge(&self, k: u32, max_wait: Option<u64>) -> Charge<B> {
        // The clock read before the latch (on a microcontroller a critical section, and a
        // hardware clock may count its wraps in an interrupt), as the keyed table does.
        let now = self.now_units();
        self.latch.hold(|| self.charge_bands(now, k, max_wait))
    }

    /// [`charge`](Self::charge) at `now`, under the latch: no other charge, refund or reconfigure
    /// writes a band's word until it returns, so the call decides from one reading of the bands
    /// and then stores every band's new state.
    fn charge_bands(&self, now: u64, k: u32, max_wait: Option<u64>) -> Charge<B> {
        let (numbers, tats) = self.settled();
        if k == 0 || k > numbers.max_permits {
            return Charge::Invalid(numbers.max_permits);
        }
        let increments = numbers.increments(k);
        let slot = match numbers.slot(&tats, now, &increments) {
            Ok(slot) => slot,
            Err(wait) => return Charge::Refused(wait),
        };
        let wait = slot - now;
        if wait > max_wait.unwrap_or(numbers.max_wait) {
            return Charge::Refused(wait);
        }
        let mut written = [0u64; B];
        let mut moved = [0u64; B];
        for (i, rate) in numbers.rates.iter().enumerate() {
            if !rate.enabled() {
                continue;
            }
            // Charged as of the slot, when the call runs (every band admits it there: the slot
            // is the latest band's). The state moves from the one it had (maybe long before the
            // slot, or before `now` in an idle band) to past the slot, not just by `k*T`; a
            // refund steps back by exactly this, to that very state.
            match gcra::check(tats[i], slot, increments[i], rate.window()) {
                Ok(new_tat) => {
                    written[i] = new_tat;
                    moved[i] = new_tat - tats[i];
                }
                Err(wait) => return Charge::Refused(wait),
            }
        }
        self.store(&numbers, &written);
        Charge::Done {
            written,
            moved,
            slot,
            wait,
            seq: numbers.seq,
        }
    }

    /// Takes one permit from every band if all have it now; never waits.
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::{Bands, Config, ManualClock};
    /// let b = Bands::new("x", [Config::new(2, Duration::from_secs(1))?, Config::new(3, Duration::from_secs(60))?], ManualClock::new());
    /// assert!(b.try_acquire().is_ok());
    /// assert!(b.try_acquire().is_ok());
    /// assert!(b.try_acquire().is_err());
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn try_acquire(&self) -> Result<(), RateLimitExceeded> {
        match self.try_acquire_n(1) {
            Ok(()) => Ok(()),
            Err(AcquireError::RateLimited(e)) => Err(e),
            Err(AcquireError::InvalidPermits(_)) => unreachable!("1 permit is always valid"),
        }
    }

    /// Takes `k` permits from every band as one unit if all have them now; never waits. `k = 0`
    /// and `k` above the smallest band's `permits` are [`AcquireError::InvalidPermits`].
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::{AcquireError, Bands, Config, ManualClock};
    /// let b = Bands::new("x", [Config::new(8, Duration::from_secs(1))?, Config::new(4, Duration::from_secs(60))?], ManualClock::new());
    /// assert!(matches!(b.try_acquire_n(5), Err(AcquireError::InvalidPermits(_))));
    /// assert!(b.try_acquire_n(4).is_ok());
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn try_acquire_n(&self, k: u32) -> Result<(), AcquireError> {
        match self.charge(k, Some(0)) {
            Charge::Done { .. } => {
                #[cfg(feature = "counters")]
                self.admitted.increment();
                Ok(())
            }
            Charge::Refused(wait) => Err(self.rejected(wait).into()),
            Charge::Invalid(max) => Err(InvalidPermits::new(self.id, k, max).into()),
        }
    }

    /// Takes one permit from every band now, or reserves the slot at which the slowest band has it
    /// if that is within `max_wait`; otherwise rejects at once and changes nothing.
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::{Bands, Config, ManualClock};
    /// let per_second = Config::new(2, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(10));
    /// let per_minute = Config::new(3, Duration::from_secs(60))?;
    /// let b = Bands::new("x", [per_second, per_minute], ManualClock::new());
    /// b.try_acquire_n(2).unwrap();
    /// let first = b.reserve().unwrap();
    /// assert_eq!(first.wait_time(), Duration::from_millis(500));
    /// first.commit();
    /// // The per-minute band is spent now: its next permit is 20 s away, beyond max_wait.
    /// assert_eq!(b.reserve().unwrap_err().retry_after(), Duration::from_secs(20));
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn reserve(&self) -> Result<BandsReservation<'_, C, B>, RateLimitExceeded> {
        match self.reserve_units(1, None) {
            Ok(r) => Ok(r),
            Err(AcquireError::RateLimited(e)) => Err(e),
            Err(AcquireError::InvalidPermits(_)) => unreachable!("1 permit is always valid"),
        }
    }

    /// Like [`reserve`](Self::reserve), for `k` permits taken as one unit.
    pub fn reserve_n(&self, k: u32) -> Result<BandsReservation<'_, C, B>, AcquireError> {
        self.reserve_units(k, None)
    }

    /// Like [`reserve_n`](Self::reserve_n), with this call's own `max_wait`.
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::{Bands, Config, ManualClock};
    /// let b = Bands::new("x", [Config::new(1, Duration::from_secs(1))?; 2], ManualClock::new());
    /// b.try_acquire().unwrap();
    /// assert!(b.reserve_n_within(1, Duration::from_millis(999)).is_err());
    /// assert!(b.reserve_n_within(1, Duration::from_secs(1)).is_ok());
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn reserve_n_within(
        &self,
        k: u32,
        max_wait: Duration,
    ) -> Result<BandsReservation<'_, C, B>, AcquireError> {
        self.reserve_units(k, Some(self.rates[0].units_floor(max_wait)))
    }

    fn reserve_units(
        &self,
        k: u32,
        max_wait: Option<u64>,
    ) -> Result<BandsReservation<'_, C, B>, AcquireError> {
        match self.charge(k, max_wait) {
            Charge::Done {
                written,
                moved,
                slot,
                wait,
                seq,
            } => {
                if wait == 0 {
                    #[cfg(feature = "counters")]
                    self.admitted.increment();
                } else if let Some(listener) = self.listener.filter(|l| l.wants_waiting()) {
                    listener.on_event(&Event::Waiting {
                        id: self.id,
                        permits: k,
                        wait: self.rates[0].wait_duration(wait),
                    });
                }
                let charge = BandsCharge {
                    written,
                    moved,
                    seq,
                };
                Ok(Held::new(self, charge, slot, wait, k))
            }
            Charge::Refused(wait) => Err(self.rejected(wait).into()),
            Charge::Invalid(max) => Err(InvalidPermits::new(self.id, k, max).into()),
        }
    }

    /// Takes one permit from every band, waiting with `waiter` for the slowest band's slot if it
    /// is within `max_wait`. If the waiter is interrupted, each band's charge goes back by the
    /// tail rule and the call fails with [`Reason::Interrupted`].
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::{AdvanceClock, Bands, Clock, Config, ManualClock};
    /// let clock = ManualClock::new();
    /// let b = Bands::new("x", [Config::new(1, Duration::from_secs(1))?, Config::new(2, Duration::from_secs(10))?], &clock)
    ///     .with_max_wait(Duration::from_secs(10));
    /// for _ in 0..3 {
    ///     b.acquire_with(&mut AdvanceClock).unwrap();
    /// }
    /// // 1 at 0 s, 1 at 1 s (per second), then the 10 s band's next permit: 5 s after the first.
    /// assert_eq!(clock.now(), 5_000_000_000);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn acquire_with<W: Wait<C> + ?Sized>(
        &self,
        waiter: &mut W,
    ) -> Result<(), RateLimitExceeded> {
        self.reserve()?.wait_with(waiter)
    }

    /// Takes `k` permits from every band, waiting with `waiter` as
    /// [`acquire_with`](Self::acquire_with).
    pub fn acquire_n_with<W: Wait<C> + ?Sized>(
        &self,
        k: u32,
        waiter: &mut W,
    ) -> Result<(), AcquireError> {
        Ok(self.reserve_n(k)?.wait_with(waiter)?)
    }

    /// Calls of one permit that would pass right now without waiting: the smallest of the bands'.
    /// Takes nothing.
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::{Bands, Config, ManualClock};
    /// let b = Bands::new("x", [Config::new(10, Duration::from_secs(1))?, Config::new(4, Duration::from_secs(60))?], ManualClock::new());
    /// assert_eq!(b.available_permits(), 4);
    /// b.try_acquire().unwrap();
    /// assert_eq!(b.available_permits_per_band(), [9, 3]);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn available_permits(&self) -> u32 {
        let (numbers, per_band) = self.available(self.now_units());
        // A disabled band is left out; with none enabled, the smallest `permits`.
        let enabled = per_band.iter().zip(&numbers.rates);
        match enabled
            .filter(|(_, rate)| rate.enabled())
            .map(|(a, _)| *a)
            .min()
        {
            Some(available) => available,
            None => per_band.into_iter().min().unwrap_or(0),
        }
    }

    /// Each band's available permits, in band order (a disabled band reports its `permits`).
    pub fn available_permits_per_band(&self) -> [u32; B] {
        self.available(self.now_units()).1
    }

    /// The numbers in force and each band's available permits under them at `now`.
    fn available(&self, now: u64) -> (Numbers<B>, [u32; B]) {
        let (numbers, tats) = self.settled();
        let mut out = [0u32; B];
        for (i, (slot, rate)) in out.iter_mut().zip(&numbers.rates).enumerate() {
            *slot = if rate.enabled() {
                gcra::available(tats[i], now, rate.interval, rate.window(), rate.permits)
            } else {
                rate.permits
            };
        }
        (numbers, out)
    }

    /// The numbers in force and every band's state under them, read consistently.
    fn settled(&self) -> (Numbers<B>, [u64; B]) {
        // A reconfigure in the meantime: wait it out.
        until_won(Backoff::new(), || {
            let numbers = self.numbers();
            self.tats(&numbers).map(|tats| (numbers, tats))
        })
    }

    /// How long until one permit would pass in every band: zero if it would now. Takes nothing.
    pub fn retry_after(&self) -> Duration {
        self.retry_after_n(1).unwrap_or(Duration::ZERO)
    }

    /// How long until `k` permits would pass in every band at once: the longest band's wait.
    /// Takes nothing.
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::{Bands, Config, ManualClock};
    /// let b = Bands::new("x", [Config::new(10, Duration::from_secs(1))?, Config::new(10, Duration::from_secs(60))?], ManualClock::new());
    /// b.try_acquire_n(10).unwrap();
    /// assert_eq!(b.retry_after_n(2)?, Duration::from_secs(12)); // the per-minute band's wait
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn retry_after_n(&self, k: u32) -> Result<Duration, InvalidPermits> {
        let now = self.now_units();
        let (numbers, tats) = self.settled();
        self.check_permits(k, &numbers)?;
        let wait = match numbers.slot(&tats, now, &numbers.increments(k)) {
            Ok(slot) => slot - now,
            Err(wait) => wait,
        };
        Ok(self.rates[0].wait_duration(wait))
    }
}

impl<C: ManualTime, const B: usize> Bands<C, B> {
    /// Takes one permit from every band, waiting for the slot by advancing the fake clock to it:
    /// tests never sleep.
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::{Bands, Clock, Config, ManualClock};
    /// let clock = ManualClock::new();
    /// let b = Bands::new("x", [Config::new(1, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1)); 2], &clock);
    /// b.acquire_advancing().unwrap();
    /// b.acquire_advancing().unwrap();
    /// assert_eq!(clock.now(), 1_000_000_000);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn acquire_advancing(&self) -> Result<(), RateLimitExceeded> {
        self.acquire_with(&mut AdvanceClock)
    }

    /// Takes `k` permits from every band, advancing the fake clock to their slot if they must
    /// wait.
    pub fn acquire_n_advancing(&self, k: u32) -> Result<(), AcquireError> {
        self.acquire_n_with(k, &mut AdvanceClock)
    }
}
