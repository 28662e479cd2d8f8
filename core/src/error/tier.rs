//! [`TierError`]: a tiered keyed limiter has no tier of the name asked for.

use core::fmt;

use super::{ErrorCode, InlineText};

/// A tiered keyed limiter was asked about a tier it does not have
/// ([`UnknownTier`](ErrorCode::UnknownTier), `RITMO-REG-011`): [`name`](TierError::name) is the
/// name asked for (cut with `…` past 48 bytes), [`id`](TierError::id) the limiter's. Returned by
/// a keyed limiter's `set_tier_config` (feature `reconfigure`), whose docs show one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TierError {
    id: &'static str,
    name: InlineText<48>,
}

impl TierError {
    #[cfg(feature = "reconfigure")]
    pub(crate) fn unknown(id: &'static str, name: &str) -> Self {
        TierError {
            id,
            name: InlineText::new(name),
        }
    }

    /// The stable code: [`ErrorCode::UnknownTier`].
    pub const fn code(&self) -> ErrorCode {
        ErrorCode::UnknownTier
    }

    /// The limiter's id.
    pub const fn id(&self) -> &'static str {
        self.id
    }

    /// The tier name asked for.
    pub fn name(&self) -> &str {
        self.name.as_str()
    }
}

impl fmt::Display for TierError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let code = self.code();
        write!(
            f,
            "{code}: {}: {:?} (limiter {:?})",
            code.description(),
            self.name(),
            self.id
        )
    }
}

impl core::error::Error for TierError {}

#[cfg(feature = "defmt")]
impl defmt::Format for TierError {
    fn format(&self, f: defmt::Formatter<'_>) {
        let code = self.code();
        defmt::write!(
            f,
            "{=str}: {=str}: {=str} (limiter {=str})",
            code.as_str(),
            code.description(),
            self.name(),
            self.id
        )
    }
}
