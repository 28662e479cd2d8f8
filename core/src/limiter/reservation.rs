//! [`Reservation`]: the single limiter's reservation, [`Held`] over the one state word it charged.

use core::time::Duration;

use crate::clock::Clock;
use crate::error::{RateLimitExceeded, Reason};
use crate::event::Event;
use crate::reservation::{Held, Holder};
use crate::state::refund;

use super::RateLimiter;

/// Permits taken now or reserved for a slot on a [`RateLimiter`]: commit it when the work runs, or
/// let it go (see [`Held`] for every method).
///
/// Dropping or [`cancel`](Held::cancel)ling a reservation that was not committed returns its
/// permits, but only if no later call changed the limiter since (it was the last reservation);
/// otherwise its slot is left unused, since giving it back would let two calls share one slot.
pub type Reservation<'a, C> = Held<&'a RateLimiter<C>, LimiterCharge>;

/// What a single limiter's reservation charged (the state it wrote and what it added): the `T`
/// of its [`Held`], opaque, named only to spell a reservation's type with another handle, as
/// `Held<Arc<RateLimiter<C>>, LimiterCharge>` (ritmo-std's `OwnedReservation<C>`).
#[derive(Debug)]
pub struct LimiterCharge {
    written: u64,
    increment: u64,
    /// 0: made on the original state; else the reconfigure generation it was made under.
    #[cfg(feature = "reconfigure")]
    seq: u32,
}

impl<'a, C: Clock> Reservation<'a, C> {
    /// A reservation of `permits` that wrote `written` to the state word of generation `seq`,
    /// having added `increment` (0: nothing to give back), its slot `slot` units, `wait` units
    /// from when it was made.
    pub(super) fn of(
        limiter: &'a RateLimiter<C>,
        written: u64,
        increment: u64,
        slot: u64,
        wait: u64,
        permits: u32,
        seq: u32,
    ) -> Self {
        #[cfg(not(feature = "reconfigure"))]
        let _ = seq;
        let charge = LimiterCharge {
            written,
            increment,
            #[cfg(feature = "reconfigure")]
            seq,
        };
        Held::new(limiter, charge, slot, wait, permits)
    }
}

impl<C: Clock> Holder<LimiterCharge> for RateLimiter<C> {
    type Clock = C;
    const KIND: &'static str = "Reservation";

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
        self.rate.wait_duration(units)
    }

    fn reading_ceil(&self, units: u64) -> u64 {
        self.rate.reading_ceil(units)
    }

    fn refusal(&self, reason: Reason, wait: u64) -> RateLimitExceeded {
        self.rate.refusal(self.id, reason, wait)
    }

    fn charged(charge: &LimiterCharge) -> bool {
        charge.increment != 0
    }

    fn give_back(&self, charge: &LimiterCharge) -> bool {
        #[cfg(feature = "reconfigure")]
        let seq = charge.seq;
        #[cfg(not(feature = "reconfigure"))]
        let seq = 0;
        // A reconfigure since moved the state (and converted this charge with it): nothing goes
        // back then.
        self.still(seq) && refund(self.word(seq), charge.written, charge.increment)
    }

    fn publish_release(&self, _charge: &LimiterCharge, event: Event) {
        if let Some(listener) = self.listener {
            listener.on_event(&event);
        }
    }
}
