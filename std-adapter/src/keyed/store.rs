//! The sharded map behind a [`KeyedRateLimiter`](super::KeyedRateLimiter), and how it finds
//! room for a new key without scanning the whole map on one call.
//!
//! Each shard is a [`hashbrown::HashTable`] behind its own `RwLock`: a call on a key it holds
//! takes the read lock and one compare-and-swap on the key's state, a new key or a removal the
//! write lock. Besides its table, each shard keeps what it knows of its soonest keys:
//!
//! - **notes**: up to [`NOTES`] keys (their state when noted and their hash) known to be among
//!   its soonest, found by hash without a scan (states only grow between notes, so a noted state
//!   is a lower bound of the key's state now);
//! - **floor**: every other key's state is at or after `floor` or `lowered`;
//! - **lowered**: the least state a refund lowered a key to since the shard's current pass began
//!   (a refund holds the read lock, so it cannot write the notes);
//! - **a pass**: a cursor over the table's buckets, advanced only when a new key needs room and
//!   the notes cannot answer; it drops an idle key as soon as it finds one (so that call returns
//!   at once) and, when it reaches the end, its own soonest keys become the notes.
//!
//! Keys are kept in the smallest form that tells them apart: an [`IpKey`] for an IPv4 address
//! or an IPv6 prefix of at most 64 bits in 8 bytes (a map of its own); every other key as it
//! is. An entry is the key and its 8-byte state (and its tier, when there are tiers), with no
//! wrapper.
//!
//! The least of the three is the shard's **bound** (a lower bound of every state in it), which
//! the map keeps in a dense array so that the soonest shard is found in a few hundred loads, and
//! the least of all bounds in `earliest`. The shard count grows with `max_keys` (one per 820
//! keys, at most 4,096), so one pass over one shard is a small fraction of a large map, and a
//! full map's tables sit near 80 % full instead of anywhere from 44 % to 88 %.

use std::any::{Any, TypeId};
use std::hash::Hash;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use ahash::RandomState;
use hashbrown::HashTable;

use super::IpKey;
use super::KeyEntry;
use super::ip::Packed;

/// Soonest keys a shard notes by hash.
pub(super) const NOTES: usize = 4;

/// A key noted with its state then (a lower bound of its state now) and its hash.
#[derive(Clone, Copy, Debug)]
struct Note {
    tat: u64,
    hash: u64,
}

/// Up to [`NOTES`] notes, soonest first.
#[derive(Clone, Copy, Debug)]
struct Notes {
    len: usize,
    at: [Note; NOTES],
}

impl Notes {
    const EMPTY: Notes = Notes {
        len: 0,
        at: [Note { tat: 0, hash: 0 }; NOTES],
    };

    /// The soonest noted state (`u64::MAX` when none).
    fn first(&self) -> u64 {
        if self.len == 0 {
            u64::MAX
        } else {
            self.at[0].tat
        }
    }

    /// Whether a note of `tat` would be kept.
    fn would_keep(&self, tat: u64) -> bool {
        self.len < NOTES || tat < self.at[NOTES - 1].tat
    }

    /// Adds `note`; returns the state of the note it drops (the latest) when full.
    #[inline(always)]
    fn add(&mut self, note: Note) -> Option<u64> {
        if self.len == NOTES && note.tat >= self.at[NOTES - 1].tat {
            return Some(note.tat); // the usual case: a key later than every note
        }
        self.insert(note)
    }

    /// [`add`](Self::add) of a note that is kept.
    #[inline(never)]
    fn insert(&mut self, note: Note) -> Option<u64> {
        let mut dropped = None;
        if self.len == NOTES {
            dropped = Some(self.at[NOTES - 1].tat);
            self.len -= 1;
        }
        let mut i = self.len;
        while i > 0 && self.at[i - 1].tat > note.tat {
            self.at[i] = self.at[i - 1];
            i -= 1;
        }
        self.at[i] = note;
        self.len += 1;
        dropped
    }

    /// Drops the soonest note and returns it.
    fn pop_first(&mut self) -> Option<Note> {
        if self.len == 0 {
            return None;
        }
        let first = self.at[0];
        self.at.copy_within(1..self.len, 0);
        self.len -= 1;
        Some(first)
    }
}

/// One shard's table and what it knows of its soonest keys (see the module docs).
struct Part<K, I> {
    table: HashTable<(K, KeyEntry<I>)>,
    notes: Notes,
    floor: u64,
    /// The next bucket the current pass looks at.
    cursor: usize,
    /// The soonest keys the current pass has seen so far (and keys put in since it began).
    next: Notes,
    /// Every other key the current pass has seen was at or after this.
    rest: u64,
}

struct Shard<K, I> {
    part: RwLock<Part<K, I>>,
    /// The least state a refund (under the read lock) lowered a key to since this shard's pass
    /// began; keys put in or changed under the write lock are noted instead.
    lowered: AtomicU64,
}

/// What looking for room in one shard found.
pub(super) enum Found {
    /// An idle key was dropped.
    Freed,
    /// No key is idle; the soonest is idle at this instant (exact: a key has this state now).
    Exact(u64),
    /// The shard holds no key.
    Empty,
}

/// What the whole map found for a new key.
pub(super) enum Room {
    /// An idle key was dropped (or the map holds none to drop): try again.
    Freed,
    /// Every key held is live; the soonest is idle at this instant.
    Soonest(u64),
    /// The map holds no key (those counted in are still on their way).
    Busy,
}

/// Which shard the map last found room in, and the soonest key it last proved (instant, shard).
struct Look {
    hint: usize,
    known: Option<(u64, usize)>,
}

/// A sharded map of keys (of one form) to entries, with per-shard bounds for finding room
/// (module docs).
pub(super) struct Shards<K, I> {
    shards: Box<[Shard<K, I>]>,
    /// Each shard's bound: no state in it is earlier.
    bounds: Box<[AtomicU64]>,
    /// No state in the map is earlier: the least bound, kept as keys go in or are lowered.
    earliest: AtomicU64,
    hasher: RandomState,
    /// How many shards.
    count: u64,
    look: Mutex<Look>,
    /// Buckets passes have looked at, for tests that bound a call's work.
    #[cfg(test)]
    pub(super) visited: AtomicU64,
}

/// Keys a shard is sized for: 820 of the 896 a table of 1,024 buckets holds before it grows, so
/// that at `max_keys` (the most the map ever holds) nearly every shard still fits in 1,024
/// buckets: the spread of keys over shards (about 29 at this count) stays under the margin for
/// all but a few shards in a thousand, which grow to 2,048.
const PER_SHARD: usize = 820;

/// The shard count for `max_keys`: enough shards of [`PER_SHARD`] keys to hold `max_keys` (a
/// table that doubles as it grows sits at 44 % to 88 % full; sized this way, a full map sits near
/// 80 %), at least four per core (as dashmap), at most 4,096. A pass over one shard is then about
/// 1,024 buckets, and a look at every shard's bound a few thousand loads at most.
///
/// A `max_keys` beyond [`NEVER_FULL`] is taken as no bound: such a map never fills (its keys would
/// not fit in memory), so it never looks for room, and gets dashmap's four shards per core
/// rather than thousands of small tables that each grow from nothing.
fn shard_count(max_keys: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let wanted = if max_keys > NEVER_FULL {
        0
    } else {
        max_keys.div_ceil(PER_SHARD)
    };
    (4 * cores).max(wanted).min(4096)
}

/// Keys no map holds in memory (at 16 bytes an entry, over 68 GB).
const NEVER_FULL: usize = 1 << 32;

/// `a` lowered to `b` if `b` is less: a load first, so that keys going in later than the bound
/// (the usual case) write nothing shared.
#[inline]
fn lower(a: &AtomicU64, b: u64) {
    if b < a.load(Ordering::SeqCst) {
        a.fetch_min(b, Ordering::SeqCst);
    }
}

impl<K: Hash + Eq + Clone, I> Shards<K, I> {
    /// An empty map sharded for `max_keys`, hashing with `hasher`.
    pub(super) fn new(max_keys: usize, hasher: RandomState) -> Self {
        let count = shard_count(max_keys);
        Shards {
            shards: (0..count)
                .map(|_| Shard {
                    part: RwLock::new(Part {
                        table: HashTable::new(),
                        notes: Notes::EMPTY,
                        floor: u64::MAX,
                        cursor: 0,
                        next: Notes::EMPTY,
                        rest: u64::MAX,
                    }),
                    lowered: AtomicU64::new(u64::MAX),
                })
                .collect(),
            bounds: (0..count).map(|_| AtomicU64::new(u64::MAX)).collect(),
            earliest: AtomicU64::new(u64::MAX),
            hasher,
            count: count as u64,
            look: Mutex::new(Look {
                hint: 0,
                known: None,
            }),
            #[cfg(test)]
            visited: AtomicU64::new(0),
        }
    }

    #[inline(always)]
    fn hash(&self, key: &K) -> u64 {
        self.hasher.hash_one(key)
    }

    /// The shard of `hash`: 32 bits from the middle of it scaled to the shard count (a multiply,
    /// no division), away from the bits the table uses for its buckets (the low ones) and its
    /// tags (the top seven).
    #[inline(always)]
    fn shard(&self, hash: u64) -> usize {
        ((u64::from((hash >> 24) as u32) * self.count) >> 32) as usize
    }

    #[inline(always)]
    fn read_part(&self, s: usize) -> RwLockReadGuard<'_, Part<K, I>> {
        self.shards[s]
            .part
            .read()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn write_part(&self, s: usize) -> RwLockWriteGuard<'_, Part<K, I>> {
        self.shards[s]
            .part
            .write()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// How many shards.
    #[cfg(test)]
    pub(super) fn shards(&self) -> usize {
        self.shards.len()
    }

    /// `f` of `key`'s entry under its shard's read lock if the map holds it, else the key's hash
    /// (for [`upsert`](Self::upsert): a new key hashed once).
    #[inline(always)]
    pub(super) fn read_hashed<R>(
        &self,
        key: &K,
        f: impl FnOnce(&KeyEntry<I>) -> R,
    ) -> Result<R, u64> {
        let hash = self.hash(key);
        let part = self.read_part(self.shard(hash));
        match part.table.find(hash, |(k, _)| k == key) {
            Some((_, e)) => Ok(f(e)),
            None => Err(hash),
        }
    }

    /// `f` of `key`'s entry under its shard's read lock; when `f` says it lowered the state (a
    /// refund) to some instant, the shard's bound is lowered with it before the lock is let go.
    pub(super) fn read_lowering<R>(
        &self,
        key: &K,
        f: impl FnOnce(&KeyEntry<I>) -> (R, Option<u64>),
    ) -> Option<R> {
        let hash = self.hash(key);
        let s = self.shard(hash);
        let part = self.read_part(s);
        let (_, entry) = part.table.find(hash, |(k, _)| k == key)?;
        let (result, lowered) = f(entry);
        if let Some(tat) = lowered {
            lower(&self.shards[s].lowered, tat);
            lower(&self.bounds[s], tat);
            lower(&self.earliest, tat);
        }
        Some(result)
    }

    /// `f` of `key`'s entry under its shard's write lock, if the map holds it; the entry's state
    /// afterwards is noted (it may have been lowered: a tier change).
    pub(super) fn write<R>(&self, key: &K, f: impl FnOnce(&mut KeyEntry<I>) -> R) -> Option<R> {
        let hash = self.hash(key);
        let s = self.shard(hash);
        let mut guard = self.write_part(s);
        let part = &mut *guard;
        let (_, entry) = part.table.find_mut(hash, |(k, _)| k == key)?;
        let result = f(entry);
        let tat = entry.tat();
        self.note(s, part, tat, hash);
        Some(result)
    }

    /// Under `key`'s shard's write lock: `f` of its entry if held, or of `None`, in which case
    /// the entry `f` returns (if any) is put in. The entry's state afterwards is noted. `hash`,
    /// when given, is the key's (from [`read_hashed`](Self::read_hashed)).
    pub(super) fn upsert<R>(
        &self,
        key: &K,
        hash: Option<u64>,
        f: impl FnOnce(Option<&mut KeyEntry<I>>) -> (Option<KeyEntry<I>>, R),
    ) -> R {
        let hash = hash.unwrap_or_else(|| self.hash(key));
        let s = self.shard(hash);
        let mut guard = self.write_part(s);
        let part = &mut *guard;
        // A table with no room left grows (or rehashes) as it is asked for a key's slot: its
        // entries move, so the pass under way starts again.
        if part.table.len() == part.table.capacity() {
            self.restart(s, part);
        }
        let hasher = &self.hasher;
        let (result, tat) =
            match part
                .table
                .entry(hash, |(k, _)| k == key, |(k, _)| hasher.hash_one(k))
            {
                hashbrown::hash_table::Entry::Occupied(mut held) => {
                    let entry = &mut held.get_mut().1;
                    let (_, result) = f(Some(entry));
                    (result, entry.tat())
                }
                hashbrown::hash_table::Entry::Vacant(vacant) => {
                    let (entry, result) = f(None);
                    let Some(entry) = entry else {
                        return result;
                    };
                    let tat = entry.tat();
                    vacant.insert((key.clone(), entry));
                    (result, tat)
                }
            };
        self.note(s, part, tat, hash);
        result
    }

    /// Notes that a key of shard `s` with hash `hash` has state `tat` (put in, or lowered).
    #[inline(always)]
    fn note(&self, s: usize, part: &mut Part<K, I>, tat: u64, hash: u64) {
        let note = Note { tat, hash };
        if let Some(dropped) = part.notes.add(note) {
            part.floor = part.floor.min(dropped);
        }
        // A pass not begun yet will see the key itself.
        if part.cursor > 0
            && let Some(dropped) = part.next.add(note)
        {
            part.rest = part.rest.min(dropped);
        }
        // Earlier than the shard's bound: its bound and the map's go down (usually a key goes in
        // later, and this is skipped). `lowered` is for refunds, which cannot write the notes.
        if tat < self.bounds[s].load(Ordering::SeqCst) {
            self.publish(s, part);
            lower(&self.earliest, tat);
        }
    }

    /// Writes shard `s`'s bound (under its write lock: no reader lowers it meanwhile), and
    /// answers it.
    fn publish(&self, s: usize, part: &Part<K, I>) -> u64 {
        let lowered = self.shards[s].lowered.load(Ordering::SeqCst);
        let bound = part.notes.first().min(part.floor).min(lowered);
        self.bounds[s].store(bound, Ordering::SeqCst);
        bound
    }

    /// Starts shard `s`'s pass again from its first bucket; what `lowered` said is kept in
    /// `floor`.
    fn restart(&self, s: usize, part: &mut Part<K, I>) {
        let lowered = self.shards[s].lowered.swap(u64::MAX, Ordering::SeqCst);
        part.floor = part.floor.min(lowered);
        part.cursor = 0;
        part.next = Notes::EMPTY;
        part.rest = u64::MAX;
    }

    /// Looks for room in shard `s`, with `idle` telling an idle state (at the caller's now):
    /// first the noted keys that are due, then the pass from where it stopped. Drops at most one key. The work
    /// is a few lookups by hash, or the rest of one pass over this shard (two at most: a second
    /// when the first ends with a state lowered meanwhile that no note points to).
    fn refresh(&self, s: usize, idle: impl Fn(u64) -> bool) -> Found {
        let mut guard = self.write_part(s);
        let part = &mut *guard;
        // The noted keys that may be idle: drop one if it is; else forget the note, its key's
        // state now kept in `floor`.
        while part.notes.len > 0 && idle(part.notes.first()) {
            let Some(Note { hash, .. }) = part.notes.pop_first() else {
                break;
            };
            let dropped = match part.table.find_entry(hash, |(_, e)| idle(e.tat())) {
                Ok(entry) => {
                    entry.remove();
                    true
                }
                Err(_) => false,
            };
            for (_, e) in part.table.iter_hash(hash) {
                part.floor = part.floor.min(e.tat());
            }
            if dropped {
                self.publish(s, part);
                return Found::Freed;
            }
        }
        let mut passes = 0;
        loop {
            let bound = self.publish(s, part);
            if part.table.is_empty() {
                // Nothing to know: no bound (no reader lowers `lowered` with no key to refund).
                part.notes = Notes::EMPTY;
                part.floor = u64::MAX;
                self.restart(s, part);
                part.floor = u64::MAX;
                self.bounds[s].store(u64::MAX, Ordering::SeqCst);
                return Found::Empty;
            }
            if !idle(bound) && part.notes.first() == bound {
                let hash = part.notes.at[0].hash;
                if part.table.iter_hash(hash).any(|(_, e)| e.tat() == bound) {
                    return Found::Exact(bound);
                }
                // Its key was used since: forget the note (its state is later now).
                part.notes.pop_first();
                for (_, e) in part.table.iter_hash(hash) {
                    part.floor = part.floor.min(e.tat());
                }
                continue;
            }
            if passes == 2 {
                // Cannot happen (no state is lowered while the write lock is held, and a
                // complete pass notes the soonest key); answered safely all the same.
                return Found::Exact(bound.max(1));
            }
            // The pass, from where it stopped.
            let buckets = part.table.num_buckets();
            while part.cursor < buckets {
                let i = part.cursor;
                part.cursor += 1;
                #[cfg(test)]
                self.visited.fetch_add(1, Ordering::Relaxed);
                if let Ok(entry) = part.table.get_bucket_entry(i) {
                    let tat = entry.get().1.tat();
                    if idle(tat) {
                        entry.remove();
                        self.publish(s, part);
                        return Found::Freed;
                    }
                    if part.next.would_keep(tat) {
                        let hash = self.hasher.hash_one(&entry.get().0);
                        if let Some(dropped) = part.next.add(Note { tat, hash }) {
                            part.rest = part.rest.min(dropped);
                        }
                    } else {
                        part.rest = part.rest.min(tat);
                    }
                }
            }
            // The pass is complete: every key it saw, or put in or changed under the write lock
            // since it began, is noted or at or after `rest`; every key refunded since, at or
            // after `lowered`.
            part.notes = part.next;
            part.floor = part.rest;
            self.restart(s, part);
            passes += 1;
        }
    }

    /// Looks for room for a new key, `idle` telling an idle state (one call at a time): drops one idle key if there
    /// is one, else answers when the soonest key is idle, exactly.
    ///
    /// The shard `for_key` goes to is looked at first, then the shard that last had room, then
    /// the soonest key last proved (if no state went earlier since, it is still the soonest),
    /// then the shard of least bound, as many times as it takes: a shard's look either drops an
    /// idle key or proves its soonest state, which is the map's when no other bound is earlier.
    pub(super) fn find_room(&self, idle: impl Fn(u64) -> bool + Copy, for_key: Option<&K>) -> Room {
        let mut look = self.look.lock().unwrap_or_else(PoisonError::into_inner);
        // First the new key's own shard: room made there is room its table keeps (a table with
        // no room left would grow, all at once, to take the key).
        if let Some(key) = for_key {
            let own = self.shard(self.hash(key));
            if idle(self.bounds[own].load(Ordering::SeqCst))
                && let Found::Freed = self.refresh(own, idle)
            {
                return Room::Freed;
            }
        }
        let hint = look.hint;
        if idle(self.bounds[hint].load(Ordering::SeqCst))
            && let Found::Freed = self.refresh(hint, idle)
        {
            return Room::Freed;
        }
        if let Some((tat, s)) = look.known
            && !idle(tat)
            && self.earliest.load(Ordering::SeqCst) >= tat
        {
            match self.refresh(s, idle) {
                Found::Exact(exact) if exact == tat => return Room::Soonest(tat),
                Found::Freed => {
                    look.hint = s;
                    return Room::Freed;
                }
                _ => {}
            }
        }
        look.known = None;
        // Every bound is looked at afresh: keys put in meanwhile lower `earliest` again after
        // their shard's bound, so none is missed.
        self.earliest.store(u64::MAX, Ordering::SeqCst);
        loop {
            let (mut least, mut at) = (u64::MAX, 0);
            for (s, bound) in self.bounds.iter().enumerate() {
                let bound = bound.load(Ordering::SeqCst);
                if bound < least {
                    (least, at) = (bound, s);
                }
            }
            if least == u64::MAX {
                return Room::Busy;
            }
            match self.refresh(at, idle) {
                Found::Freed => {
                    lower(&self.earliest, least);
                    look.hint = at;
                    return Room::Freed;
                }
                Found::Exact(tat) => {
                    // The soonest of all if no other shard's bound is earlier.
                    let earlier = self
                        .bounds
                        .iter()
                        .enumerate()
                        .any(|(s, b)| s != at && b.load(Ordering::SeqCst) < tat);
                    if !earlier {
                        lower(&self.earliest, tat);
                        look.known = Some((tat, at));
                        return Room::Soonest(tat);
                    }
                }
                Found::Empty => {}
            }
        }
    }

    /// Drops every idle key; returns how many it dropped. Each shard's bound becomes its least
    /// state left, with no note: the next look for room there passes over it once.
    pub(super) fn drop_idle(&self, idle: impl Fn(u64) -> bool) -> usize {
        let mut dropped = 0;
        for s in 0..self.shards.len() {
            let mut guard = self.write_part(s);
            let part = &mut *guard;
            let mut least = u64::MAX;
            part.table.retain(|(_, e)| {
                let tat = e.tat();
                if idle(tat) {
                    dropped += 1;
                    false
                } else {
                    least = least.min(tat);
                    true
                }
            });
            part.notes = Notes::EMPTY;
            part.floor = least;
            self.restart(s, part);
            part.table.shrink_to(0, |(k, _)| self.hasher.hash_one(k));
            self.publish(s, part);
        }
        self.look
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .known = None;
        dropped
    }

    /// Runs `change` (which may move any state earlier: a reconfigure converting every key
    /// under the read locks) with no look for room under way, then forgets what the shards knew
    /// of their soonest keys: each bound becomes the least state, with no note.
    pub(super) fn changing(&self, change: impl FnOnce()) {
        let mut look = self.look.lock().unwrap_or_else(PoisonError::into_inner);
        change();
        for s in 0..self.shards.len() {
            let mut guard = self.write_part(s);
            let part = &mut *guard;
            let least = part
                .table
                .iter()
                .map(|(_, e)| e.tat())
                .min()
                .unwrap_or(u64::MAX);
            part.notes = Notes::EMPTY;
            part.floor = least;
            self.restart(s, part);
            self.publish(s, part);
            lower(&self.earliest, least);
        }
        look.known = None;
    }

    /// `f` of every key and entry, each shard under its read lock.
    pub(super) fn for_each(&self, mut f: impl FnMut(&K, &KeyEntry<I>)) {
        for s in 0..self.shards.len() {
            let part = self.read_part(s);
            for (key, entry) in part.table.iter() {
                f(key, entry);
            }
        }
    }
}

/// A key's form in the map: an [`IpKey`] packed when it can be, every other key whole.
enum Form<'a, K> {
    Packed(u64),
    Whole(&'a K),
}

/// The map of a [`KeyedRateLimiter`](super::KeyedRateLimiter): keys of each form in a sharded
/// map of their own (the usual form's made with it, the other on first use), the random hash
/// keys shared.
pub(super) struct Store<K, I> {
    // Boxed: a limiter stays small to hold (an enum of limiters, a struct of several).
    whole: OnceLock<Box<Shards<K, I>>>,
    packed: OnceLock<Box<Shards<u64, I>>>,
    max_keys: usize,
    hasher: RandomState,
}

/// `f` applied to the one sharded map of `$key`'s form, with the key in that form.
macro_rules! by_form {
    ($store:expr, $key:expr, |$map:ident, $k:ident| $body:expr) => {
        match Store::<K, I>::form($key) {
            Form::Packed(packed) => {
                let ($map, $k) = ($store.packed(), &packed);
                $body
            }
            Form::Whole(key) => {
                let ($map, $k) = ($store.whole(), key);
                $body
            }
        }
    };
}

impl<K: Hash + Eq + Clone + 'static, I> Store<K, I> {
    /// An empty map for at most `max_keys` keys, hashing with random keys drawn for this process.
    pub(super) fn new(max_keys: usize) -> Self {
        let store = Store {
            whole: OnceLock::new(),
            packed: OnceLock::new(),
            max_keys,
            hasher: RandomState::new(),
        };
        // The map keys usually go to made now, not by the first call: an IP key's packed form
        // (whole IP keys are rare: IPv6 by a prefix above 64, or in `::/32`), any other key's
        // whole form.
        if TypeId::of::<K>() == TypeId::of::<IpKey>() {
            store.packed();
        } else {
            store.whole();
        }
        store
    }

    /// `key`'s form (the test of the key's type is settled at compile time).
    #[inline(always)]
    fn form(key: &K) -> Form<'_, K> {
        match (key as &dyn Any).downcast_ref::<IpKey>().map(IpKey::packed) {
            Some(Packed::Bits(bits)) => Form::Packed(bits),
            _ => Form::Whole(key),
        }
    }

    /// The key a packed form stands for (`K` is [`IpKey`] whenever a packed map holds keys).
    fn unpack(ip: IpKey, f: &mut impl FnMut(&K)) {
        if let Some(key) = (&ip as &dyn Any).downcast_ref::<K>() {
            f(key);
        }
    }

    #[inline(always)]
    fn whole(&self) -> &Shards<K, I> {
        self.whole
            .get_or_init(|| Box::new(Shards::new(self.max_keys, self.hasher.clone())))
    }

    #[inline(always)]
    fn packed(&self) -> &Shards<u64, I> {
        self.packed
            .get_or_init(|| Box::new(Shards::new(self.max_keys, self.hasher.clone())))
    }

    /// Buckets the passes of every form's map have looked at.
    #[cfg(test)]
    pub(super) fn visited(&self) -> u64 {
        self.whole
            .get()
            .map_or(0, |m| m.visited.load(Ordering::Relaxed))
            + self
                .packed
                .get()
                .map_or(0, |m| m.visited.load(Ordering::Relaxed))
    }

    /// Shards of a map of one form.
    #[cfg(test)]
    pub(super) fn shards(&self) -> usize {
        self.whole().shards()
    }

    /// See [`Shards::read_hashed`]: the miss carries the key's hash in its form's map.
    #[inline(always)]
    pub(super) fn read_hashed<R>(
        &self,
        key: &K,
        f: impl FnOnce(&KeyEntry<I>) -> R,
    ) -> Result<R, u64> {
        by_form!(self, key, |map, k| map.read_hashed(k, f))
    }

    /// See [`Shards::read_lowering`].
    pub(super) fn read_lowering<R>(
        &self,
        key: &K,
        f: impl FnOnce(&KeyEntry<I>) -> (R, Option<u64>),
    ) -> Option<R> {
        by_form!(self, key, |map, k| map.read_lowering(k, f))
    }

    /// See [`Shards::write`].
    pub(super) fn write<R>(&self, key: &K, f: impl FnOnce(&mut KeyEntry<I>) -> R) -> Option<R> {
        by_form!(self, key, |map, k| map.write(k, f))
    }

    /// See [`Shards::upsert`] (`hash` from [`read_hashed`](Self::read_hashed) of the same key).
    pub(super) fn upsert<R>(
        &self,
        key: &K,
        hash: Option<u64>,
        f: impl FnOnce(Option<&mut KeyEntry<I>>) -> (Option<KeyEntry<I>>, R),
    ) -> R {
        by_form!(self, key, |map, k| map.upsert(k, hash, f))
    }

    /// See [`Shards::find_room`]: one idle key dropped from any form's map, else the soonest key
    /// of all, exactly (each map's soonest is exact).
    pub(super) fn find_room(&self, idle: impl Fn(u64) -> bool + Copy, for_key: Option<&K>) -> Room {
        let (whole_key, packed_key) = match for_key.map(Self::form) {
            Some(Form::Whole(key)) => (Some(key), None),
            Some(Form::Packed(bits)) => (None, Some(bits)),
            None => (None, None),
        };
        let mut soonest: Option<u64> = None;
        let mut look = |room| match room {
            Room::Freed => true,
            Room::Soonest(tat) => {
                soonest = Some(soonest.map_or(tat, |s| s.min(tat)));
                false
            }
            Room::Busy => false,
        };
        if self
            .whole
            .get()
            .is_some_and(|m| look(m.find_room(idle, whole_key)))
            || self
                .packed
                .get()
                .is_some_and(|m| look(m.find_room(idle, packed_key.as_ref())))
        {
            return Room::Freed;
        }
        soonest.map_or(Room::Busy, Room::Soonest)
    }

    /// See [`Shards::drop_idle`].
    pub(super) fn drop_idle(&self, idle: impl Fn(u64) -> bool + Copy) -> usize {
        self.whole.get().map_or(0, |m| m.drop_idle(idle))
            + self.packed.get().map_or(0, |m| m.drop_idle(idle))
    }

    /// See [`Shards::changing`]: `change` runs with no look for room under way in any form's map.
    pub(super) fn changing(&self, change: impl FnOnce()) {
        let packed = |c: &mut dyn FnMut()| match self.packed.get() {
            Some(m) => m.changing(c),
            None => c(),
        };
        let mut change = Some(change);
        let mut run = || {
            packed(&mut || {
                if let Some(change) = change.take() {
                    change();
                }
            })
        };
        match self.whole.get() {
            Some(m) => m.changing(&mut run),
            None => run(),
        }
    }

    /// `f` of every key and entry, each shard under its read lock.
    pub(super) fn for_each(&self, mut f: impl FnMut(&K, &KeyEntry<I>)) {
        if let Some(m) = self.whole.get() {
            m.for_each(&mut f);
        }
        if let Some(m) = self.packed.get() {
            m.for_each(|&bits, entry| Self::unpack(IpKey::unpack(bits), &mut |k| f(k, entry)));
        }
    }
}
