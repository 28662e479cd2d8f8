//! One key's entry in a [`KeyedRateLimiter`](super::KeyedRateLimiter)'s map: its state, and the
//! tier the state was made under (`()` for a limiter of one config: 8 bytes in all, as before).

use std::ops::Deref;

use ritmo_core::keyed::KeyState;

/// A key's state and tier. The tier changes only under the key's shard write lock (a tier
/// change), so a call holding the read lock sees the two agree.
#[derive(Debug)]
pub(super) struct Entry<I> {
    state: KeyState,
    pub(super) tier: I,
}

impl<I> Entry<I> {
    /// A key never seen, on `tier`: its full burst.
    pub(super) fn new(tier: I) -> Self {
        Entry {
            state: KeyState::new(),
            tier,
        }
    }
}

impl<I> Deref for Entry<I> {
    type Target = KeyState;

    #[inline(always)]
    fn deref(&self) -> &KeyState {
        &self.state
    }
}
