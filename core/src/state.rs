//! The limiter's one word of state, `tat`, and the compare-and-swap loops that move it.
//!
//! Every change is one CAS on `tat`; a rejected call only loads it. A call that loses the CAS race
//! backs off before it tries again ([`Backoff`]: a bounded spin that doubles with each loss in a
//! row), so that cores fighting over one word take turns
//! instead of bouncing its cache line on every try. Nothing parks, sleeps or takes a lock here (on
//! targets without 64-bit atomics the "CAS" is a short critical section: see [`crate::sync`]).
//! Every compare-and-swap loop of every kind (single limiter, reconfigured limiter, bands, keyed
//! tables) backs off through [`Backoff`].

use crate::gcra::{self, Refused};
use crate::rate::Rate;
use crate::sync::{Backoff, U64Cell};
#[cfg(feature = "reconfigure")]
use crate::sync::{Seq, fence_acquire};

/// What [`State::take`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Take {
    /// The permits were taken.
    Taken,
    /// They are not there now; nothing changed.
    Refused(Refused),
    /// Another call changed the state first: decide again
    /// ([`State::take_contended`]). Never on targets without 64-bit atomics (a critical section
    /// cannot lose).
    #[cfg_attr(not(any(target_has_atomic = "64", all(test, loom))), allow(dead_code))]
    Lost,
}

/// `tat`: the instant, in the limiter's time unit, at which the next permit arrives. 0 at start,
/// so a new limiter holds its full burst.
///
/// On 64-bit targets the state has a cache line of its own, so that two limiters used by two
/// cores do not slow each other down (false sharing).
#[derive(Debug)]
#[cfg_attr(target_pointer_width = "64", repr(align(128)))]
pub(crate) struct State {
    tat: U64Cell,
}

impl State {
    const_fn! {
    pub(crate) fn new() -> Self {
        State {
            tat: U64Cell::new(0),
        }
    }
    }

    /// `B` fresh states (one per band), built in a `const` context.
    #[cfg(not(all(test, loom)))]
    pub(crate) const fn array<const B: usize>() -> [State; B] {
        [const { State::new() }; B]
    }

    /// `B` fresh states (one per band): loom's atomics cannot be built in a `const` context.
    #[cfg(all(test, loom))]
    pub(crate) fn array<const B: usize>() -> [State; B] {
        core::array::from_fn(|_| State::new())
    }

    #[inline(always)]
    pub(crate) fn tat(&self) -> u64 {
        self.tat.load()
    }

    /// Takes one permit at `rate`'s bounds if it is there now: the hot path. On targets with
    /// 64-bit atomics, one load and one CAS; it loads the state first and reads the constants
    /// after, where they are used (read before the acquire load, they are held in registers
    /// across it: several instructions on every call). A lost CAS is returned as it is
    /// ([`Take::Lost`]): the caller continues with [`take_contended`](Self::take_contended) out
    /// of line, so that the retry loop's bookkeeping costs the fast path nothing.
    ///
    /// On targets without them, one critical section, which cannot lose a race: the retry loop
    /// is not even linked in (and an admitted call takes one critical section, not two).
    #[inline(always)]
    pub(crate) fn take_one(&self, now: u64, rate: &Rate) -> Take {
        #[cfg(any(target_has_atomic = "64", all(test, loom)))]
        {
            let tat = self.tat.load();
            match gcra::check_limit(tat, now, rate.interval, rate.limit) {
                Ok(new_tat) => match self.tat.compare_exchange_weak(tat, new_tat) {
                    Ok(_) => Take::Taken,
                    Err(_) => Take::Lost,
                },
                Err(refused) => Take::Refused(refused),
            }
        }
        #[cfg(not(any(target_has_atomic = "64", all(test, loom))))]
        {
            match self
                .tat
                .update(|tat| gcra::check_limit(tat, now, rate.interval, rate.limit))
            {
                Ok(()) => Take::Taken,
                Err(refused) => Take::Refused(refused),
            }
        }
    }

    /// Takes `increment` worth of permits if they are there now, admitted below `limit`
    /// (`window - increment + 1`), as [`take_one`](Self::take_one) does.
    #[inline(always)]
    pub(crate) fn take_n(&self, now: u64, increment: u64, limit: u64) -> Take {
        #[cfg(any(target_has_atomic = "64", all(test, loom)))]
        {
            let tat = self.tat.load();
            match gcra::check_limit(tat, now, increment, limit) {
                Ok(new_tat) => match self.tat.compare_exchange_weak(tat, new_tat) {
                    Ok(_) => Take::Taken,
                    Err(_) => Take::Lost,
                },
                Err(refused) => Take::Refused(refused),
            }
        }
        #[cfg(not(any(target_has_atomic = "64", all(test, loom))))]
        {
            match self
                .tat
                .update(|tat| gcra::check_limit(tat, now, increment, limit))
            {
                Ok(()) => Take::Taken,
                Err(refused) => Take::Refused(refused),
            }
        }
    }

    /// [`take_one`](Self::take_one) or [`take_n`](Self::take_n) after a lost CAS: backs off,
    /// reads the state afresh and decides again, until taken (`Ok(new_tat)`) or refused.
    #[inline]
    pub(crate) fn take_contended(
        &self,
        now: u64,
        increment: u64,
        limit: u64,
    ) -> Result<u64, Refused> {
        take_contended(&self.tat, now, increment, limit)
    }

    /// The word itself, for the loops below that take any state word (a single limiter's
    /// reconfigured state is one of two words outside this type).
    #[inline(always)]
    pub(crate) fn word(&self) -> &U64Cell {
        &self.tat
    }

    /// Raises the state to `value` if it is below (save and restore, `persist.rs`): never lowers
    /// it, so that a restore can only make the limiter stricter.
    pub(crate) fn raise_to(&self, value: u64) {
        let mut tat = self.tat.load();
        while tat < value {
            match self.tat.compare_exchange(tat, value) {
                Ok(_) => return,
                Err(found) => tat = found,
            }
        }
    }
}

/// Gives back a reservation that wrote `written` to `cell` and added `increment`, if nothing
/// changed the state since (giving them back then would let two calls share one slot). Returns
/// whether the permits went back.
#[inline]
pub(crate) fn refund(cell: &U64Cell, written: u64, increment: u64) -> bool {
    let tat = cell.load();
    match gcra::refund(tat, written, increment) {
        Some(back) => cell.compare_exchange(tat, back).is_ok(),
        None => false,
    }
}

/// The one compare-and-swap loop, for every state word (a limiter's, a band's, a key's): until
/// `attempt` answers (`None`: its compare-and-swap lost), backs off and tries again; `backoff`
/// is fresh, or has counted the losses before the loop.
#[inline(always)]
pub(crate) fn until_won<R>(mut backoff: Backoff, mut attempt: impl FnMut() -> Option<R>) -> R {
    loop {
        if let Some(answer) = attempt() {
            return answer;
        }
        backoff.lost();
    }
}

/// Moves `cell` by `decide` of its value: `Ok((new, answer))` writes `new` with one
/// compare-and-swap (nothing when it is the value already there), `Err` writes nothing; a lost
/// compare-and-swap decides again with the value read afresh ([`until_won`]).
#[inline]
pub(crate) fn update<T, E>(
    cell: &U64Cell,
    backoff: Backoff,
    mut decide: impl FnMut(u64) -> Result<(u64, T), E>,
) -> Result<T, E> {
    until_won(backoff, || {
        let tat = cell.load();
        match decide(tat) {
            Ok((new, answer)) if new == tat || cell.compare_exchange_weak(tat, new).is_ok() => {
                Some(Ok(answer))
            }
            Ok(_) => None,
            Err(refused) => Some(Err(refused)),
        }
    })
}

/// A take of `increment` below `limit` whose compare-and-swap on `cell` lost: backs off first
/// (the value the lost one found is stale after the wait), then [`update`]s.
#[inline]
pub(crate) fn take_contended(
    cell: &U64Cell,
    now: u64,
    increment: u64,
    limit: u64,
) -> Result<u64, Refused> {
    let mut backoff = Backoff::new();
    backoff.lost();
    update(cell, backoff, |tat| {
        gcra::check_limit(tat, now, increment, limit).map(|new_tat| (new_tat, new_tat))
    })
}

/// Reads what the sequence lock `seq` guards with `read` (given the sequence number), consistently:
/// waits out a change in progress (an odd number) with the same [`Backoff`] as a lost
/// compare-and-swap, and reads again if a change began meanwhile. Returns what was read and the
/// (even) sequence number it belongs to. The one reader of every reconfigured kind's numbers.
#[cfg(feature = "reconfigure")]
pub(crate) fn read_consistent<T>(seq: &Seq, mut read: impl FnMut(u32) -> T) -> (T, u32) {
    until_won(Backoff::new(), || {
        let at = seq.load();
        if at & 1 == 1 {
            return None; // a change is being written: wait it out
        }
        let value = read(at);
        fence_acquire();
        (seq.load_relaxed() == at).then_some((value, at))
    })
}

/// A count of admitted calls (feature `counters`), on a cache line of its own on 64-bit targets
/// so that counting does not slow down the compare-and-swap on `tat` of another core.
///
/// On targets with 64-bit atomics the count is a plain load and store (a locked add would cost
/// the admitted call as much again as its compare-and-swap, measured): exact while one core at a
/// time admits calls on the limiter, and may undercount (never overcount) when two cores admit at
/// the same instant. Without 64-bit atomics it is one critical section, and exact.
#[cfg(feature = "counters")]
#[derive(Debug)]
#[cfg_attr(target_pointer_width = "64", repr(align(128)))]
pub(crate) struct Counter(U64Cell);

#[cfg(feature = "counters")]
impl Counter {
    const_fn! {
        pub(crate) fn new() -> Self {
            Counter(U64Cell::new(0))
        }
    }

    #[inline(always)]
    pub(crate) fn increment(&self) {
        self.0.add(1);
    }

    pub(crate) fn get(&self) -> u64 {
        self.0.load_relaxed()
    }
}

impl State {
    /// Sets the state to `new`: for a caller that decided from [`tat`](Self::tat) while it holds
    /// the only right to write this state (bands, under their latch).
    #[inline]
    pub(crate) fn set(&self, new: u64) {
        self.tat.store(new);
    }

    /// Sets the state to `u64::MAX` (a state that admits nothing) and returns what it held: for a
    /// reconfigure, which then moves the limiter's state elsewhere.
    #[cfg(feature = "reconfigure")]
    pub(crate) fn freeze(&self) -> u64 {
        self.exchange(u64::MAX)
    }

    /// Sets the state to `value` and returns what it held (one compare-and-swap loop).
    #[cfg(feature = "reconfigure")]
    pub(crate) fn exchange(&self, value: u64) -> u64 {
        let mut tat = self.tat.load();
        loop {
            match self.tat.compare_exchange(tat, value) {
                Ok(_) => return tat,
                Err(found) => tat = found,
            }
        }
    }
}
