//! No call allocates: every path of a limiter, run many times under a counting global allocator,
//! asserts exactly 0 allocations and 0 bytes.
//!
//! Its own test binary without the test harness (`harness = false` in Cargo.toml): the allocator
//! counts every thread, so nothing else may run while a path is measured. The counting allocator
//! is `stats_alloc`'s, since ritmo forbids `unsafe` and a `GlobalAlloc` implementation needs it.

use std::alloc::System;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use ritmo::server::{BlockingExt, CoarseClock, StdClock};
use ritmo::{Config, Event, Listener, ManualClock, RateLimiter, Registry};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Calls per path.
const CALLS: u32 = 1000;

/// Runs `call` once unmeasured (anything lazily set up on first use is not a per-call cost),
/// then `CALLS` times measured; fails unless nothing was allocated.
fn assert_no_allocation(path: &str, mut call: impl FnMut()) {
    call();
    let region = Region::new(GLOBAL);
    for _ in 0..CALLS {
        call();
    }
    let stats = region.change();
    println!(
        "{path:<44} {} allocations, {} reallocations, {} bytes in {CALLS} calls",
        stats.allocations, stats.reallocations, stats.bytes_allocated
    );
    assert_eq!(
        (
            stats.allocations,
            stats.reallocations,
            stats.bytes_allocated
        ),
        (0, 0, 0),
        "{path} allocated"
    );
}

fn config(permits: u32, period: Duration) -> Config {
    Config::new(permits, period).expect("a valid config")
}

#[derive(Debug)]
struct Counting(AtomicU64);

impl Listener for Counting {
    fn on_event(&self, _event: &Event) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

static EVENTS: Counting = Counting(AtomicU64::new(0));

fn core_paths() {
    let clock = ManualClock::new();
    let max_wait = Duration::from_secs(1);

    let unlimited = RateLimiter::new("admitted", config(u32::MAX, Duration::from_secs(5)), &clock);
    assert_no_allocation("try_acquire, admitted", || {
        assert!(unlimited.try_acquire().is_ok());
    });
    assert_no_allocation("try_acquire_n(3), admitted", || {
        assert!(unlimited.try_acquire_n(3).is_ok());
    });
    assert_no_allocation("try_acquire_n(0), invalid", || {
        assert!(unlimited.try_acquire_n(0).is_err());
    });

    let spent = RateLimiter::new("rejected", config(1, Duration::from_secs(3600)), &clock);
    spent.try_acquire().unwrap();
    assert_no_allocation("try_acquire, rejected (the error kept)", || {
        let err = spent.try_acquire().unwrap_err();
        assert_eq!(err.id(), "rejected");
    });
    assert_no_allocation("try_acquire, rejected, error displayed to a sink", || {
        use std::fmt::Write;
        struct Sink;
        impl Write for Sink {
            fn write_str(&mut self, _: &str) -> std::fmt::Result {
                Ok(())
            }
        }
        let err = spent.try_acquire().unwrap_err();
        write!(Sink, "{err}").unwrap();
    });
    assert_no_allocation("reserve, rejected beyond max_wait", || {
        assert!(spent.reserve().is_err());
    });

    let heard = RateLimiter::new("listened", config(1, Duration::from_secs(3600)), &clock)
        .with_listener(&EVENTS);
    heard.try_acquire().unwrap();
    assert_no_allocation("try_acquire, rejected, listener installed", || {
        assert!(heard.try_acquire().is_err());
    });

    let paced = RateLimiter::new(
        "paced",
        config(10, Duration::from_secs(1)).with_max_wait(max_wait),
        &clock,
    );
    assert_no_allocation("reserve then commit (reserved)", || {
        paced.reserve().unwrap().commit();
        clock.advance(Duration::from_millis(100)); // one permit back for the next call
    });
    assert_no_allocation("reserve then cancel (refunded)", || {
        assert!(paced.reserve().unwrap().cancel());
    });
    assert_no_allocation("reserve then drop (refunded)", || {
        drop(paced.reserve().unwrap());
    });
    while paced.try_acquire().is_ok() {} // the burst spent: every acquire below waits
    assert_no_allocation("acquire on ManualClock (waited)", || {
        let before = ritmo::Clock::now(&clock);
        paced.acquire_advancing().unwrap();
        assert!(
            ritmo::Clock::now(&clock) > before,
            "the call waited for its slot"
        );
    });
    assert_no_allocation("acquire_n(2) on ManualClock (waited)", || {
        paced.acquire_n_advancing(2).unwrap();
    });
    assert_no_allocation("available_permits, retry_after, snapshot", || {
        let _ = (
            paced.available_permits(),
            paced.retry_after(),
            paced.snapshot(),
        );
    });
}

fn registry_paths() {
    let clock = ManualClock::new();
    let registry: Registry<&ManualClock, 4> = Registry::new(&clock);
    let five = config(5, Duration::from_secs(1)).with_max_wait(Duration::from_secs(1));
    let handle = registry.get_or_create("geocoding", five).unwrap();
    assert_no_allocation("registry handle: acquire (waited)", || {
        handle.acquire_advancing().unwrap();
    });
    assert_no_allocation("registry handle: try_acquire_n(5) (rejected)", || {
        handle.try_acquire_n(5).unwrap_err();
    });
    assert_no_allocation("registry: get_or_create of an existing id", || {
        assert!(std::ptr::eq(
            registry.get_or_create("geocoding", five).unwrap(),
            handle
        ));
    });
    assert_no_allocation("registry: get and snapshots", || {
        assert_eq!(registry.get("geocoding").unwrap().snapshot().permits, 5);
        assert_eq!(registry.snapshot().len(), 1);
    });
}

fn std_paths() {
    let clock = StdClock::new();
    let unlimited = RateLimiter::with_clock(
        "std",
        config(u32::MAX, Duration::from_nanos(u64::from(u32::MAX))),
        clock.clone(),
    );
    assert_no_allocation("StdClock: try_acquire, admitted", || {
        assert!(unlimited.try_acquire().is_ok());
    });
    // 10 000 per second with a wait of up to 1 s: after the burst every call parks for its slot
    // (about 100 µs), so the measured calls wait for real.
    let paced = RateLimiter::with_clock(
        "std-paced",
        config(10_000, Duration::from_secs(1)).with_max_wait(Duration::from_secs(1)),
        clock,
    );
    paced.try_acquire_n(10_000).unwrap();
    assert_no_allocation("StdClock: blocking acquire (waited)", || {
        BlockingExt::acquire(&paced).unwrap();
    });
    assert_no_allocation("StdClock: call wrapper", || {
        assert_eq!(paced.call(|| 7).unwrap(), 7);
    });
}

fn coarse_paths() {
    // The upkeep thread refreshes the reading while the calls run: it allocates nothing either
    // (the counting allocator sees every thread).
    let clock = CoarseClock::with_resolution(Duration::from_micros(50)).unwrap();
    // The upkeep thread's start-up (std names the OS thread: one small allocation, once) and its
    // first park must be over before anything is measured: wait until the thread itself has
    // moved the reading twice.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    for _ in 0..2 {
        let before = ritmo::Clock::now(&clock);
        while ritmo::Clock::now(&clock) == before {
            assert!(
                std::time::Instant::now() < deadline,
                "the upkeep thread never ran"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let unlimited = RateLimiter::with_clock(
        "coarse",
        config(u32::MAX, Duration::from_nanos(u64::from(u32::MAX))),
        clock.clone(),
    );
    assert_no_allocation("CoarseClock: try_acquire, admitted", || {
        assert!(unlimited.try_acquire().is_ok());
    });
    let hourly =
        RateLimiter::with_clock("coarse-hourly", config(1, Duration::from_secs(3600)), clock);
    hourly.try_acquire().unwrap();
    assert_no_allocation("CoarseClock: try_acquire, rejected", || {
        assert!(hourly.try_acquire().is_err());
    });
}

/// Keyed limiters: the fixed table never allocates; the std map allocates only to hold a new
/// key, never on a key it holds (admitted, rejected, reserved, peeked) or a refusal for room.
fn keyed_paths() {
    use ritmo::keyed::KeyedLimiter;
    use ritmo::server::KeyedRateLimiter;
    let clock = ManualClock::new();
    let table: KeyedLimiter<u64, &ManualClock, 64> =
        KeyedLimiter::with_clock("keyed", config(1, Duration::from_millis(1)), &clock, 7);
    let mut key = 0u64;
    assert_no_allocation("keyed table: new keys, idle ones reclaimed", || {
        key += 1;
        assert!(table.try_acquire(&key).is_ok());
        clock.advance_ticks(100_000); // a key is idle again after 1 ms: 10 live at a time
    });
    let map = KeyedRateLimiter::with_clock(
        "keyed",
        config(u32::MAX, Duration::from_nanos(u64::from(u32::MAX)))
            .with_max_wait(Duration::from_secs(1)),
        4,
        &clock,
    );
    for key in 0..4u64 {
        map.try_acquire(&key).unwrap();
    }
    assert_no_allocation("keyed map: try_acquire of a held key, admitted", || {
        assert!(map.try_acquire(&2).is_ok());
    });
    assert_no_allocation("keyed map: reserve then cancel, peeks", || {
        assert!(map.reserve_n(&3, 2).unwrap().cancel());
        assert!(map.available_permits(&3) > 0);
        assert_eq!(map.retry_after(&3), Duration::ZERO);
    });
    let hourly =
        KeyedRateLimiter::with_clock("keyed", config(1, Duration::from_secs(3600)), 1, &clock);
    hourly.try_acquire(&1u64).unwrap();
    assert_no_allocation("keyed map: rejected, and refused for room", || {
        assert!(hourly.try_acquire(&1).is_err());
        assert!(hourly.try_acquire(&2).is_err());
    });
}

fn main() {
    core_paths();
    registry_paths();
    std_paths();
    coarse_paths();
    keyed_paths();
    println!("tests/alloc.rs: no path allocated");
}
