//! Reconfiguring a live limiter: [`RateLimiter::reconfigure`].
//!
//! # How it stays free on the hot path
//!
//! A limiter that is never reconfigured runs exactly the code it always ran: its config's numbers
//! are plain fields, read without any check. The first reconfigure moves the limiter's state out
//! of the way: it sets the original state word to "admits nothing" (`u64::MAX`) for good, and
//! from then on every call finds that out with the load it does anyway, and (the flag "a
//! refusal only returns its error" cleared) goes out of line to the one general path every call
//! of a single limiter shares (`acquire.rs`, `peek.rs`): the same verbs, which read the numbers
//! in force through [`Live::read`] instead of the plain fields. That reading takes the config's
//! numbers and a second state word under a sequence lock (a reconfigure in progress makes readers retry; readers never
//! block a writer and never write anything but the state word, with one compare-and-swap), so it
//! is still lock-free for callers. Reconfigures themselves are serialised by a critical section,
//! the only one anywhere near the limiter (on a microcontroller: interrupts masked for the few
//! dozen instructions of the change).
//!
//! A call that had loaded the original state before the first reconfigure cannot slip through
//! afterwards: its compare-and-swap expects a value the word never holds again. After that the
//! state alternates between two words, one generation each: a change freezes the current word at
//! "admits nothing" and writes the state into the other, so a caller that decided on the old
//! numbers fails its compare-and-swap and decides again, and the state itself never moves for the
//! guard's sake (a change that leaves it as it was costs nothing). A caller would have to stall
//! between its reading and its compare-and-swap across two whole changes, and find the state
//! exactly as it read it, to act on numbers one change old.
//!
//! # What a change does
//!
//! At the instant of the change a limiter idle under the old config (its burst full) or disabled
//! starts afresh under the new one (idle is new, `rate::carry_over`); otherwise the permits
//! available become `min(available, new permits)`;
//! permits owed stay owed (a reservation keeps its slot, and the next call queues after the last
//! one at the new spacing); progress towards the next permit carries over, capped at the new
//! emission interval. See `gcra::reconfigure`.

use core::cell::Cell;

use super::{Rate, RateLimiter};
use crate::clock::{Clock, TickRate};
use crate::config::Config;
use crate::rate::{RateCells, carry_over};
use crate::state::read_consistent;
use crate::sync::{Seq, U64Cell, fence_release};

/// The state and config of a limiter that has been reconfigured (unused until then).
#[derive(Debug)]
pub(super) struct Live {
    /// 0: never reconfigured. Odd: a reconfigure is writing. Even: the fields below are current.
    seq: Seq,
    /// The state, in one of two words: generation `seq / 2` keeps it in `tats[(seq / 2) % 2]`.
    /// A change moves it to the other word and leaves the one it left at `u64::MAX` (admits
    /// nothing), so a caller that decided on the numbers before the change cannot complete its
    /// compare-and-swap after it, even when the change left the state's value as it was.
    tats: [U64Cell; 2],
    numbers: RateCells,
    /// The config as given, for [`RateLimiter::config`].
    config: critical_section::Mutex<Cell<Config>>,
}

impl Live {
    const_fn! {
    pub(super) fn new(config: Config) -> Live {
        Live {
            seq: Seq::new(),
            tats: [U64Cell::new(0), U64Cell::new(0)],
            numbers: RateCells::new(),
            config: critical_section::Mutex::new(Cell::new(config)),
        }
    }
    }

    /// Whether a reconfigure ever happened.
    #[inline]
    pub(super) fn reconfigured(&self) -> bool {
        self.seq.load() != 0
    }

    /// The word that holds the state in the generation of sequence number `seq`.
    #[inline]
    pub(super) fn tat(&self, seq: u32) -> &U64Cell {
        &self.tats[(seq >> 1) as usize & 1]
    }

    /// Whether the numbers of generation `seq` are still in force.
    #[inline]
    pub(super) fn still(&self, seq: u32) -> bool {
        self.seq.load() == seq
    }

    /// The numbers in force, the state and the sequence number they belong to, read
    /// consistently; `base` gives the clock's units.
    pub(super) fn read(&self, base: &Rate) -> (Rate, u64, u32) {
        let ((rate, tat), seq) = read_consistent(&self.seq, |seq| {
            (self.numbers.load(base), self.tat(seq).load())
        });
        (rate, tat, seq)
    }
}

impl<C> RateLimiter<C> {
    /// The config it applies now: the one it was built with, or the last one given to
    /// [`reconfigure`](Self::reconfigure).
    ///
    /// ```
    /// # use ritmo::{Config, ManualClock, RateLimiter};
    /// # use core::time::Duration;
    /// let c = Config::new(5, Duration::from_secs(1)).unwrap();
    /// let l = RateLimiter::new("x", c, ManualClock::new());
    /// assert_eq!(l.config(), c);
    /// let d = Config::new(7, Duration::from_secs(1)).unwrap();
    /// l.reconfigure(d);
    /// assert_eq!(l.config(), d);
    /// ```
    pub fn config(&self) -> Config {
        // As given, not rebuilt from the converted rate (which on a clock slower than 1 GHz
        // rounds the period and `max_wait` to the clock's units).
        critical_section::with(|cs| self.live.config.borrow(cs).get())
    }

    /// Its permits per period now.
    pub fn permits(&self) -> u32 {
        self.permits_now()
    }

    /// Whether [`reconfigure`](Self::reconfigure) was ever called on it.
    pub fn is_reconfigured(&self) -> bool {
        self.live.reconfigured()
    }

    /// Whether a reconfigure ever happened.
    #[inline(always)]
    pub(super) fn reconfigured(&self) -> bool {
        self.live.reconfigured()
    }

    /// Enabled and without a listener, and never reconfigured: a refusal only returns its error.
    #[inline(always)]
    pub(super) fn plain_reject(&self) -> bool {
        self.plain_reject.get()
    }

    /// The permits per period it applies now.
    pub(super) fn permits_now(&self) -> u32 {
        self.with_numbers(|rate, _, _| rate.permits)
    }
}

impl<C: Clock> RateLimiter<C> {
    /// Applies `config` from now on, without resetting the limiter: the permits available right
    /// now become `min(available, new permits)`, permits owed stay owed, and reservations already
    /// made keep their slots (the next call queues after the last one, at the new spacing).
    /// Progress towards the next permit carries over, up to the new emission interval. No
    /// sequence of reconfigures lets more calls through than the configs in force allowed.
    ///
    /// **Idle is new**: a limiter whose burst is full under the config in force carries nothing a
    /// new one lacks, so the change starts it afresh with the new config's full burst; enabling
    /// a disabled limiter does too (while disabled it admitted everything and counted nothing).
    ///
    /// Calls keep running while it happens, lock-free; reconfigures are serialised by a short
    /// critical section. A limiter that is never reconfigured pays nothing for the possibility.
    /// Reconfiguring to the config it already applies changes nothing.
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::{Config, ManualClock, RateLimiter};
    /// let clock = ManualClock::new();
    /// let api = RateLimiter::new("api", Config::new(10, Duration::from_secs(1))?, &clock);
    /// api.try_acquire_n(4).unwrap(); // 6 left
    /// api.reconfigure(Config::new(5, Duration::from_secs(1))?);
    /// assert_eq!(api.available_permits(), 5); // min(6, 5)
    /// api.try_acquire().unwrap(); // 4 left
    /// api.reconfigure(Config::new(100, Duration::from_secs(1))?);
    /// assert_eq!(api.available_permits(), 4); // a looser config does not hand out a burst
    /// clock.advance(Duration::from_millis(10));
    /// assert_eq!(api.available_permits(), 5); // then one every 10 ms
    /// clock.advance(Duration::from_secs(1)); // its burst full again: idle
    /// api.reconfigure(Config::new(200, Duration::from_secs(1))?);
    /// assert_eq!(api.available_permits(), 200); // idle is new: afresh
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    #[cfg_attr(docsrs, doc(cfg(feature = "reconfigure")))]
    pub fn reconfigure(&self, config: Config) {
        let tick = TickRate::from_hz(self.rate.unit_hz >> self.rate.shift);
        let applies = self.applies(&config);
        let new = Rate::new(&config, tick);
        critical_section::with(|cs| {
            let seq = self.live.seq.load_relaxed();
            let (old, old_tat) = if seq == 0 {
                if applies {
                    // The same numbers in this clock's units (a `max_wait` that rounds to the
                    // same whole ticks, say): nothing to change but the config it reports.
                    self.live.config.borrow(cs).set(config);
                    return;
                }
                // Readers that find the original state frozen see an odd sequence number and
                // wait for the change to finish; a refusal there goes to the reconfigured path.
                self.live.seq.store_relaxed(1);
                fence_release();
                self.plain_reject.set(false);
                (self.rate, self.state.freeze())
            } else {
                if config == self.live.config.borrow(cs).get() {
                    return;
                }
                let (old, _, _) = self.live.read(&self.rate);
                self.live.seq.store_relaxed(seq + 1);
                fence_release();
                // This generation's word admits nothing from now on; the next one is the other.
                let cell = self.live.tat(seq);
                let mut tat = cell.load();
                loop {
                    match cell.compare_exchange(tat, u64::MAX) {
                        Ok(_) => break (old, tat),
                        Err(found) => tat = found,
                    }
                }
            };
            let now = self.now_units();
            let tat = carry_over(old_tat, now, &old, &new);
            self.live.numbers.store(&new);
            self.live.config.borrow(cs).set(config);
            let next = (seq | 1) + 1;
            self.live.tat(next).store(tat);
            self.live.seq.store(next);
        });
    }
}
