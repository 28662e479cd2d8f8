//! The one place ritmo-core gets its shared-memory primitive from.
//!
//! [`U64Cell`] is a `u64` that several threads (or a thread and an interrupt handler) can load,
//! store and compare-and-swap. It is backed by:
//! - `portable_atomic::AtomicU64` on targets with native 64-bit atomics (x86-64, AArch64, RISC-V 64);
//! - a `critical_section::Mutex<Cell<u64>>` on targets without them (Cortex-M0/M3/M4, RISC-V 32).
//!   A critical section masks interrupts on a single-core MCU, so an interrupt handler that takes
//!   permits can never spin on a lock held by the code it interrupted (a seqlock fallback could);
//! - loom's `AtomicU64` in this crate's own tests under `--cfg loom` (`cfg(all(test, loom))`), so
//!   the model checker sees every interleaving (`src/loom_tests.rs`). Only the crate's test build
//!   sees it: `--cfg loom` never changes the API a dependent crate compiles against.

/// Defines a `const fn`, which in this crate's loom tests is a plain `fn`: loom's atomics cannot
/// be built in a `const` context. One definition for both, and outside those tests it is always
/// the `const fn` (tokio's `src/loom` does the same for its `const` constructors).
macro_rules! const_fn {
    ($(#[$meta:meta])* $vis:vis fn $($rest:tt)*) => {
        #[cfg(not(all(test, loom)))]
        $(#[$meta])* $vis const fn $($rest)*
        #[cfg(all(test, loom))]
        $(#[$meta])* $vis fn $($rest)*
    };
}

/// The atomic `U64Cell`: `portable_atomic`'s on targets with native 64-bit atomics, loom's in
/// this crate's loom tests; one body for both.
#[cfg(any(all(test, loom), target_has_atomic = "64"))]
mod imp {
    #[cfg(all(test, loom))]
    use loom::sync::atomic::{AtomicU64, Ordering};
    #[cfg(not(all(test, loom)))]
    use portable_atomic::{AtomicU64, Ordering};

    #[derive(Debug)]
    pub(crate) struct U64Cell(AtomicU64);

    impl U64Cell {
        const_fn! {
            pub(crate) fn new(value: u64) -> Self {
                Self(AtomicU64::new(value))
            }
        }
        #[inline(always)]
        pub(crate) fn load(&self) -> u64 {
            self.0.load(Ordering::Acquire)
        }
        #[inline(always)]
        pub(crate) fn store(&self, value: u64) {
            self.0.store(value, Ordering::Release)
        }
        /// Replaces `current` with `new`; on failure returns the value found.
        #[inline(always)]
        pub(crate) fn compare_exchange(&self, current: u64, new: u64) -> Result<u64, u64> {
            self.0
                .compare_exchange(current, new, Ordering::AcqRel, Ordering::Acquire)
        }
        /// Like `compare_exchange`, but may fail spuriously: for retry loops.
        #[inline(always)]
        pub(crate) fn compare_exchange_weak(&self, current: u64, new: u64) -> Result<u64, u64> {
            self.0
                .compare_exchange_weak(current, new, Ordering::AcqRel, Ordering::Acquire)
        }
        #[inline(always)]
        pub(crate) fn fetch_max(&self, value: u64) -> u64 {
            self.0.fetch_max(value, Ordering::AcqRel)
        }
        /// Adds `value` (wrapping) with a plain load and store, not a locked read-modify-write:
        /// a statistic, for which the hot path does not pay a second atomic operation. Two
        /// cores adding at the same instant may lose one of the additions. Under loom a
        /// `fetch_add`, so the models' counts are exact.
        #[cfg(feature = "counters")]
        #[inline(always)]
        pub(crate) fn add(&self, value: u64) {
            #[cfg(not(all(test, loom)))]
            {
                let v = self.0.load(Ordering::Relaxed);
                self.0.store(v.wrapping_add(value), Ordering::Relaxed);
            }
            #[cfg(all(test, loom))]
            self.0.fetch_add(value, Ordering::Relaxed);
        }
        /// The value, for a count nobody orders other memory by.
        #[cfg(feature = "counters")]
        #[inline(always)]
        pub(crate) fn load_relaxed(&self) -> u64 {
            self.0.load(Ordering::Relaxed)
        }
    }
}

#[cfg(all(not(all(test, loom)), not(target_has_atomic = "64")))]
mod imp {
    use core::cell::Cell;
    use critical_section::Mutex;

    #[derive(Debug)]
    pub(crate) struct U64Cell(Mutex<Cell<u64>>);

    impl U64Cell {
        pub(crate) const fn new(value: u64) -> Self {
            Self(Mutex::new(Cell::new(value)))
        }
        #[inline]
        pub(crate) fn load(&self) -> u64 {
            critical_section::with(|cs| self.0.borrow(cs).get())
        }
        #[inline]
        pub(crate) fn store(&self, value: u64) {
            critical_section::with(|cs| self.0.borrow(cs).set(value))
        }
        #[inline]
        pub(crate) fn compare_exchange(&self, current: u64, new: u64) -> Result<u64, u64> {
            critical_section::with(|cs| {
                let cell = self.0.borrow(cs);
                let found = cell.get();
                if found == current {
                    cell.set(new);
                    Ok(found)
                } else {
                    Err(found)
                }
            })
        }
        #[inline]
        pub(crate) fn compare_exchange_weak(&self, current: u64, new: u64) -> Result<u64, u64> {
            self.compare_exchange(current, new)
        }
        #[inline]
        pub(crate) fn fetch_max(&self, value: u64) -> u64 {
            critical_section::with(|cs| {
                let cell = self.0.borrow(cs);
                let found = cell.get();
                cell.set(found.max(value));
                found
            })
        }
        #[cfg(feature = "counters")]
        #[inline]
        pub(crate) fn add(&self, value: u64) {
            critical_section::with(|cs| {
                let cell = self.0.borrow(cs);
                cell.set(cell.get().wrapping_add(value));
            })
        }
        #[cfg(feature = "counters")]
        #[inline]
        pub(crate) fn load_relaxed(&self) -> u64 {
            self.load()
        }

        /// Replaces the value `v` with `f(v)` if that is `Ok`, in one critical section.
        #[cfg_attr(target_has_atomic = "64", allow(dead_code))]
        #[inline]
        pub(crate) fn update<E>(&self, f: impl FnOnce(u64) -> Result<u64, E>) -> Result<(), E> {
            critical_section::with(|cs| {
                let cell = self.0.borrow(cs);
                cell.set(f(cell.get())?);
                Ok(())
            })
        }
    }
}

pub(crate) use imp::U64Cell;

/// A statistic (feature `counters`): a [`U64Cell`] counted with a plain load and store. Under
/// loom a std atomic instead, whose `const` constructor keeps the keyed rules' `const fn`
/// constructors `const` there too (nothing orders other memory by a count, so loom need not
/// model it).
#[cfg(all(feature = "counters", not(all(test, loom))))]
pub(crate) type Tally = U64Cell;

/// A statistic (feature `counters`), outside loom's model.
#[cfg(all(feature = "counters", test, loom))]
#[derive(Debug)]
pub(crate) struct Tally(core::sync::atomic::AtomicU64);

#[cfg(all(feature = "counters", test, loom))]
impl Tally {
    pub(crate) const fn new(value: u64) -> Self {
        Tally(core::sync::atomic::AtomicU64::new(value))
    }
    pub(crate) fn add(&self, value: u64) {
        self.0
            .fetch_add(value, core::sync::atomic::Ordering::Relaxed);
    }
    pub(crate) fn load_relaxed(&self) -> u64 {
        self.0.load(core::sync::atomic::Ordering::Relaxed)
    }
}

/// A flag read on the hot path with a plain load (`Relaxed`): a `portable_atomic::AtomicBool`,
/// whose loads and stores are native on every target (no critical section on a Cortex-M0). The
/// same under loom: it changes only when a limiter is reconfigured, which the loom models do not
/// do, and its `const` constructor keeps `with_listener` a `const fn` there too.
#[cfg(feature = "reconfigure")]
#[derive(Debug)]
pub(crate) struct Flag(portable_atomic::AtomicBool);

#[cfg(feature = "reconfigure")]
impl Flag {
    pub(crate) const fn new(value: bool) -> Self {
        Self(portable_atomic::AtomicBool::new(value))
    }
    #[inline(always)]
    pub(crate) fn get(&self) -> bool {
        self.0.load(portable_atomic::Ordering::Relaxed)
    }
    pub(crate) fn set(&self, value: bool) {
        self.0.store(value, portable_atomic::Ordering::Release)
    }
}

#[cfg(all(feature = "reconfigure", test, loom))]
use loom::sync::atomic::{AtomicU32, Ordering, fence};
#[cfg(all(feature = "reconfigure", not(all(test, loom))))]
use portable_atomic::{AtomicU32, Ordering, fence};

/// A sequence number for a seqlock: loads and stores only (native everywhere), one writer at a
/// time (the writers hold a critical section). Loom's under loom.
#[cfg(feature = "reconfigure")]
#[derive(Debug)]
pub(crate) struct Seq(AtomicU32);

#[cfg(feature = "reconfigure")]
impl Seq {
    const_fn! {
        pub(crate) fn new() -> Self {
            Self(AtomicU32::new(0))
        }
    }
    #[inline(always)]
    pub(crate) fn load(&self) -> u32 {
        self.0.load(Ordering::Acquire)
    }
    pub(crate) fn load_relaxed(&self) -> u32 {
        self.0.load(Ordering::Relaxed)
    }
    pub(crate) fn store_relaxed(&self, value: u32) {
        self.0.store(value, Ordering::Relaxed)
    }
    pub(crate) fn store(&self, value: u32) {
        self.0.store(value, Ordering::Release)
    }
}

/// An acquire fence: loads before it are not reordered after loads that follow it.
#[cfg(feature = "reconfigure")]
#[inline]
pub(crate) fn fence_acquire() {
    fence(Ordering::Acquire);
}

/// A release fence: stores after it are not reordered before stores that precede it.
#[cfg(feature = "reconfigure")]
#[inline]
pub(crate) fn fence_release() {
    fence(Ordering::Release);
}

/// A value only one thread (or interrupt handler) at a time may touch: the keyed table.
///
/// Outside loom it is a `critical_section::Mutex<RefCell<T>>` on every target: a keyed table
/// holds keys of any type, which no atomic can hold, so it needs a lock, and a critical section is
/// the one lock an interrupt handler can take without deadlocking the code it interrupted (on a
/// single-core MCU it masks interrupts for the few instructions the table needs). Under loom it is
/// loom's mutex, so the model checker sees every order in which two threads take it.
#[cfg(not(all(test, loom)))]
pub(crate) struct Lock<T>(critical_section::Mutex<core::cell::RefCell<T>>);

#[cfg(not(all(test, loom)))]
impl<T> Lock<T> {
    pub(crate) const fn new(value: T) -> Self {
        Self(critical_section::Mutex::new(core::cell::RefCell::new(
            value,
        )))
    }

    /// Runs `f` with the value, inside a critical section.
    #[inline]
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        critical_section::with(|cs| f(&mut self.0.borrow(cs).borrow_mut()))
    }
}

/// See the other `Lock`.
#[cfg(all(test, loom))]
pub(crate) struct Lock<T>(loom::sync::Mutex<T>);

#[cfg(all(test, loom))]
impl<T> Lock<T> {
    pub(crate) fn new(value: T) -> Self {
        Self(loom::sync::Mutex::new(value))
    }

    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        f(&mut self.0.lock().unwrap())
    }
}

/// How a call that lost a compare-and-swap waits before it decides again: the one backoff of
/// every CAS loop in ritmo.
///
/// A lost CAS means another core wrote the word a moment ago; trying again at once mostly loses
/// again and pulls the cache line away from the winner. So a loss spins `core::hint::spin_loop`
/// 8 times, the next 16, then 32, and every later loss in a row 64 times. Each wait
/// is bounded and the loop stays lock-free (a loss means another call won). It never yields or
/// parks: core runs without an operating system, and a call that lost has only to wait out
/// another core's few instructions. The first try of a call never waits: an uncontended call
/// costs what it did, and a rejection stays one load.
#[derive(Debug)]
pub(crate) struct Backoff(u32);

/// The first loss spins `2^3` = 8 times: fewer is shorter than moving the cache line to another
/// core and back, so the retry would mostly lose again (measured: `benches/RESULTS.md`).
const FIRST_SPIN: u32 = 3;
/// Losses in a row after which the spin stops growing (`2^6` = 64 spins).
const SPIN_DOUBLINGS: u32 = 6;

impl Backoff {
    /// No loss yet.
    #[inline(always)]
    pub(crate) const fn new() -> Self {
        Backoff(0)
    }

    /// Waits after one more lost compare-and-swap.
    #[inline]
    pub(crate) fn lost(&mut self) {
        self.0 = (self.0 + 1).clamp(FIRST_SPIN, SPIN_DOUBLINGS);
        for _ in 0..1u32 << self.0 {
            core::hint::spin_loop();
        }
        // The model checker cannot see a spin: a waiting thread tells it to let the others run
        // (a reader waiting out a reconfigure would otherwise spin through every branch).
        #[cfg(all(test, loom))]
        loom::thread::yield_now();
    }
}

/// Makes a step that reads and writes several [`U64Cell`]s indivisible: no other step under the
/// same latch runs between two of its cells. Bands take one for a charge and for a refund, whose
/// words are one per band: split, a charge whose later band ran out after an earlier band was
/// charged, and charged again by another call, could not give that earlier charge back (a permit
/// lost, never granted), and a refund could land between another call's bands.
///
/// - On targets without 64-bit atomics (microcontrollers), where every cell is a critical section
///   anyway: one critical section, so an interrupt handler's call lands before or after the step,
///   never inside it. The latch has no field there (zero-sized: the bands keep their size).
/// - Elsewhere: a flag taken with one compare-and-swap and given back with a store, a lost take
///   waiting with the same [`Backoff`] as a lost compare-and-swap of a state. It is held only for
///   the step's arithmetic and stores (no clock read, no listener, no allocation), and readers
///   (`available_permits`, `retry_after`, snapshots) never take it.
#[derive(Debug)]
pub(crate) struct Latch {
    #[cfg(all(not(all(test, loom)), target_has_atomic = "64"))]
    held: portable_atomic::AtomicBool,
    #[cfg(all(test, loom))]
    held: loom::sync::atomic::AtomicBool,
}

impl Latch {
    const_fn! {
    pub(crate) fn new() -> Self {
        Latch {
            #[cfg(all(not(all(test, loom)), target_has_atomic = "64"))]
            held: portable_atomic::AtomicBool::new(false),
            #[cfg(all(test, loom))]
            held: loom::sync::atomic::AtomicBool::new(false),
        }
    }
    }

    /// Runs `f` as one step (see [`Latch`]).
    #[inline(always)]
    pub(crate) fn hold<R>(&self, f: impl FnOnce() -> R) -> R {
        #[cfg(all(not(all(test, loom)), not(target_has_atomic = "64")))]
        return critical_section::with(|_| f());
        #[cfg(any(all(test, loom), target_has_atomic = "64"))]
        {
            #[cfg(all(test, loom))]
            use loom::sync::atomic::Ordering;
            #[cfg(not(all(test, loom)))]
            use portable_atomic::Ordering;
            /// Gives the latch back when the step ends, even by unwinding.
            struct Taken<'a>(&'a Latch);
            impl Drop for Taken<'_> {
                fn drop(&mut self) {
                    self.0.held.store(false, Ordering::Release);
                }
            }
            let mut backoff = Backoff::new();
            while self
                .held
                .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
            {
                // Wait until it looks free before trying again: a load, not a write that pulls
                // the holder's cache line away.
                backoff.lost();
                while self.held.load(Ordering::Relaxed) {
                    backoff.lost();
                }
            }
            let _taken = Taken(self);
            f()
        }
    }
}
