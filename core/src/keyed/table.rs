//! The fixed-capacity table behind [`KeyedLimiter`](super::KeyedLimiter): open addressing with
//! linear probing, each slot a key and its state, reclaimed the moment it is found idle.
//!
//! Nothing here locks or reads a clock: the limiter calls it inside its critical section with the
//! reading it took. An idle slot (`tat <= now`) is removed as soon as a probe passes over it, by
//! backward-shift deletion (the entries after it that may move closer to their home slot do), so
//! the table never holds tombstones and a lookup stops at the first empty slot. A probe therefore
//! fails only after passing `N` live keys: the table is full.

use core::hash::{Hash, Hasher};

use siphasher::sip::SipHasher13;

use super::rules::TierRules;

/// One slot: a key, its state, and the tier its state was made under (`()` for a limiter of one
/// config: no byte spent). The slot its hash points to is recomputed when an entry may move (only
/// while reclaiming), rather than stored: 8 bytes less per key.
#[derive(Debug, Clone)]
pub(crate) struct Slot<K, I> {
    pub(crate) key: Option<K>,
    pub(crate) tat: u64,
    pub(crate) tier: I,
}

/// Where a key is, or where it would go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Probe {
    /// The key is in this slot.
    Found(usize),
    /// The key is absent; this empty slot is where it would go.
    Vacant(usize),
    /// The key is absent and every slot holds a live key; the soonest is idle at `soonest`.
    Full { soonest: u64 },
}

#[derive(Debug)]
pub(crate) struct Table<K, const N: usize, I> {
    pub(crate) slots: [Slot<K, I>; N],
    /// Keys held (live or not yet found idle).
    pub(crate) held: usize,
    keys: (u64, u64),
    /// The latest clock reading seen: a reading taken before the lock and delayed is raised to it,
    /// so that no call decides with a time earlier than one an idle key was dropped at.
    seen: u64,
    /// `1 + s` after a restore that left every key fully spent at instant `s` (in units), the
    /// keys not held included; 0: none. A key not held then starts from
    /// [`fresh`](Self::fresh) instead of a full burst (see `keyed/persist.rs`).
    pub(crate) spent: u64,
}

/// What a slot keeps of its key's tier, and its value in an empty slot. (Nominally public, in a
/// private module: the bound of [`TierSet::Index`](super::TierSet::Index).)
pub trait SlotTier: Copy + PartialEq {
    /// The value in an empty slot.
    const FIRST: Self;
    /// The tier at `position` (0 for one tier; checked against the number of tiers first).
    fn at(position: u8) -> Self;
}

impl SlotTier for () {
    const FIRST: () = ();
    fn at(_position: u8) {}
}

impl SlotTier for u8 {
    const FIRST: u8 = 0;
    fn at(position: u8) -> u8 {
        position
    }
}

impl<K, const N: usize, I: SlotTier> Table<K, N, I> {
    #[cfg(not(all(test, loom)))]
    pub(crate) const fn new(seed: u128) -> Self {
        Table {
            slots: [const {
                Slot {
                    key: None,
                    tat: 0,
                    tier: I::FIRST,
                }
            }; N],
            held: 0,
            keys: split(seed),
            seen: 0,
            spent: 0,
        }
    }

    #[cfg(all(test, loom))]
    pub(crate) fn new(seed: u128) -> Self {
        Table {
            slots: core::array::from_fn(|_| Slot {
                key: None,
                tat: 0,
                tier: I::FIRST,
            }),
            held: 0,
            keys: split(seed),
            seen: 0,
            spent: 0,
        }
    }

    /// The state a key not held starts from on a tier of `rules`: 0 (its full burst), or fully
    /// spent at the instant a restore left every key spent at, until that has passed.
    // Out of line: inlined, it moved the hot path's code about and cost the table's metrics
    // build 6 instructions a call for its counter (callgrind, scripts/instructions).
    #[inline(never)]
    pub(crate) fn fresh(&self, rules: &TierRules) -> u64 {
        if self.spent == 0 || !rules.enabled() {
            0
        } else {
            (self.spent - 1).saturating_add(rules.0.window())
        }
    }

    /// `reading`, raised to the latest one seen.
    #[inline]
    pub(crate) fn observe(&mut self, reading: u64) -> u64 {
        if reading > self.seen {
            self.seen = reading;
        }
        self.seen
    }
}

const fn split(seed: u128) -> (u64, u64) {
    (seed as u64, (seed >> 64) as u64)
}

impl<K: Hash + Eq, const N: usize, I: SlotTier> Table<K, N, I> {
    fn home(&self, key: &K) -> usize {
        let mut hasher = SipHasher13::new_with_keys(self.keys.0, self.keys.1);
        key.hash(&mut hasher);
        // The high 32 bits scaled to `0..N` (N <= u32::MAX): a multiply instead of a division.
        (((hasher.finish() >> 32) * N as u64) >> 32) as usize
    }

    /// Looks `key` up at `now`, dropping every idle key the probe passes.
    pub(crate) fn probe(&mut self, key: &K, now: u64) -> Probe {
        let home = self.home(key);
        let mut i = home;
        let mut passed = 0;
        // After a removal the table has an empty slot, which the probe reaches before it could
        // pass N live keys.
        let mut removed = false;
        let mut soonest = u64::MAX;
        loop {
            let slot = &self.slots[i];
            match &slot.key {
                None => return Probe::Vacant(i),
                Some(k) if k == key => return Probe::Found(i),
                Some(_) if slot.tat <= now => {
                    // Idle: indistinguishable from absent. Drop it and probe again from the
                    // start: the shift may have moved the hole behind us, and a new key must go
                    // into the first empty slot of its probe sequence.
                    self.remove_at(i);
                    removed = true;
                    i = home;
                    passed = 0;
                    continue;
                }
                Some(_) => soonest = soonest.min(slot.tat),
            }
            passed += 1;
            if passed >= N && !removed {
                return Probe::Full { soonest };
            }
            i = if i + 1 == N { 0 } else { i + 1 };
        }
    }

    /// Puts `key` with state `tat` made under `tier` into the empty slot `i` that
    /// [`probe`](Self::probe) returned.
    pub(crate) fn insert_at(&mut self, i: usize, key: K, tat: u64, tier: I) {
        self.slots[i] = Slot {
            key: Some(key),
            tat,
            tier,
        };
        self.held += 1;
    }

    /// Empties slot `i` by backward-shift deletion: each later entry of the same run that may sit
    /// closer to its home slot moves into the hole, so lookups never pass a tombstone.
    fn remove_at(&mut self, mut hole: usize) {
        let mut j = hole;
        loop {
            j = if j + 1 == N { 0 } else { j + 1 };
            let home = match &self.slots[j].key {
                Some(key) if j != hole => self.home(key),
                _ => break,
            };
            // The entry at `j` must stay if its home lies cyclically in `(hole, j]`.
            let stays = if hole <= j {
                hole < home && home <= j
            } else {
                hole < home || home <= j
            };
            if !stays {
                self.slots.swap(hole, j);
                hole = j;
            }
        }
        self.slots[hole].key = None;
        self.held -= 1;
    }

    /// Drops every idle key at `now`; returns how many live keys remain.
    pub(crate) fn reclaim(&mut self, now: u64) -> usize {
        let mut i = 0;
        while i < N {
            if self.slots[i].key.is_some() && self.slots[i].tat <= now {
                self.remove_at(i);
                // an entry may have moved into `i`: look at it again
            } else {
                i += 1;
            }
        }
        self.held
    }

    /// Rehashes every key with a new seed. Uses a second array of `N` slots on the stack while
    /// it moves the keys.
    pub(crate) fn reseed(&mut self, seed: u128, now: u64) {
        self.reclaim(now); // with the old seed: entries sit where it put them
        self.keys = split(seed);
        let old = core::mem::replace(
            &mut self.slots,
            core::array::from_fn(|_| Slot {
                key: None,
                tat: 0,
                tier: I::FIRST,
            }),
        );
        self.held = 0;
        for slot in old {
            if let Some(key) = slot.key {
                let mut i = self.home(&key);
                while self.slots[i].key.is_some() {
                    i = if i + 1 == N { 0 } else { i + 1 };
                }
                self.insert_at(i, key, slot.tat, slot.tier);
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// The slot each of `0..64` hashes to in a 64-slot table seeded `seed`.
    fn homes(seed: u128) -> [usize; 64] {
        let table: Table<u32, 64, ()> = Table::new(seed);
        core::array::from_fn(|key| table.home(&(key as u32)))
    }

    /// The seed reaches SipHash, all 128 bits of it: the defence against keys chosen to collide.
    #[test]
    fn every_bit_of_the_seed_changes_where_keys_go() {
        let base = homes(0x0123_4567_89ab_cdef_fedc_ba98_7654_3210);
        assert_ne!(
            base,
            homes(0x0123_4567_89ab_cdef_fedc_ba98_7654_3211),
            "low half"
        );
        assert_ne!(
            base,
            homes(0x1123_4567_89ab_cdef_fedc_ba98_7654_3210),
            "high half"
        );
        assert_ne!(homes(0), homes(1 << 64));
        assert_ne!(homes(0), homes(1));
        assert_ne!(
            homes(1),
            homes(1 << 64),
            "the halves are not interchangeable"
        );
    }

    /// A reseeded table hashes as a fresh table with the new seed does, and keeps every live key
    /// with its state.
    #[test]
    fn reseeding_rehashes_every_live_key() {
        let mut table: Table<u32, 16, ()> = Table::new(1);
        let fresh: Table<u32, 16, ()> = Table::new(2);
        assert!((0..10u32).any(|key| table.home(&key) != fresh.home(&key)));
        for key in 0..10u32 {
            let Probe::Vacant(i) = table.probe(&key, 0) else {
                panic!("room for {key}")
            };
            table.insert_at(i, key, 100 + u64::from(key), ());
        }
        table.reseed(2, 0);
        for key in 0..10u32 {
            assert_eq!(table.home(&key), fresh.home(&key), "key {key}");
            let Probe::Found(i) = table.probe(&key, 0) else {
                panic!("{key} lost")
            };
            assert_eq!(table.slots[i].tat, 100 + u64::from(key));
        }
        assert_eq!(table.held, 10);
    }
}
