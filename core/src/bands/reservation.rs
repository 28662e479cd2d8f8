//! [`BandsReservation`]: permits a call holds in every band for its slot.

use core::fmt;
use core::time::Duration;

use super::Bands;
use crate::clock::Clock;
use crate::error::{RateLimitExceeded, Reason};
use crate::event::Event;
use crate::wait::Wait;

/// Permits taken from every band of a [`Bands`] now or reserved for a slot: commit it when the
/// work runs, or let it go.
///
/// Dropping or [`cancel`](BandsReservation::cancel)ling it before it is committed gives every
/// band's charge back, exactly, if it is still the newest reservation in every band (no later call
/// charged any band after it); otherwise it gives nothing back and its slot stays unused.
///
/// ```
/// use core::time::Duration;
/// use ritmo_core::{Bands, Config, ManualClock};
/// let b = Bands::new("x", [Config::new(1, Duration::from_secs(1))?; 2], ManualClock::new());
/// assert!(b.reserve().unwrap().cancel()); // the last charge of both bands: it goes back
/// assert_eq!(b.available_permits(), 1);
/// # Ok::<(), ritmo_core::ConfigError>(())
/// ```
#[must_use = "a reservation returns its permits when dropped: commit it once the work runs"]
pub struct BandsReservation<'a, C: Clock, const B: usize> {
    pub(super) bands: &'a Bands<C, B>,
    pub(super) written: [u64; B],
    pub(super) moved: [u64; B],
    pub(super) slot: u64,
    pub(super) wait: u64,
    pub(super) permits: u32,
    /// The sequence number of the bands' numbers it was decided with: a reconfigure since moved
    /// the states, and a refund then returns nothing.
    pub(super) seq: u32,
    pub(super) settled: bool,
}

impl<C: Clock, const B: usize> fmt::Debug for BandsReservation<'_, C, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BandsReservation")
            .field("bands", &self.bands.id)
            .field("permits", &self.permits)
            .field("slot", &self.slot)
            .field("wait", &self.wait_time())
            .finish()
    }
}

impl<C: Clock, const B: usize> BandsReservation<'_, C, B> {
    /// How many permits it holds in each band.
    pub fn permits(&self) -> u32 {
        self.permits
    }

    /// How long, from when it was made, the caller must wait for the slot (zero if every band had
    /// the permits at once), rounded up.
    pub fn wait_time(&self) -> Duration {
        self.bands.rates[0].wait_duration(self.wait)
    }

    /// The slot as a reading of the clock (rounded up to a whole tick).
    pub fn slot(&self) -> u64 {
        self.bands.rates[0].reading_ceil(self.slot)
    }

    /// Whether the slot has arrived.
    pub fn is_ready(&self) -> bool {
        self.bands.now_units() >= self.slot
    }

    /// Keeps the permits: the work runs (or has run).
    pub fn commit(mut self) {
        self.settled = true;
    }

    /// Gives the reservation up before its work runs; returns whether every band got its permits
    /// back.
    pub fn cancel(mut self) -> bool {
        self.release(Reason::Cancelled)
    }

    /// Waits for the slot with `waiter`, then commits; if interrupted, gives the permits back and
    /// fails with [`Reason::Interrupted`].
    pub fn wait_with<W: Wait<C> + ?Sized>(self, waiter: &mut W) -> Result<(), RateLimitExceeded> {
        if self.wait > 0
            && !self.is_ready()
            && waiter.wait_until(&self.bands.clock, self.slot()).is_err()
        {
            return Err(self.interrupted());
        }
        self.commit();
        Ok(())
    }

    /// Gives the reservation up because its waiter was interrupted, and returns the error the
    /// call should fail with ([`Reason::Interrupted`], `retry_after` the time left to the slot).
    pub fn interrupted(mut self) -> RateLimitExceeded {
        let left = self.slot.saturating_sub(self.bands.now_units());
        self.release(Reason::Interrupted);
        RateLimitExceeded::new(
            self.bands.id,
            Reason::Interrupted,
            left,
            self.bands.rates[0].unit_hz,
            self.bands.rates[0].shift,
        )
    }

    fn release(&mut self, reason: Reason) -> bool {
        if self.settled {
            return false;
        }
        self.settled = true;
        // The newest reservation in every band, or it returns nothing: a reservation that a
        // later call overtook in one band is no longer the newest, and gives back no band.
        // A reconfigure since it was made moved the states (and converted this charge with
        // them): nothing to give back then.
        let numbers = self.bands.numbers();
        let states = self.bands.states(self.seq);
        let enabled = |i: &usize| numbers.rates[*i].enabled();
        let newest = numbers.seq == self.seq
            && (0..B)
                .filter(enabled)
                .all(|i| states[i].tat() == self.written[i]);
        let mut returned = newest;
        if newest {
            for i in (0..B).filter(enabled) {
                // Only a call racing this one (or a reconfigure) can make a step fail: it then
                // stays unused there.
                returned &= states[i].refund(self.written[i], self.moved[i]);
            }
        }
        if let Some(listener) = self.bands.listener {
            listener.on_event(&Event::Released {
                id: self.bands.id,
                permits: self.permits,
                reason,
                returned,
            });
        }
        returned
    }
}

impl<C: Clock, const B: usize> Drop for BandsReservation<'_, C, B> {
    fn drop(&mut self) {
        self.release(Reason::Cancelled);
    }
}
