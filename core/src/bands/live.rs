//! Reconfiguring bands (feature `reconfigure`): [`Bands::reconfigure`] applies new configs to
//! every band at once, each with the single limiter's rule (`rate::carry_over`) at the instant of
//! the change.
//!
//! Bands never reconfigured read their numbers from plain fields after one load that says so. A
//! change publishes the new numbers under a sequence lock and moves every band's state to a
//! second set of words, leaving each word it left at `u64::MAX` (admits nothing), as the single
//! limiter does (`limiter/live.rs`): a call that decided on the old numbers fails its
//! compare-and-swap and decides again, even where the change left a band's state as it was, and a
//! reservation made before the change gives nothing back after it (its charge moved with the
//! states). A reader that finds a change in progress waits for it; changes are rare and
//! serialised by a critical section.

use core::cell::Cell;

use super::numbers::Numbers;
use super::{Bands, max_permits, rates};
use crate::clock::{Clock, TickRate};
use crate::config::Config;
use crate::rate::{Rate, RateCells, carry_over};
use crate::state::{State, read_consistent};
use crate::sync::{Seq, U64Cell, fence_acquire, fence_release};

#[cfg(not(all(test, loom)))]
const fn new_numbers<const B: usize>() -> [RateCells; B] {
    [const { RateCells::new() }; B]
}

#[cfg(all(test, loom))]
fn new_numbers<const B: usize>() -> [RateCells; B] {
    core::array::from_fn(|_| RateCells::new())
}

/// The numbers and states of bands that have been reconfigured (unused until then).
#[derive(Debug)]
pub(super) struct BandsLive<const B: usize> {
    /// 0: never reconfigured. Odd: a change is being written. Even: the numbers are current, and
    /// generation `seq / 2` keeps the states in the bands' own words (even) or in `alt` (odd).
    seq: Seq,
    alt: [State; B],
    numbers: [RateCells; B],
    /// The longest a call may wait, in units.
    max_wait: U64Cell,
    /// The configs as given, for [`Bands::configs`].
    configs: critical_section::Mutex<Cell<[Config; B]>>,
}

impl<const B: usize> BandsLive<B> {
    const_fn! {
    pub(super) fn new(configs: [Config; B]) -> Self {
        BandsLive {
            seq: Seq::new(),
            alt: State::array(),
            numbers: new_numbers(),
            max_wait: U64Cell::new(0),
            configs: critical_section::Mutex::new(Cell::new(configs)),
        }
    }
    }

    /// Whether a reconfigure ever happened.
    #[inline]
    pub(super) fn changed(&self) -> bool {
        self.seq.load() != 0
    }

    /// The second set of state words.
    pub(super) fn states(&self) -> &[State; B] {
        &self.alt
    }

    /// The configs in force after a change.
    pub(super) fn configs(&self) -> [Config; B] {
        critical_section::with(|cs| self.configs.borrow(cs).get())
    }

    /// Whether the numbers of `seq` are still in force: no change began since they were read
    /// (a seqlock's second check, after the states were read).
    #[inline]
    pub(super) fn still(&self, seq: u32) -> bool {
        fence_acquire();
        self.seq.load_relaxed() == seq
    }

    /// The numbers in force after a change, read consistently; `base` gives the clock's units.
    #[cold]
    pub(super) fn read(&self, base: &[Rate; B]) -> Numbers<B> {
        let ((rates, max_wait), seq) = read_consistent(&self.seq, |_| {
            let mut rates = *base;
            for (rate, numbers) in rates.iter_mut().zip(&self.numbers) {
                *rate = numbers.load(&base[0]);
            }
            (rates, self.max_wait.load())
        });
        Numbers {
            max_permits: max_permits(&rates),
            rates,
            max_wait,
            seq,
        }
    }
}

impl<C: Clock, const B: usize> Bands<C, B> {
    /// Applies `configs` to the bands from now on, without resetting them: in each band the
    /// permits available right now become `min(available, new permits)`, permits owed stay owed,
    /// and reservations already made keep their slots (the next call queues after the last one,
    /// at the new spacing), as [`RateLimiter::reconfigure`](crate::RateLimiter::reconfigure) does
    /// for one limiter; a band idle under its config in force (its burst full) or disabled starts
    /// afresh with its new full burst (idle is new). A band whose config is unchanged keeps its
    /// state as it is, and
    /// reconfiguring to the configs in force changes nothing. The longest a call may wait becomes
    /// the longest `max_wait` of the new configs, unless
    /// [`with_max_wait`](Self::with_max_wait) set it.
    ///
    /// Calls keep running while it happens, lock-free; reconfigures are serialised by a short
    /// critical section. A reservation made before the change gives nothing back if cancelled
    /// after it (its permits moved into the new numbers with the state). Bands never
    /// reconfigured pay one load per call for the possibility.
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::{Bands, Config, ManualClock};
    /// let clock = ManualClock::new();
    /// let per_second = Config::new(10, Duration::from_secs(1))?;
    /// let per_hour = Config::new(100, Duration::from_secs(3600))?;
    /// let api = Bands::new("api", [per_second, per_hour], &clock);
    /// api.try_acquire_n(4).unwrap();
    /// assert_eq!(api.available_permits_per_band(), [6, 96]);
    /// // A tighter hourly quota: min(96, 50) left in that band; the per-second band is untouched.
    /// api.reconfigure([per_second, Config::new(50, Duration::from_secs(3600))?]);
    /// assert_eq!(api.available_permits_per_band(), [6, 50]);
    /// // A looser per-second band hands out no fresh burst; the hourly band, full under 50 per
    /// // hour (idle), starts afresh under 100 per hour.
    /// api.reconfigure([Config::new(100, Duration::from_secs(1))?, per_hour]);
    /// assert_eq!(api.available_permits_per_band(), [6, 100]);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    #[cfg_attr(docsrs, doc(cfg(feature = "reconfigure")))]
    pub fn reconfigure(&self, configs: [Config; B]) {
        let base = self.rates[0];
        let (new, longest, _) = rates(&configs, TickRate::from_hz(base.unit_hz >> base.shift));
        // Under the bands' latch too: no charge is half way through the bands while their words
        // are moved (its first bands' charge would move with them, and be charged again when it
        // decides anew on the new numbers).
        self.latch.hold(|| self.change(configs, new, longest));
    }

    /// [`reconfigure`](Self::reconfigure) to `configs` (`new` in units, `longest` their longest
    /// `max_wait`), under the latch.
    fn change(&self, configs: [Config; B], new: [Rate; B], longest: u64) {
        critical_section::with(|cs| {
            let seq = self.live.seq.load_relaxed();
            let current = if seq == 0 {
                self.configs
            } else {
                self.live.configs.borrow(cs).get()
            };
            if configs == current {
                return;
            }
            let old = self.numbers();
            let max_wait = if self.explicit_max_wait {
                self.max_wait
            } else {
                longest
            };
            // Readers that find a band frozen see an odd sequence number and wait for the change.
            self.live.seq.store_relaxed(seq + 1);
            fence_release();
            let now = self.now_units();
            let (from, to) = (self.states(seq), self.states(seq + 2));
            for (i, (old, new)) in old.rates.iter().zip(&new).enumerate() {
                // This generation's word admits nothing from now on; the next one is the other.
                let tat = from[i].freeze();
                let same = old.interval == new.interval
                    && old.permits == new.permits
                    && old.enabled() == new.enabled();
                to[i].exchange(if same {
                    tat
                } else {
                    carry_over(tat, now, old, new)
                });
            }
            for (numbers, rate) in self.live.numbers.iter().zip(&new) {
                numbers.store(rate);
            }
            self.live.max_wait.store(max_wait);
            self.live.configs.borrow(cs).set(configs);
            self.live.seq.store(seq + 2);
        });
    }
}
