//! The constructors of a [`KeyedLimiter`] whose keys each follow their tier's config
//! (see [`Tiers`]).

use crate::clock::{Clock, FixedRateClock};

use super::KeyRules;
use super::{KeyedLimiter, Tiers};
use core::hash::Hash;

impl<K: Hash + Eq + Clone, C: FixedRateClock, const N: usize, const T: usize, P, F>
    KeyedLimiter<K, C, N, Tiers<K, T, P, F>>
where
    Tiers<K, T, P, F>: super::TierSet<K>,
{
    /// A keyed limiter named `id` giving each key the config of its tier in `tiers`, on `clock`,
    /// hashing keys with `seed`; in a `const` context if need be (a `static`). Its own
    /// [`config`](super::Keyed::config) is tier 0's. See the [`Tiers`] docs.
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::{const_config, ManualClock, Reason};
    /// use ritmo::keyed::{KeyedLimiter, Tier, Tiers};
    /// fn plan(key: &u16) -> &'static str { if *key >= 100 { "paid" } else { "free" } }
    /// static CLOCK: ManualClock = ManualClock::new();
    /// static API: KeyedLimiter<u16, &ManualClock, 16, Tiers<u16, 2>> = KeyedLimiter::tiered(
    ///     "api",
    ///     Tiers::new(
    ///         [
    ///             Tier::new("free", const_config!(1, Duration::from_secs(1))),
    ///             Tier::new("paid", const_config!(3, Duration::from_secs(1))),
    ///         ],
    ///         plan,
    ///     ),
    ///     &CLOCK,
    ///     7,
    /// );
    /// API.try_acquire(&1).unwrap();
    /// assert_eq!(API.try_acquire(&1).unwrap_err().reason(), Reason::NoPermitInTime);
    /// API.try_acquire_n(&100, 3).unwrap();
    /// ```
    #[cfg(not(all(test, loom)))]
    pub const fn tiered(id: &'static str, tiers: Tiers<K, T, P, F>, clock: C, seed: u128) -> Self {
        Self::of(KeyRules::tiered(id, tiers, clock), seed)
    }
}

impl<K: Hash + Eq + Clone, C: Clock, const N: usize, const T: usize, P: PartialEq, F: Fn(&K) -> P>
    KeyedLimiter<K, C, N, Tiers<K, T, P, F>>
{
    /// A tiered keyed limiter (see [`tiered`](Self::tiered)) on a clock whose tick rate is known
    /// only at run time.
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::{Config, ManualClock};
    /// use ritmo::keyed::{KeyedLimiter, Tier, Tiers};
    /// let tiers = Tiers::new(
    ///     [
    ///         Tier::new("free", Config::new(1, Duration::from_secs(1))?),
    ///         Tier::new("paid", Config::new(5, Duration::from_secs(1))?),
    ///     ],
    ///     |key: &&str| if key.starts_with("paid-") { "paid" } else { "free" },
    /// );
    /// let api: KeyedLimiter<&str, _, 8, _> = KeyedLimiter::tiered_with_clock("api", tiers, ManualClock::new(), 1);
    /// assert_eq!((api.available_permits(&"ada"), api.available_permits(&"paid-bob")), (1, 5));
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn tiered_with_clock(
        id: &'static str,
        tiers: Tiers<K, T, P, F>,
        clock: C,
        seed: u128,
    ) -> Self {
        Self::of(KeyRules::tiered_with_clock(id, tiers, clock), seed)
    }
}
