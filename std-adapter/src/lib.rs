//! Placeholder adapter: filled in by a later change.
#![no_std]

#[cfg(feature = "serde")]
pub mod settings;

/// The crate's version.
///
/// ```
/// assert!(!env!("CARGO_PKG_VERSION").is_empty());
/// ```
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
