//! Layered settings (SPEC §4): a limiter's [`Config`] resolved from key/value text, without
//! allocating.
//!
//! Settings are `(key, value)` pairs of text, as a settings file or the environment gives them
//! (ritmo-std flattens TOML files and environment maps into such pairs). For a limiter `id`,
//! each attribute takes the first of these that has it:
//!
//! 1. what the code says ([`Overrides`]);
//! 2. `instances.<id>.<attribute>`;
//! 3. `configs.<base>.<attribute>`, where `<base>` is named by `instances.<id>.config`, or is
//!    `default` when the instance names none and any `configs.default.*` key exists;
//! 4. the built-in defaults: `max-wait` 0, `enabled` true (`permits` and `period` have none).
//!
//! Attributes: `permits` (a whole number), `period` and `max-wait` (durations as
//! [`parse_duration`] reads them; `max_wait` is accepted too), `enabled` (`true` or `false`).
//! Other attributes are ignored here (ritmo-std's loaders reject them). When a key appears more
//! than once, the last pair wins, so later sources (the environment) can be appended to earlier
//! ones (a file).
//!
//! # Errors
//!
//! Each names the key it came from ([`ConfigError::key`]):
//! - a value that is not text of its attribute's kind has that attribute's code, quoting the
//!   text: `RITMO-ATR-001` (a duration), `RITMO-ATR-003` (`permits` that is not a whole number
//!   from 0 to 2^32 - 1), `RITMO-ATR-006` (`enabled`);
//! - `RITMO-REG-004`: `instances.<id>.config` names a config no `configs.<name>.*` key defines;
//! - `RITMO-REG-003`: the values read fine but do not make a valid config: `permits` 0 or
//!   missing, `period` zero or missing, or less than 1 ns per permit. Its
//!   [`cause`](ConfigError::cause) is the code [`Config::new`] gives (`ATR-003`, `ATR-002`,
//!   `REG-001`) and its key is the one to fix (for a missing value, the instance's key).
//!
//! Values the code gives are not settings: an invalid one fails with [`Config::new`]'s own code.
//!
//! ```
//! use core::time::Duration;
//! use ritmo_core::{ErrorCode, Overrides, Settings};
//!
//! let settings = Settings::new(&[
//!     ("configs.default.permits", "10"),
//!     ("configs.default.period", "1s"),
//!     ("configs.slow.permits", "1"),
//!     ("configs.slow.period", "1m"),
//!     ("instances.geocoding.permits", "5"),
//!     ("instances.geocoding.max-wait", "500ms"),
//!     ("instances.backup.config", "slow"),
//!     ("instances.broken.config", "fast"),
//! ]);
//!
//! let geocoding = settings.resolve("geocoding")?; // 5 per second (from default), waits 500 ms
//! assert_eq!((geocoding.permits(), geocoding.period()), (5, Duration::from_secs(1)));
//! assert_eq!(geocoding.max_wait(), Duration::from_millis(500));
//!
//! assert_eq!(settings.resolve("search")?.permits(), 10); // all from configs.default
//! assert_eq!(settings.resolve("backup")?.period(), Duration::from_secs(60));
//!
//! let code = Overrides::new().max_wait(Duration::ZERO); // code wins over settings
//! assert_eq!(settings.resolve_with("geocoding", code)?.max_wait(), Duration::ZERO);
//!
//! let err = settings.resolve("broken").unwrap_err();
//! assert_eq!((err.code(), err.text()), (ErrorCode::Reg004, "fast"));
//! assert_eq!(err.key(), Some("instances.broken.config"));
//! # Ok::<(), ritmo_core::ConfigError>(())
//! ```

use core::fmt::Write as _;
use core::time::Duration;

use crate::config::{Config, parse_bool, parse_duration};
use crate::error::{ConfigError, ErrorCode};

/// One settings entry: a key such as `instances.geocoding.permits` and its value as text.
///
/// Implemented for pairs of anything that is text (`(&str, &str)`, `(String, String)`, the
/// `(&String, &String)` a map's iterator gives) and for references to them.
///
/// ```
/// use ritmo_core::Setting;
/// let pair = ("instances.api.period", "1s");
/// assert_eq!((pair.key(), pair.value()), ("instances.api.period", "1s"));
/// ```
pub trait Setting {
    /// The dotted key.
    fn key(&self) -> &str;
    /// The value, as text.
    fn value(&self) -> &str;
}

impl<K: AsRef<str>, V: AsRef<str>> Setting for (K, V) {
    fn key(&self) -> &str {
        self.0.as_ref()
    }
    fn value(&self) -> &str {
        self.1.as_ref()
    }
}

impl<T: Setting + ?Sized> Setting for &T {
    fn key(&self) -> &str {
        (**self).key()
    }
    fn value(&self) -> &str {
        (**self).value()
    }
}

/// What the code says about a limiter: the top layer of the settings, each attribute optional.
///
/// ```
/// use core::time::Duration;
/// use ritmo_core::{Overrides, Settings};
/// let settings = Settings::new(&[("instances.api.permits", "5"), ("instances.api.period", "1s")]);
/// let code = Overrides::new().permits(2).enabled(false);
/// let config = settings.resolve_with("api", code)?;
/// assert_eq!((config.permits(), config.enabled()), (2, false));
/// # Ok::<(), ritmo_core::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[must_use]
pub struct Overrides {
    permits: Option<u32>,
    period: Option<Duration>,
    max_wait: Option<Duration>,
    enabled: Option<bool>,
}

impl Overrides {
    /// Says nothing: the settings decide everything.
    ///
    /// ```
    /// # use ritmo_core::Overrides;
    /// assert_eq!(Overrides::new(), Overrides::default());
    /// ```
    pub const fn new() -> Self {
        Overrides {
            permits: None,
            period: None,
            max_wait: None,
            enabled: None,
        }
    }

    /// Sets `permits`, whatever the settings say.
    ///
    /// ```
    /// # use ritmo_core::{Overrides, Settings};
    /// let s = Settings::new(&[("instances.a.permits", "5"), ("instances.a.period", "1s")]);
    /// assert_eq!(s.resolve_with("a", Overrides::new().permits(7))?.permits(), 7);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub const fn permits(mut self, permits: u32) -> Self {
        self.permits = Some(permits);
        self
    }

    /// Sets `period`, whatever the settings say.
    ///
    /// ```
    /// # use ritmo_core::{Overrides, Settings};
    /// # use core::time::Duration;
    /// let s = Settings::new(&[("instances.a.permits", "5")]);
    /// let c = s.resolve_with("a", Overrides::new().period(Duration::from_secs(2)))?;
    /// assert_eq!(c.period(), Duration::from_secs(2));
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub const fn period(mut self, period: Duration) -> Self {
        self.period = Some(period);
        self
    }

    /// Sets `max_wait`, whatever the settings say.
    ///
    /// ```
    /// # use ritmo_core::{Overrides, Settings};
    /// # use core::time::Duration;
    /// let s = Settings::new(&[("instances.a.permits", "5"), ("instances.a.period", "1s")]);
    /// let c = s.resolve_with("a", Overrides::new().max_wait(Duration::from_millis(20)))?;
    /// assert_eq!(c.max_wait(), Duration::from_millis(20));
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub const fn max_wait(mut self, max_wait: Duration) -> Self {
        self.max_wait = Some(max_wait);
        self
    }

    /// Sets `enabled`, whatever the settings say.
    ///
    /// ```
    /// # use ritmo_core::{Overrides, Settings};
    /// let s = Settings::new(&[("instances.a.permits", "5"), ("instances.a.period", "1s")]);
    /// assert!(!s.resolve_with("a", Overrides::new().enabled(false))?.enabled());
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub const fn enabled(mut self, enabled: bool) -> Self {
        self.enabled = Some(enabled);
        self
    }
}

/// Layered settings over borrowed key/value pairs: any cloneable iterable of [`Setting`]s (a
/// slice of pairs, a map). Resolving reads the pairs a few times and allocates nothing. See the
/// [module docs](crate::settings) for the layers and the errors.
///
/// ```
/// use ritmo_core::Settings;
/// let pairs = [("instances.radio.permits", "36"), ("instances.radio.period", "1h")];
/// let radio = Settings::new(&pairs).resolve("radio")?;
/// assert_eq!(radio.permits(), 36);
/// # Ok::<(), ritmo_core::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Settings<I> {
    pairs: I,
}

impl<I> Settings<I>
where
    I: IntoIterator + Clone,
    I::Item: Setting,
{
    /// Settings read from `pairs`.
    ///
    /// ```
    /// # use ritmo_core::Settings;
    /// let owned = vec![("instances.a.permits".to_string(), "1".to_string())];
    /// let settings = Settings::new(&owned);
    /// # let _ = settings;
    /// ```
    pub const fn new(pairs: I) -> Self {
        Settings { pairs }
    }

    /// The config of limiter `id`, from the settings alone.
    ///
    /// ```
    /// # use ritmo_core::{ErrorCode, Settings};
    /// let s = Settings::new(&[("instances.a.permits", "0"), ("instances.a.period", "1s")]);
    /// let err = s.resolve("a").unwrap_err();
    /// assert_eq!((err.code(), err.cause()), (ErrorCode::Reg003, Some(ErrorCode::Atr003)));
    /// assert_eq!(err.key(), Some("instances.a.permits"));
    /// ```
    pub fn resolve(&self, id: &str) -> Result<Config, ConfigError> {
        self.resolve_with(id, Overrides::new())
    }

    /// The config of limiter `id`, with what the code says on top of the settings.
    ///
    /// ```
    /// # use ritmo_core::{Overrides, Settings};
    /// # use core::time::Duration;
    /// let s = Settings::new(&[("configs.default.period", "1s")]);
    /// let c = s.resolve_with("any", Overrides::new().permits(3))?;
    /// assert_eq!((c.permits(), c.period()), (3, Duration::from_secs(1)));
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn resolve_with(&self, id: &str, code: Overrides) -> Result<Config, ConfigError> {
        self.resolve_layers(id, None, code, Overrides::new())
    }

    /// The config of limiter `id` with `defaults` beneath the settings: every attribute the
    /// settings give replaces the default's. Where the instance names no base config
    /// (`instances.<id>.config`), `shared` names it (`configs.<shared>.*`, when any such key
    /// exists), and then `configs.default.*`.
    ///
    /// This is how the code `#[ritmo::limited]` generates layers settings over the attribute's
    /// literal values: the literal is the lowest layer.
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo_core::{Config, Settings};
    /// let literal = Config::new(5, Duration::from_secs(1))?;
    /// let settings = Settings::new(&[
    ///     ("configs.geocoding.max-wait", "500ms"),
    ///     ("instances.geocoding.permits", "8"),
    /// ]);
    /// let config = settings.resolve_over("geocoding", Some("geocoding"), literal)?;
    /// assert_eq!(config.permits(), 8); // the instance key
    /// assert_eq!(config.max_wait(), Duration::from_millis(500)); // the shared config
    /// assert_eq!(config.period(), Duration::from_secs(1)); // the literal
    /// assert_eq!(Settings::new(&[("x", "y")]).resolve_over("other", None, literal)?, literal);
    /// # Ok::<(), ritmo_core::ConfigError>(())
    /// ```
    pub fn resolve_over(
        &self,
        id: &str,
        shared: Option<&str>,
        defaults: Config,
    ) -> Result<Config, ConfigError> {
        let bottom = Overrides::new()
            .permits(defaults.permits())
            .period(defaults.period())
            .max_wait(defaults.max_wait())
            .enabled(defaults.enabled());
        self.resolve_layers(id, shared, Overrides::new(), bottom)
    }

    fn resolve_layers(
        &self,
        id: &str,
        shared: Option<&str>,
        code: Overrides,
        defaults: Overrides,
    ) -> Result<Config, ConfigError> {
        // The last `instances.<id>.config` pair, held so that the base name it borrows stays
        // valid while the pairs are read again.
        let named = self
            .pairs
            .clone()
            .into_iter()
            .filter(
                |p| matches!(split(p.key()), Some((Section::Instances, i, "config")) if i == id),
            )
            .last();
        let base = match &named {
            Some(pair) => {
                let name = pair.value();
                if !self.defines(name) {
                    return Err(ConfigError::new(ErrorCode::Reg004)
                        .with_text(name)
                        .with_key(pair.key()));
                }
                Some(name)
            }
            None => match shared {
                Some(name) if self.defines(name) => Some(name),
                _ => self.defines("default").then_some("default"),
            },
        };

        let mut found = Found::default();
        for pair in self.pairs.clone() {
            let Some((section, name, attr)) = split(pair.key()) else {
                continue;
            };
            let layer = match section {
                Section::Instances if name == id => Source::Instance,
                Section::Configs if Some(name) == base => Source::Config,
                _ => continue,
            };
            found.read(layer, attr, pair.key(), pair.value());
        }

        let keys = Keys { id, base };
        let permits = found.permits.winner(code.permits, defaults.permits)?;
        let period = found.period.winner(code.period, defaults.period)?;
        let max_wait = found.max_wait.winner(code.max_wait, defaults.max_wait)?;
        let enabled = found.enabled.winner(code.enabled, defaults.enabled)?;

        let (Some((permits, permits_from)), Some((period, period_from))) = (permits, period) else {
            let (cause, attr) = match permits {
                None => (ErrorCode::Atr003, "permits"),
                Some(_) => (ErrorCode::Atr002, "period"),
            };
            return Err(ConfigError::new(ErrorCode::Reg003)
                .with_cause(cause)
                .with_key(&keys.render(Source::Instance, attr)));
        };
        let mut config = Config::new(permits, period).map_err(|e| {
            // The attribute to fix: the one the code names, or (for too many permits in too
            // short a period) whichever of the two came from the settings, period first.
            let blame: &[(Source, &str)] = match e.code() {
                ErrorCode::Atr003 => &[(permits_from, "permits")],
                ErrorCode::Atr002 => &[(period_from, "period")],
                _ => &[(period_from, "period"), (permits_from, "permits")],
            };
            match blame
                .iter()
                .find(|(from, _)| matches!(from, Source::Config | Source::Instance))
            {
                Some(&(from, attr)) => ConfigError::new(ErrorCode::Reg003)
                    .with_cause(e.code())
                    .with_key(&keys.render(from, attr)),
                None => e,
            }
        })?;
        if let Some((max_wait, _)) = max_wait {
            config = config.with_max_wait(max_wait);
        }
        if let Some((enabled, _)) = enabled {
            config = config.with_enabled(enabled);
        }
        Ok(config)
    }

    /// Whether any `configs.<name>.*` key exists.
    fn defines(&self, name: &str) -> bool {
        self.pairs
            .clone()
            .into_iter()
            .any(|p| matches!(split(p.key()), Some((Section::Configs, n, _)) if n == name))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Section {
    Configs,
    Instances,
}

/// `configs.<name>.<attr>` or `instances.<id>.<attr>`; a name may itself contain dots.
fn split(key: &str) -> Option<(Section, &str, &str)> {
    let (section, rest) = if let Some(rest) = key.strip_prefix("configs.") {
        (Section::Configs, rest)
    } else if let Some(rest) = key.strip_prefix("instances.") {
        (Section::Instances, rest)
    } else {
        return None;
    };
    let (name, attr) = rest.rsplit_once('.')?;
    Some((section, name, attr))
}

/// Where a value came from, lowest layer first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Source {
    /// Beneath the settings: the literal of an annotation.
    Default,
    Config,
    Instance,
    Code,
}

/// One attribute as read so far from each settings layer: the last value seen (or its error).
#[derive(Debug)]
struct Layers<T> {
    config: Option<Result<T, ConfigError>>,
    instance: Option<Result<T, ConfigError>>,
}

impl<T> Default for Layers<T> {
    fn default() -> Self {
        Layers {
            config: None,
            instance: None,
        }
    }
}

impl<T> Layers<T> {
    fn set(&mut self, layer: Source, value: Result<T, ConfigError>) {
        match layer {
            Source::Instance => self.instance = Some(value),
            _ => self.config = Some(value),
        }
    }

    /// The winning value and where it came from; an error only if the winning value is bad.
    fn winner(
        self,
        code: Option<T>,
        default: Option<T>,
    ) -> Result<Option<(T, Source)>, ConfigError> {
        if let Some(value) = code {
            return Ok(Some((value, Source::Code)));
        }
        match (self.instance, self.config) {
            (Some(value), _) => value.map(|v| Some((v, Source::Instance))),
            (None, Some(value)) => value.map(|v| Some((v, Source::Config))),
            (None, None) => Ok(default.map(|v| (v, Source::Default))),
        }
    }
}

#[derive(Debug, Default)]
struct Found {
    permits: Layers<u32>,
    period: Layers<Duration>,
    max_wait: Layers<Duration>,
    enabled: Layers<bool>,
}

impl Found {
    fn read(&mut self, layer: Source, attr: &str, key: &str, value: &str) {
        let at = |e: ConfigError| e.with_key(key);
        match attr {
            "permits" => self.permits.set(
                layer,
                // Digits only, as durations are: `u32`'s own parser would also take `+5`.
                value
                    .parse::<u32>()
                    .ok()
                    .filter(|_| value.bytes().all(|b| b.is_ascii_digit()))
                    .ok_or_else(|| at(ConfigError::new(ErrorCode::Atr003).with_text(value))),
            ),
            "period" => self.period.set(layer, parse_duration(value).map_err(at)),
            "max-wait" | "max_wait" => self.max_wait.set(layer, parse_duration(value).map_err(at)),
            "enabled" => self.enabled.set(layer, parse_bool(value).map_err(at)),
            _ => {}
        }
    }
}

/// Writes the key of an attribute in a layer, for errors found after reading.
struct Keys<'a> {
    id: &'a str,
    base: Option<&'a str>,
}

impl Keys<'_> {
    fn render(&self, from: Source, attr: &str) -> heapless::String<96> {
        let mut key = heapless::String::new();
        let (section, name) = match (from, self.base) {
            (Source::Config, Some(base)) => ("configs", base),
            _ => ("instances", self.id),
        };
        // A key too long for the buffer is cut short; the error keeps only its start anyway.
        let _ = write!(Truncate(&mut key), "{section}.{name}.{attr}");
        key
    }
}

/// Writes as much as fits, character by character.
struct Truncate<'a, const N: usize>(&'a mut heapless::String<N>);

impl<const N: usize> core::fmt::Write for Truncate<'_, N> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        for c in s.chars() {
            if self.0.push(c).is_err() {
                return Err(core::fmt::Error);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;
    use std::string::String;

    #[test]
    fn keys_split_on_their_first_and_last_dot() {
        assert_eq!(
            split("instances.api.v2.max-wait"),
            Some((Section::Instances, "api.v2", "max-wait"))
        );
        assert_eq!(
            split("configs.default.permits"),
            Some((Section::Configs, "default", "permits"))
        );
        assert_eq!(split("instances.permits"), None);
        assert_eq!(split("other.a.permits"), None);
    }

    #[test]
    fn a_long_key_is_cut_not_lost() {
        let long: String = "x".repeat(200);
        let keys = Keys {
            id: &long,
            base: None,
        };
        let key = keys.render(Source::Instance, "permits");
        assert_eq!(key.len(), 96);
        assert!(key.starts_with("instances.xxx"));
    }

    #[test]
    fn a_later_good_value_replaces_an_earlier_bad_one() {
        let s = Settings::new(&[
            ("instances.a.permits", "many"),
            ("instances.a.period", "1s"),
            ("instances.a.permits", "4"),
        ]);
        assert_eq!(s.resolve("a").unwrap().permits(), 4);
    }

    #[test]
    fn an_unused_config_is_not_read() {
        let s = Settings::new(&[
            ("configs.other.period", "soon"),
            ("instances.a.permits", "4"),
            ("instances.a.period", "1s"),
        ]);
        assert_eq!(s.resolve("a").unwrap().permits(), 4);
    }
}
