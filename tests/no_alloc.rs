//! The hot paths allocate nothing: every call a server makes per request (admitted, rejected,
//! reserved and committed or cancelled, peeks, a registry lookup, std's `acquire` when the
//! permit is there) runs under a per-thread allocation counter that must read zero. (ritmo-core is `#![no_std]` without `alloc`, so it cannot allocate at all; this
//! shows that the std adapter's paths and the facade keep it that way.)

use std::time::Duration;

use ritmo::std::{BlockingExt, StdClock};
use ritmo::{Config, Registry};

fn allocations_in(work: impl FnOnce()) -> u64 {
    allocation_counter::measure(work).count_total
}

#[test]
fn hot_paths_allocate_nothing() {
    let config = Config::new(1_000, Duration::from_millis(1))
        .unwrap()
        .with_max_wait(Duration::from_millis(1));
    let limiter = ritmo::RateLimiter::with_clock("api", config, StdClock::new());
    static CLOCK: ritmo::ManualClock = ritmo::ManualClock::new();
    static REGISTRY: Registry<&ritmo::ManualClock, 4> = Registry::new(&CLOCK);
    REGISTRY.get_or_create("search", config).unwrap(); // creating may take the critical section
    let mut outcomes = [0u32; 2];
    let mut round = |i: u32| {
        outcomes[usize::from(limiter.try_acquire().is_ok())] += 1;
        let _ = limiter.try_acquire_n(1 + i % 4);
        if let Ok(r) = limiter.reserve() {
            if i.is_multiple_of(2) {
                r.commit()
            } else {
                let _ = r.cancel();
            }
        }
        let _ = (
            limiter.available_permits(),
            limiter.retry_after(),
            limiter.snapshot(),
        );
        // A blocking acquire, waiting (parked) when the permit is not there yet.
        let _ = BlockingExt::acquire(&limiter).map_err(|e| e.retry_after());
        let handle = REGISTRY.get_or_create("search", config).unwrap();
        let _ = (
            handle.try_acquire(),
            REGISTRY.get("search").unwrap().snapshot(),
        );
        let _ = REGISTRY.snapshot();
    };
    // Once per thread, a thread's first blocking wait creates its interrupt token and the
    // token's list of waiters (two allocations): do that first, on a limiter that must wait.
    let warm = ritmo::RateLimiter::with_clock(
        "warm",
        Config::new(1, Duration::from_millis(1))
            .unwrap()
            .with_max_wait(Duration::from_millis(10)),
        StdClock::new(),
    );
    warm.try_acquire().unwrap();
    BlockingExt::acquire(&warm).unwrap();
    let count = allocations_in(|| (0..20_000).for_each(&mut round));
    assert_eq!(count, 0, "{count} allocations on the hot paths");
    // Both outcomes were exercised (the limiter was both admitting and rejecting).
    assert!(outcomes[0] > 0 && outcomes[1] > 0, "{outcomes:?}");
    // The counter itself works: an allocation is seen.
    assert_eq!(
        allocations_in(|| drop(std::hint::black_box(Box::new(1u8)))),
        1
    );
}
