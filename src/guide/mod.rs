// A guide that needs a feature is linked to here with the feature, and to docs.rs (which builds
// every feature) without it: of a link reference defined twice, the first definition wins.
#![cfg_attr(feature = "macros", doc = "[annotations]: annotations")]
#![cfg_attr(feature = "std", doc = "[server]: server")]
#![cfg_attr(feature = "tower", doc = "[http]: http")]
#![cfg_attr(feature = "client", doc = "[client]: client")]
#![cfg_attr(feature = "redis", doc = "[redis]: redis")]
//! Guides: how to use ritmo, one subject a page, every example a doctest.
//!
//! These modules hold documentation only (no items). A guide about an optional part of ritmo
//! exists with the feature that part needs (without it, its link here goes to docs.rs, which
//! builds every feature and shows them all).
//!
//! | guide | what it covers |
//! | --- | --- |
//! | [`basics`] | a limiter on a fake clock, `reserve`, and how every limiter behaves (GCRA) |
//! | [`annotations`][annotations] (feature `macros`) | `#[ritmo::limited]` on a trait, `#[ritmo::rate_limited]` on a function |
//! | [`server`][server] (feature `std`) | the server clocks, blocking and tokio waits, interruption, call wrappers, one limiter for many threads |
//! | [`keyed`] | one quota per client (IP, user, API key): exact eviction, bounded memory, IP keys, tiers (each key on its plan's quota) |
//! | [`http`][http] (feature `tower`) | the HTTP layer for axum, hyper and tonic: `429`, `Retry-After`, the `RateLimit` fields |
//! | [`client`][client] (feature `client`) | the caller's side: keep a dependency's quota, listen when its server says wait |
//! | [`redis`][redis] (feature `redis`) | one quota shared by many processes, in Redis or Valkey |
//! | [`registry`] | named limiters in a `static` registry |
//! | [`bands`] | several limits on one stream of calls ("10 per second and 1000 per hour") |
//! | [`reconfigure`] | changing limits live, without a fresh burst |
//! | [`settings`] | limiters from TOML files, environment variables or key/value text |
//! | [`metrics`] | the `metrics` series and `tracing` events |
//! | [`firmware`] | microcontrollers: `static` limiters, Embassy, bare metal, QEMU tests, footprint |
//! | [`testing`] | fake clocks in your tests, and how ritmo itself is tested |
//! | [`errors`] | the error types and their stable codes |
//! | [`performance`] | instructions per call beside governor, and how to measure |
//! | [`reliability`] | each guarantee with the test that proves it (`RELIABILITY.md`) |
//! | [`design`] | the behaviour contract: every rule and its arithmetic (`docs/DESIGN.md`) |
//!
//! [annotations]: https://docs.rs/ritmo/latest/ritmo/guide/annotations/index.html
//! [server]: https://docs.rs/ritmo/latest/ritmo/guide/server/index.html
//! [http]: https://docs.rs/ritmo/latest/ritmo/guide/http/index.html
//! [client]: https://docs.rs/ritmo/latest/ritmo/guide/client/index.html
//! [redis]: https://docs.rs/ritmo/latest/ritmo/guide/redis/index.html

#[doc = include_str!("basics.md")]
pub mod basics {}

#[cfg(feature = "macros")]
#[cfg_attr(docsrs, doc(cfg(feature = "macros")))]
#[doc = include_str!("annotations.md")]
pub mod annotations {}

#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
#[doc = include_str!("server.md")]
pub mod server {}

#[cfg_attr(feature = "tower", doc = "[http-guide]: crate::guide::http")]
#[doc = include_str!("keyed.md")]
pub mod keyed {}

#[cfg(feature = "tower")]
#[cfg_attr(docsrs, doc(cfg(feature = "tower")))]
#[doc = include_str!("http.md")]
pub mod http {}

#[cfg(feature = "client")]
#[cfg_attr(docsrs, doc(cfg(feature = "client")))]
#[doc = include_str!("client.md")]
pub mod client {}

#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
#[doc = include_str!("redis.md")]
pub mod redis {}

#[doc = include_str!("registry.md")]
pub mod registry {}

#[doc = include_str!("bands.md")]
pub mod bands {}

#[doc = include_str!("reconfigure.md")]
pub mod reconfigure {}

#[doc = include_str!("settings.md")]
pub mod settings {}

#[doc = include_str!("metrics.md")]
pub mod metrics {}

#[doc = include_str!("firmware.md")]
pub mod firmware {}

#[doc = include_str!("testing.md")]
pub mod testing {}

#[doc = include_str!("errors.md")]
pub mod errors {}

#[doc = include_str!("performance.md")]
pub mod performance {}

/// What ritmo promises, and the test that proves each promise (`RELIABILITY.md`).
///
#[doc = include_str!("../../RELIABILITY.md")]
pub mod reliability {}

/// How ritmo behaves: the behaviour contract (`docs/DESIGN.md`).
///
#[doc = include_str!("../../docs/DESIGN.md")]
pub mod design {}
