#![doc = include_str!("../README.md")]
#![no_std]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod clock;
mod config;
mod error;
mod event;
pub mod gcra;
mod limiter;
#[cfg(feature = "defmt")]
mod log;
pub mod registry;
pub mod settings;
mod state;
mod sync;
mod wait;

pub use clock::{Clock, FixedRateClock, ManualClock, ManualTime, TickRate};
pub use config::{Config, ConfigBuilder, DurationValue, parse_bool, parse_duration};
pub use error::{AcquireError, ConfigError, ErrorCode, InvalidPermits, RateLimitExceeded, Reason};
pub use event::{Event, Listener};
pub use limiter::{RateLimiter, Reservation, Snapshot};
#[cfg(feature = "defmt")]
pub use log::DefmtListener;
pub use registry::Registry;
pub use settings::{Overrides, Setting, Settings};
pub use wait::{AdvanceClock, Interrupted, Wait};
