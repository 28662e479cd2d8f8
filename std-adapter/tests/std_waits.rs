//! Blocking waits, interruption and call wrappers on real threads and the real clock.
//!
//! Assertions are on slots, ordering and reasons, never on how long something took, except the
//! two proofs on the real clock at the end (an exact upper bound plus a loose lower bound, and the
//! achieved rate), and a generous "an interrupted waiter wakes within a second".

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use ritmo_core::{
    AcquireError, Clock, Config, ManualClock, RateLimitExceeded, RateLimiter, Reason,
};
use ritmo_std::{BlockingExt, InstantClock, Interrupt, ParkWait, StdRateLimiter};

/// One permit per 10 s, waits of up to a minute: a waiter stays parked until interrupted.
fn slow_limiter() -> StdRateLimiter {
    let config = Config::new(1, Duration::from_secs(10))
        .unwrap()
        .with_max_wait(Duration::from_secs(60));
    let limiter = ritmo_std::limiter("slow", config);
    limiter.try_acquire().unwrap(); // spend the burst
    limiter
}

#[test]
fn an_interrupted_last_waiter_gives_its_slot_to_the_next_caller() {
    let limiter = &slow_limiter();
    let token = &Interrupt::new();
    thread::scope(|s| {
        let (tx, rx) = mpsc::channel();
        let waiter = s.spawn(move || {
            let reservation = limiter.reserve().unwrap();
            tx.send(reservation.slot()).unwrap();
            reservation.wait_with(&mut ParkWait::with_interrupt(token))
        });
        let slot = rx.recv().unwrap();
        token.interrupt();
        let interrupted_at = Instant::now();
        let err = waiter.join().unwrap().unwrap_err();
        assert!(interrupted_at.elapsed() < Duration::from_secs(1));
        assert_eq!(err.reason(), Reason::Interrupted);
        assert_eq!(err.id(), "slow");
        assert!(token.is_interrupted(), "the interruption stays observable");

        // It was the last reservation: its permit went back, the next caller gets its slot.
        let next = limiter.reserve().unwrap();
        assert_eq!(next.slot(), slot);
        next.commit();
    });
}

#[test]
fn an_interrupted_waiter_with_others_behind_it_leaves_its_slot_unused() {
    let limiter = &slow_limiter();
    thread::scope(|s| {
        // Each waiter sends its own thread's token and its slot, then parks in `acquire`-style
        // waiting on that token.
        let spawn_waiter = || {
            let (tx, rx) = mpsc::channel();
            let handle = s.spawn(move || {
                let reservation = limiter.reserve().unwrap();
                tx.send((Interrupt::current(), reservation.slot())).unwrap();
                let result = reservation.wait_with(&mut ParkWait::new());
                (result, Interrupt::current().is_interrupted())
            });
            let (token, slot) = rx.recv().unwrap();
            (handle, token, slot)
        };
        let (first, first_token, first_slot) = spawn_waiter();
        let (second, second_token, second_slot) = spawn_waiter();
        let interval = second_slot - first_slot;
        assert!(interval > 0);

        first_token.interrupt();
        let (result, still_flagged) = first.join().unwrap();
        assert_eq!(result.unwrap_err().reason(), Reason::Interrupted);
        assert!(still_flagged);

        // A later reservation was made: the first slot stays unused, the next caller queues
        // behind the second waiter.
        let next = limiter.reserve().unwrap();
        assert_eq!(next.slot(), second_slot + interval);
        assert!(next.cancel(), "the newest reservation was the last one");

        second_token.interrupt();
        let (result, _) = second.join().unwrap();
        assert_eq!(result.unwrap_err().reason(), Reason::Interrupted);
        // The second waiter was the last again: its slot comes back.
        let next = limiter.reserve().unwrap();
        assert_eq!(next.slot(), second_slot);
        next.commit();
    });
}

#[test]
fn one_shared_token_interrupts_every_thread_waiting_on_it() {
    let limiter = &slow_limiter();
    let shutdown = &Interrupt::new();
    thread::scope(|s| {
        let (tx, rx) = mpsc::channel();
        let waiters: Vec<_> = (0..3)
            .map(|_| {
                let tx = tx.clone();
                s.spawn(move || {
                    let reservation = limiter.reserve().unwrap();
                    tx.send(reservation.slot()).unwrap();
                    reservation.wait_with(&mut ParkWait::with_interrupt(shutdown))
                })
            })
            .collect();
        let mut slots: Vec<u64> = (0..3).map(|_| rx.recv().unwrap()).collect();
        slots.sort_unstable();
        shutdown.interrupt();
        for waiter in waiters {
            assert_eq!(
                waiter.join().unwrap().unwrap_err().reason(),
                Reason::Interrupted
            );
        }
        // Whatever order they gave up in, no slot is handed out twice: the next caller gets
        // one of theirs (each permit returned only while its waiter was the last).
        let next = limiter.reserve().unwrap();
        assert!(
            slots.contains(&next.slot()),
            "{} not in {slots:?}",
            next.slot()
        );
        next.commit();
    });
}

#[test]
fn acquire_observes_the_thread_token_and_a_set_flag_fails_waits_at_once() {
    let limiter = slow_limiter();
    thread::spawn(move || {
        Interrupt::current().interrupt();
        let reservation = limiter.reserve().unwrap();
        let slot = reservation.slot();
        let err = reservation.wait_with(&mut ParkWait::new()).unwrap_err();
        assert_eq!(err.reason(), Reason::Interrupted);
        // `acquire` sees the same flag; the permit went back both times.
        assert_eq!(limiter.acquire().unwrap_err().reason(), Reason::Interrupted);
        assert_eq!(limiter.reserve().unwrap().slot(), slot);
        // Cleared, the next wait is not cut short; a call that needs no wait never looks.
        assert!(Interrupt::current().clear());
        assert!(!Interrupt::current().is_interrupted());
    })
    .join()
    .unwrap();
}

#[test]
fn an_interrupted_call_never_runs_its_work() {
    let limiter = &slow_limiter();
    thread::scope(|s| {
        let (tx, rx) = mpsc::channel();
        let caller = s.spawn(move || {
            tx.send(Interrupt::current()).unwrap();
            let mut ran = false;
            let result = limiter.call(|| ran = true);
            (result, ran)
        });
        let token = rx.recv().unwrap();
        // Wait until the caller has reserved (the next slot moved 10 s further), then interrupt.
        while limiter.retry_after() < Duration::from_secs(11) {
            thread::yield_now();
        }
        token.interrupt();
        let (result, ran) = caller.join().unwrap();
        assert_eq!(result.unwrap_err().reason(), Reason::Interrupted);
        assert!(!ran);
    });
}

#[test]
fn spurious_unparks_do_not_end_a_wait_before_its_slot() {
    let config = Config::new(1, Duration::from_millis(200))
        .unwrap()
        .with_max_wait(Duration::from_secs(1));
    let limiter = &ritmo_std::limiter("unparked", config);
    limiter.try_acquire().unwrap();
    thread::scope(|s| {
        let (tx, rx) = mpsc::channel();
        let waiter = s.spawn(move || {
            let reservation = limiter.reserve().unwrap();
            let slot = reservation.slot();
            tx.send(()).unwrap();
            reservation.wait_with(&mut ParkWait::new()).unwrap();
            (slot, limiter.clock().now())
        });
        rx.recv().unwrap();
        while !waiter.is_finished() {
            waiter.thread().unpark();
            thread::sleep(Duration::from_millis(1));
        }
        let (slot, woke_at) = waiter.join().unwrap();
        assert!(woke_at >= slot);
    });
}

#[test]
fn waiting_callers_get_distinct_slots_in_reservation_order() {
    let config = Config::new(1, Duration::from_millis(5))
        .unwrap()
        .with_max_wait(Duration::from_secs(1));
    let limiter = RateLimiter::new("fifo", config, InstantClock);
    limiter.try_acquire().unwrap();
    let slots: Vec<(u64, u64)> = thread::scope(|s| {
        let waiters: Vec<_> = (0..6)
            .map(|_| {
                s.spawn(|| {
                    let reservation = limiter.reserve().unwrap();
                    let slot = reservation.slot();
                    reservation.wait_with(&mut ParkWait::new()).unwrap();
                    (slot, InstantClock.now())
                })
            })
            .collect();
        waiters.into_iter().map(|w| w.join().unwrap()).collect()
    });
    let mut sorted: Vec<u64> = slots.iter().map(|&(slot, _)| slot).collect();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), 6, "no two waiters share a slot");
    for (slot, woke_at) in slots {
        assert!(woke_at >= slot, "nobody runs before its slot");
    }
}

#[test]
fn call_wrappers_run_work_only_with_a_permit() {
    let clock = ManualClock::new();
    let limiter = RateLimiter::new(
        "calls",
        Config::new(2, Duration::from_secs(1)).unwrap(),
        &clock,
    );
    let runs = AtomicU64::new(0);
    let work = || runs.fetch_add(1, Ordering::SeqCst);
    assert!(BlockingExt::call(&limiter, work).is_ok());
    assert!(limiter.call_n(1, work).is_ok());
    let rejected = BlockingExt::call(&limiter, work).unwrap_err();
    assert_eq!(rejected.reason(), Reason::NoPermitInTime);
    assert!(matches!(
        limiter.call_n(3, work),
        Err(AcquireError::InvalidPermits(_))
    ));
    assert_eq!(runs.load(Ordering::SeqCst), 2);

    #[derive(Debug, PartialEq)]
    enum MyError {
        Limited(Reason),
        Invalid,
        Failed,
    }
    impl From<RateLimitExceeded> for MyError {
        fn from(e: RateLimitExceeded) -> Self {
            MyError::Limited(e.reason())
        }
    }
    impl From<AcquireError> for MyError {
        fn from(e: AcquireError) -> Self {
            e.rate_limited()
                .map_or(MyError::Invalid, |e| MyError::Limited(e.reason()))
        }
    }
    let failing = || -> Result<(), MyError> {
        runs.fetch_add(1, Ordering::SeqCst);
        Err(MyError::Failed)
    };
    assert_eq!(
        limiter.try_call(failing),
        Err(MyError::Limited(Reason::NoPermitInTime))
    );
    clock.advance(Duration::from_millis(500));
    assert_eq!(limiter.try_call_n(3, failing), Err(MyError::Invalid));
    assert_eq!(limiter.try_call_n(1, failing), Err(MyError::Failed));
    assert_eq!(runs.load(Ordering::SeqCst), 3);
}

#[test]
fn a_waiting_call_runs_at_its_slot() {
    let config = Config::new(2, Duration::from_millis(40))
        .unwrap()
        .with_max_wait(Duration::from_millis(200));
    let limiter = RateLimiter::new("waits", config, InstantClock);
    limiter.try_acquire_n(2).unwrap();
    let before = limiter.clock().now();
    let wait = limiter.retry_after_n(2).unwrap(); // read after `before`: slot >= before + wait
    assert!(wait > Duration::ZERO);
    let ran_at = limiter.call_n(2, || InstantClock.now()).unwrap();
    assert!(ran_at >= before + u64::try_from(wait.as_nanos()).unwrap());
}

/// `n + floor(elapsed / T)`, with `T = period / n` exact (not rounded to ticks).
fn bound(n: u32, period: Duration, hz: u64, elapsed_ticks: u64) -> u64 {
    let per = u128::from(hz) * period.as_nanos();
    let extra = u128::from(elapsed_ticks) * u128::from(n) * 1_000_000_000 / per;
    u64::from(n) + u64::try_from(extra).unwrap()
}

#[test]
fn stress_four_threads_stay_within_the_exact_bound() {
    let (n, period) = (1000, Duration::from_millis(100));
    let limiter = ritmo_std::limiter("stress", Config::new(n, period).unwrap());
    let clock = limiter.clock();
    let hz = clock.tick_rate().hz();
    let admitted = AtomicU64::new(0);
    let start = clock.now();
    let stop = start + clock.tick_rate().ticks_ceil(Duration::from_secs(1));
    thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                let mut mine = 0;
                while clock.now() < stop {
                    if limiter.try_acquire().is_ok() {
                        mine += 1;
                    }
                }
                admitted.fetch_add(mine, Ordering::Relaxed);
            });
        }
    });
    let end = clock.now();
    let admitted = admitted.into_inner();
    let bound = bound(n, period, hz, end - start);
    println!("stress: admitted {admitted}, bound {bound}");
    assert!(admitted <= bound, "admitted {admitted} > bound {bound}");
    assert!(
        admitted * 10 >= bound * 9,
        "admitted {admitted} < 90% of {bound}"
    );
}

#[test]
fn waiting_callers_achieve_the_configured_rate() {
    let (n, period) = (100, Duration::from_millis(100)); // 1000 per second, one per ms
    let config = Config::new(n, period)
        .unwrap()
        .with_max_wait(Duration::from_millis(100));
    let limiter = ritmo_std::limiter("rate", config);
    let clock = limiter.clock();
    let rate = clock.tick_rate();
    let admitted = AtomicU64::new(0);
    let start = clock.now();
    let stop = start + rate.ticks_ceil(Duration::from_secs(2));
    thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                let mut mine = 0;
                while clock.now() < stop {
                    match limiter.acquire() {
                        Ok(()) => mine += 1,
                        Err(e) => assert_eq!(e.reason(), Reason::NoPermitInTime),
                    }
                }
                admitted.fetch_add(mine, Ordering::Relaxed);
            });
        }
    });
    let end = clock.now();
    let admitted = admitted.into_inner();
    let bound = bound(n, period, rate.hz(), end - start);
    assert!(admitted <= bound, "admitted {admitted} > bound {bound}");
    let elapsed = rate.duration_ceil(end - start).as_secs_f64();
    let achieved = (admitted - u64::from(n)) as f64 / elapsed;
    let configured = f64::from(n) / period.as_secs_f64();
    let error = (achieved - configured).abs() / configured;
    println!(
        "rate: {achieved:.1}/s over {elapsed:.3} s, configured {configured}/s, error {:.3}%",
        error * 100.0
    );
    assert!(error < 0.02, "achieved {achieved}/s vs {configured}/s");
}
