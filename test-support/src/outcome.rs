//! What a call did, in terms a limiter's answer and the model's can both be put in.

use core::time::Duration;

use ritmo_core::{AcquireError, RateLimitExceeded, Reason};

use crate::units::Units;

/// A call's result, as the model predicts it and as a limiter's answer reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Admitted at once (a `try_acquire`).
    Admitted,
    /// A reservation: its wait (zero if at once) and its slot as a clock reading.
    Reserved {
        /// `wait_time()`.
        wait: Duration,
        /// `slot()`.
        slot: u64,
    },
    /// Refused for want of a permit in time (`Reason::NoPermitInTime`).
    Rejected {
        /// `retry_after()`.
        retry_after: Duration,
    },
    /// A keyed limiter had no room for a new key (`Reason::KeyCapacity`).
    NoRoom {
        /// `retry_after()`: when the soonest live key is idle again.
        retry_after: Duration,
    },
    /// `k = 0` or `k > permits`: an error, not a rejection.
    Invalid,
    /// A tiered keyed limiter's tier function answered an index with no tier
    /// (`Reason::UnknownTier`).
    UnknownTier,
    /// Anything else (another reason, another error): never what the model predicts.
    Other(String),
}

impl Outcome {
    /// A rejection, by its reason.
    pub fn of_rejection(e: &RateLimitExceeded) -> Outcome {
        match e.reason() {
            Reason::NoPermitInTime => Outcome::Rejected {
                retry_after: e.retry_after(),
            },
            Reason::KeyCapacity => Outcome::NoRoom {
                retry_after: e.retry_after(),
            },
            Reason::UnknownTier => Outcome::UnknownTier,
            _ => Outcome::Other(format!("{e:?}")),
        }
    }

    /// An error of a call that takes `k` permits.
    pub fn of_error(e: &AcquireError) -> Outcome {
        match e {
            AcquireError::RateLimited(e) => Outcome::of_rejection(e),
            AcquireError::InvalidPermits(_) => Outcome::Invalid,
            _ => Outcome::Other(format!("{e:?}")),
        }
    }

    /// A `try_acquire` / `try_acquire_n` answer.
    pub fn of_try<E: Into<AcquireError>>(result: Result<(), E>) -> Outcome {
        match result {
            Ok(()) => Outcome::Admitted,
            Err(e) => Outcome::of_error(&e.into()),
        }
    }

    /// Whether a limiter's answer `got` is what this expected outcome allows: the same, except
    /// that a `KeyCapacity` `retry_after` may be up to one tick of `units` late (SPEC §17: never
    /// early, at most one tick long).
    pub fn allows(&self, got: &Outcome, units: &Units) -> bool {
        match (self, got) {
            (Outcome::NoRoom { retry_after: truth }, Outcome::NoRoom { retry_after }) => {
                *truth <= *retry_after && *retry_after <= *truth + units.duration(1)
            }
            (expected, got) => expected == got,
        }
    }

    /// [`Outcome::allows`] as a test assertion's message.
    pub fn check(&self, got: &Outcome, units: &Units) -> Result<(), String> {
        if self.allows(got, units) {
            Ok(())
        } else {
            Err(format!(
                "the limiter answered {got:?}, the model says {self:?}"
            ))
        }
    }
}
