//! A keyed table's state across resets: every live key saved into a fixed-size record, and
//! restored at boot against a clock that kept counting (see [`crate::persist`] for the single
//! limiter and bands, whose record discipline this follows).
//!
//! The record is, little-endian: the head every record has (version, the number of tiers, two
//! zero bytes, a fingerprint, the clock reading at the save: 16 bytes), the table's spent mark
//! (8 bytes, below), the number of entries (4 bytes), `N` entries of the key's
//! [`KeyBytes`] encoding, its state (8 bytes) and its tier (1 byte), unused ones zero, and a CRC-32
//! of everything before it: [`keyed_saved_len`] bytes. The fingerprint covers each tier's
//! numbers in the clock's units (so another config, tier set or clock is foreign), the capacity
//! `N`, and the key's encoded length.
//!
//! **What a valid record guarantees.** The table drops a key only once it is idle (its burst is
//! full again), so the table holds every key still being limited, and the record every key the
//! table held that was not idle at the save. A key absent from the record was idle or never seen:
//! it decides every call as a key never seen does. Restoring raises each saved key's state to the
//! saved one (never lowers it) and skips those idle by now: no key gets more than it would have
//! had without the reset, and, saved after each admission, none gets less.
//!
//! **Fully spent covers keys never seen.** A record that is corrupt, foreign or from a clock
//! ahead of now cannot say which keys were limited, so every key is taken to have spent its full
//! burst at the instant of the restore, the keys the table does not hold included. The table
//! keeps that instant (one `u64`, `spent`): a key not held starts from "fully spent at that
//! instant" on its tier (`spent + n * T`) instead of a full burst, until that instant is more
//! than a window old, after which it starts with a full burst as before. Keys held never sit
//! below that start, so dropping an idle one still changes no decision. A valid record carries
//! the mark on (a table restored as spent and saved again stays spent across the next reset); a
//! `reconfigure` converts it with the rule it applies to every held key.

use core::hash::Hash;

use super::KeyedLimiter;
use super::rules::TierRules;
use super::table::{Probe, SlotTier, Table};
use super::tiers::TierSet;
use crate::clock::Clock;
use crate::persist::{
    HEAD, KeyBytes, Restored, Untrusted, check_head, fingerprint_add, fingerprint_bytes, seal,
    u32_at, u64_at, write_head,
};

/// Bytes before the entries: the head, the spent mark, the number of entries.
const KEYED_HEAD: usize = HEAD + 8 + 4;

/// Bytes the saved state of a keyed table of `capacity` keys of `key_len` bytes each takes
/// ([`KeyedLimiter::SAVED_LEN`]): `32 + capacity * (key_len + 9)`.
///
/// ```
/// use ritmo::persist::keyed_saved_len;
/// assert_eq!(keyed_saved_len(8, 4), 136); // 8 keys of u32
/// ```
pub const fn keyed_saved_len(capacity: usize, key_len: usize) -> usize {
    KEYED_HEAD + capacity * (key_len + 8 + 1) + 4
}

/// The `spent` mark that makes a key not held start from `fresh` on a tier of `rules` at `now`:
/// none once `fresh` is not ahead of now (then any start decides alike). Exact unless `fresh` is
/// less than one window after the clock's epoch, where it starts the keys later (never earlier).
pub(crate) fn spent_for(fresh: u64, rules: &TierRules, now: u64) -> u64 {
    if fresh <= now || !rules.enabled() {
        0
    } else {
        fresh.saturating_sub(rules.0.window()).saturating_add(1)
    }
}

/// # State across resets
impl<K: Hash + Eq + Clone + KeyBytes, C: Clock, const N: usize, P: TierSet<K>>
    KeyedLimiter<K, C, N, P>
{
    /// Bytes [`save_into`](Self::save_into) writes: [`keyed_saved_len`]`(N, K::LEN)`.
    pub const SAVED_LEN: usize = keyed_saved_len(N, K::LEN);

    /// The fingerprint of what the table's states count in: each tier's numbers in force, the
    /// capacity and the key's length. Called under the table's lock (where a reconfigure
    /// converts).
    fn print(&self) -> u32 {
        let mut crc = !0;
        for position in 0..self.rules.tiers.count() {
            let rules = self.rules.rules(P::Index::at(position as u8));
            crc = fingerprint_add(crc, &rules.0);
        }
        crc = fingerprint_bytes(crc, b"keyed");
        crc = fingerprint_bytes(crc, &(N as u64).to_le_bytes());
        !fingerprint_bytes(crc, &(K::LEN as u64).to_le_bytes())
    }

    /// Writes every live key and its state into `out`, which must be
    /// [`SAVED_LEN`](Self::SAVED_LEN) bytes long; returns `false` (writing nothing) otherwise.
    /// For a place that survives a reset (a RAM section kept through reset, a flash page, an
    /// RTC's backup registers); save after each admission, so that the record holds everything
    /// admitted. Keys need a byte encoding: [`KeyBytes`].
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::persist::Restored;
    /// use ritmo::keyed::KeyedLimiter;
    /// use ritmo::{Config, ManualClock};
    ///
    /// let clock = ManualClock::new();
    /// let config = Config::new(2, Duration::from_secs(1))?;
    /// let peers: KeyedLimiter<u32, _, 4> = KeyedLimiter::with_clock("peers", config, &clock, 1);
    /// peers.try_acquire_n(&7, 2).unwrap();
    /// let mut saved = [0u8; KeyedLimiter::<u32, &ManualClock, 4>::SAVED_LEN];
    /// assert!(peers.save_into(&mut saved));
    ///
    /// // ...a reset; the clock kept counting...
    /// clock.advance(Duration::from_millis(500));
    /// let peers: KeyedLimiter<u32, _, 4> = KeyedLimiter::with_clock("peers", config, &clock, 2);
    /// assert_eq!(peers.restore(&saved), Restored::Saved);
    /// assert_eq!((peers.available_permits(&7), peers.available_permits(&8)), (1, 2));
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn save_into(&self, out: &mut [u8]) -> bool {
        if out.len() != Self::SAVED_LEN {
            return false;
        }
        let reading = self.rules.rate.clock().now();
        let units = self.rules.rate.now();
        let entry = K::LEN + 9;
        self.store.table.with(|t| {
            let now = t.observe(units);
            out.fill(0);
            // at most 255 tiers
            write_head(out, self.rules.tiers.count() as u8, self.print(), reading);
            out[HEAD..HEAD + 8].copy_from_slice(&t.spent.to_le_bytes());
            let mut count = 0;
            for slot in &t.slots {
                match &slot.key {
                    Some(key) if slot.tat > now => {
                        let at = KEYED_HEAD + count * entry;
                        key.write(&mut out[at..at + K::LEN]);
                        out[at + K::LEN..at + K::LEN + 8].copy_from_slice(&slot.tat.to_le_bytes());
                        out[at + K::LEN + 8] = P::position(slot.tier);
                        count += 1;
                    }
                    _ => {}
                }
            }
            // N <= u32::MAX
            out[HEAD + 8..KEYED_HEAD].copy_from_slice(&(count as u32).to_le_bytes());
            seal(out);
        });
        true
    }

    /// Restores a state [`save_into`](Self::save_into) wrote, on a table of the same config (or
    /// tiers), capacity, key type and clock (one just built at boot; the record tells key types
    /// apart only by their size), against the clock's reading
    /// now. A trusted record raises each saved key's state to the saved one: every key then holds
    /// what it would have held had the table kept running. A record that is corrupt (its checksum,
    /// its length, a key no key encodes as), from another config, tier set, capacity, key size
    /// ([`KeyBytes::LEN`]) or clock, or saved at a reading later than now restores the table as
    /// fully spent
    /// ([`Restored::Spent`]): every key, the keys never seen included, as if its full burst had
    /// been taken now; permits then come back at each key's steady rate. Never more permits than
    /// without the reset; never a panic, whatever the bytes.
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::persist::{Restored, Untrusted};
    /// use ritmo::keyed::KeyedLimiter;
    /// use ritmo::{Config, ManualClock};
    ///
    /// let clock = ManualClock::new();
    /// let config = Config::new(10, Duration::from_secs(10))?;
    /// let peers: KeyedLimiter<u32, _, 4> = KeyedLimiter::with_clock("peers", config, &clock, 1);
    /// let mut saved = [0u8; KeyedLimiter::<u32, &ManualClock, 4>::SAVED_LEN];
    /// assert!(peers.save_into(&mut saved));
    /// saved[20] ^= 1; // a bit flipped
    /// assert_eq!(peers.restore(&saved), Restored::Spent(Untrusted::Corrupt));
    /// assert_eq!(peers.available_permits(&42), 0); // a key never seen: spent too
    /// clock.advance(Duration::from_secs(1));
    /// assert_eq!(peers.available_permits(&42), 1); // one back per second
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn restore(&self, saved: &[u8]) -> Restored {
        let reading = self.rules.rate.clock().now();
        let units = self.rules.rate.now();
        self.store.table.with(|t| {
            let now = t.observe(units);
            let verdict = self.check(saved, reading);
            match verdict {
                Restored::Saved => self.raise(t, saved, now),
                Restored::Spent(_) => self.spend(t, now),
            }
            verdict
        })
    }

    /// Whether `saved` is a trusted record for this table, saved no later than `reading`, every
    /// entry of it readable.
    fn check(&self, saved: &[u8], reading: u64) -> Restored {
        let count = self.rules.tiers.count();
        let verdict = check_head(saved, Self::SAVED_LEN, count, self.print(), reading);
        if verdict != Restored::Saved {
            return verdict;
        }
        let entries = u32_at(saved, HEAD + 8) as usize;
        if entries > N {
            return Restored::Spent(Untrusted::Corrupt);
        }
        let entry = K::LEN + 9;
        for i in 0..entries {
            let at = KEYED_HEAD + i * entry;
            if K::read(&saved[at..at + K::LEN]).is_none()
                || usize::from(saved[at + K::LEN + 8]) >= count
            {
                return Restored::Spent(Untrusted::Corrupt);
            }
        }
        Restored::Saved
    }

    /// Applies a trusted record at `now`: the spent mark and each saved key raised.
    fn raise(&self, t: &mut Table<K, N, P::Index>, saved: &[u8], now: u64) {
        t.spent = t.spent.max(u64_at(saved, HEAD));
        let entry = K::LEN + 9;
        for i in 0..u32_at(saved, HEAD + 8) as usize {
            let at = KEYED_HEAD + i * entry;
            let Some(key) = K::read(&saved[at..at + K::LEN]) else {
                continue; // checked
            };
            let tat = u64_at(saved, at + K::LEN);
            let tier = P::Index::at(saved[at + K::LEN + 8]);
            if tat <= now {
                continue; // idle by now: the same as a key never seen
            }
            let rules = self.rules.rules(tier);
            match t.probe(&key, now) {
                Probe::Found(i) if t.slots[i].tier == tier => {
                    t.slots[i].tat = t.slots[i].tat.max(tat);
                }
                Probe::Found(i) => {
                    // Carried to the tier it holds now.
                    let held = self.rules.rules(t.slots[i].tier);
                    t.slots[i].tat = t.slots[i].tat.max(rules.carry(tat, now, &held));
                }
                Probe::Vacant(i) => t.insert_at(i, key, tat.max(t.fresh(&rules)), tier),
                // No room (a table not just built): the key is not dropped, the mark is raised
                // so that every key not held starts no sooner than it would.
                Probe::Full { .. } => t.spent = t.spent.max(spent_for(tat, &rules, now)),
            }
        }
    }

    /// Leaves every key fully spent as of `now`, the keys not held included.
    fn spend(&self, t: &mut Table<K, N, P::Index>, now: u64) {
        t.spent = t.spent.max(now.saturating_add(1));
        for i in 0..N {
            if t.slots[i].key.is_some() {
                let fresh = t.fresh(&self.rules.rules(t.slots[i].tier));
                t.slots[i].tat = t.slots[i].tat.max(fresh);
            }
        }
    }
}
