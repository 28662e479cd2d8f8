//! Layered settings: a limiter's [`Config`] resolved from key/value text, without
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
//! Keys are `<section>.<name>.<attribute>` ([`Key`]): the sections are `configs` and
//! `instances` ([`Section`]); the attributes ([`Attribute`]) are `permits` (a whole number),
//! `period` and `max-wait` (durations as [`parse_duration`] reads them; `max_wait` is accepted
//! too), `enabled` (`true` or `false`), and for instances `config` (the base config's name).
//! This schema is the one ritmo-std's TOML and environment loaders read. Other keys are ignored
//! here (the loaders reject them). When a key appears more
//! than once, the last pair wins, so later sources (the environment) can be appended to earlier
//! ones (a file).
//!
//! # Errors
//!
//! Each is a [`SettingsError`] naming the key it came from ([`SettingsError::key`]):
//! - a value that is not text of its attribute's kind has that attribute's code, quoting the
//!   text: `RITMO-ATR-001` (a duration), `RITMO-ATR-003` (`permits` that is not a whole number
//!   from 0 to 2^32 - 1), `RITMO-ATR-006` (`enabled`);
//! - `RITMO-REG-004`: `instances.<id>.config` names a config no `configs.<name>.*` key defines;
//! - `RITMO-REG-003`: the values read fine but do not make a valid config: `permits` 0 or
//!   missing, `period` zero or missing, or less than 1 ns per permit. Its
//!   [`cause`](SettingsError::cause) is the code [`Config::new`] gives (`ATR-003`, `ATR-002`,
//!   `REG-001`) and its key is the one to fix (for a missing value, the instance's key).
//!
//! Values the code gives are not settings: if they alone make the config invalid, the error has
//! [`Config::new`]'s own code (at the instance's key for that attribute).
//!
//! ```
//! use core::time::Duration;
//! use ritmo::{ErrorCode, Overrides, Settings};
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
//! assert_eq!((err.code(), err.text()), (ErrorCode::UnknownConfig, "fast"));
//! assert_eq!(err.key(), "instances.broken.config");
//! # Ok::<(), ritmo::SettingsError>(())
//! ```

use core::fmt::Write as _;
use core::time::Duration;

use crate::config::{Config, parse_bool, parse_duration};
use crate::error::{ConfigError, ErrorCode, SettingsError};

/// One settings entry: a key such as `instances.geocoding.permits` and its value as text.
///
/// Implemented for pairs of anything that is text (`(&str, &str)`, `(String, String)`, the
/// `(&String, &String)` a map's iterator gives) and for references to them.
///
/// ```
/// use ritmo::Setting;
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
/// use ritmo::{Overrides, Settings};
/// let settings = Settings::new(&[("instances.api.permits", "5"), ("instances.api.period", "1s")]);
/// let code = Overrides::new().permits(2).enabled(false);
/// let config = settings.resolve_with("api", code)?;
/// assert_eq!((config.permits(), config.enabled()), (2, false));
/// # Ok::<(), ritmo::SettingsError>(())
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
    /// # use ritmo::Overrides;
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
    /// # use ritmo::{Overrides, Settings};
    /// let s = Settings::new(&[("instances.a.permits", "5"), ("instances.a.period", "1s")]);
    /// assert_eq!(s.resolve_with("a", Overrides::new().permits(7))?.permits(), 7);
    /// # Ok::<(), ritmo::SettingsError>(())
    /// ```
    pub const fn permits(mut self, permits: u32) -> Self {
        self.permits = Some(permits);
        self
    }

    /// Sets `period`, whatever the settings say.
    ///
    /// ```
    /// # use ritmo::{Overrides, Settings};
    /// # use core::time::Duration;
    /// let s = Settings::new(&[("instances.a.permits", "5")]);
    /// let c = s.resolve_with("a", Overrides::new().period(Duration::from_secs(2)))?;
    /// assert_eq!(c.period(), Duration::from_secs(2));
    /// # Ok::<(), ritmo::SettingsError>(())
    /// ```
    pub const fn period(mut self, period: Duration) -> Self {
        self.period = Some(period);
        self
    }

    /// Sets `max_wait`, whatever the settings say.
    ///
    /// ```
    /// # use ritmo::{Overrides, Settings};
    /// # use core::time::Duration;
    /// let s = Settings::new(&[("instances.a.permits", "5"), ("instances.a.period", "1s")]);
    /// let c = s.resolve_with("a", Overrides::new().max_wait(Duration::from_millis(20)))?;
    /// assert_eq!(c.max_wait(), Duration::from_millis(20));
    /// # Ok::<(), ritmo::SettingsError>(())
    /// ```
    pub const fn max_wait(mut self, max_wait: Duration) -> Self {
        self.max_wait = Some(max_wait);
        self
    }

    /// Sets `enabled`, whatever the settings say.
    ///
    /// ```
    /// # use ritmo::{Overrides, Settings};
    /// let s = Settings::new(&[("instances.a.permits", "5"), ("instances.a.period", "1s")]);
    /// assert!(!s.resolve_with("a", Overrides::new().enabled(false))?.enabled());
    /// # Ok::<(), ritmo::SettingsError>(())
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
/// use ritmo::Settings;
/// let pairs = [("instances.radio.permits", "36"), ("instances.radio.period", "1h")];
/// let radio = Settings::new(&pairs).resolve("radio")?;
/// assert_eq!(radio.permits(), 36);
/// # Ok::<(), ritmo::SettingsError>(())
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
    /// # use ritmo::Settings;
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
    /// # use ritmo::{ErrorCode, Settings};
    /// let s = Settings::new(&[("instances.a.permits", "0"), ("instances.a.period", "1s")]);
    /// let err = s.resolve("a").unwrap_err();
    /// assert_eq!((err.code(), err.cause()), (ErrorCode::InvalidSetting, Some(ErrorCode::InvalidPermits)));
    /// assert_eq!(err.key(), "instances.a.permits");
    /// ```
    pub fn resolve(&self, id: &str) -> Result<Config, SettingsError> {
        self.resolve_with(id, Overrides::new())
    }

    /// The config of limiter `id`, with what the code says on top of the settings.
    ///
    /// ```
    /// # use ritmo::{Overrides, Settings};
    /// # use core::time::Duration;
    /// let s = Settings::new(&[("configs.default.period", "1s")]);
    /// let c = s.resolve_with("any", Overrides::new().permits(3))?;
    /// assert_eq!((c.permits(), c.period()), (3, Duration::from_secs(1)));
    /// # Ok::<(), ritmo::SettingsError>(())
    /// ```
    pub fn resolve_with(&self, id: &str, code: Overrides) -> Result<Config, SettingsError> {
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
    /// use ritmo::{Config, Settings};
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
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn resolve_over(
        &self,
        id: &str,
        shared: Option<&str>,
        defaults: Config,
    ) -> Result<Config, SettingsError> {
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
    ) -> Result<Config, SettingsError> {
        // The last `instances.<id>.config` pair, held so that the base name it borrows stays
        // valid while the pairs are read again.
        let named = self
            .pairs
            .clone()
            .into_iter()
            .filter(
                |p| matches!(Key::parse(p.key()), Some(k) if k.section == Section::Instances && k.name == id && k.attribute == Attribute::Config),
            )
            .last();
        let base = match &named {
            Some(pair) => {
                let name = pair.value();
                if !self.defines(name) {
                    return Err(
                        SettingsError::new(ErrorCode::UnknownConfig, pair.key()).with_text(name)
                    );
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
            let Some(key) = Key::parse(pair.key()) else {
                continue;
            };
            let layer = match key.section {
                Section::Instances if key.name == id => Source::Instance,
                Section::Configs if Some(key.name) == base => Source::Config,
                _ => continue,
            };
            found.read(layer, key.attribute, pair.key(), pair.value());
        }

        let keys = Keys { id, base };
        let permits = found.permits.winner(code.permits, defaults.permits)?;
        let period = found.period.winner(code.period, defaults.period)?;
        let max_wait = found.max_wait.winner(code.max_wait, defaults.max_wait)?;
        let enabled = found.enabled.winner(code.enabled, defaults.enabled)?;

        let (Some((permits, permits_from)), Some((period, period_from))) = (permits, period) else {
            let (cause, attr) = match permits {
                None => (ErrorCode::InvalidPermits, Attribute::Permits),
                Some(_) => (ErrorCode::ZeroPeriod, Attribute::Period),
            };
            return Err(SettingsError::new(
                ErrorCode::InvalidSetting,
                &keys.render(Source::Instance, attr),
            )
            .with_cause(cause));
        };
        let mut config = match Config::new(permits, period) {
            Ok(config) => config,
            Err(e) => {
                // The attribute to fix: the one the code names, or (for too many permits in too
                // short a period) whichever of the two came from the settings, period first.
                let blame: &[(Source, Attribute)] = match e.code() {
                    ErrorCode::InvalidPermits => &[(permits_from, Attribute::Permits)],
                    ErrorCode::ZeroPeriod => &[(period_from, Attribute::Period)],
                    _ => &[
                        (period_from, Attribute::Period),
                        (permits_from, Attribute::Permits),
                    ],
                };
                match blame
                    .iter()
                    .find(|(from, _)| matches!(from, Source::Config | Source::Instance))
                {
                    Some(&(from, attr)) => {
                        return Err(SettingsError::new(
                            ErrorCode::InvalidSetting,
                            &keys.render(from, attr),
                        )
                        .with_cause(e.code()));
                    }
                    // Only the code's values are to blame: the error is `Config::new`'s own code,
                    // at the key the value would have had in the instance's settings.
                    None => {
                        return Err(SettingsError::new(
                            e.code(),
                            &keys.render(Source::Instance, blame[0].1),
                        ));
                    }
                }
            }
        };
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
            .any(|p| configs_name(p.key()) == Some(name))
    }
}

/// The two sections of settings: shared configs and per-limiter instances.
///
/// ```
/// use ritmo::settings::Section;
/// assert_eq!(Section::from_name("instances"), Some(Section::Instances));
/// assert_eq!(Section::Configs.name(), "configs");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Section {
    /// `configs.<name>.<attribute>`: a named config instances may take as their base.
    Configs,
    /// `instances.<id>.<attribute>`: the limiter with that id.
    Instances,
}

impl Section {
    /// Every section.
    pub const ALL: [Section; 2] = [Section::Configs, Section::Instances];

    /// The section's name in keys: `configs` or `instances`.
    pub const fn name(self) -> &'static str {
        match self {
            Section::Configs => "configs",
            Section::Instances => "instances",
        }
    }

    /// The section a key's first part names, if any.
    pub fn from_name(name: &str) -> Option<Section> {
        Section::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// The attributes a settings key may end with.
///
/// ```
/// use ritmo::settings::{Attribute, Section};
/// assert_eq!(Attribute::from_name("max_wait"), Some(Attribute::MaxWait));
/// assert_eq!(Attribute::MaxWait.name(), "max-wait");
/// assert!(!Attribute::Config.allowed_in(Section::Configs));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Attribute {
    /// `permits`: permits per period, a whole number.
    Permits,
    /// `period`: the period, a duration as [`parse_duration`] reads it.
    Period,
    /// `max-wait` (or `max_wait`): the longest a call may wait, a duration.
    MaxWait,
    /// `enabled`: `true` or `false`.
    Enabled,
    /// `config`: the name of an instance's base config (instances only).
    Config,
}

impl Attribute {
    /// Every attribute.
    pub const ALL: [Attribute; 5] = [
        Attribute::Permits,
        Attribute::Period,
        Attribute::MaxWait,
        Attribute::Enabled,
        Attribute::Config,
    ];

    /// The attribute's name in keys.
    pub const fn name(self) -> &'static str {
        match self {
            Attribute::Permits => "permits",
            Attribute::Period => "period",
            Attribute::MaxWait => "max-wait",
            Attribute::Enabled => "enabled",
            Attribute::Config => "config",
        }
    }

    /// The attribute a key's last part names (`max_wait` is read as `max-wait`), if any.
    pub fn from_name(name: &str) -> Option<Attribute> {
        match name {
            "max_wait" => Some(Attribute::MaxWait),
            _ => Attribute::ALL.into_iter().find(|a| a.name() == name),
        }
    }

    /// Whether keys of `section` may have this attribute (`config` is for instances only).
    pub const fn allowed_in(self, section: Section) -> bool {
        !matches!((self, section), (Attribute::Config, Section::Configs))
    }
}

/// A settings key: `<section>.<name>.<attribute>`, where the name (an id or a config's name) may
/// itself contain dots: the key splits at its first and last dot.
///
/// ```
/// use ritmo::settings::{Attribute, Key, Section};
/// let key = Key::parse("instances.api.v2.max-wait").unwrap();
/// assert_eq!((key.section, key.name, key.attribute), (Section::Instances, "api.v2", Attribute::MaxWait));
/// assert_eq!(key.to_string(), "instances.api.v2.max-wait");
/// assert!(Key::parse("instances.api.permit").is_none()); // no such attribute
/// assert!(Key::parse("configs.default.config").is_none()); // not in this section
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Key<'a> {
    /// The section.
    pub section: Section,
    /// The limiter's id or the config's name.
    pub name: &'a str,
    /// The attribute.
    pub attribute: Attribute,
}

impl<'a> Key<'a> {
    /// The key of `attribute` for `name` in `section`.
    pub const fn new(section: Section, name: &'a str, attribute: Attribute) -> Self {
        Key {
            section,
            name,
            attribute,
        }
    }

    /// Reads a key; `None` if it is not one of ritmo's (another section, no name part, an
    /// unknown attribute, or one its section does not have). The name may be empty, as an id
    /// may.
    pub fn parse(key: &'a str) -> Option<Key<'a>> {
        let (section, rest) = key.split_once('.')?;
        let section = Section::from_name(section)?;
        let (name, attribute) = rest.rsplit_once('.')?;
        let attribute = Attribute::from_name(attribute)?;
        attribute.allowed_in(section).then_some(Key {
            section,
            name,
            attribute,
        })
    }
}

impl core::fmt::Display for Key<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "{}.{}.{}",
            self.section.name(),
            self.name,
            self.attribute.name()
        )
    }
}

/// The name of the config a `configs.<name>.<anything>` key is about: any attribute, known or
/// not, defines the config (so that a misspelt attribute still names it).
fn configs_name(key: &str) -> Option<&str> {
    let rest = key
        .strip_prefix(Section::Configs.name())?
        .strip_prefix('.')?;
    rest.rsplit_once('.').map(|(name, _)| name)
}

/// Where a value came from, lowest layer first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Source {
    Config,
    Instance,
    Code,
    /// The value beneath every layer (an annotation's literal).
    Default,
}

/// One attribute as read so far from each settings layer: the last value seen (or its error).
#[derive(Debug)]
struct Layers<T> {
    config: Option<Result<T, SettingsError>>,
    instance: Option<Result<T, SettingsError>>,
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
    fn set(&mut self, layer: Source, value: Result<T, SettingsError>) {
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
    ) -> Result<Option<(T, Source)>, SettingsError> {
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
    fn read(&mut self, layer: Source, attr: Attribute, key: &str, value: &str) {
        let at = |e: ConfigError| SettingsError::at(e, key);
        match attr {
            Attribute::Permits => self.permits.set(
                layer,
                // Digits only, as durations are: `u32`'s own parser would also take `+5`.
                value
                    .parse::<u32>()
                    .ok()
                    .filter(|_| value.bytes().all(|b| b.is_ascii_digit()))
                    .ok_or_else(|| {
                        SettingsError::new(ErrorCode::InvalidPermits, key).with_text(value)
                    }),
            ),
            Attribute::Period => self.period.set(layer, parse_duration(value).map_err(at)),
            Attribute::MaxWait => self.max_wait.set(layer, parse_duration(value).map_err(at)),
            Attribute::Enabled => self.enabled.set(layer, parse_bool(value).map_err(at)),
            Attribute::Config => {}
        }
    }
}

/// Writes the key of an attribute in a layer, for errors found after reading.
struct Keys<'a> {
    id: &'a str,
    base: Option<&'a str>,
}

impl Keys<'_> {
    fn render(&self, from: Source, attr: Attribute) -> heapless::String<96> {
        let mut key = heapless::String::new();
        let (section, name) = match (from, self.base) {
            (Source::Config, Some(base)) => (Section::Configs, base),
            _ => (Section::Instances, self.id),
        };
        // A key too long for the buffer is cut short; the error keeps only its start anyway.
        let _ = write!(Truncate(&mut key), "{}", Key::new(section, name, attr));
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
            Key::parse("instances.api.v2.max-wait"),
            Some(Key::new(Section::Instances, "api.v2", Attribute::MaxWait))
        );
        assert_eq!(
            Key::parse("configs.default.permits"),
            Some(Key::new(Section::Configs, "default", Attribute::Permits))
        );
        assert_eq!(Key::parse("instances.permits"), None);
        assert_eq!(
            Key::parse("instances..permits"),
            Some(Key::new(Section::Instances, "", Attribute::Permits))
        );
        assert_eq!(Key::parse("other.a.permits"), None);
        assert_eq!(Key::parse("java.home"), None);
    }

    #[test]
    fn a_long_key_is_cut_not_lost() {
        let long: String = "x".repeat(200);
        let keys = Keys {
            id: &long,
            base: None,
        };
        let key = keys.render(Source::Instance, Attribute::Permits);
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
