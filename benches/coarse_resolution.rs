//! How `CoarseClock`'s resolution trades lag against the upkeep thread's CPU: the measurement
//! behind `CoarseClock::DEFAULT_RESOLUTION`.
//!
//! For each resolution, one clock runs for a while; a sampler thread compares the cached reading
//! with `InstantClock` (the clock it caches) at irregular moments, and the upkeep thread's CPU
//! time and wake-ups come from `/proc/self/task/<tid>/schedstat` (Linux; elsewhere those columns
//! read "n/a").
//!
//! ```text
//! cargo bench --bench coarse_resolution                 # 2 s per resolution
//! cargo bench --bench coarse_resolution -- 500us 1ms    # only these
//! ```

use std::time::{Duration, Instant};

use ritmo::Clock;
use ritmo::server::{CoarseClock, InstantClock};

const RUN: Duration = Duration::from_secs(2);

/// (CPU ns, wake-ups) of the thread named `ritmo-coarse-clock`, if Linux says.
fn upkeep_schedstat() -> Option<(u64, u64)> {
    for task in std::fs::read_dir("/proc/self/task").ok()? {
        let dir = task.ok()?.path();
        let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        if comm.trim() == "ritmo-coarse-c" || comm.trim().starts_with("ritmo-coarse") {
            let stat = std::fs::read_to_string(dir.join("schedstat")).ok()?;
            let mut fields = stat.split_whitespace().map(|f| f.parse::<u64>().ok());
            let cpu = fields.next()??;
            let _wait = fields.next()??;
            let slices = fields.next()??;
            return Some((cpu, slices));
        }
    }
    None
}

fn parse(arg: &str) -> Option<Duration> {
    let (digits, unit) = arg.split_at(arg.find(|c: char| !c.is_ascii_digit())?);
    let n: u64 = digits.parse().ok()?;
    match unit {
        "us" => Some(Duration::from_micros(n)),
        "ms" => Some(Duration::from_millis(n)),
        _ => None,
    }
}

fn main() {
    let args: Vec<Duration> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .filter_map(|a| parse(&a))
        .collect();
    let resolutions = if args.is_empty() {
        [50, 100, 250, 500, 1000]
            .map(Duration::from_micros)
            .to_vec()
    } else {
        args
    };
    println!(
        "{:>10} {:>10} {:>10} {:>10} {:>12} {:>12}",
        "resolution", "mean lag", "p99 lag", "max lag", "upkeep CPU", "wake-ups/s"
    );
    for resolution in resolutions {
        let clock = CoarseClock::with_resolution(resolution).expect("a non-zero resolution");
        std::thread::sleep(Duration::from_millis(20));
        let before = upkeep_schedstat();
        let start = Instant::now();
        let mut lags = Vec::new();
        let mut step = 1u64;
        while start.elapsed() < RUN {
            let coarse = clock.now();
            let real = InstantClock.now();
            lags.push(real.saturating_sub(coarse));
            // Irregular sampling moments: 7 to 97 µs apart.
            step = (step * 1_103_515_245 + 12_345) % 91;
            std::thread::sleep(Duration::from_micros(7 + step));
        }
        let elapsed = start.elapsed();
        let after = upkeep_schedstat();
        drop(clock);
        lags.sort_unstable();
        let mean = lags.iter().sum::<u64>() / lags.len() as u64;
        let p99 = lags[lags.len() * 99 / 100];
        let max = *lags.last().expect("samples");
        let (cpu, wakes) = match (before, after) {
            (Some((c0, s0)), Some((c1, s1))) => (
                format!(
                    "{:.2} %",
                    (c1 - c0) as f64 / elapsed.as_nanos() as f64 * 100.0
                ),
                format!("{:.0}", (s1 - s0) as f64 / elapsed.as_secs_f64()),
            ),
            _ => ("n/a".into(), "n/a".into()),
        };
        println!(
            "{:>10?} {:>10?} {:>10?} {:>10?} {:>12} {:>12}",
            resolution,
            Duration::from_nanos(mean),
            Duration::from_nanos(p99),
            Duration::from_nanos(max),
            cpu,
            wakes
        );
    }
}
