//! One tier's numbers and what a call does to a key under them: the decision every keyed store
//! makes, below both the limiter's rules ([`KeyRate`](super::KeyRate)) and the tiers.

use crate::error::{InvalidPermits, Reason};
use crate::gcra;
use crate::rate::{Rate, carry_over};

/// What one call for one key does to that key's state: the decision of every kind (`Now`, the
/// state becomes `new_tat`; `Wait`, reserved, `wait` units away; `Reject`, nothing changes).
pub use crate::gcra::Reserve as Decision;

/// The decision for a key whose state is `tat`, at `now`, with `rate`'s numbers.
#[inline]
pub(crate) fn decide_with(rate: &Rate, tat: u64, now: u64, k: u32, max_wait: u64) -> Decision {
    if !rate.enabled() {
        return Decision::Now { new_tat: tat };
    }
    if k > rate.permits {
        // Checked against a config a change has since replaced: never admitted.
        return Decision::Reject { wait: u64::MAX };
    }
    gcra::reserve(tat, now, rate.increment(k), rate.window(), max_wait)
}

/// One tier's numbers in a limiter's units: what a [`KeyedStore`](super::KeyedStore) decides a
/// key's calls with ([`KeyRules::rules`](super::KeyRules::rules) reads them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TierRules(pub(crate) Rate);

impl TierRules {
    /// Whether the tier limits at all.
    #[inline]
    pub fn enabled(&self) -> bool {
        self.0.enabled()
    }

    /// Permits per period.
    #[inline]
    pub fn permits(&self) -> u32 {
        self.0.permits
    }

    /// `max_wait` in units.
    #[inline]
    pub fn max_wait(&self) -> u64 {
        self.0.max_wait
    }

    /// `k * T`.
    #[inline]
    pub fn increment(&self, k: u32) -> u64 {
        self.0.increment(k)
    }

    /// `Err` for `k = 0` or `k > permits` of limiter `id`.
    #[inline]
    pub fn check_permits(&self, id: &'static str, k: u32) -> Result<(), InvalidPermits> {
        if k == 0 || k > self.0.permits {
            Err(InvalidPermits::new(id, k, self.0.permits))
        } else {
            Ok(())
        }
    }

    /// What a call does to a key whose state is `tat` (see `KeyRate::decide`).
    #[inline]
    pub fn decide(&self, tat: u64, now: u64, k: u32, max_wait: u64) -> Decision {
        decide_with(&self.0, tat, now, k, max_wait)
    }

    /// Calls of one permit a key whose state is `tat` would pass at `now`: the one rule of
    /// every keyed peek (`KeyRate::available` applies it to the config in force).
    pub fn available(&self, tat: u64, now: u64) -> u32 {
        if !self.0.enabled() {
            return self.0.permits;
        }
        gcra::available(tat, now, self.0.interval, self.0.window(), self.0.permits)
    }

    /// Units until `k` permits would pass at once.
    pub fn wait(&self, tat: u64, now: u64, k: u32) -> u64 {
        if !self.0.enabled() {
            return 0;
        }
        match gcra::check(tat, now, self.0.increment(k), self.0.window()) {
            Ok(_) => 0,
            Err(wait) => wait,
        }
    }

    /// A key's state `tat` made under these numbers, carried over at `now` to `to`'s (a change
    /// of tier): the single limiter's `reconfigure` rule, idle is new included (an idle key, or
    /// a key of a disabled tier, starts afresh on its new tier).
    #[inline]
    pub fn carry(&self, tat: u64, now: u64, to: &TierRules) -> u64 {
        if self.0 == to.0 {
            tat
        } else {
            carry_over(tat, now, &self.0, &to.0)
        }
    }
}

/// What a call did to its key: the state it wrote, when its permits arrive, and how long that is.
#[derive(Debug, Clone, Copy)]
pub struct Taken {
    /// The key's state after the call.
    pub written: u64,
    /// When its permits are there, in units.
    pub slot: u64,
    /// How long until then, in units.
    pub wait: u64,
}

impl Taken {
    /// A call that passes uncounted (a disabled limiter) at `now`.
    #[inline]
    pub const fn uncounted(now: u64) -> Taken {
        Taken {
            written: 0,
            slot: now,
            wait: 0,
        }
    }

    /// What `decision`, made at `now`, took; `Err` if it was a refusal, with the wait it would
    /// have had.
    #[inline]
    pub const fn of(decision: Decision, now: u64) -> Result<Taken, (Reason, u64)> {
        match decision {
            Decision::Now { new_tat } => Ok(Taken {
                written: new_tat,
                slot: now,
                wait: 0,
            }),
            Decision::Wait { new_tat, wait } => Ok(Taken {
                written: new_tat,
                slot: now.saturating_add(wait),
                wait,
            }),
            Decision::Reject { wait } => Err((Reason::NoPermitInTime, wait)),
        }
    }
}
