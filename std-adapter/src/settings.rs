//! Registry settings from a TOML file or string, or from environment variables (feature
//! `settings`).
//!
//! Both are read straight into the `(key, value)` text pairs that [`ritmo::Settings`](crate::ritmo::Settings)
//! resolves by its layers (defaults < `configs.<name>` < `instances.<id>` < code; see
//! [`ritmo::settings`](crate::ritmo::settings)), checking each key against ritmo-core's one schema
//! ([`Key`]): an unknown section or attribute is an error when
//! loading. Values are checked when a limiter's config is resolved, as
//! [`SettingsError`]s with the stable codes (`RITMO-ATR-001`,
//! `RITMO-REG-003`, ...) and the key to fix.
//!
//! ```toml
//! [configs.default]
//! permits = 10
//! period = "1s"
//!
//! [instances.geocoding]
//! permits = 5
//! max-wait = "500ms"
//!
//! [instances.backup]
//! config = "slow"   # base config instead of `default`
//! ```
//!
//! In the environment, `RITMO_<SECTION>_<NAME>_<ATTRIBUTE>`: `RITMO_INSTANCES_GEOCODING_PERMITS=5`,
//! `RITMO_CONFIGS_DEFAULT_MAX_WAIT=100ms`, `RITMO_INSTANCES_BACKUP_CONFIG=slow`. The name is
//! taken in lowercase, underscores kept; ids with other characters (`-`, `.`, capitals) are set
//! with dotted keys (`instances.geo-coding.permits`) in an environment-style map, or in a file.
//! Every other variable is skipped: only names starting `RITMO_` and dotted names starting
//! `configs.` or `instances.` are read, so passing the whole environment is safe.
//!
//! ```
//! use ritmo::server::settings::OwnedSettings;
//!
//! let file = OwnedSettings::from_toml_str(
//!     r#"
//!     [configs.default]
//!     permits = 10
//!     period = "1s"
//!
//!     [instances.geocoding]
//!     permits = 5
//!     max-wait = "500ms"
//!     "#,
//! )?;
//! let env = OwnedSettings::from_env_map([("RITMO_INSTANCES_GEOCODING_PERMITS", "8")])?;
//! let settings = file.then(env); // the environment wins over the file
//!
//! let geocoding = settings.resolve("geocoding")?;
//! assert_eq!(geocoding.permits(), 8);
//! assert_eq!(geocoding.max_wait().as_millis(), 500);
//! assert_eq!(settings.resolve("search")?.permits(), 10);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

extern crate std;

use std::borrow::ToOwned;
use std::fmt;
use std::path::{Path, PathBuf};
use std::string::{String, ToString};
use std::vec::Vec;

use ritmo_core::settings::{Attribute, Key, Section};
use ritmo_core::{Config, Overrides, Setting, Settings, SettingsError};

/// Settings loaded from files or the environment, owned as `(key, value)` text pairs, ready to
/// resolve limiter configs ([`resolve`](Self::resolve)) or to hand to
/// [`ritmo::Settings`](crate::ritmo::Settings) ([`settings`](Self::settings)).
///
/// It implements `serde::Deserialize` (the same shape as a file: `configs` and `instances`
/// tables), so an application can keep it as a section of its own config
/// (`#[derive(Deserialize)] struct AppConfig { rate_limits: OwnedSettings, .. }`).
///
/// ```
/// use ritmo::server::settings::OwnedSettings;
/// let settings = OwnedSettings::from_toml_str("[instances.uart]\npermits = 960\nperiod = \"1s\"")?;
/// assert!(settings.pairs().contains(&("instances.uart.permits".to_string(), "960".to_string())));
///
/// let section: OwnedSettings = toml::from_str("[instances.api]\npermits = 3\nperiod = \"1s\"")?;
/// assert_eq!(section.resolve("api")?.permits(), 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OwnedSettings {
    pairs: Vec<(String, String)>,
}

impl OwnedSettings {
    /// Reads TOML text. Text that is not TOML is [`LoadError::Toml`]; an unknown section or
    /// attribute, or a section or limiter that is not a table, is [`LoadError::Key`]; a value
    /// that is not text, a whole number or a boolean is [`LoadError::Value`].
    ///
    /// ```
    /// use ritmo::server::settings::{LoadError, OwnedSettings};
    /// let err = OwnedSettings::from_toml_str("[instances.api]\npermit = 3").unwrap_err();
    /// assert!(matches!(err, LoadError::Key(ref key) if key == "instances.api.permit"));
    /// ```
    pub fn from_toml_str(text: &str) -> Result<Self, LoadError> {
        let table: toml::Table = toml::from_str(text).map_err(LoadError::Toml)?;
        Self::from_table(table)
    }

    /// Reads a TOML file; a file that cannot be read is [`LoadError::Io`], naming it.
    ///
    /// ```
    /// use ritmo::server::settings::{LoadError, OwnedSettings};
    /// let err = OwnedSettings::from_toml_file("no/such/ritmo.toml").unwrap_err();
    /// assert!(matches!(err, LoadError::Io { .. }));
    /// assert!(err.to_string().contains("no/such/ritmo.toml"));
    /// ```
    pub fn from_toml_file(path: impl AsRef<Path>) -> Result<Self, LoadError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| LoadError::Io {
            path: path.to_owned(),
            source,
        })?;
        Self::from_toml_str(&text)
    }

    /// The pairs of a parsed TOML document, each key checked against the schema.
    fn from_table(table: toml::Table) -> Result<Self, LoadError> {
        let mut pairs = Vec::new();
        for (section_name, names) in table {
            let section = Section::from_name(&section_name)
                .ok_or_else(|| LoadError::Key(section_name.clone()))?;
            let toml::Value::Table(names) = names else {
                return Err(LoadError::Key(section_name));
            };
            for (name, attributes) in names {
                let toml::Value::Table(attributes) = attributes else {
                    return Err(LoadError::Key(format_key(section, &name, None)));
                };
                for (attribute, value) in attributes {
                    let key = format_key(section, &name, Some(&attribute));
                    let attribute = Attribute::from_name(&attribute)
                        .filter(|a| a.allowed_in(section))
                        .ok_or_else(|| LoadError::Key(key.clone()))?;
                    let text = match value {
                        toml::Value::String(text) => text,
                        toml::Value::Integer(i) if attribute != Attribute::Config => i.to_string(),
                        toml::Value::Boolean(b) if attribute != Attribute::Config => b.to_string(),
                        _ => return Err(LoadError::Value(key)),
                    };
                    pairs.push((Key::new(section, &name, attribute).to_string(), text));
                }
            }
        }
        Ok(OwnedSettings { pairs })
    }

    /// Reads an environment-style map: keys `RITMO_<SECTION>_<NAME>_<ATTRIBUTE>` (see the
    /// [module docs](self)) or dotted keys (`instances.geocoding.permits`). Every other key is
    /// skipped, so the whole environment can be passed: only names starting `RITMO_`, `configs.`
    /// or `instances.` are ritmo's. One of those that does not name a section, a name and an
    /// attribute of the schema is [`LoadError::Key`].
    ///
    /// ```
    /// use std::collections::HashMap;
    /// use ritmo::server::settings::OwnedSettings;
    /// let map = HashMap::from([
    ///     ("RITMO_CONFIGS_DEFAULT_PERIOD".to_string(), "1s".to_string()),
    ///     ("instances.geo-coding.permits".to_string(), "5".to_string()),
    ///     ("PATH".to_string(), "/usr/bin".to_string()),
    ///     ("java.home".to_string(), "/usr/lib/jvm".to_string()),
    /// ]);
    /// let settings = OwnedSettings::from_env_map(&map)?;
    /// assert_eq!(settings.resolve("geo-coding")?.permits(), 5);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_env_map<I>(vars: I) -> Result<Self, LoadError>
    where
        I: IntoIterator,
        I::Item: Setting,
    {
        let mut pairs = Vec::new();
        for var in vars {
            if let Some(key) = env_key(var.key())? {
                pairs.push((key, var.value().to_owned()));
            }
        }
        Ok(OwnedSettings { pairs })
    }

    /// Reads this process's environment, as [`from_env_map`](Self::from_env_map) does: only
    /// ritmo's variables are read, every other one is skipped (whatever its name holds).
    ///
    /// ```
    /// # use ritmo::server::settings::OwnedSettings;
    /// let from_env = OwnedSettings::from_env()?;
    /// # let _ = from_env;
    /// # Ok::<(), ritmo::server::settings::LoadError>(())
    /// ```
    pub fn from_env() -> Result<Self, LoadError> {
        let vars: Vec<(String, String)> = std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .collect();
        Self::from_env_map(&vars)
    }

    /// These settings with `later` on top: where both set a key, `later` wins (a file, then the
    /// environment).
    ///
    /// ```
    /// # use ritmo::server::settings::OwnedSettings;
    /// let file = OwnedSettings::from_toml_str("[instances.a]\npermits = 1\nperiod = \"1s\"")?;
    /// let env = OwnedSettings::from_env_map([("RITMO_INSTANCES_A_PERMITS", "9")])?;
    /// assert_eq!(file.then(env).resolve("a")?.permits(), 9);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn then(mut self, later: OwnedSettings) -> Self {
        self.pairs.extend(later.pairs);
        self
    }

    /// The `(key, value)` pairs, in order (later pairs win).
    ///
    /// ```
    /// # use ritmo::server::settings::OwnedSettings;
    /// let s = OwnedSettings::from_toml_str("[configs.default]\nenabled = false")?;
    /// assert_eq!(s.pairs(), [("configs.default.enabled".to_string(), "false".to_string())]);
    /// # Ok::<(), ritmo::server::settings::LoadError>(())
    /// ```
    pub fn pairs(&self) -> &[(String, String)] {
        &self.pairs
    }

    /// The core view of these pairs.
    ///
    /// ```
    /// # use ritmo::server::settings::OwnedSettings;
    /// let s = OwnedSettings::from_toml_str("[instances.a]\npermits = 2\nperiod = \"1s\"")?;
    /// assert_eq!(s.settings().resolve("a")?.permits(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn settings(&self) -> Settings<&[(String, String)]> {
        Settings::new(&self.pairs)
    }

    /// The config of limiter `id` from these settings (see [`ritmo::settings`](crate::ritmo::settings)).
    ///
    /// ```
    /// # use ritmo::server::settings::OwnedSettings;
    /// # use ritmo::ErrorCode;
    /// let s = OwnedSettings::from_toml_str("[instances.a]\npermits = 0\nperiod = \"1s\"")?;
    /// let err = s.resolve("a").unwrap_err();
    /// assert_eq!((err.code(), err.key()), (ErrorCode::InvalidSetting, "instances.a.permits"));
    /// # Ok::<(), ritmo::server::settings::LoadError>(())
    /// ```
    pub fn resolve(&self, id: &str) -> Result<Config, SettingsError> {
        self.settings().resolve(id)
    }

    /// The config of limiter `id`, with what the code says on top.
    ///
    /// ```
    /// # use ritmo::server::settings::OwnedSettings;
    /// # use ritmo::Overrides;
    /// let s = OwnedSettings::from_toml_str("[instances.a]\npermits = 2\nperiod = \"1s\"")?;
    /// assert!(!s.resolve_with("a", Overrides::new().enabled(false))?.enabled());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn resolve_with(&self, id: &str, code: Overrides) -> Result<Config, SettingsError> {
        self.settings().resolve_with(id, code)
    }
}

impl<'de> serde::Deserialize<'de> for OwnedSettings {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let table = toml::Table::deserialize(deserializer)?;
        OwnedSettings::from_table(table).map_err(serde::de::Error::custom)
    }
}

/// `<section>.<name>[.<attribute>]`, for errors.
fn format_key(section: Section, name: &str, attribute: Option<&str>) -> String {
    let mut key = std::format!("{}.{name}", section.name());
    if let Some(attribute) = attribute {
        key.push('.');
        key.push_str(attribute);
    }
    key
}

/// The settings key an environment variable stands for; `None` for variables that are not
/// ritmo's.
fn env_key(var: &str) -> Result<Option<String>, LoadError> {
    let bad = || LoadError::Key(var.to_owned());
    if let Some(rest) = var.strip_prefix("RITMO_") {
        let (section, rest) = rest.split_once('_').ok_or_else(bad)?;
        let section = Section::from_name(&section.to_lowercase()).ok_or_else(bad)?;
        // The attribute is the longest suffix that names one (`MAX_WAIT` holds an underscore).
        let (name, attribute) = Attribute::ALL
            .into_iter()
            .find_map(|attribute| {
                let suffix = attribute.name().to_uppercase().replace('-', "_");
                let name = rest.strip_suffix(&suffix)?.strip_suffix('_')?;
                Some((name, attribute))
            })
            .ok_or_else(bad)?;
        if name.is_empty() || !attribute.allowed_in(section) {
            return Err(bad());
        }
        return Ok(Some(
            Key::new(section, &name.to_lowercase(), attribute).to_string(),
        ));
    }
    let ours = Section::ALL.into_iter().any(|section| {
        var.strip_prefix(section.name())
            .is_some_and(|r| r.starts_with('.'))
    });
    if ours {
        let key = Key::parse(var).ok_or_else(bad)?;
        return Ok(Some(key.to_string()));
    }
    Ok(None)
}

/// Settings could not be loaded. (Values are checked later, when a config is resolved, as
/// [`SettingsError`]s.)
///
/// ```
/// use ritmo::server::settings::{LoadError, OwnedSettings};
/// let err = OwnedSettings::from_env_map([("RITMO_PERMITS", "5")]).unwrap_err();
/// assert!(matches!(err, LoadError::Key(ref k) if k == "RITMO_PERMITS"));
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum LoadError {
    /// The file could not be read.
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Not TOML.
    Toml(toml::de::Error),
    /// A key that is not one of ritmo's settings: an unknown section or attribute, a section or
    /// limiter that is not a table, an environment variable starting `RITMO_` that does not read
    /// as `RITMO_<SECTION>_<NAME>_<ATTRIBUTE>`, or a dotted key starting `configs.` or
    /// `instances.` without a name and an attribute.
    Key(String),
    /// The value at this key is neither text, a whole number nor a boolean (a base config's
    /// name must be text).
    Value(String),
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::Io { path, source } => {
                write!(f, "cannot read ritmo settings {}: {source}", path.display())
            }
            LoadError::Toml(e) => write!(f, "invalid ritmo settings: {e}"),
            LoadError::Key(key) => write!(
                f,
                "not a ritmo settings key: {key:?} (expected <section>.<name>.<attribute> or \
                 RITMO_<SECTION>_<NAME>_<ATTRIBUTE>, sections configs and instances, attributes \
                 permits, period, max-wait, enabled, and config for instances)"
            ),
            LoadError::Value(key) => write!(
                f,
                "invalid ritmo settings value at {key}: expected text, a whole number or a boolean"
            ),
        }
    }
}

impl std::error::Error for LoadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LoadError::Io { source, .. } => Some(source),
            LoadError::Toml(e) => Some(e),
            LoadError::Key(_) | LoadError::Value(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ritmo_core::ErrorCode;
    use std::time::Duration;

    const FILE: &str = r#"
        [configs.default]
        permits = 10
        period = "1s"

        [configs.slow]
        permits = 1
        period = "1m"
        max-wait = "30s"
        enabled = false

        [instances.geocoding]
        permits = 5
        max-wait = "500ms"

        [instances.backup]
        config = "slow"
        enabled = true
    "#;

    #[test]
    fn a_file_flattens_to_the_pairs_core_resolves() {
        let s = OwnedSettings::from_toml_str(FILE).unwrap();
        let mut pairs: Vec<(&str, &str)> = s
            .pairs()
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        pairs.sort_unstable();
        assert_eq!(
            pairs,
            [
                ("configs.default.period", "1s"),
                ("configs.default.permits", "10"),
                ("configs.slow.enabled", "false"),
                ("configs.slow.max-wait", "30s"),
                ("configs.slow.period", "1m"),
                ("configs.slow.permits", "1"),
                ("instances.backup.config", "slow"),
                ("instances.backup.enabled", "true"),
                ("instances.geocoding.max-wait", "500ms"),
                ("instances.geocoding.permits", "5"),
            ]
        );
    }

    #[test]
    fn a_file_and_the_same_environment_resolve_alike() {
        let file = OwnedSettings::from_toml_str(FILE).unwrap();
        let env = OwnedSettings::from_env_map([
            ("RITMO_CONFIGS_DEFAULT_PERMITS", "10"),
            ("RITMO_CONFIGS_DEFAULT_PERIOD", "1s"),
            ("RITMO_CONFIGS_SLOW_PERMITS", "1"),
            ("RITMO_CONFIGS_SLOW_PERIOD", "1m"),
            ("RITMO_CONFIGS_SLOW_MAX_WAIT", "30s"),
            ("RITMO_CONFIGS_SLOW_ENABLED", "false"),
            ("RITMO_INSTANCES_GEOCODING_PERMITS", "5"),
            ("RITMO_INSTANCES_GEOCODING_MAX_WAIT", "500ms"),
            ("RITMO_INSTANCES_BACKUP_CONFIG", "slow"),
            ("RITMO_INSTANCES_BACKUP_ENABLED", "true"),
        ])
        .unwrap();
        for id in ["geocoding", "backup", "search"] {
            assert_eq!(file.resolve(id), env.resolve(id), "{id}");
        }
        let backup = env.resolve("backup").unwrap();
        assert_eq!(
            (
                backup.permits(),
                backup.period(),
                backup.max_wait(),
                backup.enabled()
            ),
            (1, Duration::from_secs(60), Duration::from_secs(30), true)
        );
    }

    #[test]
    fn environment_names_keep_underscores_and_lose_case() {
        let s = OwnedSettings::from_env_map([
            ("RITMO_INSTANCES_GEO_API_PERMITS", "4"),
            ("RITMO_INSTANCES_GEO_API_PERIOD", "2s"),
            ("RITMO_INSTANCES_GEO_API_MAX_WAIT", "1s"),
        ])
        .unwrap();
        let c = s.resolve("geo_api").unwrap();
        assert_eq!((c.permits(), c.max_wait()), (4, Duration::from_secs(1)));
    }

    #[test]
    fn the_environment_wins_over_the_file() {
        let file = OwnedSettings::from_toml_str(FILE).unwrap();
        let env = OwnedSettings::from_env_map([
            ("RITMO_INSTANCES_GEOCODING_PERMITS", "7"),
            ("RITMO_INSTANCES_SEARCH_CONFIG", "slow"),
        ])
        .unwrap();
        let s = file.clone().then(env);
        assert_eq!(s.resolve("geocoding").unwrap().permits(), 7);
        assert_eq!(
            s.resolve("search").unwrap().period(),
            Duration::from_secs(60)
        );
        assert_eq!(
            file.resolve("search").unwrap().period(),
            Duration::from_secs(1)
        );
    }

    #[test]
    fn loading_rejects_what_is_not_ritmo_settings() {
        for (text, key) in [
            ("[instances.a]\npermit = 1", "instances.a.permit"), // a misspelt attribute
            ("[instance.a]\npermits = 1", "instance"),           // a misspelt section
            ("[configs.a]\nconfig = \"b\"", "configs.a.config"), // only instances name a base
            ("[instances]\na = 1", "instances.a"),               // an instance that is not a table
            ("instances = 1", "instances"),                      // a section that is not a table
        ] {
            let err = OwnedSettings::from_toml_str(text).unwrap_err();
            assert!(
                matches!(err, LoadError::Key(ref k) if k == key),
                "{text}: {err}"
            );
        }
        for text in [
            "[instances.a]\npermits = 1.5", // neither text, integer nor boolean
            "[instances.a]\npermits = [1]", // ditto
            "[instances.a]\nconfig = 1",    // a base config's name is text
        ] {
            let err = OwnedSettings::from_toml_str(text).unwrap_err();
            assert!(matches!(err, LoadError::Value(_)), "{text}: {err}");
        }
        let err = OwnedSettings::from_toml_str("[instances.a\npermits = 1").unwrap_err();
        assert!(matches!(err, LoadError::Toml(_)), "{err}");
        for key in [
            "RITMO_X",
            "RITMO_INSTANCES_PERMITS",
            "RITMO_INSTANCES__PERMITS",
            "RITMO_INSTANCES_A_PERMIT",
            "RITMO_INSTANCE_A_PERMITS",
            "RITMO_CONFIGS_A_CONFIG",
            "instances.a",
            "instances.a.permit",
        ] {
            let err = OwnedSettings::from_env_map([(key, "1")]).unwrap_err();
            assert!(
                matches!(err, LoadError::Key(ref k) if k == key),
                "{key}: {err}"
            );
        }
    }

    #[test]
    fn variables_that_are_not_ritmos_are_skipped() {
        let s = OwnedSettings::from_env_map([
            ("HOME", "/root"),
            ("RITMOX", "1"),
            ("java.home", "/usr/lib/jvm/java-17"),
            ("spring.profiles.active", "prod"),
            ("a.b.c", "1"),
            ("a.b", "1"),
            ("instancesx.a.permits", "1"),
            ("log4j.configurationFile", "log4j2.xml"),
            ("RITMO_INSTANCES_A_PERMITS", "3"),
        ])
        .unwrap();
        assert_eq!(
            s.pairs(),
            [("instances.a.permits".to_string(), "3".to_string())]
        );
    }

    #[test]
    fn bad_values_fail_with_their_code_when_resolved() {
        let cases = [
            (
                "period = \"1 sec\"\npermits = 1",
                ErrorCode::InvalidDuration,
                "instances.a.period",
            ),
            (
                "period = 1\npermits = 1",
                ErrorCode::InvalidDuration,
                "instances.a.period",
            ),
            (
                "period = \"1s\"\npermits = -1",
                ErrorCode::InvalidPermits,
                "instances.a.permits",
            ),
            (
                "period = \"1s\"\npermits = \"ten\"",
                ErrorCode::InvalidPermits,
                "instances.a.permits",
            ),
            (
                "period = \"1s\"\npermits = 1\nenabled = \"yes\"",
                ErrorCode::InvalidBool,
                "instances.a.enabled",
            ),
            (
                "period = \"1s\"\npermits = 1\nconfig = \"nope\"",
                ErrorCode::UnknownConfig,
                "instances.a.config",
            ),
            (
                "period = \"0\"\npermits = 1",
                ErrorCode::InvalidSetting,
                "instances.a.period",
            ),
            (
                "period = \"1s\"\npermits = 0",
                ErrorCode::InvalidSetting,
                "instances.a.permits",
            ),
        ];
        for (attrs, code, key) in cases {
            let s = OwnedSettings::from_toml_str(&format!("[instances.a]\n{attrs}")).unwrap();
            let err = s.resolve("a").unwrap_err();
            assert_eq!((err.code(), err.key()), (code, key), "{attrs}");
        }
    }

    #[test]
    fn a_file_on_disk_loads() {
        let dir = std::env::temp_dir().join(format!("ritmo-settings-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("ritmo.toml");
        std::fs::write(&path, FILE).unwrap();
        let s = OwnedSettings::from_toml_file(&path).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(s, OwnedSettings::from_toml_str(FILE).unwrap());
        assert_eq!(s.resolve("geocoding").unwrap().permits(), 5);
    }
}
