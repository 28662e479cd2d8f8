//! The constructors and accessors of a [`KeyedRateLimiter`] whose keys each follow their tier's
//! config (see [`Tiers`]).

use std::hash::Hash;

use std::sync::PoisonError;

use ritmo_core::keyed::{KeyRules, Tier, Tiers};
use ritmo_core::{Clock, Config, TierError};

use super::KeyedRateLimiter;
use crate::clock::StdClock;

impl<K: Hash + Eq + Clone, const T: usize, P: PartialEq, F: Fn(&K) -> P>
    KeyedRateLimiter<K, StdClock, Tiers<K, T, P, F>>
{
    /// A keyed limiter named `id` giving each key the config of its tier in `tiers`, holding at
    /// most `max_keys` keys, on a new [`StdClock`]. Its own [`config`](crate::ritmo::keyed::Keyed::config) is tier 0's.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ritmo::Config;
    /// use ritmo::keyed::{Tier, Tiers};
    /// use ritmo::server::KeyedRateLimiter;
    /// use ritmo::keyed::Keyed;
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
    /// use ritmo::keyed::Keyed;
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
        KeyedRateLimiter::build(KeyRules::tiered_with_clock(id, tiers, clock), max_keys)
    }

    /// The tier `key` is on now, as the tier function answers; `None` if it answers a plan no
    /// tier has (calls for the key are then refused with [`Reason::UnknownTier`](crate::ritmo::Reason::UnknownTier)).
    pub fn tier(&self, key: &K) -> Option<&Tier<P>> {
        self.rules.tiers().tier_of(key)
    }

    /// The tiers it picks from.
    pub fn tiers(&self) -> &Tiers<K, T, P, F> {
        self.rules.tiers()
    }

    /// Gives the tier named `name` `config` from now on, live, with the rule of
    /// [`reconfigure`](KeyedRateLimiter::reconfigure) for each of its keys: a key still being
    /// limited keeps `min(available, new permits)` and the permits it owes, while a key idle now
    /// (or any key, when the tier was disabled) starts afresh with the new config's full burst.
    /// Keys of other tiers are untouched; a reservation made before the change gives nothing
    /// back after it. The config in force changes nothing; an unknown name is
    /// [`ErrorCode::UnknownTier`](crate::ritmo::ErrorCode::UnknownTier) (`RITMO-REG-011`). The
    /// change converts the tier's keys, one compare-and-swap each, while calls wait for it (as
    /// `reconfigure`'s do). Changes run one at a time.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ritmo::{Config, ManualClock};
    /// use ritmo::keyed::{Tier, Tiers};
    /// use ritmo::server::KeyedRateLimiter;
    /// use ritmo::keyed::Keyed;
    /// let clock = ManualClock::new();
    /// let tiers = Tiers::new(
    ///     [
    ///         Tier::new("free", Config::new(4, Duration::from_secs(1))?),
    ///         Tier::new("paid", Config::new(100, Duration::from_secs(1))?),
    ///     ],
    ///     |user: &u32| if *user < 1000 { "free" } else { "paid" },
    /// );
    /// let api = KeyedRateLimiter::tiered_with_clock("api", tiers, 100, &clock);
    /// api.try_acquire_n(&1, 4).unwrap(); // user 1 spends its burst
    /// api.try_acquire(&2).unwrap();
    /// clock.advance(Duration::from_millis(500)); // user 1: 2 back; user 2: idle
    /// api.set_tier_config("free", Config::new(8, Duration::from_secs(1))?)?;
    /// let available = |user| api.available_permits(&user);
    /// assert_eq!((available(1), available(2), available(3)), (2, 8, 8));
    /// assert!(api.set_tier_config("gold", Config::new(9, Duration::from_secs(1))?).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_tier_config(&self, name: &str, config: Config) -> Result<(), TierError> {
        let _one_at_a_time = self.changes.lock().unwrap_or_else(PoisonError::into_inner);
        let now = self.rules.key_rate().now();
        // As `reconfigure`: the shards' notes are made afresh once the states moved.
        let mut changed = Ok(());
        self.map.changing(|| {
            changed = self.rules.change_tier(name, config, now, |tier, convert| {
                self.map.for_each(|_, entry| {
                    if entry.tier == tier {
                        convert(entry);
                    }
                });
            });
        });
        changed
    }
}
