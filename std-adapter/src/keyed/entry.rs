//! One key's entry in a [`KeyedRateLimiter`](super::KeyedRateLimiter)'s map: its cell, and the
//! tier the state was made under (`()` for a limiter of one config: 8 bytes in all, as before).

use std::ops::Deref;

use ritmo_core::keyed::KeyCell;

/// A key's cell and tier. The tier changes only under the key's shard write lock (a tier
/// change), so a call holding the read lock sees the two agree.
#[derive(Debug)]
pub(super) struct Entry<I> {
    cell: KeyCell,
    pub(super) tier: I,
}

impl<I> Entry<I> {
    /// A key never seen, on `tier`: its full burst.
    pub(super) fn new(tier: I) -> Self {
        Entry {
            cell: KeyCell::new(),
            tier,
        }
    }
}

impl<I> Deref for Entry<I> {
    type Target = KeyCell;

    #[inline(always)]
    fn deref(&self) -> &KeyCell {
        &self.cell
    }
}
