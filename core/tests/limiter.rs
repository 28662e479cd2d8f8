//! The limiter's behaviour on a fake clock: the design page's scenarios, waiting, reservations,
//! several permits at once, peeking, disabled limiters, listeners.

use core::time::Duration;

use ritmo_core::{AcquireError, AdvanceClock, Clock, Event, ManualClock, RateLimiter, Reason};

mod support;
use support::{InterruptAtOnce, Recorder, config, parts};

const MS: u64 = 1_000_000;

#[test]
fn design_page_scenario_burst_then_one_every_100ms() {
    let clock = ManualClock::new();
    let search = RateLimiter::new("search", config(10, Duration::from_secs(1)), &clock);
    for i in 0..10 {
        assert!(search.try_acquire().is_ok(), "call {i} of the burst");
    }
    let err = search.try_acquire().unwrap_err();
    assert_eq!(err.reason(), Reason::NoPermitInTime);
    assert_eq!(err.id(), "search");
    assert_eq!(err.retry_after(), Duration::from_millis(100));

    clock.advance(Duration::from_millis(100));
    assert!(search.try_acquire().is_ok());
    assert!(search.try_acquire().is_err());
}

#[test]
fn permits_are_evenly_spaced_at_the_steady_rate() {
    let clock = ManualClock::new();
    let l = RateLimiter::new("x", config(10, Duration::from_secs(1)), &clock);
    l.try_acquire_n(10).unwrap();
    for _ in 0..50 {
        clock.advance(Duration::from_millis(99));
        assert!(l.try_acquire().is_err(), "a permit came early");
        clock.advance(Duration::from_millis(1));
        assert!(l.try_acquire().is_ok(), "the permit did not come on time");
    }
}

#[test]
fn unused_permits_accumulate_up_to_permits_only() {
    let clock = ManualClock::new();
    let l = RateLimiter::new("x", config(4, Duration::from_secs(1)), &clock);
    l.try_acquire_n(4).unwrap();
    clock.advance(Duration::from_secs(60)); // a long quiet moment
    assert_eq!(l.available_permits(), 4);
    for _ in 0..4 {
        l.try_acquire().unwrap();
    }
    assert!(l.try_acquire().is_err());
}

#[test]
fn one_period_can_see_twice_permits() {
    let clock = ManualClock::new();
    let l = RateLimiter::new("x", config(10, Duration::from_secs(1)), &clock);
    let mut admitted = 0;
    // Every 10 ms for one period (inclusive of both ends), take what is there.
    for _ in 0..=100 {
        while l.try_acquire().is_ok() {
            admitted += 1;
        }
        clock.advance(Duration::from_millis(10));
    }
    assert_eq!(admitted, 20); // the burst of 10, then 10 more at the steady rate
}

#[test]
fn max_wait_scenario_waits_200_then_400_then_rejects() {
    let clock = ManualClock::new();
    let cfg = config(5, Duration::from_secs(1)).with_max_wait(Duration::from_millis(500));
    let l = RateLimiter::new("geocoding", cfg, &clock);
    for _ in 0..5 {
        let r = l.reserve().unwrap();
        assert_eq!(r.wait_time(), Duration::ZERO);
        r.commit();
    }
    let first = l.reserve().unwrap();
    assert_eq!(first.wait_time(), Duration::from_millis(200));
    let second = l.reserve().unwrap();
    assert_eq!(second.wait_time(), Duration::from_millis(400));

    let before = l.snapshot();
    let before_wait = l.retry_after();
    let err = l.reserve().unwrap_err();
    assert_eq!(err.reason(), Reason::NoPermitInTime);
    assert_eq!(err.retry_after(), Duration::from_millis(600));
    // Rejected at once, leaving the state unchanged.
    assert_eq!(clock.now(), 0);
    assert_eq!(l.snapshot(), before);
    assert_eq!(l.retry_after(), before_wait);
    first.commit();
    second.commit();
    // The next reservation still finds the 600 ms slot free: nothing was taken by the rejection.
    assert!(
        l.reserve_n_within(1, Duration::from_millis(600))
            .is_ok_and(|r| {
                let w = r.wait_time();
                r.commit();
                w == Duration::from_millis(600)
            })
    );
}

#[test]
fn acquire_on_a_manual_clock_advances_it_to_each_slot_in_order() {
    let clock = ManualClock::new();
    let cfg = config(5, Duration::from_secs(1)).with_max_wait(Duration::from_millis(500));
    let l = RateLimiter::new("geocoding", cfg, &clock);
    let mut times = Vec::new();
    for _ in 0..8 {
        l.acquire_advancing().unwrap();
        times.push(clock.now() / MS);
    }
    assert_eq!(times, [0, 0, 0, 0, 0, 200, 400, 600]);
}

#[test]
fn a_call_that_would_wait_too_long_is_rejected_without_waiting() {
    let clock = ManualClock::new();
    let cfg = config(1, Duration::from_secs(1)).with_max_wait(Duration::from_millis(999));
    let l = RateLimiter::new("x", cfg, &clock);
    l.acquire_advancing().unwrap();
    let err = l.acquire_advancing().unwrap_err();
    assert_eq!(err.retry_after(), Duration::from_secs(1));
    assert_eq!(clock.now(), 0, "a rejected call must not wait");
}

#[test]
fn several_permits_at_once() {
    let clock = ManualClock::new();
    let cfg = config(10, Duration::from_secs(1)).with_max_wait(Duration::from_secs(1));
    let l = RateLimiter::new("uart", cfg, &clock);
    l.try_acquire_n(7).unwrap();
    let err = l.try_acquire_n(4).unwrap_err();
    let AcquireError::RateLimited(err) = err else {
        panic!("expected a rejection, got {err:?}")
    };
    assert_eq!(err.retry_after(), Duration::from_millis(100));
    l.try_acquire_n(3).unwrap();
    // k permits reserve as one unit: the slot is the last permit's.
    let r = l.reserve_n(5).unwrap();
    assert_eq!(r.wait_time(), Duration::from_millis(500));
    assert_eq!(r.permits(), 5);
    r.commit();
    // k = 0 and k > permits are errors at once, not rejections to retry.
    for k in [0, 11, u32::MAX] {
        match l.try_acquire_n(k) {
            Err(AcquireError::InvalidPermits(e)) => {
                assert_eq!((e.requested(), e.permits()), (k, 10));
            }
            other => panic!("k = {k}: {other:?}"),
        }
        assert!(matches!(
            l.reserve_n(k),
            Err(AcquireError::InvalidPermits(_))
        ));
        assert!(l.retry_after_n(k).is_err());
    }
}

#[test]
fn peeking_takes_nothing() {
    let clock = ManualClock::new();
    let l = RateLimiter::new("x", config(10, Duration::from_secs(1)), &clock);
    l.try_acquire_n(10).unwrap();
    clock.advance(Duration::from_millis(250));
    for _ in 0..3 {
        assert_eq!(l.available_permits(), 2);
        assert_eq!(l.retry_after(), Duration::ZERO);
        assert_eq!(l.retry_after_n(3).unwrap(), Duration::from_millis(50));
    }
    assert_eq!(parts(l.snapshot()), ("x", 2, 10));
    l.try_acquire_n(2).unwrap();
    assert_eq!(l.available_permits(), 0);
    assert_eq!(l.retry_after(), Duration::from_millis(50));
}

#[test]
fn retry_after_is_rounded_up_and_waiting_that_long_succeeds() {
    for permits in [3u32, 7, 9, 11, 13] {
        let clock = ManualClock::new();
        let l = RateLimiter::new("x", config(permits, Duration::from_secs(1)), &clock);
        l.try_acquire_n(permits).unwrap();
        for _ in 0..20 {
            let wait = l.try_acquire().unwrap_err().retry_after();
            assert!(wait.as_nanos() * permits as u128 >= 1_000_000_000);
            clock.advance(wait - Duration::from_nanos(1));
            assert!(l.try_acquire().is_err(), "admitted before retry_after");
            clock.advance(Duration::from_nanos(1));
            assert!(l.try_acquire().is_ok(), "not admitted after retry_after");
        }
    }
}

#[test]
fn reservations_return_permits_only_from_the_tail() {
    let clock = ManualClock::new();
    let cfg = config(1, Duration::from_secs(1)).with_max_wait(Duration::from_secs(10));
    let l = RateLimiter::new("x", cfg, &clock);
    l.try_acquire().unwrap();
    let a = l.reserve().unwrap();
    let b = l.reserve().unwrap();
    assert_eq!(a.wait_time(), Duration::from_secs(1));
    assert_eq!(b.wait_time(), Duration::from_secs(2));
    drop(b); // the last reservation: its permit goes back
    let c = l.reserve().unwrap();
    assert_eq!(c.wait_time(), Duration::from_secs(2), "c takes b's slot");
    assert!(
        !a.cancel(),
        "c is queued behind a: a's slot must stay unused"
    );
    let d = l.reserve().unwrap();
    assert_eq!(d.wait_time(), Duration::from_secs(3));
    c.commit();
    d.commit();
}

#[test]
fn a_reservation_taken_at_once_and_dropped_gives_its_permit_back() {
    let clock = ManualClock::new();
    let l = RateLimiter::new("x", config(2, Duration::from_secs(1)), &clock);
    {
        let _r = l.reserve_n(2).unwrap();
        assert_eq!(l.available_permits(), 0);
    }
    assert_eq!(l.available_permits(), 2);
}

#[test]
fn an_interrupted_wait_fails_with_interrupted_and_returns_its_permit() {
    let clock = ManualClock::new();
    let cfg = config(1, Duration::from_secs(1)).with_max_wait(Duration::from_secs(5));
    let l = RateLimiter::new("x", cfg, &clock);
    l.try_acquire().unwrap();
    let err = l.acquire_with(&mut InterruptAtOnce).unwrap_err();
    assert_eq!(err.reason(), Reason::Interrupted);
    assert_eq!(err.retry_after(), Duration::from_secs(1));
    // It was the last reservation, so the next caller gets its slot.
    let r = l.reserve().unwrap();
    assert_eq!(r.wait_time(), Duration::from_secs(1));
    r.commit();
    // A call whose permit is there at once never waits, so it cannot be interrupted.
    clock.advance(Duration::from_secs(5));
    assert!(l.acquire_with(&mut InterruptAtOnce).is_ok());
    // Advancing waits work through the generic waiter too.
    assert!(l.acquire_with(&mut AdvanceClock).is_ok());
}

#[test]
fn disabled_limiters_let_everything_pass_and_count_nothing() {
    let clock = ManualClock::new();
    let l = RateLimiter::new(
        "off",
        config(1, Duration::from_secs(1)).with_enabled(false),
        &clock,
    );
    for _ in 0..1000 {
        l.try_acquire().unwrap();
        l.try_acquire_n(1).unwrap();
        l.reserve().unwrap().commit();
        l.acquire_advancing().unwrap();
    }
    assert_eq!(clock.now(), 0);
    assert_eq!(l.available_permits(), 1);
    assert_eq!(l.retry_after(), Duration::ZERO);
    // Asking for more than `permits` is still a mistake worth reporting.
    assert!(matches!(
        l.try_acquire_n(2),
        Err(AcquireError::InvalidPermits(_))
    ));
}

#[test]
fn listeners_see_rejections_and_released_reservations_but_not_admissions() {
    static EVENTS: Recorder = Recorder::new();
    let clock = ManualClock::new();
    let cfg = config(1, Duration::from_secs(1)).with_max_wait(Duration::from_secs(5));
    let l = RateLimiter::new("api", cfg, &clock).with_listener(&EVENTS);
    l.try_acquire().unwrap();
    assert!(EVENTS.take().is_empty(), "admissions publish nothing");
    let a = l.reserve().unwrap();
    let b = l.reserve().unwrap();
    assert!(l.reserve_n_within(1, Duration::ZERO).is_err());
    drop(a);
    drop(b);
    let events = EVENTS.take();
    assert_eq!(events.len(), 3);
    assert!(matches!(events[0], Event::Rejected(e) if e.retry_after() == Duration::from_secs(3)));
    assert_eq!(
        events[1],
        Event::Released {
            id: "api",
            permits: 1,
            reason: Reason::Cancelled,
            returned: false
        }
    );
    assert_eq!(
        events[2],
        Event::Released {
            id: "api",
            permits: 1,
            reason: Reason::Cancelled,
            returned: true
        }
    );
}

#[test]
fn a_static_limiter_on_a_static_clock() {
    static CLOCK: ManualClock = ManualClock::new();
    static LIMITER: RateLimiter<&ManualClock> = RateLimiter::new(
        "static",
        ritmo_core::const_config!(3, Duration::from_secs(3)),
        &CLOCK,
    );
    assert_eq!(LIMITER.available_permits(), 3);
    let threads: Vec<_> = (0..6)
        .map(|_| std::thread::spawn(|| LIMITER.try_acquire().is_ok()))
        .collect();
    let admitted = threads
        .into_iter()
        .filter(|_| true)
        .map(|t| t.join().unwrap())
        .filter(|ok| *ok)
        .count();
    assert_eq!(admitted, 3);
    assert_eq!(LIMITER.available_permits(), 0);
}

#[test]
fn coarse_clocks_keep_the_configured_rate() {
    // 1000 permits per second on a 32768 Hz clock: whole ticks would round 32.768 ticks per permit
    // up to 33 (0.7% slow: 993 permits in the 32769 ticks below); the limiter keeps a fraction of
    // a tick (rounded up, so never faster) and admits exactly the bound 1000 + 0 burst.
    let clock = ManualClock::<32_768>::with_reading(0);
    let l = RateLimiter::new("rtc", config(1000, Duration::from_secs(1)), &clock);
    l.try_acquire_n(1000).unwrap();
    let mut admitted = 0;
    for _ in 0..32_769 {
        clock.advance_ticks(1);
        while l.try_acquire().is_ok() {
            admitted += 1;
        }
    }
    assert_eq!(admitted, 1000);
}
