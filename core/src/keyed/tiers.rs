//! Per-key quotas: [`Tiers`], the fixed set of configs a tiered keyed limiter picks each key's
//! from, and [`TierSet`], what a keyed limiter's keys get their config from.

use core::fmt;
use core::marker::PhantomData;

use crate::clock::TickRate;
use crate::config::Config;
use crate::rate::Rate;
#[cfg(feature = "reconfigure")]
use crate::sync::U64Cell;
#[cfg(feature = "reconfigure")]
use core::cell::Cell;

use super::rules::TierRules;

/// One tier: the plan a tier function answers for its keys (a value of the user's own type, an
/// enum say, or the tier's name itself), the name clients are told (in errors, metrics labels and
/// HTTP's `RateLimit-Policy`) and the config its keys get.
///
/// ```
/// use core::time::Duration;
/// use ritmo::{const_config};
/// use ritmo::keyed::Tier;
/// // Named by its name alone: the tier function answers "free".
/// const FREE: Tier = Tier::new("free", const_config!(10, Duration::from_secs(60)));
/// assert_eq!((FREE.name(), FREE.config().permits()), ("free", 10));
/// // Or by a plan of the user's own type, with the name clients see.
/// #[derive(Debug, Clone, Copy, PartialEq, Eq)]
/// enum Plan { Free, Paid }
/// const PAID: Tier<Plan> = Tier::of(Plan::Paid, "paid", const_config!(1000, Duration::from_secs(60)));
/// assert_eq!((*PAID.plan(), PAID.name()), (Plan::Paid, "paid"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Tier<P = &'static str> {
    plan: P,
    name: &'static str,
    config: Config,
}

impl Tier {
    /// A tier named `name` whose keys get `config`; a tier function picks it by answering
    /// `name`.
    pub const fn new(name: &'static str, config: Config) -> Tier {
        Tier {
            plan: name,
            name,
            config,
        }
    }
}

impl<P> Tier<P> {
    /// The tier of `plan` (what the tier function answers for its keys), named `name` (what
    /// clients are told), whose keys get `config`.
    pub const fn of(plan: P, name: &'static str, config: Config) -> Tier<P> {
        Tier { plan, name, config }
    }

    /// The plan a tier function answers for its keys.
    pub const fn plan(&self) -> &P {
        &self.plan
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
/// tiers ("free": 10 a minute, "paid": 1000 a minute), chosen by a function of the key.
///
/// A tier set is [`Tiers`]: `T` named tiers ([`Tier`]) and a tier function `F`, any
/// `Fn(&K) -> P` (a closure capturing a map of API keys to plans included) that answers the plan
/// `P` of a key: a value of the user's own type (an enum of plans, with [`Tier::of`]) or a tier's
/// name (`&'static str`, with [`Tier::new`]). A key is on the tier whose plan equals the answer.
/// Heap-free: a tiered [`KeyedLimiter`](crate::keyed::KeyedLimiter) built with a plain `fn` is
/// still a `static`. Each slot keeps the index of the tier its state was made under (one byte,
/// padded to the slot's alignment: a `u32` key's slot grows from 16 to 24 bytes); a keyed limiter
/// of one config keeps none ([`OneTier`], the default).
///
/// - Every call asks the function for the key's plan and decides with its tier's config (its
///   permits, period and `max_wait`).
/// - A key whose tier changes (an upgrade: the function now answers another plan for it) is
///   reconfigured alone, at the first call for it that takes permits (whatever that call's
///   outcome; a read such as `available_permits` shows what such a call would find, and changes
///   nothing), with the single limiter's rule
///   ([`RateLimiter::reconfigure`](crate::RateLimiter::reconfigure)): its available permits become
///   `min(available, new permits)`, permits owed stay owed. No fresh burst, nothing lost; a key
///   idle at the change (or on a disabled tier) starts afresh on its new tier (idle is new). A
///   reservation made under the old tier gives nothing back once the key has changed tier.
/// - Exact eviction holds per tier: a key is idle, and its slot reusable, when its burst is full
///   again for its own tier (`tat <= now`, whatever the tier).
/// - A function that answers a plan no tier has gets [`Reason::UnknownTier`] for that call
///   (`retry_after` never), and nothing changes: never a panic.
///
/// ```
/// use std::collections::HashMap;
/// use core::time::Duration;
/// use ritmo::{Config, ManualClock, Reason};
/// use ritmo::keyed::{KeyedLimiter, Tier, Tiers};
///
/// #[derive(Debug, Clone, Copy, PartialEq, Eq)]
/// enum Plan { Free, Paid }
///
/// // The API keys the service knows, and their plans (loaded from a database, say).
/// let plans: HashMap<String, Plan> =
///     HashMap::from([("sk_ada".to_string(), Plan::Paid), ("sk_bob".to_string(), Plan::Free)]);
/// let tiers = Tiers::new(
///     [
///         Tier::of(Plan::Free, "free", Config::new(2, Duration::from_secs(60))?),
///         Tier::of(Plan::Paid, "paid", Config::new(100, Duration::from_secs(60))?),
///     ],
///     // A closure capturing the map: unknown keys are on the free plan.
///     move |key: &String| plans.get(key).copied().unwrap_or(Plan::Free),
/// );
/// let api: KeyedLimiter<String, _, 64, _> =
///     KeyedLimiter::tiered_with_clock("api", tiers, ManualClock::new(), 0x5eed);
/// let (ada, bob) = ("sk_ada".to_string(), "sk_bob".to_string());
/// assert_eq!((api.available_permits(&ada), api.available_permits(&bob)), (100, 2));
/// assert_eq!(api.tier(&ada).map(|t| t.name()), Some("paid"));
/// api.try_acquire_n(&bob, 2).unwrap();
/// assert_eq!(api.try_acquire(&bob).unwrap_err().reason(), Reason::NoPermitInTime);
/// # Ok::<(), ritmo::ConfigError>(())
/// ```
///
/// In a `static`, with a plain `fn` and the tiers' names as plans:
///
/// ```
/// use core::time::Duration;
/// use ritmo::{const_config, ManualClock};
/// use ritmo::keyed::{KeyedLimiter, Tier, Tiers};
///
/// /// Customers below 1000 are on the free plan; the others pay.
/// fn plan(customer: &u32) -> &'static str {
///     if *customer < 1000 { "free" } else { "paid" }
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
/// `T` is 1 to 255. The tiers are fixed when the limiter is built (their number and plans).
///
/// [`Reason::UnknownTier`]: crate::Reason::UnknownTier
///
/// `T = 0` does not compile:
///
/// ```compile_fail
/// use ritmo::keyed::Tiers;
/// fn none(_: &u8) -> &'static str { "none" }
/// const NONE: Tiers<u8, 0> = Tiers::new([], none);
/// let _ = NONE;
/// ```
pub struct Tiers<K: ?Sized, const T: usize, P = &'static str, F = fn(&K) -> P> {
    tiers: [Tier<P>; T],
    pick: F,
    /// Each tier's config in the limiter's units (set by the limiter that takes the tiers).
    rates: [Rate; T],
    /// Each tier's config after a live change (feature `reconfigure`).
    #[cfg(feature = "reconfigure")]
    live: [TierLive; T],
    key: PhantomData<fn(&K)>,
}

/// A tier's numbers after a live change of its config, written under the limiter's change (a
/// sequence lock, or the table's critical section) and read under it.
#[cfg(feature = "reconfigure")]
#[derive(Debug)]
struct TierLive {
    interval: U64Cell,
    max_wait: U64Cell,
    /// `permits` in the low 32 bits, `enabled` in bit 32; 0: never changed.
    permits: U64Cell,
    /// The limiter's generation at the end of the tier's last change.
    changed_at: U64Cell,
    config: critical_section::Mutex<Cell<Option<Config>>>,
}

#[cfg(feature = "reconfigure")]
impl TierLive {
    const_fn! {
    fn new() -> TierLive {
        TierLive {
            interval: U64Cell::new(0),
            max_wait: U64Cell::new(0),
            permits: U64Cell::new(0),
            changed_at: U64Cell::new(0),
            config: critical_section::Mutex::new(Cell::new(None)),
        }
    }
    }

    /// The numbers in force, if a change set them.
    fn rate(&self, base: &Rate) -> Option<Rate> {
        let packed = self.permits.load();
        let (interval, max_wait) = (self.interval.load(), self.max_wait.load());
        (packed != 0)
            .then(|| Rate::with_numbers(base, interval, max_wait, packed as u32, packed >> 32 != 0))
    }

    fn config(&self) -> Option<Config> {
        critical_section::with(|cs| self.config.borrow(cs).get())
    }

    fn set(&self, rate: &Rate, config: Config, end: u32) {
        self.changed_at.store(u64::from(end));
        self.interval.store(rate.interval);
        self.max_wait.store(rate.max_wait);
        self.permits
            .store(u64::from(rate.permits) | (u64::from(rate.enabled()) << 32));
        critical_section::with(|cs| self.config.borrow(cs).set(Some(config)));
    }
}

impl<K: ?Sized, const T: usize, P: Clone, F: Clone> Clone for Tiers<K, T, P, F> {
    fn clone(&self) -> Self {
        Tiers {
            tiers: core::array::from_fn(|i| Tier {
                config: self.config_of(i),
                ..self.tiers[i].clone()
            }),
            pick: self.pick.clone(),
            rates: core::array::from_fn(|i| self.rates_of(i)),
            #[cfg(feature = "reconfigure")]
            live: core::array::from_fn(|_| TierLive::new()),
            key: PhantomData,
        }
    }
}

impl<K: ?Sized, const T: usize, P, F> fmt::Debug for Tiers<K, T, P, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut list = f.debug_map();
        for (i, tier) in self.tiers.iter().enumerate() {
            list.entry(&tier.name, &self.config_of(i));
        }
        list.finish()
    }
}

impl<K: ?Sized, const T: usize, P, F> Tiers<K, T, P, F> {
    const_fn! {
    /// The tiers `tiers` (index 0, 1, ...), a key being on the tier whose plan equals
    /// `pick(key)`; in a `const` context if need be.
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::Config;
    /// use ritmo::keyed::{Tier, Tiers};
    /// let tiers: Tiers<str, 2, _, _> = Tiers::new(
    ///     [
    ///         Tier::new("free", Config::new(10, Duration::from_secs(60))?),
    ///         Tier::new("paid", Config::new(1000, Duration::from_secs(60))?),
    ///     ],
    ///     |key: &str| if key.starts_with("sk_paid_") { "paid" } else { "free" },
    /// );
    /// assert_eq!(tiers.tier_of("sk_paid_42").map(|t| t.name()), Some("paid"));
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn new(tiers: [Tier<P>; T], pick: F) -> Self {
        const { assert!(T > 0 && T <= 255, "a tier set holds 1 to 255 tiers") };
        let rates = rates_of(&tiers, TickRate::from_hz(1_000_000_000));
        Tiers {
            tiers,
            pick,
            rates,
            #[cfg(all(feature = "reconfigure", not(all(test, loom))))]
            live: [const { TierLive::new() }; T],
            #[cfg(all(feature = "reconfigure", test, loom))]
            live: core::array::from_fn(|_| TierLive::new()),
            key: PhantomData,
        }
    }
    }

    /// The tiers, by index, as they were built (a tier's config in force, after a live change,
    /// is [`config_of`](Self::config_of) its index).
    pub const fn tiers(&self) -> &[Tier<P>; T] {
        &self.tiers
    }

    /// The config in force of the tier at `index` (its own, unless changed live since).
    ///
    /// # Panics
    ///
    /// If `index >= T`.
    pub fn config_of(&self, index: usize) -> Config {
        #[cfg(feature = "reconfigure")]
        if let Some(config) = self.live[index].config() {
            return config;
        }
        self.tiers[index].config
    }

    /// The numbers in force of the tier at `index` (`index < T`).
    fn rates_of(&self, index: usize) -> Rate {
        #[cfg(feature = "reconfigure")]
        if let Some(rate) = self.live[index].rate(&self.rates[index]) {
            return rate;
        }
        self.rates[index]
    }

    /// Changes the config of the tier named `name` to `config` from `now` (in `rate`'s units)
    /// as one change of `rate`'s numbers: `convert` gets the tier's index and the conversion of
    /// one state (the reconfigure rule, idle is new) and applies it to every key the store
    /// holds on that tier. The store serialises changes, and converts under its own locks:
    /// what a keyed limiter's `set_tier_config` runs.
    #[cfg(feature = "reconfigure")]
    #[cfg_attr(docsrs, doc(cfg(feature = "reconfigure")))]
    pub fn change<C>(
        &self,
        rate: &super::KeyRate<C>,
        name: &str,
        config: Config,
        now: u64,
        convert: impl FnOnce(u8, &dyn Fn(u64) -> u64),
    ) -> Result<(), crate::error::TierError> {
        let Some(index) = self.tiers.iter().position(|tier| tier.name == name) else {
            return Err(crate::error::TierError::unknown(rate.id(), name));
        };
        if config == self.config_of(index) {
            return Ok(());
        }
        let (old, new) = (self.rates_of(index), rate.in_units(&config));
        rate.changing(|end| {
            // T <= 255
            convert(index as u8, &|tat| {
                crate::rate::carry_over(tat, now, &old, &new)
            });
            self.live[index].set(&new, config, end);
        });
        Ok(())
    }

    /// The same tiers in the units of a clock of `tick` (what a limiter taking them does).
    pub const fn in_units(mut self, tick: TickRate) -> Self {
        self.rates = rates_of(&self.tiers, tick);
        self
    }
}

impl<K: ?Sized, const T: usize, P: PartialEq, F: Fn(&K) -> P> Tiers<K, T, P, F> {
    /// The tier `key` is on now; `None` if the function answers a plan no tier has.
    pub fn tier_of(&self, key: &K) -> Option<&Tier<P>> {
        let plan = (self.pick)(key);
        self.tiers.iter().find(|tier| tier.plan == plan)
    }
}

const fn rates_of<P, const T: usize>(tiers: &[Tier<P>; T], tick: TickRate) -> [Rate; T] {
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

pub(super) mod sealed {
    /// Seals [`TierSet`](super::TierSet), with what only ritmo-core reads.
    pub trait Sealed {
        /// The limiter's generation at the end of the last live change of the tier at
        /// `position` (0: none): a reservation noted before it gives nothing back.
        fn changed_at(&self, position: u8) -> u32;
    }
}

impl sealed::Sealed for OneTier {
    #[inline(always)]
    fn changed_at(&self, _position: u8) -> u32 {
        0
    }
}

impl<K: ?Sized, const T: usize, P, F> sealed::Sealed for Tiers<K, T, P, F> {
    fn changed_at(&self, position: u8) -> u32 {
        #[cfg(feature = "reconfigure")]
        if let Some(live) = self.live.get(usize::from(position)) {
            return live.changed_at.load() as u32;
        }
        let _ = position;
        0
    }
}

/// Where a keyed limiter's keys get their config: [`OneTier`] (the limiter's own config, the
/// default) or [`Tiers`]. Sealed: ritmo's two sets are the only ones.
///
/// ```
/// use core::time::Duration;
/// use ritmo::Config;
/// use ritmo::keyed::{OneTier, Tier, TierSet, Tiers};
/// let tiers: Tiers<u32, 2, _, _> = Tiers::new(
///     [
///         Tier::new("free", Config::new(10, Duration::from_secs(60))?),
///         Tier::new("paid", Config::new(1000, Duration::from_secs(60))?),
///     ],
///     |key: &u32| if *key < 1000 { "free" } else { "paid" },
/// );
/// let paid = tiers.pick(&4242).unwrap();
/// assert_eq!((paid, tiers.count()), (1, 2));
/// assert_eq!(tiers.tier(1).map(|(name, _)| name), Some("paid"));
/// assert_eq!((TierSet::<u32>::count(&OneTier), TierSet::<u32>::tier(&OneTier, 0)), (1, None));
/// # Ok::<(), ritmo::ConfigError>(())
/// ```
pub trait TierSet<K: ?Sized>: sealed::Sealed {
    /// What a keyed store keeps of its key's tier: `()` for one tier, the tier's index (a `u8`)
    /// for [`Tiers`].
    type Index: super::table::SlotTier + fmt::Debug + Send + Sync + 'static;
    /// The tier of `key` now; `None` when the function answers a plan no tier has.
    fn pick(&self, key: &K) -> Option<Self::Index>;
    /// The numbers of tier `index` as built, or in force if `changed` (a live change may have
    /// come: read under the change's lock); `None`: the limiter's own config (one tier).
    fn rules(&self, index: Self::Index, changed: bool) -> Option<TierRules>;
    /// The name and config in force of the tier at `position`, if the set has named tiers.
    fn tier(&self, position: usize) -> Option<(&'static str, Config)>;
    /// How many tiers (1 for one config).
    fn count(&self) -> usize;
    /// `index` as a number (0 for one tier).
    fn position(index: Self::Index) -> u8;
    /// Whether a reservation made on the tier at `position` can still go back to a key now on
    /// `index`: the same tier, or one with the same numbers (nothing was carried over).
    fn refundable(&self, index: Self::Index, position: u8) -> bool;
}

impl<K: ?Sized> TierSet<K> for OneTier {
    type Index = ();

    #[inline(always)]
    fn pick(&self, _key: &K) -> Option<()> {
        Some(())
    }

    #[inline(always)]
    fn rules(&self, _index: (), _changed: bool) -> Option<TierRules> {
        None
    }

    fn tier(&self, _position: usize) -> Option<(&'static str, Config)> {
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

impl<K: ?Sized, const T: usize, P: PartialEq, F: Fn(&K) -> P> TierSet<K> for Tiers<K, T, P, F> {
    type Index = u8;

    #[inline]
    fn pick(&self, key: &K) -> Option<u8> {
        let plan = (self.pick)(key);
        // T <= 255
        self.tiers
            .iter()
            .position(|tier| tier.plan == plan)
            .map(|i| i as u8)
    }

    #[inline]
    fn rules(&self, index: u8, changed: bool) -> Option<TierRules> {
        let i = usize::from(index);
        let rate = self.rates.get(i)?;
        Some(TierRules(if changed { self.rates_of(i) } else { *rate }))
    }

    fn tier(&self, position: usize) -> Option<(&'static str, Config)> {
        let tier = self.tiers.get(position)?;
        Some((tier.name, self.config_of(position)))
    }

    fn count(&self) -> usize {
        T
    }

    #[inline(always)]
    fn position(index: u8) -> u8 {
        index
    }

    fn refundable(&self, index: u8, position: u8) -> bool {
        index == position || self.rules(index, true) == self.rules(position, true)
    }
}
