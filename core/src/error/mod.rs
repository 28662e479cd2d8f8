//! Errors, one small type per thing a caller does about them:
//!
//! - a call that was refused for now and may be retried ([`RateLimitExceeded`]), or asked for a
//!   number of permits no limiter can grant ([`InvalidPermits`]); [`AcquireError`] is either;
//! - an invalid configuration in code or text ([`ConfigError`]);
//! - settings that do not resolve to a valid configuration ([`SettingsError`], naming the key);
//! - a registry that cannot register or find a limiter ([`RegistryError`]);
//! - a tiered keyed limiter asked about a tier it does not have ([`TierError`]).
//!
//! Configuration, settings and registry errors carry a stable [`ErrorCode`]; their `Display`
//! starts with it.

mod acquire;
mod code;
mod config;
mod registry;
mod settings;
mod text;
mod tier;

pub use acquire::{AcquireError, HumanDuration, InvalidPermits, RateLimitExceeded, Reason};
pub use code::ErrorCode;
pub use config::ConfigError;
pub use registry::RegistryError;
pub use settings::SettingsError;
pub(crate) use text::InlineText;
pub use tier::TierError;
