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

/// A call of limiter `id` refused because the store was unavailable.
#[allow(unused_variables)]
pub(crate) fn unavailable(id: &'static str) {
    #[cfg(feature = "metrics")]
    metrics::counter!(crate::metrics::REJECTED, "limiter" => id, "reason" => "unavailable")
        .increment(1);
}

/// A call of limiter `id` answered by its failure policy (`local` or `admit`).
#[allow(unused_variables)]
pub(crate) fn answered_by(id: &'static str, policy: &'static str) {
    #[cfg(feature = "metrics")]
    metrics::counter!(crate::metrics::FALLBACK, "limiter" => id, "policy" => policy).increment(1);
}
