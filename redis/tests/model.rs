//! The reference model of ritmo's core (the GCRA rules applied literally in `u128`), run against a
//! real Redis: random sequences of advance / try_acquire_n / reserve / cancel / commit on a
//! caller-supplied `ManualClock`, so every decision, wait and refund is deterministic; peeks after
//! every step; the window bound over all the permits used. A smaller case runs on Redis's `TIME`.

mod support;

use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::{Config as RunnerConfig, TestCaseError, TestRunner};
use ritmo_core::{AcquireError, Clock, Config, ManualClock, Reason, TickRate};
use ritmo_redis::blocking::{RedisKeyedRateLimiter, Reservation};
use ritmo_redis::{Permit, Source};

/// A `ManualClock` every limiter of a case reads.
#[derive(Clone)]
struct Shared(Arc<ManualClock>);

impl Clock for Shared {
    fn now(&self) -> u64 {
        self.0.now()
    }
    fn tick_rate(&self) -> TickRate {
        self.0.tick_rate()
    }
}

/// The core's model in the store's unit, microseconds: `T = ceil(P / n)` rounded up to the
/// microsecond, `tau = (n - 1) * T`, all state in `tat`.
#[derive(Debug)]
struct Model {
    n: u128,
    t: u128,
    tau: u128,
    max_wait: u128,
    tat: u128,
}

#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    Admitted,
    Reserved { wait: u128 },
    Rejected { retry_after: u128 },
    Invalid,
}

impl Model {
    fn new(n: u32, period_ns: u128, max_wait_ns: u128) -> Self {
        let n = n as u128;
        let t = period_ns.div_ceil(n * 1_000);
        Model {
            n,
            t,
            tau: (n - 1) * t,
            max_wait: max_wait_ns / 1_000,
            tat: 0,
        }
    }

    fn wait(&self, now: u128, k: u128) -> Option<u128> {
        let start = self.tat.max(now);
        if start + (k - 1) * self.t <= now + self.tau {
            None
        } else {
            Some(start + (k - 1) * self.t - self.tau - now)
        }
    }

    fn try_acquire(&mut self, now: u128, k: u128) -> Outcome {
        if k == 0 || k > self.n {
            return Outcome::Invalid;
        }
        match self.wait(now, k) {
            None => {
                self.tat = self.tat.max(now) + k * self.t;
                Outcome::Admitted
            }
            Some(wait) => Outcome::Rejected { retry_after: wait },
        }
    }

    fn reserve(&mut self, now: u128, k: u128) -> (Outcome, Option<u128>) {
        if k == 0 || k > self.n {
            return (Outcome::Invalid, None);
        }
        match self.wait(now, k) {
            None => {
                self.tat = self.tat.max(now) + k * self.t;
                (Outcome::Reserved { wait: 0 }, Some(self.tat))
            }
            Some(wait) if wait <= self.max_wait => {
                self.tat = self.tat.max(now) + k * self.t;
                (Outcome::Reserved { wait }, Some(self.tat))
            }
            Some(wait) => (Outcome::Rejected { retry_after: wait }, None),
        }
    }

    fn cancel(&mut self, written: u128, k: u128) -> bool {
        if self.tat == written {
            self.tat -= k * self.t;
            true
        } else {
            false
        }
    }

    fn available(&self, now: u128) -> u32 {
        (1..=self.n)
            .take_while(|k| self.wait(now, *k).is_none())
            .count() as u32
    }
}

#[derive(Debug, Clone)]
enum Op {
    Advance(u64),
    TryAcquire(u32),
    TryOne,
    Reserve(u32),
    Cancel(usize),
    Commit(usize),
}

fn op(n: u32, period: u64) -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..=period / 2).prop_map(Op::Advance),
        1 => (0..=period * 2).prop_map(Op::Advance),
        3 => (0..=n + 1).prop_map(Op::TryAcquire),
        2 => Just(Op::TryOne),
        3 => (0..=n + 1).prop_map(Op::Reserve),
        2 => any::<usize>().prop_map(Op::Cancel),
        1 => any::<usize>().prop_map(Op::Commit),
    ]
}

/// Permits per period, period in ns (at least 1 us per permit), max_wait in ns, start of the
/// clock in ns, the steps.
fn scenario() -> impl Strategy<Value = (u32, u64, u64, u64, Vec<Op>)> {
    (1u32..=12, 1_000u64..=5_000_000_000).prop_flat_map(|(n, period)| {
        let period = period.max(n as u64 * 1_000);
        (
            Just(n),
            Just(period),
            0..=period * 3,
            prop_oneof![Just(0u64), 0u64..=1 << 62],
            prop::collection::vec(op(n, period), 1..80),
        )
    })
}

#[derive(Debug, Clone, Copy)]
struct Use {
    at: u128,
    k: u128,
}

fn check_window_bound(uses: &[Use], n: u128, t: u128) -> Result<(), TestCaseError> {
    let mut uses = uses.to_vec();
    uses.sort_by_key(|u| u.at);
    for i in 0..uses.len() {
        let mut count = 0;
        for u in &uses[i..] {
            count += u.k;
            let w = u.at - uses[i].at;
            prop_assert!(
                count <= n + w / t,
                "{count} permits in a window of {w} us (n = {n}, T = {t})"
            );
        }
    }
    Ok(())
}

fn outcome_of(result: Result<Permit, AcquireError>) -> Outcome {
    match result {
        Ok(_) => Outcome::Admitted,
        Err(AcquireError::RateLimited(e)) => {
            assert_eq!(e.reason(), Reason::NoPermitInTime);
            Outcome::Rejected {
                retry_after: e.retry_after().as_micros(),
            }
        }
        Err(AcquireError::InvalidPermits(_)) => Outcome::Invalid,
        Err(e) => panic!("unexpected {e:?}"),
    }
}

fn run_case(
    url: &str,
    case: u64,
    (n, period, max_wait, start, ops): (u32, u64, u64, u64, Vec<Op>),
) -> Result<(), TestCaseError> {
    let clock = Shared(Arc::new(ManualClock::starting_at(start)));
    let config = Config::new(n, Duration::from_nanos(period))
        .unwrap()
        .with_max_wait(Duration::from_nanos(max_wait));
    let limiter: RedisKeyedRateLimiter<u64> = ritmo_redis::builder("model", config)
        .clock(clock.clone())
        .timeout(Duration::from_secs(5))
        .connect_blocking_keyed(url)
        .unwrap();
    let mut model = Model::new(n, period as u128, max_wait as u128);
    let mut open: Vec<(Reservation, u128, u128, u128)> = Vec::new();
    let mut uses = Vec::new();
    let key = case;
    let now_us = |c: &Shared| (c.now() / 1_000) as u128;

    for op in ops {
        let now = now_us(&clock);
        match op {
            Op::Advance(d) => clock.0.advance_ticks(d),
            Op::TryAcquire(k) => {
                let expected = model.try_acquire(now, k as u128);
                let result = limiter.try_acquire_n(&key, k);
                if let Ok(p) = &result {
                    prop_assert_eq!(p.source(), Source::Store);
                    prop_assert_eq!(p.store_time_micros(), Some(now as u64));
                }
                let got = outcome_of(result);
                prop_assert_eq!(&got, &expected);
                if got == Outcome::Admitted {
                    uses.push(Use {
                        at: now,
                        k: k as u128,
                    });
                }
            }
            Op::TryOne => {
                let expected = model.try_acquire(now, 1);
                let got = outcome_of(limiter.try_acquire(&key).map_err(Into::into));
                prop_assert_eq!(&got, &expected);
                if got == Outcome::Admitted {
                    uses.push(Use { at: now, k: 1 });
                }
            }
            Op::Reserve(k) => {
                let (expected, written) = model.reserve(now, k as u128);
                match limiter.reserve_n(&key, k) {
                    Ok(r) => {
                        let wait = r.wait_time().as_micros();
                        prop_assert_eq!(Outcome::Reserved { wait }, expected);
                        prop_assert_eq!(r.permit().store_time_micros(), Some(now as u64));
                        open.push((r, written.unwrap(), k as u128, now + wait));
                    }
                    Err(e) => prop_assert_eq!(outcome_of(Err(e)), expected),
                }
            }
            Op::Cancel(i) if !open.is_empty() => {
                let (r, written, k, _) = open.remove(i % open.len());
                prop_assert_eq!(r.cancel(), model.cancel(written, k));
            }
            Op::Commit(i) if !open.is_empty() => {
                let (r, _, k, slot) = open.remove(i % open.len());
                r.commit();
                uses.push(Use { at: slot, k });
            }
            Op::Cancel(_) | Op::Commit(_) => {}
        }
        let now = now_us(&clock);
        prop_assert_eq!(
            limiter.available_permits(&key).unwrap(),
            model.available(now)
        );
        prop_assert_eq!(
            limiter.retry_after(&key).unwrap().as_micros(),
            model.wait(now, 1).unwrap_or(0)
        );
    }
    for (r, _, k, slot) in open {
        r.commit();
        uses.push(Use { at: slot, k });
    }
    check_window_bound(&uses, n as u128, model.t)
}

#[test]
fn redis_matches_the_reference_model() {
    let Some(server) = support::Server::start() else {
        return;
    };
    let cases = std::env::var("RITMO_REDIS_MODEL_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(256);
    let mut runner = TestRunner::new(RunnerConfig {
        cases,
        failure_persistence: None,
        ..RunnerConfig::default()
    });
    let case = std::sync::atomic::AtomicU64::new(0);
    let url = server.url();
    runner
        .run(&scenario(), |scenario| {
            let n = case.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            run_case(&url, n, scenario)
        })
        .unwrap();
}

/// Times at the top of the range the script keeps exact (2^53 - 1 us): the state saturates there
/// and then admits nothing more, as the core's does at the end of its clock's range.
#[test]
fn the_state_saturates_below_two_to_the_53_microseconds() {
    let Some(server) = support::Server::start() else {
        return;
    };
    let max_us: u64 = (1 << 53) - 1;
    let clock = Shared(Arc::new(ManualClock::starting_at((max_us - 10) * 1_000)));
    let config = Config::new(2, Duration::from_secs(1)).unwrap();
    let limiter = ritmo_redis::blocking::RedisRateLimiter::builder("edge", config)
        .clock(clock.clone())
        .connect_blocking(server.url())
        .unwrap();
    assert!(limiter.try_acquire().is_ok());
    // tat = now + 500 ms saturates at 2^53 - 1: exhausted, never again.
    let err = limiter.try_acquire().unwrap_err();
    assert_eq!(err.retry_after(), Duration::from_nanos(u64::MAX), "never");
    assert_eq!(limiter.available_permits().unwrap(), 0);
    let stored: String = redis::cmd("GET")
        .arg("{ritmo:edge}")
        .query(&mut server.conn())
        .unwrap();
    assert_eq!(stored, max_us.to_string(), "stored exactly, as digits");

    // Just under the top, large values keep every digit: 2^53 - 1 - 10 + 500_000 would not fit,
    // but 2^52 + 1 and its successors are exact.
    let clock = Shared(Arc::new(ManualClock::starting_at(((1 << 52) + 1) * 1_000)));
    let limiter = ritmo_redis::blocking::RedisRateLimiter::builder("edge2", config)
        .clock(clock.clone())
        .connect_blocking(server.url())
        .unwrap();
    let p = limiter.try_acquire().unwrap();
    assert_eq!(p.store_time_micros(), Some((1 << 52) + 1));
    let stored: String = redis::cmd("GET")
        .arg("{ritmo:edge2}")
        .query(&mut server.conn())
        .unwrap();
    assert_eq!(stored, ((1u64 << 52) + 1 + 500_000).to_string());
    assert_eq!(limiter.available_permits().unwrap(), 1);
}

/// The smaller case on Redis's own clock (`TIME`): a long period, so that the little time the
/// test takes cannot change a decision.
#[test]
fn on_redis_time_decisions_waits_and_refunds() {
    let Some(server) = support::Server::start() else {
        return;
    };
    let config = Config::new(4, Duration::from_secs(400)) // T = 100 s
        .unwrap()
        .with_max_wait(Duration::from_secs(150));
    let limiter = ritmo_redis::blocking::RedisRateLimiter::builder("time", config)
        .connect_blocking(server.url())
        .unwrap();
    assert_eq!(limiter.available_permits().unwrap(), 4);
    assert_eq!(limiter.retry_after().unwrap(), Duration::ZERO);
    let first = limiter.try_acquire_n(3).unwrap();
    let at = first.store_time_micros().unwrap();
    assert!(
        at > 1_600_000_000_000_000,
        "Redis TIME in microseconds since 1970: {at}"
    );
    assert_eq!(limiter.available_permits().unwrap(), 1);
    limiter.try_acquire().unwrap();
    let err = limiter.try_acquire().unwrap_err();
    assert_eq!(err.reason(), Reason::NoPermitInTime);
    assert!(
        err.retry_after() <= Duration::from_secs(100)
            && err.retry_after() > Duration::from_secs(99)
    );
    // A reservation within max_wait: about 100 s away.
    let r = limiter.reserve().unwrap();
    assert!(r.wait_time() > Duration::from_secs(99) && r.wait_time() <= Duration::from_secs(100));
    let slot = r.permit().store_time_micros().unwrap() + r.wait_time().as_micros() as u64;
    // The next one would be 200 s away: over max_wait, rejected, nothing taken.
    assert!(limiter.reserve().is_err());
    // The tail reservation goes back; a second cancel finds nothing to give back.
    assert!(r.cancel());
    let r = limiter.reserve().unwrap();
    let again = r.permit().store_time_micros().unwrap() + r.wait_time().as_micros() as u64;
    assert_eq!(again, slot, "the refunded slot is handed out again");
    let later = limiter.reserve_n(1);
    assert!(later.is_err(), "200 s away is over max_wait");
    drop(later);
    // The key expires when the burst would be full again: within 4 x 100 s + the wait.
    let pttl: i64 = redis::cmd("PTTL")
        .arg("{ritmo:time}")
        .query(&mut server.conn())
        .unwrap();
    assert!(pttl > 400_000 && pttl <= 500_000, "pttl {pttl}");
    r.commit();
}
