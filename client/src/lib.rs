#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

// Intra-doc links to the other ritmo crates' items, by the paths the `ritmo` facade gives
// them (`crate::ritmo::Config`, `crate::ritmo::server::StdClock`): written by
// scripts/facade-paths, which keeps the docs free of sub-crate paths. Docs builds only.
#[cfg(doc)]
#[allow(unused_imports)]
mod ritmo {
    pub use ritmo_core::*;
    pub mod server {
        pub use ritmo_std::*;
    }
    pub mod tower {
        pub use ritmo_tower::*;
    }
}

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
pub use clock::ClientClock;
pub use error::{Cause, Error, Limited};
pub use layer::{ClientLayer, CloneBody, NoReplay, RateLimited, Replay, ResponseFuture};
pub use outbound::{
    Builder, DEFAULT_MAX_HOLD, DEFAULT_MAX_KEYS, HostKey, KeyError, MaxWait, OneQuota, Outbound,
    PerKey, Stats, Target,
};
pub use ritmo_core::RateLimitExceeded;
