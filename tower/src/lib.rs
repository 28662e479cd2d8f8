#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod charge;
mod forwarded;
pub mod headers;
pub mod key;
mod layer;
#[cfg(feature = "metrics")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
pub mod metrics;
mod owned;
mod reject;
mod store;

pub use layer::{
    CostError, Errors, Fields, Http, LayerEvent, MissingKey, Mode, RateLimit, RateLimitLayer,
    RefundCause, ResponseFuture,
};
pub use owned::OwnedPermit;
pub use reject::{
    BoxError, DefaultResponse, MissingKeyError, OnReject, Rejection, RespondWith, respond_with,
};
pub use ritmo_core::RateLimitExceeded;
pub use store::{
    Decision, Denial, Grant, KeyedPermit, LimiterPermit, Permit, Policy, Status, Store,
};
