//! The constructors and accessors of a [`KeyedLimiter`] whose keys each follow their tier's config
//! (see [`Tiers`]).

use crate::clock::{Clock, FixedRateClock};
#[cfg(feature = "reconfigure")]
use crate::{config::Config, error::TierError};

use super::KeyRules;
use super::{KeyedLimiter, Tier, Tiers};

impl<K, C: FixedRateClock, const N: usize, const T: usize, P, F>
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
    /// use ritmo::keyed::Keyed;
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

impl<K, C: Clock, const N: usize, const T: usize, P: PartialEq, F: Fn(&K) -> P>
    KeyedLimiter<K, C, N, Tiers<K, T, P, F>>
{
    /// A tiered keyed limiter (see [`tiered`](Self::tiered)) on a clock whose tick rate is known
    /// only at run time.
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::{Config, ManualClock};
    /// use ritmo::keyed::{KeyedLimiter, Tier, Tiers};
    /// use ritmo::keyed::Keyed;
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

    /// The tier `key` is on now, as the tier function answers; `None` if it answers a plan no
    /// tier has (calls for the key are then refused with [`Reason::UnknownTier`](crate::Reason::UnknownTier)).
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::keyed::{KeyedLimiter, Tier, Tiers};
    /// let tiers = Tiers::new([Tier::of(0, "all", Config::new(1, Duration::from_secs(1))?)], |k: &u8| *k);
    /// let l: KeyedLimiter<u8, _, 8, _> = KeyedLimiter::tiered_with_clock("x", tiers, ManualClock::new(), 0);
    /// assert_eq!(l.tier(&0).map(|t| t.name()), Some("all"));
    /// assert!(l.tier(&1).is_none());
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn tier(&self, key: &K) -> Option<&Tier<P>> {
        self.rules.tiers.tier_of(key)
    }

    /// The tiers it picks from.
    pub const fn tiers(&self) -> &Tiers<K, T, P, F> {
        &self.rules.tiers
    }

    /// Gives the tier named `name` `config` from now on, live: each of its keys follows the
    /// single limiter's rule ([`RateLimiter::reconfigure`](crate::RateLimiter::reconfigure)):
    /// a key still being limited keeps `min(available, new permits)` and the permits it owes,
    /// while a key idle now (or any key, when the tier was disabled) starts afresh with the new
    /// config's full burst, as a key never seen does. Keys of other tiers are untouched; a
    /// reservation made before the change gives nothing back after it. The config in force
    /// changes nothing. One critical section converts the tier's keys and publishes the numbers.
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::{Config, ErrorCode, ManualClock};
    /// use ritmo::keyed::{KeyedLimiter, Tier, Tiers};
    /// use ritmo::keyed::Keyed;
    /// let clock = ManualClock::new();
    /// let tiers = Tiers::new(
    ///     [
    ///         Tier::new("free", Config::new(4, Duration::from_secs(1))?),
    ///         Tier::new("paid", Config::new(100, Duration::from_secs(1))?),
    ///     ],
    ///     |key: &u32| if *key < 1000 { "free" } else { "paid" },
    /// );
    /// let api: KeyedLimiter<u32, _, 8, _> = KeyedLimiter::tiered_with_clock("api", tiers, &clock, 1);
    /// api.try_acquire_n(&1, 4).unwrap(); // key 1 spends its burst
    /// api.try_acquire(&2).unwrap();
    /// clock.advance(Duration::from_millis(500)); // key 1: 2 back; key 2: idle
    /// api.set_tier_config("free", Config::new(8, Duration::from_secs(1))?).unwrap();
    /// let available = |key| api.available_permits(&key);
    /// assert_eq!((available(1), available(2), available(3)), (2, 8, 8));
    /// let err = api.set_tier_config("gold", Config::new(9, Duration::from_secs(1))?).unwrap_err();
    /// assert_eq!((err.code(), err.name()), (ErrorCode::UnknownTier, "gold"));
    /// assert_eq!(err.to_string(), "RITMO-REG-011: unknown tier name: \"gold\" (limiter \"api\")");
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    #[cfg(feature = "reconfigure")]
    #[cfg_attr(docsrs, doc(cfg(feature = "reconfigure")))]
    pub fn set_tier_config(&self, name: &str, config: Config) -> Result<(), TierError> {
        let reading = self.rules.rate.now();
        self.table.with(|t| {
            let now = t.observe(reading);
            let changed =
                self.rules
                    .tiers
                    .change(&self.rules.rate, name, config, now, |tier, convert| {
                        for slot in t.slots.iter_mut() {
                            if slot.key.is_some() && slot.tier == tier {
                                slot.tat = convert(slot.tat);
                            }
                        }
                    });
            t.rebound();
            changed
        })
    }
}
