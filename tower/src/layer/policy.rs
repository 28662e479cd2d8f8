//! Which policy a response reports: the layer's one, or, with a store of several (a tiered keyed
//! limiter), the key's tier's, each `RateLimit-Policy` value rendered once.

use std::sync::Arc;

use http::HeaderValue;

use super::Shared;
use crate::headers;
use crate::store::{Policy, Store};

/// Each of `store`'s policies with its `RateLimit-Policy` value, if it has several.
pub(super) fn tier_policies<St: Store>(store: &St) -> Arc<[(Policy, HeaderValue)]> {
    let policies = store.policies();
    if policies.len() < 2 {
        return Arc::new([]);
    }
    policies
        .iter()
        .map(|policy| (*policy, headers::policy_value(policy)))
        .collect()
}

impl<St, X, M, Cl> Shared<St, X, M, Cl> {
    /// The smallest quota of any policy: a request's cost must pass on every tier.
    pub(crate) fn least_quota(&self) -> u32 {
        let quotas = self.tiers.iter().map(|(policy, _)| policy.quota());
        quotas.fold(self.policy.quota(), u32::min)
    }

    /// The policy number `index` of the store and its `RateLimit-Policy` value: a key's tier's,
    /// or the layer's one policy.
    #[inline]
    pub(crate) fn policy_at(&self, index: usize) -> (&Policy, &HeaderValue) {
        match self.tiers.get(index) {
            Some((policy, header)) => (policy, header),
            None => (&self.policy, &self.policy_header),
        }
    }

    /// The policy `key` follows now (its tier's, with a store of several) and its
    /// `RateLimit-Policy` value.
    #[inline]
    pub(crate) fn policy_for(&self, key: Option<&St::Key>) -> (&Policy, &HeaderValue)
    where
        St: Store,
    {
        if self.tiers.is_empty() {
            return (&self.policy, &self.policy_header);
        }
        self.policy_at(key.map_or(0, |key| self.store.policy_of(key)))
    }
}
