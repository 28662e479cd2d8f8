//! One GCRA state, its rules applied literally in `u128` units (SPEC §3, §14, §17).

use core::time::Duration;

use ritmo_core::Config;

use crate::outcome::Outcome;
use crate::units::Units;

/// A config's numbers in the model's units: `n` permits, emission interval `T` (rounded up),
/// burst tolerance `tau = (n - 1) * T`, window `W = n * T`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    /// Permits per period.
    pub n: u128,
    /// The emission interval `T`, in units.
    pub t: u128,
}

impl Rate {
    /// The rate `config` gives on a clock of `units`.
    pub fn new(units: &Units, config: &Config) -> Rate {
        Rate {
            n: u128::from(config.permits()),
            t: units.interval(config.permits(), config.period()),
        }
    }

    /// `tau = (n - 1) * T`.
    pub fn tau(&self) -> u128 {
        (self.n - 1) * self.t
    }

    /// `W = n * T`: how far `tat` may run ahead of `now` with nothing available.
    pub fn window(&self) -> u128 {
        self.n * self.t
    }
}

/// A reservation the model granted: what the tail rule needs to give it back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ticket {
    /// Permits it took.
    pub k: u32,
    /// The state before it, as of the call (`max(tat, now)`): what a refund puts back; `None`
    /// if taken while disabled.
    pub before: Option<u128>,
    /// `tat` it wrote.
    pub written: u128,
    /// The rate it was charged at.
    pub rate: Rate,
    /// How many changes of config had taken effect when it was made.
    pub epoch: u32,
    /// Its slot, as a clock reading.
    pub slot: u64,
    /// The instant its permits are there, in units (its slot before rounding to the tick).
    pub at: u128,
}

impl Ticket {
    /// Its permits, used when they are there (for [`crate::window_bound`]).
    pub fn used(&self) -> crate::Use {
        crate::Use {
            at: self.at,
            k: self.k,
        }
    }
}

/// What a cancel of a ticket must do, by the tail rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refund {
    /// The ticket is the newest: every permit goes back and the state is as before it.
    Returned,
    /// Something came after it: nothing goes back.
    Kept,
    /// It is still the newest, but a reconfigure that left its rate and state as they were came
    /// in between: SPEC leaves it to the implementation whether that ends its tail (either answer
    /// keeps the bound).
    Either,
}

/// The single limiter's rules (SPEC §3), with live reconfiguration (§14, §17).
///
/// Every decision takes the clock reading `now` in ticks. The state is `tat` in units
/// ([`Units`]); `tat <= now` is a full burst (the model keeps `tat` as the rules write it, so two
/// states that differ only below `now` decide alike).
///
/// ```
/// use core::time::Duration;
/// use ritmo_core::Config;
/// use ritmo_test_support::{Gcra, Outcome, Units};
///
/// // The issue's 1 Hz example: 1 per 600 ms, max_wait 1.5 s.
/// let config = Config::new(1, Duration::from_millis(600))?.with_max_wait(Duration::from_millis(1500));
/// let mut model = Gcra::new(Units::new(1), config);
/// assert_eq!(model.try_acquire(0, 1), Outcome::Admitted);
/// let (first, _) = model.reserve(0, 1);
/// assert_eq!(first, Outcome::Reserved { wait: Duration::from_secs(1), slot: 1 });
/// // The next permit is there at 1.2 s, at the tick of 2 s: a wait of 2 s > 1.5 s.
/// let (second, ticket) = model.reserve(0, 1);
/// assert_eq!(second, Outcome::Rejected { retry_after: Duration::from_secs(2) });
/// assert!(ticket.is_none());
/// # Ok::<(), ritmo_core::ConfigError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Gcra {
    units: Units,
    config: Config,
    rate: Rate,
    tat: u128,
    epoch: u32,
}

impl Gcra {
    /// A fresh limiter (a full burst) on a clock of `units`.
    pub fn new(units: Units, config: Config) -> Gcra {
        Gcra {
            units,
            config,
            rate: Rate::new(&units, &config),
            tat: 0,
            epoch: 0,
        }
    }

    /// The same state, counting `epoch` changes of config before it: a keyed model creates a
    /// key's state at the keyed limiter's count of changes, so that a ticket of a state it has
    /// since dropped never passes for one of the new state.
    pub fn with_epoch(mut self, epoch: u32) -> Gcra {
        self.epoch = epoch;
        self
    }

    /// The clock.
    pub fn units(&self) -> Units {
        self.units
    }

    /// The config in force.
    pub fn config(&self) -> Config {
        self.config
    }

    /// The rate in force.
    pub fn rate(&self) -> Rate {
        self.rate
    }

    /// `tat`, in units.
    pub fn tat(&self) -> u128 {
        self.tat
    }

    /// How many reconfigures changed the config.
    pub fn epoch(&self) -> u32 {
        self.epoch
    }

    /// Whether `k` permits can ever be asked for (`1..=n`); otherwise the call is an error.
    pub fn valid(&self, k: u32) -> bool {
        k >= 1 && u128::from(k) <= self.rate.n
    }

    /// The units from `now` until `k` permits are admitted at once: `None` if they are now.
    /// (`k` must be valid.)
    pub fn wait_units(&self, now: u64, k: u32) -> Option<u128> {
        let now = self.units.from_ticks(now);
        let last = self.tat.max(now) + (u128::from(k) - 1) * self.rate.t;
        (last > now + self.rate.tau()).then(|| last - self.rate.tau() - now)
    }

    /// The whole ticks from `now` until `k` permits are there, 0 if they are now (the first tick
    /// at or after the last permit's slot). (`k` must be valid.)
    pub fn wait_ticks(&self, now: u64, k: u32) -> u128 {
        match self.wait_units(now, k) {
            None => 0,
            Some(w) => self.units.ticks_ceil(self.units.from_ticks(now) + w) - u128::from(now),
        }
    }

    /// `retry_after` for `k` permits at `now`: the wait to the tick they are there, rounded up to
    /// the nanosecond; zero if they are there now, and zero for every `k` while disabled.
    pub fn retry_after(&self, now: u64, k: u32) -> Duration {
        if !self.config.enabled() {
            return Duration::ZERO;
        }
        self.units.duration(self.wait_ticks(now, k))
    }

    /// Permits a call could take at `now` without waiting: `0..=n` (`n` while disabled).
    pub fn available(&self, now: u64) -> u32 {
        if !self.config.enabled() {
            return self.config.permits();
        }
        (1..=self.config.permits())
            .take_while(|&k| self.wait_units(now, k).is_none())
            .count() as u32
    }

    /// Charges `k` permits as a call at instant `at` (units) and returns the ticket fields.
    /// `before` is the state as of the call: `max(tat, at)` (a `tat` in the past is a full
    /// burst, the same as `now`), which is also `tat - k * T` after the charge, so the refund is
    /// SPEC §3's "CAS it back by the `k * T` it added".
    fn charge(&mut self, at: u128, k: u32, slot: u64) -> Ticket {
        let before = self.tat.max(at);
        self.tat = self.tat.max(at) + u128::from(k) * self.rate.t;
        Ticket {
            k,
            before: Some(before),
            written: self.tat,
            rate: self.rate,
            epoch: self.epoch,
            slot,
            at,
        }
    }

    /// `try_acquire_n(k)` at `now`: admitted at once, or rejected without changing anything.
    pub fn try_acquire(&mut self, now: u64, k: u32) -> Outcome {
        if !self.valid(k) {
            return Outcome::Invalid;
        }
        if !self.config.enabled() {
            return Outcome::Admitted;
        }
        match self.wait_units(now, k) {
            None => {
                self.charge(self.units.from_ticks(now), k, now);
                Outcome::Admitted
            }
            Some(_) => Outcome::Rejected {
                retry_after: self.retry_after(now, k),
            },
        }
    }

    /// `reserve_n(k)` at `now` with the config's `max_wait`.
    pub fn reserve(&mut self, now: u64, k: u32) -> (Outcome, Option<Ticket>) {
        let max_wait = self.config.max_wait();
        self.reserve_within(now, k, max_wait)
    }

    /// `reserve_n_within(k, max_wait)` at `now`: SPEC §17, a reservation whose slot, rounded up to
    /// the clock's whole tick, lies beyond `max_wait` is refused at once.
    pub fn reserve_within(
        &mut self,
        now: u64,
        k: u32,
        max_wait: Duration,
    ) -> (Outcome, Option<Ticket>) {
        if !self.valid(k) {
            return (Outcome::Invalid, None);
        }
        if !self.config.enabled() {
            let ticket = Ticket {
                k,
                before: None,
                written: self.tat,
                rate: self.rate,
                epoch: self.epoch,
                slot: now,
                at: self.units.from_ticks(now),
            };
            return (
                Outcome::Reserved {
                    wait: Duration::ZERO,
                    slot: now,
                },
                Some(ticket),
            );
        }
        let ticks = self.wait_ticks(now, k);
        if !self.units.within(ticks, max_wait) {
            return (
                Outcome::Rejected {
                    retry_after: self.units.duration(ticks),
                },
                None,
            );
        }
        let at = self.units.from_ticks(now) + self.wait_units(now, k).unwrap_or(0);
        let slot = u64::try_from(u128::from(now) + ticks).unwrap_or(u64::MAX);
        let ticket = self.charge(at, k, slot);
        let outcome = Outcome::Reserved {
            wait: self.units.duration(ticks),
            slot,
        };
        (outcome, Some(ticket))
    }

    /// What cancelling (dropping, interrupting) `ticket` must do now (the tail rule).
    pub fn refund(&self, ticket: &Ticket) -> Refund {
        if ticket.before.is_none() {
            // Taken while disabled: nothing was charged, there is nothing to give back. A cancel
            // may say either.
            return Refund::Either;
        }
        if self.tat != ticket.written || self.rate != ticket.rate {
            return Refund::Kept;
        }
        if self.epoch != ticket.epoch {
            return Refund::Either;
        }
        Refund::Returned
    }

    /// Cancels `ticket`; `returned` is what the limiter's `cancel()` answered. Checks the answer
    /// against the tail rule and applies it. `Err` says how they differ.
    pub fn cancel(&mut self, ticket: &Ticket, returned: bool) -> Result<(), String> {
        match (self.refund(ticket), returned) {
            (Refund::Returned, true) | (Refund::Either, true) => {
                if let Some(before) = ticket.before {
                    self.tat = before;
                }
                Ok(())
            }
            (Refund::Kept, false) | (Refund::Either, false) => Ok(()),
            (rule, said) => Err(format!(
                "cancel of {ticket:?} answered {said}, the tail rule says {rule:?} (tat {})",
                self.tat
            )),
        }
    }

    /// Drops (or interrupts) `ticket`: as a cancel whose answer nobody sees. Where the rule leaves
    /// a choice ([`Refund::Either`]) the model cannot know which the limiter made; it returns
    /// `false` then, so the caller can stop comparing this state (it never happens in a schedule
    /// without reconfigures).
    pub fn drop_ticket(&mut self, ticket: &Ticket) -> bool {
        match self.refund(ticket) {
            Refund::Returned => {
                self.tat = ticket.before.unwrap_or(self.tat);
                true
            }
            Refund::Kept => true,
            Refund::Either => ticket.before.is_none(),
        }
    }

    /// `reconfigure(new)` at `now` (SPEC §14, §17). Returns the permits the limiter keeps at the
    /// change (available at that instant under the new config: `n'` for an idle or disabled
    /// limiter, else `min(available, n')`), or `None` if the config is the same (then nothing
    /// changes).
    ///
    /// - The same config: nothing changes at all.
    /// - Permits available become `min(available, new permits)` exactly.
    /// - Permits owed stay owed: with reservations queued beyond the burst (`tat > now + W`), the
    ///   last reserved slot `tat - W` stays, and the next call queues `T'` after it
    ///   (`tat' = tat - W + W'`).
    /// - Otherwise the progress towards the next permit carries over, at most `T'` (the next
    ///   permit is never later than it would have been, nor sooner than the new spacing allows).
    ///   With the same rate (only `max_wait` changed) that leaves `tat` as it was.
    /// - **Idle is new** (SPEC §14): a limiter whose burst is full under the config in force
    ///   (`tat <= now`) carries nothing a new one lacks, so it starts afresh under the new config
    ///   with the new config's full burst `n'`; `min(available, n')` is for limiters that are not
    ///   idle. A disabled limiter admitted everything and counted nothing: enabling it (or any
    ///   change of a disabled one) starts it afresh the same way.
    pub fn reconfigure(&mut self, now: u64, new: Config) -> Option<u32> {
        if new == self.config {
            return None;
        }
        let avail = self.available(now);
        self.tat = carried_over(&self.units, &self.config, self.tat, avail, now, &new);
        self.rate = Rate::new(&self.units, &new);
        self.config = new;
        self.epoch += 1;
        Some(self.available(now))
    }
}

/// The state `tat` of a limiter applying `old`, with `avail` permits available at `now`, after a
/// change to `new` at `now` (the rule of [`Gcra::reconfigure`]; also each band's of
/// [`BandsModel::reconfigure`](crate::BandsModel::reconfigure)).
pub(crate) fn carried_over(
    units: &Units,
    old: &Config,
    tat: u128,
    avail: u32,
    now: u64,
    new: &Config,
) -> u128 {
    let rate = Rate::new(units, new);
    let old_rate = Rate::new(units, old);
    let now_u = units.from_ticks(now);
    let kept = u128::from(avail).min(rate.n);
    if !old.enabled() || tat <= now_u {
        // Idle is new: a fresh state, a full burst under `new`.
        tat.min(now_u)
    } else if kept == rate.n {
        tat.min(now_u)
    } else if tat > now_u + old_rate.window() {
        tat - old_rate.window() + rate.window()
    } else {
        let start = tat.max(now_u);
        // Units until the permit after the `avail` ones arrives, in (0, T].
        let next = start + (u128::from(avail) + 1) * old_rate.t - old_rate.window() - now_u;
        now_u + rate.window() + next.min(rate.t) - (kept + 1) * rate.t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(n: u32, ms: u64) -> Config {
        Config::new(n, Duration::from_millis(ms)).unwrap()
    }

    #[test]
    fn a_burst_then_the_steady_rate() {
        let mut m = Gcra::new(Units::NANOS, cfg(10, 1000));
        for _ in 0..10 {
            assert_eq!(m.try_acquire(0, 1), Outcome::Admitted);
        }
        assert_eq!(
            m.try_acquire(0, 1),
            Outcome::Rejected {
                retry_after: Duration::from_millis(100)
            }
        );
        assert_eq!(m.available(100_000_000), 1);
        assert_eq!(m.try_acquire(0, 11), Outcome::Invalid);
        assert_eq!(m.try_acquire(0, 0), Outcome::Invalid);
    }

    #[test]
    fn the_tail_rule() {
        let mut m = Gcra::new(
            Units::NANOS,
            cfg(1, 1000).with_max_wait(Duration::from_secs(5)),
        );
        assert_eq!(m.try_acquire(0, 1), Outcome::Admitted);
        let (_, a) = m.reserve(0, 1);
        let (_, b) = m.reserve(0, 1);
        let (a, b) = (a.unwrap(), b.unwrap());
        assert_eq!(m.refund(&a), Refund::Kept);
        assert!(
            m.cancel(&a, true).is_err(),
            "a refund that is not the newest"
        );
        m.cancel(&b, true).unwrap();
        assert_eq!(m.refund(&a), Refund::Returned);
        m.cancel(&a, true).unwrap();
        assert_eq!(m.retry_after(0, 1), Duration::from_secs(1));
    }

    /// `RateLimiter::reconfigure`'s documented example: 10 per s, spend 4 (6 left); 5 per s:
    /// min(6, 5); spend 1; 100 per s: still 4, then one every 10 ms.
    #[test]
    fn reconfigure_keeps_min_of_available_and_new_permits() {
        let mut m = Gcra::new(Units::NANOS, cfg(10, 1000));
        assert_eq!(m.try_acquire(0, 4), Outcome::Admitted);
        assert_eq!(m.reconfigure(0, cfg(5, 1000)), Some(5));
        assert_eq!(m.available(0), 5);
        assert_eq!(m.try_acquire(0, 1), Outcome::Admitted);
        assert_eq!(m.reconfigure(0, cfg(100, 1000)), Some(4));
        assert_eq!(m.available(0), 4);
        assert_eq!(m.available(10_000_000), 5);
        assert_eq!(m.reconfigure(0, cfg(100, 1000)), None, "the same config");
    }

    /// SPEC §14, idle is new: an idle limiter, and a disabled one, start afresh under the new
    /// config; one still limited keeps `min(available, n')`.
    #[test]
    fn reconfigure_starts_an_idle_or_disabled_limiter_afresh() {
        let mut m = Gcra::new(Units::NANOS, cfg(2, 250));
        assert_eq!(m.try_acquire(0, 1), Outcome::Admitted);
        assert_eq!(
            m.reconfigure(0, cfg(4, 250)),
            Some(1),
            "still limited: min(1, 4)"
        );
        assert_eq!(m.reconfigure(250_000_000, cfg(8, 250)), Some(8), "idle");
        assert_eq!(m.try_acquire(250_000_000, 8), Outcome::Admitted);
        assert_eq!(
            m.reconfigure(250_000_000, cfg(8, 250).with_enabled(false)),
            Some(8)
        );
        assert_eq!(
            m.reconfigure(250_000_000, cfg(16, 250)),
            Some(16),
            "enabled"
        );
        assert_eq!(m.available(250_000_000), 16);
    }

    /// Issue 20: changing only `max_wait` leaves the state as it was, owed permits included.
    #[test]
    fn reconfigure_of_max_wait_alone_changes_no_state() {
        let c = cfg(2, 1000).with_max_wait(Duration::from_secs(5));
        let mut m = Gcra::new(Units::NANOS, c);
        assert_eq!(m.try_acquire(0, 2), Outcome::Admitted);
        let (_, owed) = m.reserve(0, 1);
        let tat = m.tat();
        for s in [6, 7, 8] {
            m.reconfigure(0, c.with_max_wait(Duration::from_secs(s)));
            assert_eq!(m.tat(), tat);
        }
        assert_eq!(m.refund(&owed.unwrap()), Refund::Either);
    }

    #[test]
    fn on_a_coarse_clock_waits_are_whole_ticks() {
        let c = cfg(3, 1000).with_max_wait(Duration::from_secs(1));
        let mut m = Gcra::new(Units::new(32_768), c);
        assert_eq!(m.try_acquire(0, 3), Outcome::Admitted);
        let (r, _) = m.reserve(0, 1);
        assert_eq!(
            r,
            Outcome::Reserved {
                wait: Duration::from_nanos(333_343_506),
                slot: 10_923
            }
        );
    }
}
