//! Per-key quotas: [`Tiers`], the fixed set of configs a tiered keyed limiter picks each key's
//! from, and [`TierSet`], what a keyed limiter's keys get their config from.

use core::fmt;

use crate::clock::TickRate;
use crate::config::Config;
use crate::error::InvalidPermits;
use crate::gcra;
use crate::rate::{Rate, carry_over};

use super::rate::Decision;

/// One tier: a name (what clients are told, e.g. in HTTP's `RateLimit-Policy`) and the config
/// its keys get.
///
/// ```
/// use core::time::Duration;
/// use ritmo::{const_config};
/// use ritmo::keyed::Tier;
/// const FREE: Tier = Tier::new("free", const_config!(10, Duration::from_secs(60)));
/// assert_eq!((FREE.name(), FREE.config().permits()), ("free", 10));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Tier {
    name: &'static str,
    config: Config,
}

impl Tier {
    /// A tier named `name` whose keys get `config`.
    pub const fn new(name: &'static str, config: Config) -> Tier {
        Tier { name, config }
    }

    /// Its name.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The config its keys get.
    pub const fn config(&self) -> Config {
        self.config
    }
}

/// Per-key quotas: a keyed limiter whose keys each get the config of one of a small, fixed set of
/// tiers ("free": 10 a minute, "paid": 1000 a minute), picked by a function of the key.
///
/// A tier set is [`Tiers`]: `T` named configs and a plain `fn(&K) -> usize` that says which one a
/// key is on, both fixed when the limiter is built, so a tiered [`KeyedLimiter`](crate::keyed::KeyedLimiter)
/// is still a `static` with no heap. Each slot keeps the index of the tier its state was made
/// under (one byte, padded to the slot's alignment: a `u32` key's slot grows from 16 to 24 bytes);
/// a keyed limiter of one config keeps none ([`OneTier`], the default).
///
/// - Every call asks the function for the key's tier and decides with that tier's config (its
///   permits, period and `max_wait`).
/// - A key whose tier changes (an upgrade: the function now answers another tier for it) is
///   reconfigured alone, at the first call for it that takes permits (whatever that call's
///   outcome; a read such as `available_permits` shows what such a call would find, and changes
///   nothing), with the single limiter's rule
///   ([`RateLimiter::reconfigure`](crate::RateLimiter::reconfigure)): its available permits become
///   `min(available, new permits)`, permits owed stay owed. No fresh burst, nothing lost. A
///   reservation made under the old tier gives nothing back once the key has changed tier.
/// - Exact eviction holds per tier: a key is idle, and its slot reusable, when its burst is full
///   again for its own tier (`tat <= now`, whatever the tier).
/// - A function that answers an index with no tier gets [`Reason::UnknownTier`] for that call
///   (`retry_after` never), and nothing changes: never a panic.
///
/// ```
/// use core::time::Duration;
/// use ritmo::{const_config, ManualClock};
/// use ritmo::keyed::{KeyedLimiter, Tier, Tiers};
///
/// /// Customers below 1000 are on the free plan; the others pay.
/// fn plan(customer: &u32) -> usize {
///     if *customer < 1000 { 0 } else { 1 }
/// }
/// static CLOCK: ManualClock = ManualClock::new();
/// static API: KeyedLimiter<u32, &ManualClock, 64, Tiers<u32, 2>> = KeyedLimiter::tiered(
///     "api",
///     Tiers::new(
///         [
///             Tier::new("free", const_config!(2, Duration::from_secs(60))),
///             Tier::new("paid", const_config!(100, Duration::from_secs(60))),
///         ],
///         plan,
///     ),
///     &CLOCK,
///     0x5eed,
/// );
/// assert_eq!((API.available_permits(&7), API.available_permits(&4242)), (2, 100));
/// assert_eq!(API.tier(&4242).map(|t| t.name()), Some("paid"));
/// ```
///
/// `T` is 1 to 255. A tiered limiter has no `reconfigure`: its tiers are fixed when it is built.
///
/// [`Reason::UnknownTier`]: crate::Reason::UnknownTier
///
/// `T = 0` does not compile:
///
/// ```compile_fail
/// use ritmo::keyed::Tiers;
/// fn none(_: &u8) -> usize { 0 }
/// const NONE: Tiers<u8, 0> = Tiers::new([], none);
/// let _ = NONE;
/// ```
pub struct Tiers<K: ?Sized, const T: usize> {
    tiers: [Tier; T],
    pick: fn(&K) -> usize,
    /// Each tier's config in the limiter's units (set by the limiter that takes the tiers).
    rates: [Rate; T],
}

impl<K: ?Sized, const T: usize> Clone for Tiers<K, T> {
    fn clone(&self) -> Self {
        Tiers {
            tiers: self.tiers,
            pick: self.pick,
            rates: self.rates,
        }
    }
}

impl<K: ?Sized, const T: usize> fmt::Debug for Tiers<K, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tiers")
            .field("tiers", &self.tiers)
            .finish_non_exhaustive()
    }
}

impl<K: ?Sized, const T: usize> Tiers<K, T> {
    /// The tiers `tiers` (index 0, 1, ...), a key being on tier `pick(key)`; in a `const`
    /// context if need be.
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::Config;
    /// use ritmo::keyed::{Tier, Tiers};
    /// let tiers: Tiers<str, 2> = Tiers::new(
    ///     [
    ///         Tier::new("free", Config::new(10, Duration::from_secs(60))?),
    ///         Tier::new("paid", Config::new(1000, Duration::from_secs(60))?),
    ///     ],
    ///     |key| usize::from(key.starts_with("sk_paid_")),
    /// );
    /// assert_eq!(tiers.tier_of("sk_paid_42").map(|t| t.name()), Some("paid"));
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub const fn new(tiers: [Tier; T], pick: fn(&K) -> usize) -> Self {
        const { assert!(T > 0 && T <= 255, "a tier set holds 1 to 255 tiers") };
        Tiers {
            tiers,
            pick,
            rates: rates_of(&tiers, TickRate::from_hz(1_000_000_000)),
        }
    }

    /// The tiers, by index.
    pub const fn tiers(&self) -> &[Tier; T] {
        &self.tiers
    }

    /// The tier `key` is on now; `None` if the function answers an index with no tier.
    pub fn tier_of(&self, key: &K) -> Option<&Tier> {
        self.tiers.get((self.pick)(key))
    }

    /// The same tiers in the units of a clock of `tick` (what a limiter taking them does).
    #[doc(hidden)]
    pub const fn in_units(mut self, tick: TickRate) -> Self {
        self.rates = rates_of(&self.tiers, tick);
        self
    }
}

const fn rates_of<const T: usize>(tiers: &[Tier; T], tick: TickRate) -> [Rate; T] {
    let mut rates = [Rate::new(&tiers[0].config, tick); T];
    let mut i = 1;
    while i < T {
        rates[i] = Rate::new(&tiers[i].config, tick);
        i += 1;
    }
    rates
}

/// The tier set of a keyed limiter of one config: no tier kept per key, nothing to pick.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OneTier;

mod sealed {
    pub trait Sealed {}
}

impl sealed::Sealed for OneTier {}
impl<K: ?Sized, const T: usize> sealed::Sealed for Tiers<K, T> {}

/// Where a keyed limiter's keys get their config: [`OneTier`] (the limiter's own config, the
/// default) or [`Tiers`]. Sealed; its items are for ritmo's keyed stores.
pub trait TierSet<K: ?Sized>: sealed::Sealed {
    /// What a slot keeps of its key's tier: `()` for one tier, a `u8` for [`Tiers`].
    #[doc(hidden)]
    type Index: super::table::SlotTier + fmt::Debug + Send + Sync + 'static;
    /// The tier of `key` now; `Err(index)` when the function answers an index with no tier.
    #[doc(hidden)]
    fn pick(&self, key: &K) -> Result<Self::Index, usize>;
    /// The numbers of tier `index`; `None`: the limiter's own config (one tier).
    #[doc(hidden)]
    fn rules(&self, index: Self::Index) -> Option<TierRules>;
    /// The tier at `position`, if the set has named tiers.
    #[doc(hidden)]
    fn tier(&self, position: usize) -> Option<&Tier>;
    /// How many tiers (1 for one config).
    #[doc(hidden)]
    fn count(&self) -> usize;
    /// `index` as a number (0 for one tier).
    #[doc(hidden)]
    fn position(index: Self::Index) -> u8;
    /// Whether a reservation made on the tier at `position` can still go back to a key now on
    /// `index`: the same tier, or one with the same numbers (nothing was carried over).
    #[doc(hidden)]
    fn refundable(&self, index: Self::Index, position: u8) -> bool;
}

impl<K: ?Sized> TierSet<K> for OneTier {
    type Index = ();

    #[inline(always)]
    fn pick(&self, _key: &K) -> Result<(), usize> {
        Ok(())
    }

    #[inline(always)]
    fn rules(&self, _index: ()) -> Option<TierRules> {
        None
    }

    fn tier(&self, _position: usize) -> Option<&Tier> {
        None
    }

    fn count(&self) -> usize {
        1
    }

    #[inline(always)]
    fn position(_index: ()) -> u8 {
        0
    }

    #[inline(always)]
    fn refundable(&self, _index: (), _position: u8) -> bool {
        true
    }
}

impl<K: ?Sized, const T: usize> TierSet<K> for Tiers<K, T> {
    type Index = u8;

    #[inline]
    fn pick(&self, key: &K) -> Result<u8, usize> {
        let index = (self.pick)(key);
        if index < T {
            Ok(index as u8) // T <= 255
        } else {
            Err(index)
        }
    }

    #[inline]
    fn rules(&self, index: u8) -> Option<TierRules> {
        self.rates
            .get(usize::from(index))
            .map(|rate| TierRules(*rate))
    }

    fn tier(&self, position: usize) -> Option<&Tier> {
        self.tiers.get(position)
    }

    fn count(&self) -> usize {
        T
    }

    #[inline(always)]
    fn position(index: u8) -> u8 {
        index
    }

    fn refundable(&self, index: u8, position: u8) -> bool {
        index == position || self.rules(index) == self.rules(position)
    }
}

/// One tier's numbers in a limiter's units: what a keyed store decides a key's calls with. For
/// ritmo's keyed stores.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TierRules(pub(crate) Rate);

impl TierRules {
    /// Whether the tier limits at all.
    #[inline]
    pub fn enabled(&self) -> bool {
        self.0.enabled()
    }

    /// Permits per period.
    pub fn permits(&self) -> u32 {
        self.0.permits
    }

    /// `max_wait` in units.
    pub fn max_wait(&self) -> u64 {
        self.0.max_wait
    }

    /// `k * T`.
    pub fn increment(&self, k: u32) -> u64 {
        self.0.increment(k)
    }

    /// `Err` for `k = 0` or `k > permits` of limiter `id`.
    #[inline]
    pub fn check_permits(&self, id: &'static str, k: u32) -> Result<(), InvalidPermits> {
        if k == 0 || k > self.0.permits {
            Err(InvalidPermits::new(id, k, self.0.permits))
        } else {
            Ok(())
        }
    }

    /// What a call does to a key whose state is `tat` (see `KeyRate::decide`).
    #[inline]
    pub fn decide(&self, tat: u64, now: u64, k: u32, max_wait: u64) -> Decision {
        super::rate::decide_with(&self.0, tat, now, k, max_wait)
    }

    /// Calls of one permit a key whose state is `tat` would pass at `now`: the one rule of
    /// every keyed peek (`KeyRate::available` applies it to the config in force).
    pub fn available(&self, tat: u64, now: u64) -> u32 {
        if !self.0.enabled() {
            return self.0.permits;
        }
        gcra::available(tat, now, self.0.interval, self.0.window(), self.0.permits)
    }

    /// Units until `k` permits would pass at once.
    pub fn wait(&self, tat: u64, now: u64, k: u32) -> u64 {
        if !self.0.enabled() {
            return 0;
        }
        match gcra::check(tat, now, self.0.increment(k), self.0.window()) {
            Ok(_) => 0,
            Err(wait) => wait,
        }
    }

    /// A key's state `tat` made under these numbers, carried over at `now` to `to`'s (a change
    /// of tier): the single limiter's `reconfigure` rule. An idle key is left as it is: its burst
    /// is full under any tier.
    #[inline]
    pub fn carry(&self, tat: u64, now: u64, to: &TierRules) -> u64 {
        if tat <= now || self.0 == to.0 {
            tat
        } else {
            carry_over(tat, now, &self.0, &to.0)
        }
    }
}
