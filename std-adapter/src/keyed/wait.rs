//! Waiting for a key's permits on a server, for every keyed limiter whatever its store:
//! parking the thread ([`KeyedBlockingExt`]: `acquire`, `call`) and, with the feature `tokio`,
//! tokio's timer ([`KeyedAsyncExt`]: `acquire_async`, `call_async`).

use std::hash::Hash;

use ritmo_core::keyed::{Keyed, KeyedStore};
use ritmo_core::{AcquireError, RateLimitExceeded};

use crate::wait::ParkWait;

mod sealed {
    pub trait Sealed {}
    impl<K: 'static, S: ritmo_core::keyed::KeyedStore<K>> Sealed for ritmo_core::keyed::Keyed<K, S> {}
}

/// Blocking waits and call wrappers for a keyed limiter ([`Keyed`]: the std map or the fixed
/// table), as [`BlockingExt`](crate::BlockingExt) for the single limiter; in
/// `ritmo::server::prelude`.
pub trait KeyedBlockingExt<K>: sealed::Sealed {
    /// Takes one permit for `key`, parking the thread until its slot if it arrives within
    /// `max_wait`. The thread's [`Interrupt`](crate::Interrupt) ends the wait: the permit goes
    /// back and the call fails with [`Reason::Interrupted`](crate::ritmo::Reason::Interrupted).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ritmo::Config;
    /// use ritmo::server::prelude::*;
    /// use ritmo::server::KeyedRateLimiter;
    /// let c = Config::new(1, Duration::from_millis(10))?.with_max_wait(Duration::from_millis(50));
    /// let l = KeyedRateLimiter::new("x", c, 10);
    /// l.acquire(&"ada")?;
    /// l.acquire(&"ada")?; // parks about 10 ms
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn acquire(&self, key: &K) -> Result<(), RateLimitExceeded>;

    /// Takes `k` permits for `key` as one unit, parking until their slot as
    /// [`acquire`](KeyedBlockingExt::acquire).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ritmo::Config;
    /// use ritmo::server::prelude::*;
    /// use ritmo::server::KeyedRateLimiter;
    /// let l = KeyedRateLimiter::new("x", Config::new(4, Duration::from_secs(60))?, 10);
    /// l.acquire_n(&"ada", 4)?;
    /// assert!(l.acquire_n(&"ada", 1).is_err()); // max_wait 0: rejected at once
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn acquire_n(&self, key: &K, k: u32) -> Result<(), AcquireError>;

    /// Runs `work` once a permit for `key` is had (waiting as [`acquire`](KeyedBlockingExt::acquire)); if the
    /// call is rejected, `work` never runs.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ritmo::Config;
    /// use ritmo::server::prelude::*;
    /// use ritmo::server::KeyedRateLimiter;
    /// let l = KeyedRateLimiter::new("x", Config::new(1, Duration::from_secs(60))?, 10);
    /// assert_eq!(l.call(&"ada", || 42), Ok(42));
    /// assert!(l.call(&"ada", || 43).is_err());
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    fn call<T>(&self, key: &K, work: impl FnOnce() -> T) -> Result<T, RateLimitExceeded>;

    /// Runs the fallible `work` once a permit for `key` is had; a rejection becomes the caller's
    /// error type through `From<RateLimitExceeded>`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ritmo::{Config, RateLimitExceeded};
    /// use ritmo::server::prelude::*;
    /// use ritmo::server::KeyedRateLimiter;
    /// #[derive(Debug)]
    /// struct Busy;
    /// impl From<RateLimitExceeded> for Busy { fn from(_: RateLimitExceeded) -> Self { Busy } }
    /// let l = KeyedRateLimiter::new("x", Config::new(1, Duration::from_secs(60))?, 10);
    /// assert_eq!(l.try_call(&"ada", || Ok::<_, Busy>(1)).unwrap(), 1);
    /// assert!(l.try_call(&"ada", || Ok::<_, Busy>(2)).is_err());
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    fn try_call<T, E: From<RateLimitExceeded>>(
        &self,
        key: &K,
        work: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E>;
}

impl<K: Hash + Eq + Clone, S: KeyedStore<K>> KeyedBlockingExt<K> for Keyed<K, S> {
    fn acquire(&self, key: &K) -> Result<(), RateLimitExceeded> {
        self.acquire_with(key, &mut ParkWait::new())
    }

    fn acquire_n(&self, key: &K, k: u32) -> Result<(), AcquireError> {
        self.acquire_n_with(key, k, &mut ParkWait::new())
    }

    fn call<T>(&self, key: &K, work: impl FnOnce() -> T) -> Result<T, RateLimitExceeded> {
        self.acquire(key)?;
        Ok(work())
    }

    fn try_call<T, E: From<RateLimitExceeded>>(
        &self,
        key: &K,
        work: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E> {
        self.acquire(key)?;
        work()
    }
}

/// Async waits on tokio's timer for a keyed limiter, without holding a thread, as
/// [`AsyncExt`](crate::tokio::AsyncExt) for the single limiter; in `ritmo::server::prelude`.
#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
pub trait KeyedAsyncExt<K>: sealed::Sealed {
    /// Takes one permit for `key`, sleeping on tokio's timer until its slot if it arrives within
    /// `max_wait`. Dropping the future before then gives the permit back (when no later call for
    /// the key was made).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ritmo::Config;
    /// use ritmo::server::prelude::*;
    /// use ritmo::server::{KeyedRateLimiter, TokioClock};
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), ritmo::ConfigError> {
    /// let c = Config::new(1, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(5));
    /// let l = KeyedRateLimiter::with_clock("api", c, 100, TokioClock::new());
    /// l.acquire_async(&"ada").await.unwrap();
    /// l.acquire_async(&"ada").await.unwrap(); // paused time jumps to the slot
    /// # Ok(())
    /// # }
    /// ```
    fn acquire_async(&self, key: &K) -> impl Future<Output = Result<(), RateLimitExceeded>>;

    /// Takes `k` permits for `key` as one unit, sleeping until their slot as
    /// [`acquire_async`](KeyedAsyncExt::acquire_async).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ritmo::Config;
    /// use ritmo::server::prelude::*;
    /// use ritmo::server::{KeyedRateLimiter, TokioClock};
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), ritmo::ConfigError> {
    /// let c = Config::new(4, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(1));
    /// let l = KeyedRateLimiter::with_clock("api", c, 100, TokioClock::new());
    /// l.acquire_n_async(&"ada", 4).await.unwrap();
    /// l.acquire_n_async(&"ada", 2).await.unwrap();
    /// # Ok(())
    /// # }
    /// ```
    fn acquire_n_async(&self, key: &K, k: u32) -> impl Future<Output = Result<(), AcquireError>>;

    /// Runs the future `work` once a permit for `key` is had; if the call is rejected, `work`
    /// never runs.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ritmo::Config;
    /// use ritmo::server::prelude::*;
    /// use ritmo::server::KeyedRateLimiter;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), ritmo::ConfigError> {
    /// let l = KeyedRateLimiter::new("api", Config::new(1, Duration::from_secs(60))?, 100);
    /// assert_eq!(l.call_async(&"ada", async { 7 }).await, Ok(7));
    /// assert!(l.call_async(&"ada", async { 8 }).await.is_err());
    /// # Ok(())
    /// # }
    /// ```
    fn call_async<F: Future>(
        &self,
        key: &K,
        work: F,
    ) -> impl Future<Output = Result<F::Output, RateLimitExceeded>>;

    /// Runs the fallible future `work` once a permit for `key` is had; a rejection becomes the
    /// caller's error type through `From<RateLimitExceeded>`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ritmo::{Config, RateLimitExceeded};
    /// use ritmo::server::prelude::*;
    /// use ritmo::server::KeyedRateLimiter;
    /// #[derive(Debug)]
    /// struct Busy;
    /// impl From<RateLimitExceeded> for Busy { fn from(_: RateLimitExceeded) -> Self { Busy } }
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), ritmo::ConfigError> {
    /// let l = KeyedRateLimiter::new("api", Config::new(1, Duration::from_secs(60))?, 100);
    /// assert_eq!(l.try_call_async(&"ada", async { Ok::<_, Busy>(1) }).await.unwrap(), 1);
    /// assert!(l.try_call_async(&"ada", async { Ok::<_, Busy>(2) }).await.is_err());
    /// # Ok(())
    /// # }
    /// ```
    fn try_call_async<T, E, F>(&self, key: &K, work: F) -> impl Future<Output = Result<T, E>>
    where
        E: From<RateLimitExceeded>,
        F: Future<Output = Result<T, E>>;
}

#[cfg(feature = "tokio")]
impl<K: Hash + Eq + Clone, S: KeyedStore<K>> KeyedAsyncExt<K> for Keyed<K, S> {
    async fn acquire_async(&self, key: &K) -> Result<(), RateLimitExceeded> {
        crate::tokio::wait_for_slot(self.reserve(key)?).await;
        Ok(())
    }

    async fn acquire_n_async(&self, key: &K, k: u32) -> Result<(), AcquireError> {
        crate::tokio::wait_for_slot(self.reserve_n(key, k)?).await;
        Ok(())
    }

    async fn call_async<F: Future>(
        &self,
        key: &K,
        work: F,
    ) -> Result<F::Output, RateLimitExceeded> {
        self.acquire_async(key).await?;
        Ok(work.await)
    }

    async fn try_call_async<T, E, F>(&self, key: &K, work: F) -> Result<T, E>
    where
        E: From<RateLimitExceeded>,
        F: Future<Output = Result<T, E>>,
    {
        self.acquire_async(key).await?;
        work.await
    }
}
