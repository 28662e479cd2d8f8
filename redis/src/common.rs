//! What the async limiters ([`crate::RedisKeyedRateLimiter`]) and the blocking ones
//! ([`crate::blocking`]) say word for word, written once. What they decide with (script
//! arguments, replies, keys, errors, the failure policy) is [`Inner`](crate::Inner)'s; their
//! verbs differ by `.await`, their reservations by how they sleep and give permits back.
//!
//! Macros, because the two flavours are distinct public types: one generic type for both would
//! need a public trait over "an async connection or the blocking pool" and a default type
//! parameter that exists only with feature `async`.

/// A keyed limiter's `id` and `config` (in an `impl` of a type with an `inner: Arc<Inner>`).
macro_rules! keyed_accessors {
    () => {
        /// The limiter's id.
        pub fn id(&self) -> &'static str {
            self.inner.id
        }

        /// The config every key is limited by.
        pub fn config(&self) -> &Config {
            &self.inner.config
        }
    };
}

/// A single-key limiter's `id` and `config` (in an `impl` of a newtype over a keyed limiter).
macro_rules! single_accessors {
    () => {
        /// The limiter's id.
        pub fn id(&self) -> &'static str {
            self.0.id()
        }

        /// Its config.
        pub fn config(&self) -> &Config {
            self.0.config()
        }
    };
}

/// A reservation's accessors and `commit` (in an `impl` of a type with `permit`, `k`,
/// `pending` and a `remaining()`).
macro_rules! reservation_accessors {
    () => {
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

        /// Whether the permits have arrived.
        pub fn is_ready(&self) -> bool {
            self.remaining().is_zero()
        }

        /// Uses the permits now, without waiting for their slot: the caller takes care of
        /// timing.
        pub fn commit(mut self) -> Permit {
            self.pending = false;
            self.permit
        }
    };
}

/// `Debug` for a reservation type (`$($head)*`: the `impl` header up to the type).
macro_rules! reservation_debug {
    ($($head:tt)*) => {
        $($head)* {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct("Reservation")
                    .field("permit", &self.permit)
                    .field("permits", &self.k)
                    .field("pending", &self.pending)
                    .finish_non_exhaustive()
            }
        }
    };
}

pub(crate) use {keyed_accessors, reservation_accessors, reservation_debug, single_accessors};
