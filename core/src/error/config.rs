//! [`ConfigError`]: a configuration that is not valid, in code or in text.

use core::fmt;

use super::{ErrorCode, InlineText};

/// A configuration is not valid: zero permits, a zero period, less than 1 ns per permit, or
/// text that is not a duration or a boolean. Carries its stable [`ErrorCode`] and, for text,
/// the offending text.
///
/// `Display` starts with the code, then says what was wrong. `Copy`, no heap: long texts are cut
/// with `…`.
///
/// ```
/// use ritmo::{parse_duration, ErrorCode};
/// let err = parse_duration("5 sec").unwrap_err();
/// assert_eq!(err.code(), ErrorCode::InvalidDuration);
/// assert_eq!(err.to_string(), "RITMO-ATR-001: duration text is not valid: \"5 sec\"");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConfigError {
    code: ErrorCode,
    text: Option<InlineText<32>>,
}

impl ConfigError {
    pub(crate) const fn new(code: ErrorCode) -> Self {
        ConfigError { code, text: None }
    }

    pub(crate) fn with_text(mut self, text: &str) -> Self {
        self.text = Some(InlineText::new(text));
        self
    }

    /// The stable code.
    ///
    /// ```
    /// # use ritmo::{Config, ErrorCode};
    /// # use core::time::Duration;
    /// assert_eq!(Config::new(0, Duration::from_secs(1)).unwrap_err().code(), ErrorCode::InvalidPermits);
    /// ```
    pub const fn code(&self) -> ErrorCode {
        self.code
    }

    /// The offending text, or `""` for a config given in code.
    ///
    /// ```
    /// # use ritmo::parse_duration;
    /// assert_eq!(parse_duration("1 s").unwrap_err().text(), "1 s");
    /// ```
    pub fn text(&self) -> &str {
        match &self.text {
            Some(text) => text.as_str(),
            None => "",
        }
    }

    /// Stops the build with this error's code: for `const` contexts only (see
    /// [`const_config!`](crate::const_config), whose expansion in the user's crate calls it).
    #[doc(hidden)]
    pub const fn fail_build(self) -> ! {
        match self.code {
            ErrorCode::ZeroPeriod => panic!("RITMO-ATR-002: period is zero"),
            ErrorCode::InvalidPermits => panic!("RITMO-ATR-003: permits is less than 1"),
            ErrorCode::TooFast => panic!("RITMO-REG-001: config gives less than 1 ns per permit"),
            ErrorCode::BurstNotBelowCap => {
                panic!("RITMO-ATR-007: burst is not below the window's cap")
            }
            _ => panic!("invalid ritmo config"),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.code.description())?;
        if let Some(text) = &self.text {
            write!(f, ": {:?}", text.as_str())?;
        }
        Ok(())
    }
}

impl core::error::Error for ConfigError {}

#[cfg(feature = "defmt")]
impl defmt::Format for ConfigError {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(
            f,
            "{=str}: {=str} {=str}",
            self.code.as_str(),
            self.code.description(),
            self.text()
        )
    }
}
