//! The in-process limiter a [`FailurePolicy::Local`](crate::FailurePolicy::Local) falls back to.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use ritmo_core::{AcquireError, Config, RateLimitExceeded, RateLimiter, Reason};
use ritmo_std::InstantClock;

/// One in-process limiter per key, up to `cap` keys; keys whose burst is full again are dropped
/// when the table fills up (they carry nothing a fresh limiter lacks).
#[derive(Debug)]
pub(crate) struct Local {
    id: &'static str,
    config: Config,
    cap: usize,
    limiters: Mutex<HashMap<Vec<u8>, RateLimiter<InstantClock>>>,
}

impl Local {
    pub(crate) fn new(id: &'static str, config: Config, cap: usize) -> Self {
        Local {
            id,
            config,
            cap: cap.max(1),
            limiters: Mutex::new(HashMap::new()),
        }
    }

    fn table(&self) -> MutexGuard<'_, HashMap<Vec<u8>, RateLimiter<InstantClock>>> {
        // A panic elsewhere while holding the lock leaves the table usable: every limiter in it
        // is valid after any step.
        self.limiters.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `f` on the key's limiter (a fresh one the first time), or returns `None` if the table
    /// is full of keys still being limited.
    fn with<R>(&self, key: &[u8], f: impl FnOnce(&RateLimiter<InstantClock>) -> R) -> Option<R> {
        let mut table = self.table();
        if let Some(limiter) = table.get(key) {
            return Some(f(limiter));
        }
        if table.len() >= self.cap {
            let permits = self.config.permits();
            table.retain(|_, l| l.available_permits() < permits);
            if table.len() >= self.cap {
                return None;
            }
        }
        let limiter = table
            .entry(key.to_vec())
            .or_insert_with(|| RateLimiter::new(self.id, self.config, InstantClock));
        Some(f(limiter))
    }

    /// Takes `k` permits, waiting up to the config's `max_wait` when `reserve`; returns the wait.
    /// A refusal that is not about time (table full, `k` over the local burst) is `unavailable`.
    pub(crate) fn take(
        &self,
        key: &[u8],
        k: u32,
        reserve: bool,
        unavailable: RateLimitExceeded,
    ) -> Result<Duration, RateLimitExceeded> {
        let outcome = self.with(key, |l| {
            if reserve {
                l.reserve_n(k).map(|r| {
                    let wait = r.wait_time();
                    r.commit();
                    wait
                })
            } else {
                l.try_acquire_n(k).map(|()| Duration::ZERO)
            }
        });
        match outcome {
            Some(Ok(wait)) => Ok(wait),
            Some(Err(AcquireError::RateLimited(e))) => Err(RateLimitExceeded::from_parts(
                self.id,
                Reason::NoPermitInTime,
                e.retry_after(),
            )),
            _ => Err(unavailable),
        }
    }

    /// Charges `k` permits the store admitted, so that the fallback starts from this process's
    /// recent use instead of a fresh burst if the store goes away.
    pub(crate) fn warm(&self, key: &[u8], k: u32) {
        let _ = self.with(key, |l| l.try_acquire_n(k));
    }

    pub(crate) fn available(&self, key: &[u8]) -> Option<u32> {
        self.with(key, |l| l.available_permits())
    }

    pub(crate) fn retry_after(&self, key: &[u8]) -> Option<Duration> {
        self.with(key, |l| l.retry_after())
    }
}
