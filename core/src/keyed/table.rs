//! The fixed-capacity table behind [`KeyedLimiter`](super::KeyedLimiter): open addressing with
//! linear probing, each slot a key and its state.
//!
//! Nothing here locks or reads a clock: the limiter calls it inside its critical section with the
//! reading it took. An idle key (`tat <= now`) may go at any moment; the table drops one only
//! when its room is wanted, by backward-shift deletion (the entries after it that may move closer
//! to their home slot do), so it never holds tombstones and a lookup stops at the first empty
//! slot.
//!
//! - **Below [`SPARE_FROM`] slots** every slot holds a key: a probe drops each idle key it
//!   passes, and a new key into a full table is known to have no room only after passing all `N`
//!   (a few hundred compares at most).
//! - **From [`SPARE_FROM`] slots** a quarter of the hashed slots stays empty (the capacity,
//!   [`Table::CAP`], is three quarters of them), so that a probe ends at an empty slot within a
//!   few slots whatever the table holds. A probe drops nothing; when the table holds `CAP` keys a
//!   new key finds the soonest key held, which makes room if it is idle, or is the exact instant
//!   a refusal names. The soonest key is
//!   found without a pass over the table: the last slots (not hashed to) keep a lower bound of
//!   the states in each block of about `√N` slots, and the least state with its slot. States only
//!   grow on a call, so the bounds stay true; the few writes that lower a state (a refund, a
//!   change of tier or config, a new key, an entry moved) lower its block's bound. A refusal
//!   first checks the noted least state's slot; when its key was used since, it scans the block
//!   of the least bound, and then only the blocks whose bound is below the least state found.

use core::hash::{Hash, Hasher};

use siphasher::sip::SipHasher13;

use super::rules::TierRules;

/// Tables of this many slots or more keep a quarter of them empty and bounds for finding the
/// soonest key (see the module docs); smaller ones hold a key in every slot.
pub(crate) const SPARE_FROM: usize = 1024;

/// One slot: a key, its state, and the tier its state was made under (`()` for a limiter of one
/// config: no byte spent). The slot its hash points to is recomputed when an entry may move (only
/// while reclaiming), rather than stored: 8 bytes less per key. In the slots past the hashed ones
/// of a large table, `tat` is a bound (see the module docs) and `key` is `None`.
#[derive(Debug, Clone)]
pub(crate) struct Slot<K, I> {
    pub(crate) key: Option<K>,
    pub(crate) tat: u64,
    pub(crate) tier: I,
}

impl<K, I: SlotTier> Slot<K, I> {
    /// A slot holding no key.
    const EMPTY: Self = Slot {
        key: None,
        tat: 0,
        tier: I::FIRST,
    };
}

/// Where a key is, or where it would go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Probe {
    /// The key is in this slot.
    Found(usize),
    /// The key is absent; this empty slot is where it would go.
    Vacant(usize),
    /// The key is absent and the table holds its capacity of live keys; the soonest is idle at
    /// `soonest`.
    Full { soonest: u64 },
}

// In this order (`repr(C)`): the slots, then the words every call reads. Left to the compiler,
// `seen` sat 256 bytes into an 8-key limiter, past the reach of Cortex-M0's load and add
// immediates: +16 bytes of flash for keyed save/restore (scripts/footprint).
#[derive(Debug)]
#[repr(C)]
pub(crate) struct Table<K, const N: usize, I> {
    pub(crate) slots: [Slot<K, I>; N],
    /// The latest clock reading seen: a reading taken before the lock and delayed is raised to it,
    /// so that no call decides with a time earlier than one an idle key was dropped at.
    seen: u64,
    /// `1 + s` after a restore that left every key fully spent at instant `s` (in units), the
    /// keys not held included; 0: none. A key not held then starts from
    /// [`fresh`](Self::fresh) instead of a full burst (see `keyed/persist.rs`).
    pub(crate) spent: u64,
    /// Keys held (live or not yet found idle).
    pub(crate) held: usize,
    keys: (u64, u64),
    /// Slots and bounds looked at while finding the soonest key (tests only).
    #[cfg(test)]
    pub(crate) looked: usize,
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

impl<K, const N: usize, I> Table<K, N, I> {
    /// Whether a quarter of the slots stays empty and bounds find the soonest key.
    const SPARE: bool = N >= SPARE_FROM;
    /// Slots per block of a bound: about `√N`, a power of two.
    const BLOCK: usize = if Self::SPARE { 1 << (N.ilog2() / 2) } else { N };
    /// The slots keys hash to; the rest keep one bound per block, then the least state and its
    /// slot.
    const SLOTS: usize = if Self::SPARE {
        N - N.div_ceil(Self::BLOCK + 1) - 2
    } else {
        N
    };
    const BLOCKS: usize = if Self::SPARE {
        Self::SLOTS.div_ceil(Self::BLOCK)
    } else {
        0
    };
    /// The slot whose `tat` is a lower bound of every state held, and the one whose `tat` is the
    /// slot where that bound was last found.
    const FLOOR: usize = Self::SLOTS + Self::BLOCKS;
    const FLOOR_AT: usize = Self::FLOOR + 1;
    /// The most keys it holds.
    pub(crate) const CAP: usize = if Self::SPARE {
        const { assert!(!Self::SPARE || Self::FLOOR_AT < N) };
        Self::SLOTS - Self::SLOTS / 4
    } else {
        N
    };
}

impl<K, const N: usize, I: SlotTier> Table<K, N, I> {
    pub(crate) const fn new(seed: u128) -> Self {
        let mut slots = [const { Slot::EMPTY }; N];
        // Every block's bound, and the floor, as of no key: the largest state.
        let mut i = Self::SLOTS;
        while Self::SPARE && i < Self::FLOOR_AT {
            slots[i].tat = u64::MAX;
            i += 1;
        }
        Table {
            slots,
            held: 0,
            keys: split(seed),
            seen: 0,
            spent: 0,
            #[cfg(test)]
            looked: 0,
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

    /// Notes that the state in slot `i` may have gone down (a refund, a change of tier, a new
    /// key, an entry moved): its block's bound and the floor follow it.
    #[inline]
    pub(crate) fn lowered(&mut self, i: usize) {
        if Self::SPARE {
            self.lower_bounds(i);
        }
    }

    // Out of line: every caller is off the hot path, which inlined code would crowd.
    #[inline(never)]
    fn lower_bounds(&mut self, i: usize) {
        let tat = self.slots[i].tat;
        for bound in [Self::SLOTS + i / Self::BLOCK, Self::FLOOR] {
            if tat < self.slots[bound].tat {
                self.slots[bound].tat = tat;
            }
        }
    }

    /// Sets every bound to the least state of its block, and the floor to the least of all:
    /// after a change to every key (a reseed, a change of config).
    pub(crate) fn rebound(&mut self) {
        let mut least = (u64::MAX, Self::SLOTS);
        for block in 0..Self::BLOCKS {
            let found = self.scan(block);
            if found.0 < least.0 {
                least = found;
            }
        }
        self.note_floor(least);
    }

    /// The least state in `block` and its slot (`u64::MAX` if it holds no key), which becomes the
    /// block's bound.
    fn scan(&mut self, block: usize) -> (u64, usize) {
        let start = block * Self::BLOCK;
        let end = (start + Self::BLOCK).min(Self::SLOTS);
        #[cfg(test)]
        {
            self.looked += end - start;
        }
        let mut least = (u64::MAX, start);
        for i in start..end {
            if self.slots[i].key.is_some() && self.slots[i].tat < least.0 {
                least = (self.slots[i].tat, i);
            }
        }
        self.slots[Self::SLOTS + block].tat = least.0;
        least
    }

    fn note_floor(&mut self, (tat, at): (u64, usize)) {
        if Self::SPARE {
            self.slots[Self::FLOOR].tat = tat;
            self.slots[Self::FLOOR_AT].tat = at as u64;
        }
    }

    /// The least state held and its slot, exactly (the table holds a key): the noted one if its
    /// slot still holds it, else from the blocks' bounds: the block of the least bound is scanned
    /// (its bound made exact) until the least state in it is no more than every other bound.
    fn soonest(&mut self) -> (u64, usize) {
        let mut floor = self.slots[Self::FLOOR].tat;
        let at = self.slots[Self::FLOOR_AT].tat as usize;
        // The floor is at most every state held: a key holding it is the soonest.
        if at < Self::SLOTS && self.slots[at].key.is_some() && self.slots[at].tat == floor {
            return (floor, at);
        }
        loop {
            // The least bound, and a bound of every other block's.
            let (mut least, mut block, mut others) = (u64::MAX, 0, u64::MAX);
            for b in 0..Self::BLOCKS {
                let bound = self.slots[Self::SLOTS + b].tat;
                if bound < least {
                    (others, least, block) = (least, bound, b);
                    if bound <= floor {
                        others = floor; // no bound is lower: stop looking
                        break;
                    }
                } else if bound < others {
                    others = bound;
                }
            }
            #[cfg(test)]
            {
                self.looked += Self::BLOCKS;
            }
            let found = self.scan(block);
            if found.0 <= others {
                self.note_floor(found);
                return found;
            }
            // Keys in that block were used since its bound was taken; every bound is at least
            // `least` still.
            floor = least;
        }
    }
}

const fn split(seed: u128) -> (u64, u64) {
    (seed as u64, (seed >> 64) as u64)
}

impl<K: Hash + Eq, const N: usize, I: SlotTier> Table<K, N, I> {
    fn home(&self, key: &K) -> usize {
        let mut hasher = SipHasher13::new_with_keys(self.keys.0, self.keys.1);
        key.hash(&mut hasher);
        let hash = hasher.finish();
        if Self::SPARE {
            // Scaled to `0..SLOTS` by one widening multiply (the number of slots is not a power
            // of two here, so that the 32-bit form below would take a multiply and two shifts).
            ((u128::from(hash) * Self::SLOTS as u128) >> 64) as usize
        } else {
            // The high 32 bits scaled to `0..N` (N <= u32::MAX): a multiply instead of a division.
            (((hash >> 32) * N as u64) >> 32) as usize
        }
    }

    /// Looks `key` up at `now`; an absent key is given a slot (see the module docs), or `Full`.
    pub(crate) fn probe(&mut self, key: &K, now: u64) -> Probe {
        if Self::SPARE {
            self.probe_spare(key, now)
        } else {
            self.probe_every(key, now)
        }
    }

    /// [`probe`](Self::probe) in a table with a key in every slot: drops every idle key the probe
    /// passes.
    fn probe_every(&mut self, key: &K, now: u64) -> Probe {
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

    /// [`probe`](Self::probe) in a table with spare slots: an absent key goes into the empty slot
    /// that ends the probe while the table holds fewer than `CAP` keys; else the soonest key makes
    /// room if it is idle.
    fn probe_spare(&mut self, key: &K, now: u64) -> Probe {
        loop {
            let mut i = self.home(key);
            loop {
                match &self.slots[i].key {
                    None => break,
                    Some(k) if k == key => return Probe::Found(i),
                    Some(_) => {}
                }
                i = if i + 1 == Self::SLOTS { 0 } else { i + 1 };
            }
            if self.held < Self::CAP {
                return Probe::Vacant(i);
            }
            if let Err(soonest) = self.make_room(now) {
                return Probe::Full { soonest };
            }
            // Probe again: the shift may have moved an entry into the empty slot found.
        }
    }

    /// Drops the soonest key if it is idle at `now`; else the instant it will be.
    // Out of line: the lookup of a key held is the hot path, and this its rare other end.
    #[cold]
    #[inline(never)]
    fn make_room(&mut self, now: u64) -> Result<(), u64> {
        let (soonest, at) = self.soonest();
        if soonest > now {
            return Err(soonest);
        }
        self.remove_at(at);
        Ok(())
    }

    /// Puts `key` with state `tat` made under `tier` into the empty slot `i` that
    /// [`probe`](Self::probe) returned.
    pub(crate) fn insert_at(&mut self, i: usize, key: K, tat: u64, tier: I) {
        self.held += 1;
        self.slots[i] = Slot {
            key: Some(key),
            tat,
            tier,
        };
        self.lowered(i);
    }

    /// Empties slot `i` by backward-shift deletion: each later entry of the same run that may sit
    /// closer to its home slot moves into the hole, so lookups never pass a tombstone.
    fn remove_at(&mut self, mut hole: usize) {
        let mut j = hole;
        loop {
            j = if j + 1 == Self::SLOTS { 0 } else { j + 1 };
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
                // Moved field by field, not swapped: `<[_]>::swap` may overlap, and on Cortex-M0
                // it calls `memmove`, which links 778 bytes of flash into a firmware.
                self.slots[hole].key = self.slots[j].key.take();
                self.slots[hole].tat = self.slots[j].tat;
                self.slots[hole].tier = self.slots[j].tier;
                self.lowered(hole);
                hole = j;
            }
        }
        self.slots[hole].key = None;
        self.held -= 1;
    }

    /// Drops every idle key at `now`; returns how many live keys remain.
    pub(crate) fn reclaim(&mut self, now: u64) -> usize {
        let mut i = 0;
        while i < Self::SLOTS {
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
        let old = core::mem::replace(&mut self.slots, core::array::from_fn(|_| Slot::EMPTY));
        self.held = 0;
        for slot in old.into_iter().take(Self::SLOTS) {
            if let Some(key) = slot.key {
                let mut i = self.home(&key);
                while self.slots[i].key.is_some() {
                    i = if i + 1 == Self::SLOTS { 0 } else { i + 1 };
                }
                self.insert_at(i, key, slot.tat, slot.tier);
            }
        }
        self.rebound();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    extern crate std;

    use core::time::Duration;
    use std::boxed::Box;

    use super::*;
    use crate::keyed::KeyedLimiter;
    use crate::{Config, ManualClock, Reason};

    /// Slots of the big tables below.
    const BIG: usize = 4096;
    type Big = Table<u64, BIG, ()>;
    type BigLimiter<'a> = KeyedLimiter<u64, &'a ManualClock, BIG>;

    /// A table of `BIG` slots holding its capacity of keys, put in 1 ms apart, each live for an
    /// hour after it went in.
    fn full(clock: &ManualClock) -> Box<BigLimiter<'_>> {
        let config = Config::new(1, Duration::from_secs(3600)).unwrap();
        let table = Box::new(KeyedLimiter::with_clock("full", config, clock, 5));
        for key in 0..Big::CAP as u64 {
            table.try_acquire(&key).unwrap();
            clock.advance(Duration::from_millis(1));
        }
        table
    }

    /// Slots and bounds the table has looked at to find its soonest key.
    fn looked(table: &BigLimiter<'_>) -> usize {
        table.store.table.with(|t| t.looked)
    }

    /// A new key refused from a full table of live keys gets the exact wait (key 0's) after a
    /// look at the bounds and one block; the next refusals find key 0 where the first left it.
    #[test]
    fn a_full_table_refuses_after_looking_at_one_block() {
        let clock = ManualClock::new();
        let table = full(&clock);
        let cap = Big::CAP as u64;
        assert_eq!(table.keys_held(), Big::CAP);
        for key in cap..cap + 100 {
            let err = table.try_acquire(&key).unwrap_err();
            assert_eq!(err.reason(), Reason::KeyCapacity);
            // Key 0, put in at 0, is idle at 3600 s; the clock reads `cap` ms.
            assert_eq!(err.retry_after(), Duration::from_millis(3_600_000 - cap));
        }
        assert!(
            looked(&table) <= Big::BLOCKS + Big::BLOCK,
            "{}",
            looked(&table)
        );
    }

    /// Keys going idle one at a time while the table stays full each make room for one new key,
    /// in the order they go idle, each after a look at no more than the bounds twice and two
    /// blocks.
    #[test]
    fn keys_going_idle_in_order_make_room_one_at_a_time() {
        let clock = ManualClock::new();
        let table = full(&clock);
        let cap = Big::CAP as u64;
        clock.advance(Duration::from_millis(3_600_000 - cap));
        // Key 0 is idle now, key 1 a millisecond later.
        table.try_acquire(&cap).unwrap();
        let err = table.try_acquire(&(cap + 1)).unwrap_err();
        assert_eq!(err.retry_after(), Duration::from_millis(1));
        // One look at the bounds and a block: a pass. A call takes one pass, and one more for each
        // block whose soonest key the call before dropped or moved out (at most two: the dropped
        // key's, and the block an entry shifted back out of).
        let pass = Big::BLOCKS + Big::BLOCK;
        let start = looked(&table);
        for key in cap + 1..cap + 2_000 {
            clock.advance(Duration::from_millis(1));
            let before = looked(&table);
            table.try_acquire(&key).unwrap();
            let each = looked(&table) - before;
            assert!(each <= 3 * pass, "key {key}: {each}");
            assert_eq!(table.keys_held(), Big::CAP);
        }
        assert!(looked(&table) - start <= 2 * 2_000 * pass);
        // The keys that went idle are gone, the others live: the next to go is key 2000.
        assert!(table.try_acquire(&0).is_err());
        assert_eq!(table.retry_after(&(cap + 5_000)), Duration::from_millis(1));
    }

    /// Keys used after the bounds were taken: a refusal is still exact (the soonest key now),
    /// and the one idle key, wherever it is, is found rather than a new key refused.
    #[test]
    fn refusals_stay_exact_when_keys_were_used_after_the_bounds_were_taken() {
        let clock = ManualClock::new();
        let table = full(&clock);
        let cap = Big::CAP as u64;
        clock.advance(Duration::from_secs(3600));
        // Every key but 1234 used again, in reverse order: key 1234 is the only idle one.
        for key in (0..cap).rev() {
            if key != 1234 {
                table.try_acquire(&key).unwrap();
                clock.advance(Duration::from_micros(10));
            }
        }
        table.try_acquire(&cap).unwrap(); // 1234's room
        // The soonest key now is the one used first again, cap - 1, at 3600 s + cap ms + 1 h.
        let err = table.try_acquire(&(cap + 1)).unwrap_err();
        let now = crate::Clock::now(&&clock);
        let soonest = Duration::from_millis(2 * 3_600_000 + cap);
        assert_eq!(err.retry_after(), soonest - Duration::from_nanos(now));
        assert_eq!(err.reason(), Reason::KeyCapacity);
        assert!(table.try_acquire(&1234).is_err());
    }

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
