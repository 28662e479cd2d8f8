//! [`BandsReservation`]: permits a call holds in every band for its slot, [`Held`] over the
//! band states it charged.

use core::time::Duration;

use super::Bands;
use crate::clock::Clock;
use crate::error::{RateLimitExceeded, Reason};
use crate::event::Event;
use crate::gcra;
use crate::reservation::{Held, Holder};

/// Permits taken from every band of a [`Bands`] now or reserved for a slot: commit it when the
/// work runs, or let it go (see [`Held`] for every method).
///
/// Dropping or [`cancel`](Held::cancel)ling it before it is committed gives every
/// band's charge back, exactly, if it is still the newest reservation in every band (no later call
/// charged any band after it); otherwise it gives nothing back and its slot stays unused.
///
/// ```
/// use core::time::Duration;
/// use ritmo::{Bands, Config, ManualClock};
/// let b = Bands::new("x", [Config::new(1, Duration::from_secs(1))?; 2], ManualClock::new());
/// assert!(b.reserve().unwrap().cancel()); // the last charge of both bands: it goes back
/// assert_eq!(b.available_permits(), 1);
/// # Ok::<(), ritmo::ConfigError>(())
/// ```
pub type BandsReservation<'a, C, const B: usize> = Held<&'a Bands<C, B>, BandsCharge<B>>;

/// What a reservation on bands charged (the state it wrote in each band and how far it moved it,
/// in the generation `seq` of the bands' states): the `T` of its [`Held`], opaque, named only to
/// spell a reservation's type with another handle (ritmo-std's `OwnedBandsReservation<C, B>`).
#[derive(Debug)]
pub struct BandsCharge<const B: usize> {
    pub(super) written: [u64; B],
    pub(super) moved: [u64; B],
    pub(super) seq: u32,
}

impl<C: Clock, const B: usize> Holder<BandsCharge<B>> for Bands<C, B> {
    type Clock = C;
    const KIND: &'static str = "BandsReservation";

    fn holder_id(&self) -> &'static str {
        self.id
    }

    fn holder_clock(&self) -> &C {
        &self.clock
    }

    fn units_now(&self) -> u64 {
        self.now_units()
    }

    fn wait_duration(&self, units: u64) -> Duration {
        self.rates[0].wait_duration(units)
    }

    fn reading_ceil(&self, units: u64) -> u64 {
        self.rates[0].reading_ceil(units)
    }

    fn refusal(&self, reason: Reason, wait: u64) -> RateLimitExceeded {
        let rate = &self.rates[0];
        RateLimitExceeded::new(self.id, reason, wait, rate.unit_hz, rate.shift)
    }

    fn charged(_charge: &BandsCharge<B>) -> bool {
        true
    }

    fn give_back(&self, charge: &BandsCharge<B>) -> bool {
        self.latch.hold(|| self.give_back_bands(charge))
    }

    fn publish_release(&self, _charge: &BandsCharge<B>, event: Event) {
        if let Some(listener) = self.listener {
            listener.on_event(&event);
        }
    }
}

impl<C: Clock, const B: usize> Bands<C, B> {
    /// [`give_back`](Holder::give_back), under the latch.
    fn give_back_bands(&self, charge: &BandsCharge<B>) -> bool {
        // The newest reservation in every band, or it returns nothing: a reservation that a
        // later call overtook in one band is no longer the newest, and gives back no band.
        // A reconfigure since it was made moved the states (and converted this charge with
        // them): nothing to give back then. Decided for every band before any is written.
        let numbers = self.numbers();
        if numbers.seq != charge.seq {
            return false;
        }
        let states = self.states(charge.seq);
        let mut back = [0u64; B];
        for (i, rate) in numbers.rates.iter().enumerate() {
            if !rate.enabled() {
                continue;
            }
            match gcra::refund(states[i].tat(), charge.written[i], charge.moved[i]) {
                Some(tat) => back[i] = tat,
                None => return false,
            }
        }
        self.store(&numbers, &back);
        true
    }
}
