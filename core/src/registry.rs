//! [`Registry`]: named limiters in storage fixed at compile time, shared by id.
//!
//! A user names a quota once (`"geocoding"`) and every function that spends it asks the registry
//! for that id: the first asks creates the limiter, the others get the same one. The registry can
//! be a `static`, on a microcontroller or on a server, and never allocates.
//!
//! Registration takes a critical section (`critical-section`) to claim a slot, so that racing
//! registrations of one id yield exactly one limiter. What it returns is a plain
//! `&RateLimiter`: acquiring goes straight to the limiter's state, with no lookup by name and no
//! critical section.
//!
//! The program must provide a critical-section implementation, as for any user of the
//! `critical-section` crate: on a server, `ritmo-std` (the `std` feature of `ritmo`) brings std's;
//! on a microcontroller, the one its HAL or `cortex-m` provides.

use core::fmt;

use once_cell::sync::OnceCell;

use crate::clock::Clock;
use crate::config::Config;
use crate::error::{ConfigError, ErrorCode, RegistryError};
use crate::event::Listener;
use crate::limiter::{RateLimiter, Snapshot};
use crate::settings::{Overrides, Setting, Settings};

/// Up to `N` named limiters sharing one clock, created on first use and shared by id.
///
/// Each limiter owns a copy of the clock (`C: Clone`): use a reference to a shared clock
/// (`&'static ManualClock` in tests) or a zero-sized clock type (a hardware counter on an MCU).
///
/// ```
/// use core::time::Duration;
/// use ritmo::{const_config, Config, ManualClock, Registry};
///
/// static CLOCK: ManualClock = ManualClock::new();
/// static LIMITERS: Registry<&ManualClock, 4> = Registry::new(&CLOCK);
///
/// const GEOCODING: Config = const_config!(5, Duration::from_secs(1));
///
/// fn geocode() -> bool {
///     LIMITERS.get_or_create("geocoding", GEOCODING).unwrap().try_acquire().is_ok()
/// }
/// fn reverse() -> bool {
///     LIMITERS.get_or_create("geocoding", GEOCODING).unwrap().try_acquire().is_ok()
/// }
///
/// // Both functions spend the same 5 permits.
/// assert!((0..3).all(|_| geocode()));
/// assert!((0..2).all(|_| reverse()));
/// assert!(!geocode());
/// assert_eq!(LIMITERS.get("geocoding")?.available_permits(), 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// A capacity of 0 does not build:
///
/// ```compile_fail
/// # use ritmo::{ManualClock, Registry};
/// static CLOCK: ManualClock = ManualClock::new();
/// static EMPTY: Registry<&ManualClock, 0> = Registry::new(&CLOCK);
/// ```
pub struct Registry<C, const N: usize> {
    /// Filled in order, each under the registration critical section, and never emptied.
    slots: [OnceCell<RateLimiter<C>>; N],
    clock: C,
    listener: Option<&'static dyn Listener>,
}

impl<C, const N: usize> Registry<C, N> {
    /// An empty registry whose limiters will read `clock`; `const`, so it can be a `static`.
    /// A capacity `N` of 0 fails the build.
    ///
    /// ```
    /// use ritmo::{ManualClock, Registry};
    /// static CLOCK: ManualClock = ManualClock::new();
    /// static LIMITERS: Registry<&ManualClock, 8> = Registry::new(&CLOCK);
    /// assert!(LIMITERS.is_empty());
    /// assert_eq!(LIMITERS.capacity(), 8);
    /// ```
    pub const fn new(clock: C) -> Self {
        const {
            assert!(
                N > 0,
                "a ritmo Registry needs room for at least one limiter"
            )
        };
        Registry {
            slots: [const { OnceCell::new() }; N],
            clock,
            listener: None,
        }
    }

    /// The same registry, installing `listener` on every limiter it creates: it sees their
    /// rejections and released reservations (see [`Listener`]).
    ///
    /// ```
    /// use ritmo::{Event, Listener, ManualClock, Registry};
    /// struct Log;
    /// impl Listener for Log {
    ///     fn on_event(&self, _event: &Event) {}
    /// }
    /// static CLOCK: ManualClock = ManualClock::new();
    /// static LIMITERS: Registry<&ManualClock, 4> = Registry::new(&CLOCK).with_listener(&Log);
    /// # assert!(LIMITERS.is_empty());
    /// ```
    #[must_use]
    pub const fn with_listener(mut self, listener: &'static dyn Listener) -> Self {
        self.listener = Some(listener);
        self
    }

    /// How many limiters it can hold: `N`.
    ///
    /// ```
    /// # use ritmo::{ManualClock, Registry};
    /// let registry: Registry<ManualClock, 3> = Registry::new(ManualClock::new());
    /// assert_eq!(registry.capacity(), 3);
    /// ```
    pub const fn capacity(&self) -> usize {
        N
    }

    /// How many limiters it holds now.
    ///
    /// ```
    /// # use ritmo::{Config, ManualClock, Registry};
    /// # use core::time::Duration;
    /// let clock = ManualClock::new();
    /// let registry: Registry<&ManualClock, 3> = Registry::new(&clock);
    /// registry.get_or_create("a", Config::new(1, Duration::from_secs(1))?)?;
    /// registry.get_or_create("a", Config::new(1, Duration::from_secs(1))?)?;
    /// assert_eq!(registry.len(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn len(&self) -> usize {
        self.iter().count()
    }

    /// Whether it holds no limiter yet.
    ///
    /// ```
    /// # use ritmo::{ManualClock, Registry};
    /// let registry: Registry<ManualClock, 3> = Registry::new(ManualClock::new());
    /// assert!(registry.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.slots[0].get().is_none()
    }

    /// The limiters it holds, in the order they were created.
    ///
    /// ```
    /// # use ritmo::{Config, ManualClock, Registry};
    /// # use core::time::Duration;
    /// let clock = ManualClock::new();
    /// let registry: Registry<&ManualClock, 3> = Registry::new(&clock);
    /// registry.get_or_create("a", Config::new(1, Duration::from_secs(1))?)?;
    /// registry.get_or_create("b", Config::new(2, Duration::from_secs(1))?)?;
    /// let ids: Vec<&str> = registry.iter().map(|l| l.id()).collect();
    /// assert_eq!(ids, ["a", "b"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn iter(&self) -> impl Iterator<Item = &RateLimiter<C>> + '_ {
        // Slots fill in order, so the filled ones are a prefix.
        self.slots.iter().map_while(OnceCell::get)
    }

    /// The clock its limiters read.
    ///
    /// ```
    /// # use ritmo::{Clock, ManualClock, Registry};
    /// let registry: Registry<ManualClock, 1> = Registry::new(ManualClock::starting_at(7));
    /// assert_eq!(registry.clock().now(), 7);
    /// ```
    pub const fn clock(&self) -> &C {
        &self.clock
    }

    /// The limiter named `id`; an unknown id is `RITMO-REG-009`, naming it. Takes no critical
    /// section.
    ///
    /// ```
    /// # use ritmo::{Config, ErrorCode, ManualClock, Registry};
    /// # use core::time::Duration;
    /// let clock = ManualClock::new();
    /// let registry: Registry<&ManualClock, 2> = Registry::new(&clock);
    /// registry.get_or_create("uart", Config::new(960, Duration::from_secs(1))?)?;
    /// assert_eq!(registry.get("uart")?.config().permits(), 960);
    /// let err = registry.get("radio").unwrap_err();
    /// assert_eq!((err.code(), err.id()), (ErrorCode::UnknownId, "radio"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get(&self, id: &str) -> Result<&RateLimiter<C>, RegistryError> {
        self.find(id).ok_or_else(|| RegistryError::unknown(id))
    }

    fn find(&self, id: &str) -> Option<&RateLimiter<C>> {
        self.iter().find(|limiter| limiter.id() == id)
    }
}

impl<C: Clock, const N: usize> Registry<C, N> {
    /// Every limiter's [`Snapshot`], in the order they were created.
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::{Config, ManualClock, Registry};
    /// let clock = ManualClock::new();
    /// let registry: Registry<&ManualClock, 4> = Registry::new(&clock);
    /// registry.get_or_create("api", Config::new(10, Duration::from_secs(1))?)?.try_acquire_n(3).unwrap();
    /// registry.get_or_create("uart", Config::new(4, Duration::from_secs(1))?)?;
    /// let seen: Vec<(&str, u32)> =
    ///     registry.snapshot().iter().map(|s| (s.id, s.available_permits)).collect();
    /// assert_eq!(seen, [("api", 7), ("uart", 4)]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn snapshot(&self) -> heapless::Vec<Snapshot, N> {
        // At most N limiters, so every push fits.
        self.iter().map(RateLimiter::snapshot).collect()
    }
}

#[cfg(feature = "reconfigure")]
impl<C: Clock, const N: usize> Registry<C, N> {
    /// Applies `config` at once to the limiter registered as `id`, without resetting it (see
    /// [`RateLimiter::reconfigure`]); `RITMO-REG-009` if no limiter has that id. Later
    /// [`get_or_create`](Self::get_or_create) calls with the config it was registered with keep
    /// returning it.
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::{Config, ErrorCode, ManualClock, Registry};
    /// let clock = ManualClock::new();
    /// let registry: Registry<&ManualClock, 2> = Registry::new(&clock);
    /// let ten = Config::new(10, Duration::from_secs(1))?;
    /// let api = registry.get_or_create("api", ten)?;
    /// api.try_acquire_n(8).unwrap();
    /// registry.reconfigure("api", Config::new(1, Duration::from_secs(1))?)?;
    /// assert_eq!(api.available_permits(), 1);
    /// assert_eq!(registry.reconfigure("nope", ten).unwrap_err().code(), ErrorCode::UnknownId);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg_attr(docsrs, doc(cfg(feature = "reconfigure")))]
    pub fn reconfigure(&self, id: &str, config: Config) -> Result<(), RegistryError> {
        self.get(id)?.reconfigure(config);
        Ok(())
    }

    /// Resolves every registered limiter's config again from `settings` (reloaded from a file,
    /// say) and applies those that changed, each at once and without resetting it. Returns, per
    /// limiter in registration order, whether its config changed, or why it could not be resolved
    /// (that limiter keeps its config). Settings alone decide here: an id the settings do not
    /// configure reports the error resolving it gives (`RITMO-REG-003` naming the missing key).
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::{ManualClock, Registry, Settings};
    /// let clock = ManualClock::new();
    /// let registry: Registry<&ManualClock, 2> = Registry::new(&clock);
    /// let v1 = [("instances.api.permits", "10"), ("instances.api.period", "1s")];
    /// let api = registry.get_or_create("api", Settings::new(&v1).resolve("api")?)?;
    /// let v2 = [("instances.api.permits", "4"), ("instances.api.period", "1s")];
    /// let report = registry.reload(&Settings::new(&v2));
    /// assert_eq!(report[0], ("api", Ok(true)));
    /// assert_eq!(api.config().permits(), 4);
    /// assert_eq!(registry.reload(&Settings::new(&v2))[0], ("api", Ok(false)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg_attr(docsrs, doc(cfg(feature = "reconfigure")))]
    pub fn reload<I>(
        &self,
        settings: &crate::settings::Settings<I>,
    ) -> heapless::Vec<(&'static str, Result<bool, crate::error::SettingsError>), N>
    where
        I: IntoIterator + Clone,
        I::Item: crate::settings::Setting,
    {
        let mut report = heapless::Vec::new();
        for limiter in self.iter() {
            let outcome = settings.resolve(limiter.id()).map(|config| {
                let changed = config != limiter.config();
                if changed {
                    limiter.reconfigure(config);
                }
                changed
            });
            // At most N limiters: never full.
            let _ = report.push((limiter.id(), outcome));
        }
        report
    }
}

impl<C: Clock + Clone, const N: usize> Registry<C, N> {
    /// The limiter named `id`, created with `config` the first time (with the registry's clock
    /// and listener). Every later call with the same id and an equal config gets the same
    /// limiter; keep the returned reference: acquiring through it never looks anything up.
    ///
    /// Errors:
    /// - `RITMO-REG-008` if `id` already names a limiter with a different config; that limiter
    ///   is left untouched;
    /// - `RITMO-REG-010` if all `N` slots are taken by other ids.
    ///
    /// Both name the id. Creating takes a critical section; finding an existing limiter does not.
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::{Config, ErrorCode, ManualClock, Registry};
    ///
    /// let clock = ManualClock::new();
    /// let registry: Registry<&ManualClock, 1> = Registry::new(&clock);
    /// let five = Config::new(5, Duration::from_secs(1))?;
    /// let a = registry.get_or_create("geocoding", five)?;
    /// let b = registry.get_or_create("geocoding", five)?;
    /// assert!(core::ptr::eq(a, b));
    ///
    /// let six = Config::new(6, Duration::from_secs(1))?;
    /// assert_eq!(registry.get_or_create("geocoding", six).unwrap_err().code(), ErrorCode::ConfigMismatch);
    /// assert_eq!(registry.get_or_create("search", five).unwrap_err().code(), ErrorCode::RegistryFull);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get_or_create(
        &self,
        id: &'static str,
        config: Config,
    ) -> Result<&RateLimiter<C>, RegistryError> {
        if let Some(limiter) = self.find(id) {
            return same_config(limiter, &config);
        }
        critical_section::with(|_| {
            // Every slot is filled under this critical section, so nobody fills one while we
            // look: the id is either here now, or ours to add.
            for slot in &self.slots {
                match slot.get() {
                    Some(limiter) if limiter.id() == id => return same_config(limiter, &config),
                    Some(_) => {}
                    None => return Ok(slot.get_or_init(|| self.build(id, config))),
                }
            }
            Err(RegistryError::registering(ErrorCode::RegistryFull, id))
        })
    }

    /// The limiter named `id`, its config resolved from `settings` with what the code says on
    /// top ([`Settings::resolve_with`]), created the first time as
    /// [`get_or_create`](Self::get_or_create) does. Settings that do not resolve are a
    /// [`RegistryError`] whose [`settings`](RegistryError::settings) error names the key.
    ///
    /// ```
    /// use ritmo::{ErrorCode, ManualClock, Overrides, Registry, Settings};
    /// static CLOCK: ManualClock = ManualClock::new();
    /// static LIMITERS: Registry<&ManualClock, 4> = Registry::new(&CLOCK);
    /// let settings = Settings::new(&[
    ///     ("instances.geocoding.permits", "5"),
    ///     ("instances.geocoding.period", "1s"),
    ///     ("instances.search.config", "missing"),
    /// ]);
    /// let geocoding = LIMITERS.get_or_create_from("geocoding", &settings, Overrides::new())?;
    /// assert_eq!(geocoding.available_permits(), 5);
    /// let err = LIMITERS.get_or_create_from("search", &settings, Overrides::new()).unwrap_err();
    /// assert_eq!((err.code(), err.id()), (ErrorCode::UnknownConfig, "search"));
    /// assert_eq!(err.settings().unwrap().key(), "instances.search.config");
    /// # Ok::<(), ritmo::RegistryError>(())
    /// ```
    pub fn get_or_create_from<I>(
        &self,
        id: &'static str,
        settings: &Settings<I>,
        code: Overrides,
    ) -> Result<&RateLimiter<C>, RegistryError>
    where
        I: IntoIterator + Clone,
        I::Item: Setting,
    {
        let config = settings
            .resolve_with(id, code)
            .map_err(|e| RegistryError::settings_for(id, e))?;
        self.get_or_create(id, config)
    }

    fn build(&self, id: &'static str, config: Config) -> RateLimiter<C> {
        let limiter = RateLimiter::with_clock(id, config, self.clock.clone());
        match self.listener {
            Some(listener) => limiter.with_listener(listener),
            None => limiter,
        }
    }
}

/// Where a limited free function keeps which slot of its registry holds its limiter, so that
/// its calls go straight to it (no lookup by name). Not public API: `#[ritmo::rate_limited]`
/// declares one `static` per function.
#[doc(hidden)]
#[derive(Debug)]
pub struct LimiterSlot(portable_atomic::AtomicUsize);

impl LimiterSlot {
    /// Not known yet.
    #[allow(clippy::new_without_default)]
    pub const fn new() -> Self {
        LimiterSlot(portable_atomic::AtomicUsize::new(0))
    }
}

impl<C: Clock + Clone, const N: usize> Registry<C, N> {
    /// The limiter whose slot `slot` remembers, or (the first time) `get_or_create(id,
    /// config())`, remembering its slot. Not public API.
    #[doc(hidden)]
    #[inline(always)]
    pub fn __cached(
        &self,
        slot: &LimiterSlot,
        id: &'static str,
        config: impl FnOnce() -> Result<Config, ConfigError>,
    ) -> Result<&RateLimiter<C>, RegistryError> {
        // 0 is "not known yet"; `wrapping_sub` makes it an index no slot has.
        let known = slot.0.load(portable_atomic::Ordering::Relaxed);
        match self
            .slots
            .get(known.wrapping_sub(1))
            .and_then(OnceCell::get)
        {
            Some(limiter) => Ok(limiter),
            None => self.cache_slot(slot, id, config()),
        }
    }

    #[cold]
    #[inline(never)]
    fn cache_slot(
        &self,
        slot: &LimiterSlot,
        id: &'static str,
        config: Result<Config, ConfigError>,
    ) -> Result<&RateLimiter<C>, RegistryError> {
        let config = config.map_err(|e| RegistryError::config_for(id, e))?;
        let limiter = self.get_or_create(id, config)?;
        if let Some(index) = self
            .slots
            .iter()
            .position(|s| s.get().is_some_and(|l| core::ptr::eq(l, limiter)))
        {
            slot.0.store(index + 1, portable_atomic::Ordering::Relaxed);
        }
        Ok(limiter)
    }
}

fn same_config<'a, C: Clock>(
    limiter: &'a RateLimiter<C>,
    config: &Config,
) -> Result<&'a RateLimiter<C>, RegistryError> {
    // Against the config it was registered with: a reconfigure since does not make callers of
    // the id with the registered config fail.
    if limiter.applies(config) {
        Ok(limiter)
    } else {
        Err(RegistryError::registering(
            ErrorCode::ConfigMismatch,
            limiter.id(),
        ))
    }
}

impl<C, const N: usize> fmt::Debug for Registry<C, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("capacity", &N)
            .field("limiters", &DebugIds(self))
            .field("has_listener", &self.listener.is_some())
            .finish_non_exhaustive()
    }
}

struct DebugIds<'a, C, const N: usize>(&'a Registry<C, N>);

impl<C, const N: usize> fmt::Debug for DebugIds<'_, C, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(RateLimiter::id))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use core::time::Duration;

    fn config(permits: u32) -> Config {
        Config::new(permits, Duration::from_secs(1)).unwrap()
    }

    #[test]
    fn a_full_registry_keeps_its_limiters_and_still_finds_them() {
        let clock = ManualClock::new();
        let registry: Registry<&ManualClock, 2> = Registry::new(&clock);
        let a = registry.get_or_create("a", config(1)).unwrap();
        registry.get_or_create("b", config(2)).unwrap();
        let err = registry.get_or_create("c", config(3)).unwrap_err();
        assert_eq!((err.code(), err.id()), (ErrorCode::RegistryFull, "c"));
        assert!(core::ptr::eq(
            a,
            registry.get_or_create("a", config(1)).unwrap()
        ));
        assert_eq!(registry.len(), 2);
        assert_eq!(registry.get("c").unwrap_err().code(), ErrorCode::UnknownId);
    }

    #[test]
    fn a_different_config_leaves_the_limiter_untouched() {
        let clock = ManualClock::new();
        let registry: Registry<&ManualClock, 2> = Registry::new(&clock);
        let a = registry.get_or_create("a", config(2)).unwrap();
        a.try_acquire().unwrap();
        let err = registry
            .get_or_create("a", config(2).with_enabled(false))
            .unwrap_err();
        assert_eq!((err.code(), err.id()), (ErrorCode::ConfigMismatch, "a"));
        let again = registry.get("a").unwrap();
        assert_eq!(again.config(), config(2));
        assert_eq!(again.available_permits(), 1);
        assert_eq!(registry.len(), 1);
    }

    #[test]
    fn debug_lists_the_ids() {
        extern crate std;
        let clock = ManualClock::new();
        let registry: Registry<&ManualClock, 3> = Registry::new(&clock);
        registry.get_or_create("x", config(1)).unwrap();
        registry.get_or_create("y", config(1)).unwrap();
        let text = std::format!("{registry:?}");
        assert!(text.contains(r#"limiters: ["x", "y"]"#), "{text}");
    }
}
