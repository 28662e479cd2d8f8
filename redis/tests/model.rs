//! The shared reference model (`ritmo-test-support`, SPEC's GCRA in `u128`, here in the store's
//! microseconds), run against a real Redis: random sequences of advance / try_acquire_n / reserve
//! / cancel / commit on a caller-supplied `ManualClock`, so every decision, wait and refund is
//! deterministic; peeks after every step; the window bound over all the permits used. A smaller
//! case runs on Redis's `TIME`. Plus SPEC §17's `max_wait` rule on a coarse caller clock.

mod support;

use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::{Config as RunnerConfig, TestCaseError, TestRunner};
use ritmo_core::{AcquireError, Clock, Config, ManualClock, Reason, TickRate};
use ritmo_redis::blocking::{RedisKeyedRateLimiter, Reservation};
use ritmo_redis::{Permit, Source};
use ritmo_test_support::{Gcra, Op, Outcome, Ticket, Units, Use, window_bound};

/// A `ManualClock::<HZ>` every limiter of a case reads.
#[derive(Clone)]
struct Shared<const HZ: u64 = 1_000_000_000>(Arc<ManualClock<HZ>>);

impl<const HZ: u64> Clock for Shared<HZ> {
    fn now(&self) -> u64 {
        self.0.now()
    }
    fn tick_rate(&self) -> TickRate {
        self.0.tick_rate()
    }
}

/// The store's unit: the microsecond. On a nanosecond caller clock the store reads
/// `floor(ns / 1000)`, a microsecond clock whose unit is its tick: `T = ceil(P / n)` rounded up
/// to the microsecond, every wait a whole number of microseconds.
const STORE: Units = Units::MICROS;

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
/// clock in ns, the steps (advances in ns).
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

/// A Redis answer as an [`Outcome`]; a rejection must give its reason.
fn outcome_of(result: Result<Permit, AcquireError>) -> Outcome {
    Outcome::of_try(result.map(|_| ()))
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
    let mut model = Gcra::new(STORE, config);
    let mut open: Vec<(Reservation, Ticket)> = Vec::new();
    let mut uses = Vec::new();
    let key = case;
    let now_us = |c: &Shared| c.now() / 1_000;
    let fail = TestCaseError::fail;

    for op in ops {
        let now = now_us(&clock);
        match op {
            Op::Advance(d) => clock.0.advance_ticks(d),
            Op::TryAcquire(k) => {
                let expected = model.try_acquire(now, k);
                let result = limiter.try_acquire_n(&key, k);
                if let Ok(p) = &result {
                    prop_assert_eq!(p.source(), Source::Store);
                    prop_assert_eq!(p.store_time_micros(), Some(now));
                }
                if let Err(AcquireError::RateLimited(e)) = &result {
                    prop_assert_eq!(e.reason(), Reason::NoPermitInTime);
                }
                let got = outcome_of(result);
                expected.check(&got, &STORE).map_err(fail)?;
                if got == Outcome::Admitted {
                    uses.push(Use::at_reading(&STORE, now, k));
                }
            }
            Op::TryOne => {
                let expected = model.try_acquire(now, 1);
                let got = outcome_of(limiter.try_acquire(&key).map_err(Into::into));
                expected.check(&got, &STORE).map_err(fail)?;
                if got == Outcome::Admitted {
                    uses.push(Use::at_reading(&STORE, now, 1));
                }
            }
            Op::Reserve(k) => {
                let (expected, ticket) = model.reserve(now, k);
                match limiter.reserve_n(&key, k) {
                    Ok(r) => {
                        let wait = r.wait_time();
                        let slot = now + wait.as_micros() as u64;
                        expected
                            .check(&Outcome::Reserved { wait, slot }, &STORE)
                            .map_err(fail)?;
                        prop_assert_eq!(r.permit().store_time_micros(), Some(now));
                        open.push((r, ticket.unwrap()));
                    }
                    Err(e) => expected.check(&outcome_of(Err(e)), &STORE).map_err(fail)?,
                }
            }
            Op::Cancel(i) if !open.is_empty() => {
                let (r, ticket) = open.remove(i % open.len());
                model.cancel(&ticket, r.cancel()).map_err(fail)?;
            }
            Op::Commit(i) if !open.is_empty() => {
                let (r, ticket) = open.remove(i % open.len());
                r.commit();
                uses.push(ticket.used());
            }
            _ => {}
        }
        let now = now_us(&clock);
        prop_assert_eq!(
            limiter.available_permits(&key).unwrap(),
            model.available(now)
        );
        prop_assert_eq!(
            limiter.retry_after(&key).unwrap(),
            model.retry_after(now, 1)
        );
    }
    for (r, ticket) in open {
        r.commit();
        uses.push(ticket.used());
    }
    window_bound(&uses, n, config.period(), &STORE).map_err(fail)
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

/// SPEC §17 for Redis with a coarse caller clock: issue 20's 1 Hz example, 1 per 600 ms,
/// `max_wait` 1.5 s, on a caller's `ManualClock::<1>` (the store counts its microseconds). Spend
/// one, reserve one (its permit at 0.6 s, which the caller's clock shows at 1 s), reserve
/// another: its permit at 1.2 s is seen at the tick of 2 s, beyond `max_wait`: refused at once.
/// Fails on 0.2, which admits it with a wait of 1.2 s (and reports waits in microseconds, not
/// to the caller's tick).
#[test]
fn redis_max_wait_holds_at_the_whole_tick_of_a_1_hz_caller_clock() {
    let Some(server) = support::Server::start() else {
        return;
    };
    let config = Config::new(1, Duration::from_millis(600))
        .unwrap()
        .with_max_wait(Duration::from_millis(1500));
    let clock = Shared::<1>(Arc::new(ManualClock::<1>::with_reading(0)));
    let limiter = ritmo_redis::blocking::RedisRateLimiter::builder("coarse", config)
        .clock(clock.clone())
        .timeout(Duration::from_secs(5))
        .connect_blocking(server.url())
        .unwrap();
    let units = Units::with_unit(1, 1_000_000);
    let mut model = Gcra::new(units, config);
    assert_eq!(
        outcome_of(limiter.try_acquire().map_err(Into::into)),
        model.try_acquire(0, 1)
    );
    let first = limiter.reserve_n(1);
    assert!(first.is_ok() && matches!(model.reserve(0, 1).0, Outcome::Reserved { .. }));
    let expected = model.reserve(0, 1).0;
    assert_eq!(
        expected,
        Outcome::Rejected {
            retry_after: Duration::from_secs(2)
        }
    );
    let second = limiter.reserve_n(1);
    assert!(
        second.is_err(),
        "a wait to the tick of 2 s on a 1 Hz caller clock with max_wait 1.5 s was admitted (wait_time {:?})",
        second.as_ref().map(|r| r.wait_time()).ok()
    );
}
