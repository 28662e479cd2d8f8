//! Shows the GCRA limiter's behaviour on a fake clock, instantly and deterministically:
//! `cargo run --example quickstart`.
//!
//! 10 permits per second: a burst of 10 passes, the 11th is rejected, then one permit arrives
//! every 100 ms; a call allowed to wait 250 ms reserves its slot and waits in turn.

use core::time::Duration;

use ritmo::{Clock, Config, ManualClock, RateLimiter};

fn main() -> Result<(), ritmo::ConfigError> {
    let clock = ManualClock::new();
    let config = Config::new(10, Duration::from_secs(1))?;
    let search = RateLimiter::new("search", config, &clock);

    let ms = |c: &ManualClock| c.now() as f64 / 1e6;
    println!("limiter 'search': 10 permits per 1 s (one every 100 ms), burst of 10\n");
    for i in 1..=11 {
        match search.try_acquire() {
            Ok(()) => println!("t={:>6.1} ms  call {i:>2}: admitted", ms(&clock)),
            Err(e) => println!("t={:>6.1} ms  call {i:>2}: rejected ({e})", ms(&clock)),
        }
    }
    clock.advance(Duration::from_millis(100));
    for i in 12..=13 {
        match search.try_acquire() {
            Ok(()) => println!("t={:>6.1} ms  call {i:>2}: admitted", ms(&clock)),
            Err(e) => println!("t={:>6.1} ms  call {i:>2}: rejected ({e})", ms(&clock)),
        }
    }

    println!("\nwith max_wait = 250 ms, callers queue for their slots:");
    let waiting = RateLimiter::new(
        "search-wait",
        config.with_max_wait(Duration::from_millis(250)),
        &clock,
    );
    waiting
        .try_acquire_n(10)
        .expect("a fresh limiter holds its burst");
    for i in 1..=4 {
        match waiting.reserve() {
            Ok(r) => {
                println!(
                    "t={:>6.1} ms  caller {i}: waits {:?} for its slot",
                    ms(&clock),
                    r.wait_time()
                );
                r.commit();
            }
            Err(e) => println!(
                "t={:>6.1} ms  caller {i}: rejected at once ({e})",
                ms(&clock)
            ),
        }
    }
    println!("\navailable now: {:?}", waiting.snapshot());
    Ok(())
}
