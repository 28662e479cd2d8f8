//! The live keys of a [`KeyedLimiter`], with the permits each would pass now.

use core::hash::Hash;

use super::{KeySnapshot, KeyedLimiter, TierSet};
use crate::clock::Clock;

impl<K: Hash + Eq + Clone, C: Clock, const N: usize, P: TierSet<K>> KeyedLimiter<K, C, N, P> {
    /// The keys being limited right now, each with the permits it would pass now on the tier its
    /// state was last made under (in table order).
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use ritmo::{Config, ManualClock};
    /// # use ritmo::keyed::KeyedLimiter;
    /// # use ritmo::keyed::Keyed;
    /// let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("x", Config::new(4, Duration::from_secs(1))?, ManualClock::new(), 0);
    /// l.try_acquire_n(&7, 3).unwrap();
    /// let live = l.live_keys();
    /// assert_eq!((live[0].key, live[0].available_permits), (7, 1));
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn live_keys(&self) -> heapless::Vec<KeySnapshot<K>, N> {
        let reading = self.rules.rate.now();
        self.table.with(|t| {
            let now = t.observe(reading);
            let mut out = heapless::Vec::new();
            for slot in &t.slots {
                if let Some(key) = &slot.key
                    && slot.tat > now
                {
                    // At most N slots: always fits.
                    let _ = out.push(KeySnapshot {
                        key: key.clone(),
                        available_permits: self.rules.rules(slot.tier).available(slot.tat, now),
                    });
                }
            }
            out
        })
    }
}
