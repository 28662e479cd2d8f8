#![doc = include_str!("../README.md")]
#![no_std]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;
#[macro_use]
mod sync;

mod bands;
mod clock;
mod config;
#[cfg(feature = "embedded-hal")]
mod delay;
mod error;
mod event;
mod gcra;
#[cfg(feature = "embedded-io")]
mod io;
pub mod keyed;
mod limiter;
#[cfg(feature = "defmt")]
mod log;
pub mod persist;
pub mod prelude;
mod rate;
pub mod registry;
mod reservation;
pub mod settings;
mod state;
mod wait;
mod window;

#[cfg(all(test, loom))]
mod loom_keyed_tests;
#[cfg(all(test, loom))]
mod loom_tests;

pub use bands::{Bands, BandsCharge, BandsReservation};
pub use clock::{Clock, FixedRateClock, ManualClock, ManualTime, TickRate};
pub use config::{Config, ConfigBuilder, DurationValue, parse_bool, parse_duration};
#[cfg(feature = "embedded-hal")]
#[cfg_attr(docsrs, doc(cfg(feature = "embedded-hal")))]
pub use delay::DelayWait;
pub use error::{
    AcquireError, ConfigError, ErrorCode, HumanDuration, InvalidPermits, RateLimitExceeded, Reason,
    RegistryError, SettingsError, TierError,
};
pub use event::{Event, Listener, Tee};
#[cfg(feature = "embedded-io")]
#[cfg_attr(docsrs, doc(cfg(feature = "embedded-io")))]
pub use io::{RateLimitedWrite, WriteError};
pub use keyed::{KeyListener, KeySnapshot, KeyedLimiter, KeyedReservation, KeyedSnapshot};
pub use limiter::{LimiterCharge, RateLimiter, Reservation, Snapshot};
#[cfg(feature = "defmt")]
pub use log::DefmtListener;
pub use registry::Registry;
pub use reservation::{Held, Holder};
pub use settings::{Overrides, Setting, Settings};
pub use wait::{AdvanceClock, AsyncClock, BlockingClock, ClockWait, Interrupted, Wait};
