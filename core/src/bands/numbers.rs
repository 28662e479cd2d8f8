//! The bands' numbers (built in, or those of the last reconfigure) and the states under them,
//! read consistently: what every verb and peek decides on.

use super::Bands;
use crate::clock::Clock;
use crate::error::InvalidPermits;
use crate::gcra;
use crate::rate::Rate;
use crate::state::{State, until_won};
use crate::sync::Backoff;

/// The bands' numbers at one moment: the ones built in, or those of the last reconfigure.
#[derive(Clone, Copy)]
pub(super) struct Numbers<const B: usize> {
    pub(super) rates: [Rate; B],
    pub(super) max_wait: u64,
    pub(super) max_permits: u32,
    /// The sequence number they belong to (0: never reconfigured): which states they apply to.
    pub(super) seq: u32,
}

impl<const B: usize> Numbers<B> {
    pub(super) fn increments(&self, k: u32) -> [u64; B] {
        let mut increments = [0u64; B];
        for (inc, rate) in increments.iter_mut().zip(&self.rates) {
            *inc = rate.increment(k);
        }
        increments
    }

    /// The call's slot given the bands' states `tats`: `Ok(slot)`, or `Err(wait)` if some band
    /// can never admit it (`u64::MAX`).
    pub(super) fn slot(
        &self,
        tats: &[u64; B],
        now: u64,
        increments: &[u64; B],
    ) -> Result<u64, u64> {
        let mut slot = now;
        for (i, rate) in self.rates.iter().enumerate() {
            if !rate.enabled() {
                continue;
            }
            match gcra::check(tats[i], now, increments[i], rate.window()) {
                Ok(_) => {}
                Err(u64::MAX) => return Err(u64::MAX),
                Err(wait) => slot = slot.max(now.saturating_add(wait)),
            }
        }
        Ok(slot)
    }
}

impl<C, const B: usize> Bands<C, B> {
    /// The numbers in force and the sequence number they belong to (0 until a reconfigure).
    #[inline]
    pub(super) fn numbers(&self) -> Numbers<B> {
        #[cfg(feature = "reconfigure")]
        if self.live.changed() {
            return self.live.read(&self.rates);
        }
        Numbers {
            rates: self.rates,
            max_wait: self.max_wait,
            max_permits: self.max_permits,
            seq: 0,
        }
    }

    /// The words that hold the states in the generation of sequence number `seq`: a reconfigure
    /// moves the states from one set to the other.
    #[inline]
    pub(super) fn states(&self, seq: u32) -> &[State; B] {
        #[cfg(feature = "reconfigure")]
        if (seq >> 1) & 1 == 1 {
            return self.live.states();
        }
        let _ = seq;
        &self.states
    }

    /// Every band's state under `numbers`, or `None` if a reconfigure began in the meantime
    /// (the states read may then be half moved: decide again).
    #[inline]
    pub(super) fn tats(&self, numbers: &Numbers<B>) -> Option<[u64; B]> {
        let mut tats = [0u64; B];
        for (tat, state) in tats.iter_mut().zip(self.states(numbers.seq)) {
            *tat = state.tat();
        }
        #[cfg(feature = "reconfigure")]
        if !self.live.still(numbers.seq) {
            return None;
        }
        Some(tats)
    }

    /// Stores `tats` as the state of every enabled band of `numbers` (under the latch, once the
    /// call has decided for every band).
    #[inline]
    pub(super) fn store(&self, numbers: &Numbers<B>, tats: &[u64; B]) {
        let states = self.states(numbers.seq);
        for (i, rate) in numbers.rates.iter().enumerate() {
            if rate.enabled() {
                states[i].set(tats[i]);
            }
        }
    }

    pub(super) fn check_permits(&self, k: u32, numbers: &Numbers<B>) -> Result<(), InvalidPermits> {
        if k == 0 || k > numbers.max_permits {
            Err(InvalidPermits::new(self.id, k, numbers.max_permits))
        } else {
            Ok(())
        }
    }

    /// The numbers in force and every band's state under them, read consistently.
    pub(super) fn settled(&self) -> (Numbers<B>, [u64; B]) {
        // A reconfigure in the meantime: wait it out.
        until_won(Backoff::new(), || {
            let numbers = self.numbers();
            self.tats(&numbers).map(|tats| (numbers, tats))
        })
    }
}

impl<C: Clock, const B: usize> Bands<C, B> {
    /// The clock's reading in the bands' units.
    pub(super) fn now_units(&self) -> u64 {
        self.rates[0].units(self.clock.now())
    }
}
