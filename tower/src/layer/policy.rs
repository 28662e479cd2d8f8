//! Which policy a response reports: the layer's one, or, with a store of several (a tiered keyed
//! limiter), the key's tier's, each `RateLimit-Policy` value rendered once.

use std::sync::Arc;

use super::Shared;
use crate::headers::PolicyFields;
use crate::store::Store;

/// Each of `store`'s policies with its fields rendered once, if it has several.
pub(super) fn tier_policies<St: Store>(store: &St) -> Arc<[PolicyFields]> {
    let policies = store.policies();
    if policies.len() < 2 {
        return Arc::new([]);
    }
    policies
        .iter()
        .map(|policy| PolicyFields::new(*policy))
        .collect()
}

impl<St, X, M, Cl> Shared<St, X, M, Cl> {
    /// The smallest quota of any policy: a request's cost must pass on every tier.
    pub(crate) fn least_quota(&self) -> u32 {
        let quotas = self.tiers.iter().map(|fields| fields.policy().quota());
        quotas.fold(self.fields.policy().quota(), u32::min)
    }

    /// The fields of the store's policy number `index`: a key's tier's, or the layer's one
    /// policy's.
    #[inline]
    pub(crate) fn policy_at(&self, index: usize) -> &PolicyFields {
        self.tiers.get(index).unwrap_or(&self.fields)
    }

    /// The fields of the policy `key` follows now (its tier's, with a store of several).
    #[inline]
    pub(crate) fn policy_for(&self, key: Option<&St::Key>) -> &PolicyFields
    where
        St: Store,
    {
        if self.tiers.is_empty() {
            return &self.fields;
        }
        self.policy_at(key.map_or(0, |key| self.store.policy_of(key)))
    }
}
