//! Announced policies adopted as extra quotas ([`Builder::adopt_policies`](crate::Builder::adopt_policies)).
//!
//! Rules: a policy `q` per `w` that a server announces in `RateLimit-Policy` is adopted for the
//! key that received it only if it is stricter than the client's own quota (a lower rate, or the
//! same rate with a smaller burst): a server can slow the client down, never speed it up. Each
//! adopted policy is a ritmo limiter of its own, by policy name, checked after the client's own
//! quota; a request needs a permit of each (the longest wait), and one refusal gives every
//! other permit back. A policy announced again with other numbers `reconfigure`s its limiter
//! (ritmo's live rule: the permits available become `min(available, new permits)`, permits
//! owed stay owed, so no announcement hands out a fresh burst); a policy announced as no
//! stricter than the client's quota is dropped. At most [`MAX_POLICIES`] policies per key, and
//! keys as many as the client tracks; beyond that, announcements are ignored with an event.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, PoisonError};

use core::time::Duration;
use ritmo_core::{Config, RateLimiter};

use crate::clock::ClientClock;
use crate::headers::AnnouncedPolicy;

/// How many announced policies one key adopts at most.
pub const MAX_POLICIES: usize = 4;

#[derive(Debug)]
struct Band {
    name: String,
    config: Config,
    limiter: Arc<RateLimiter<ClientClock>>,
}

#[derive(Debug)]
pub(crate) struct Adopted<K> {
    id: &'static str,
    local: Config,
    clock: ClientClock,
    max_keys: usize,
    bands: Mutex<HashMap<K, Vec<Band>>>,
}

/// Whether `q` per `w` is stricter than `permits` per `period`.
fn stricter(q: u32, w: Duration, local: &Config) -> bool {
    let announced = u128::from(q) * local.period().as_nanos();
    let own = u128::from(local.permits()) * w.as_nanos();
    announced < own || (announced == own && q < local.permits())
}

impl<K: Hash + Eq + Clone> Adopted<K> {
    pub(crate) fn new(
        id: &'static str,
        local: Config,
        clock: ClientClock,
        max_keys: usize,
    ) -> Self {
        Adopted {
            id,
            local,
            clock,
            max_keys,
            bands: Mutex::new(HashMap::new()),
        }
    }

    /// The limiters adopted for `key` (empty, without allocating, when there are none).
    pub(crate) fn limiters(&self, key: &K) -> Vec<Arc<RateLimiter<ClientClock>>> {
        let map = self.bands.lock().unwrap_or_else(PoisonError::into_inner);
        map.get(key).map_or_else(Vec::new, |bands| {
            bands.iter().map(|b| Arc::clone(&b.limiter)).collect()
        })
    }

    /// Adopts, reconfigures or drops `key`'s policies after an announcement.
    pub(crate) fn announce(&self, key: &K, policies: &[AnnouncedPolicy]) {
        let mut map = self.bands.lock().unwrap_or_else(PoisonError::into_inner);
        for policy in policies {
            let (Some(q), Some(w)) = (policy.quota, policy.window) else {
                continue;
            };
            let q = u32::try_from(q).unwrap_or(u32::MAX);
            let config = match Config::new(q, w) {
                Ok(c) if stricter(q, w, &self.local) => {
                    Some(c.with_max_wait(self.local.max_wait()))
                }
                Ok(_) => None,
                Err(e) => {
                    tracing::warn!(target: "ritmo_client", policy = %policy.policy, error = %e,
                        "ignored an announced policy that is not a valid quota");
                    continue;
                }
            };
            if !map.contains_key(key) && config.is_some() && map.len() >= self.max_keys {
                map.retain(|_, bands| {
                    bands.retain(|b| b.limiter.available_permits() < b.config.permits());
                    !bands.is_empty()
                });
                if map.len() >= self.max_keys {
                    tracing::warn!(target: "ritmo_client", max_keys = self.max_keys,
                        "no room to adopt an announced policy: ignored");
                    continue;
                }
            }
            let bands = map.entry(key.clone()).or_default();
            let at = bands.iter().position(|b| b.name == policy.policy);
            match (at, config) {
                (Some(i), Some(config)) => {
                    if bands[i].config != config {
                        bands[i].limiter.reconfigure(config);
                        bands[i].config = config;
                    }
                }
                (Some(i), None) => {
                    bands.remove(i);
                }
                (None, Some(config)) if bands.len() < MAX_POLICIES => bands.push(Band {
                    name: policy.policy.clone(),
                    config,
                    limiter: Arc::new(RateLimiter::with_clock(self.id, config, self.clock.clone())),
                }),
                (None, Some(_)) => {
                    tracing::warn!(target: "ritmo_client", policy = %policy.policy,
                        max = MAX_POLICIES, "too many announced policies for one key: ignored");
                }
                (None, None) => {}
            }
            if bands.is_empty() {
                map.remove(key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stricter_means_slower_or_smaller_burst() {
        let local = Config::new(10, Duration::from_secs(1)).unwrap();
        assert!(stricter(5, Duration::from_secs(1), &local));
        assert!(stricter(100, Duration::from_secs(60), &local));
        assert!(
            stricter(1, Duration::from_millis(100), &local),
            "same rate, burst 1"
        );
        assert!(!stricter(10, Duration::from_secs(1), &local));
        assert!(!stricter(20, Duration::from_secs(1), &local));
        assert!(!stricter(u32::MAX, Duration::from_secs(1), &local));
    }
}
