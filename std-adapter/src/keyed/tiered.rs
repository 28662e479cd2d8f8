//! The constructors and accessors of a [`KeyedRateLimiter`] whose keys each follow their tier's
//! config (see [`Tiers`]).

use std::hash::Hash;

use ritmo_core::Clock;
use ritmo_core::keyed::{KeyRate, Tier, Tiers};

use super::KeyedRateLimiter;
use crate::clock::StdClock;

impl<K: Hash + Eq + Clone, const T: usize, P: PartialEq, F: Fn(&K) -> P>
    KeyedRateLimiter<K, StdClock, Tiers<K, T, P, F>>
{
    /// A keyed limiter named `id` giving each key the config of its tier in `tiers`, holding at
    /// most `max_keys` keys, on a new [`StdClock`]. Its own [`config`](Self::config) is tier 0's.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ritmo::Config;
    /// use ritmo::keyed::{Tier, Tiers};
    /// use ritmo::server::KeyedRateLimiter;
    /// /// API keys starting `pk_live_` are on the paid plan.
    /// fn plan(api_key: &String) -> &'static str {
    ///     if api_key.starts_with("pk_live_") { "paid" } else { "free" }
    /// }
    /// let free = Tier::new("free", Config::new(10, Duration::from_secs(60))?);
    /// let paid = Tier::new("paid", Config::new(1000, Duration::from_secs(60))?);
    /// let api = KeyedRateLimiter::tiered("api", Tiers::new([free, paid], plan), 100_000);
    /// assert_eq!(api.available_permits(&"anon".to_string()), 10);
    /// assert_eq!(api.available_permits(&"pk_live_42".to_string()), 1000);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn tiered(id: &'static str, tiers: Tiers<K, T, P, F>, max_keys: usize) -> Self {
        Self::tiered_with_clock(id, tiers, max_keys, StdClock::new())
    }
}

impl<K: Hash + Eq + Clone, C: Clock, const T: usize, P: PartialEq, F: Fn(&K) -> P>
    KeyedRateLimiter<K, C, Tiers<K, T, P, F>>
{
    /// A tiered keyed limiter (see [`tiered`](Self::tiered)) on any clock.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ritmo::{Config, ManualClock};
    /// use ritmo::keyed::{Tier, Tiers};
    /// use ritmo::server::KeyedRateLimiter;
    /// let tiers = Tiers::new(
    ///     [
    ///         Tier::new("free", Config::new(1, Duration::from_secs(1))?),
    ///         Tier::new("paid", Config::new(3, Duration::from_secs(1))?),
    ///     ],
    ///     |user: &u32| if *user >= 100 { "paid" } else { "free" },
    /// );
    /// let l = KeyedRateLimiter::tiered_with_clock("api", tiers, 10, ManualClock::new());
    /// l.try_acquire(&1).unwrap();
    /// assert!(l.try_acquire(&1).is_err());
    /// l.try_acquire_n(&100, 3).unwrap();
    /// assert_eq!(l.tier(&100).map(|t| t.name()), Some("paid"));
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn tiered_with_clock(
        id: &'static str,
        tiers: Tiers<K, T, P, F>,
        max_keys: usize,
        clock: C,
    ) -> Self {
        let config = tiers.tiers()[0].config();
        let tiers = tiers.in_units(clock.tick_rate());
        KeyedRateLimiter::build(KeyRate::with_clock(id, config, clock), tiers, max_keys)
    }

    /// The tier `key` is on now, as the tier function answers; `None` if it answers a plan no
    /// tier has (calls for the key are then refused with [`Reason::UnknownTier`](crate::ritmo::Reason::UnknownTier)).
    pub fn tier(&self, key: &K) -> Option<&Tier<P>> {
        self.tiers.tier_of(key)
    }

    /// The tiers it picks from.
    pub fn tiers(&self) -> &Tiers<K, T, P, F> {
        &self.tiers
    }
}
