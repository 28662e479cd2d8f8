//! What every client of one limiter shares, blocking or async: its config in the store's
//! microseconds, its keys, its failure policy, and the decisions made from the script's replies.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use ritmo_core::{Clock, Config, InvalidPermits, RateLimitExceeded, Reason};

use crate::error::{Cause, StoreError};
use crate::local::Local;
use crate::rate::{self, MAX, StoreRate, micros};
use crate::{KeyStatus, Permit, Source, StoreKey, key, observe};

#[derive(Debug)]
pub(crate) enum Policy {
    Reject,
    Admit,
    Local(Box<Local>),
}

impl Policy {
    /// The policy's name in events and metric labels.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Policy::Reject => "reject",
            Policy::Admit => "admit",
            Policy::Local(_) => "local",
        }
    }
}

/// What every client shares: the config in microseconds, the key layout, the policy.
pub(crate) struct Inner {
    pub(crate) id: &'static str,
    pub(crate) config: Config,
    pub(crate) rate: StoreRate,
    pub(crate) base: Vec<u8>,
    pub(crate) keyed: bool,
    pub(crate) timeout: Duration,
    pub(crate) policy: Policy,
    pub(crate) clock: Option<Arc<dyn Clock + Send + Sync>>,
    /// The expiry margin in milliseconds, as the scripts take it.
    pub(crate) margin_ms: String,
    /// The last decision came from the failure policy, the store having failed: switches are
    /// reported (`tracing`, `metrics`).
    pub(crate) away: AtomicBool,
    /// What the store and the policy answered, for metrics (feature `metrics`).
    pub(crate) counts: observe::Counts,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisLimiter")
            .field("id", &self.id)
            .field("config", &self.config)
            .field("key", &String::from_utf8_lossy(&self.base))
            .field("timeout", &self.timeout)
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

/// What the acquire script decided (or the policy, when it could not be asked).
pub(crate) enum Decision {
    /// Granted, at once or after `permit.wait()`. `written` and `increment` let the refund script
    /// give it back (`written` 0: not granted by the store, never given back).
    Granted {
        permit: Permit,
        written: u64,
        increment: u64,
    },
    /// Refused, with the key's status when the store read it.
    Rejected(RateLimitExceeded, Option<KeyStatus>),
}

impl Decision {
    pub(crate) fn granted(permit: Permit) -> Decision {
        Decision::Granted {
            permit,
            written: 0,
            increment: 0,
        }
    }

    /// The permit, or the refusal: what a call that does not reserve returns.
    pub(crate) fn permit(self) -> Result<Permit, RateLimitExceeded> {
        match self {
            Decision::Granted { permit, .. } => Ok(permit),
            Decision::Rejected(e, _) => Err(e),
        }
    }
}

/// Arguments of one script call.
pub(crate) struct Call {
    pub(crate) key: Vec<u8>,
    pub(crate) k: u32,
    /// The call may wait (a reservation).
    pub(crate) reserve: bool,
    /// How long it may wait, in microseconds (0 unless `reserve`).
    pub(crate) max_wait: u64,
}

impl Inner {
    pub(crate) fn redis_key<K: StoreKey + ?Sized>(&self, key: &K) -> Vec<u8> {
        let mut out = self.base.clone();
        if self.keyed {
            key::append_key(&mut out, key);
        }
        out
    }

    /// `max_wait` in the store's microseconds. On Redis's clock, rounded down to the microsecond
    /// it counts in; on a caller's clock, the whole ticks of that clock it holds (a caller sees
    /// its slot at the first tick at or after it, so a wait is compared in whole ticks).
    pub(crate) fn wait_bound(&self, max_wait: Duration) -> u64 {
        match &self.clock {
            None => rate::saturate(max_wait.as_micros()),
            Some(clock) => {
                let hz = u128::from(clock.tick_rate().hz().max(1));
                let ticks = max_wait.as_nanos().saturating_mul(hz) / 1_000_000_000;
                rate::saturate(ticks.saturating_mul(1_000_000) / hz)
            }
        }
    }

    /// A wait in the store's microseconds as a caller sees it: on a caller's clock, rounded up
    /// to that clock's whole tick (and then to the nanosecond).
    pub(crate) fn wait_duration(&self, us: u64) -> Duration {
        match &self.clock {
            Some(clock) if us > 0 && us < MAX => {
                let rate = clock.tick_rate();
                let hz = u128::from(rate.hz().max(1));
                let ticks = (u128::from(us) * hz).div_ceil(1_000_000);
                rate.duration_ceil(u64::try_from(ticks).unwrap_or(u64::MAX))
            }
            _ => micros(us),
        }
    }

    /// The `now` argument: the caller's clock in microseconds, or "" for Redis's `TIME`.
    pub(crate) fn now_arg(&self) -> String {
        match &self.clock {
            Some(clock) => rate::clock_micros(clock.as_ref()).to_string(),
            None => String::new(),
        }
    }

    pub(crate) fn call<K: StoreKey + ?Sized>(
        &self,
        key: &K,
        k: u32,
        reserve: bool,
    ) -> Result<Call, InvalidPermits> {
        if k == 0 || k > self.config.permits() {
            return Err(InvalidPermits::new(self.id, k, self.config.permits()));
        }
        Ok(self.call_one(key, k, reserve))
    }

    /// A call for `k` permits, `k` already checked (1 always is: permits >= 1).
    pub(crate) fn call_one<K: StoreKey + ?Sized>(&self, key: &K, k: u32, reserve: bool) -> Call {
        Call {
            key: self.redis_key(key),
            k,
            reserve,
            max_wait: if reserve {
                self.wait_bound(self.config.max_wait())
            } else {
                0
            },
        }
    }

    /// The acquire script's arguments after the key, for one request: now, window, margin,
    /// increment, max_wait.
    pub(crate) fn acquire_args(&self, call: &Call) -> [String; 5] {
        let [now, window, margin] = self.acquire_head();
        let [increment, max_wait] = self.acquire_request(call);
        [now, window, margin, increment, max_wait]
    }

    /// The acquire script's first arguments, shared by every request of one script call: now,
    /// window, expiry margin.
    pub(crate) fn acquire_head(&self) -> [String; 3] {
        [
            self.now_arg(),
            self.rate.window.to_string(),
            self.margin_ms.clone(),
        ]
    }

    /// One request's arguments to the acquire script: increment, max_wait.
    pub(crate) fn acquire_request(&self, call: &Call) -> [String; 2] {
        [
            self.rate.increment(call.k).to_string(),
            call.max_wait.to_string(),
        ]
    }

    pub(crate) fn unavailable(&self) -> RateLimitExceeded {
        RateLimitExceeded::from_parts(self.id, Reason::Unavailable, self.timeout)
    }

    /// A call on a disabled config: passes without asking the store.
    pub(crate) fn disabled(&self) -> Option<Decision> {
        (!self.config.enabled())
            .then(|| Decision::granted(Permit::new(Source::Disabled, None, Duration::ZERO)))
    }

    pub(crate) fn decide(&self, call: &Call, reply: Result<Vec<i64>, Cause>) -> Decision {
        let reply = match reply {
            Ok(reply) => {
                // One relaxed load on the path the store answers; the swap only after a failure.
                if self.away.load(Ordering::Relaxed) && self.away.swap(false, Ordering::Relaxed) {
                    observe::to_store(self.id, self.policy.name());
                }
                reply
            }
            Err(cause) => {
                if !self.away.swap(true, Ordering::Relaxed) {
                    observe::to_policy(self.id, self.policy.name(), &cause);
                }
                return self.policy_decides(call);
            }
        };
        let get = |i: usize| reply.get(i).map_or(0, |&v| (v.max(0) as u64).min(MAX));
        let (status, now, a, b) = (get(0), get(1), get(2), get(3));
        self.counts.answered(status);
        match status {
            1 | 2 => {
                if let Policy::Local(local) = &self.policy {
                    local.warm(&call.key, call.k);
                }
                let mut permit = Permit::new(Source::Store, Some(now), self.wait_duration(b));
                permit.status = Some(self.status(a, now));
                Decision::Granted {
                    permit,
                    written: a,
                    increment: self.rate.increment(call.k),
                }
            }
            _ => Decision::Rejected(
                RateLimitExceeded::from_parts(
                    self.id,
                    Reason::NoPermitInTime,
                    self.wait_duration(a),
                ),
                Some(self.status(b, now)),
            ),
        }
    }

    /// A key's status from its state `tat` at `now`.
    pub(crate) fn status(&self, tat: u64, now: u64) -> KeyStatus {
        let remaining = self.rate.available(tat, now);
        if remaining >= self.rate.permits {
            return KeyStatus::new(remaining, Duration::ZERO);
        }
        KeyStatus::new(
            remaining,
            self.wait_duration(self.rate.wait(tat, now, remaining + 1)),
        )
    }

    pub(crate) fn policy_decides(&self, call: &Call) -> Decision {
        match &self.policy {
            Policy::Reject => {
                self.counts.unavailable(self.id);
                Decision::Rejected(self.unavailable(), None)
            }
            Policy::Admit => {
                self.counts.fallback(self.id, "admit");
                Decision::granted(Permit::new(Source::Open, None, Duration::ZERO))
            }
            Policy::Local(local) => {
                self.counts.fallback(self.id, "local");
                match local.take(&call.key, call.k, call.reserve, self.unavailable()) {
                    Ok(wait) => Decision::granted(Permit::new(Source::Fallback, None, wait)),
                    Err(e) => {
                        if e.reason() == Reason::Unavailable {
                            self.counts.unavailable(self.id);
                        }
                        Decision::Rejected(e, None)
                    }
                }
            }
        }
    }

    /// `available_permits` from the peek script's reply `[now, tat]`.
    pub(crate) fn available(
        &self,
        key: &[u8],
        reply: Result<Vec<i64>, Cause>,
    ) -> Result<u32, StoreError> {
        let read = |tat, now| self.rate.available(tat, now);
        self.peeked(reply, self.config.permits(), read, |l| {
            Some(l.available(key))
        })
    }

    /// How long until `k` permits would pass at once, from the peek script's reply `[now, tat]`
    /// (the local fallback answers for one permit only).
    pub(crate) fn retry_after_n(
        &self,
        key: &[u8],
        k: u32,
        reply: Result<Vec<i64>, Cause>,
    ) -> Result<Duration, StoreError> {
        let read = |tat, now| self.wait_duration(self.rate.wait(tat, now, k));
        self.peeked(reply, Duration::ZERO, read, |l| {
            (k == 1).then(|| l.retry_after(key))
        })
    }

    /// What the peek script's reply `[now, tat]` says, read by `read(tat, now)`: `disabled` on a
    /// disabled config; the store failing, the local fallback's answer where it has one, else
    /// the store's error.
    fn peeked<T>(
        &self,
        reply: Result<Vec<i64>, Cause>,
        disabled: T,
        read: impl FnOnce(u64, u64) -> T,
        local: impl FnOnce(&Local) -> Option<T>,
    ) -> Result<T, StoreError> {
        if !self.config.enabled() {
            return Ok(disabled);
        }
        let cause = match reply {
            Ok(r) if r.len() == 2 => return Ok(read(r[1].max(0) as u64, r[0].max(0) as u64)),
            Ok(_) => Cause::Redis(redis::RedisError::from((
                redis::ErrorKind::Parse,
                "unexpected reply from the peek script",
            ))),
            Err(cause) => cause,
        };
        if let Policy::Local(l) = &self.policy
            && let Some(answer) = local(l)
        {
            return Ok(answer);
        }
        Err(StoreError::new(self.id, cause))
    }

    /// The refund script's arguments after the key: now, written, increment.
    pub(crate) fn refund_args(&self, written: u64, increment: u64) -> [String; 4] {
        [
            self.now_arg(),
            written.to_string(),
            increment.to_string(),
            self.margin_ms.clone(),
        ]
    }
}
