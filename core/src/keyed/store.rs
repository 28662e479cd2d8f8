//! [`KeyedStore`]: where a keyed limiter's key states live (ritmo-core's fixed table, ritmo-std's
//! sharded map), and what a store answers: [`Taken`](super::Taken) for a call, [`Peek`] for a read.

use super::key_rules::KeyRules;
use super::rules::{Taken, TierRules};
use super::tiers::TierSet;
use crate::clock::Clock;
use crate::error::RateLimitExceeded;

/// Where a keyed limiter's key states live, under the verbs every keyed limiter shares
/// ([`Keyed`](super::Keyed), implemented for every store). Implemented by ritmo-core's fixed
/// [`KeyedLimiter`](super::KeyedLimiter) and ritmo-std's sharded `KeyedRateLimiter`.
///
/// Shaped like governor's `StateStore`: a store keeps one [`KeyCell`](super::KeyCell) per key
/// and decides nothing itself. It finds or inserts a key and hands its cell to its
/// [`KeyRules`] ([`take`](Self::take), with [`KeyRules::decide`] or
/// [`KeyRules::decide_locked`]), gives a reservation back ([`refund_key`](Self::refund_key),
/// with [`KeyRules::refund`]), reads a key's state ([`peek`](Self::peek)), and counts and drops
/// the keys it holds.
pub trait KeyedStore<K: 'static> {
    /// The clock the limiter reads.
    type Clock: Clock;
    /// How a key's tier is picked (`OneTier` for one config).
    type Tiers: TierSet<K>;
    /// The rules every key follows, which decide each call on a key's cell.
    fn key_rules(&self) -> &KeyRules<K, Self::Clock, Self::Tiers>;
    /// Decides one call for `k` permits (already checked) on `tier` that may wait `max_wait`
    /// units, on `key`'s state (found or put in), and writes what it took.
    fn take(
        &self,
        key: &K,
        tier: <Self::Tiers as TierSet<K>>::Index,
        k: u32,
        max_wait: u64,
    ) -> Result<Taken, RateLimitExceeded>;
    /// Gives back what a reservation on tier `tier` (0 for one tier) wrote (`written`, having
    /// added `increment`) if `key` was not changed since; whether it went back.
    fn refund_key(&self, key: &K, written: u64, increment: u64, tier: u8) -> bool;
    /// What the store holds for `key` on `tier` now, changing no state (a store may reclaim idle
    /// keys meanwhile: that changes no decision).
    fn peek(&self, key: &K, tier: <Self::Tiers as TierSet<K>>::Index) -> Peek;
    /// Keys being limited right now (not idle): [`Keyed::len`](super::Keyed::len).
    fn live_count(&self) -> usize;
    /// Keys held, live or idle and not yet reclaimed: [`Keyed::keys_held`](super::Keyed::keys_held).
    fn held_count(&self) -> usize;
    /// The most keys it holds at once: [`Keyed::capacity`](super::Keyed::capacity).
    fn key_capacity(&self) -> usize;
    /// Drops every idle key; the keys left: [`Keyed::reclaim_idle`](super::Keyed::reclaim_idle).
    fn drop_idle(&self) -> usize;

    /// One permit for `key` on `tier` now (the call `try_acquire` makes once its tier is
    /// picked); a store may answer it by a faster path of its own, deciding as
    /// [`take`](Self::take) would.
    #[inline]
    fn take_one(
        &self,
        key: &K,
        tier: <Self::Tiers as TierSet<K>>::Index,
    ) -> Result<(), RateLimitExceeded> {
        if !self.key_rules().enabled(tier) {
            return Ok(());
        }
        self.take(key, tier, 1, 0).map(|_| ())
    }
}

/// What a keyed store holds for a key now: the numbers of its tier, the instant, and the key's
/// state or why it has none.
#[derive(Debug, Clone, Copy)]
pub struct Peek {
    /// The numbers of the key's tier, as the store read them.
    pub rules: TierRules,
    /// The clock's reading, in units.
    pub now: u64,
    /// The key's state.
    pub key: Peeked,
}

/// A key's state in a [`Peek`].
#[derive(Debug, Clone, Copy)]
pub enum Peeked {
    /// Held: its state, carried over to the tier asked about.
    State(u64),
    /// Not held, and there is room for it: it would start with a full burst.
    Absent,
    /// Not held, and no room for it for this many units.
    NoRoom(u64),
}
