//! Soak: 8 threads hammer one limiter on the real clock (`StdClock`) for ~20 s, mixing every way
//! of taking a permit: blocking `acquire` on the thread's own interrupt token, waits on a shared
//! token, `try_acquire`, and async acquires dropped by a timeout before their slot; a ninth
//! thread fires the interrupts. Afterwards:
//! - the bound held over the whole run: admitted <= n + floor(elapsed / T), with the
//!   elapsed time read from the limiter's own clock (exact integer arithmetic);
//! - every attempt is accounted for: admitted + returned + rejected = attempted, and the limiter's
//!   listener saw exactly one event per rejected or given-up attempt;
//! - loosely, the limiter was kept busy (a quarter of the bound at least).
//!
//! Ignored by default (it is slow by design); `scripts/test-all` runs it:
//! `cargo test -p ritmo-std --all-features --test soak -- --ignored --nocapture`.
//! `RITMO_SOAK_SECS` sets the length (default 20).
#![cfg(feature = "tokio")]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use ritmo_core::{Clock, Config, Event, Listener, RateLimitExceeded, RateLimiter, Reason};
use ritmo_std::tokio::AsyncExt;
use ritmo_std::{BlockingExt, Interrupt, ParkWait, StdClock};

/// Permits per period: T = 2 ms, so about 500 permits a second.
const PERMITS: u32 = 50;
const PERIOD: Duration = Duration::from_millis(100);
const MAX_WAIT: Duration = Duration::from_millis(20);

#[derive(Default)]
struct Tally {
    attempted: AtomicU64,
    admitted: AtomicU64,
    /// Interrupted waits and async acquires dropped before their slot.
    returned: AtomicU64,
    /// Refused at once: no permit within `max_wait`.
    rejected: AtomicU64,
    /// Any other outcome (none is expected).
    unexpected: AtomicU64,
}

impl Tally {
    fn attempt(&self) {
        self.attempted.fetch_add(1, Ordering::Relaxed);
    }
    /// Counts the outcome, and returns how long a refused caller backs off, as a real client
    /// would (its `retry_after`, within bounds) instead of spinning.
    fn outcome(&self, result: Result<(), RateLimitExceeded>) -> Duration {
        let pause = match result {
            Ok(()) => Duration::ZERO,
            Err(e) => e
                .retry_after()
                .clamp(Duration::from_micros(100), Duration::from_millis(3)),
        };
        let counter = match result {
            Ok(()) => &self.admitted,
            Err(e) if e.reason() == Reason::NoPermitInTime => &self.rejected,
            Err(e) if e.reason() == Reason::Interrupted => &self.returned,
            Err(_) => &self.unexpected,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        pause
    }
    fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }
}

/// What the limiter itself reports: one event per rejection, one per reservation given up.
#[derive(Default)]
struct Events {
    rejected: AtomicU64,
    interrupted: AtomicU64,
    cancelled: AtomicU64,
}

impl Listener for Events {
    fn on_event(&self, event: &Event) {
        let counter = match event {
            Event::Rejected(_) => &self.rejected,
            Event::Released { reason, .. } if *reason == Reason::Interrupted => &self.interrupted,
            Event::Released { .. } => &self.cancelled,
            _ => return,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// A small deterministic generator, so each thread varies its pauses without a dependency.
struct XorShift(u64);

impl XorShift {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

#[test]
#[ignore = "soak on the real clock (~20 s); scripts/test-all runs it with --ignored"]
fn eight_threads_on_the_real_clock_never_beat_the_bound_and_lose_nothing() {
    let secs: u64 = std::env::var("RITMO_SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let events: &'static Events = Box::leak(Box::default());
    let config = Config::new(PERMITS, PERIOD)
        .unwrap()
        .with_max_wait(MAX_WAIT);
    let limiter = RateLimiter::with_clock("soak", config, StdClock::new()).with_listener(events);
    let limiter = &limiter;
    let tally = &Tally::default();
    let stop = &AtomicBool::new(false);
    let shared = &Interrupt::new();

    let start = limiter.clock().now();
    let wall = Instant::now();
    thread::scope(|s| {
        // Two threads: blocking acquire, interrupted through their own tokens.
        let (tokens_tx, tokens_rx) = mpsc::channel();
        for _ in 0..2 {
            let tokens_tx = tokens_tx.clone();
            s.spawn(move || {
                tokens_tx.send(Interrupt::current()).unwrap();
                drop(tokens_tx);
                while !stop.load(Ordering::Relaxed) {
                    tally.attempt();
                    let result = limiter.acquire();
                    if matches!(result, Err(e) if e.reason() == Reason::Interrupted) {
                        Interrupt::current().clear();
                    }
                    thread::sleep(tally.outcome(result));
                }
            });
        }
        // Two threads: waits that observe a shared token (a shutdown signal, say).
        for _ in 0..2 {
            s.spawn(move || {
                let mut wait = ParkWait::with_interrupt(shared);
                while !stop.load(Ordering::Relaxed) {
                    tally.attempt();
                    thread::sleep(tally.outcome(limiter.acquire_with(&mut wait)));
                }
            });
        }
        // Two threads: try_acquire, with short pauses.
        for seed in 1..=2u64 {
            s.spawn(move || {
                let mut rng = XorShift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
                while !stop.load(Ordering::Relaxed) {
                    tally.attempt();
                    let pause = tally.outcome(limiter.try_acquire());
                    thread::sleep(pause.max(Duration::from_micros(rng.below(400))));
                }
            });
        }
        // Two threads: async acquires on tokio, each given a random time to finish and dropped
        // when it runs out (before its slot, so its reservation goes back or stays unused).
        for seed in 3..=4u64 {
            s.spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_time()
                    .build()
                    .unwrap();
                let mut rng = XorShift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
                runtime.block_on(async {
                    while !stop.load(Ordering::Relaxed) {
                        tally.attempt();
                        let patience = Duration::from_micros(rng.below(25_000));
                        match tokio::time::timeout(patience, limiter.acquire_async()).await {
                            Ok(result) => tokio::time::sleep(tally.outcome(result)).await,
                            Err(_dropped) => {
                                tally.returned.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }
                });
            });
        }
        let own_tokens: Vec<Interrupt> = tokens_rx.iter().take(2).collect();
        // The interrupter: every few milliseconds, one blocking waiter or the shared token.
        s.spawn(move || {
            let mut rng = XorShift(0xDEAD_BEEF);
            while !stop.load(Ordering::Relaxed) {
                thread::sleep(Duration::from_micros(2_000 + rng.below(20_000)));
                match rng.below(3) {
                    2 => {
                        shared.interrupt();
                        thread::sleep(Duration::from_micros(200));
                        shared.clear();
                    }
                    i => own_tokens[i as usize].interrupt(),
                }
            }
        });
        thread::sleep(Duration::from_secs(secs));
        stop.store(true, Ordering::Relaxed);
        // Unblock anyone still waiting (at most MAX_WAIT anyway).
        shared.interrupt();
    });
    let end = limiter.clock().now();

    let attempted = Tally::get(&tally.attempted);
    let admitted = Tally::get(&tally.admitted);
    let returned = Tally::get(&tally.returned);
    let rejected = Tally::get(&tally.rejected);
    let elapsed_ticks = u128::from(end - start);
    let hz = u128::from(limiter.clock().tick_rate().hz());
    let period_ns = PERIOD.as_nanos();
    let n = u128::from(PERMITS);
    // admitted <= n + floor(elapsed / T), T = period / n, elapsed = ticks / hz seconds:
    // (admitted - n) * period_ns * hz <= elapsed_ticks * 1e9 * n.
    let bound = n + elapsed_ticks * 1_000_000_000 * n / (period_ns * hz);
    eprintln!(
        "soak: {:.1} s, {attempted} attempts: {admitted} admitted (bound {bound}), {returned} \
         returned, {rejected} rejected; events {} rejected, {} interrupted, {} cancelled",
        wall.elapsed().as_secs_f64(),
        Tally::get(&events.rejected),
        Tally::get(&events.interrupted),
        Tally::get(&events.cancelled),
    );
    assert!(
        u128::from(admitted) <= bound,
        "{admitted} admitted in {elapsed_ticks} ticks at {hz} Hz: bound {bound}"
    );
    assert_eq!(Tally::get(&tally.unexpected), 0);
    assert_eq!(admitted + returned + rejected, attempted);
    // The limiter's own account: every rejection and every given-up reservation was reported.
    assert_eq!(Tally::get(&events.rejected), rejected);
    assert_eq!(
        Tally::get(&events.interrupted) + Tally::get(&events.cancelled),
        returned
    );
    // Every kind of attempt happened, and the limiter was kept busy (loosely: the machine may be
    // loaded).
    assert!(returned > 0 && rejected > 0 && Tally::get(&events.cancelled) > 0);
    assert!(
        u128::from(admitted) * 4 >= bound,
        "only {admitted} admitted of {bound}"
    );
}
