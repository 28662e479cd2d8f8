//! [`KeyCell`]: one key's state word in a keyed store, and the compare-and-swap loops that move
//! it (with the backoff every loop of ritmo uses, `sync::Backoff`), run only by
//! [`KeyRules`](super::KeyRules).

use crate::gcra;
use crate::state::update;
use crate::sync::{Backoff, U64Cell};

use super::rate::{KeyRate, Settled};
use super::rules::{Decision, TierRules};

/// One key's state, for a keyed store that shares it between threads: the instant its next
/// permit arrives, in one atomic word (a short critical section on targets without 64-bit
/// atomics). 8 bytes. Opaque: a store keeps one per key and hands it to its
/// [`KeyRules`](super::KeyRules), which decide every call on it.
///
/// ```
/// use ritmo::keyed::KeyCell;
/// let cell = KeyCell::new();
/// assert_eq!(cell.tat(), 0); // a key never seen: its full burst
/// ```
#[derive(Debug)]
pub struct KeyCell(U64Cell);

impl Default for KeyCell {
    fn default() -> Self {
        Self::new()
    }
}

impl KeyCell {
    const_fn! {
        /// The state of a key never seen: its full burst.
        pub fn new() -> Self {
            KeyCell(U64Cell::new(0))
        }
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
    pub(crate) fn apply<C>(&self, rate: &KeyRate<C>, now: u64, k: u32, max_wait: u64) -> Decision {
        self.apply_by(|tat| rate.decide(tat, now, k, max_wait))
    }

    /// [`apply`](Self::apply) with the numbers of `settled` (see [`Settled`]).
    pub(crate) fn apply_settled<C>(
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
    pub(crate) fn apply_rules(
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
    pub(crate) fn try_take_unchanged<C>(
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

    /// Gives back a reservation that wrote `written` and added `increment`, if nothing changed the
    /// key since (see [`KeyRate::refund`]). Returns whether the permits went back.
    pub(crate) fn refund<C>(&self, rate: &KeyRate<C>, written: u64, increment: u64) -> bool {
        let tat = self.0.load();
        match rate.refund(tat, written, increment) {
            Some(back) => self.0.compare_exchange(tat, back).is_ok(),
            None => false,
        }
    }
}
