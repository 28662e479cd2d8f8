//! The verbs of the async limiters ([`crate::RedisKeyedRateLimiter`]) and the blocking ones
//! ([`crate::blocking`]), written once: they differ only by `async` and `.await` and by what
//! carries a script call. What they decide with (script arguments, replies, keys, errors, the
//! failure policy) is [`Inner`]'s.
//!
//! A macro, because the two flavours are distinct public types: one generic type for both would
//! need a public trait over "an async connection or the blocking pool" and a default type
//! parameter that exists only with feature `async`. Each flavour's module gives the macro:
//! - its limiters' fields `inner: Arc<Inner>` and `conn` (a connection, or the blocking pool),
//!   and a reservation's `permit`, `k`, `ready_at` and `refund`;
//! - `run(conn, inner, script, key, args)`: one script call, within the limiter's timeout;
//! - `ask(&self, call)` on the keyed limiter: the acquire script call for `call`;
//! - `Instant` and `sleep_until(Instant)`, its clock and how it sleeps.

use std::sync::Arc;

use crate::Inner;

/// What gives a reservation's permits back: the refund script's key and arguments, and the
/// connection to run it on (`C`: an async connection, or the blocking pool).
pub(crate) struct Refund<C> {
    pub(crate) inner: Arc<Inner>,
    pub(crate) conn: C,
    pub(crate) key: Vec<u8>,
    pub(crate) written: u64,
    pub(crate) increment: u64,
}

/// The verbs of one flavour, from: `[async] [.await]` or `[] []`; the generic parameters its types
/// take (`C: AsyncConnection`, or none), bounded and bare; its types (keyed limiter, keyed limiter
/// of `()`, single limiter, reservation, connection); its `Builder` methods; and the words its
/// docs use for waiting (`$how`: how it waits; `$dropped`: what dropping a wait does, if it can be
/// dropped).
macro_rules! verbs {
    (
        flavour: [$($async:tt)?] [$($await:tt)*],
        generics: [$($g:tt)*] [$($p:ident)?],
        types: $Keyed:ty, $Unit:ty, $Single:ty, $Res:ty, $Conn:ty,
        connect: $connect:ident, $connect_keyed:ident,
        waiting: $how:literal, $dropped:literal $(,)?
    ) => {
        impl<K: StoreKey + ?Sized> RedisKeyedRateLimiter<K> {
            #[doc = concat!("Settings for a limiter named `id` on `config`; finish with [`",
                stringify!($connect_keyed), "`](Builder::", stringify!($connect_keyed), ").")]
            pub fn builder(id: &'static str, config: Config) -> Builder {
                Builder::new(id, config)
            }
        }

        impl<K: StoreKey + ?Sized, $($g)*> $Keyed {
            /// The limiter's id.
            pub fn id(&self) -> &'static str {
                self.inner.id
            }

            /// The config every key is limited by.
            pub fn config(&self) -> &Config {
                &self.inner.config
            }

            /// Takes one permit for `key` if there is one now; otherwise a refusal saying how long
            /// until there would be (or [`Reason::Unavailable`](crate::ritmo::Reason::Unavailable),
            /// per the failure policy).
            pub $($async)? fn try_acquire(&self, key: &K) -> Result<Permit, RateLimitExceeded> {
                self.decide(&self.inner.call_one(key, 1, false))$($await)*.permit()
            }

            /// Takes `k` permits for `key` at once, as one unit (`1 <= k <= permits`, else
            /// [`AcquireError::InvalidPermits`]).
            pub $($async)? fn try_acquire_n(
                &self,
                key: &K,
                k: u32,
            ) -> Result<Permit, AcquireError> {
                Ok(self.decide(&self.inner.call(key, k, false)?)$($await)*.permit()?)
            }

            /// Reserves one permit for `key` if it arrives within the config's `max_wait`; the
            /// reservation says how long to wait. Dropping it before [`wait`](Reservation::wait)
            /// or [`commit`](Reservation::commit) gives the permit back if nothing was reserved
            /// after it.
            pub $($async)? fn reserve(&self, key: &K) -> Result<$Res, RateLimitExceeded> {
                let reserved = self.reserve_call(self.inner.call_one(key, 1, true))$($await)*;
                reserved.map_err(|(e, _)| e)
            }

            /// Reserves `k` permits for `key` within `max_wait` (see [`reserve`](Self::reserve)).
            pub $($async)? fn reserve_n(&self, key: &K, k: u32) -> Result<$Res, AcquireError> {
                let reserved = self.reserve_call(self.inner.call(key, k, true)?)$($await)*;
                Ok(reserved.map_err(|(e, _)| e)?)
            }

            /// Reserves `k` permits for `key` if they arrive within `max_wait` (instead of the
            /// config's `max_wait`, for this call only).
            pub $($async)? fn reserve_n_within(
                &self,
                key: &K,
                k: u32,
                max_wait: Duration,
            ) -> Result<$Res, AcquireError> {
                let reserved = self.reserve_with_status(key, k, Some(max_wait))$($await)*;
                reserved.map_err(|r| r.error)
            }

            /// Reserves `k` permits for `key` within `max_wait` (`None`: the config's), reporting
            /// the key's status from the same script call either way (granted:
            /// [`Permit::status`]; refused: [`Refusal::status`]): for layers that report quotas,
            /// such as the HTTP `RateLimit` fields, without a second round trip.
            pub $($async)? fn reserve_with_status(
                &self,
                key: &K,
                k: u32,
                max_wait: Option<Duration>,
            ) -> Result<$Res, Refusal> {
                let mut call = self.inner.call(key, k, true).map_err(|e| Refusal {
                    error: e.into(),
                    status: None,
                })?;
                if let Some(max_wait) = max_wait {
                    call.max_wait = self.inner.wait_bound(max_wait);
                }
                let reserved = self.reserve_call(call)$($await)*;
                reserved.map_err(|(e, status)| Refusal::new(e.into(), status))
            }

            #[doc = concat!("Takes one permit for `key`, waiting for it (", $how,
                ") if it arrives within `max_wait`.", $dropped)]
            pub $($async)? fn acquire(&self, key: &K) -> Result<Permit, RateLimitExceeded> {
                Ok(self.reserve(key)$($await)*?.wait()$($await)*)
            }

            /// Takes `k` permits for `key`, waiting within `max_wait` (see
            /// [`acquire`](Self::acquire)).
            pub $($async)? fn acquire_n(&self, key: &K, k: u32) -> Result<Permit, AcquireError> {
                Ok(self.reserve_n(key, k)$($await)*?.wait()$($await)*)
            }

            /// How many single permits `key` would get right now without waiting, in
            /// `0..=permits`. Takes nothing.
            pub $($async)? fn available_permits(&self, key: &K) -> Result<u32, StoreError> {
                let redis_key = self.inner.redis_key(key);
                let reply = self.peek(&redis_key)$($await)*;
                self.inner.available(&redis_key, reply)
            }

            /// How long until `key` would get one permit (zero: now). Takes nothing.
            pub $($async)? fn retry_after(&self, key: &K) -> Result<Duration, StoreError> {
                let redis_key = self.inner.redis_key(key);
                let reply = self.peek(&redis_key)$($await)*;
                self.inner.retry_after_n(&redis_key, 1, reply)
            }

            /// How long until `key` would get `k` permits at once (zero: now). Takes nothing.
            pub $($async)? fn retry_after_n(
                &self,
                key: &K,
                k: u32,
            ) -> Result<Duration, AcquireOrStoreError> {
                let call = self.inner.call(key, k, false)?;
                let reply = self.peek(&call.key)$($await)*;
                Ok(self.inner.retry_after_n(&call.key, k, reply)?)
            }

            /// The peek script's reply for `redis_key` (nothing to read on a disabled config).
            $($async)? fn peek(&self, redis_key: &[u8]) -> Result<Vec<i64>, Cause> {
                if !self.inner.config.enabled() {
                    return Ok(Vec::new());
                }
                let args = [self.inner.now_arg()];
                run(&self.conn, &self.inner, &PEEK, redis_key, &args)$($await)*
            }

            /// What the store (or, failing it, the policy) decides for `call`.
            $($async)? fn decide(&self, call: &Call) -> Decision {
                if let Some(d) = self.inner.disabled() {
                    return d;
                }
                let reply = self.ask(call)$($await)*;
                self.inner.decide(call, reply)
            }

            /// The reservation `call` decided, or the refusal and the key's status the store read.
            $($async)? fn reserve_call(
                &self,
                call: Call,
            ) -> Result<$Res, (RateLimitExceeded, Option<KeyStatus>)> {
                match self.decide(&call)$($await)* {
                    Decision::Granted { permit, written, increment } => Ok(Reservation {
                        k: call.k,
                        ready_at: Instant::now() + permit.wait(),
                        permit,
                        // `written` 0: not granted by the store, never given back.
                        refund: (written != 0).then(|| Refund {
                            inner: self.inner.clone(),
                            conn: self.conn.clone(),
                            key: call.key,
                            written,
                            increment,
                        }),
                    }),
                    Decision::Rejected(e, status) => Err((e, status)),
                }
            }
        }

        impl<K: ?Sized, $($p)?> std::fmt::Debug for $Keyed {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.inner.fmt(f)
            }
        }

        /// Its admitted and rejected calls, faults and reconnects (see [`crate::metrics`]).
        #[cfg(feature = "metrics")]
        impl<K: ?Sized, $($p)?> ritmo_std::metrics::Recordable for $Keyed {
            fn record(&self) {
                crate::observe::record(&self.inner);
            }
        }

        impl<$($g)*> From<$Unit> for $Single {
            fn from(keyed: $Unit) -> Self {
                RedisRateLimiter(keyed)
            }
        }

        impl RedisRateLimiter {
            #[doc = concat!("Settings for a limiter named `id` on `config`; finish with [`",
                stringify!($connect), "`](Builder::", stringify!($connect), ").")]
            pub fn builder(id: &'static str, config: Config) -> Builder {
                Builder::new(id, config)
            }
        }

        impl<$($g)*> $Single {
            /// The limiter's id.
            pub fn id(&self) -> &'static str {
                self.0.id()
            }

            /// Its config.
            pub fn config(&self) -> &Config {
                self.0.config()
            }

            /// Takes one permit if there is one now.
            pub $($async)? fn try_acquire(&self) -> Result<Permit, RateLimitExceeded> {
                self.0.try_acquire(&())$($await)*
            }

            /// Takes `k` permits at once, as one unit.
            pub $($async)? fn try_acquire_n(&self, k: u32) -> Result<Permit, AcquireError> {
                self.0.try_acquire_n(&(), k)$($await)*
            }

            /// Reserves one permit if it arrives within `max_wait`.
            pub $($async)? fn reserve(&self) -> Result<$Res, RateLimitExceeded> {
                self.0.reserve(&())$($await)*
            }

            /// Reserves `k` permits within `max_wait`.
            pub $($async)? fn reserve_n(&self, k: u32) -> Result<$Res, AcquireError> {
                self.0.reserve_n(&(), k)$($await)*
            }

            #[doc = concat!("Takes one permit, waiting for it (", $how, ") within `max_wait`.")]
            pub $($async)? fn acquire(&self) -> Result<Permit, RateLimitExceeded> {
                self.0.acquire(&())$($await)*
            }

            /// Takes `k` permits, waiting for them within `max_wait`.
            pub $($async)? fn acquire_n(&self, k: u32) -> Result<Permit, AcquireError> {
                self.0.acquire_n(&(), k)$($await)*
            }

            /// How many single permits would pass right now without waiting. Takes nothing.
            pub $($async)? fn available_permits(&self) -> Result<u32, StoreError> {
                self.0.available_permits(&())$($await)*
            }

            /// How long until one permit would pass (zero: now). Takes nothing.
            pub $($async)? fn retry_after(&self) -> Result<Duration, StoreError> {
                self.0.retry_after(&())$($await)*
            }
        }

        /// Its admitted and rejected calls, faults and reconnects (see [`crate::metrics`]).
        #[cfg(feature = "metrics")]
        impl<$($p)?> ritmo_std::metrics::Recordable for $Single {
            fn record(&self) {
                self.0.record();
            }
        }

        impl<$($g)*> $Res {
            /// The permit as granted: its source, the store's time, and the wait from the decision.
            pub fn permit(&self) -> Permit {
                self.permit
            }

            /// How many permits it holds.
            pub fn permits(&self) -> u32 {
                self.k
            }

            /// How long from the decision until the permits arrive.
            pub fn wait_time(&self) -> Duration {
                self.permit.wait()
            }

            /// How long from now until the permits arrive (zero once they have).
            pub fn remaining(&self) -> Duration {
                self.ready_at.saturating_duration_since(Instant::now())
            }

            /// Whether the permits have arrived.
            pub fn is_ready(&self) -> bool {
                self.remaining().is_zero()
            }

            /// Uses the permits now, without waiting for their slot: the caller takes care of
            /// timing.
            pub fn commit(mut self) -> Permit {
                self.refund = None;
                self.permit
            }

            #[doc = concat!("Waits until the permits arrive (", $how, "), then uses them.",
                $dropped)]
            pub $($async)? fn wait(mut self) -> Permit {
                sleep_until(self.ready_at)$($await)*;
                self.refund = None;
                self.permit
            }

            /// Gives the permits back now; `true` if they went back (nothing was reserved after
            /// them), `false` if the slot stays unused or the store could not be asked in time.
            pub $($async)? fn cancel(mut self) -> bool {
                match self.refund.take() {
                    Some(refund) => give_back(refund)$($await)*,
                    None => false,
                }
            }
        }

        impl<$($g)*> std::fmt::Debug for $Res {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct("Reservation")
                    .field("permit", &self.permit)
                    .field("permits", &self.k)
                    .field("pending", &self.refund.is_some())
                    .finish_non_exhaustive()
            }
        }

        /// Runs the refund script: `true` if the permits went back.
        $($async)? fn give_back<$($g)*>(refund: Refund<$Conn>) -> bool {
            let args = refund.inner.refund_args(refund.written, refund.increment);
            let reply: Result<i64, Cause> =
                run(&refund.conn, &refund.inner, &REFUND, &refund.key, &args)$($await)*;
            matches!(reply, Ok(1))
        }
    };
}

pub(crate) use verbs;
