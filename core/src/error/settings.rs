//! [`SettingsError`]: settings that do not resolve to a valid configuration.

use core::fmt;

use super::{ConfigError, ErrorCode, InlineText};

/// Settings do not resolve to a valid configuration for a limiter. Names the settings key to fix.
///
/// Its [`code`](SettingsError::code) is one of:
/// - the code of a value that is not text of its attribute's kind, quoting the text:
///   [`InvalidDuration`](ErrorCode::InvalidDuration) (`RITMO-ATR-001`),
///   [`InvalidPermits`](ErrorCode::InvalidPermits) (`RITMO-ATR-003`, `permits` that is not a
///   whole number), [`InvalidBool`](ErrorCode::InvalidBool) (`RITMO-ATR-006`);
/// - [`UnknownConfig`](ErrorCode::UnknownConfig) (`RITMO-REG-004`): the instance names a base
///   config that no `configs.<name>.*` key defines (quoted);
/// - [`InvalidSetting`](ErrorCode::InvalidSetting) (`RITMO-REG-003`): the values read fine but do
///   not make a valid config; its [`cause`](SettingsError::cause) is the code
///   [`Config::new`](crate::Config::new) gives (`ATR-003`, `ATR-002` or `REG-001`).
///
/// ```
/// use ritmo::{ErrorCode, Settings};
/// let settings = Settings::new(&[("instances.api.permits", "0"), ("instances.api.period", "1s")]);
/// let err = settings.resolve("api").unwrap_err();
/// assert_eq!(err.code(), ErrorCode::InvalidSetting);
/// assert_eq!(err.cause(), Some(ErrorCode::InvalidPermits));
/// assert_eq!(err.key(), "instances.api.permits");
/// assert_eq!(
///     err.to_string(),
///     "RITMO-REG-003: config resolved from settings is invalid \
///      (RITMO-ATR-003: permits is less than 1) at key instances.api.permits"
/// );
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SettingsError {
    code: ErrorCode,
    cause: Option<ErrorCode>,
    text: Option<InlineText<32>>,
    key: InlineText<56>,
}

impl SettingsError {
    pub(crate) fn new(code: ErrorCode, key: &str) -> Self {
        SettingsError {
            code,
            cause: None,
            text: None,
            key: InlineText::new(key),
        }
    }

    /// A bad value's [`ConfigError`], at `key`.
    pub(crate) fn at(error: ConfigError, key: &str) -> Self {
        let mut e = SettingsError::new(error.code(), key);
        if !error.text().is_empty() {
            e = e.with_text(error.text());
        }
        e
    }

    pub(crate) fn with_text(mut self, text: &str) -> Self {
        self.text = Some(InlineText::new(text));
        self
    }

    pub(crate) const fn with_cause(mut self, cause: ErrorCode) -> Self {
        self.cause = Some(cause);
        self
    }

    /// The stable code.
    ///
    /// ```
    /// # use ritmo::{ErrorCode, Settings};
    /// let s = Settings::new(&[("instances.a.config", "nope")]);
    /// assert_eq!(s.resolve("a").unwrap_err().code(), ErrorCode::UnknownConfig);
    /// ```
    pub const fn code(&self) -> ErrorCode {
        self.code
    }

    /// The more specific code behind an [`InvalidSetting`](ErrorCode::InvalidSetting) error.
    ///
    /// ```
    /// # use ritmo::{ErrorCode, Settings};
    /// let s = Settings::new(&[("instances.a.permits", "1"), ("instances.a.period", "0")]);
    /// assert_eq!(s.resolve("a").unwrap_err().cause(), Some(ErrorCode::ZeroPeriod));
    /// ```
    pub const fn cause(&self) -> Option<ErrorCode> {
        self.cause
    }

    /// The offending text (a value, a base config's name), or `""`.
    ///
    /// ```
    /// # use ritmo::Settings;
    /// let s = Settings::new(&[("instances.a.permits", "1"), ("instances.a.period", "soon")]);
    /// assert_eq!(s.resolve("a").unwrap_err().text(), "soon");
    /// ```
    pub fn text(&self) -> &str {
        match &self.text {
            Some(text) => text.as_str(),
            None => "",
        }
    }

    /// The settings key to fix, e.g. `instances.api.period` (cut with `…` if very long).
    ///
    /// ```
    /// # use ritmo::Settings;
    /// let s = Settings::new(&[("instances.a.permits", "1"), ("instances.a.period", "soon")]);
    /// assert_eq!(s.resolve("a").unwrap_err().key(), "instances.a.period");
    /// ```
    pub fn key(&self) -> &str {
        self.key.as_str()
    }
}

impl fmt::Display for SettingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.code.description())?;
        if let Some(cause) = self.cause {
            write!(f, " ({}: {})", cause.as_str(), cause.description())?;
        }
        if let Some(text) = &self.text {
            write!(f, ": {:?}", text.as_str())?;
        }
        write!(f, " at key {}", self.key.as_str())
    }
}

impl core::error::Error for SettingsError {}

#[cfg(feature = "defmt")]
impl defmt::Format for SettingsError {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(
            f,
            "{=str}: {=str} {=str} at key {=str}",
            self.code.as_str(),
            self.code.description(),
            self.text(),
            self.key()
        )
    }
}
