#![doc = include_str!("../README.md")]
#![no_std]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub use ritmo_core::*;

/// The std adapter: a fast server clock, blocking waits with interruption, call wrappers.
///
/// ```
/// # #[cfg(feature = "std")]
/// let _ = ritmo::std::VERSION;
/// ```
#[cfg(feature = "std")]
pub use ritmo_std as std;

/// The Embassy adapter: an embassy-time clock and async waits.
///
/// ```
/// # #[cfg(feature = "embassy")]
/// let _ = ritmo::embassy::VERSION;
/// ```
#[cfg(feature = "embassy")]
pub use ritmo_embassy as embassy;
