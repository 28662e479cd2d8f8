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
}

pub mod charge;
mod forwarded;
pub mod grpc;
pub mod headers;
pub mod key;
mod layer;
#[cfg(feature = "metrics")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
pub mod metrics;
mod reject;
mod store;

pub use layer::{
    CostError, Detect, Errors, Fields, Grpc, Http, LayerEvent, MissingKey, Mode, Protocol,
    RateLimit, RateLimitLayer, RefundCause, ResponseFuture,
};
pub use reject::{
    BoxError, DefaultResponse, MissingKeyError, OnReject, Rejection, RespondWith, respond_with,
};
pub use ritmo_core::RateLimitExceeded;
pub use store::{Decision, Denial, Grant, Permit, Policy, Status, Store};
