//! Taking permits from a [`KeyedRateLimiter`]: a known key under its shard's read lock (one
//! compare-and-swap), a key that changed tier carried over under the write lock, a new key put in
//! within `max_keys`; reservations and waits with a [`Wait`].

use std::hash::Hash;
use std::sync::atomic::Ordering;
use std::time::Duration;

use ritmo_core::keyed::front::{self, KeyedStore};
use ritmo_core::keyed::{Decision, Taken, TierRules, TierSet};
use ritmo_core::{AcquireError, Clock, RateLimitExceeded, Reason, Wait};

use super::reclaim::Room;
use super::{KeyEntry, KeyedRateLimiter, KeyedReservation};

impl<K: Hash + Eq + Clone, C: Clock, P: TierSet<K>> KeyedRateLimiter<K, C, P> {
    /// Runs one call on `tier` for `k` permits (already checked) that may wait `max_wait` units.
    #[inline]
    pub(super) fn take_key(
        &self,
        key: &K,
        tier: P::Index,
        k: u32,
        max_wait: u64,
    ) -> Result<Taken, RateLimitExceeded> {
        let now = self.rate.now();
        // A known key: the shard's read lock, held across one compare-and-swap, so that no
        // removal (which takes the write lock) can drop the key between our read and our write.
        match self.map.read_hashed(key, |state| {
            (state.tier == tier).then(|| self.apply(state, tier, now, k, max_wait))
        }) {
            Ok(Some(decision)) => self.granted(key, Taken::of(decision, now)),
            Ok(None) => self.take_moved(key, tier, now, k, max_wait),
            Err(hash) => self.take_new(key, Some(hash), tier, k, now, max_wait),
        }
    }

    /// The state of `entry` as of a call on `tier` (numbers `rules`) at `now`: carried over to
    /// `tier` if its key changed tier since its state was made.
    #[inline(always)]
    pub(super) fn view(
        &self,
        entry: &KeyEntry<P::Index>,
        tier: P::Index,
        rules: &TierRules,
        now: u64,
    ) -> u64 {
        if entry.tier == tier {
            entry.tat()
        } else {
            self.rules(entry.tier).carry(entry.tat(), now, rules)
        }
    }

    /// Decides a call on `tier` for the key whose state is `state`.
    #[inline(always)]
    pub(super) fn apply(
        &self,
        state: &KeyEntry<P::Index>,
        tier: P::Index,
        now: u64,
        k: u32,
        max_wait: u64,
    ) -> Decision {
        match self.tiers.rules(tier, false) {
            None => state.apply(&self.rate, now, k, max_wait),
            // The numbers read at each try, after the state: a change (of a tier too) converts
            // the states first, so numbers read after one is seen are the ones it published.
            Some(_) => state.apply_rules(|| self.rules(tier), now, k, max_wait),
        }
    }

    /// A call for a known key whose tier changed (or a new key, if it is gone meanwhile).
    #[cold]
    fn take_moved(
        &self,
        key: &K,
        tier: P::Index,
        now: u64,
        k: u32,
        max_wait: u64,
    ) -> Result<Taken, RateLimitExceeded> {
        match self.take_changed(key, tier, now, k, max_wait) {
            Some(decision) => self.granted(key, Taken::of(decision, now)),
            None => self.take_new(key, None, tier, k, now, max_wait),
        }
    }

    /// A known key whose tier changed: carried over to `tier` (the single limiter's
    /// `reconfigure` rule, at `now`) under its shard's write lock, and the call decided there.
    /// `None` if the key is gone (dropped as idle meanwhile).
    #[cold]
    fn take_changed(
        &self,
        key: &K,
        tier: P::Index,
        now: u64,
        k: u32,
        max_wait: u64,
    ) -> Option<Decision> {
        // The numbers before the write lock, as for a new key: a change converting the keys
        // needs that lock, so under it the numbers are read as they are. The state afterwards is
        // noted by the map: the key may be idle sooner than it last knew (a faster tier).
        loop {
            let settled = self.rate.settled();
            let decided = self.map.write(key, |entry| {
                if !self.rate.still(&settled) {
                    return None;
                }
                let to = self.rules_held(tier);
                if entry.tier != tier {
                    let from = self.rules_held(entry.tier);
                    entry.convert(&|tat| from.carry(tat, now, &to));
                    entry.tier = tier;
                }
                Some(entry.apply_rules(|| to, now, k, max_wait))
            })?;
            if let Some(decision) = decided {
                return Some(decision);
            }
        }
    }

    /// A key not in the map: make room for it if need be, then put it in. `hash` is the key's
    /// hash in the map if the caller has it.
    #[cold]
    fn take_new(
        &self,
        key: &K,
        hash: Option<u64>,
        tier: P::Index,
        k: u32,
        now: u64,
        max_wait: u64,
    ) -> Result<Taken, RateLimitExceeded> {
        loop {
            if self.claim() {
                // The config's numbers before the shard's write lock: a reconfigure converting
                // the keys needs that lock, so under it this call must not wait for one.
                let settled = self.rate.settled();
                let decision = self.map.upsert(key, hash, |held| {
                    if !self.rate.still(&settled) {
                        // A reconfigure started meanwhile: decide again with its numbers.
                        self.held.fetch_sub(1, Ordering::AcqRel);
                        return (None, None);
                    }
                    // With the shard locked, no earlier than any instant a key was dropped at: a
                    // key dropped after our clock read gets a fresh state that never starts
                    // before the old one ended.
                    let now = now.max(self.evicted_at.load(Ordering::SeqCst));
                    let decide = |state: &KeyEntry<P::Index>| match self.tiers.rules(tier, false) {
                        None => state.apply_settled(&self.rate, &settled, now, k, max_wait),
                        Some(_) => state.apply_rules(|| self.rules_held(tier), now, k, max_wait),
                    };
                    match held {
                        Some(state) => {
                            // Another thread put it in meanwhile.
                            self.held.fetch_sub(1, Ordering::AcqRel);
                            if state.tier != tier {
                                // On another tier: carried over, under the shard's write lock.
                                let (from, to) =
                                    (self.rules_held(state.tier), self.rules_held(tier));
                                state.convert(&|tat| from.carry(tat, now, &to));
                                state.tier = tier;
                            }
                            (None, Some((decide(state), now)))
                        }
                        None => {
                            let state = KeyEntry::new(tier);
                            let decision = decide(&state);
                            if let Decision::Reject { .. } = decision {
                                self.held.fetch_sub(1, Ordering::AcqRel);
                                (None, Some((decision, now)))
                            } else {
                                (Some(state), Some((decision, now)))
                            }
                        }
                    }
                });
                match decision {
                    Some((decision, now)) => return self.granted(key, Taken::of(decision, now)),
                    None => continue,
                }
            }
            match self.make_room(false, Some(key)) {
                Room::Yes => continue,
                Room::No(wait) => return Err(self.refused(key, Reason::KeyCapacity, wait)),
            }
        }
    }

    /// Takes one permit for `key` if it is there now; never waits. A key never seen gets a full
    /// burst; a new key the map has no room for is refused with [`Reason::KeyCapacity`].
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::server::KeyedRateLimiter;
    /// let l = KeyedRateLimiter::with_clock("x", Config::new(1, Duration::from_secs(1))?, 10, ManualClock::new());
    /// assert!(l.try_acquire(&"a").is_ok());
    /// assert!(l.try_acquire(&"a").is_err());
    /// assert!(l.try_acquire(&"b").is_ok());
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    #[inline]
    pub fn try_acquire(&self, key: &K) -> Result<(), RateLimitExceeded> {
        let tier = self.pick(key)?;
        // Reconfigured (or a tier changed live): decide with the numbers in force at each try.
        let Some(config) = self.rate.unchanged_rules() else {
            return self.try_acquire_changed(key, tier);
        };
        let rules = self.tiers.rules(tier, false).unwrap_or(config);
        if !rules.enabled() {
            return Ok(());
        }
        let now = self.rate.now();
        // The read lock held across one compare-and-swap, as in `take`.
        match self.map.read_hashed(key, |state| {
            (state.tier == tier).then(|| state.try_take_unchanged(&self.rate, &rules, now))
        }) {
            Ok(Some(Some(Ok(())))) => {
                self.rate.count_granted(0);
                Ok(())
            }
            Ok(Some(Some(Err(wait)))) => Err(self.refused(key, Reason::NoPermitInTime, wait)),
            // Changed meanwhile, or lost a race: the path that reads the numbers afresh.
            Ok(Some(None)) => self.try_acquire_changed(key, tier),
            Ok(None) => self.take_moved(key, tier, now, 1, 0).map(|_| ()),
            Err(hash) => self.take_new(key, Some(hash), tier, 1, now, 0).map(|_| ()),
        }
    }

    /// [`try_acquire`](Self::try_acquire) on a limiter a `reconfigure` changed.
    #[cold]
    fn try_acquire_changed(&self, key: &K, tier: P::Index) -> Result<(), RateLimitExceeded> {
        if !self.rules(tier).enabled() {
            return Ok(());
        }
        self.take_key(key, tier, 1, 0).map(|_| ())
    }

    /// Takes `k` permits for `key` as one unit if they are all there now. `k = 0` and
    /// `k > permits` are [`AcquireError::InvalidPermits`].
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo::{AcquireError, Config, ManualClock};
    /// # use ritmo::server::KeyedRateLimiter;
    /// let l = KeyedRateLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, 10, ManualClock::new());
    /// assert!(l.try_acquire_n(&1u8, 3).is_ok());
    /// assert!(matches!(l.try_acquire_n(&1, 2), Err(AcquireError::RateLimited(_))));
    /// assert!(matches!(l.try_acquire_n(&1, 5), Err(AcquireError::InvalidPermits(_))));
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn try_acquire_n(&self, key: &K, k: u32) -> Result<(), AcquireError> {
        front::try_acquire_n(self, key, k)
    }

    /// Takes one permit for `key` now, or reserves its next one if it arrives within the config's
    /// `max_wait`; otherwise rejects at once without changing anything.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::server::KeyedRateLimiter;
    /// let c = Config::new(2, Duration::from_secs(1))?.with_max_wait(Duration::from_millis(500));
    /// let l = KeyedRateLimiter::with_clock("x", c, 10, ManualClock::new());
    /// l.try_acquire_n(&1u8, 2).unwrap();
    /// let r = l.reserve(&1).unwrap();
    /// assert_eq!(r.wait_time(), Duration::from_millis(500));
    /// assert!(l.reserve(&1).is_err());
    /// assert!(r.cancel());
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn reserve(&self, key: &K) -> Result<KeyedReservation<'_, K, C, P>, RateLimitExceeded> {
        front::reserve(self, key)
    }

    /// Like [`reserve`](Self::reserve), for `k` permits taken as one unit.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::server::KeyedRateLimiter;
    /// let c = Config::new(4, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l = KeyedRateLimiter::with_clock("x", c, 10, ManualClock::new());
    /// l.try_acquire_n(&1u8, 4).unwrap();
    /// assert_eq!(l.reserve_n(&1, 2).unwrap().wait_time(), Duration::from_millis(500));
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn reserve_n(
        &self,
        key: &K,
        k: u32,
    ) -> Result<KeyedReservation<'_, K, C, P>, AcquireError> {
        front::reserve_n(self, key, k, None)
    }

    /// Like [`reserve_n`](Self::reserve_n), with this call's own `max_wait`.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::server::KeyedRateLimiter;
    /// let l = KeyedRateLimiter::with_clock("x", Config::new(1, Duration::from_secs(1))?, 10, ManualClock::new());
    /// l.try_acquire(&1u8).unwrap();
    /// assert!(l.reserve_n_within(&1, 1, Duration::from_millis(999)).is_err());
    /// assert!(l.reserve_n_within(&1, 1, Duration::from_secs(1)).is_ok());
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn reserve_n_within(
        &self,
        key: &K,
        k: u32,
        max_wait: Duration,
    ) -> Result<KeyedReservation<'_, K, C, P>, AcquireError> {
        front::reserve_n(self, key, k, Some(max_wait))
    }

    /// Takes one permit for `key`, waiting for it with `waiter` if it arrives within `max_wait`.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo::{AdvanceClock, Clock, Config, ManualClock};
    /// # use ritmo::server::KeyedRateLimiter;
    /// let clock = ManualClock::new();
    /// let c = Config::new(1, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l = KeyedRateLimiter::with_clock("x", c, 10, &clock);
    /// l.acquire_with(&1u8, &mut AdvanceClock).unwrap();
    /// l.acquire_with(&1u8, &mut AdvanceClock).unwrap();
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

    /// Takes `k` permits for `key`, waiting with `waiter` as [`acquire_with`](Self::acquire_with).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo::{AdvanceClock, Clock, Config, ManualClock};
    /// # use ritmo::server::KeyedRateLimiter;
    /// let clock = ManualClock::new();
    /// let c = Config::new(4, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l = KeyedRateLimiter::with_clock("x", c, 10, &clock);
    /// l.acquire_n_with(&1u8, 4, &mut AdvanceClock).unwrap();
    /// l.acquire_n_with(&1u8, 2, &mut AdvanceClock).unwrap();
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

    /// Gives back what a reservation on tier `tier` took, if the key was not changed since.
    pub(super) fn refund(&self, key: &K, written: u64, increment: u64, tier: u8) -> bool {
        let held = self.map.read_lowering(key, |state| {
            // Changed tier since: its state was carried over, the reservation's slot with it.
            if !self.tiers.refundable(state.tier, tier) {
                return (false, None);
            }
            let back = state.refund(&self.rate, written, increment);
            // The key may now be idle sooner than the map last knew.
            (back, back.then(|| state.tat()))
        });
        // Not held: dropped as idle, its permits were all back already.
        held.unwrap_or_else(|| self.rate.is_idle(written, self.rate.now()))
    }
}

/// Waits that advance a fake clock: tests never sleep.
impl<K: Hash + Eq + Clone, C: ritmo_core::ManualTime, P: TierSet<K>> KeyedRateLimiter<K, C, P> {
    /// Takes one permit for `key`, waiting for it by advancing the fake clock to its slot.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo::{Clock, Config, ManualClock};
    /// # use ritmo::server::KeyedRateLimiter;
    /// let clock = ManualClock::new();
    /// let c = Config::new(2, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l = KeyedRateLimiter::with_clock("x", c, 10, &clock);
    /// for _ in 0..3 { l.acquire_advancing(&1u8).unwrap(); }
    /// assert_eq!(clock.now(), 500_000_000);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn acquire_advancing(&self, key: &K) -> Result<(), RateLimitExceeded> {
        self.acquire_with(key, &mut ritmo_core::AdvanceClock)
    }

    /// Takes `k` permits for `key`, advancing the fake clock to their slot if they must wait.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ritmo::{Clock, Config, ManualClock};
    /// # use ritmo::server::KeyedRateLimiter;
    /// let clock = ManualClock::new();
    /// let c = Config::new(4, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l = KeyedRateLimiter::with_clock("x", c, 10, &clock);
    /// l.acquire_n_advancing(&1u8, 4).unwrap();
    /// l.acquire_n_advancing(&1u8, 4).unwrap();
    /// assert_eq!(clock.now(), 1_000_000_000);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn acquire_n_advancing(&self, key: &K, k: u32) -> Result<(), AcquireError> {
        self.acquire_n_with(key, k, &mut ritmo_core::AdvanceClock)
    }
}
