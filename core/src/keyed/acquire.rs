//! Taking permits from a [`KeyedLimiter`]: at once, by reservation within `max_wait`, or waiting
//! with a [`Wait`]; a key's tier picked for each call and a key that changed tier carried over.

use core::hash::Hash;
use core::time::Duration;

use super::front::{self, KeyedStore, Peek, Peeked};
use super::rate::KeyRate;
use super::rules::TierRules;
use super::table::Probe;
use super::table::Slot;
use super::{KeyListener, KeyedLimiter, KeyedReservation, Taken, TierSet};
use crate::clock::{Clock, ManualTime};
use crate::error::{AcquireError, RateLimitExceeded, Reason};
use crate::wait::{AdvanceClock, Wait};

impl<K: Hash + Eq + Clone, C: Clock, const N: usize, P: TierSet<K>> KeyedLimiter<K, C, N, P> {
    /// The state of the key in `slot` as of a call on `tier` (whose numbers are `rules`) at
    /// `now`: carried over to `tier` if the key changed tier since its state was made.
    #[inline(always)]
    pub(super) fn view(
        &self,
        slot: &Slot<K, P::Index>,
        tier: P::Index,
        rules: &TierRules,
        now: u64,
    ) -> u64 {
        if slot.tier == tier {
            slot.tat
        } else {
            self.rules(slot.tier).carry(slot.tat, now, rules)
        }
    }

    /// Takes one permit for `key` if it is there now; never waits. A key never seen gets a full
    /// burst; a key the table has no room for is refused with [`Reason::KeyCapacity`].
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::keyed::KeyedLimiter;
    /// let l: KeyedLimiter<&str, _, 8> = KeyedLimiter::with_clock("x", Config::new(1, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// assert!(l.try_acquire(&"a").is_ok());
    /// assert!(l.try_acquire(&"a").is_err());
    /// assert!(l.try_acquire(&"b").is_ok()); // its own quota
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    #[inline]
    pub fn try_acquire(&self, key: &K) -> Result<(), RateLimitExceeded> {
        front::try_acquire(self, key)
    }

    /// Takes `k` permits for `key` as one unit if they are all there now. `k = 0` and
    /// `k > permits` are [`AcquireError::InvalidPermits`].
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{AcquireError, Config, ManualClock};
    /// # use ritmo::keyed::KeyedLimiter;
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// assert!(l.try_acquire_n(&1, 3).is_ok());
    /// assert!(matches!(l.try_acquire_n(&1, 2), Err(AcquireError::RateLimited(_))));
    /// assert!(matches!(l.try_acquire_n(&1, 5), Err(AcquireError::InvalidPermits(_))));
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn try_acquire_n(&self, key: &K, k: u32) -> Result<(), AcquireError> {
        front::try_acquire_n(self, key, k)
    }

    /// Takes one permit for `key` now, or reserves its next one if it arrives within the config's
    /// `max_wait`; otherwise rejects at once without changing anything. Dropping or cancelling the
    /// reservation before it is committed returns the permit if no later call for the key was made.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::keyed::KeyedLimiter;
    /// let c = Config::new(2, Duration::from_secs(1))?.with_max_wait(Duration::from_millis(500));
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", c, ManualClock::new(), 0);
    /// l.try_acquire_n(&1, 2).unwrap();
    /// let r = l.reserve(&1).unwrap();
    /// assert_eq!(r.wait_time(), Duration::from_millis(500));
    /// assert!(l.reserve(&1).is_err()); // would wait a second
    /// assert!(r.cancel()); // the permit goes back
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn reserve(&self, key: &K) -> Result<KeyedReservation<'_, K, C, N, P>, RateLimitExceeded> {
        front::reserve(self, key)
    }

    /// Like [`reserve`](Self::reserve), for `k` permits taken as one unit.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::keyed::KeyedLimiter;
    /// let c = Config::new(4, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", c, ManualClock::new(), 0);
    /// l.try_acquire_n(&1, 4).unwrap();
    /// assert_eq!(l.reserve_n(&1, 2).unwrap().wait_time(), Duration::from_millis(500));
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn reserve_n(
        &self,
        key: &K,
        k: u32,
    ) -> Result<KeyedReservation<'_, K, C, N, P>, AcquireError> {
        front::reserve_n(self, key, k, None)
    }

    /// Like [`reserve_n`](Self::reserve_n), with this call's own `max_wait`.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::keyed::KeyedLimiter;
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", Config::new(1, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// l.try_acquire(&1).unwrap();
    /// assert!(l.reserve_n_within(&1, 1, Duration::from_millis(999)).is_err());
    /// assert!(l.reserve_n_within(&1, 1, Duration::from_secs(1)).is_ok());
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn reserve_n_within(
        &self,
        key: &K,
        k: u32,
        max_wait: Duration,
    ) -> Result<KeyedReservation<'_, K, C, N, P>, AcquireError> {
        front::reserve_n(self, key, k, Some(max_wait))
    }

    /// Takes one permit for `key`, waiting for it with `waiter` if it arrives within `max_wait`.
    /// If the waiter is interrupted the permit goes back (when no later call for the key was
    /// made) and the call fails with [`Reason::Interrupted`].
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{AdvanceClock, Clock, Config, ManualClock};
    /// # use ritmo::keyed::KeyedLimiter;
    /// let clock = ManualClock::new();
    /// let c = Config::new(1, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", c, &clock, 0);
    /// l.acquire_with(&1, &mut AdvanceClock).unwrap();
    /// l.acquire_with(&1, &mut AdvanceClock).unwrap();
    /// assert_eq!(clock.now(), 1_000_000_000);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn acquire_with<W: Wait<C> + ?Sized>(
        &self,
        key: &K,
        waiter: &mut W,
    ) -> Result<(), RateLimitExceeded> {
        self.reserve(key)?.wait_with(waiter)
    }

    /// Takes `k` permits for `key` as one unit, waiting with `waiter` as
    /// [`acquire_with`](Self::acquire_with).
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{AdvanceClock, Clock, Config, ManualClock};
    /// # use ritmo::keyed::KeyedLimiter;
    /// let clock = ManualClock::new();
    /// let c = Config::new(4, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", c, &clock, 0);
    /// l.acquire_n_with(&1, 4, &mut AdvanceClock).unwrap();
    /// l.acquire_n_with(&1, 2, &mut AdvanceClock).unwrap();
    /// assert_eq!(clock.now(), 500_000_000);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn acquire_n_with<W: Wait<C> + ?Sized>(
        &self,
        key: &K,
        k: u32,
        waiter: &mut W,
    ) -> Result<(), AcquireError> {
        Ok(self.reserve_n(key, k)?.wait_with(waiter)?)
    }
}

/// The fixed table as a keyed store: each call one critical section.
impl<K: Hash + Eq + Clone, C: Clock, const N: usize, P: TierSet<K>> KeyedStore<K>
    for KeyedLimiter<K, C, N, P>
{
    type Clock = C;
    type Tiers = P;

    fn key_rate(&self) -> &KeyRate<C> {
        &self.rate
    }

    fn tiers(&self) -> &P {
        &self.tiers
    }

    fn key_listener(&self) -> Option<&'static dyn KeyListener<K>> {
        self.key_listener
    }

    /// Runs one call on `tier` for `k` permits (already checked) that may wait `max_wait` units.
    #[inline]
    fn take(
        &self,
        key: &K,
        tier: P::Index,
        k: u32,
        max_wait: u64,
    ) -> Result<Taken, RateLimitExceeded> {
        let reading = self.rate.now();
        let result = self.table.with(|t| {
            let now = t.observe(reading);
            let rules = self.rules(tier);
            let (tat, at) = match t.probe(key, now) {
                Probe::Found(i) => {
                    if t.slots[i].tier != tier {
                        // The key changed tier: reconfigured now, alone, whatever this call's
                        // outcome; never below where a key not held starts on its new tier.
                        let fresh = t.fresh(&rules);
                        let slot = &mut t.slots[i];
                        slot.tat = self.view(slot, tier, &rules, now).max(fresh);
                        slot.tier = tier;
                        t.lowered(i);
                    }
                    (t.slots[i].tat, Ok(i))
                }
                Probe::Vacant(i) => (t.fresh(&rules), Err(i)),
                Probe::Full { soonest } => return Err((Reason::KeyCapacity, soonest - now)),
            };
            let (new_tat, wait) = match rules.decide(tat, now, k, max_wait) {
                super::Decision::Now { new_tat } => (new_tat, 0),
                super::Decision::Wait { new_tat, wait } => (new_tat, wait),
                super::Decision::Reject { wait } => return Err((Reason::NoPermitInTime, wait)),
            };
            match at {
                Ok(i) => t.slots[i].tat = new_tat,
                Err(i) => t.insert_at(i, key.clone(), new_tat, tier),
            }
            Ok(Taken {
                written: new_tat,
                slot: now.saturating_add(wait),
                wait,
            })
        });
        self.granted(key, result)
    }

    fn peek(&self, key: &K, tier: P::Index) -> Peek {
        let reading = self.rate.now();
        self.table.with(|t| {
            let now = t.observe(reading);
            // The numbers under the table's lock: a reconfigure converts the keys under it.
            let rules = self.rules(tier);
            let key = match t.probe(key, now) {
                Probe::Found(i) => {
                    let slot = &t.slots[i];
                    let tat = self.view(slot, tier, &rules, now);
                    if slot.tier == tier {
                        Peeked::State(tat)
                    } else {
                        // as a call would carry it over (`take`)
                        Peeked::State(tat.max(t.fresh(&rules)))
                    }
                }
                Probe::Vacant(_) => match t.fresh(&rules) {
                    0 => Peeked::Absent,
                    fresh => Peeked::State(fresh),
                },
                Probe::Full { soonest } => Peeked::NoRoom(soonest - now),
            };
            Peek { rules, now, key }
        })
    }

    /// Gives back what a reservation on tier `tier` took, if the key was not changed since.
    fn refund_key(&self, key: &K, written: u64, increment: u64, tier: u8) -> bool {
        let reading = self.rate.now();
        self.table.with(|t| {
            let now = t.observe(reading);
            match t.probe(key, now) {
                // Changed tier since: its state was carried over, the reservation's slot with it.
                Probe::Found(i) if !self.tiers.refundable(t.slots[i].tier, tier) => false,
                Probe::Found(i) => match self.rate.refund(t.slots[i].tat, written, increment) {
                    Some(back) => {
                        // Never below where a key not held starts (after a restore).
                        let fresh = t.fresh(&self.rules(t.slots[i].tier));
                        t.slots[i].tat = back.max(fresh);
                        t.lowered(i);
                        true
                    }
                    None => false,
                },
                // Reclaimed: it was idle, its permits all back already.
                Probe::Vacant(_) | Probe::Full { .. } => written <= now,
            }
        })
    }
}

impl<K: Hash + Eq + Clone, C: ManualTime, const N: usize, P: TierSet<K>> KeyedLimiter<K, C, N, P> {
    /// Takes one permit for `key`, waiting for it by advancing the fake clock to its slot: tests
    /// never sleep.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{Clock, Config, ManualClock};
    /// # use ritmo::keyed::KeyedLimiter;
    /// let clock = ManualClock::new();
    /// let c = Config::new(2, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", c, &clock, 0);
    /// for _ in 0..3 { l.acquire_advancing(&1).unwrap(); }
    /// assert_eq!(clock.now(), 500_000_000);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn acquire_advancing(&self, key: &K) -> Result<(), RateLimitExceeded> {
        self.acquire_with(key, &mut AdvanceClock)
    }

    /// Takes `k` permits for `key`, advancing the fake clock to their slot if they must wait.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{Clock, Config, ManualClock};
    /// # use ritmo::keyed::KeyedLimiter;
    /// let clock = ManualClock::new();
    /// let c = Config::new(4, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", c, &clock, 0);
    /// l.acquire_n_advancing(&1, 4).unwrap();
    /// l.acquire_n_advancing(&1, 4).unwrap();
    /// assert_eq!(clock.now(), 1_000_000_000);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn acquire_n_advancing(&self, key: &K, k: u32) -> Result<(), AcquireError> {
        self.acquire_n_with(key, k, &mut AdvanceClock)
    }
}
