//! The GCRA arithmetic, as free functions over plain numbers.
//!
//! Nothing here touches an atomic or a clock: every function takes the limiter's state `tat` (the
//! instant at which the next permit arrives), the clock reading `now`, and the limiter's constants,
//! all in the same time unit, and returns a decision. That keeps the rules of the algorithm in one place
//! that a property test can call directly.
//!
//! With `n` permits per period and emission interval `T`, the limiter uses `window = n * T`
//! (saturating). A call for `k` permits whose increment is `k * T`:
//! - is admitted at once if `max(tat, now) + k*T <= now + window`
//!   (for `k = 1` this is the textbook `tat <= now + tau` with `tau = (n - 1) * T`);
//! - otherwise its last permit arrives at `slot = max(tat, now) + k*T - window`.
//!
//! The new `tat` is `max(tat, now) + k*T`, saturating. Nothing here overflows: the slot is
//! computed as `max(tat, now) - (window - k*T)` (never negative: `k <= n`), and a state that has
//! saturated at `u64::MAX` means the next permit arrives after the end of the clock's range, so it
//! admits nothing more (saturating there and then comparing would let every later call through).
//!
//! ```text
//! // 10 permits per 1000 ticks: T = 100, window = 1000. A fresh limiter (tat = 0) at now = 0:
//! assert_eq!(gcra::check(0, 0, 100, 1000), Ok(100));
//! // Ten calls later tat = 1000: the eleventh must wait 100 ticks for its permit.
//! assert_eq!(gcra::check(1000, 0, 100, 1000), Err(100));
//! ```

/// Decides a call at once: `Ok(new_tat)` if it is admitted now, `Err(wait)` with the number of
/// time units until its permit arrives otherwise (`u64::MAX` if it never can).
///
/// `increment` is `k * T` for a call of `k` permits; `window` is `n * T`.
///
/// ```text
/// // 5 permits per 1000: T = 200. tat = 1000 at now = 0 means the burst is spent.
/// assert_eq!(check(1000, 0, 200, 1000), Err(200));
/// assert_eq!(check(1000, 200, 200, 1000), Ok(1200));
/// ```
#[inline(always)]
pub const fn check(tat: u64, now: u64, increment: u64, window: u64) -> Result<u64, u64> {
    let start = if tat > now { tat } else { now };
    // The instant the call's last permit arrives: `start + k*T - window`, without overflow.
    let slot = start.saturating_sub(window.saturating_sub(increment));
    if start == u64::MAX {
        Err(u64::MAX)
    } else if slot <= now {
        Ok(start.saturating_add(increment))
    } else {
        Err(slot - now)
    }
}

/// [`check`] in the form the hot path runs: `limit` is `window - increment + 1` (computed once when
/// the limiter is built), or 0 for a limiter that admits nothing here (a disabled one, which the
/// caller then lets through on its slow path). `increment` must be at least 1. Same results as
/// `check` for every `limit >= 1`.
///
/// Since `start = max(tat, now) >= now`, the textbook test `start - tau <= now` is
/// `start - now < tau + 1`: one subtraction that cannot overflow and one compare. The exhausted
/// state (`start == u64::MAX`) needs no test of its own on the way to admission: there
/// `start + increment` overflows, as it does only near the end of the range, and that rare case
/// is sorted out of line. A refusal carries what its wait is computed from, so that a caller who
/// does not look at the wait does not pay for it.
#[inline(always)]
pub(crate) const fn check_limit(
    tat: u64,
    now: u64,
    increment: u64,
    limit: u64,
) -> Result<u64, Refused> {
    let start = if tat > now { tat } else { now };
    let ahead = start - now;
    match ahead.checked_sub(limit) {
        // ahead < limit: admitted
        None => match start.checked_add(increment) {
            Some(new_tat) => Ok(new_tat),
            None => at_the_end(start),
        },
        Some(over) => Err(Refused { start, over }),
    }
}

/// An admissible call whose new `tat` passes `u64::MAX`: admitted with the state saturated, unless
/// the state is already exhausted.
#[cold]
const fn at_the_end(start: u64) -> Result<u64, Refused> {
    if start == u64::MAX {
        Err(Refused { start, over: 0 })
    } else {
        Ok(u64::MAX)
    }
}

/// A refusal by [`check_limit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Refused {
    pub(crate) start: u64,
    /// `(start - now) - limit`
    pub(crate) over: u64,
}

impl Refused {
    /// Time units until the permits arrive (`u64::MAX`: never), as [`check`] reports it.
    #[inline(always)]
    pub(crate) const fn wait(self) -> u64 {
        if self.start == u64::MAX {
            u64::MAX
        } else {
            // over <= start - now < u64::MAX because start < u64::MAX: no overflow.
            self.over + 1
        }
    }
}

/// The outcome of a call that may wait up to `max_wait` for its permit.
///
/// ```text
/// assert_eq!(reserve(1000, 0, 200, 1000, 500), Reserve::Wait { new_tat: 1200, wait: 200 });
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Reserve {
    /// The permit is there now; the state becomes `new_tat`.
    Now {
        /// The state after taking the permit.
        new_tat: u64,
    },
    /// The permit arrives in `wait` time units, within `max_wait`: the call reserves it (the state
    /// becomes `new_tat`) and waits.
    Wait {
        /// The state after reserving the permit.
        new_tat: u64,
        /// How long until the reserved permit arrives.
        wait: u64,
    },
    /// The permit arrives in `wait` time units, later than `max_wait`: the call is rejected at once
    /// and the state is left as it was.
    Reject {
        /// How long until the permit would arrive (`u64::MAX`: never).
        wait: u64,
    },
}

/// Decides a call that may wait up to `max_wait` time units for its permit.
///
/// ```text
/// // 5 per 1000 (T = 200), burst spent, max_wait 500: waits 200, then 400, then 600 is refused.
/// assert_eq!(reserve(1000, 0, 200, 1000, 500), Reserve::Wait { new_tat: 1200, wait: 200 });
/// assert_eq!(reserve(1200, 0, 200, 1000, 500), Reserve::Wait { new_tat: 1400, wait: 400 });
/// assert_eq!(reserve(1400, 0, 200, 1000, 500), Reserve::Reject { wait: 600 });
/// // Waiting "forever" still refuses once the state is exhausted (past the end of the range).
/// assert_eq!(reserve(u64::MAX, 0, 200, 1000, u64::MAX), Reserve::Reject { wait: u64::MAX });
/// ```
#[inline]
pub const fn reserve(tat: u64, now: u64, increment: u64, window: u64, max_wait: u64) -> Reserve {
    match check(tat, now, increment, window) {
        Ok(new_tat) => Reserve::Now { new_tat },
        // `u64::MAX` means the permit would arrive past the end of the clock's range: refused
        // even with an unbounded `max_wait`.
        Err(wait) if wait <= max_wait && wait != u64::MAX => Reserve::Wait {
            new_tat: (if tat > now { tat } else { now }).saturating_add(increment),
            wait,
        },
        Err(wait) => Reserve::Reject { wait },
    }
}

/// How many single permits would be admitted right now without waiting, in `0..=permits`.
///
/// ```text
/// assert_eq!(available(0, 0, 100, 1000, 10), 10);   // fresh: the full burst
/// assert_eq!(available(1000, 0, 100, 1000, 10), 0); // burst spent
/// assert_eq!(available(1000, 100, 100, 1000, 10), 1);
/// ```
pub const fn available(tat: u64, now: u64, interval: u64, window: u64, permits: u32) -> u32 {
    // The state is exhausted at `u64::MAX` (see the module docs), the clock's reading too.
    if tat <= now {
        // Nothing is owed: the whole burst, as `check` admits it, even where `n * T` saturated
        // (the division below would then count one permit short). Decided first: the usual
        // answer of a limiter at rest.
        return if now == u64::MAX { 0 } else { permits };
    }
    if tat == u64::MAX {
        return 0;
    }
    let start = tat as u128;
    let limit = now as u128 + window as u128;
    if start >= limit || interval == 0 {
        return 0;
    }
    let fit = (limit - start) / interval as u128;
    if fit > permits as u128 {
        permits
    } else {
        fit as u32
    }
}

/// The state after returning a reservation's permits, or `None` if they cannot go back.
///
/// Permits go back only if no later call changed the state after the reservation (`tat` still
/// equals what the reservation wrote): then the state steps back by the `increment` it added.
/// Otherwise later callers are already queued behind it and the slot is left unused, since giving
/// it back would let two calls share one slot. A state that saturated at `u64::MAX` is not stepped
/// back either: it no longer knows what it was before, and stepping back by the increment would
/// return more than was taken.
///
/// ```text
/// assert_eq!(refund(1200, 1200, 200), Some(1000)); // the last reservation: goes back
/// assert_eq!(refund(1400, 1200, 200), None);       // someone queued behind it: left unused
/// ```
#[inline]
pub const fn refund(tat: u64, written: u64, increment: u64) -> Option<u64> {
    // A state that saturated at `u64::MAX` no longer knows what it was before the increment:
    // stepping back from it would return more than was taken, so such a slot stays unused.
    if tat == written && written != u64::MAX {
        Some(written.saturating_sub(increment))
    } else {
        None
    }
}

/// The state after a change of config at `now`: the permits available now become
/// `min(available, new permits)`, permits owed stay owed (a reservation's slot stays where it
/// is and the next call queues after the last one at the new spacing), and the progress towards
/// the next permit carries over, capped at the new emission interval. `interval`, `window` and
/// `permits` are the old config's; `new_*` the new one's, in the same time unit.
///
/// An exhausted state (`u64::MAX`) stays exhausted. (Examples: `reconfigure_examples` below.)
#[allow(clippy::too_many_arguments)]
pub const fn reconfigure(
    tat: u64,
    now: u64,
    interval: u64,
    window: u64,
    permits: u32,
    new_interval: u64,
    new_window: u64,
    new_permits: u32,
) -> u64 {
    if tat == u64::MAX {
        return u64::MAX;
    }
    let old = available(tat, now, interval, window, permits);
    let kept = if old < new_permits { old } else { new_permits };
    if kept == new_permits {
        return now; // a full burst under the new config
    }
    let (tat, now, window) = (tat as u128, now as u128, window as u128);
    let y = if tat > now + window {
        // Owed: the last slot handed out is `tat - window`; the next call queues one new
        // interval after it.
        tat - window + new_window as u128
    } else {
        // `kept` available now and the next one `r` later (0 < r <= T): at most T' later now.
        let start = if tat > now { tat } else { now };
        let r = start + (old as u128 + 1) * interval as u128 - window - now;
        let r = if r > new_interval as u128 {
            new_interval as u128
        } else {
            r
        };
        let r = if r == 0 { 1 } else { r };
        (now + new_window as u128 + r).saturating_sub((kept as u128 + 1) * new_interval as u128)
    };
    if y > u64::MAX as u128 {
        u64::MAX
    } else {
        y as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn reconfigure_examples() {
        // 10 per 1000 (T = 100) with 7 available at now = 0 becomes 5 per 1000 (T = 200): 5.
        let tat = reconfigure(300, 0, 100, 1000, 10, 200, 1000, 5);
        assert_eq!(available(tat, 0, 200, 1000, 5), 5);
        // 3 available become 3 of 5, and the fourth comes when it would have (100), as that is
        // within one new interval.
        let tat = reconfigure(700, 0, 100, 1000, 10, 200, 1000, 5);
        assert_eq!(
            (
                available(tat, 0, 200, 1000, 5),
                available(tat, 100, 200, 1000, 5)
            ),
            (3, 4)
        );
        // Reserved slots stay: the last one was at 500, so the next call queues at 500 + 200.
        let tat = reconfigure(1500, 0, 100, 1000, 10, 200, 1000, 5);
        assert_eq!(check(tat, 0, 200, 1000), Err(700));
        // Exhausted stays exhausted.
        assert_eq!(
            reconfigure(u64::MAX, 0, 100, 1000, 10, 200, 1000, 5),
            u64::MAX
        );
        // Exactly spent (0 available, the next permit one interval away, nothing owed beyond):
        // progress carries over, capped at the new interval: the next permit 100 later, not a
        // whole new interval (200) as if a slot were owed.
        let tat = reconfigure(1000, 0, 100, 1000, 10, 200, 1000, 5);
        assert_eq!(check(tat, 0, 200, 1000), Err(100));
        // Owed near the end of the range, to a longer window: the state saturates rather than
        // wrapping to a small value (which would hand out a burst).
        let tat = u64::MAX - 5;
        assert_eq!(
            reconfigure(tat, tat - 2000, 100, 1000, 10, 200, 2000, 10),
            u64::MAX
        );
    }

    /// The examples in this module's docs.
    #[test]
    fn the_documented_examples_hold() {
        // 10 permits per 1000 ticks: T = 100, window = 1000. A fresh limiter (tat = 0) at now = 0:
        assert_eq!(check(0, 0, 100, 1000), Ok(100));
        // Ten calls later tat = 1000: the eleventh must wait 100 ticks for its permit.
        assert_eq!(check(1000, 0, 100, 1000), Err(100));
        // 5 permits per 1000: T = 200. tat = 1000 at now = 0 means the burst is spent.
        assert_eq!(check(1000, 0, 200, 1000), Err(200));
        assert_eq!(check(1000, 200, 200, 1000), Ok(1200));
        assert_eq!(
            reserve(1000, 0, 200, 1000, 500),
            Reserve::Wait {
                new_tat: 1200,
                wait: 200
            }
        );
        // 5 per 1000 (T = 200), burst spent, max_wait 500: waits 200, then 400, then 600 is refused.
        assert_eq!(
            reserve(1000, 0, 200, 1000, 500),
            Reserve::Wait {
                new_tat: 1200,
                wait: 200
            }
        );
        assert_eq!(
            reserve(1200, 0, 200, 1000, 500),
            Reserve::Wait {
                new_tat: 1400,
                wait: 400
            }
        );
        assert_eq!(
            reserve(1400, 0, 200, 1000, 500),
            Reserve::Reject { wait: 600 }
        );
        // Waiting "forever" still refuses once the state is exhausted (past the end of the range).
        assert_eq!(
            reserve(u64::MAX, 0, 200, 1000, u64::MAX),
            Reserve::Reject { wait: u64::MAX }
        );
        assert_eq!(available(0, 0, 100, 1000, 10), 10); // fresh: the full burst
        assert_eq!(available(1000, 0, 100, 1000, 10), 0); // burst spent
        assert_eq!(available(1000, 100, 100, 1000, 10), 1);
        assert_eq!(refund(1200, 1200, 200), Some(1000)); // the last reservation: goes back
        assert_eq!(refund(1400, 1200, 200), None); // someone queued behind it: left unused
    }

    /// `check` in exact `u128` arithmetic, straight from the textbook rule (plus the exhausted state).
    fn check_ref(tat: u64, now: u64, inc: u64, window: u64) -> Result<u64, u64> {
        let start = tat.max(now);
        if start == u64::MAX {
            return Err(u64::MAX);
        }
        let (start, now, inc, window) = (start as u128, now as u128, inc as u128, window as u128);
        if start + inc <= now + window {
            Ok((start + inc).min(u64::MAX as u128) as u64)
        } else {
            Err((start + inc - window - now) as u64)
        }
    }

    fn edgy() -> impl Strategy<Value = u64> {
        prop_oneof![
            Just(0u64),
            Just(u64::MAX),
            (0u64..16).prop_map(|d| u64::MAX - d),
            0u64..1_000,
            any::<u64>(),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 4096, ..ProptestConfig::default() })]

        #[test]
        fn check_matches_exact_arithmetic(
            tat in edgy(), now in edgy(), t in 1u64..1_000_000, n in 1u64..64, k in 1u64..64,
        ) {
            let k = k.min(n);
            let window = t.saturating_mul(n);
            let inc = t.saturating_mul(k);
            prop_assert_eq!(check(tat, now, inc, window), check_ref(tat, now, inc, window));
        }

        #[test]
        fn check_limit_agrees_with_check(
            tat in edgy(), now in edgy(), t in prop_oneof![1u64..1_000_000, 1u64..], n in 1u64..64,
            k in 1u64..64,
        ) {
            let k = k.min(n);
            let window = t.saturating_mul(n);
            let inc = t.saturating_mul(k);
            let limit = window - inc + 1;
            prop_assert_eq!(
                check_limit(tat, now, inc, limit).map_err(Refused::wait),
                check(tat, now, inc, window)
            );
            // limit 0 admits nothing
            prop_assert!(check_limit(tat, now, inc, 0).is_err());
        }

        #[test]
        fn reserve_agrees_with_check(
            tat in edgy(), now in edgy(), t in 1u64..1_000_000, n in 1u64..64, max_wait in edgy(),
        ) {
            let window = t.saturating_mul(n);
            match (reserve(tat, now, t, window, max_wait), check(tat, now, t, window)) {
                (Reserve::Now { new_tat }, Ok(expected)) => prop_assert_eq!(new_tat, expected),
                (Reserve::Wait { new_tat, wait }, Err(w)) => {
                    prop_assert_eq!(wait, w);
                    prop_assert!(wait <= max_wait);
                    prop_assert_eq!(new_tat, tat.max(now).saturating_add(t));
                }
                (Reserve::Reject { wait }, Err(w)) => {
                    prop_assert_eq!(wait, w);
                    prop_assert!(wait > max_wait || wait == u64::MAX);
                }
                (r, c) => prop_assert!(false, "reserve {:?} vs check {:?}", r, c),
            }
        }

        #[test]
        fn available_counts_what_check_admits(
            tat in 0u64..10_000, now in 0u64..10_000, t in 1u64..500, n in 1u32..20,
        ) {
            let window = t * n as u64;
            let mut state = tat;
            let mut admitted = 0;
            while let Ok(next) = check(state, now, t, window) {
                state = next;
                admitted += 1;
            }
            prop_assert_eq!(available(tat, now, t, window, n), admitted);
        }

        #[test]
        fn a_refund_undoes_exactly_the_last_take(tat in 0u64..1 << 40, now in 0u64..1 << 40, t in 1u64..1 << 20) {
            let window = t * 4;
            if let Ok(written) = check(tat, now, t, window) {
                let back = refund(written, written, t).unwrap();
                prop_assert_eq!(back, tat.max(now));
                prop_assert_eq!(refund(written + 1, written, t), None);
            }
        }
    }
}
