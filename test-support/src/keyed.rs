//! Keyed limiting (SPEC §10, §17): one independent GCRA per key, bounded room for live keys.

use core::time::Duration;
use std::collections::BTreeMap;

use ritmo_core::Config;

use crate::gcra::{Gcra, Refund, Ticket};
use crate::outcome::Outcome;
use crate::units::Units;

/// A reservation the keyed model granted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyedTicket<K> {
    /// Its key.
    pub key: K,
    /// The key's ticket.
    pub ticket: Ticket,
}

/// A keyed limiter: every key a fresh limiter of one config the first time it is seen, never
/// touched by another key's calls, and room for `capacity` live keys.
///
/// A key is live while its state says its burst is not full again (`tat > now`); an idle key
/// carries nothing a fresh one lacks, so the model never forgets a key and decisions are the same
/// whether a limiter dropped it or not. A call for a key that is not live, when `capacity` other
/// keys are, is refused with `KeyCapacity` and `retry_after` = the wait until the soonest live key
/// is idle, to the clock's whole tick (never early: at that instant its slot can be reused; at
/// most one tick late, [`Outcome::allows`]). An invalid `k` is an error before any room is looked
/// for.
///
/// ```
/// use core::time::Duration;
/// use ritmo_core::Config;
/// use ritmo_test_support::{KeyedModel, Outcome, Units};
///
/// let config = Config::new(2, Duration::from_secs(1))?;
/// let mut m = KeyedModel::new(Units::NANOS, config, 1);
/// assert_eq!(m.try_acquire(&1u8, 0, 1), Outcome::Admitted);
/// assert_eq!(
///     m.try_acquire(&2u8, 0, 1),
///     Outcome::NoRoom { retry_after: Duration::from_millis(500) }
/// );
/// # Ok::<(), ritmo_core::ConfigError>(())
/// ```
#[derive(Debug, Clone)]
pub struct KeyedModel<K> {
    units: Units,
    config: Config,
    capacity: usize,
    keys: BTreeMap<K, Gcra>,
    /// How many reconfigures changed the config (every live key's state counts them too).
    epoch: u32,
}

impl<K: Ord + Clone + core::fmt::Debug> KeyedModel<K> {
    /// A keyed limiter of `config` with room for `capacity` live keys.
    pub fn new(units: Units, config: Config, capacity: usize) -> KeyedModel<K> {
        KeyedModel {
            units,
            config,
            capacity,
            keys: BTreeMap::new(),
            epoch: 0,
        }
    }

    /// The clock.
    pub fn units(&self) -> Units {
        self.units
    }

    /// The config every key follows.
    pub fn config(&self) -> Config {
        self.config
    }

    /// `key`'s state (a fresh one if it was never seen).
    pub fn key(&self, key: &K) -> Gcra {
        self.keys
            .get(key)
            .cloned()
            .unwrap_or_else(|| Gcra::new(self.units, self.config))
    }

    /// Whether `key` is being limited at `now` (`tat > now`).
    pub fn is_live(&self, key: &K, now: u64) -> bool {
        self.config.enabled()
            && self
                .keys
                .get(key)
                .is_some_and(|g| g.tat() > self.units.from_ticks(now))
    }

    /// The live keys at `now`, in order, with the permits each has.
    pub fn live_keys(&self, now: u64) -> Vec<(K, u32)> {
        self.keys
            .iter()
            .filter(|(k, _)| self.is_live(k, now))
            .map(|(k, g)| (k.clone(), g.available(now)))
            .collect()
    }

    /// `Some(retry_after)` if a call for `key` at `now` finds no room: `key` is not live and
    /// `capacity` other keys are. `retry_after` is the wait until the soonest of them is idle, to
    /// the whole tick.
    pub fn no_room(&self, key: &K, now: u64) -> Option<Duration> {
        if !self.config.enabled() || self.is_live(key, now) {
            return None;
        }
        let live: Vec<&Gcra> = self
            .keys
            .iter()
            .filter(|(k, _)| self.is_live(k, now))
            .map(|(_, g)| g)
            .collect();
        if live.len() < self.capacity {
            return None;
        }
        let soonest = live.iter().map(|g| g.tat()).min().unwrap_or(0);
        let ticks = self
            .units
            .ticks_ceil(soonest)
            .saturating_sub(u128::from(now));
        Some(self.units.duration(ticks))
    }

    fn state(&mut self, key: &K) -> &mut Gcra {
        let (units, config, epoch) = (self.units, self.config, self.epoch);
        self.keys
            .entry(key.clone())
            .or_insert_with(|| Gcra::new(units, config).with_epoch(epoch))
    }

    /// `try_acquire_n(key, k)` at `now`.
    pub fn try_acquire(&mut self, key: &K, now: u64, k: u32) -> Outcome {
        if !self.key(key).valid(k) {
            return Outcome::Invalid;
        }
        if let Some(retry_after) = self.no_room(key, now) {
            return Outcome::NoRoom { retry_after };
        }
        self.state(key).try_acquire(now, k)
    }

    /// `reserve_n_within(key, k, max_wait)` at `now`.
    pub fn reserve_within(
        &mut self,
        key: &K,
        now: u64,
        k: u32,
        max_wait: Duration,
    ) -> (Outcome, Option<KeyedTicket<K>>) {
        if !self.key(key).valid(k) {
            return (Outcome::Invalid, None);
        }
        if let Some(retry_after) = self.no_room(key, now) {
            return (Outcome::NoRoom { retry_after }, None);
        }
        let (outcome, ticket) = self.state(key).reserve_within(now, k, max_wait);
        let ticket = ticket.map(|ticket| KeyedTicket {
            key: key.clone(),
            ticket,
        });
        (outcome, ticket)
    }

    /// `reserve_n(key, k)` at `now`, with the config's `max_wait`.
    pub fn reserve(&mut self, key: &K, now: u64, k: u32) -> (Outcome, Option<KeyedTicket<K>>) {
        let max_wait = self.config.max_wait();
        self.reserve_within(key, now, k, max_wait)
    }

    /// Cancels `ticket` at `now`; `returned` is the limiter's answer. While the key is live the
    /// tail rule decides. Once it is idle (`tat <= now`) a limiter may have dropped the key and
    /// cannot tell which reservation was the newest; a refund only moves `tat` back, so the key
    /// stays idle and every answer leaves the same decisions: the model takes any.
    pub fn cancel(
        &mut self,
        ticket: &KeyedTicket<K>,
        now: u64,
        returned: bool,
    ) -> Result<(), String> {
        let live = self.is_live(&ticket.key, now);
        let state = self.state(&ticket.key);
        if !live {
            if returned && state.refund(&ticket.ticket) == Refund::Returned {
                state.drop_ticket(&ticket.ticket);
            }
            return Ok(());
        }
        state
            .cancel(&ticket.ticket, returned)
            .map_err(|e| format!("key {:?}: {e}", ticket.key))
    }

    /// Drops (or interrupts) `ticket`.
    pub fn drop_ticket(&mut self, ticket: &KeyedTicket<K>) -> bool {
        self.state(&ticket.key).drop_ticket(&ticket.ticket)
    }

    /// `available_permits(key)` at `now`: 0 when there is no room for it.
    pub fn available(&self, key: &K, now: u64) -> u32 {
        if self.no_room(key, now).is_some() {
            return 0;
        }
        self.key(key).available(now)
    }

    /// `retry_after(key)` at `now`: [`Outcome::NoRoom`] when there is no room for it, else
    /// [`Outcome::Rejected`] with the key's own wait (zero if a permit is there).
    pub fn retry_after(&self, key: &K, now: u64) -> Outcome {
        match self.no_room(key, now) {
            Some(retry_after) => Outcome::NoRoom { retry_after },
            None => Outcome::Rejected {
                retry_after: self.key(key).retry_after(now, 1),
            },
        }
    }

    /// `reconfigure(config)` at `now`: every live key as a single limiter would be (SPEC §14,
    /// issue 20: keyed, every key at once with the same rule). An idle key (its burst full again)
    /// decides every call like a key never seen (SPEC §10: dropping it changes nothing), so it
    /// starts afresh under the new config, as a key never seen does.
    pub fn reconfigure(&mut self, now: u64, config: Config) {
        if config == self.config {
            return;
        }
        let idle: Vec<K> = self
            .keys
            .keys()
            .filter(|k| !self.is_live(k, now))
            .cloned()
            .collect();
        for key in idle {
            self.keys.remove(&key);
        }
        for state in self.keys.values_mut() {
            state.reconfigure(now, config);
        }
        self.config = config;
        self.epoch += 1;
    }
}
