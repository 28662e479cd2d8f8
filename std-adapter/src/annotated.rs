//! How limited functions wait on the std clocks ([`BlockingClock`], [`AsyncClock`]), and the
//! process-wide [`default_registry`] that `#[ritmo::rate_limited]` uses when it names none.

use std::sync::LazyLock;

use ritmo_core::{BlockingClock, Interrupted, Registry, Wait};

use crate::clock::{InstantClock, StdClock};
use crate::wait::ParkWait;

/// How many limiters the [`default_registry`] holds.
pub const DEFAULT_REGISTRY_CAPACITY: usize = 128;

/// The process-wide registry on a [`StdClock`]: where a `#[ritmo::rate_limited]` function or
/// method that names no `registry` keeps its limiter.
///
/// It holds [`DEFAULT_REGISTRY_CAPACITY`] (128) limiters: one per limited function or shared
/// `name`, which is far more than a program usually annotates, while its fixed storage stays
/// small (a limiter takes a few hundred bytes, most of it the cache line its state has to
/// itself). A program that needs more names its own registry (`registry = path::TO::STATIC`).
/// Made on first use, which calibrates the clock once.
///
/// ```
/// use core::time::Duration;
/// let registry = ritmo::server::default_registry();
/// assert_eq!(registry.capacity(), ritmo::server::DEFAULT_REGISTRY_CAPACITY);
/// let config = ritmo::Config::new(3, Duration::from_secs(1))?;
/// assert_eq!(registry.get_or_create("docs::example", config)?.available_permits(), 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn default_registry() -> &'static Registry<StdClock, DEFAULT_REGISTRY_CAPACITY> {
    static DEFAULT: LazyLock<Registry<StdClock, DEFAULT_REGISTRY_CAPACITY>> =
        LazyLock::new(|| Registry::new(StdClock::new()));
    &DEFAULT
}

/// Parks the calling thread until its slot ([`ParkWait`]); the thread's own
/// [`Interrupt`](crate::Interrupt) ends the wait early.
impl BlockingClock for StdClock {
    fn block_until(&self, deadline: u64) -> Result<(), Interrupted> {
        ParkWait::new().wait_until(self, deadline)
    }
}

/// Parks the calling thread until its slot ([`ParkWait`]); the thread's own
/// [`Interrupt`](crate::Interrupt) ends the wait early.
impl BlockingClock for InstantClock {
    fn block_until(&self, deadline: u64) -> Result<(), Interrupted> {
        ParkWait::new().wait_until(self, deadline)
    }
}
