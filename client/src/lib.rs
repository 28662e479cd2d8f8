#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod adopt;
mod clock;
mod error;
pub mod grpc;
pub mod headers;
mod hold;
mod layer;
mod outbound;
#[cfg(feature = "reqwest")]
#[cfg_attr(docsrs, doc(cfg(feature = "reqwest")))]
pub mod reqwest;

pub use adopt::MAX_POLICIES;
pub use error::{Cause, Error, Limited};
pub use layer::{ClientLayer, CloneBody, NoReplay, RateLimited, Replay, ResponseFuture};
pub use outbound::{Builder, DEFAULT_MAX_HOLD, DEFAULT_MAX_KEYS, HostKey, Outbound, Stats, Target};
pub use ritmo_core::RateLimitExceeded;
