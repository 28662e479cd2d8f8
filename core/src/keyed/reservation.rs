//! [`KeyReservation`]: permits one key holds for its slot, [`Held`] over the key's state, for
//! every keyed store (ritmo-core's fixed table and ritmo-std's sharded map).

use core::hash::Hash;
use core::time::Duration;

use super::limiter::Keyed;
use super::rules::Taken;
use super::store::KeyedStore;
use super::tiers::sealed::Sealed;
use crate::error::{RateLimitExceeded, Reason};
use crate::event::Event;
use crate::reservation::{Held, Holder};

/// Permits for one key, taken now or reserved for a slot: commit it when the work runs, or let it
/// go. Dropping or [`cancel`](Held::cancel)ling it before it is committed returns the
/// permits if no later call for the same key was made since; otherwise its slot stays unused.
///
/// ```
/// # use core::time::Duration;
/// # use ritmo::{Config, ManualClock};
/// # use ritmo::keyed::KeyedLimiter;
/// let c = Config::new(1, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(5));
/// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", c, ManualClock::new(), 0);
/// let a = l.reserve(&1).unwrap();
/// let b = l.reserve(&1).unwrap();
/// assert!(!a.cancel()); // b is queued behind it
/// assert!(b.cancel());
/// # Ok::<(), ritmo::ConfigError>(())
/// ```
pub type KeyReservation<'a, K, L> = Held<&'a L, KeyCharge<K>>;

/// What a reservation on a keyed limiter charged (its key, the state it wrote and what it added,
/// on its tier): the `T` of its [`Held`], opaque, named only to spell a reservation's type with
/// another handle (ritmo-std's `OwnedKeyedReservation<K, C, P>`).
#[derive(Debug)]
pub struct KeyCharge<K> {
    key: K,
    written: u64,
    increment: u64,
    tier: u8,
    /// The limiter's generation of config when the call was decided: a refund after a change
    /// returns nothing (it is no longer the newest; the change may have left the state
    /// equal to what it wrote, under numbers its increment no longer matches).
    generation: u32,
}

impl<'a, K: Hash + Eq + Clone + 'static, S: KeyedStore<K>> KeyReservation<'a, K, Keyed<K, S>> {
    /// A reservation of `permits` on `key` that `taken` made, adding `increment` to its state
    /// (0: nothing to give back), on the tier at `tier` (0 for one tier).
    pub(crate) fn of(
        limiter: &'a Keyed<K, S>,
        key: K,
        taken: Taken,
        increment: u64,
        permits: u32,
        tier: u8,
        generation: u32,
    ) -> Self {
        let charge = KeyCharge {
            generation,
            key,
            written: taken.written,
            increment,
            tier,
        };
        Held::new(limiter, charge, taken.slot, taken.wait, permits)
    }

    /// The key it is for.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::keyed::KeyedLimiter;
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", Config::new(1, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// assert_eq!(*l.reserve(&3).unwrap().key(), 3);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn key(&self) -> &K {
        &self.charge().key
    }
}

impl<K: Hash + Eq + Clone + 'static, S: KeyedStore<K>> Holder<KeyCharge<K>> for Keyed<K, S> {
    type Clock = S::Clock;
    const KIND: &'static str = "KeyedReservation";

    fn holder_id(&self) -> &'static str {
        self.rules.key_rate().id()
    }

    fn holder_clock(&self) -> &S::Clock {
        self.rules.key_rate().clock()
    }

    fn units_now(&self) -> u64 {
        self.rules.key_rate().now()
    }

    fn wait_duration(&self, units: u64) -> Duration {
        self.rules.key_rate().duration(units)
    }

    fn reading_ceil(&self, units: u64) -> u64 {
        self.rules.key_rate().reading(units)
    }

    fn refusal(&self, reason: Reason, wait: u64) -> RateLimitExceeded {
        self.rules.key_rate().rejected(reason, wait)
    }

    fn charged(charge: &KeyCharge<K>) -> bool {
        charge.increment != 0
    }

    fn give_back(&self, charge: &KeyCharge<K>) -> bool {
        let generation = charge.generation;
        self.rules.key_rate().changed_at() <= generation
            && self.rules.tiers().changed_at(charge.tier) <= generation
            && self.store.refund_key(
                &self.rules,
                &charge.key,
                charge.written,
                charge.increment,
                charge.tier,
            )
    }

    fn publish_release(&self, charge: &KeyCharge<K>, event: Event) {
        self.rules.publish_key(&charge.key, event);
    }
}
