//! Reconfiguring a keyed limiter (feature `reconfigure`): every key at once, with the single
//! limiter's rule (`gcra::reconfigure`) at the instant of the change.
//!
//! A keyed limiter that is never reconfigured reads its config's numbers from plain fields, as
//! before, after one load that says so. A change publishes the new numbers under a sequence lock
//! while the store converts every key's state: a reader that finds a change in progress waits for
//! it (a short spin; changes are rare and serialised), so no call decides with new numbers on a
//! state not yet converted.

use core::cell::Cell;

use crate::config::Config;
use crate::rate::{Rate, carry_over};
use crate::state::read_consistent;
use crate::sync::{Seq, U64Cell, fence_release};

/// The numbers of the config in force after a change (unused before the first).
#[derive(Debug)]
pub(super) struct KeyLive {
    /// 0: never changed. Odd: a change is converting the keys. Even: the numbers are current.
    seq: Seq,
    /// `seq` at the end of the last change of this config (not a tier's): a reservation decided
    /// before it gives nothing back.
    changed_at: Seq,
    interval: U64Cell,
    max_wait: U64Cell,
    /// `permits` in the low 32 bits, `enabled` in bit 32.
    permits: U64Cell,
    /// The config as given.
    config: critical_section::Mutex<Cell<Config>>,
}

impl KeyLive {
    const_fn! {
    pub(super) fn new(config: Config) -> KeyLive {
        KeyLive {
            seq: Seq::new(),
            changed_at: Seq::new(),
            interval: U64Cell::new(0),
            max_wait: U64Cell::new(0),
            permits: U64Cell::new(0),
            config: critical_section::Mutex::new(Cell::new(config)),
        }
    }
    }

    /// The rate in force: `base` until the first change.
    #[inline(always)]
    pub(super) fn rate(&self, base: &Rate) -> Rate {
        if self.seq.load() == 0 {
            *base
        } else {
            self.read(base)
        }
    }

    /// The config in force: `base` until the first change.
    pub(super) fn config(&self, base: Config) -> Config {
        if self.seq.load() == 0 {
            base
        } else {
            critical_section::with(|cs| self.config.borrow(cs).get())
        }
    }

    /// The sequence number of the numbers in force (odd while a change runs).
    #[inline(always)]
    pub(super) fn seq(&self) -> u32 {
        self.seq.load()
    }

    /// The sequence number at the end of the last change of the config (0: none).
    #[inline(always)]
    pub(super) fn changed_at(&self) -> u32 {
        self.changed_at.load()
    }

    #[cold]
    fn read(&self, base: &Rate) -> Rate {
        read_consistent(&self.seq, |_| {
            let packed = self.permits.load();
            Rate::with_numbers(
                base,
                self.interval.load(),
                self.max_wait.load(),
                packed as u32,
                packed >> 32 != 0,
            )
        })
        .0
    }

    /// Applies `config` from `now` (in units): converts every key's state with `convert_all`,
    /// which gets the conversion to apply to one state, then publishes the new numbers. The
    /// caller serialises changes. A change to the config in force changes nothing.
    pub(super) fn change(
        &self,
        base: &Rate,
        base_config: Config,
        config: Config,
        new: Rate,
        now: u64,
        convert_all: impl FnOnce(&dyn Fn(u64) -> u64),
    ) {
        if config == self.config(base_config) {
            return;
        }
        let old = self.rate(base);
        self.changing(base, |end| {
            self.changed_at.store(end);
            // Idle is new (`carry_over`): an idle key, or any key of a disabled config, starts
            // afresh under the new config, as a key never seen does, whichever store dropped it.
            convert_all(&|tat| carry_over(tat, now, &old, &new));
            self.publish(&new);
            critical_section::with(|cs| self.config.borrow(cs).set(config));
        });
    }

    /// Runs `body` (which converts keys and publishes numbers) as one change: readers of the
    /// numbers wait it out, and the generation moves on. `body` gets the sequence number at the
    /// change's end. The caller serialises changes.
    pub(super) fn changing(&self, base: &Rate, body: impl FnOnce(u32)) {
        let seq = self.seq.load();
        if seq == 0 {
            // Until now readers took `base` without reading the cells: fill them first.
            self.publish(base);
        }
        self.seq.store_relaxed(seq | 1);
        fence_release();
        body((seq | 1) + 1);
        self.seq.store((seq | 1) + 1);
    }

    fn publish(&self, rate: &Rate) {
        self.interval.store(rate.interval);
        self.max_wait.store(rate.max_wait);
        self.permits
            .store(u64::from(rate.permits) | (u64::from(rate.enabled()) << 32));
    }

    /// `read` once no change is being written (a store's own numbers, such as a tier's).
    pub(super) fn consistent<R>(&self, mut read: impl FnMut() -> R) -> R {
        read_consistent(&self.seq, |_| read()).0
    }
}
