//! [`KeyReservation`]: permits one key holds for its slot, written once for every keyed store
//! (ritmo-core's fixed table and ritmo-std's sharded map).

use core::fmt;
use core::hash::Hash;
use core::time::Duration;

use super::front::KeyedStore;
use super::rate::Decision;
use crate::error::{RateLimitExceeded, Reason};
use crate::event::Event;
use crate::wait::Wait;

/// What a call did to its key: the state it wrote, when its permits arrive, and how long that is.
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub struct Taken {
    /// The key's state after the call.
    pub written: u64,
    /// When its permits are there, in units.
    pub slot: u64,
    /// How long until then, in units.
    pub wait: u64,
}

impl Taken {
    /// A call that passes uncounted (a disabled limiter) at `now`.
    pub const fn uncounted(now: u64) -> Taken {
        Taken {
            written: 0,
            slot: now,
            wait: 0,
        }
    }

    /// What `decision`, made at `now`, took; `Err` if it was a refusal, with the wait it would
    /// have had.
    pub const fn of(decision: Decision, now: u64) -> Result<Taken, (Reason, u64)> {
        match decision {
            Decision::Now { new_tat } => Ok(Taken {
                written: new_tat,
                slot: now,
                wait: 0,
            }),
            Decision::Wait { new_tat, wait } => Ok(Taken {
                written: new_tat,
                slot: now.saturating_add(wait),
                wait,
            }),
            Decision::Reject { wait } => Err((Reason::NoPermitInTime, wait)),
        }
    }
}

/// Permits for one key, taken now or reserved for a slot: commit it when the work runs, or let it
/// go. Dropping or [`cancel`](KeyReservation::cancel)ling it before it is committed returns the
/// permits if no later call for the same key was made since; otherwise its slot stays unused.
///
/// ```
/// # use core::time::Duration;
/// # use ritmo_core::{Config, ManualClock};
/// # use ritmo_core::keyed::KeyedLimiter;
/// let c = Config::new(1, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(5));
/// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", c, ManualClock::new(), 0);
/// let a = l.reserve(&1).unwrap();
/// let b = l.reserve(&1).unwrap();
/// assert!(!a.cancel()); // b is queued behind it
/// assert!(b.cancel());
/// # Ok::<(), ritmo_core::ConfigError>(())
/// ```
#[must_use = "a reservation returns its permits when dropped: commit it once the work runs"]
pub struct KeyReservation<'a, K: Hash + Eq + Clone + 'static, L: KeyedStore<K>> {
    limiter: &'a L,
    key: K,
    taken: Taken,
    increment: u64,
    permits: u32,
    /// The tier of the key it was made on (0 for one tier).
    tier: u8,
    settled: bool,
}

impl<K: Hash + Eq + Clone, L: KeyedStore<K>> fmt::Debug for KeyReservation<'_, K, L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedReservation")
            .field("limiter", &self.limiter.key_rate().id())
            .field("permits", &self.permits)
            .field("wait", &self.wait_time())
            .finish_non_exhaustive()
    }
}

impl<'a, K: Hash + Eq + Clone, L: KeyedStore<K>> KeyReservation<'a, K, L> {
    /// A reservation of `permits` on `key` that `taken` made, adding `increment` to its state
    /// (0: nothing to give back). For the keyed stores.
    #[doc(hidden)]
    pub fn new(limiter: &'a L, key: K, taken: Taken, increment: u64, permits: u32) -> Self {
        KeyReservation {
            limiter,
            key,
            taken,
            increment,
            permits,
            tier: 0,
            settled: false,
        }
    }

    /// The same reservation, made on tier `tier` of a tiered limiter. For the keyed stores.
    #[doc(hidden)]
    pub fn in_tier(mut self, tier: u8) -> Self {
        self.tier = tier;
        self
    }

    /// The limiter it is for.
    pub fn limiter(&self) -> &'a L {
        self.limiter
    }

    /// The key it is for.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", Config::new(1, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// assert_eq!(*l.reserve(&3).unwrap().key(), 3);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn key(&self) -> &K {
        &self.key
    }

    /// How many permits it holds.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// assert_eq!(l.reserve_n(&3, 2).unwrap().permits(), 2);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn permits(&self) -> u32 {
        self.permits
    }

    /// How long, from when it was made, the caller must wait for the slot (zero if the permits
    /// were there at once).
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", Config::new(1, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// assert_eq!(l.reserve(&3).unwrap().wait_time(), Duration::ZERO);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn wait_time(&self) -> Duration {
        self.limiter.key_rate().duration(self.taken.wait)
    }

    /// The slot as a reading of the limiter's clock: the caller may run once the clock reads at
    /// least this.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let c = Config::new(1, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", c, ManualClock::new(), 0);
    /// l.try_acquire(&3).unwrap();
    /// assert_eq!(l.reserve(&3).unwrap().slot(), 1_000_000_000);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn slot(&self) -> u64 {
        self.limiter.key_rate().reading(self.taken.slot)
    }

    /// How long from now until the slot: zero once it has arrived.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let clock = ManualClock::new();
    /// let c = Config::new(1, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", c, &clock, 0);
    /// l.try_acquire(&3).unwrap();
    /// let r = l.reserve(&3).unwrap();
    /// clock.advance(Duration::from_millis(400));
    /// assert_eq!(r.remaining(), Duration::from_millis(600));
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn remaining(&self) -> Duration {
        let now = self.limiter.key_rate().now();
        self.limiter
            .key_rate()
            .duration(self.taken.slot.saturating_sub(now))
    }

    /// Whether the slot has arrived.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", Config::new(1, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// assert!(l.reserve(&3).unwrap().is_ready());
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn is_ready(&self) -> bool {
        self.limiter.key_rate().now() >= self.taken.slot
    }

    /// Keeps the permits: the work runs (or has run).
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", Config::new(1, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// l.reserve(&3).unwrap().commit();
    /// assert_eq!(l.available_permits(&3), 0);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn commit(mut self) {
        self.settled = true;
    }

    /// Gives the reservation up before its work runs; returns whether its permits went back.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo_core::{Config, ManualClock};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", Config::new(1, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// assert!(l.reserve(&3).unwrap().cancel());
    /// assert_eq!(l.available_permits(&3), 1);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn cancel(mut self) -> bool {
        self.release(Reason::Cancelled)
    }

    /// Gives the reservation up because its waiter was interrupted, and returns the error the
    /// call should fail with ([`Reason::Interrupted`], `retry_after` the time left to the slot).
    /// For adapters that implement their own waiting.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo_core::{Config, ManualClock, Reason};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let c = Config::new(1, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", c, ManualClock::new(), 0);
    /// l.try_acquire(&3).unwrap();
    /// let err = l.reserve(&3).unwrap().interrupted();
    /// assert_eq!((err.reason(), err.retry_after()), (Reason::Interrupted, Duration::from_secs(1)));
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn interrupted(mut self) -> RateLimitExceeded {
        let left = self
            .taken
            .slot
            .saturating_sub(self.limiter.key_rate().now());
        self.release(Reason::Interrupted);
        self.limiter.key_rate().rejected(Reason::Interrupted, left)
    }

    /// Waits for the slot with `waiter`, then commits; if interrupted, gives the permits back and
    /// fails with [`Reason::Interrupted`].
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo_core::{AdvanceClock, Clock, Config, ManualClock};
    /// # use ritmo_core::keyed::KeyedLimiter;
    /// let clock = ManualClock::new();
    /// let c = Config::new(1, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", c, &clock, 0);
    /// l.try_acquire(&3).unwrap();
    /// l.reserve(&3).unwrap().wait_with(&mut AdvanceClock).unwrap();
    /// assert_eq!(clock.now(), 1_000_000_000);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn wait_with<W: Wait<L::Clock> + ?Sized>(
        self,
        waiter: &mut W,
    ) -> Result<(), RateLimitExceeded> {
        if self.taken.wait > 0
            && !self.is_ready()
            && waiter
                .wait_until(self.limiter.key_rate().clock(), self.slot())
                .is_err()
        {
            return Err(self.interrupted());
        }
        self.commit();
        Ok(())
    }

    fn release(&mut self, reason: Reason) -> bool {
        if self.settled {
            return false;
        }
        self.settled = true;
        if self.increment == 0 {
            return true;
        }
        let limiter = self.limiter;
        let returned = limiter.refund_key(&self.key, self.taken.written, self.increment, self.tier);
        limiter.publish_key(
            &self.key,
            Event::Released {
                id: limiter.key_rate().id(),
                permits: self.permits,
                reason,
                returned,
            },
        );
        returned
    }
}

impl<K: Hash + Eq + Clone, L: KeyedStore<K>> Drop for KeyReservation<'_, K, L> {
    fn drop(&mut self) {
        self.release(Reason::Cancelled);
    }
}
