//! The charge: one decision over every band, under the bands' latch.

use super::{Bands, BandsCharge};
use crate::clock::Clock;
use crate::error::{AcquireError, InvalidPermits};
use crate::gcra;

/// The outcome of one attempt to charge every band.
enum Charge<const B: usize> {
    /// Every band charged (what each band's state became and how far it moved, in the
    /// generation of the numbers it was decided with), the call's slot and wait.
    Done(BandsCharge<B>, u64, u64),
    /// Refused: the wait (units) until the slowest band's permits arrive.
    Refused(u64),
    /// `k` is 0 or above the smallest band's `permits`.
    Invalid(InvalidPermits),
}

impl<C: Clock, const B: usize> Bands<C, B> {
    /// Charges every enabled band for `k` permits if their permits arrive within `max_wait`
    /// units (`None`: the bands' own): what it charged, the call's slot and its wait. A call
    /// admitted at once is counted; a refusal is told to the listener.
    /// Inlined, so that a caller that drops the error does not build it.
    #[inline(always)]
    pub(super) fn charge(
        &self,
        k: u32,
        max_wait: Option<u64>,
    ) -> Result<(BandsCharge<B>, u64, u64), AcquireError> {
        match self.decide(k, max_wait) {
            Charge::Done(charge, slot, wait) => {
                #[cfg(feature = "counters")]
                if wait == 0 {
                    self.admitted.increment();
                }
                Ok((charge, slot, wait))
            }
            Charge::Refused(wait) => {
                Err(self.rates[0].rejected(self.id, wait, self.listener).into())
            }
            Charge::Invalid(invalid) => Err(invalid.into()),
        }
    }

    /// The decision of [`charge`](Self::charge), out of line.
    fn decide(&self, k: u32, max_wait: Option<u64>) -> Charge<B> {
        // The clock read before the latch (on a microcontroller a critical section, and a
        // hardware clock may count its wraps in an interrupt), as the keyed table does.
        let now = self.now_units();
        self.latch.hold(|| self.charge_bands(now, k, max_wait))
    }

    /// [`charge`](Self::charge) at `now`, under the latch: no other charge, refund or reconfigure
    /// writes a band's word until it returns, so the call decides from one reading of the bands
    /// and then stores every band's new state.
    fn charge_bands(&self, now: u64, k: u32, max_wait: Option<u64>) -> Charge<B> {
        let (numbers, tats) = self.settled();
        if let Err(invalid) = self.check_permits(k, &numbers) {
            return Charge::Invalid(invalid);
        }
        let increments = numbers.increments(k);
        let slot = match numbers.slot(&tats, now, &increments) {
            Ok(slot) => slot,
            Err(wait) => return Charge::Refused(wait),
        };
        let wait = slot - now;
        if wait > max_wait.unwrap_or(numbers.max_wait) {
            return Charge::Refused(wait);
        }
        let mut written = [0u64; B];
        let mut moved = [0u64; B];
        for (i, rate) in numbers.rates.iter().enumerate() {
            if !rate.enabled() {
                continue;
            }
            // Charged as of the slot, when the call runs (every band admits it there: the slot
            // is the latest band's). The state moves from the one it had (maybe long before the
            // slot, or before `now` in an idle band) to past the slot, not just by `k*T`; a
            // refund steps back by exactly this, to that very state.
            match gcra::check(tats[i], slot, increments[i], rate.window()) {
                Ok(new_tat) => {
                    written[i] = new_tat;
                    moved[i] = new_tat - tats[i];
                }
                Err(wait) => return Charge::Refused(wait),
            }
        }
        self.store(&numbers, &written);
        let seq = numbers.seq;
        Charge::Done(
            BandsCharge {
                written,
                moved,
                seq,
            },
            slot,
            wait,
        )
    }
}
