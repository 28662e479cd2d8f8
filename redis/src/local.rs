//! The in-process limiter a [`FailurePolicy::Local`](crate::FailurePolicy::Local) falls back to:
//! ritmo-std's keyed map ([`KeyedRateLimiter`]), one state per key, at most `cap` keys, with the
//! map's exact eviction (a key whose burst is full again is dropped when room is needed; a key
//! still being limited never is).

use std::time::Duration;

use ritmo_core::{AcquireError, Config, RateLimitExceeded, Reason};
use ritmo_std::{InstantClock, KeyedRateLimiter};

/// The local fallback's keyed map, keyed by the store key's bytes.
#[derive(Debug)]
pub(crate) struct Local {
    id: &'static str,
    map: KeyedRateLimiter<Vec<u8>, InstantClock>,
}

impl Local {
    pub(crate) fn new(id: &'static str, config: Config, cap: usize) -> Self {
        Local {
            id,
            map: KeyedRateLimiter::with_clock(id, config, cap.max(1), InstantClock::new()),
        }
    }

    /// Takes `k` permits, waiting up to the config's `max_wait` when `reserve`; returns the wait.
    /// A refusal that is not about time (the map full of keys still being limited, `k` over the
    /// local burst) is `unavailable`.
    pub(crate) fn take(
        &self,
        key: &[u8],
        k: u32,
        reserve: bool,
        unavailable: RateLimitExceeded,
    ) -> Result<Duration, RateLimitExceeded> {
        let key = key.to_vec();
        let outcome = if reserve {
            self.map.reserve_n(&key, k).map(|r| {
                let wait = r.wait_time();
                r.commit();
                wait
            })
        } else {
            self.map.try_acquire_n(&key, k).map(|()| Duration::ZERO)
        };
        match outcome {
            Ok(wait) => Ok(wait),
            Err(AcquireError::RateLimited(e)) if e.reason() == Reason::NoPermitInTime => Err(
                RateLimitExceeded::from_parts(self.id, Reason::NoPermitInTime, e.retry_after()),
            ),
            Err(_) => Err(unavailable),
        }
    }

    /// Charges `k` permits the store admitted, so that the fallback starts from this process's
    /// recent use instead of a fresh burst if the store goes away.
    pub(crate) fn warm(&self, key: &[u8], k: u32) {
        let _ = self.map.try_acquire_n(&key.to_vec(), k);
    }

    /// Calls of one permit the fallback would pass now for `key` (0 for a new key the map has no
    /// room for).
    pub(crate) fn available(&self, key: &[u8]) -> u32 {
        self.map.available_permits(&key.to_vec())
    }

    /// How long until one permit passes locally for `key`.
    pub(crate) fn retry_after(&self, key: &[u8]) -> Duration {
        self.map.retry_after(&key.to_vec())
    }
}
