//! [`KeyedStore`]: where a keyed limiter's key states live (ritmo-core's fixed table, ritmo-std's
//! sharded map), what a store answers ([`Taken`](super::Taken) for a call, [`Peek`] for a read),
//! and how a limiter builds one ([`NewStore`], [`ClockedStore`]).

use super::key_rules::KeyRules;
use super::rules::{Taken, TierRules};
use super::tiers::TierSet;
use crate::clock::Clock;
use crate::error::RateLimitExceeded;

/// The rules a store's keys follow: the [`KeyRules`] of its [`Keyed`](super::Keyed) limiter.
pub type StoreRules<K, S> = KeyRules<K, <S as KeyedStore<K>>::Clock, <S as KeyedStore<K>>::Tiers>;

/// Converts the states of the keys a store holds on one tier (its position; `None`: every key)
/// by the conversion of one state: what a store's [`change`](KeyedStore::change) hands the
/// change.
pub type ConvertKeys<'a> = dyn FnMut(Option<u8>, &dyn Fn(u64) -> u64) + 'a;

/// A change of the numbers in force, run by a store's [`change`](KeyedStore::change) with the
/// clock's reading in units and the store's [`ConvertKeys`].
pub type KeysChange<'a> = dyn FnMut(u64, &mut ConvertKeys<'_>) + 'a;

/// Where a keyed limiter's key states live: the `S` of [`Keyed<K, S>`](super::Keyed), whose
/// verbs are written once over it. Implemented by ritmo-core's heap-free
/// [`FixedTable`](super::FixedTable) and ritmo-std's sharded map; a store of a user's own (a
/// compact map, a persistent one) implements it and is put to work with
/// [`Keyed::from_parts`](super::Keyed::from_parts).
///
/// Shaped like governor's `StateStore`: a store keeps one state per key and decides nothing
/// itself. Each method gets the limiter's [`KeyRules`]: it finds or inserts a key and hands its
/// state to them ([`take`](Self::take), with [`KeyRules::decide`] or
/// [`KeyRules::decide_locked`]), gives a reservation back ([`refund_key`](Self::refund_key), with
/// [`KeyRules::refund`]), reads a key's state ([`peek`](Self::peek)), holds every key still while
/// the numbers change ([`change`](Self::change)), and counts and drops the keys it holds.
pub trait KeyedStore<K: 'static>: Sized {
    /// The clock the limiter reads.
    type Clock: Clock;
    /// How a key's tier is picked (`OneTier` for one config).
    type Tiers: TierSet<K>;
    /// What [`live_keys`](Self::live_keys) gives: a list of [`KeySnapshot`](super::KeySnapshot)s.
    type LiveKeys;
    /// Decides one call for `k` permits (already checked) on `tier` that may wait `max_wait`
    /// units, on `key`'s state (found or put in), and writes what it took.
    fn take(
        &self,
        rules: &StoreRules<K, Self>,
        key: &K,
        tier: <Self::Tiers as TierSet<K>>::Index,
        k: u32,
        max_wait: u64,
    ) -> Result<Taken, RateLimitExceeded>;
    /// Gives back what a reservation on tier `tier` (0 for one tier) wrote (`written`, having
    /// added `increment`) if `key` was not changed since; whether it went back.
    fn refund_key(
        &self,
        rules: &StoreRules<K, Self>,
        key: &K,
        written: u64,
        increment: u64,
        tier: u8,
    ) -> bool;
    /// What the store holds for `key` on `tier` now, changing no state (a store may reclaim idle
    /// keys meanwhile: that changes no decision).
    fn peek(
        &self,
        rules: &StoreRules<K, Self>,
        key: &K,
        tier: <Self::Tiers as TierSet<K>>::Index,
    ) -> Peek;
    /// Keys being limited right now (not idle): [`Keyed::len`](super::Keyed::len).
    fn live_count(&self, rules: &StoreRules<K, Self>) -> usize;
    /// Keys being limited right now, each with the permits it would pass now:
    /// [`Keyed::live_keys`](super::Keyed::live_keys).
    fn live_keys(&self, rules: &StoreRules<K, Self>) -> Self::LiveKeys;
    /// Keys held, live or idle and not yet reclaimed: [`Keyed::keys_held`](super::Keyed::keys_held).
    fn held_count(&self) -> usize;
    /// The most keys it holds at once: [`Keyed::capacity`](super::Keyed::capacity).
    fn key_capacity(&self) -> usize;
    /// Drops every idle key; the keys left: [`Keyed::reclaim_idle`](super::Keyed::reclaim_idle).
    fn drop_idle(&self, rules: &StoreRules<K, Self>) -> usize;
    /// Holds every key still (no call on any key decided, one change at a time) while `change`
    /// runs, giving it the clock's reading in units and a way to convert states: called with a
    /// tier's position (`None`: every key) and the conversion of one state, it applies it to
    /// every key held on that tier. For `reconfigure` and `set_tier_config`.
    fn change(&self, rules: &StoreRules<K, Self>, change: &mut KeysChange<'_>);

    /// One permit for `key` on `tier` now (the call `try_acquire` makes once its tier is
    /// picked); a store may answer it by a faster path of its own, deciding as
    /// [`take`](Self::take) would.
    #[inline]
    fn take_one(
        &self,
        rules: &StoreRules<K, Self>,
        key: &K,
        tier: <Self::Tiers as TierSet<K>>::Index,
    ) -> Result<(), RateLimitExceeded> {
        if !rules.enabled(tier) {
            return Ok(());
        }
        self.take(rules, key, tier, 1, 0).map(|_| ())
    }
}

/// A store that a keyed limiter builds for itself on a clock it is given:
/// `Keyed::with_clock(id, config, args, clock)` and `Keyed::tiered_with_clock(id, tiers, args,
/// clock)` (`R`: a [`Config`](crate::Config) or [`Tiers`](super::Tiers)).
pub trait ClockedStore<R>: Sized {
    /// What the store is built from besides the rules and the clock (the map: its most keys).
    type Args;
    /// An empty store.
    fn new_store(args: Self::Args) -> Self;
}

/// A store whose limiter can also pick its own clock: `Keyed::new(id, config, args)` and
/// `Keyed::tiered(id, tiers, args)`. ritmo-std's map implements it once, for its default clock,
/// so `KeyedRateLimiter::new("api", config, 100_000)` needs no type written.
pub trait NewStore<R>: ClockedStore<R> {
    /// The clock it reads when none is given.
    type DefaultClock;
    /// A new clock of that kind.
    fn default_clock() -> Self::DefaultClock;
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
