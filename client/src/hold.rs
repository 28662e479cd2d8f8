//! The server's holds: for each key a server told to wait, the instant its wait ends.
//!
//! Rules: a hold only ever moves later (a server's later answer that asks for less does not cut
//! a wait short: the answers may arrive out of order), never further than `max_hold` from the
//! moment it is set, and a hold that has ended is forgotten. The table keeps at most `max_keys`
//! holds; when full, ended holds are dropped first, and if every one is still running the new
//! hold is ignored (with an event) rather than growing without bound.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use core::time::Duration;
use tokio::time::Instant;

/// About 30 years: what an instant beyond the clock's range is taken as (tokio does the same).
const FAR: Duration = Duration::from_secs(86_400 * 365 * 30);

/// `t + d`, or as far as the clock reaches when that overflows (a `max_hold` or `max_wait` of
/// `Duration::MAX`): never a panic, never an instant earlier than it should be within range.
pub(crate) fn later(t: Instant, d: Duration) -> Instant {
    t.checked_add(d)
        .or_else(|| t.checked_add(FAR.min(d)))
        .unwrap_or(t)
}

#[derive(Debug)]
pub(crate) struct Holds<K> {
    until: Mutex<HashMap<K, Instant>>,
    /// How many holds the map has (ended ones included until they are dropped): a request reads
    /// this and skips the lock while no server has asked for anything.
    len: AtomicUsize,
    max_hold: Duration,
    max_keys: usize,
}

impl<K: Hash + Eq + Clone> Holds<K> {
    pub(crate) fn new(max_hold: Duration, max_keys: usize) -> Self {
        Holds {
            until: Mutex::new(HashMap::new()),
            len: AtomicUsize::new(0),
            max_hold,
            max_keys: max_keys.max(1),
        }
    }

    /// Whether no key is held (a hold that has ended may still count until it is read).
    pub(crate) fn none_held(&self) -> bool {
        self.len.load(Ordering::Acquire) == 0
    }

    /// The holds, locked (a panic elsewhere left them whole: each change is one map operation).
    fn map(&self) -> MutexGuard<'_, HashMap<K, Instant>> {
        self.until.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// When `key`'s hold ends, if it has not ended at `now`; an ended hold is forgotten.
    pub(crate) fn until(&self, key: &K, now: Instant) -> Option<Instant> {
        if self.none_held() {
            return None;
        }
        let mut map = self.map();
        let end = *map.get(key)?;
        if end > now {
            return Some(end);
        }
        map.remove(key);
        self.len.store(map.len(), Ordering::Release);
        None
    }

    /// Holds `key` for `wait` from `now`, capped at `max_hold`; returns the hold's end, or `None`
    /// if it was ignored for lack of room.
    pub(crate) fn hold(&self, key: &K, wait: Duration, now: Instant) -> Option<Instant> {
        let wait = if wait > self.max_hold {
            tracing::warn!(
                target: "ritmo_client",
                asked_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                cap_ms = u64::try_from(self.max_hold.as_millis()).unwrap_or(u64::MAX),
                "a server's hold is longer than max_hold: capped"
            );
            self.max_hold
        } else {
            wait
        };
        let end = later(now, wait);
        let mut map = self.map();
        if !map.contains_key(key) && map.len() >= self.max_keys {
            map.retain(|_, &mut e| e > now);
            self.len.store(map.len(), Ordering::Release);
            if map.len() >= self.max_keys {
                tracing::warn!(
                    target: "ritmo_client",
                    max_keys = self.max_keys,
                    "every key is already held: a server's hold was ignored"
                );
                return None;
            }
        }
        let slot = map.entry(key.clone()).or_insert(end);
        *slot = end.max(*slot);
        let end = *slot;
        self.len.store(map.len(), Ordering::Release);
        Some(end)
    }

    /// The cap on a hold.
    pub(crate) fn max_hold(&self) -> Duration {
        self.max_hold
    }

    /// Keys held at `now` (ended holds are not counted).
    pub(crate) fn held(&self, now: Instant) -> usize {
        self.map().values().filter(|&&e| e > now).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_only_move_later_and_are_capped() {
        let h = Holds::new(Duration::from_secs(10), 2);
        let t0 = Instant::now();
        assert_eq!(
            h.hold(&"a", Duration::from_secs(5), t0),
            Some(t0 + Duration::from_secs(5))
        );
        assert_eq!(
            h.hold(&"a", Duration::from_secs(1), t0),
            Some(t0 + Duration::from_secs(5))
        );
        assert_eq!(
            h.hold(&"a", Duration::MAX, t0),
            Some(t0 + Duration::from_secs(10))
        );
        assert_eq!(h.until(&"a", t0 + Duration::from_secs(10)), None);
        assert_eq!(h.held(t0), 0, "an ended hold is forgotten");
    }

    #[test]
    fn an_unbounded_cap_is_a_far_hold_not_an_overflow() {
        let h = Holds::new(Duration::MAX, 2);
        let t0 = Instant::now();
        let end = h.hold(&"a", Duration::MAX, t0).unwrap();
        assert!(end >= t0 + FAR);
        assert!(h.until(&"a", t0 + Duration::from_secs(3600)).is_some());
    }

    #[test]
    fn full_table_drops_ended_holds_then_ignores() {
        let h = Holds::new(Duration::from_secs(10), 2);
        let t0 = Instant::now();
        h.hold(&1, Duration::from_secs(1), t0);
        h.hold(&2, Duration::from_secs(5), t0);
        assert_eq!(h.hold(&3, Duration::from_secs(5), t0), None, "no room");
        let t2 = t0 + Duration::from_secs(2);
        assert!(
            h.hold(&3, Duration::from_secs(5), t2).is_some(),
            "1 ended: room"
        );
        assert_eq!(h.held(t2), 2);
    }
}
