//! How a full [`KeyedRateLimiter`] makes room for a new key: it drops one idle key, found by
//! the store's per-shard notes and passes (see `store`), or refuses with the exact instant the
//! soonest key is idle. No call scans the whole map: each looks at the shards' bounds and at most
//! the rest of one pass over one shard, unless keys were used since the store last looked at them
//! (then one shard more for each shard whose soonest key was).

use std::hash::Hash;
use std::sync::atomic::Ordering;

use ritmo_core::Clock;
use ritmo_core::keyed::{KeyRules, TierSet};

use super::ShardedMap;
use super::store;

/// Whether a new key may go in now.
pub(super) enum Room {
    Yes,
    /// No: every key held is live; the soonest may be idle in this many units.
    No(u64),
}

impl<K: Hash + Eq + Clone, C: Clock, P: TierSet<K>> ShardedMap<K, C, P> {
    /// Counts one more key in, if that stays within `max_keys`.
    pub(super) fn claim(&self) -> bool {
        self.held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                (held < self.max_keys).then_some(held + 1)
            })
            .is_ok()
    }

    /// At `max_keys`: drops one idle key to make room (in `for_key`'s shard if it can), unless
    /// every key is live; then the wait until the soonest is idle, exact (never early). `force`
    /// drops every idle key instead.
    pub(super) fn make_room(
        &self,
        key_rules: &KeyRules<K, C, P>,
        force: bool,
        for_key: Option<&K>,
    ) -> Room {
        let now = key_rules.key_rate().now();
        // Before any key is dropped at `now` (see `take_new`).
        self.evicted_at.fetch_max(now, Ordering::SeqCst);
        let idle = |tat| key_rules.key_rate().is_idle(tat, now);
        if force {
            let dropped = self.map.drop_idle(idle);
            self.held.fetch_sub(dropped, Ordering::AcqRel);
            return Room::Yes;
        }
        if self.held.load(Ordering::Acquire) < self.max_keys {
            return Room::Yes;
        }
        match self.map.find_room(idle, for_key) {
            store::Room::Freed => {
                self.held.fetch_sub(1, Ordering::AcqRel);
                Room::Yes
            }
            store::Room::Soonest(tat) => {
                if self.held.load(Ordering::Acquire) < self.max_keys {
                    return Room::Yes; // another thread made room meanwhile
                }
                Room::No(tat.saturating_sub(now).max(1))
            }
            store::Room::Busy => Room::No(1),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use ritmo_core::{Config, ManualClock, Reason};

    use crate::KeyedRateLimiter;

    const KEYS: u64 = 10_000;

    /// Buckets the map's passes have looked at so far.
    fn visited<C: ritmo_core::Clock>(map: &KeyedRateLimiter<u64, C>) -> u64 {
        map.store().map.visited()
    }

    /// A map full of keys put in one after another, 1 ms apart, each live for an hour.
    fn full(clock: &ManualClock) -> KeyedRateLimiter<u64, &ManualClock> {
        let config = Config::new(1, Duration::from_secs(3600)).unwrap();
        let map = KeyedRateLimiter::with_clock("full", config, KEYS as usize, clock);
        for key in 0..KEYS {
            map.try_acquire(&key).unwrap();
            clock.advance(Duration::from_millis(1));
        }
        map
    }

    /// A new key refused from a full map of live keys gets the exact wait (key 0's) without a
    /// pass over any shard: the shard of key 0 noted it when it went in.
    #[test]
    fn a_full_map_of_live_keys_refuses_without_a_pass() {
        let clock = ManualClock::new();
        let map = full(&clock);
        for _ in 0..3 {
            let err = map.try_acquire(&KEYS).unwrap_err();
            assert_eq!(err.reason(), Reason::KeyCapacity);
            // Key 0, put in at 0, is idle first: at 3600 s; the clock reads 10 s.
            assert_eq!(err.retry_after(), Duration::from_secs(3600 - 10));
        }
        assert_eq!(visited(&map), 0);
    }

    /// Keys going idle one at a time while the map stays full each make room for one new key,
    /// in the order they go idle, and no call passes over more than a few shards' buckets.
    #[test]
    fn keys_going_idle_in_order_make_room_one_at_a_time() {
        let clock = ManualClock::new();
        let map = full(&clock);
        clock.advance(Duration::from_secs(3600 - 10));
        // Key 0 is idle now, key 1 a millisecond later.
        map.try_acquire(&KEYS).unwrap();
        let err = map.try_acquire(&(KEYS + 1)).unwrap_err();
        assert_eq!(err.retry_after(), Duration::from_millis(1));
        let per_shard = 4 * KEYS / map.store().map.shards() as u64; // buckets of one shard, roughly
        for key in KEYS + 1..KEYS + 2_000 {
            clock.advance(Duration::from_millis(1));
            let before = visited(&map);
            map.try_acquire(&key).unwrap();
            assert!(visited(&map) - before <= 2 * per_shard, "key {key}");
            assert_eq!(map.keys_held(), KEYS as usize);
        }
        assert!(visited(&map) < 2_000 * per_shard / 4);
    }

    /// Keys used after the map noted them: a refusal is still exact (the soonest key now), and
    /// an idle key anywhere is found rather than a new key refused.
    #[test]
    fn refusals_stay_exact_when_keys_were_used_since_noted() {
        let clock = ManualClock::new();
        let map = full(&clock);
        clock.advance(Duration::from_secs(3600));
        // Every key but 4321 used again, in reverse order: key 4321 is the only idle one.
        for key in (0..KEYS).rev() {
            if key != 4321 {
                map.try_acquire(&key).unwrap();
                clock.advance(Duration::from_micros(10));
            }
        }
        map.try_acquire(&KEYS).unwrap(); // 4321's room
        // The soonest key now is the one used first again: KEYS - 1, at 3610 s + 3600 s.
        let err = map.try_acquire(&(KEYS + 1)).unwrap_err();
        let now = Duration::from_nanos(ritmo_core::Clock::now(&&clock));
        assert_eq!(
            err.retry_after(),
            Duration::from_secs(3610 + 3600) - now,
            "the soonest key's instant, exactly"
        );
        assert!(map.try_acquire(&4321).is_err());
    }

    /// IP keys of every form (IPv4, an IPv6 /64, a whole IPv6 address) share one `max_keys`:
    /// a full map refuses with the soonest key of any form, makes room from any form, and
    /// lists each key as it was given.
    #[test]
    fn ip_keys_of_every_form_share_the_room() {
        use std::net::IpAddr;

        use crate::IpKey;

        let clock = ManualClock::new();
        let config = Config::new(1, Duration::from_secs(10)).unwrap();
        let map = KeyedRateLimiter::with_clock("ip", config, 3, &clock);
        let ip = |s: &str, prefix| IpKey::with_ipv6_prefix(s.parse::<IpAddr>().unwrap(), prefix);
        let keys = [
            ip("2001:db8::1", 128),
            ip("203.0.113.7", 64),
            ip("2001:db8:1:2::9", 64),
        ];
        for key in &keys {
            map.try_acquire(key).unwrap();
            clock.advance(Duration::from_secs(1));
        }
        let mut live: Vec<IpKey> = map.live_keys().iter().map(|k| k.key).collect();
        live.sort();
        let mut expected = keys.to_vec();
        expected.sort();
        assert_eq!(live, expected);
        let err = map.try_acquire(&ip("198.51.100.1", 64)).unwrap_err();
        assert_eq!(err.reason(), Reason::KeyCapacity);
        // The whole IPv6 key went in first, at 0: idle at 10 s; the clock reads 3 s.
        assert_eq!(err.retry_after(), Duration::from_secs(7));
        clock.advance(Duration::from_secs(7));
        map.try_acquire(&ip("198.51.100.1", 64)).unwrap();
        assert!(
            map.try_acquire(&keys[1]).is_err(),
            "203.0.113.7 still limited"
        );
        assert!(
            map.try_acquire(&ip("2001:db8:1:2::10", 64)).is_err(),
            "its /64 too"
        );
        assert_eq!(map.keys_held(), 3);
    }

    /// Threads putting new keys into a full map while its keys go idle: the map never holds more
    /// than `max_keys`, a refusal always names a wait, and every thread finishes (no lock taken
    /// in two orders).
    #[test]
    fn racing_new_keys_stay_within_max_keys() {
        use std::sync::atomic::{AtomicU64, Ordering};

        let clock = ManualClock::new();
        let config = Config::new(1, Duration::from_millis(1)).unwrap();
        let map = KeyedRateLimiter::with_clock("race", config, 256, &clock);
        let next = AtomicU64::new(0);
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    for _ in 0..2_000 {
                        let key = next.fetch_add(1, Ordering::Relaxed);
                        if let Err(err) = map.try_acquire(&key) {
                            assert_eq!(err.reason(), Reason::KeyCapacity);
                            assert!(err.retry_after() > Duration::ZERO);
                        }
                        assert!(map.keys_held() <= 256);
                        clock.advance(Duration::from_micros(3));
                    }
                });
            }
        });
        // The count of keys held matches the map: after dropping the idle ones, the live ones.
        let left = map.reclaim_idle();
        assert_eq!((left, map.keys_held()), (map.len(), map.len()));
    }
}
