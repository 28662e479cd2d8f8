//! Where faults become `tracing` events and metrics (features `tracing` and `metrics`); without
//! them every function here is empty.

use crate::error::Cause;

/// The store failed a decision for limiter `id` after answering the one before it: the failure
/// policy (`policy`) answers from now on.
#[allow(unused_variables)]
pub(crate) fn to_policy(id: &'static str, policy: &'static str, cause: &Cause) {
    #[cfg(feature = "tracing")]
    {
        let error = match cause {
            Cause::Timeout(t) => format!("no answer within {} ms", t.as_millis()),
            Cause::Redis(e) => e.to_string(),
        };
        tracing::warn!(target: "ritmo", id, policy, error = %error, "Redis unavailable: the failure policy decides");
    }
    #[cfg(feature = "metrics")]
    metrics::gauge!(crate::metrics::FALLBACK_ACTIVE, "limiter" => id).set(1.0);
}

/// The store answered limiter `id` again after failing.
#[allow(unused_variables)]
pub(crate) fn to_store(id: &'static str, policy: &'static str) {
    #[cfg(feature = "tracing")]
    tracing::info!(target: "ritmo", id, policy, "Redis answers again: the shared quota decides");
    #[cfg(feature = "metrics")]
    metrics::gauge!(crate::metrics::FALLBACK_ACTIVE, "limiter" => id).set(0.0);
}

/// What the store answered a limiter's calls, counted for metrics read at scrape time (feature
/// `metrics`; empty otherwise). One atomic add per call the store answered: nothing beside its
/// round trip.
#[derive(Debug, Default)]
pub(crate) struct Counts {
    #[cfg(feature = "metrics")]
    admitted: AtomicU64,
    #[cfg(feature = "metrics")]
    waited: AtomicU64,
    #[cfg(feature = "metrics")]
    rejected: AtomicU64,
    #[cfg(feature = "metrics")]
    unavailable: AtomicU64,
    #[cfg(feature = "metrics")]
    fallback_admit: AtomicU64,
    #[cfg(feature = "metrics")]
    fallback_local: AtomicU64,
    /// The limiter's connections, async or pooled.
    pub(crate) links: Links,
}

#[cfg(feature = "metrics")]
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

impl Counts {
    /// A call the store answered: `status` 1 admitted now, 2 reserved (waits), 0 rejected.
    #[allow(unused_variables)]
    pub(crate) fn answered(&self, status: u64) {
        #[cfg(feature = "metrics")]
        match status {
            1 => &self.admitted,
            2 => &self.waited,
            _ => &self.rejected,
        }
        .fetch_add(1, Ordering::Relaxed);
    }

    /// A call of limiter `id` refused because the store was unavailable: counted and published.
    #[allow(unused_variables)]
    pub(crate) fn unavailable(&self, id: &'static str) {
        #[cfg(feature = "metrics")]
        {
            self.unavailable.fetch_add(1, Ordering::Relaxed);
            metrics::counter!(crate::metrics::REJECTED, "limiter" => id, "reason" => "unavailable")
                .increment(1);
        }
    }

    /// A call of limiter `id` answered by its failure policy `policy` (`admit` or `local`):
    /// counted and published.
    #[allow(unused_variables)]
    pub(crate) fn fallback(&self, id: &'static str, policy: &'static str) {
        #[cfg(feature = "metrics")]
        {
            let count = if policy == "admit" {
                &self.fallback_admit
            } else {
                &self.fallback_local
            };
            count.fetch_add(1, Ordering::Relaxed);
            metrics::counter!(crate::metrics::FALLBACK, "limiter" => id, "policy" => policy)
                .increment(1);
        }
    }
}

/// Connections (re)established after a failure (feature `metrics`; empty otherwise).
#[derive(Debug, Default)]
pub(crate) struct Links {
    /// A connection failed (or could not be made) since the last one was made.
    #[cfg(feature = "metrics")]
    broken: AtomicBool,
    #[cfg(feature = "metrics")]
    reconnects: AtomicU64,
}

impl Links {
    /// A connection failed, or could not be made.
    pub(crate) fn broke(&self) {
        #[cfg(feature = "metrics")]
        self.broken.store(true, Ordering::Relaxed);
    }

    /// A connection works (made, or answering): a reconnect if one had broken since the last.
    pub(crate) fn up(&self) {
        #[cfg(feature = "metrics")]
        if self.broken.load(Ordering::Relaxed) && self.broken.swap(false, Ordering::Relaxed) {
            self.reconnects.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Whether `cause` is the connection's fault (closed, refused, reset), not a slow server or
    /// an error the server sent.
    #[cfg(feature = "async")]
    pub(crate) fn is_link_fault(cause: &Cause) -> bool {
        match cause {
            Cause::Timeout(_) => false,
            Cause::Redis(e) => {
                e.is_connection_dropped() || e.is_connection_refusal() || e.is_io_error()
            }
        }
    }
}

/// Records one Redis limiter's series from its counts (feature `metrics`).
#[cfg(feature = "metrics")]
pub(crate) fn record(inner: &crate::Inner) {
    use crate::metrics::{FALLBACK, FALLBACK_ACTIVE, RECONNECTS};
    use ritmo_std::metrics::{ADMITTED, REJECTED, WAITED};
    let (id, away, counts) = (inner.id, inner.away.load(Ordering::Relaxed), &inner.counts);
    let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
    metrics::counter!(ADMITTED, "limiter" => id).absolute(get(&counts.admitted));
    metrics::counter!(WAITED, "limiter" => id).absolute(get(&counts.waited));
    metrics::counter!(REJECTED, "limiter" => id, "reason" => "no_permit_in_time")
        .absolute(get(&counts.rejected));
    metrics::counter!(REJECTED, "limiter" => id, "reason" => "unavailable")
        .absolute(get(&counts.unavailable));
    metrics::counter!(FALLBACK, "limiter" => id, "policy" => "admit")
        .absolute(get(&counts.fallback_admit));
    metrics::counter!(FALLBACK, "limiter" => id, "policy" => "local")
        .absolute(get(&counts.fallback_local));
    metrics::gauge!(FALLBACK_ACTIVE, "limiter" => id).set(if away { 1.0 } else { 0.0 });
    metrics::counter!(RECONNECTS, "limiter" => id).absolute(get(&counts.links.reconnects));
}
