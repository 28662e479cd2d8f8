//! How a full [`KeyedRateLimiter`] makes room for a new key: the idle keys it remembers, the
//! scan that frees every idle key at once, and the `retry_after` of a refused new key.

use std::collections::{BTreeMap, BinaryHeap};
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

/// The keys a full map may free without scanning: the soonest live keys the last scan saw, and
/// keys put in or refunded since, each with its state when noted.
///
/// The rule that keeps a refusal exact: every key in the map that has no note with its current
/// state has a state at or after `threshold` (states only grow between notes; a key whose
/// state is lowered, by a refund or a tier change, is noted again). When the notes are more than
/// the map keeps, the latest ones are dropped and `threshold` is lowered to the earliest state
/// dropped, so the rule still holds and nothing needs a scan to know it.
pub(super) struct Reclaim<K> {
    /// Notes by (state, order noted): the soonest first.
    pub(super) candidates: BTreeMap<(u64, u64), K>,
    /// Notes made so far: the second half of each note's place.
    pub(super) noted: u64,
    /// Every key without an up-to-date note has a state at or after this.
    pub(super) threshold: u64,
    /// Scans of the whole map so far.
    pub(super) scans: u64,
}

impl<K> Reclaim<K> {
    /// No notes: an empty map.
    pub(super) fn new() -> Self {
        Reclaim {
            candidates: BTreeMap::new(),
            noted: 0,
            threshold: u64::MAX,
            scans: 0,
        }
    }

    /// Notes `key` with state `tat`, keeping at most `most` notes.
    fn note(&mut self, tat: u64, key: K, most: usize) {
        if tat >= self.threshold {
            return; // the threshold covers it already
        }
        self.noted += 1;
        self.candidates.insert((tat, self.noted), key);
        if self.candidates.len() > most {
            // Drop the latest note: its key's state is at or after the state dropped.
            if let Some(((dropped, _), _)) = self.candidates.pop_last() {
                self.threshold = self.threshold.min(dropped);
            }
        }
    }

    /// The soonest note: its state and key.
    fn soonest(&self) -> Option<(u64, &K)> {
        self.candidates
            .first_key_value()
            .map(|(&(tat, _), key)| (tat, key))
    }
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
        if tat < reclaim.threshold {
            reclaim.note(tat, key.clone(), self.remember_at_most());
        }
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
    /// cent of `max_keys`) and the keys put in or refunded since, up to twice that many notes (the
    /// latest dropped beyond, `threshold` lowered to theirs); each other key's state was at or
    /// after `threshold`. Making room first frees remembered keys that are idle, by key (O(1)
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
            let Some((noted, key)) = reclaim.soonest() else {
                break;
            };
            let key = key.clone();
            let actual = self.map.get(&key).map(|state| state.tat());
            match actual {
                None => {
                    reclaim.candidates.pop_first(); // gone already
                }
                Some(tat) if tat != noted => {
                    // Used (or refunded) since: note its state now.
                    reclaim.candidates.pop_first();
                    reclaim.noted += 1;
                    let at = reclaim.noted;
                    reclaim.candidates.insert((tat, at), key);
                }
                Some(tat) if self.rate.is_idle(tat, now) => {
                    reclaim.candidates.pop_first();
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
            let noted = reclaim.soonest().map_or(u64::MAX, |(tat, _)| tat);
            if noted <= reclaim.threshold && now < noted {
                return Room::No(noted - now);
            }
        }
        reclaim.scans += 1;
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
        reclaim.candidates = BTreeMap::new();
        for Soonest(tat, key) in soonest.into_vec() {
            reclaim.noted += 1;
            let at = reclaim.noted;
            reclaim.candidates.insert((tat, at), key);
        }
        if freed + scanned_freed > 0 || self.held.load(Ordering::Acquire) < self.max_keys {
            return Room::Yes;
        }
        let bound = reclaim
            .soonest()
            .map_or(u64::MAX, |(tat, _)| tat)
            .min(reclaim.threshold);
        Room::No(bound.saturating_sub(now).max(1))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use ritmo_core::{Config, ManualClock, Reason};

    use super::KeyedRateLimiter;

    const KEYS: u64 = 10_000;

    /// Scans of the whole map so far.
    fn scans<C: ritmo_core::Clock>(map: &KeyedRateLimiter<u64, C>) -> u64 {
        map.scan.lock().unwrap().scans
    }

    /// A map full of keys put in one after another, each live for an hour.
    fn full(clock: &ManualClock) -> KeyedRateLimiter<u64, &ManualClock> {
        let config = Config::new(1, Duration::from_secs(3600)).unwrap();
        let map = KeyedRateLimiter::with_clock("full", config, KEYS as usize, clock);
        for key in 0..KEYS {
            map.try_acquire(&key).unwrap();
            clock.advance(Duration::from_millis(1));
        }
        map
    }

    /// Filling a map past its notes drops the latest notes and keeps the soonest: a new key
    /// refused from a full map of live keys gets the exact wait without a scan of the map.
    #[test]
    fn a_full_map_of_live_keys_refuses_without_scanning() {
        let clock = ManualClock::new();
        let map = full(&clock);
        let err = map.try_acquire(&KEYS).unwrap_err();
        assert_eq!(err.reason(), Reason::KeyCapacity);
        // Key 0, put in at 0, is idle first: at 3600 s; the clock reads 10 s.
        assert_eq!(err.retry_after(), Duration::from_secs(3600 - 10));
        assert_eq!(scans(&map), 0);
    }

    /// Once every key is idle, the noted ones (the soonest) make room one new key at a time,
    /// each by its key, and in the order they go idle.
    #[test]
    fn a_full_map_of_idle_keys_makes_room_from_its_notes() {
        let clock = ManualClock::new();
        let map = full(&clock);
        clock.advance(Duration::from_secs(3600 - 10));
        // Key 0 is idle now, key 1 a millisecond later.
        map.try_acquire(&KEYS).unwrap();
        let err = map.try_acquire(&(KEYS + 1)).unwrap_err();
        assert_eq!(err.retry_after(), Duration::from_millis(1));
        assert_eq!(scans(&map), 0);
        clock.advance(Duration::from_secs(3600));
        let notes = map.remember_at_most() as u64;
        for key in KEYS + 1..KEYS + notes {
            map.try_acquire(&key).unwrap();
        }
        assert_eq!(scans(&map), 0);
        assert_eq!(map.keys_held(), KEYS as usize);
    }
}
