//! The one reference model of ritmo's rules, shared by the tests of every limiter kind.
//!
//! Written from `SPEC.md`'s words (§3 the GCRA, §10 keyed limiting, §14 live limits and bands,
//! §17 what holds for every kind on every clock), not from the library's code: a model that
//! repeats the implementation's rule cannot find where that rule is wrong. It never calls a
//! limiter; a test runs the same operations on a limiter and on the model and compares every
//! answer (`Outcome`), every peek and, at the end, the window bounds.
//!
//! | piece | what it is |
//! | --- | --- |
//! | [`Units`] | a clock of `hz` ticks per second: readings, the model's unit (`1 / 2^s` tick, at most 1 ns), waits rounded up to the whole tick then to the nanosecond, `max_wait` compared exactly |
//! | [`Gcra`] | one limiter: `try_acquire_n`, `reserve_n(_within)`, cancel / drop by the tail rule, `available_permits`, `retry_after`, `reconfigure` |
//! | [`BandsModel`] | several bands, all or nothing, charged at the slowest band's slot; cancel restores every band |
//! | [`KeyedModel`] | one [`Gcra`] per key, room for `capacity` live keys, `KeyCapacity`'s `retry_after` |
//! | [`window_bound`], [`bound_after_change`] | the bounds on any record of permits used |
//! | [`KeyedSubject`], [`run_keyed`] | a keyed limiter under test behind one interface, run against [`KeyedModel`] |
//! | [`TieredModel`], [`run_tiered`] | per-key tiers (§18): each key on its tier's config, a change of tier a reconfigure of that key |
//! | [`rounds_between_changes`] | calls on real threads racing changes of config, meeting states of every config |
//! | [`ops`] | proptest strategies: configs and schedules of [`Op`]s (single, bands, keyed, with reconfigures) |
//!
//! # The rules, as the model applies them
//!
//! All arithmetic is exact, in `u128`. A clock reading is a whole tick; on a clock slower than
//! 1 GHz the model counts in `1 / 2^s` of a tick (the documented fixed-point fraction), so that
//! `T = period / n` is rounded up by less than a nanosecond; at 1 GHz and above a unit is a tick.
//!
//! - `T = ceil(period / n)` units, `tau = (n - 1) * T`; a fresh state is a full burst.
//! - `k` permits at reading `now` are admitted at once iff `max(tat, now) + (k - 1) T <= now + tau`;
//!   then `tat := max(tat, now) + k T`.
//! - Otherwise they are there at the slot `tat + (k - 1) T - tau`, and a caller sees them at the
//!   first whole tick at or after it. That tick's distance from `now` is the wait: reported
//!   rounded up to the nanosecond (`wait_time`, `retry_after`), and compared with `max_wait`
//!   exactly: **a wait beyond `max_wait` on the clock as it ticks is refused** (SPEC §17).
//! - A reservation's `slot()` is that tick. Cancelling, dropping or interrupting the newest
//!   reservation puts the state back exactly as it was before it; any other returns nothing.
//! - `reconfigure` ([`Gcra::reconfigure`]): the same config changes nothing; **idle is new**: a
//!   limiter, band or key whose burst is full (`tat <= now`), or that was disabled, starts afresh
//!   under the new config (its full burst `n'`); otherwise available permits become
//!   `min(available, n')` and permits owed keep their slots. A change of tier is a reconfigure of
//!   the key.
//! - `Bands` ([`BandsModel`]): every band charged as a call at the slowest band's slot; a cancel
//!   restores every band.
//! - Keyed ([`KeyedModel`]): `KeyCapacity` when `capacity` other keys are live; its `retry_after`
//!   never early and at most one tick late.
//!
//! Where SPEC leaves a choice the model says which it made: the progress towards the next permit
//! across a reconfigure carries over (at most `T'`), and whether a reconfigure that left the
//! state untouched ends the tail of an older reservation is left open ([`Refund::Either`]).
//!
//! # Example
//!
//! ```
//! use core::time::Duration;
//! use ritmo_core::{Config, ManualClock, RateLimiter};
//! use ritmo_test_support::{Gcra, Outcome, Units};
//!
//! let config = Config::new(2, Duration::from_secs(1))?;
//! let clock = ManualClock::new();
//! let limiter = RateLimiter::new("doc", config, &clock);
//! let mut model = Gcra::new(Units::NANOS, config);
//! for _ in 0..3 {
//!     let now = ritmo_core::Clock::now(&clock);
//!     assert_eq!(Outcome::of_try(limiter.try_acquire()), model.try_acquire(now, 1));
//! }
//! # Ok::<(), ritmo_core::ConfigError>(())
//! ```

mod bands;
mod bound;
mod gcra;
mod keyed;
pub mod ops;
mod outcome;
mod race;
pub mod record;
mod subject;
mod tiered;
mod units;

pub use bands::{BandsModel, BandsTicket};
pub use bound::{Use, bound_after_change, window_bound};
pub use gcra::{Gcra, Rate, Refund, Ticket};
pub use keyed::{KeyedModel, KeyedTicket};
pub use ops::{KeyedOp, Op};
pub use outcome::Outcome;
pub use race::rounds_between_changes;
pub use subject::{
    KeyedHeld, KeyedSubject, Reconfigure, TestKey, run_keyed, run_keyed_with_changes,
};
pub use tiered::{TieredModel, TieredStep, run_tiered, tiered_schedule};
pub use units::Units;
