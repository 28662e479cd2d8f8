//! The window bounds every admission keeps (SPEC §3, §14), checked over a record of permits used.

use core::time::Duration;

use crate::units::Units;

/// `k` permits used at instant `at`, in the model's units ([`Units`]): the reading of a call
/// admitted at once, or the instant a reservation's permit is there (its slot before it is
/// rounded up to the clock's tick: the limiter's own account of time, which the bound is about).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Use {
    /// When, in units.
    pub at: u128,
    /// Permits it took.
    pub k: u32,
}

impl Use {
    /// `k` permits used by a call admitted at once at reading `ticks`.
    pub fn at_reading(units: &Units, ticks: u64, k: u32) -> Use {
        Use {
            at: units.from_ticks(ticks),
            k,
        }
    }
}

/// SPEC §3's bound: in any window the permits used fit `n + floor(w / T)` with `T = period / n`
/// exactly (the configured rate, not the rounded one), `w` the distance between the first and
/// the last use of the window. Exact in integers:
/// `(count - n) * period * units_per_second <= w_units * n * 10^9`.
///
/// ```
/// use core::time::Duration;
/// use ritmo_test_support::{window_bound, Units, Use};
/// let uses = [Use { at: 0, k: 2 }, Use { at: 500, k: 1 }]; // nanoseconds
/// assert!(window_bound(&uses, 2, Duration::from_nanos(1000), &Units::NANOS).is_ok());
/// let too_many = [Use { at: 0, k: 2 }, Use { at: 499, k: 1 }];
/// assert!(window_bound(&too_many, 2, Duration::from_nanos(1000), &Units::NANOS).is_err());
/// ```
pub fn window_bound(uses: &[Use], n: u32, period: Duration, units: &Units) -> Result<(), String> {
    let mut uses = uses.to_vec();
    uses.sort_by_key(|u| u.at);
    let n = u128::from(n);
    let period = period.as_nanos() * units.per_second();
    for i in 0..uses.len() {
        let mut count = 0u128;
        for u in &uses[i..] {
            count += u128::from(u.k);
            let w = (u.at - uses[i].at) * 1_000_000_000;
            if count > n && (count - n) * period > w * n {
                return Err(format!(
                    "{count} permits between {} and {} units (n = {n}, period {period} ns x units/s)",
                    uses[i].at, u.at
                ));
            }
        }
    }
    Ok(())
}

/// SPEC §14 across a change made at `at` (units): the calls charged under the new config never
/// exceed what was available at the change (`kept`, already capped at the new permits) plus the
/// new rate after it: in `[at, b]` at most `kept + 1 + floor((b - at) / T')` (the 1: progress
/// towards the next permit carries over). A reload never hands out a fresh burst.
pub fn bound_after_change(
    uses: &[Use],
    at: u128,
    kept: u32,
    n: u32,
    period: Duration,
    units: &Units,
) -> Result<(), String> {
    let mut uses = uses.to_vec();
    uses.sort_by_key(|u| u.at);
    let n = u128::from(n);
    let period = period.as_nanos() * units.per_second();
    let mut count = 0u128;
    for u in &uses {
        if u.at < at {
            return Err(format!(
                "a call charged after the change at {at} ran at {}",
                u.at
            ));
        }
        count += u128::from(u.k);
        let allowed = u128::from(kept) + 1;
        let w = (u.at - at) * 1_000_000_000;
        if count > allowed && (count - allowed) * period > w * n {
            return Err(format!(
                "{count} permits in [{at}, {}] after a change that kept {kept}",
                u.at
            ));
        }
    }
    Ok(())
}
