//! [`KeyState`]: one key's state in a keyed store, and the compare-and-swap loops that move it
//! (with the backoff every loop of ritmo uses, `sync::Backoff`).

use crate::gcra::{self, Refused};
use crate::rate::Rate;
use crate::state::{take_contended, update};
use crate::sync::{Backoff, U64Cell};

use super::rate::{KeyRate, Settled};
use super::rules::{Decision, TierRules};

/// One key's state, for a keyed store that shares it between threads: the instant its next
/// permit arrives, in one atomic word (a short critical section on targets without 64-bit
/// atomics). 8 bytes.
///
/// ```
/// use core::time::Duration;
/// use ritmo::{Config, ManualClock};
/// use ritmo::keyed::{Decision, KeyRate, KeyState};
/// let rate = KeyRate::with_clock("api", Config::new(1, Duration::from_secs(1))?, ManualClock::new());
/// let state = KeyState::new();
/// assert!(matches!(state.apply(&rate, 0, 1, 0), Decision::Now { .. }));
/// assert!(matches!(state.apply(&rate, 0, 1, 0), Decision::Reject { .. }));
/// # Ok::<(), ritmo::ConfigError>(())
/// ```
#[derive(Debug)]
pub struct KeyState(U64Cell);

impl Default for KeyState {
    fn default() -> Self {
        Self::new()
    }
}

impl KeyState {
    /// The state of a key never seen: its full burst.
    #[cfg(not(all(test, loom)))]
    pub const fn new() -> Self {
        KeyState(U64Cell::new(0))
    }

    /// The state of a key never seen: its full burst.
    #[cfg(all(test, loom))]
    pub fn new() -> Self {
        KeyState(U64Cell::new(0))
    }

    /// The instant (in its limiter's units) at which the key's next permit arrives; the key is
    /// idle from then on.
    #[inline]
    pub fn tat(&self) -> u64 {
        self.0.load()
    }

    /// Decides a call with [`KeyRate::decide`] and applies it with one compare-and-swap,
    /// deciding again with the value found if another thread changed the key first. A rejection
    /// changes nothing.
    #[inline]
    pub fn apply<C>(&self, rate: &KeyRate<C>, now: u64, k: u32, max_wait: u64) -> Decision {
        self.apply_by(|tat| rate.decide(tat, now, k, max_wait))
    }

    /// [`apply`](Self::apply) with the numbers of `settled` (see [`Settled`]).
    pub fn apply_settled<C>(
        &self,
        rate: &KeyRate<C>,
        settled: &Settled,
        now: u64,
        k: u32,
        max_wait: u64,
    ) -> Decision {
        self.apply_by(|tat| rate.decide_settled(settled, tat, now, k, max_wait))
    }

    /// [`apply`](Self::apply) with one tier's numbers, as `rules` reads them at each try.
    #[inline]
    pub fn apply_rules(
        &self,
        rules: impl Fn() -> TierRules,
        now: u64,
        k: u32,
        max_wait: u64,
    ) -> Decision {
        self.apply_by(|tat| rules().decide(tat, now, k, max_wait))
    }

    /// [`try_take`](Self::try_take) with `rules`, the numbers `rate` was built with, while no
    /// change of them has begun: `None`, with nothing done, if one has by the time the state is
    /// read (a conversion it wrote may be what was read) or the compare-and-swap lost; decide
    /// then with the numbers in force.
    #[inline]
    pub fn try_take_unchanged<C>(
        &self,
        rate: &KeyRate<C>,
        rules: &TierRules,
        now: u64,
    ) -> Option<Result<(), u64>> {
        let tat = self.0.load();
        if rate.generation() != 0 {
            return None;
        }
        match gcra::check_limit(tat, now, rules.0.interval, rules.0.limit) {
            Ok(new_tat) => self
                .0
                .compare_exchange_weak(tat, new_tat)
                .ok()
                .map(|_| Ok(())),
            Err(refused) => Some(Err(refused.wait())),
        }
    }

    /// Replaces the state by `convert` of it (a reconfigure), whatever calls race it.
    pub fn convert(&self, convert: &dyn Fn(u64) -> u64) {
        let _ = update(&self.0, Backoff::new(), |tat| {
            Ok::<_, ()>((convert(tat), ()))
        });
    }

    /// One compare-and-swap loop for every way of deciding.
    #[inline]
    fn apply_by(&self, decide: impl Fn(u64) -> Decision) -> Decision {
        // A disabled config decides `new_tat == tat`: nothing is written.
        update(&self.0, Backoff::new(), |tat| match decide(tat) {
            decision @ (Decision::Now { new_tat } | Decision::Wait { new_tat, .. }) => {
                Ok((new_tat, decision))
            }
            rejected => Err(rejected),
        })
        .unwrap_or_else(|rejected| rejected)
    }

    /// Takes one permit now if it is there, with one load and one compare-and-swap (the hot path
    /// of `try_acquire`, the same test the unkeyed limiter runs); `Err(wait)` with the units until
    /// it arrives otherwise. On a disabled config it refuses: check
    /// [`KeyRate::enabled`] first.
    #[inline]
    pub fn try_take<C>(&self, rate: &KeyRate<C>, now: u64) -> Result<(), u64> {
        self.take_with(&rate.rate, now)
    }

    #[inline(always)]
    fn take_with(&self, rate: &Rate, now: u64) -> Result<(), u64> {
        let tat = self.0.load();
        match gcra::check_limit(tat, now, rate.interval, rate.limit) {
            Ok(new_tat) => match self.0.compare_exchange_weak(tat, new_tat) {
                Ok(_) => Ok(()),
                Err(_) => self.take_contended(rate, now),
            },
            Err(refused) => Err(refused.wait()),
        }
    }

    /// [`take_with`](Self::take_with) after a lost compare-and-swap: backs off, reads the state
    /// afresh and decides again, out of line.
    #[cold]
    #[inline(never)]
    fn take_contended(&self, rate: &Rate, now: u64) -> Result<(), u64> {
        take_contended(&self.0, now, rate.interval, rate.limit)
            .map(|_| ())
            .map_err(Refused::wait)
    }

    /// Gives back a reservation that wrote `written` and added `increment`, if nothing changed the
    /// key since (see [`KeyRate::refund`]). Returns whether the permits went back.
    pub fn refund<C>(&self, rate: &KeyRate<C>, written: u64, increment: u64) -> bool {
        let tat = self.0.load();
        match rate.refund(tat, written, increment) {
            Some(back) => self.0.compare_exchange(tat, back).is_ok(),
            None => false,
        }
    }
}
