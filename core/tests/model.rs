//! Differential property tests: the limiter against a slow reference model that applies the GCRA rules
//! literally in `u128`, on random sequences of advance / try_acquire_n / reserve / cancel /
//! commit; plus the window bound, including when reservations are cancelled and refunded.

use core::time::Duration;

use proptest::prelude::*;
use ritmo_core::{AcquireError, Clock, Config, ManualClock, RateLimiter, Reservation};

/// The GCRA rules, literally: `T = ceil(P / n)` ns, `tau = (n - 1) * T`, all state in `tat`.
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
    fn new(n: u32, period: u128, max_wait: u128) -> Self {
        let n = n as u128;
        let t = period.div_ceil(n);
        Model {
            n,
            t,
            tau: (n - 1) * t,
            max_wait,
            tat: 0,
        }
    }

    /// The wait until `k` permits would be admitted at once, or `None` if they are now.
    fn wait(&self, now: u128, k: u128) -> Option<u128> {
        let start = self.tat.max(now);
        // admitted at once if max(tat, now) + (k - 1) * T <= now + tau
        if start + (k - 1) * self.t <= now + self.tau {
            None
        } else {
            // the last permit's slot: the earliest s with tat + (k - 1) * T <= s + tau
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

    /// Returns the outcome and, for a reservation, the `tat` it wrote.
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

    /// The tail rule: permits go back only if nothing changed `tat` since the reservation.
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

fn scenario() -> impl Strategy<Value = (u32, u64, u64, Vec<Op>)> {
    (1u32..=12, 1u64..=5_000_000_000).prop_flat_map(|(n, period)| {
        let period = period.max(n as u64);
        (
            Just(n),
            Just(period),
            0..=period * 3,
            prop::collection::vec(op(n, period), 1..120),
        )
    })
}

/// A permit's use: `k` permits at instant `at` (ns).
#[derive(Debug, Clone, Copy)]
struct Use {
    at: u128,
    k: u128,
}

/// In any window `[a, b]`, admitted permits <= n + floor((b - a) / T).
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
                "{count} permits in a window of {w} ns (n = {n}, T = {t})"
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn limiter_matches_the_reference_model((n, period, max_wait, ops) in scenario()) {
        let clock = ManualClock::new();
        let config = Config::new(n, Duration::from_nanos(period))
            .unwrap()
            .with_max_wait(Duration::from_nanos(max_wait));
        let limiter = RateLimiter::new("model", config, &clock);
        let mut model = Model::new(n, period as u128, max_wait as u128);

        // Open reservations: the limiter's, and the model's (written tat, k, slot).
        let mut open: Vec<(Reservation<'_, &ManualClock>, u128, u128, u128)> = Vec::new();
        let mut uses = Vec::new();

        for op in ops {
            let now = clock.now() as u128;
            match op {
                Op::Advance(d) => clock.advance_ticks(d),
                Op::TryAcquire(k) => {
                    let expected = model.try_acquire(now, k as u128);
                    let got = match limiter.try_acquire_n(k) {
                        Ok(()) => Outcome::Admitted,
                        Err(AcquireError::RateLimited(e)) => {
                            Outcome::Rejected { retry_after: e.retry_after().as_nanos() }
                        }
                        Err(AcquireError::InvalidPermits(_)) => Outcome::Invalid,
                        Err(e) => panic!("unexpected {e:?}"),
                    };
                    prop_assert_eq!(&got, &expected);
                    if got == Outcome::Admitted {
                        uses.push(Use { at: now, k: k as u128 });
                    }
                }
                Op::TryOne => {
                    let expected = model.try_acquire(now, 1);
                    let got = match limiter.try_acquire() {
                        Ok(()) => Outcome::Admitted,
                        Err(e) => Outcome::Rejected { retry_after: e.retry_after().as_nanos() },
                    };
                    prop_assert_eq!(&got, &expected);
                    if got == Outcome::Admitted {
                        uses.push(Use { at: now, k: 1 });
                    }
                }
                Op::Reserve(k) => {
                    let (expected, written) = model.reserve(now, k as u128);
                    match limiter.reserve_n(k) {
                        Ok(r) => {
                            prop_assert_eq!(Outcome::Reserved { wait: r.wait_time().as_nanos() }, expected);
                            let slot = now + r.wait_time().as_nanos();
                            prop_assert_eq!(r.slot() as u128, slot);
                            open.push((r, written.unwrap(), k as u128, slot));
                        }
                        Err(AcquireError::RateLimited(e)) => {
                            prop_assert_eq!(Outcome::Rejected { retry_after: e.retry_after().as_nanos() }, expected);
                        }
                        Err(AcquireError::InvalidPermits(_)) => prop_assert_eq!(Outcome::Invalid, expected),
                        Err(e) => panic!("unexpected {e:?}"),
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
            let now = clock.now() as u128;
            prop_assert_eq!(limiter.available_permits(), model.available(now));
            prop_assert_eq!(limiter.retry_after().as_nanos(), model.wait(now, 1).unwrap_or(0));
        }
        for (r, _, k, slot) in open {
            r.commit();
            uses.push(Use { at: slot, k });
        }
        check_window_bound(&uses, n as u128, model.t)?;
    }
}
