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

/// reqwest-middleware, as this crate uses it (feature `reqwest`): build the client with
/// `ritmo::client::reqwest_middleware::ClientBuilder` (and reach reqwest itself as
/// `reqwest_middleware::reqwest`), and its versions match this crate's: reqwest **0.13** and
/// reqwest-middleware **0.5**. With other versions (reqwest 0.12 and reqwest-middleware 0.4),
/// `RateLimitMiddleware` is not their `Middleware` and `.with(..)` fails with E0277.
#[cfg(feature = "reqwest")]
#[cfg_attr(docsrs, doc(cfg(feature = "reqwest")))]
pub use reqwest_middleware;

pub use adopt::MAX_POLICIES;
pub use error::{Cause, Error, Limited};
pub use layer::{ClientLayer, CloneBody, NoReplay, RateLimited, Replay, ResponseFuture};
pub use outbound::{
    Builder, DEFAULT_MAX_HOLD, DEFAULT_MAX_KEYS, HostKey, KeyError, MaxWait, Outbound, Stats,
    Target,
};
pub use ritmo_core::RateLimitExceeded;
