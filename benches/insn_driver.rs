//! The program `scripts/instructions` runs under callgrind: one call path per run, repeated `N`
//! times inside [`measured`], the only function whose instructions callgrind counts
//! (`--toggle-collect`). The script divides the count by `N` and subtracts the empty loop's
//! (path `empty`).
//!
//! Each call's result is consumed the way a caller that branches on it does (`.is_ok()`, kept
//! opaque with `black_box`); the `*_rejected_err` paths keep the whole error instead, as a caller
//! that returns it with `?` does.
//!
//! ```text
//! cargo bench --bench insn_driver --no-run     # build it
//! <binary> <path> [N]                          # run one path (scripts/instructions does this)
//! <binary>                                     # list the paths
//! ```

use std::hint::black_box;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use governor::clock::FakeRelativeClock;
use ritmo::server::{CoarseClock, StdClock};
use ritmo::{Clock, Event, Listener, ManualClock, RateLimitExceeded, RateLimiter, Registry};

mod support;
use support::{governor_hourly, governor_unlimited, ritmo_hourly, ritmo_unlimited};

type Governor<C = governor::clock::DefaultClock> = governor::RateLimiter<
    governor::state::NotKeyed,
    governor::state::InMemoryState,
    C,
    governor::middleware::NoOpMiddleware<<C as governor::clock::Clock>::Instant>,
>;

/// Calls `f` `n` times on `target`. Never inlined, so that callgrind can count exactly this.
#[inline(never)]
fn measured<T: ?Sized, R>(target: &T, n: u64, f: impl Fn(&T) -> R) {
    for _ in 0..n {
        black_box(f(black_box(target)));
    }
}

/// Counts events; installed to show that admitted calls never reach a listener.
#[derive(Debug)]
struct Counting(AtomicU64);

impl Listener for Counting {
    fn on_event(&self, _event: &Event) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

static EVENTS: Counting = Counting(AtomicU64::new(0));

/// The error of the wrapped API below.
#[derive(Debug)]
struct Busy;

impl From<RateLimitExceeded> for Busy {
    fn from(_: RateLimitExceeded) -> Self {
        Busy
    }
}

/// An API limited by the annotation, with the same quota as `ritmo_unlimited()`.
#[ritmo::limited]
trait Echo {
    #[rate_limited(permits = 4294967295, period = "4294967295ns")]
    fn echo(&self, x: u64) -> Result<u64, Busy>;
}

/// What the wrapper delegates to.
#[derive(Debug)]
struct Backend;

impl Echo for Backend {
    #[inline]
    fn echo(&self, x: u64) -> Result<u64, Busy> {
        Ok(x ^ 1)
    }
}

/// The same wrapper written by hand: `try_acquire()?`, then delegate.
#[derive(Debug)]
struct HandWrapped<'r> {
    inner: Backend,
    limiter: &'r RateLimiter<StdClock>,
}

impl Echo for HandWrapped<'_> {
    #[inline]
    fn echo(&self, x: u64) -> Result<u64, Busy> {
        self.limiter.try_acquire()?;
        self.inner.echo(x)
    }
}

const PATHS: &[(&str, &str)] = &[
    ("empty", "the loop alone, subtracted from every other path"),
    (
        "clock_read",
        "one read of the default clock (StdClock: the TSC through quanta)",
    ),
    ("ritmo_admitted", "try_acquire, default clock, admitted"),
    (
        "governor_admitted",
        "check, default (quanta) clock, admitted",
    ),
    ("ritmo_rejected", "try_acquire, default clock, rejected"),
    (
        "governor_rejected",
        "check, default (quanta) clock, rejected",
    ),
    ("ritmo_logic_admitted", "try_acquire, ManualClock, admitted"),
    (
        "governor_logic_admitted",
        "check, FakeRelativeClock, admitted",
    ),
    ("ritmo_logic_rejected", "try_acquire, ManualClock, rejected"),
    (
        "governor_logic_rejected",
        "check, FakeRelativeClock, rejected",
    ),
    (
        "ritmo_registry",
        "try_acquire through a registry's handle, default clock, admitted",
    ),
    (
        "ritmo_acquire_4",
        "try_acquire_n(4), default clock, admitted",
    ),
    (
        "governor_acquire_4",
        "check_n(4), default (quanta) clock, admitted",
    ),
    (
        "ritmo_rejected_err",
        "try_acquire, default clock, rejected, the error kept",
    ),
    (
        "governor_rejected_err",
        "check, default (quanta) clock, rejected, the error kept",
    ),
    (
        "ritmo_annotated",
        "a #[ritmo::limited] wrapper's method, registry on the default clock, admitted",
    ),
    (
        "ritmo_hand_wrapped",
        "the same wrapper written by hand (try_acquire()?, delegate), admitted",
    ),
    (
        "ritmo_admitted_listener",
        "try_acquire, default clock, admitted, listener installed",
    ),
    (
        "ritmo_rejected_listener",
        "try_acquire, default clock, rejected, listener installed",
    ),
    (
        "ritmo_reconfigured_admitted",
        "try_acquire on a reconfigured limiter, default clock, admitted",
    ),
    (
        "ritmo_reconfigured_rejected",
        "try_acquire on a reconfigured limiter, default clock, rejected",
    ),
    ("ritmo_reserve", "reserve + commit, default clock, admitted"),
    (
        "ritmo_reconfigured_reserve",
        "reserve + commit on a reconfigured limiter, default clock, admitted",
    ),
    ("ritmo_available", "available_permits, default clock"),
    (
        "ritmo_bands_admitted",
        "try_acquire on 2 bands, default clock, admitted",
    ),
    (
        "ritmo_bands_rejected",
        "try_acquire on 2 bands, default clock, rejected",
    ),
    (
        "ritmo_bands_reserve",
        "reserve + commit on 2 bands, default clock, admitted",
    ),
    (
        "coarse_clock_read",
        "one read of CoarseClock (the cached reading)",
    ),
    (
        "ritmo_coarse_admitted",
        "try_acquire, CoarseClock, admitted",
    ),
    (
        "governor_coarse_admitted",
        "check, QuantaUpkeepClock, admitted",
    ),
    (
        "ritmo_coarse_rejected",
        "try_acquire, CoarseClock, rejected",
    ),
    (
        "governor_coarse_rejected",
        "check, QuantaUpkeepClock, rejected",
    ),
];

/// governor on its upkeep clock, refreshed as often as ritmo's `CoarseClock`.
fn governor_upkeep(
    quota: governor::Quota,
) -> Result<Governor<governor::clock::QuantaUpkeepClock>, String> {
    let clock = governor::clock::QuantaUpkeepClock::from_interval(CoarseClock::DEFAULT_RESOLUTION)
        .map_err(|e| e.to_string())?;
    Ok(Governor::direct_with_clock(quota, clock))
}

fn run(path: &str, n: u64) -> Result<(), String> {
    let four = NonZeroU32::new(4).unwrap();
    let clock = StdClock::new();
    let expect = |ok: bool| {
        if ok {
            Ok(())
        } else {
            Err(format!(
                "{path}: the call after the loop took the wrong path"
            ))
        }
    };
    match path {
        "empty" => {
            // The same loop doing nothing but what every path does besides its call: store the
            // reference, load it back (`black_box`), store a one-word result.
            measured(&clock, n, std::ptr::from_ref);
            Ok(())
        }
        "clock_read" => {
            measured(&clock, n, |c| c.now());
            Ok(())
        }
        "ritmo_admitted" => {
            let l = RateLimiter::with_clock("insn", ritmo_unlimited(), clock);
            measured(&l, n, |l| l.try_acquire().is_ok());
            expect(l.try_acquire().is_ok())
        }
        "governor_admitted" => {
            let l = Governor::direct(governor_unlimited());
            measured(&l, n, |l| l.check().is_ok());
            expect(l.check().is_ok())
        }
        "ritmo_rejected" => {
            let l = RateLimiter::with_clock("insn", ritmo_hourly(), clock);
            l.try_acquire().map_err(|e| e.to_string())?;
            measured(&l, n, |l| l.try_acquire().is_ok());
            expect(l.try_acquire().is_err())
        }
        "governor_rejected" => {
            let l = Governor::direct(governor_hourly());
            l.check().map_err(|e| e.to_string())?;
            measured(&l, n, |l| l.check().is_ok());
            expect(l.check().is_err())
        }
        "ritmo_logic_admitted" => {
            let l = RateLimiter::new("insn", ritmo_unlimited(), ManualClock::new());
            measured(&l, n, |l| l.try_acquire().is_ok());
            expect(l.try_acquire().is_ok())
        }
        "governor_logic_admitted" => {
            let l = Governor::direct_with_clock(governor_unlimited(), FakeRelativeClock::default());
            measured(&l, n, |l| l.check().is_ok());
            expect(l.check().is_ok())
        }
        "ritmo_logic_rejected" => {
            let l = RateLimiter::new("insn", ritmo_hourly(), ManualClock::new());
            l.try_acquire().map_err(|e| e.to_string())?;
            measured(&l, n, |l| l.try_acquire().is_ok());
            expect(l.try_acquire().is_err())
        }
        "governor_logic_rejected" => {
            let l = Governor::direct_with_clock(governor_hourly(), FakeRelativeClock::default());
            l.check().map_err(|e| e.to_string())?;
            measured(&l, n, |l| l.check().is_ok());
            expect(l.check().is_err())
        }
        "ritmo_registry" => {
            let registry: Registry<StdClock, 4> = Registry::new(clock);
            let l = registry
                .get_or_create("geocoding", ritmo_unlimited())
                .map_err(|e| e.to_string())?;
            measured(l, n, |l| l.try_acquire().is_ok());
            expect(l.try_acquire().is_ok())
        }
        "ritmo_annotated" => {
            let registry: Registry<StdClock, 4> = Registry::new(clock);
            let api = EchoLimited::new(Backend, &registry).map_err(|e| e.to_string())?;
            measured(&api, n, |api| api.echo(black_box(7)).is_ok());
            expect(api.echo(7).is_ok())
        }
        "ritmo_hand_wrapped" => {
            let registry: Registry<StdClock, 4> = Registry::new(clock);
            let limiter = registry
                .get_or_create("echo", ritmo_unlimited())
                .map_err(|e| e.to_string())?;
            let api = HandWrapped {
                inner: Backend,
                limiter,
            };
            measured(&api, n, |api| api.echo(black_box(7)).is_ok());
            expect(api.echo(7).is_ok())
        }
        "ritmo_acquire_4" => {
            let l = RateLimiter::with_clock("insn", ritmo_unlimited(), clock);
            measured(&l, n, |l| l.try_acquire_n(4).is_ok());
            expect(l.try_acquire_n(4).is_ok())
        }
        "governor_acquire_4" => {
            let l = Governor::direct(governor_unlimited());
            measured(&l, n, |l| matches!(l.check_n(four), Ok(Ok(()))));
            expect(matches!(l.check_n(four), Ok(Ok(()))))
        }
        "ritmo_rejected_err" => {
            let l = RateLimiter::with_clock("insn", ritmo_hourly(), clock);
            l.try_acquire().map_err(|e| e.to_string())?;
            measured(&l, n, |l| l.try_acquire());
            expect(l.try_acquire().is_err())
        }
        "governor_rejected_err" => {
            let l = Governor::direct(governor_hourly());
            l.check().map_err(|e| e.to_string())?;
            measured(&l, n, |l| l.check());
            expect(l.check().is_err())
        }
        "ritmo_admitted_listener" => {
            let l =
                RateLimiter::with_clock("insn", ritmo_unlimited(), clock).with_listener(&EVENTS);
            measured(&l, n, |l| l.try_acquire().is_ok());
            expect(l.try_acquire().is_ok() && EVENTS.0.load(Ordering::Relaxed) == 0)
        }
        "ritmo_rejected_listener" => {
            let l = RateLimiter::with_clock("insn", ritmo_hourly(), clock).with_listener(&EVENTS);
            l.try_acquire().map_err(|e| e.to_string())?;
            measured(&l, n, |l| l.try_acquire().is_ok());
            expect(l.try_acquire().is_err() && EVENTS.0.load(Ordering::Relaxed) == n + 1)
        }
        "ritmo_reconfigured_admitted" => {
            let l = RateLimiter::with_clock("insn", ritmo_unlimited(), clock);
            l.reconfigure(ritmo_unlimited().with_max_wait(Duration::from_secs(1)));
            measured(&l, n, |l| l.try_acquire().is_ok());
            expect(l.try_acquire().is_ok())
        }
        "ritmo_reconfigured_rejected" => {
            let l = RateLimiter::with_clock("insn", ritmo_hourly(), clock);
            l.reconfigure(ritmo_hourly().with_max_wait(Duration::from_secs(1)));
            l.try_acquire().map_err(|e| e.to_string())?;
            measured(&l, n, |l| l.try_acquire().is_ok());
            expect(l.try_acquire().is_err())
        }
        "ritmo_reserve" => {
            let l = RateLimiter::with_clock("insn", ritmo_unlimited(), clock);
            measured(&l, n, |l| l.reserve().map(|r| r.commit()).is_ok());
            expect(l.try_acquire().is_ok())
        }
        "ritmo_reconfigured_reserve" => {
            let l = RateLimiter::with_clock("insn", ritmo_unlimited(), clock);
            l.reconfigure(ritmo_unlimited().with_max_wait(Duration::from_secs(1)));
            measured(&l, n, |l| l.reserve().map(|r| r.commit()).is_ok());
            expect(l.try_acquire().is_ok())
        }
        "ritmo_available" => {
            let l = RateLimiter::with_clock("insn", ritmo_unlimited(), clock);
            measured(&l, n, |l| l.available_permits());
            expect(l.try_acquire().is_ok())
        }
        "ritmo_bands_admitted" => {
            let l = ritmo::Bands::with_clock("insn", [ritmo_unlimited(); 2], clock);
            measured(&l, n, |l| l.try_acquire().is_ok());
            expect(l.try_acquire().is_ok())
        }
        "ritmo_bands_rejected" => {
            let l = ritmo::Bands::with_clock("insn", [ritmo_hourly(); 2], clock);
            l.try_acquire().map_err(|e| e.to_string())?;
            measured(&l, n, |l| l.try_acquire().is_ok());
            expect(l.try_acquire().is_err())
        }
        "ritmo_bands_reserve" => {
            let l = ritmo::Bands::with_clock("insn", [ritmo_unlimited(); 2], clock);
            measured(&l, n, |l| l.reserve().map(|r| r.commit()).is_ok());
            expect(l.try_acquire().is_ok())
        }
        "coarse_clock_read" => {
            let c = CoarseClock::new();
            measured(&c, n, |c| c.now());
            Ok(())
        }
        "ritmo_coarse_admitted" => {
            let l = RateLimiter::with_clock("insn", ritmo_unlimited(), CoarseClock::new());
            measured(&l, n, |l| l.try_acquire().is_ok());
            expect(l.try_acquire().is_ok())
        }
        "governor_coarse_admitted" => {
            let l = governor_upkeep(governor_unlimited())?;
            measured(&l, n, |l| l.check().is_ok());
            expect(l.check().is_ok())
        }
        "ritmo_coarse_rejected" => {
            let l = RateLimiter::with_clock("insn", ritmo_hourly(), CoarseClock::new());
            l.try_acquire().map_err(|e| e.to_string())?;
            measured(&l, n, |l| l.try_acquire().is_ok());
            expect(l.try_acquire().is_err())
        }
        "governor_coarse_rejected" => {
            let l = governor_upkeep(governor_hourly())?;
            l.check().map_err(|e| e.to_string())?;
            measured(&l, n, |l| l.check().is_ok());
            expect(l.check().is_err())
        }
        _ => Err(format!("unknown path {path:?}")),
    }
}

fn main() {
    // `cargo bench` and `cargo test --benches` run this binary too (with `--bench` or nothing):
    // then it lists its paths and exits.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let Some(path) = args.first() else {
        println!("insn_driver: run through scripts/instructions; paths:");
        for (name, what) in PATHS {
            println!("  {name:<26} {what}");
        }
        return;
    };
    let n = match args.get(1).map(|s| s.parse::<u64>()) {
        None => 1_000_000,
        Some(Ok(n)) => n,
        Some(Err(e)) => {
            eprintln!("insn_driver: bad count: {e}");
            std::process::exit(2);
        }
    };
    if path == "clock_kind" {
        // For scripts/instructions: whether the default clock reads the TSC here.
        let counter = StdClock::new().is_counter();
        println!("{}", if counter { "tsc" } else { "os" });
        return;
    }
    if let Err(e) = run(path, n) {
        eprintln!("insn_driver: {e}");
        std::process::exit(1);
    }
}
