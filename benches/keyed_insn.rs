//! Instructions per keyed call, ritmo beside governor, counted with callgrind as the difference
//! between two runs of one path (1 and 100,001 calls), so set-up and teardown cancel out:
//!
//! ```text
//! cargo bench --bench keyed_insn --no-run
//! B=$(ls -t target/release/deps/keyed_insn-* | grep -v '\.d$' | head -1)
//! for p in ritmo governor ritmo_fake governor_fake ritmo_rej governor_rej ritmo_new governor_new; do
//!   a=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null $B $p 1 2>&1 | grep -oP 'Collected : \K[0-9]+')
//!   b=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null $B $p 100001 2>&1 | grep -oP 'Collected : \K[0-9]+')
//!   echo "$p $(( (b - a) / 100000 ))"
//! done
//! ```
//!
//! Paths: a hot key in a map of 10,000 (`ritmo`, `governor`: default clocks; `*_fake`: fake
//! clocks, the map and the logic alone; `table_fake`: ritmo-core's fixed table; `tiered_fake`,
//! `tiered_table_fake`: the same with two tiers), a rejected hot key (`*_rej`; `ritmo_rej_fake` on
//! a fake clock), a new key each call (`*_new`).

use std::hint::black_box;
use std::num::NonZeroU32;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(which), Some(Ok(n))) = (args.get(1), args.get(2).map(|n| n.parse::<u64>())) else {
        println!("usage: keyed_insn <path> <calls> (see the source for the paths)");
        return;
    };
    let which = which.as_str();
    let cfg = ritmo::Config::new(
        u32::MAX,
        std::time::Duration::from_nanos(u64::from(u32::MAX)),
    )
    .unwrap();
    let quota = governor::Quota::per_second(NonZeroU32::MAX);
    match which {
        "ritmo" => {
            let m = ritmo::server::KeyedRateLimiter::new("b", cfg, usize::MAX);
            for k in 0..10_000u64 {
                m.try_acquire(&k).unwrap();
            }
            for _ in 0..n {
                black_box(m.try_acquire(black_box(&4242)).is_ok());
            }
        }
        "ritmo_fake" => {
            let m = ritmo::server::KeyedRateLimiter::with_clock(
                "b",
                cfg,
                usize::MAX,
                ritmo::ManualClock::new(),
            );
            for k in 0..10_000u64 {
                m.try_acquire(&k).unwrap();
            }
            for _ in 0..n {
                black_box(m.try_acquire(black_box(&4242)).is_ok());
            }
        }
        "table_fake" => {
            let m: Box<ritmo::KeyedLimiter<u64, ritmo::ManualClock, 16384>> = Box::new(
                ritmo::KeyedLimiter::with_clock("b", cfg, ritmo::ManualClock::new(), 1),
            );
            for k in 0..10_000u64 {
                m.try_acquire(&k).unwrap();
            }
            for _ in 0..n {
                black_box(m.try_acquire(black_box(&4242)).is_ok());
            }
        }
        "tiered_fake" | "tiered_table_fake" => {
            // Two tiers picked by a plain function: the cost of asking it and of the tier test.
            fn plan(key: &u64) -> usize {
                usize::from(*key % 2 == 1)
            }
            let tiers = ritmo::keyed::Tiers::new(
                [
                    ritmo::keyed::Tier::of(0, "free", cfg),
                    ritmo::keyed::Tier::of(1, "paid", cfg),
                ],
                plan,
            );
            if which == "tiered_fake" {
                let m = ritmo::server::KeyedRateLimiter::tiered_with_clock(
                    "b",
                    tiers,
                    usize::MAX,
                    ritmo::ManualClock::new(),
                );
                for k in 0..10_000u64 {
                    m.try_acquire(&k).unwrap();
                }
                for _ in 0..n {
                    black_box(m.try_acquire(black_box(&4242)).is_ok());
                }
            } else {
                let m: Box<ritmo::KeyedLimiter<u64, ritmo::ManualClock, 16384, _>> =
                    Box::new(ritmo::KeyedLimiter::tiered_with_clock(
                        "b",
                        tiers,
                        ritmo::ManualClock::new(),
                        1,
                    ));
                for k in 0..10_000u64 {
                    m.try_acquire(&k).unwrap();
                }
                for _ in 0..n {
                    black_box(m.try_acquire(black_box(&4242)).is_ok());
                }
            }
        }
        "governor" => {
            let g = governor::DefaultKeyedRateLimiter::<u64>::keyed(quota);
            for k in 0..10_000u64 {
                g.check_key(&k).unwrap();
            }
            for _ in 0..n {
                black_box(g.check_key(black_box(&4242)).is_ok());
            }
        }
        "governor_fake" => {
            let g = governor::RateLimiter::dashmap_with_clock(
                quota,
                governor::clock::FakeRelativeClock::default(),
            );
            for k in 0..10_000u64 {
                g.check_key(&k).unwrap();
            }
            for _ in 0..n {
                black_box(g.check_key(black_box(&4242)).is_ok());
            }
        }
        "ritmo_rej" => {
            let m = ritmo::server::KeyedRateLimiter::new(
                "b",
                ritmo::Config::new(1, std::time::Duration::from_secs(3600)).unwrap(),
                usize::MAX,
            );
            for k in 0..10_000u64 {
                m.try_acquire(&k).unwrap();
            }
            for _ in 0..n {
                black_box(m.try_acquire(black_box(&4242)).is_ok());
            }
        }
        "ritmo_rej_fake" => {
            let m = ritmo::server::KeyedRateLimiter::with_clock(
                "b",
                ritmo::Config::new(1, std::time::Duration::from_secs(3600)).unwrap(),
                usize::MAX,
                ritmo::ManualClock::new(),
            );
            for k in 0..10_000u64 {
                m.try_acquire(&k).unwrap();
            }
            for _ in 0..n {
                black_box(m.try_acquire(black_box(&4242)).is_ok());
            }
        }
        "governor_rej" => {
            let g = governor::DefaultKeyedRateLimiter::<u64>::keyed(governor::Quota::per_hour(
                NonZeroU32::MIN,
            ));
            for k in 0..10_000u64 {
                g.check_key(&k).unwrap();
            }
            for _ in 0..n {
                black_box(g.check_key(black_box(&4242)).is_ok());
            }
        }
        "ritmo_new" => {
            let m = ritmo::server::KeyedRateLimiter::new("b", cfg, usize::MAX);
            for k in 0..n {
                black_box(m.try_acquire(black_box(&k)).is_ok());
            }
        }
        "governor_new" => {
            let g = governor::DefaultKeyedRateLimiter::<u64>::keyed(quota);
            for k in 0..n {
                black_box(g.check_key(black_box(&k)).is_ok());
            }
        }
        other => println!("unknown path {other}"),
    }
}
