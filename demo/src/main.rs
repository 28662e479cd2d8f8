//! See ritmo work on the real clock: `cargo run --release -p ritmo-demo`.
//!
//! Caller threads hammer one limiter for a few seconds; every 100 ms a line shows how many calls
//! were admitted at once (`#`), admitted after waiting for their slot (`+`) and rejected (`.`).
//! The first line shows the burst (up to `permits` at once), the rest the steady rate; a summary
//! checks the count against the bound `permits + floor(elapsed / T)`.
//!
//! ```text
//! cargo run --release -p ritmo-demo -- --permits 20 --period 1s --max-wait 50ms --callers 4
//! ```
//!
//! Flags: `--permits N`, `--period DUR`, `--max-wait DUR`, `--callers N`, `--duration DUR`,
//! `--pause DUR` (each caller's pause between calls); durations as ritmo's config takes them
//! (`500ms`, `2s`). Plain text, one line per tick: it reads the same piped into a file.

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use ritmo::server::{ParkWait, StdRateLimiter};
use ritmo::{Clock, Config, parse_duration};

const TICK: Duration = Duration::from_millis(100);
const BAR: u64 = 60;

struct Options {
    permits: u32,
    period: Duration,
    max_wait: Duration,
    callers: u32,
    duration: Duration,
    pause: Duration,
}

const HELP: &str = "\
ritmo demo: caller threads against one rate limiter, drawn live every 100 ms

usage: cargo run --release -p ritmo-demo -- [flags]
  --permits N       permits per period            (default 50)
  --period DUR      length of the period          (default 1s)
  --max-wait DUR    longest a call waits its turn (default 30ms)
  --callers N       caller threads                (default 8)
  --duration DUR    how long the callers run      (default 3s)
  --pause DUR       each caller's pause between calls (default 5ms)
durations: an integer and ns, us, ms, s, m, h or d (\"500ms\", \"2s\")";

/// Flags parsed with lexopt: `--flag value` and `--flag=value`, clear errors for unknown flags
/// and missing values, and no derive macros or dependency tree for a single example.
fn parse_args() -> Result<Options, String> {
    use lexopt::prelude::*;
    let mut o = Options {
        permits: 50,
        period: Duration::from_secs(1),
        max_wait: Duration::from_millis(30),
        callers: 8,
        duration: Duration::from_secs(3),
        pause: Duration::from_millis(5),
    };
    let duration = |v: std::ffi::OsString| -> Result<Duration, String> {
        let text = v.string().map_err(|e| e.to_string())?;
        parse_duration(&text).map_err(|e| e.to_string())
    };
    let number = |v: std::ffi::OsString, flag: &str| -> Result<u32, String> {
        let text = v.string().map_err(|e| e.to_string())?;
        text.parse()
            .map_err(|_| format!("{flag} takes a whole number, not {text:?}"))
    };
    let mut parser = lexopt::Parser::from_env();
    while let Some(arg) = parser.next().map_err(|e| e.to_string())? {
        match arg {
            Long("permits") => {
                o.permits = number(parser.value().map_err(|e| e.to_string())?, "--permits")?
            }
            Long("period") => o.period = duration(parser.value().map_err(|e| e.to_string())?)?,
            Long("max-wait") => o.max_wait = duration(parser.value().map_err(|e| e.to_string())?)?,
            Long("callers") => {
                o.callers = number(parser.value().map_err(|e| e.to_string())?, "--callers")?.max(1)
            }
            Long("duration") => o.duration = duration(parser.value().map_err(|e| e.to_string())?)?,
            Long("pause") => o.pause = duration(parser.value().map_err(|e| e.to_string())?)?,
            Short('h') | Long("help") => {
                println!("{HELP}");
                std::process::exit(0);
            }
            other => return Err(other.unexpected().to_string()),
        }
    }
    Ok(o)
}

#[derive(Default)]
struct Counts {
    admitted: AtomicU64,
    waited: AtomicU64,
    rejected: AtomicU64,
    waited_nanos: AtomicU64,
}

fn bar(count: u64, unit: u64, symbol: char) -> String {
    let width = count.div_ceil(unit).min(BAR) as usize;
    std::iter::repeat_n(symbol, width).collect()
}

fn main() {
    let o = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("error: {e}\n\n{HELP}");
            std::process::exit(2);
        }
    };
    let config = match Config::new(o.permits, o.period) {
        Ok(c) => c.with_max_wait(o.max_wait),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    let limiter: StdRateLimiter = ritmo::server::limiter("demo", config);
    let clock = limiter.clock();
    let interval = o.period / o.permits;

    println!(
        "ritmo demo: {} callers, one limiter of {} permits per {:?} (one every {:?}), max_wait {:?}, for {:?}",
        o.callers, o.permits, o.period, interval, o.max_wait, o.duration
    );
    println!(
        "clock: {} at {} ticks/s; each caller pauses {:?} between calls",
        if clock.is_counter() {
            "CPU counter (TSC)"
        } else {
            "OS monotonic clock"
        },
        clock.tick_rate().hz(),
        o.pause
    );
    // One `#`/`+` per call unless the busiest line (the burst plus a tick's permits) would not
    // fit; `.` scaled to the most calls the callers can offer in a tick.
    let per_tick = (TICK.as_nanos() / interval.as_nanos().max(1)) as u64;
    let unit = (u64::from(o.permits) + per_tick).div_ceil(BAR).max(1);
    let offered = u64::from(o.callers) * (TICK.as_nanos() / o.pause.as_nanos().max(50_000)) as u64;
    let reject_unit = offered.div_ceil(BAR / 2).max(1);
    println!(
        "each # = {unit} admitted at once, + = {unit} admitted after waiting, . = {reject_unit} rejected\n"
    );
    println!("  time  admitted  waited  rejected");

    let counts = Counts::default();
    let stop = AtomicBool::new(false);
    let started = Instant::now();
    let start_reading = clock.now();
    let mut totals = (0u64, 0u64, 0u64);
    thread::scope(|s| {
        for _ in 0..o.callers {
            s.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    match limiter.reserve() {
                        Ok(r) if r.wait_time().is_zero() => {
                            r.commit();
                            counts.admitted.fetch_add(1, Ordering::Relaxed);
                        }
                        Ok(r) => {
                            let wait = r.wait_time();
                            if r.wait_with(&mut ParkWait::new()).is_ok() {
                                counts.waited.fetch_add(1, Ordering::Relaxed);
                                counts
                                    .waited_nanos
                                    .fetch_add(wait.as_nanos() as u64, Ordering::Relaxed);
                            }
                        }
                        Err(_) => {
                            counts.rejected.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    thread::sleep(o.pause);
                }
            });
        }

        let ticks = (o.duration.as_nanos() / TICK.as_nanos()).max(1) as u32;
        let mut out = std::io::stdout().lock();
        for tick in 1..=ticks {
            let due = started + TICK * tick;
            thread::sleep(due.saturating_duration_since(Instant::now()));
            let a = counts.admitted.swap(0, Ordering::Relaxed);
            let w = counts.waited.swap(0, Ordering::Relaxed);
            let r = counts.rejected.swap(0, Ordering::Relaxed);
            totals = (totals.0 + a, totals.1 + w, totals.2 + r);
            let _ = writeln!(
                out,
                "{:>5.1}s {a:>9} {w:>7} {r:>9}  {}{}{}",
                (TICK * tick).as_secs_f64(),
                bar(a, unit, '#'),
                bar(w, unit, '+'),
                bar(r, reject_unit, '.'),
            );
            let _ = out.flush();
        }
        stop.store(true, Ordering::Relaxed);
    });
    // Callers that were waiting when the time was up finish their turn.
    let end_reading = clock.now();
    totals.0 += counts.admitted.load(Ordering::Relaxed);
    totals.1 += counts.waited.load(Ordering::Relaxed);
    totals.2 += counts.rejected.load(Ordering::Relaxed);

    let (at_once, waited, rejected) = totals;
    let admitted = at_once + waited;
    let elapsed = clock.tick_rate().duration_ceil(end_reading - start_reading);
    let bound = u64::from(o.permits)
        + (elapsed.as_nanos() * u128::from(o.permits) / o.period.as_nanos()) as u64;
    let configured = f64::from(o.permits) / o.period.as_secs_f64();
    let after_burst = admitted.saturating_sub(u64::from(o.permits)) as f64 / elapsed.as_secs_f64();
    let waited_nanos = counts.waited_nanos.load(Ordering::Relaxed);
    let mean_wait = Duration::from_nanos(waited_nanos.checked_div(waited).unwrap_or(0));
    println!(
        "\nsummary over {:.3} s of the limiter's clock:",
        elapsed.as_secs_f64()
    );
    println!(
        "  admitted {admitted}: {at_once} at once, {waited} after waiting (mean wait {mean_wait:.1?}); rejected {rejected}"
    );
    println!("  rate after the burst: {after_burst:.1} per second (configured {configured:.1})");
    println!(
        "  bound permits + floor(elapsed / T) = {bound}: {}",
        if admitted <= bound {
            "respected"
        } else {
            "EXCEEDED"
        }
    );
}
