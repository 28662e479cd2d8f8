//! The calls that take permits from every band: at once, by reservation, or waiting.

use core::time::Duration;

use super::{Bands, BandsReservation};
use crate::clock::{Clock, ManualTime};
use crate::error::{AcquireError, RateLimitExceeded};
use crate::event::publish_waiting;
use crate::reservation::Held;
use crate::wait::{AdvanceClock, Wait};

impl<C: Clock, const B: usize> Bands<C, B> {
    /// Takes one permit from every band if all have it now; never waits.
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::{Bands, Config, ManualClock};
    /// let b = Bands::new("x", [Config::new(2, Duration::from_secs(1))?, Config::new(3, Duration::from_secs(60))?], ManualClock::new());
    /// assert!(b.try_acquire().is_ok());
    /// assert!(b.try_acquire().is_ok());
    /// assert!(b.try_acquire().is_err());
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn try_acquire(&self) -> Result<(), RateLimitExceeded> {
        self.try_acquire_n(1).map_err(AcquireError::one_permit)
    }

    /// Takes `k` permits from every band as one unit if all have them now; never waits. `k = 0`
    /// and `k` above the smallest band's `permits` are [`AcquireError::InvalidPermits`].
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::{AcquireError, Bands, Config, ManualClock};
    /// let b = Bands::new("x", [Config::new(8, Duration::from_secs(1))?, Config::new(4, Duration::from_secs(60))?], ManualClock::new());
    /// assert!(matches!(b.try_acquire_n(5), Err(AcquireError::InvalidPermits(_))));
    /// assert!(b.try_acquire_n(4).is_ok());
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn try_acquire_n(&self, k: u32) -> Result<(), AcquireError> {
        self.charge(k, Some(0)).map(drop)
    }

    /// Takes one permit from every band now, or reserves the slot at which the slowest band has it
    /// if that is within `max_wait`; otherwise rejects at once and changes nothing.
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::{Bands, Config, ManualClock};
    /// let per_second = Config::new(2, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(10));
    /// let per_minute = Config::new(3, Duration::from_secs(60))?;
    /// let b = Bands::new("x", [per_second, per_minute], ManualClock::new());
    /// b.try_acquire_n(2).unwrap();
    /// let first = b.reserve().unwrap();
    /// assert_eq!(first.wait_time(), Duration::from_millis(500));
    /// first.commit();
    /// // The per-minute band is spent now: its next permit is 20 s away, beyond max_wait.
    /// assert_eq!(b.reserve().unwrap_err().retry_after(), Duration::from_secs(20));
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn reserve(&self) -> Result<BandsReservation<'_, C, B>, RateLimitExceeded> {
        self.reserve_units(1, None)
            .map_err(AcquireError::one_permit)
    }

    /// Like [`reserve`](Self::reserve), for `k` permits taken as one unit.
    pub fn reserve_n(&self, k: u32) -> Result<BandsReservation<'_, C, B>, AcquireError> {
        self.reserve_units(k, None)
    }

    /// Like [`reserve_n`](Self::reserve_n), with this call's own `max_wait`.
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::{Bands, Config, ManualClock};
    /// let b = Bands::new("x", [Config::new(1, Duration::from_secs(1))?; 2], ManualClock::new());
    /// b.try_acquire().unwrap();
    /// assert!(b.reserve_n_within(1, Duration::from_millis(999)).is_err());
    /// assert!(b.reserve_n_within(1, Duration::from_secs(1)).is_ok());
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn reserve_n_within(
        &self,
        k: u32,
        max_wait: Duration,
    ) -> Result<BandsReservation<'_, C, B>, AcquireError> {
        self.reserve_units(k, Some(self.rates[0].units_floor(max_wait)))
    }

    fn reserve_units(
        &self,
        k: u32,
        max_wait: Option<u64>,
    ) -> Result<BandsReservation<'_, C, B>, AcquireError> {
        let (charge, slot, wait) = self.charge(k, max_wait)?;
        if let (1.., Some(listener)) = (wait, self.listener) {
            publish_waiting(listener, self.id, k, self.rates[0].wait_duration(wait));
        }
        Ok(Held::new(self, charge, slot, wait, k))
    }

    /// Takes one permit from every band, waiting with `waiter` for the slowest band's slot if it
    /// is within `max_wait`. If the waiter is interrupted, each band's charge goes back by the
    /// tail rule and the call fails with
    /// [`Reason::Interrupted`](crate::Reason::Interrupted).
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::{AdvanceClock, Bands, Clock, Config, ManualClock};
    /// let clock = ManualClock::new();
    /// let b = Bands::new("x", [Config::new(1, Duration::from_secs(1))?, Config::new(2, Duration::from_secs(10))?], &clock)
    ///     .with_max_wait(Duration::from_secs(10));
    /// for _ in 0..3 {
    ///     b.acquire_with(&mut AdvanceClock).unwrap();
    /// }
    /// // 1 at 0 s, 1 at 1 s (per second), then the 10 s band's next permit: 5 s after the first.
    /// assert_eq!(clock.now(), 5_000_000_000);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn acquire_with<W: Wait<C> + ?Sized>(
        &self,
        waiter: &mut W,
    ) -> Result<(), RateLimitExceeded> {
        self.reserve()?.wait_with(waiter)
    }

    /// Takes `k` permits from every band, waiting with `waiter` as
    /// [`acquire_with`](Self::acquire_with).
    pub fn acquire_n_with<W: Wait<C> + ?Sized>(
        &self,
        k: u32,
        waiter: &mut W,
    ) -> Result<(), AcquireError> {
        Ok(self.reserve_n(k)?.wait_with(waiter)?)
    }
}

impl<C: ManualTime, const B: usize> Bands<C, B> {
    /// Takes one permit from every band, waiting for the slot by advancing the fake clock to it:
    /// tests never sleep.
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::{Bands, Clock, Config, ManualClock};
    /// let clock = ManualClock::new();
    /// let b = Bands::new("x", [Config::new(1, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1)); 2], &clock);
    /// b.acquire_advancing().unwrap();
    /// b.acquire_advancing().unwrap();
    /// assert_eq!(clock.now(), 1_000_000_000);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn acquire_advancing(&self) -> Result<(), RateLimitExceeded> {
        self.acquire_with(&mut AdvanceClock)
    }

    /// Takes `k` permits from every band, advancing the fake clock to their slot if they must
    /// wait.
    pub fn acquire_n_advancing(&self, k: u32) -> Result<(), AcquireError> {
        self.acquire_n_with(k, &mut AdvanceClock)
    }
}
