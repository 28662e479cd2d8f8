//! Taking permits from a [`KeyedLimiter`]: at once, by reservation within `max_wait`, or waiting
//! with a [`Wait`]; a key's tier picked for each call and a key that changed tier carried over.

use core::hash::Hash;
use core::time::Duration;

use super::rate;
use super::table::Probe;
use super::{KeyedLimiter, KeyedReservation, Taken, TierSet};
use crate::clock::{Clock, ManualTime};
use crate::error::{AcquireError, RateLimitExceeded, Reason};
use crate::wait::{AdvanceClock, Wait};

impl<K: Hash + Eq + Clone, C: Clock, const N: usize, P: TierSet<K>> KeyedLimiter<K, C, N, P> {
    /// Runs one call on `tier` for `k` permits (already checked) that may wait `max_wait` units.
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
                    let slot = &mut t.slots[i];
                    if slot.tier != tier {
                        // The key changed tier: reconfigured now, alone, whatever this call's
                        // outcome.
                        slot.tat = self.view(slot, tier, &rules, now);
                        slot.tier = tier;
                    }
                    (slot.tat, Ok(i))
                }
                Probe::Vacant(i) => (0, Err(i)),
                Probe::Full { soonest } => return Err((Reason::KeyCapacity, soonest - now)),
            };
            let (new_tat, wait) = match rules.decide(tat, now, k, max_wait) {
                rate::Decision::Now { new_tat } => (new_tat, 0),
                rate::Decision::Wait { new_tat, wait } => (new_tat, wait),
                rate::Decision::Reject { wait } => return Err((Reason::NoPermitInTime, wait)),
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
        match result {
            Ok(taken) => {
                self.rate.count_granted(taken.wait);
                Ok(taken)
            }
            Err((reason, wait)) => Err(self.refused(key, reason, wait)),
        }
    }

    /// Takes one permit for `key` if it is there now; never waits. A key never seen gets a full
    /// burst; a key the table has no room for is refused with [`Reason::KeyCapacity`].
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let l: KeyedLimiter<&str, _, 8> = KeyedLimiter::with_clock("x", Config::new(1, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// assert!(l.try_acquire(&"a").is_ok());
    /// assert!(l.try_acquire(&"a").is_err());
    /// assert!(l.try_acquire(&"b").is_ok()); // its own quota
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    #[inline]
    pub fn try_acquire(&self, key: &K) -> Result<(), RateLimitExceeded> {
        let tier = self.pick(key)?;
        if !self.rules(tier).enabled() {
            return Ok(());
        }
        self.take(key, tier, 1, 0).map(|_| ())
    }

    /// Takes `k` permits for `key` as one unit if they are all there now. `k = 0` and
    /// `k > permits` are [`AcquireError::InvalidPermits`].
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo_core::{AcquireError, Config, ManualClock};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// assert!(l.try_acquire_n(&1, 3).is_ok());
    /// assert!(matches!(l.try_acquire_n(&1, 2), Err(AcquireError::RateLimited(_))));
    /// assert!(matches!(l.try_acquire_n(&1, 5), Err(AcquireError::InvalidPermits(_))));
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn try_acquire_n(&self, key: &K, k: u32) -> Result<(), AcquireError> {
        let tier = self.pick(key)?;
        let rules = self.rules(tier);
        rules.check_permits(self.id(), k)?;
        if !rules.enabled() {
            return Ok(());
        }
        self.take(key, tier, k, 0)?;
        Ok(())
    }

    /// Takes one permit for `key` now, or reserves its next one if it arrives within the config's
    /// `max_wait`; otherwise rejects at once without changing anything. Dropping or cancelling the
    /// reservation before it is committed returns the permit if no later call for the key was made.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let c = Config::new(2, Duration::from_secs(1))?.with_max_wait(Duration::from_millis(500));
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", c, ManualClock::new(), 0);
    /// l.try_acquire_n(&1, 2).unwrap();
    /// let r = l.reserve(&1).unwrap();
    /// assert_eq!(r.wait_time(), Duration::from_millis(500));
    /// assert!(l.reserve(&1).is_err()); // would wait a second
    /// assert!(r.cancel()); // the permit goes back
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn reserve(&self, key: &K) -> Result<KeyedReservation<'_, K, C, N, P>, RateLimitExceeded> {
        let tier = self.pick(key)?;
        self.reserve_valid(key, tier, 1, self.rules(tier).max_wait())
    }

    /// Like [`reserve`](Self::reserve), for `k` permits taken as one unit.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let c = Config::new(4, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", c, ManualClock::new(), 0);
    /// l.try_acquire_n(&1, 4).unwrap();
    /// assert_eq!(l.reserve_n(&1, 2).unwrap().wait_time(), Duration::from_millis(500));
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn reserve_n(
        &self,
        key: &K,
        k: u32,
    ) -> Result<KeyedReservation<'_, K, C, N, P>, AcquireError> {
        self.reserve_units(key, k, None)
    }

    /// Like [`reserve_n`](Self::reserve_n), with this call's own `max_wait`.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", Config::new(1, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// l.try_acquire(&1).unwrap();
    /// assert!(l.reserve_n_within(&1, 1, Duration::from_millis(999)).is_err());
    /// assert!(l.reserve_n_within(&1, 1, Duration::from_secs(1)).is_ok());
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn reserve_n_within(
        &self,
        key: &K,
        k: u32,
        max_wait: Duration,
    ) -> Result<KeyedReservation<'_, K, C, N, P>, AcquireError> {
        self.reserve_units(key, k, Some(self.rate.units(max_wait)))
    }

    /// `max_wait` `None`: the config's (the tier's).
    fn reserve_units(
        &self,
        key: &K,
        k: u32,
        max_wait: Option<u64>,
    ) -> Result<KeyedReservation<'_, K, C, N, P>, AcquireError> {
        let tier = self.pick(key)?;
        let rules = self.rules(tier);
        rules.check_permits(self.id(), k)?;
        let max_wait = max_wait.unwrap_or(rules.max_wait());
        Ok(self.reserve_valid(key, tier, k, max_wait)?)
    }

    fn reserve_valid(
        &self,
        key: &K,
        tier: P::Index,
        k: u32,
        max_wait: u64,
    ) -> Result<KeyedReservation<'_, K, C, N, P>, RateLimitExceeded> {
        if !self.rules(tier).enabled() {
            let now = self.rate.now();
            return Ok(KeyedReservation::new(
                self,
                key.clone(),
                Taken::uncounted(now),
                0,
                k,
            ));
        }
        let taken = self.take(key, tier, k, max_wait)?;
        Ok(
            KeyedReservation::new(self, key.clone(), taken, self.rules(tier).increment(k), k)
                .in_tier(P::position(tier)),
        )
    }

    /// Takes one permit for `key`, waiting for it with `waiter` if it arrives within `max_wait`.
    /// If the waiter is interrupted the permit goes back (when no later call for the key was
    /// made) and the call fails with [`Reason::Interrupted`].
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo_core::{AdvanceClock, Clock, Config, ManualClock};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let clock = ManualClock::new();
    /// let c = Config::new(1, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", c, &clock, 0);
    /// l.acquire_with(&1, &mut AdvanceClock).unwrap();
    /// l.acquire_with(&1, &mut AdvanceClock).unwrap();
    /// assert_eq!(clock.now(), 1_000_000_000);
    /// # Ok::<(), ritmo_core::ConfigError>(())
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
    /// # use ritmo_core::{AdvanceClock, Clock, Config, ManualClock};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let clock = ManualClock::new();
    /// let c = Config::new(4, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", c, &clock, 0);
    /// l.acquire_n_with(&1, 4, &mut AdvanceClock).unwrap();
    /// l.acquire_n_with(&1, 2, &mut AdvanceClock).unwrap();
    /// assert_eq!(clock.now(), 500_000_000);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn acquire_n_with<W: Wait<C> + ?Sized>(
        &self,
        key: &K,
        k: u32,
        waiter: &mut W,
    ) -> Result<(), AcquireError> {
        Ok(self.reserve_n(key, k)?.wait_with(waiter)?)
    }

    /// Gives back what a reservation on tier `tier` took, if the key was not changed since.
    pub(super) fn refund(&self, key: &K, written: u64, increment: u64, tier: u8) -> bool {
        let reading = self.rate.now();
        self.table.with(|t| {
            let now = t.observe(reading);
            match t.probe(key, now) {
                // Changed tier since: its state was carried over, the reservation's slot with it.
                Probe::Found(i) if !self.tiers.refundable(t.slots[i].tier, tier) => false,
                Probe::Found(i) => match self.rate.refund(t.slots[i].tat, written, increment) {
                    Some(back) => {
                        t.slots[i].tat = back;
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
    /// # use ritmo_core::{Clock, Config, ManualClock};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let clock = ManualClock::new();
    /// let c = Config::new(2, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", c, &clock, 0);
    /// for _ in 0..3 { l.acquire_advancing(&1).unwrap(); }
    /// assert_eq!(clock.now(), 500_000_000);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn acquire_advancing(&self, key: &K) -> Result<(), RateLimitExceeded> {
        self.acquire_with(key, &mut AdvanceClock)
    }

    /// Takes `k` permits for `key`, advancing the fake clock to their slot if they must wait.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo_core::{Clock, Config, ManualClock};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let clock = ManualClock::new();
    /// let c = Config::new(4, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", c, &clock, 0);
    /// l.acquire_n_advancing(&1, 4).unwrap();
    /// l.acquire_n_advancing(&1, 4).unwrap();
    /// assert_eq!(clock.now(), 1_000_000_000);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn acquire_n_advancing(&self, key: &K, k: u32) -> Result<(), AcquireError> {
        self.acquire_n_with(key, k, &mut AdvanceClock)
    }
}
