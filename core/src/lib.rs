#![doc = include_str!("../README.md")]
#![no_std]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod bands;
mod clock;
mod config;
#[cfg(feature = "embedded-hal")]
mod delay;
mod error;
mod event;
pub mod gcra;
#[cfg(feature = "embedded-io")]
#[cfg_attr(docsrs, doc(cfg(feature = "embedded-io")))]
pub mod io;
mod limiter;
#[cfg(feature = "defmt")]
mod log;
pub mod registry;
pub mod settings;
mod state;
mod sync;
mod wait;

pub use bands::{Bands, BandsReservation};
pub use clock::{Clock, FixedRateClock, ManualClock, ManualTime, TickRate};
pub use config::{Config, ConfigBuilder, DurationValue, parse_bool, parse_duration};
#[cfg(feature = "embedded-hal")]
#[cfg_attr(docsrs, doc(cfg(feature = "embedded-hal")))]
pub use delay::DelayWait;
pub use error::{AcquireError, ConfigError, ErrorCode, InvalidPermits, RateLimitExceeded, Reason};
pub use event::{Event, Listener, Tee};
#[cfg(feature = "embedded-io")]
#[cfg_attr(docsrs, doc(cfg(feature = "embedded-io")))]
pub use io::{RateLimitedWrite, WriteError};
pub use limiter::{RateLimiter, Reservation, Snapshot};
#[cfg(feature = "defmt")]
pub use log::DefmtListener;
pub use registry::Registry;
pub use settings::{Overrides, Setting, Settings};
pub use wait::{AdvanceClock, Interrupted, Wait};
