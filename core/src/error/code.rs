//! [`ErrorCode`]: the stable codes of configuration, settings and registry errors.

use core::fmt;

/// The stable codes of configuration, settings and registry errors. Each variant's
/// [`as_str`](ErrorCode::as_str) is the code printed in messages and logs, which never changes
/// between versions (`RITMO-REG-009`); the variant's name says what it means.
///
/// ```
/// use ritmo::ErrorCode;
/// assert_eq!(ErrorCode::InvalidDuration.as_str(), "RITMO-ATR-001");
/// assert_eq!(ErrorCode::UnknownId.as_str(), "RITMO-REG-009");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum ErrorCode {
    /// `RITMO-ATR-001`: duration text is not valid.
    InvalidDuration,
    /// `RITMO-ATR-002`: period is zero.
    ZeroPeriod,
    /// `RITMO-ATR-003`: permits is less than 1 (or, in settings, not a whole number).
    InvalidPermits,
    /// `RITMO-ATR-006`: `enabled` is not `true`/`false`.
    InvalidBool,
    /// `RITMO-ATR-007`: a window config's burst is not below its cap ([`Config::at_most`](crate::Config::at_most)).
    BurstNotBelowCap,
    /// `RITMO-REG-001`: the config gives less than 1 ns per permit.
    TooFast,
    /// `RITMO-REG-003`: a config resolved from settings is invalid.
    InvalidSetting,
    /// `RITMO-REG-004`: settings name an unknown base config.
    UnknownConfig,
    /// `RITMO-REG-008`: an id is shared with a different config.
    ConfigMismatch,
    /// `RITMO-REG-009`: unknown limiter id.
    UnknownId,
    /// `RITMO-REG-010`: the registry is full.
    RegistryFull,
    /// `RITMO-REG-011`: a tiered keyed limiter has no tier of that name.
    UnknownTier,
}

impl ErrorCode {
    /// The stable code, e.g. `"RITMO-REG-008"`.
    ///
    /// ```
    /// # use ritmo::ErrorCode;
    /// assert_eq!(ErrorCode::RegistryFull.as_str(), "RITMO-REG-010");
    /// ```
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidDuration => "RITMO-ATR-001",
            ErrorCode::ZeroPeriod => "RITMO-ATR-002",
            ErrorCode::InvalidPermits => "RITMO-ATR-003",
            ErrorCode::InvalidBool => "RITMO-ATR-006",
            ErrorCode::BurstNotBelowCap => "RITMO-ATR-007",
            ErrorCode::TooFast => "RITMO-REG-001",
            ErrorCode::InvalidSetting => "RITMO-REG-003",
            ErrorCode::UnknownConfig => "RITMO-REG-004",
            ErrorCode::ConfigMismatch => "RITMO-REG-008",
            ErrorCode::UnknownId => "RITMO-REG-009",
            ErrorCode::RegistryFull => "RITMO-REG-010",
            ErrorCode::UnknownTier => "RITMO-REG-011",
        }
    }

    /// What the code means, in a few words.
    ///
    /// ```
    /// # use ritmo::ErrorCode;
    /// assert_eq!(ErrorCode::ZeroPeriod.description(), "period is zero");
    /// ```
    pub const fn description(self) -> &'static str {
        match self {
            ErrorCode::InvalidDuration => "duration text is not valid",
            ErrorCode::ZeroPeriod => "period is zero",
            ErrorCode::InvalidPermits => "permits is less than 1",
            ErrorCode::InvalidBool => "enabled is not true/false",
            ErrorCode::BurstNotBelowCap => "burst is not below the window's cap",
            ErrorCode::TooFast => "config gives less than 1 ns per permit",
            ErrorCode::InvalidSetting => "config resolved from settings is invalid",
            ErrorCode::UnknownConfig => "settings name an unknown base config",
            ErrorCode::ConfigMismatch => "an id is shared with a different config",
            ErrorCode::UnknownId => "unknown limiter id",
            ErrorCode::RegistryFull => "registry is full",
            ErrorCode::UnknownTier => "unknown tier name",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
