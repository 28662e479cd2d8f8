//! How a full [`KeyedRateLimiter`] makes room for a new key: the idle keys it remembers, the
//! scan that frees every idle key at once, and the `retry_after` of a refused new key.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::hash::Hash;
use std::sync::PoisonError;
use std::sync::atomic::Ordering;

use ritmo_core::Clock;
use ritmo_core::keyed::TierSet;

use super::KeyedRateLimiter;

/// A key and its state when a scan saw it, ordered by the state alone.
pub(super) struct Soonest<K>(pub(super) u64, pub(super) K);

impl<K> PartialEq for Soonest<K> {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}
impl<K> Eq for Soonest<K> {}
impl<K> PartialOrd for Soonest<K> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<K> Ord for Soonest<K> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.cmp(&other.0)
    }
}

/// What the last scan left to free without scanning again.
pub(super) struct Reclaim<K> {
    /// The soonest live keys it saw, soonest first out.
    pub(super) candidates: BinaryHeap<Reverse<Soonest<K>>>,
    /// Every key it did not remember had a state at or after this.
    pub(super) threshold: u64,
}

/// Whether a new key may go in now.
pub(super) enum Room {
    Yes,
    /// No: every key held is live; the soonest may be idle in this many units.
    No(u64),
}

impl<K: Hash + Eq + Clone, C: Clock, P: TierSet<K>> KeyedRateLimiter<K, C, P> {
    /// Counts one more key in, if that stays within `max_keys`.
    pub(super) fn claim(&self) -> bool {
        self.held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                (held < self.max_keys).then_some(held + 1)
            })
            .is_ok()
    }

    /// Notes that `key`'s state is `tat` (put in, or lowered by a refund), so that `make_room`
    /// knows it may be idle from then on.
    pub(super) fn remember(&self, tat: u64, key: &K) {
        let mut reclaim = self.scan.lock().unwrap_or_else(PoisonError::into_inner);
        if reclaim.threshold == 0 {
            return; // a scan is due anyway
        }
        let most = self.remember_at_most();
        if reclaim.candidates.len() >= most {
            // Too many notes since the last scan: forget them, and scan when room is needed.
            reclaim.candidates = BinaryHeap::new();
            reclaim.threshold = 0;
            return;
        }
        if reclaim.candidates.capacity() == 0 {
            reclaim.candidates.reserve_exact(most);
        }
        reclaim.candidates.push(Reverse(Soonest(tat, key.clone())));
    }

    /// How many keys a scan remembers: a few per cent of `max_keys`.
    pub(super) fn keep(&self) -> usize {
        (self.max_keys / 32).clamp(16, 4096)
    }

    /// How many notes the map keeps between scans.
    pub(super) fn remember_at_most(&self) -> usize {
        2 * self.keep()
    }

    /// At `max_keys`: frees room by dropping idle keys, unless none can be idle yet. `force`
    /// scans the whole map anyway.
    ///
    /// The map remembers, with their states, the soonest live keys the last scan saw (a few per
    /// cent of `max_keys`) and every key put in or refunded since; each other key's state was at
    /// or after `threshold`. Making room first frees remembered keys that are idle, by key (O(1)
    /// each; a key used since it was remembered is noted again with its state). Only when none is
    /// and the clock has passed `threshold` does it scan: that drops every idle key and remembers
    /// the soonest again. Keys going idle one at a time while the map stays full so do not cost a
    /// scan each. Nothing is dropped that is not idle when it is dropped: each removal re-checks
    /// the state under its shard's lock.
    pub(super) fn make_room(&self, force: bool) -> Room {
        let mut reclaim = self.scan.lock().unwrap_or_else(PoisonError::into_inner);
        if !force && self.held.load(Ordering::Acquire) < self.max_keys {
            return Room::Yes; // another thread made room while we waited
        }
        let now = self.rate.now();
        // Before any key is dropped at `now` (see `take_new`).
        self.evicted_at.fetch_max(now, Ordering::SeqCst);
        let mut freed = 0;
        // Each step pops or refreshes one note; a refreshed note is exact, so this ends.
        let mut steps = 2 * reclaim.candidates.len() + 2;
        // Whether the loop ended on the soonest noted key with its state as it is now.
        let mut exact = false;
        while steps > 0 {
            steps -= 1;
            let Some(Reverse(Soonest(noted, key))) = reclaim.candidates.peek() else {
                break;
            };
            let (noted, key) = (*noted, key.clone());
            let actual = self.map.get(&key).map(|state| state.tat());
            match actual {
                None => {
                    reclaim.candidates.pop(); // gone already
                }
                Some(tat) if tat != noted => {
                    // Used (or refunded) since: note its state now.
                    reclaim.candidates.pop();
                    reclaim.candidates.push(Reverse(Soonest(tat, key)));
                }
                Some(tat) if self.rate.is_idle(tat, now) => {
                    reclaim.candidates.pop();
                    if self
                        .map
                        .remove_if(&key, |_, state| self.rate.is_idle(state.tat(), now))
                        .is_some()
                    {
                        freed += 1;
                    }
                }
                Some(_) => {
                    exact = true; // the soonest noted key, exactly, and still live
                    break;
                }
            }
        }
        if freed > 0 {
            self.held.fetch_sub(freed, Ordering::AcqRel);
            if !force {
                return Room::Yes;
            }
        }
        // The soonest noted key, when exact, is the soonest of all if it is no later than every
        // key not noted (all at or after `threshold`): then its wait is the answer, exactly.
        // Otherwise only a scan knows which key is idle first: a refusal's `retry_after` is never
        // early.
        if !force && exact {
            let noted = reclaim.candidates.peek().map_or(u64::MAX, |c| c.0.0);
            if noted <= reclaim.threshold && now < noted {
                return Room::No(noted - now);
            }
        }
        let keep = self.keep();
        let mut soonest: BinaryHeap<Soonest<K>> = BinaryHeap::with_capacity(keep + 1);
        let mut scanned_freed = 0;
        let mut live = 0;
        self.map.retain(|key, state| {
            let tat = state.tat();
            if self.rate.is_idle(tat, now) {
                scanned_freed += 1;
                return false;
            }
            live += 1;
            if soonest.len() < keep || soonest.peek().is_some_and(|top| tat < top.0) {
                soonest.push(Soonest(tat, key.clone()));
                if soonest.len() > keep {
                    soonest.pop();
                }
            }
            true
        });
        self.held.fetch_sub(scanned_freed, Ordering::AcqRel);
        // Keys not remembered were at or after the latest remembered one (when it is full).
        reclaim.threshold = if live > keep {
            soonest.peek().map_or(u64::MAX, |top| top.0)
        } else {
            u64::MAX
        };
        reclaim.candidates = soonest.into_iter().map(Reverse).collect();
        if freed + scanned_freed > 0 || self.held.load(Ordering::Acquire) < self.max_keys {
            return Room::Yes;
        }
        let bound = reclaim
            .candidates
            .peek()
            .map_or(u64::MAX, |c| c.0.0)
            .min(reclaim.threshold);
        Room::No(bound.saturating_sub(now).max(1))
    }
}
