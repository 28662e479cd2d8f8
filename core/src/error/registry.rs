//! [`RegistryError`]: a registry could not register or find a limiter.

use core::fmt;

use super::{ConfigError, ErrorCode, InlineText, SettingsError};

/// A registry could not register or find a limiter: its [`code`](RegistryError::code) says why,
/// and [`id`](RegistryError::id) names the limiter.
///
/// - [`ConfigMismatch`](ErrorCode::ConfigMismatch) (`RITMO-REG-008`): the id is registered with
///   a different config;
/// - [`UnknownId`](ErrorCode::UnknownId) (`RITMO-REG-009`): no limiter has that id;
/// - [`RegistryFull`](ErrorCode::RegistryFull) (`RITMO-REG-010`): every slot is taken;
/// - a settings code (`RITMO-REG-003`, `RITMO-REG-004`, `RITMO-ATR-*`) when the limiter's config
///   was to be resolved from settings and could not be: [`settings`](RegistryError::settings)
///   gives that error, with its key.
///
/// ```
/// use core::time::Duration;
/// use ritmo::{Config, ErrorCode, ManualClock, Registry};
/// static REGISTRY: Registry<ManualClock, 1> = Registry::new(ManualClock::new());
/// let err = REGISTRY.get("geocoding").unwrap_err();
/// assert_eq!((err.code(), err.id()), (ErrorCode::UnknownId, "geocoding"));
/// assert_eq!(err.to_string(), "RITMO-REG-009: unknown limiter id: \"geocoding\"");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegistryError {
    kind: Kind,
}

/// Kept small (clippy's `result_large_err`): ids given as `&'static str` are kept as they are;
/// only an id looked up by a borrowed `&str` is copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `ConfigMismatch` or `RegistryFull`, registering `id`.
    Registering { code: ErrorCode, id: &'static str },
    /// `UnknownId`.
    Lookup { id: InlineText<64> },
    /// The config given for `id` is invalid.
    Config {
        id: &'static str,
        error: ConfigError,
    },
    /// The config of `id` did not resolve from settings.
    Settings {
        id: &'static str,
        error: SettingsError,
    },
}

impl RegistryError {
    pub(crate) const fn registering(code: ErrorCode, id: &'static str) -> Self {
        RegistryError {
            kind: Kind::Registering { code, id },
        }
    }

    pub(crate) fn unknown(id: &str) -> Self {
        RegistryError {
            kind: Kind::Lookup {
                id: InlineText::new(id),
            },
        }
    }

    pub(crate) const fn config_for(id: &'static str, error: ConfigError) -> Self {
        RegistryError {
            kind: Kind::Config { id, error },
        }
    }

    pub(crate) const fn settings_for(id: &'static str, error: SettingsError) -> Self {
        RegistryError {
            kind: Kind::Settings { id, error },
        }
    }

    /// The stable code.
    ///
    /// ```
    /// # use ritmo::{Config, ErrorCode, ManualClock, Registry};
    /// # use core::time::Duration;
    /// let clock = ManualClock::new();
    /// let registry: Registry<&ManualClock, 1> = Registry::new(&clock);
    /// registry.get_or_create("a", Config::new(1, Duration::from_secs(1))?)?;
    /// let err = registry.get_or_create("b", Config::new(1, Duration::from_secs(1))?).unwrap_err();
    /// assert_eq!(err.code(), ErrorCode::RegistryFull);
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub const fn code(&self) -> ErrorCode {
        match &self.kind {
            Kind::Registering { code, .. } => *code,
            Kind::Lookup { .. } => ErrorCode::UnknownId,
            Kind::Settings { error, .. } => error.code(),
            Kind::Config { error, .. } => error.code(),
        }
    }

    /// The id of the limiter asked for (an id looked up by a borrowed `&str` is cut with `…`
    /// past 64 bytes).
    ///
    /// ```
    /// # use ritmo::{ManualClock, Registry};
    /// let registry: Registry<ManualClock, 1> = Registry::new(ManualClock::new());
    /// assert_eq!(registry.get("radio").unwrap_err().id(), "radio");
    /// ```
    pub fn id(&self) -> &str {
        match &self.kind {
            Kind::Registering { id, .. } | Kind::Settings { id, .. } | Kind::Config { id, .. } => {
                id
            }
            Kind::Lookup { id } => id.as_str(),
        }
    }

    /// The config error behind this one, when the config given for the id was invalid.
    ///
    /// ```
    /// # use ritmo::{ManualClock, Registry};
    /// let registry: Registry<ManualClock, 1> = Registry::new(ManualClock::new());
    /// assert!(registry.get("radio").unwrap_err().config().is_none());
    /// ```
    pub const fn config(&self) -> Option<&ConfigError> {
        match &self.kind {
            Kind::Config { error, .. } => Some(error),
            _ => None,
        }
    }

    /// The settings error behind this one, when the config came from settings.
    ///
    /// ```
    /// # use ritmo::{ManualClock, Registry};
    /// let registry: Registry<ManualClock, 1> = Registry::new(ManualClock::new());
    /// assert!(registry.get("radio").unwrap_err().settings().is_none());
    /// ```
    pub const fn settings(&self) -> Option<&SettingsError> {
        match &self.kind {
            Kind::Settings { error, .. } => Some(error),
            _ => None,
        }
    }
}

impl fmt::Display for RegistryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(config) = self.config() {
            return write!(f, "{config} (limiter {:?})", self.id());
        }
        match self.settings() {
            Some(settings) => write!(f, "{settings} (limiter {:?})", self.id()),
            None => write!(
                f,
                "{}: {}: {:?}",
                self.code().as_str(),
                self.code().description(),
                self.id()
            ),
        }
    }
}

impl core::error::Error for RegistryError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        if let Some(e) = self.config() {
            return Some(e);
        }
        match self.settings() {
            Some(e) => Some(e),
            None => None,
        }
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for RegistryError {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(
            f,
            "{=str}: {=str}: {=str}",
            self.code().as_str(),
            self.code().description(),
            self.id()
        )
    }
}
