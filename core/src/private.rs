//! What the code `#[ritmo::limited]` and `#[ritmo::rate_limited]` generate calls: not public API,
//! and free to change between any two versions. Users never name these items.

use core::time::Duration;

pub use crate::clock::Clock;
pub use crate::config::{Config, DurationValue};
pub use crate::error::{ConfigError, RateLimitExceeded, RegistryError};
pub use crate::limiter::RateLimiter;
pub use crate::registry::{LimiterSlot, Registry};
pub use crate::settings::{Setting, Settings};
pub use crate::wait::{AsyncClock, BlockingClock};

/// The clock a generated wrapper's type names when its user names none: the facade makes it
/// ritmo-std's `StdClock` (the default registry's clock) on std.
pub type DefaultClock = crate::ManualClock;

/// An error type a rejected call can return: any type with `From<RateLimitExceeded>`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot carry a rate-limit rejection: a #[rate_limited] method returns `Err(RateLimitExceeded.into())` when no permit comes in time",
    label = "the error type of this method must implement `From<ritmo::RateLimitExceeded>`",
    note = "add `impl From<ritmo::RateLimitExceeded> for {Self}` (e.g. an error variant that keeps it)"
)]
pub trait CarriesRateLimitExceeded {
    /// The rejection as this error.
    fn from_rejection(rejected: RateLimitExceeded) -> Self;
}

impl<E: From<RateLimitExceeded>> CarriesRateLimitExceeded for E {
    #[inline(always)]
    fn from_rejection(rejected: RateLimitExceeded) -> Self {
        E::from(rejected)
    }
}

/// The rejection as the method's own error type (inferred from where it is returned).
#[inline(always)]
pub fn rejection<E: CarriesRateLimitExceeded>(rejected: RateLimitExceeded) -> E {
    E::from_rejection(rejected)
}

/// A literal config the macro has already checked; `const`, so it costs nothing at run time.
pub const fn literal(permits: u32, period: Duration, max_wait: Duration, enabled: bool) -> Config {
    match Config::new(permits, period) {
        Ok(config) => config.with_max_wait(max_wait).with_enabled(enabled),
        Err(error) => error.fail_build(),
    }
}

/// A config from attribute values that are expressions, checked when the wrapper is built.
pub fn built(
    permits: u32,
    period: impl DurationValue,
    max_wait: impl DurationValue,
    enabled: bool,
) -> Result<Config, ConfigError> {
    Config::builder()
        .permits(permits)
        .period(period)
        .max_wait(max_wait)
        .enabled(enabled)
        .build()
}

/// The limiter `id` in `registry`, with `config`.
pub fn register<'r, C: Clock + Clone, const N: usize>(
    registry: &'r Registry<C, N>,
    id: &'static str,
    config: Result<Config, ConfigError>,
) -> Result<&'r RateLimiter<C>, RegistryError> {
    let config = config.map_err(|e| RegistryError::config_for(id, e))?;
    registry.get_or_create(id, config)
}

/// The limiter `id` in `registry`, with `settings` layered over `config` (`shared` names the
/// `configs.<name>` section of a method with a `name`).
pub fn register_with<'r, C: Clock + Clone, const N: usize, I>(
    registry: &'r Registry<C, N>,
    settings: &Settings<I>,
    id: &'static str,
    shared: Option<&str>,
    config: Result<Config, ConfigError>,
) -> Result<&'r RateLimiter<C>, RegistryError>
where
    I: IntoIterator + Clone,
    I::Item: Setting,
{
    let config = config.map_err(|e| RegistryError::config_for(id, e))?;
    let config = settings
        .resolve_over(id, shared, config)
        .map_err(|e| RegistryError::settings_for(id, e))?;
    registry.get_or_create(id, config)
}

/// A limited free function whose limiter cannot be registered (its name is shared with a
/// different config, or the registry is full) cannot run: a programming error, reported with its
/// code.
#[cold]
#[inline(never)]
#[track_caller]
pub fn unregistered(error: RegistryError) -> ! {
    panic!("a #[rate_limited] function cannot get its limiter: {error}")
}

/// Takes one permit from `limiter`, parking with its clock's [`BlockingClock`] within
/// `max_wait`: what a `#[rate_limited]` function calls first.
#[inline(always)]
pub fn acquire_blocking<C: BlockingClock>(
    limiter: &RateLimiter<C>,
) -> Result<(), RateLimitExceeded> {
    limiter.acquire_generated_blocking()
}

/// Takes one permit from `limiter`, sleeping on its clock's [`AsyncClock`] within `max_wait`:
/// what an async `#[rate_limited]` function awaits first.
#[inline(always)]
pub async fn acquire_async<C: AsyncClock>(
    limiter: &RateLimiter<C>,
) -> Result<(), RateLimitExceeded> {
    limiter.acquire_generated_async().await
}
