//! The rules a keyed limiter applies to one key at a time, and one key's state.
//!
//! Every keyed store (the fixed table in this crate, the growable map of the std adapter, a
//! store of your own) keeps one instant per key, `tat`, and asks a [`KeyRate`] what a call does to
//! it. The GCRA itself lives in one place: the same functions the unkeyed limiter runs.

use core::fmt;
use core::time::Duration;

use super::rules::{Decision, TierRules, decide_with};
use crate::clock::{Clock, FixedRateClock, TickRate};
use crate::config::Config;
use crate::error::{InvalidPermits, RateLimitExceeded, Reason};
use crate::event::Listener;
use crate::gcra;
use crate::rate::Rate;
#[cfg(feature = "counters")]
use crate::sync::Tally;
#[cfg(feature = "reconfigure")]
use crate::{state::until_won, sync::Backoff};

/// A config converted into a clock's units once, plus the limiter's id, clock and listener: what
/// every key of a keyed limiter shares.
///
/// The operations take a key's state `tat` (an instant in the limiter's units; 0 for a key never
/// seen) and the reading `now` from [`now`](KeyRate::now), and say what to do; they touch no
/// state themselves. A key whose `tat <= now` ([`is_idle`](KeyRate::is_idle)) decides every call
/// exactly like a key never seen, which is what lets a keyed store drop it at any moment.
pub struct KeyRate<C> {
    id: &'static str,
    config: Config,
    pub(super) rate: Rate,
    listener: Option<&'static dyn Listener>,
    clock: C,
    /// The config in force after a [`reconfigure`](super::KeyedLimiter::reconfigure).
    #[cfg(feature = "reconfigure")]
    live: super::live::KeyLive,
    /// What its calls were answered (feature `counters`).
    #[cfg(feature = "counters")]
    counts: KeyCounts,
}

/// A keyed limiter's counts of calls (feature `counters`), for metrics read at scrape time: one
/// block on a cache line of its own on 64-bit targets, so that counting does not slow down the
/// compare-and-swap on a key's state of another core. Each count is a plain load and store (as
/// the single limiter's admitted count): exact while one core at a time counts, and may undercount
/// (never overcount) when two cores count at the same instant.
#[cfg(feature = "counters")]
#[derive(Debug)]
#[cfg_attr(target_pointer_width = "64", repr(align(128)))]
struct KeyCounts {
    admitted: Tally,
    waited: Tally,
    no_permit_in_time: Tally,
    key_capacity: Tally,
    unknown_tier: Tally,
}

#[cfg(feature = "counters")]
impl KeyCounts {
    const fn new() -> Self {
        KeyCounts {
            admitted: Tally::new(0),
            waited: Tally::new(0),
            no_permit_in_time: Tally::new(0),
            key_capacity: Tally::new(0),
            unknown_tier: Tally::new(0),
        }
    }
}

impl<C> fmt::Debug for KeyRate<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyRate")
            .field("id", &self.id)
            .field("config", &self.config())
            .field("has_listener", &self.listener.is_some())
            .finish_non_exhaustive()
    }
}

impl<C: FixedRateClock> KeyRate<C> {
    const_fn! {
    /// The rules for `config` on `clock`, in a `const` context if need be.
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::{const_config, ManualClock};
    /// use ritmo::keyed::KeyRate;
    /// static CLOCK: ManualClock = ManualClock::new();
    /// static RATE: KeyRate<&ManualClock> = KeyRate::new("peers", const_config!(4, Duration::from_secs(1)), &CLOCK);
    /// assert_eq!(RATE.id(), "peers");
    /// ```
    pub fn new(id: &'static str, config: Config, clock: C) -> Self {
        Self::build(id, config, clock, C::TICK_RATE)
    }
    }
}

/// The numbers of a keyed limiter's config at one moment, for a store that decides while it
/// holds a lock a [`reconfigure`](super::KeyedLimiter::reconfigure) in progress would need
/// (a new key's insertion): taken before the lock, checked under it with
/// [`KeyRate::still`]: what a [`KeyedStore`](super::KeyedStore) that inserts under a lock
/// decides a new key with.
#[derive(Debug, Clone, Copy)]
pub struct Settled {
    rate: Rate,
    #[cfg(feature = "reconfigure")]
    seq: u32,
}

impl<C> KeyRate<C> {
    /// The numbers in force, once no change is in progress.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::keyed::KeyRate;
    /// let rate = KeyRate::with_clock("api", Config::new(1, Duration::from_secs(1))?, ManualClock::new());
    /// let settled = rate.settled();
    /// assert!(rate.still(&settled)); // no change since
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn settled(&self) -> Settled {
        #[cfg(feature = "reconfigure")]
        return until_won(Backoff::new(), || {
            let seq = self.live.seq();
            let rate = self.current();
            if seq & 1 == 0 && self.live.seq() == seq {
                return Some(Settled { rate, seq });
            }
            None
        });
        #[cfg(not(feature = "reconfigure"))]
        Settled { rate: self.rate }
    }

    /// Whether `settled` is still in force: no change has started since.
    pub fn still(&self, settled: &Settled) -> bool {
        #[cfg(feature = "reconfigure")]
        {
            self.live.seq() == settled.seq
        }
        #[cfg(not(feature = "reconfigure"))]
        {
            let _ = settled;
            true
        }
    }

    /// [`decide`](Self::decide) with the numbers of `settled`.
    pub(crate) fn decide_settled(
        &self,
        settled: &Settled,
        tat: u64,
        now: u64,
        k: u32,
        max_wait: u64,
    ) -> Decision {
        decide_with(&settled.rate, tat, now, k, max_wait)
    }

    /// Applies `config` to every key from `now` (in units), with the single limiter's rule:
    /// `convert_all` gets the conversion of one key's state and applies it to every key the
    /// store holds. The store serialises changes, and converts under its own locks: what a
    /// [`KeyedStore`](super::KeyedStore)'s `reconfigure` runs.
    #[cfg(feature = "reconfigure")]
    #[cfg_attr(docsrs, doc(cfg(feature = "reconfigure")))]
    pub fn change(&self, config: Config, now: u64, convert_all: impl FnOnce(&dyn Fn(u64) -> u64)) {
        let new = self.in_units(&config);
        self.live
            .change(&self.rate, self.config, config, new, now, convert_all);
    }

    /// Runs `body`, which converts keys and publishes numbers of the store's own (a tier's), as
    /// one change of the numbers in force: readers wait it out. `body` gets the generation at
    /// the change's end.
    #[cfg(feature = "reconfigure")]
    pub(crate) fn changing(&self, body: impl FnOnce(u32)) {
        self.live.changing(&self.rate, body);
    }

    /// `read` of numbers a change may be writing, once none is; at once if none ever was.
    #[inline(always)]
    pub(crate) fn consistent<R>(&self, read: impl FnMut() -> R) -> R {
        #[cfg(feature = "reconfigure")]
        if self.live.seq() != 0 {
            return self.live.consistent(read);
        }
        let mut read = read;
        read()
    }

    /// `config` in this limiter's units.
    #[cfg(feature = "reconfigure")]
    pub(crate) fn in_units(&self, config: &Config) -> Rate {
        Rate::new(
            config,
            TickRate::from_hz(self.rate.unit_hz >> self.rate.shift),
        )
    }
}

impl<C: Clock> KeyRate<C> {
    /// The rules for `config` on a clock whose tick rate is known only at run time.
    pub fn with_clock(id: &'static str, config: Config, clock: C) -> Self {
        let tick = clock.tick_rate();
        Self::build(id, config, clock, tick)
    }
}

impl<C> KeyRate<C> {
    const_fn! {
    fn build(id: &'static str, config: Config, clock: C, tick: TickRate) -> Self {
        KeyRate {
            id,
            config,
            rate: Rate::new(&config, tick),
            listener: None,
            clock,
            #[cfg(feature = "reconfigure")]
            live: super::live::KeyLive::new(config),
            #[cfg(feature = "counters")]
            counts: KeyCounts::new(),
        }
    }
    }

    /// Counts a call granted by a keyed store: admitted at once (`wait` 0) or reserved for a
    /// later slot (feature `counters`; nothing otherwise). For keyed stores of your own; ritmo's
    /// call it on every call they grant.
    #[inline(always)]
    pub fn count_granted(&self, wait: u64) {
        #[cfg(feature = "counters")]
        if wait == 0 {
            self.counts.admitted.add(1);
        } else {
            self.counts.waited.add(1);
        }
        #[cfg(not(feature = "counters"))]
        let _ = wait;
    }

    /// Counts a call a keyed store refused for `reason` (feature `counters`; nothing
    /// otherwise). Counted reasons: [`Reason::NoPermitInTime`] and [`Reason::KeyCapacity`].
    #[inline(always)]
    pub fn count_rejected(&self, reason: Reason) {
        #[cfg(feature = "counters")]
        match reason {
            Reason::KeyCapacity => self.counts.key_capacity.add(1),
            Reason::UnknownTier => self.counts.unknown_tier.add(1),
            _ => self.counts.no_permit_in_time.add(1),
        }
        #[cfg(not(feature = "counters"))]
        let _ = reason;
    }

    /// Calls admitted at once since it was built, every key together (feature `counters`).
    /// A statistic: see [`count_granted`](Self::count_granted) for how it is kept.
    #[cfg(feature = "counters")]
    #[cfg_attr(docsrs, doc(cfg(feature = "counters")))]
    pub fn admitted_count(&self) -> u64 {
        self.counts.admitted.load_relaxed()
    }

    /// Calls that reserved a later slot for their key, to wait for it (feature `counters`).
    #[cfg(feature = "counters")]
    #[cfg_attr(docsrs, doc(cfg(feature = "counters")))]
    pub fn waited_count(&self) -> u64 {
        self.counts.waited.load_relaxed()
    }

    /// Calls refused for `reason` (feature `counters`): [`Reason::NoPermitInTime`] (the key's
    /// permits would come too late), [`Reason::KeyCapacity`] (no room for a new key) and
    /// [`Reason::UnknownTier`] (a tiered limiter's function named no tier); 0 for every other
    /// reason, which a keyed store never refuses a call for.
    #[cfg(feature = "counters")]
    #[cfg_attr(docsrs, doc(cfg(feature = "counters")))]
    pub fn rejected_count(&self, reason: Reason) -> u64 {
        match reason {
            Reason::NoPermitInTime => self.counts.no_permit_in_time.load_relaxed(),
            Reason::KeyCapacity => self.counts.key_capacity.load_relaxed(),
            Reason::UnknownTier => self.counts.unknown_tier.load_relaxed(),
            _ => 0,
        }
    }

    /// The same rules, with `listener` to report to (see [`listener`](Self::listener)).
    #[must_use]
    pub const fn with_listener(mut self, listener: &'static dyn Listener) -> Self {
        self.set_listener(listener);
        self
    }

    pub(crate) const fn set_listener(&mut self, listener: &'static dyn Listener) {
        self.listener = Some(listener);
    }

    /// The limiter's id.
    pub const fn id(&self) -> &'static str {
        self.id
    }

    /// The config every key gets.
    pub fn config(&self) -> Config {
        #[cfg(feature = "reconfigure")]
        {
            self.live.config(self.config)
        }
        #[cfg(not(feature = "reconfigure"))]
        {
            self.config
        }
    }

    /// The numbers it was built with, if no `reconfigure` ever changed them: what a store's hot
    /// path may decide with once, outside any compare-and-swap loop. `None` after a change: decide
    /// with [`decide`](Self::decide), which reads the numbers in force at each try.
    #[inline(always)]
    pub fn unchanged_rules(&self) -> Option<TierRules> {
        #[cfg(feature = "reconfigure")]
        if self.live.seq() != 0 {
            return None;
        }
        Some(TierRules(self.rate))
    }

    /// The numbers of the config in force, for a store that decides with them (as a tier's).
    #[inline(always)]
    pub(crate) fn rules(&self) -> TierRules {
        TierRules(self.current())
    }

    /// How many changes of config or tiers have started, twice (0: never): what a reservation
    /// notes, to give nothing back after a change of its numbers.
    #[inline(always)]
    pub(crate) fn generation(&self) -> u32 {
        #[cfg(feature = "reconfigure")]
        {
            self.live.seq()
        }
        #[cfg(not(feature = "reconfigure"))]
        {
            0
        }
    }

    /// The generation at the end of the last change of the config (0: none): a reservation
    /// noted before it gives nothing back.
    #[inline(always)]
    pub(crate) fn changed_at(&self) -> u32 {
        #[cfg(feature = "reconfigure")]
        {
            self.live.changed_at()
        }
        #[cfg(not(feature = "reconfigure"))]
        {
            0
        }
    }

    /// The numbers of the config in force, in units.
    #[inline(always)]
    pub(crate) fn current(&self) -> Rate {
        #[cfg(feature = "reconfigure")]
        {
            self.live.rate(&self.rate)
        }
        #[cfg(not(feature = "reconfigure"))]
        {
            self.rate
        }
    }

    /// The clock it reads.
    pub const fn clock(&self) -> &C {
        &self.clock
    }

    /// The listener rejections and released reservations are reported to. It hears the limiter's
    /// id, never the key: keys are often personal data (an IP address, a user name).
    pub const fn listener(&self) -> Option<&'static dyn Listener> {
        self.listener
    }

    /// Whether the config is enabled (a disabled one lets every call through and keeps no keys).
    pub fn enabled(&self) -> bool {
        self.current().enabled()
    }

    /// `Err` for `k = 0` or `k > permits`: no key's state can ever grant that.
    pub fn check_permits(&self, k: u32) -> Result<(), InvalidPermits> {
        TierRules(self.current()).check_permits(self.id, k)
    }

    /// The config's `max_wait`, in units (rounded down).
    pub fn max_wait(&self) -> u64 {
        self.current().max_wait
    }

    /// A duration in units, rounded down (a `max_wait` of a call's own).
    pub const fn units(&self, d: Duration) -> u64 {
        self.rate.units_floor(d)
    }

    /// A wait of `units` from a clock reading as a duration: rounded up to the whole clock tick at
    /// which it has passed, then to the nanosecond (the one rounding rule every wait follows).
    pub const fn duration(&self, units: u64) -> Duration {
        self.rate.wait_duration(units)
    }

    /// An instant in units as a reading of the clock, rounded up to a whole tick (what a
    /// [`Wait`](crate::Wait) waits for).
    pub const fn reading(&self, units: u64) -> u64 {
        self.rate.reading_ceil(units)
    }

    /// `k * T`, the amount a call of `k` permits adds to its key's state.
    pub fn increment(&self, k: u32) -> u64 {
        self.current().increment(k)
    }

    /// Whether a key whose state is `tat` is idle at `now`: its burst is full again, so it decides
    /// every call exactly like a key never seen, and may be dropped without changing anything.
    pub const fn is_idle(&self, tat: u64, now: u64) -> bool {
        tat <= now
    }

    /// What a call for `k` permits (already checked with [`check_permits`](Self::check_permits))
    /// that may wait up to `max_wait` units does to a key whose state is `tat`, at `now`. On a
    /// disabled config every call passes and the state stays as it is.
    #[inline]
    pub fn decide(&self, tat: u64, now: u64, k: u32, max_wait: u64) -> Decision {
        decide_with(&self.current(), tat, now, k, max_wait)
    }

    /// Calls of one permit a key whose state is `tat` would pass at `now`, in `0..=permits`.
    pub fn available(&self, tat: u64, now: u64) -> u32 {
        TierRules(self.current()).available(tat, now)
    }

    /// Units until `k` permits (already checked) would pass at once for a key whose state is
    /// `tat`: 0 if they are there now.
    pub fn wait(&self, tat: u64, now: u64, k: u32) -> u64 {
        TierRules(self.current()).wait(tat, now, k)
    }

    /// The state after a reservation that wrote `written` and added `increment` is given back, or
    /// `None` if its permits cannot go back (a later call changed the key since: its slot is left
    /// unused, so that two calls never share one).
    pub const fn refund(&self, tat: u64, written: u64, increment: u64) -> Option<u64> {
        gcra::refund(tat, written, increment)
    }

    /// The error for a call refused for `reason`, `wait` units before it could pass. It is not
    /// published: the keyed store reports it once its own lock is released.
    pub const fn rejected(&self, reason: Reason, wait: u64) -> RateLimitExceeded {
        RateLimitExceeded::new(self.id, reason, wait, self.rate.unit_hz, self.rate.shift)
    }
}

impl<C: Clock> KeyRate<C> {
    /// The clock's reading, in the units every state and wait is expressed in.
    #[inline]
    pub fn now(&self) -> u64 {
        let reading = self.clock.now();
        // Clocks of 1 GHz and more need no shift: one predictable branch skips it.
        if self.rate.shift == 0 {
            reading
        } else {
            self.rate.units(reading)
        }
    }
}
