//! Registry settings from a TOML file or string, or from environment variables (feature `serde`).
//!
//! Both are read through serde into one typed shape ([`SettingsFile`]), which rejects unknown
//! sections and attributes, then flattened into the `(key, value)` text pairs that
//! [`ritmo_core::Settings`] resolves by its layers (defaults < `configs.<name>` <
//! `instances.<id>` < code; see [`ritmo_core::settings`]). Values are checked when a limiter's
//! config is resolved, with the stable codes (`RITMO-ATR-001`, `RITMO-REG-003`, ...).
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
//!
//! ```
//! use ritmo_std::settings::OwnedSettings;
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
use std::collections::BTreeMap;
use std::fmt;
use std::format;
use std::path::{Path, PathBuf};
use std::string::{String, ToString};
use std::vec::Vec;

use ritmo_core::{Config, ConfigError, Overrides, Settings};
use serde::Deserialize;

/// A value as a file writes it: text, a whole number or a boolean. Checked when resolved.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
enum Value {
    Integer(i64),
    Boolean(bool),
    Text(String),
}

impl Value {
    fn into_text(self) -> String {
        match self {
            Value::Integer(i) => i.to_string(),
            Value::Boolean(b) => b.to_string(),
            Value::Text(t) => t,
        }
    }
}

/// The attributes of a shared config, `configs.<name>`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigAttributes {
    permits: Option<Value>,
    period: Option<Value>,
    #[serde(rename = "max-wait", alias = "max_wait")]
    max_wait: Option<Value>,
    enabled: Option<Value>,
}

/// The attributes of one limiter, `instances.<id>`: a config's, plus the base config's name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
struct InstanceAttributes {
    config: Option<String>,
    permits: Option<Value>,
    period: Option<Value>,
    #[serde(rename = "max-wait", alias = "max_wait")]
    max_wait: Option<Value>,
    enabled: Option<Value>,
}

/// The settings as a file has them: `[configs.<name>]` and `[instances.<id>]` tables.
///
/// It implements [`Deserialize`], so an application can keep it as a section of its own config
/// (`#[derive(Deserialize)] struct AppConfig { rate_limits: SettingsFile, .. }`) and turn it into
/// [`OwnedSettings`] with `into()`.
///
/// ```
/// use ritmo_std::settings::{OwnedSettings, SettingsFile};
/// let file: SettingsFile = toml::from_str("[instances.api]\npermits = 3\nperiod = \"1s\"")?;
/// let settings = OwnedSettings::from(file);
/// assert_eq!(settings.resolve("api")?.permits(), 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SettingsFile {
    #[serde(default)]
    configs: BTreeMap<String, ConfigAttributes>,
    #[serde(default)]
    instances: BTreeMap<String, InstanceAttributes>,
}

impl SettingsFile {
    /// The `(key, value)` pairs core resolves, e.g. `("instances.api.permits", "3")`.
    fn into_pairs(self) -> Vec<(String, String)> {
        let mut pairs = Vec::new();
        let mut push = |section: &str, name: &str, attr: &str, value: Option<String>| {
            if let Some(value) = value {
                pairs.push((format!("{section}.{name}.{attr}"), value));
            }
        };
        for (name, a) in self.configs {
            push("configs", &name, "permits", a.permits.map(Value::into_text));
            push("configs", &name, "period", a.period.map(Value::into_text));
            push(
                "configs",
                &name,
                "max-wait",
                a.max_wait.map(Value::into_text),
            );
            push("configs", &name, "enabled", a.enabled.map(Value::into_text));
        }
        for (id, a) in self.instances {
            push("instances", &id, "config", a.config);
            push("instances", &id, "permits", a.permits.map(Value::into_text));
            push("instances", &id, "period", a.period.map(Value::into_text));
            push(
                "instances",
                &id,
                "max-wait",
                a.max_wait.map(Value::into_text),
            );
            push("instances", &id, "enabled", a.enabled.map(Value::into_text));
        }
        pairs
    }
}

/// Settings loaded from files or the environment, owned as `(key, value)` text pairs, ready to
/// resolve limiter configs ([`resolve`](Self::resolve)) or to hand to
/// [`ritmo_core::Settings`] ([`settings`](Self::settings)).
///
/// ```
/// use ritmo_std::settings::OwnedSettings;
/// let settings = OwnedSettings::from_toml_str("[instances.uart]\npermits = 960\nperiod = \"1s\"")?;
/// assert_eq!(settings.pairs()[0], ("instances.uart.permits".to_string(), "960".to_string()));
/// # Ok::<(), ritmo_std::settings::SettingsError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OwnedSettings {
    pairs: Vec<(String, String)>,
}

impl From<SettingsFile> for OwnedSettings {
    fn from(file: SettingsFile) -> Self {
        OwnedSettings {
            pairs: file.into_pairs(),
        }
    }
}

impl OwnedSettings {
    /// Reads TOML text. Unknown sections or attributes, and values that are not text, whole
    /// numbers or booleans, are [`SettingsError::Toml`].
    ///
    /// ```
    /// use ritmo_std::settings::{OwnedSettings, SettingsError};
    /// let err = OwnedSettings::from_toml_str("[instances.api]\npermit = 3").unwrap_err();
    /// assert!(matches!(err, SettingsError::Toml(_)));
    /// assert!(err.to_string().contains("permit"));
    /// ```
    pub fn from_toml_str(text: &str) -> Result<Self, SettingsError> {
        let file: SettingsFile = toml::from_str(text).map_err(SettingsError::Toml)?;
        Ok(file.into())
    }

    /// Reads a TOML file; a file that cannot be read is [`SettingsError::Io`], naming it.
    ///
    /// ```
    /// use ritmo_std::settings::{OwnedSettings, SettingsError};
    /// let err = OwnedSettings::from_toml_file("no/such/ritmo.toml").unwrap_err();
    /// assert!(matches!(err, SettingsError::Io { .. }));
    /// assert!(err.to_string().contains("no/such/ritmo.toml"));
    /// ```
    pub fn from_toml_file(path: impl AsRef<Path>) -> Result<Self, SettingsError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| SettingsError::Io {
            path: path.to_owned(),
            source,
        })?;
        Self::from_toml_str(&text)
    }

    /// Reads an environment-style map: keys `RITMO_<SECTION>_<NAME>_<ATTRIBUTE>` (see the
    /// [module docs](self)) or dotted keys (`instances.geocoding.permits`); other keys are
    /// skipped, so the whole environment can be passed. A `RITMO_` key that does not name a
    /// section, a name and an attribute is [`SettingsError::Key`]; unknown sections or
    /// attributes are [`SettingsError::Toml`], as in a file.
    ///
    /// ```
    /// use std::collections::HashMap;
    /// use ritmo_std::settings::OwnedSettings;
    /// let map = HashMap::from([
    ///     ("RITMO_CONFIGS_DEFAULT_PERIOD".to_string(), "1s".to_string()),
    ///     ("instances.geo-coding.permits".to_string(), "5".to_string()),
    ///     ("PATH".to_string(), "/usr/bin".to_string()),
    /// ]);
    /// let settings = OwnedSettings::from_env_map(&map)?;
    /// assert_eq!(settings.resolve("geo-coding")?.permits(), 5);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_env_map<I>(vars: I) -> Result<Self, SettingsError>
    where
        I: IntoIterator,
        I::Item: ritmo_core::Setting,
    {
        let mut root = toml::Table::new();
        for var in vars {
            use ritmo_core::Setting as _;
            let Some((section, name, attr)) = env_key(var.key())? else {
                continue;
            };
            let section = root
                .entry(section)
                .or_insert_with(|| toml::Value::Table(toml::Table::new()));
            let toml::Value::Table(section) = section else {
                unreachable!("only tables are inserted at this level");
            };
            let entry = section
                .entry(name)
                .or_insert_with(|| toml::Value::Table(toml::Table::new()));
            let toml::Value::Table(entry) = entry else {
                unreachable!("only tables are inserted at this level");
            };
            entry.insert(attr, toml::Value::String(var.value().to_owned()));
        }
        let file: SettingsFile = root.try_into().map_err(SettingsError::Toml)?;
        Ok(file.into())
    }

    /// Reads this process's environment, as [`from_env_map`](Self::from_env_map) does (only
    /// `RITMO_*` variables are read; dotted names are rare in an environment but work too).
    ///
    /// ```
    /// # use ritmo_std::settings::OwnedSettings;
    /// let from_env = OwnedSettings::from_env()?;
    /// # let _ = from_env;
    /// # Ok::<(), ritmo_std::settings::SettingsError>(())
    /// ```
    pub fn from_env() -> Result<Self, SettingsError> {
        let vars: Vec<(String, String)> = std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .collect();
        Self::from_env_map(&vars)
    }

    /// These settings with `later` on top: where both set a key, `later` wins (a file, then the
    /// environment).
    ///
    /// ```
    /// # use ritmo_std::settings::OwnedSettings;
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

    /// The flattened `(key, value)` pairs, in order (later pairs win).
    ///
    /// ```
    /// # use ritmo_std::settings::OwnedSettings;
    /// let s = OwnedSettings::from_toml_str("[configs.default]\nenabled = false")?;
    /// assert_eq!(s.pairs(), [("configs.default.enabled".to_string(), "false".to_string())]);
    /// # Ok::<(), ritmo_std::settings::SettingsError>(())
    /// ```
    pub fn pairs(&self) -> &[(String, String)] {
        &self.pairs
    }

    /// The core view of these pairs.
    ///
    /// ```
    /// # use ritmo_std::settings::OwnedSettings;
    /// let s = OwnedSettings::from_toml_str("[instances.a]\npermits = 2\nperiod = \"1s\"")?;
    /// assert_eq!(s.settings().resolve("a")?.permits(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn settings(&self) -> Settings<&[(String, String)]> {
        Settings::new(&self.pairs)
    }

    /// The config of limiter `id` from these settings (see [`ritmo_core::settings`]).
    ///
    /// ```
    /// # use ritmo_std::settings::OwnedSettings;
    /// # use ritmo_core::ErrorCode;
    /// let s = OwnedSettings::from_toml_str("[instances.a]\npermits = 0\nperiod = \"1s\"")?;
    /// let err = s.resolve("a").unwrap_err();
    /// assert_eq!((err.code(), err.key()), (ErrorCode::Reg003, Some("instances.a.permits")));
    /// # Ok::<(), ritmo_std::settings::SettingsError>(())
    /// ```
    pub fn resolve(&self, id: &str) -> Result<Config, ConfigError> {
        self.settings().resolve(id)
    }

    /// The config of limiter `id`, with what the code says on top.
    ///
    /// ```
    /// # use ritmo_std::settings::OwnedSettings;
    /// # use ritmo_core::Overrides;
    /// let s = OwnedSettings::from_toml_str("[instances.a]\npermits = 2\nperiod = \"1s\"")?;
    /// assert!(!s.resolve_with("a", Overrides::new().enabled(false))?.enabled());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn resolve_with(&self, id: &str, code: Overrides) -> Result<Config, ConfigError> {
        self.settings().resolve_with(id, code)
    }
}

/// Attributes an environment variable may end with, longest spelling first.
const ENV_ATTRIBUTES: [(&str, &str); 5] = [
    ("_MAX_WAIT", "max-wait"),
    ("_PERMITS", "permits"),
    ("_PERIOD", "period"),
    ("_ENABLED", "enabled"),
    ("_CONFIG", "config"),
];

/// `(section, name, attribute)` of a settings key in an environment map; `None` for keys that
/// are not settings.
fn env_key(key: &str) -> Result<Option<(String, String, String)>, SettingsError> {
    if let Some(rest) = key.strip_prefix("RITMO_") {
        let bad = || SettingsError::Key(key.to_owned());
        let (section, rest) = rest.split_once('_').ok_or_else(bad)?;
        let (name, attr) = ENV_ATTRIBUTES
            .iter()
            .find_map(|(suffix, attr)| Some((rest.strip_suffix(suffix)?, attr.to_string())))
            .or_else(|| {
                let (name, attr) = rest.rsplit_once('_')?;
                Some((name, attr.to_lowercase()))
            })
            .ok_or_else(bad)?;
        if name.is_empty() || attr.is_empty() {
            return Err(bad());
        }
        return Ok(Some((section.to_lowercase(), name.to_lowercase(), attr)));
    }
    if key.contains('.') {
        let bad = || SettingsError::Key(key.to_owned());
        let (section, rest) = key.split_once('.').ok_or_else(bad)?;
        let (name, attr) = rest.rsplit_once('.').ok_or_else(bad)?;
        return Ok(Some((section.to_owned(), name.to_owned(), attr.to_owned())));
    }
    Ok(None)
}

/// Settings could not be loaded. (Values are checked later, when a config is resolved, as
/// [`ConfigError`]s.)
///
/// ```
/// use ritmo_std::settings::{OwnedSettings, SettingsError};
/// let err = OwnedSettings::from_env_map([("RITMO_PERMITS", "5")]).unwrap_err();
/// assert!(matches!(err, SettingsError::Key(ref k) if k == "RITMO_PERMITS"));
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum SettingsError {
    /// The file could not be read.
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Not TOML, or not the shape of ritmo settings (an unknown section or attribute, a value
    /// that is neither text, a whole number nor a boolean).
    Toml(toml::de::Error),
    /// An environment key starting `RITMO_` that does not read as
    /// `RITMO_<SECTION>_<NAME>_<ATTRIBUTE>`, or a dotted key with fewer than three parts.
    Key(String),
}

impl fmt::Display for SettingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SettingsError::Io { path, source } => {
                write!(f, "cannot read ritmo settings {}: {source}", path.display())
            }
            SettingsError::Toml(e) => write!(f, "invalid ritmo settings: {e}"),
            SettingsError::Key(key) => write!(
                f,
                "not a ritmo settings key: {key:?} (expected RITMO_<SECTION>_<NAME>_<ATTRIBUTE> \
                 or <section>.<name>.<attribute>)"
            ),
        }
    }
}

impl std::error::Error for SettingsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SettingsError::Io { source, .. } => Some(source),
            SettingsError::Toml(e) => Some(e),
            SettingsError::Key(_) => None,
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
        for text in [
            "[instances.a]\npermit = 1",    // a misspelt attribute
            "[instance.a]\npermits = 1",    // a misspelt section
            "[configs.a]\nconfig = \"b\"",  // only instances name a base
            "[instances.a]\npermits = 1.5", // neither text, integer nor boolean
            "[instances.a]\npermits = [1]", // ditto
            "[instances.a\npermits = 1",    // not TOML
            "[instances]\na = 1",           // an instance that is not a table
        ] {
            let err = OwnedSettings::from_toml_str(text).unwrap_err();
            assert!(matches!(err, SettingsError::Toml(_)), "{text}: {err}");
        }
        for key in [
            "RITMO_X",
            "RITMO_INSTANCES_PERMITS",
            "RITMO_INSTANCES__PERMITS",
        ] {
            let err = OwnedSettings::from_env_map([(key, "1")]).unwrap_err();
            assert!(
                matches!(err, SettingsError::Key(ref k) if k == key),
                "{key}: {err}"
            );
        }
        for key in [
            "RITMO_INSTANCES_A_PERMIT",
            "RITMO_INSTANCE_A_PERMITS",
            "a.b.c",
        ] {
            let err = OwnedSettings::from_env_map([(key, "1")]).unwrap_err();
            assert!(matches!(err, SettingsError::Toml(_)), "{key}: {err}");
        }
        assert!(matches!(
            OwnedSettings::from_env_map([("a.b", "1")]).unwrap_err(),
            SettingsError::Key(_)
        ));
        // Keys that are not ritmo's are skipped.
        let s = OwnedSettings::from_env_map([("HOME", "/root"), ("RITMOX", "1")]).unwrap();
        assert!(s.pairs().is_empty());
    }

    #[test]
    fn bad_values_fail_with_their_code_when_resolved() {
        let cases = [
            (
                "period = \"1 sec\"\npermits = 1",
                ErrorCode::Atr001,
                "instances.a.period",
            ),
            (
                "period = 1\npermits = 1",
                ErrorCode::Atr001,
                "instances.a.period",
            ),
            (
                "period = \"1s\"\npermits = -1",
                ErrorCode::Atr003,
                "instances.a.permits",
            ),
            (
                "period = \"1s\"\npermits = \"ten\"",
                ErrorCode::Atr003,
                "instances.a.permits",
            ),
            (
                "period = \"1s\"\npermits = 1\nenabled = \"yes\"",
                ErrorCode::Atr006,
                "instances.a.enabled",
            ),
            (
                "period = \"1s\"\npermits = 1\nconfig = \"nope\"",
                ErrorCode::Reg004,
                "instances.a.config",
            ),
            (
                "period = \"0\"\npermits = 1",
                ErrorCode::Reg003,
                "instances.a.period",
            ),
            (
                "period = \"1s\"\npermits = 0",
                ErrorCode::Reg003,
                "instances.a.permits",
            ),
        ];
        for (attrs, code, key) in cases {
            let s = OwnedSettings::from_toml_str(&format!("[instances.a]\n{attrs}")).unwrap();
            let err = s.resolve("a").unwrap_err();
            assert_eq!((err.code(), err.key()), (code, Some(key)), "{attrs}");
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
