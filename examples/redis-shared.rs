//! Two processes share one quota in Redis: 5 calls per second between them.
//!
//! ```sh
//! redis-server --port 6379 --save "" --appendonly no &    # any Redis or Valkey
//! cargo run --example redis-shared --features redis -- --url redis://127.0.0.1:6379/ --secs 3
//! ```
//!
//! The example starts itself twice (`--worker A`, `--worker B`); each worker tries a call every
//! 40 ms and reports what the limiter said, with the time on Redis's clock. The parent prints the
//! admissions side by side, in Redis's order, and checks that together they stayed within the
//! quota: at most `5 + floor(w / 200 ms)` in any window `w`.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ritmo::Config;

const PERMITS: u32 = 5;
const PERIOD: Duration = Duration::from_secs(1);

struct Args {
    url: String,
    secs: f64,
    worker: Option<String>,
}

fn args() -> Result<Args, String> {
    let mut args = Args {
        url: std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379/".into()),
        secs: 3.0,
        worker: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--url" => args.url = value()?,
            "--secs" => {
                let v = value()?;
                args.secs = v
                    .parse()
                    .ok()
                    .filter(|s: &f64| s.is_finite() && *s > 0.0 && *s <= 60.0)
                    .ok_or(format!(
                        "--secs {v}: a number of seconds, above 0 and at most 60"
                    ))?
            }
            "--worker" => args.worker = Some(value()?),
            "--help" | "-h" => {
                return Err(
                    "usage: redis-shared [--url redis://127.0.0.1:6379/] [--secs 3]".into(),
                );
            }
            other => return Err(format!("unknown argument {other:?} (try --help)")),
        }
    }
    Ok(args)
}

fn main() {
    let args = match args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}");
            std::process::exit(2);
        }
    };
    let result = match &args.worker {
        Some(name) => worker(&args, name),
        None => parent(&args),
    };
    if let Err(message) = result {
        eprintln!("redis-shared: {message}");
        std::process::exit(1);
    }
}

/// One process: a call every 40 ms for `secs`, each outcome printed as `<redis time us> <ok|no>`.
fn worker(args: &Args, name: &str) -> Result<(), String> {
    let config = Config::new(PERMITS, PERIOD).map_err(|e| e.to_string())?;
    let limiter = ritmo::redis::builder("redis-shared", config)
        .timeout(Duration::from_millis(500))
        .connect_blocking(args.url.as_str())
        .map_err(|e| e.to_string())?;
    // Both workers agree on the same start: wait for the peek to answer (the store is up).
    limiter
        .available_permits()
        .map_err(|e| format!("worker {name}: {e}"))?;
    let until = Instant::now() + Duration::from_secs_f64(args.secs);
    while Instant::now() < until {
        match limiter.try_acquire() {
            Ok(permit) => println!("{} ok", permit.store_time_micros().unwrap_or(0)),
            Err(e) if e.reason() == ritmo::Reason::NoPermitInTime => println!("- no"),
            Err(e) => return Err(format!("worker {name}: {e}")),
        }
        std::thread::sleep(Duration::from_millis(40));
    }
    Ok(())
}

/// Starts workers A and B, then prints their admissions side by side.
fn parent(args: &Args) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    // A fresh quota for this run, so that an earlier run does not count.
    let mut conn = ritmo::redis::redis::Client::open(args.url.as_str())
        .and_then(|c| c.get_connection_with_timeout(Duration::from_secs(2)))
        .map_err(|e| format!("cannot reach Redis at {}: {e}", args.url))?;
    let _: () = ritmo::redis::redis::cmd("DEL")
        .arg("{ritmo:redis-shared}")
        .query(&mut conn)
        .map_err(|e| e.to_string())?;

    let names = ["A", "B"];
    let children: Vec<_> = names
        .iter()
        .map(|name| {
            Command::new(&exe)
                .args([
                    "--worker",
                    name,
                    "--url",
                    &args.url,
                    "--secs",
                    &args.secs.to_string(),
                ])
                .stdout(Stdio::piped())
                .spawn()
                .map_err(|e| e.to_string())
        })
        .collect::<Result<_, _>>()?;
    let readers: Vec<_> = children
        .into_iter()
        .enumerate()
        .map(|(i, mut child)| {
            let stdout = child.stdout.take().expect("piped");
            std::thread::spawn(move || {
                let mut events = Vec::new();
                let (mut tried, mut refused) = (0u32, 0u32);
                for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                    tried += 1;
                    match line.split_once(' ') {
                        Some((at, "ok")) => events.push((at.parse::<u64>().unwrap_or(0), i)),
                        _ => refused += 1,
                    }
                }
                let ok = child.wait().is_ok_and(|s| s.success());
                (events, tried, refused, ok)
            })
        })
        .collect();
    let mut admissions = Vec::new();
    let mut totals = Vec::new();
    for reader in readers {
        let (events, tried, refused, ok) = reader.join().map_err(|_| "a reader panicked")?;
        if !ok {
            return Err("a worker failed".into());
        }
        totals.push((events.len(), tried, refused));
        admissions.extend(events);
    }
    admissions.sort_unstable();
    let Some(&(first, _)) = admissions.first() else {
        return Err("no admissions at all".into());
    };
    println!("{PERMITS} permits per {PERIOD:?}, shared by two processes\n");
    println!("{:>12}  {:<14}process B", "redis time", "process A");
    for &(at, who) in &admissions {
        let t = format!("{:.3} s", (at - first) as f64 / 1e6);
        let (a, b) = if who == 0 {
            ("admitted", "")
        } else {
            ("", "admitted")
        };
        println!("{}", format!("{t:>12}  {a:<14}{b}").trim_end());
    }
    println!();
    for (name, (admitted, tried, refused)) in names.iter().zip(&totals) {
        println!("process {name}: {admitted} admitted, {refused} refused of {tried} calls");
    }
    // The bound over every window, on Redis's clock.
    let t = PERIOD.as_micros() as u64 / PERMITS as u64;
    for i in 0..admissions.len() {
        for (j, &(b, _)) in admissions.iter().enumerate().skip(i) {
            let count = (j - i + 1) as u64;
            let w = b - admissions[i].0;
            if count > PERMITS as u64 + w / t {
                return Err(format!("{count} admissions in {w} us: over the quota"));
            }
        }
    }
    let span = admissions.last().map_or(0, |&(b, _)| b - first);
    println!(
        "together: {} admitted in {:.3} s of Redis time; the quota allows at most {} (5 + one per 200 ms)",
        admissions.len(),
        span as f64 / 1e6,
        PERMITS as u64 + span / t
    );
    Ok(())
}
