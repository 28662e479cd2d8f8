//! Keyed limiters against a reference model: a map of independent unkeyed limiters, one per key,
//! that never evicts anything.
//!
//! The fixed table (`ritmo::keyed::KeyedLimiter`) and the std map (`ritmo::server::KeyedRateLimiter`)
//! run the same random schedules of calls, reservations, cancellations, clock advances, forced
//! reclaims and (for the table) re-seeding, with capacities small enough that new keys are often
//! refused. Every decision must be the model's, except that a key the model does not hold live is
//! refused with `KeyCapacity` exactly when every slot holds another live key. So dropping idle
//! keys, whenever it happens, changes nothing.

use std::time::Duration;

use proptest::prelude::*;
use ritmo::keyed::KeyedLimiter;
use ritmo::server::KeyedRateLimiter;
use ritmo::{AcquireError, Config, KeySnapshot, ManualClock, RateLimiter, Reason, Reservation};

const CAP: usize = 3;

/// A reservation of either subject, seen through one interface.
trait Held {
    fn cancel(self: Box<Self>) -> bool;
    fn commit(self: Box<Self>);
}

impl<K: std::hash::Hash + Eq + Clone, const N: usize> Held
    for ritmo::keyed::KeyedReservation<'_, K, &ManualClock, N>
{
    fn cancel(self: Box<Self>) -> bool {
        (*self).cancel()
    }
    fn commit(self: Box<Self>) {
        (*self).commit()
    }
}

impl<K: std::hash::Hash + Eq + Clone> Held
    for ritmo::server::KeyedReservation<'_, K, &ManualClock>
{
    fn cancel(self: Box<Self>) -> bool {
        (*self).cancel()
    }
    fn commit(self: Box<Self>) {
        (*self).commit()
    }
}

/// The keyed operations both subjects offer, by the same names.
trait Keyed {
    fn try_acquire_n(&self, key: &u8, k: u32) -> Result<(), AcquireError>;
    fn reserve_n_within(
        &self,
        key: &u8,
        k: u32,
        max_wait: Duration,
    ) -> Result<Box<dyn Held + '_>, AcquireError>;
    fn available_permits(&self, key: &u8) -> u32;
    fn retry_after(&self, key: &u8) -> Duration;
    fn len(&self) -> usize;
    fn keys_held(&self) -> usize;
    fn reclaim_idle(&self) -> usize;
    fn live_keys(&self) -> Vec<KeySnapshot<u8>>;
    fn reseed(&self, seed: u128);
}

impl Keyed for KeyedLimiter<u8, &ManualClock, CAP> {
    fn try_acquire_n(&self, key: &u8, k: u32) -> Result<(), AcquireError> {
        ritmo::keyed::Keyed::try_acquire_n(self, key, k)
    }
    fn reserve_n_within(
        &self,
        key: &u8,
        k: u32,
        max_wait: Duration,
    ) -> Result<Box<dyn Held + '_>, AcquireError> {
        ritmo::keyed::Keyed::reserve_n_within(self, key, k, max_wait)
            .map(|r| Box::new(r) as Box<dyn Held>)
    }
    fn available_permits(&self, key: &u8) -> u32 {
        ritmo::keyed::Keyed::available_permits(self, key)
    }
    fn retry_after(&self, key: &u8) -> Duration {
        ritmo::keyed::Keyed::retry_after(self, key)
    }
    fn len(&self) -> usize {
        ritmo::keyed::Keyed::len(self)
    }
    fn keys_held(&self) -> usize {
        ritmo::keyed::Keyed::keys_held(self)
    }
    fn reclaim_idle(&self) -> usize {
        ritmo::keyed::Keyed::reclaim_idle(self)
    }
    fn live_keys(&self) -> Vec<KeySnapshot<u8>> {
        KeyedLimiter::live_keys(self).into_iter().collect()
    }
    fn reseed(&self, seed: u128) {
        self.set_seed(seed)
    }
}

impl Keyed for KeyedRateLimiter<u8, &ManualClock> {
    fn try_acquire_n(&self, key: &u8, k: u32) -> Result<(), AcquireError> {
        ritmo::keyed::Keyed::try_acquire_n(self, key, k)
    }
    fn reserve_n_within(
        &self,
        key: &u8,
        k: u32,
        max_wait: Duration,
    ) -> Result<Box<dyn Held + '_>, AcquireError> {
        ritmo::keyed::Keyed::reserve_n_within(self, key, k, max_wait)
            .map(|r| Box::new(r) as Box<dyn Held>)
    }
    fn available_permits(&self, key: &u8) -> u32 {
        ritmo::keyed::Keyed::available_permits(self, key)
    }
    fn retry_after(&self, key: &u8) -> Duration {
        ritmo::keyed::Keyed::retry_after(self, key)
    }
    fn len(&self) -> usize {
        ritmo::keyed::Keyed::len(self)
    }
    fn keys_held(&self) -> usize {
        ritmo::keyed::Keyed::keys_held(self)
    }
    fn reclaim_idle(&self) -> usize {
        ritmo::keyed::Keyed::reclaim_idle(self)
    }
    fn live_keys(&self) -> Vec<KeySnapshot<u8>> {
        KeyedRateLimiter::live_keys(self)
    }
    fn reseed(&self, _seed: u128) {}
}

#[derive(Debug, Clone)]
enum Op {
    Acquire { key: u8, k: u32 },
    Reserve { key: u8, k: u32, max_wait_ms: u64 },
    Release { index: usize, cancel: bool },
    Advance { micros: u64 },
    Peek { key: u8 },
    Reclaim,
    Reseed { seed: u128 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (any::<u8>(), 0u32..6).prop_map(|(key, k)| Op::Acquire { key, k }),
        2 => (any::<u8>(), 1u32..4, 0u64..3000).prop_map(|(key, k, max_wait_ms)| Op::Reserve { key, k, max_wait_ms }),
        2 => (any::<usize>(), any::<bool>()).prop_map(|(index, cancel)| Op::Release { index, cancel }),
        4 => prop_oneof![0u64..500, 0u64..50_000, 0u64..3_000_000].prop_map(|micros| Op::Advance { micros }),
        2 => any::<u8>().prop_map(|key| Op::Peek { key }),
        1 => Just(Op::Reclaim),
        1 => any::<u128>().prop_map(|seed| Op::Reseed { seed }),
    ]
}

fn check_capacity_refusal(
    got: Result<(), AcquireError>,
    expected_wait: Duration,
    exact: bool,
) -> Result<(), TestCaseError> {
    match got {
        Err(AcquireError::RateLimited(e)) => {
            prop_assert_eq!(e.reason(), Reason::KeyCapacity);
            if exact {
                prop_assert_eq!(e.retry_after(), expected_wait);
            } else {
                prop_assert!(e.retry_after() > Duration::ZERO && e.retry_after() <= expected_wait);
            }
        }
        other => prop_assert!(false, "expected KeyCapacity, got {:?}", other),
    }
    Ok(())
}

const KEYS: u8 = 8;

/// Runs `ops` on `subject` and on the reference model (one independent unkeyed limiter per key,
/// never dropped), asserting after every step that they agree.
fn run<S: Keyed>(
    subject: &S,
    clock: &ManualClock,
    config: Config,
    ops: Vec<Op>,
) -> Result<(), TestCaseError> {
    run_with(subject, clock, config, ops, CAP, KEYS, true)
}

/// [`run`] with `cap` slots for `keys` keys (ops' keys are taken modulo `keys`). `exact`: whether
/// a `KeyCapacity` wait must be exact, or may be a lower bound (a map holding more keys than it
/// remembers knows only a bound for the others).
fn run_with<S: Keyed>(
    subject: &S,
    clock: &ManualClock,
    config: Config,
    ops: Vec<Op>,
    cap: usize,
    keys: u8,
    exact: bool,
) -> Result<(), TestCaseError> {
    let model: Vec<RateLimiter<&ManualClock>> = (0..keys)
        .map(|_| RateLimiter::with_clock("keyed", config, clock))
        .collect();
    let n = config.permits();
    let is_live = |key: u8| model[key as usize].available_permits() < n;
    // `Some(wait)` if `key` must be refused for want of room: it is not live and CAP other keys
    // are; `wait` is when the soonest of them is idle.
    let no_room_for = |key: u8| -> Option<Duration> {
        if is_live(key) {
            return None;
        }
        let live: Vec<u8> = (0..keys).filter(|&k| is_live(k)).collect();
        (live.len() >= cap).then(|| {
            live.iter()
                .map(|&k| model[k as usize].retry_after_n(n).unwrap())
                .min()
                .unwrap()
        })
    };
    let mut held: Vec<(Box<dyn Held + '_>, Reservation<'_, &ManualClock>, u8)> = Vec::new();
    for op in ops {
        let op = match op {
            Op::Acquire { key, k } => Op::Acquire { key: key % keys, k },
            Op::Reserve {
                key,
                k,
                max_wait_ms,
            } => Op::Reserve {
                key: key % keys,
                k,
                max_wait_ms,
            },
            Op::Peek { key } => Op::Peek { key: key % keys },
            other => other,
        };
        match op {
            Op::Acquire { key, k } => {
                let room = no_room_for(key);
                let got = subject.try_acquire_n(&key, k);
                match room {
                    Some(wait) if (1..=n).contains(&k) => check_capacity_refusal(got, wait, exact)?,
                    _ => prop_assert_eq!(got, model[key as usize].try_acquire_n(k)),
                }
            }
            Op::Reserve {
                key,
                k,
                max_wait_ms,
            } => {
                let max_wait = Duration::from_millis(max_wait_ms);
                let room = no_room_for(key);
                let got = subject.reserve_n_within(&key, k, max_wait);
                match room {
                    Some(wait) if (1..=n).contains(&k) => {
                        check_capacity_refusal(got.map(|r| r.commit()), wait, exact)?
                    }
                    _ => match (got, model[key as usize].reserve_n_within(k, max_wait)) {
                        (Ok(r), Ok(m)) => held.push((r, m, key)),
                        (Err(a), Err(b)) => prop_assert_eq!(a, b),
                        (a, b) => prop_assert!(
                            false,
                            "subject {:?} vs model {:?}",
                            a.map(|_| ()),
                            b.map(|_| ())
                        ),
                    },
                }
            }
            Op::Release { index, cancel } => {
                if !held.is_empty() {
                    let (r, m, key) = held.swap_remove(index % held.len());
                    if cancel {
                        // While the key is live the subject holds its exact state, so the
                        // refund rule gives the same answer. Once it is idle, both states are
                        // "full burst" whatever the refund does; the subject may have dropped
                        // the key and cannot tell whether a later call changed it.
                        let live = is_live(key);
                        let (a, b) = (r.cancel(), m.cancel());
                        if live {
                            prop_assert_eq!(a, b, "refund of key {}", key);
                        }
                    } else {
                        r.commit();
                        m.commit();
                    }
                }
            }
            Op::Advance { micros } => clock.advance(Duration::from_micros(micros)),
            Op::Peek { key } => {
                let model_key = &model[key as usize];
                match no_room_for(key) {
                    Some(wait) => {
                        prop_assert_eq!(subject.available_permits(&key), 0);
                        let after = subject.retry_after(&key);
                        if exact {
                            prop_assert_eq!(after, wait);
                        } else {
                            prop_assert!(after > Duration::ZERO && after <= wait);
                        }
                    }
                    None => {
                        prop_assert_eq!(
                            subject.available_permits(&key),
                            model_key.available_permits()
                        );
                        prop_assert_eq!(subject.retry_after(&key), model_key.retry_after());
                    }
                }
            }
            Op::Reclaim => {
                let live = (0..keys).filter(|&k| is_live(k)).count();
                prop_assert_eq!(subject.reclaim_idle(), live);
                prop_assert_eq!(subject.keys_held(), live);
            }
            Op::Reseed { seed } => subject.reseed(seed),
        }
        let expected: Vec<KeySnapshot<u8>> = (0..keys)
            .filter(|&k| is_live(k))
            .map(|key| KeySnapshot::new(key, model[key as usize].available_permits()))
            .collect();
        let mut live = subject.live_keys();
        live.sort_by_key(|s| s.key);
        prop_assert_eq!(&live, &expected);
        prop_assert_eq!(subject.len(), expected.len());
        prop_assert!(subject.keys_held() <= cap);
    }
    Ok(())
}

fn config() -> impl Strategy<Value = Config> {
    (1u32..6, 1u64..2_000).prop_map(|(permits, ms)| {
        Config::new(permits, Duration::from_millis(ms)).expect("a valid config")
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn the_fixed_table_decides_like_independent_limiters(
        config in config(),
        seed in any::<u128>(),
        ops in proptest::collection::vec(op(), 1..200),
    ) {
        let clock = ManualClock::new();
        let table: KeyedLimiter<u8, &ManualClock, CAP> = KeyedLimiter::with_clock("keyed", config, &clock, seed);
        run(&table, &clock, config, ops)?;
    }

    #[test]
    fn the_std_map_decides_like_independent_limiters(
        config in config(),
        ops in proptest::collection::vec(op(), 1..200),
    ) {
        let clock = ManualClock::new();
        let map = KeyedRateLimiter::with_clock("keyed", config, CAP, &clock);
        run(&map, &clock, config, ops)?;
    }

    /// More keys than the map remembers after a scan (40 slots, 16 remembered, 64 keys): room is
    /// made from the remembered keys and from scans, and still exactly when a key is idle.
    #[test]
    fn the_std_map_with_more_keys_than_it_remembers(
        config in config(),
        ops in proptest::collection::vec(op(), 1..400),
    ) {
        let clock = ManualClock::new();
        let map = KeyedRateLimiter::with_clock("keyed", config, 40, &clock);
        run_with(&map, &clock, config, ops, 40, 64, false)?;
    }
}

// Guarantees one at a time.

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use ritmo::{Event, KeyListener, Listener, const_config};

fn cfg(permits: u32, period: Duration) -> Config {
    Config::new(permits, period).expect("a valid config")
}

#[test]
fn a_full_table_refuses_a_new_key_until_the_soonest_live_key_is_idle() {
    let clock = ManualClock::new();
    let table: KeyedLimiter<u32, &ManualClock, 4> =
        KeyedLimiter::with_clock("peers", cfg(4, Duration::from_secs(4)), &clock, 7);
    let map =
        KeyedRateLimiter::<u32, _>::with_clock("peers", cfg(4, Duration::from_secs(4)), 4, &clock);
    for (key, k) in [(1u32, 4u32), (2, 3), (3, 2), (4, 1)] {
        table.try_acquire_n(&key, k).unwrap();
        map.try_acquire_n(&key, k).unwrap();
    }
    // Key 4 took one permit: idle again in 1 s, the soonest.
    for err in [
        table.try_acquire(&5).unwrap_err(),
        map.try_acquire(&5).unwrap_err(),
    ] {
        assert_eq!(err.reason(), Reason::KeyCapacity);
        assert_eq!(err.retry_after(), Duration::from_secs(1));
        assert_eq!(err.id(), "peers");
    }
    assert_eq!(
        (table.available_permits(&5), map.available_permits(&5)),
        (0, 0)
    );
    assert_eq!(table.retry_after(&5), Duration::from_secs(1));
    // Keys already held carry on.
    assert!(table.try_acquire(&2).is_ok() && map.try_acquire(&2).is_ok());
    clock.advance(Duration::from_millis(999));
    assert!(table.try_acquire(&5).is_err() && map.try_acquire(&5).is_err());
    clock.advance(Duration::from_millis(1));
    assert!(table.try_acquire(&5).is_ok() && map.try_acquire(&5).is_ok());
    // Key 4's slot went to key 5; key 4 is a new key again, with no room.
    assert_eq!(
        table.try_acquire(&4).unwrap_err().reason(),
        Reason::KeyCapacity
    );
    assert_eq!(
        map.try_acquire(&4).unwrap_err().reason(),
        Reason::KeyCapacity
    );
}

#[test]
fn a_flood_of_new_keys_never_frees_a_limited_key() {
    let clock = ManualClock::new();
    let table: KeyedLimiter<u64, &ManualClock, 64> =
        KeyedLimiter::with_clock("login", cfg(3, Duration::from_secs(60)), &clock, 99);
    let map = KeyedRateLimiter::<u64, _>::with_clock(
        "login",
        cfg(3, Duration::from_secs(60)),
        64,
        &clock,
    );
    let victim = u64::MAX;
    table.try_acquire_n(&victim, 3).unwrap();
    map.try_acquire_n(&victim, 3).unwrap();
    for key in 0..10_000u64 {
        let _ = table.try_acquire(&key);
        let _ = map.try_acquire(&key);
        clock.advance_ticks(1_000); // 1 µs per request: 10 ms in all
    }
    // Still limited, with exactly the state it had.
    assert!(table.try_acquire(&victim).is_err());
    assert!(map.try_acquire(&victim).is_err());
    assert_eq!(
        table.retry_after(&victim),
        Duration::from_secs(20) - Duration::from_millis(10)
    );
    assert_eq!(
        map.retry_after(&victim),
        Duration::from_secs(20) - Duration::from_millis(10)
    );
    assert_eq!((table.keys_held(), map.keys_held()), (64, 64));
}

#[test]
fn idle_keys_are_reclaimed_without_a_sweep() {
    let clock = ManualClock::new();
    let table: KeyedLimiter<u64, &ManualClock, 8> =
        KeyedLimiter::with_clock("api", cfg(2, Duration::from_secs(1)), &clock, 1);
    let map =
        KeyedRateLimiter::<u64, _>::with_clock("api", cfg(2, Duration::from_secs(1)), 8, &clock);
    // Ten rounds of eight new clients each, a second apart: every round finds the last one's
    // keys idle and reuses their room.
    for round in 0..10u64 {
        for client in 0..8 {
            let key = round * 100 + client;
            table.try_acquire_n(&key, 2).unwrap();
            map.try_acquire_n(&key, 2).unwrap();
        }
        assert_eq!((table.len(), map.len()), (8, 8));
        clock.advance(Duration::from_secs(1));
        assert_eq!((table.len(), map.len()), (0, 0));
    }
    assert!(table.keys_held() <= 8 && map.keys_held() <= 8);
}

#[test]
fn a_disabled_config_lets_everything_through_and_holds_no_key() {
    let clock = ManualClock::new();
    let off = cfg(1, Duration::from_secs(1)).with_enabled(false);
    let table: KeyedLimiter<u32, &ManualClock, 2> = KeyedLimiter::with_clock("off", off, &clock, 0);
    let map = KeyedRateLimiter::with_clock("off", off, 2, &clock);
    for key in 0..10u32 {
        for _ in 0..5 {
            table.try_acquire(&key).unwrap();
            map.try_acquire(&key).unwrap();
        }
    }
    assert_eq!((table.keys_held(), map.keys_held()), (0, 0));
}

#[test]
fn max_keys_zero_refuses_every_key_without_panicking() {
    let map = KeyedRateLimiter::with_clock(
        "none",
        cfg(1, Duration::from_secs(1)),
        0,
        ManualClock::new(),
    );
    let err = map.try_acquire(&"a").unwrap_err();
    assert_eq!(err.reason(), Reason::KeyCapacity);
    assert_eq!(map.available_permits(&"a"), 0);
    assert!(map.reserve(&"a").is_err());
}

struct CountIds(AtomicU32);
impl Listener for CountIds {
    fn on_event(&self, event: &Event) {
        assert_eq!(event.id(), "peers");
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}
struct SeenKeys(AtomicUsize);
impl KeyListener<u32> for SeenKeys {
    fn on_event(&self, key: &u32, event: &Event) {
        assert!(matches!(event, Event::Rejected(_) | Event::Released { .. }));
        self.0.fetch_add(*key as usize, Ordering::Relaxed);
    }
}

#[test]
fn listeners_hear_the_id_and_only_an_opted_in_one_hears_the_key() {
    static IDS: CountIds = CountIds(AtomicU32::new(0));
    static KEYS: SeenKeys = SeenKeys(AtomicUsize::new(0));
    static CLOCK: ManualClock = ManualClock::new();
    static TABLE: KeyedLimiter<u32, &ManualClock, 1> =
        KeyedLimiter::new("peers", const_config!(1, Duration::from_secs(1)), &CLOCK, 5)
            .with_listener(&IDS)
            .with_key_listener(&KEYS);
    TABLE.try_acquire(&7).unwrap();
    TABLE.try_acquire(&7).unwrap_err(); // rejected: no permit
    TABLE.try_acquire(&8).unwrap_err(); // rejected: no room
    assert_eq!(IDS.0.load(Ordering::Relaxed), 2);
    assert_eq!(KEYS.0.load(Ordering::Relaxed), 15);

    static MAP_IDS: CountIds = CountIds(AtomicU32::new(0));
    let map = KeyedRateLimiter::with_clock("peers", cfg(1, Duration::from_secs(1)), 1, &CLOCK)
        .with_listener(&MAP_IDS);
    map.try_acquire(&7u32).unwrap();
    map.try_acquire(&7).unwrap_err();
    map.try_acquire(&8).unwrap_err();
    assert_eq!(MAP_IDS.0.load(Ordering::Relaxed), 2);
}

#[test]
fn an_interrupted_or_dropped_wait_returns_the_keys_permit() {
    let clock = ManualClock::new();
    let c = cfg(1, Duration::from_secs(1)).with_max_wait(Duration::from_secs(2));
    let table: KeyedLimiter<u8, &ManualClock, 4> = KeyedLimiter::with_clock("x", c, &clock, 0);
    let map = KeyedRateLimiter::<u32, _>::with_clock("x", c, 4, &clock);
    table.try_acquire(&1).unwrap();
    map.try_acquire(&1).unwrap();
    let err = table.reserve(&1).unwrap().interrupted();
    assert_eq!(err.reason(), Reason::Interrupted);
    drop(map.reserve(&1).unwrap());
    assert_eq!(table.retry_after(&1), Duration::from_secs(1));
    assert_eq!(map.retry_after(&1), Duration::from_secs(1));
    table.acquire_advancing(&1).unwrap();
    assert_eq!(ritmo::Clock::now(&clock), 1_000_000_000);
}

/// Several threads on a few hot keys and many cold ones, in a map and a table too small for all
/// of them: no key is ever admitted more than its bound, counted exactly.
#[test]
fn threads_sharing_keys_never_exceed_any_keys_bound() {
    const THREADS: usize = 4;
    const OPS: u64 = 20_000;
    const KEYS: usize = 64;
    let clock = ManualClock::new();
    let config = cfg(3, Duration::from_millis(1));
    let table: KeyedLimiter<usize, &ManualClock, 16> =
        KeyedLimiter::with_clock("t", config, &clock, 3);
    let map = KeyedRateLimiter::with_clock("t", config, 16, &clock);
    let admitted: Vec<[AtomicU32; 2]> = (0..KEYS)
        .map(|_| [AtomicU32::new(0), AtomicU32::new(0)])
        .collect();
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (table, map, admitted, clock) = (&table, &map, &admitted, &clock);
            s.spawn(move || {
                let mut x = t as u64 * 7919 + 1;
                for _ in 0..OPS {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let key = if x >> 63 == 0 {
                        (x >> 40) as usize % 4
                    } else {
                        (x >> 40) as usize % KEYS
                    };
                    if table.try_acquire(&key).is_ok() {
                        admitted[key][0].fetch_add(1, Ordering::Relaxed);
                    }
                    if map.try_acquire(&key).is_ok() {
                        admitted[key][1].fetch_add(1, Ordering::Relaxed);
                    }
                    if t == 0 {
                        clock.advance_ticks(1_000);
                    }
                }
            });
        }
    });
    let elapsed = ritmo::Clock::now(&clock);
    let interval = 1_000_000 / 3 + 1; // ns per permit, rounded up
    let bound = 3 + (elapsed / interval) as u32;
    for (key, counts) in admitted.iter().enumerate() {
        for (which, count) in counts.iter().enumerate() {
            let count = count.load(Ordering::Relaxed);
            assert!(
                count <= bound,
                "key {key} ({which}): {count} admitted, bound {bound}"
            );
        }
    }
    assert!(table.keys_held() <= 16 && map.keys_held() <= 16);
}
