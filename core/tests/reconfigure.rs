//! `RateLimiter::reconfigure` against a reference model: random schedules of calls, reservations,
//! cancellations and reconfigurations at random points, every decision compared with an exact
//! `u128` GCRA that applies the change rule literally; plus the window bounds across changes, and
//! real threads calling while another reconfigures.

use core::time::Duration;
use std::sync::atomic::{AtomicU64, Ordering};

use proptest::prelude::*;
use ritmo_core::{AcquireError, Clock, Config, ManualClock, RateLimiter, Reservation};

/// One config's numbers, as SPEC's GCRA uses them: `T = ceil(P / n)`, window `W = n * T`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Cfg {
    n: u128,
    t: u128,
    max_wait: u128,
    enabled: bool,
    period: u64,
}

impl Cfg {
    fn new(n: u32, period: u64, max_wait: u64, enabled: bool) -> Self {
        let period = period.max(n as u64); // at least 1 ns per permit
        Cfg {
            n: n as u128,
            t: (period as u128).div_ceil(n as u128),
            max_wait: max_wait as u128,
            enabled,
            period,
        }
    }
    fn w(&self) -> u128 {
        self.n * self.t
    }
    fn config(&self) -> Config {
        Config::new(self.n as u32, Duration::from_nanos(self.period))
            .unwrap()
            .with_max_wait(Duration::from_nanos(self.max_wait as u64))
            .with_enabled(self.enabled)
    }
}

#[derive(Debug)]
struct Model {
    cfg: Cfg,
    tat: u128,
    /// Counts the changes that took effect: a reservation goes back only within its epoch.
    epoch: u32,
}

#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    Admitted { wait: u128 },
    Rejected { retry_after: u128 },
    Invalid,
}

impl Model {
    /// The wait until `k` permits pass at `now` (0: now).
    fn wait(&self, now: u128, k: u128) -> u128 {
        let c = &self.cfg;
        (self.tat.max(now) + k * c.t).saturating_sub(now + c.w())
    }

    fn available(&self, now: u128) -> u128 {
        if !self.cfg.enabled {
            return self.cfg.n;
        }
        ((now + self.cfg.w()).saturating_sub(self.tat.max(now)) / self.cfg.t).min(self.cfg.n)
    }

    /// Returns the outcome and the `tat` a grant wrote.
    fn call(&mut self, now: u128, k: u128, max_wait: u128) -> (Outcome, Option<u128>) {
        if k == 0 || k > self.cfg.n {
            return (Outcome::Invalid, None);
        }
        if !self.cfg.enabled {
            return (Outcome::Admitted { wait: 0 }, None);
        }
        let wait = self.wait(now, k);
        if wait > max_wait {
            return (Outcome::Rejected { retry_after: wait }, None);
        }
        self.tat = self.tat.max(now) + k * self.cfg.t;
        (Outcome::Admitted { wait }, Some(self.tat))
    }

    fn cancel(&mut self, written: Option<u128>, k: u128, epoch: u32) -> bool {
        match written {
            None => true, // taken while disabled: nothing to give back
            Some(w) if self.tat == w && epoch == self.epoch => {
                self.tat -= k * self.cfg.t;
                true
            }
            Some(_) => false,
        }
    }

    /// The change rule, literally: available becomes min(available, n'); owed stays owed (the
    /// last slot handed out stays, the next call queues T' after it); progress towards the next
    /// permit carries over, at most T'. A disabled limiter starts from a full burst. The state
    /// never stays the very same number (one ns later instead).
    /// Returns the permits available at the change.
    fn reconfigure(&mut self, now: u128, new: Cfg) -> Option<u128> {
        if new == self.cfg {
            return None;
        }
        let old = self.cfg;
        let before = self.tat;
        let avail = self.available(now);
        let mut tat = if !old.enabled {
            now
        } else {
            let kept = avail.min(new.n);
            if kept == new.n {
                now
            } else if self.tat > now + old.w() {
                self.tat - old.w() + new.w()
            } else {
                let start = self.tat.max(now);
                let r = (start + (avail + 1) * old.t - old.w() - now).clamp(1, new.t);
                now + new.w() + r - (kept + 1) * new.t
            }
        };
        if tat == before && self.epoch > 0 {
            // From the second change on, the state never keeps its number: one ns earlier if that means the same (at or
            // before now), else one ns later.
            tat = if tat <= now && tat > 0 {
                tat - 1
            } else {
                tat + 1
            };
        }
        self.tat = tat;
        self.cfg = new;
        self.epoch += 1;
        Some(avail)
    }
}

#[derive(Debug, Clone)]
enum Op {
    Advance(u64),
    TryAcquire(u32),
    Reserve(u32),
    Cancel(usize),
    Commit(usize),
    Reconfigure(u32, u64, u64, bool),
}

fn cfg_strategy() -> impl Strategy<Value = (u32, u64, u64, bool)> {
    (
        1u32..=10,
        1u64..=3_000_000_000,
        0u64..=4_000_000_000,
        prop_oneof![9 => Just(true), 1 => Just(false)],
    )
}

fn scenario() -> impl Strategy<Value = ((u32, u64, u64, bool), Vec<Op>)> {
    let op = prop_oneof![
        3 => (0u64..=1_500_000_000).prop_map(Op::Advance),
        4 => (0u32..=11).prop_map(Op::TryAcquire),
        3 => (0u32..=11).prop_map(Op::Reserve),
        2 => any::<usize>().prop_map(Op::Cancel),
        1 => any::<usize>().prop_map(Op::Commit),
        2 => cfg_strategy().prop_map(|(n, p, w, e)| Op::Reconfigure(n, p, w, e)),
    ];
    (cfg_strategy(), prop::collection::vec(op, 1..120))
}

/// A use of permits: when the call runs, how many, the epoch (config) that charged it.
#[derive(Debug, Clone, Copy)]
struct Use {
    at: u128,
    k: u128,
    epoch: u32,
}

/// Within an epoch (calls charged under one config), the GCRA bound of that config; and after
/// each change at `c`, the calls charged under the new config never exceed what was available at
/// the change (capped at the new burst) plus the new rate: in `[c, b]` at most
/// `kept + 1 + floor((b - c) / T')` (the 1: progress towards the next permit carried over). So a
/// window spanning a change sees at most the old config's bound plus the permits available at
/// the change plus the new rate after it: reconfiguring never hands out a fresh burst.
fn check_bounds(uses: &[Use], epochs: &[(u128, Cfg, u128)]) -> Result<(), TestCaseError> {
    let mut uses = uses.to_vec();
    uses.sort_by_key(|u| u.at);
    for (e, (c, cfg, kept)) in epochs.iter().enumerate() {
        if !cfg.enabled {
            continue;
        }
        let mine: Vec<_> = uses.iter().filter(|u| u.epoch == e as u32).collect();
        for i in 0..mine.len() {
            let mut count = 0;
            for u in &mine[i..] {
                count += u.k;
                let w = u.at - mine[i].at;
                prop_assert!(
                    count <= cfg.n + w / cfg.t,
                    "epoch {e}: {count} permits in {w} ns ({cfg:?})"
                );
            }
        }
        if e == 0 {
            continue;
        }
        let mut count = 0;
        for u in &mine {
            prop_assert!(
                u.at >= *c,
                "a call charged after the change at {c} ran at {}",
                u.at
            );
            count += u.k;
            let bound = kept + 1 + (u.at - c) / cfg.t;
            prop_assert!(
                count <= bound,
                "{count} permits in [{c}, {}] after a change that kept {kept} ({cfg:?})",
                u.at
            );
        }
    }
    Ok(())
}

type Open<'a> = Vec<(
    Reservation<'a, &'a ManualClock>,
    Option<u128>,
    u128,
    u128,
    u32,
)>;

proptest! {
    #![proptest_config(ProptestConfig { cases: 768, ..ProptestConfig::default() })]

    #[test]
    fn reconfigure_matches_the_reference_model(((n, p, w, e), ops) in scenario()) {
        let clock = ManualClock::new();
        let first = Cfg::new(n, p, w, e);
        let limiter = RateLimiter::new("model", first.config(), &clock);
        let mut model = Model { cfg: first, tat: 0, epoch: 0 };
        let mut epochs = vec![(0u128, first, first.n)];
        let mut open: Open<'_> = Vec::new();
        let mut uses = Vec::new();

        for op in ops {
            let now = clock.now() as u128;
            match op {
                Op::Advance(d) => clock.advance_ticks(d),
                Op::TryAcquire(k) => {
                    let (expected, _) = model.call(now, k as u128, 0);
                    let got = match limiter.try_acquire_n(k) {
                        Ok(()) => Outcome::Admitted { wait: 0 },
                        Err(AcquireError::RateLimited(e)) => {
                            Outcome::Rejected { retry_after: e.retry_after().as_nanos() }
                        }
                        Err(AcquireError::InvalidPermits(_)) => Outcome::Invalid,
                        Err(e) => panic!("unexpected {e:?}"),
                    };
                    prop_assert_eq!(&got, &expected);
                    if got == (Outcome::Admitted { wait: 0 }) && model.cfg.enabled {
                        uses.push(Use { at: now, k: k as u128, epoch: model.epoch });
                    }
                }
                Op::Reserve(k) => {
                    let max_wait = model.cfg.max_wait;
                    let (expected, written) = model.call(now, k as u128, max_wait);
                    let got = match limiter.reserve_n(k) {
                        Ok(r) => {
                            let wait = r.wait_time().as_nanos();
                            open.push((r, written, k as u128, now + wait, model.epoch));
                            Outcome::Admitted { wait }
                        }
                        Err(AcquireError::RateLimited(e)) => {
                            Outcome::Rejected { retry_after: e.retry_after().as_nanos() }
                        }
                        Err(AcquireError::InvalidPermits(_)) => Outcome::Invalid,
                        Err(e) => panic!("unexpected {e:?}"),
                    };
                    prop_assert_eq!(&got, &expected);
                }
                Op::Cancel(i) if !open.is_empty() => {
                    let (r, written, k, _, epoch) = open.remove(i % open.len());
                    prop_assert_eq!(r.cancel(), model.cancel(written, k, epoch));
                }
                Op::Commit(i) if !open.is_empty() => {
                    let (r, written, k, slot, epoch) = open.remove(i % open.len());
                    r.commit();
                    if written.is_some() {
                        uses.push(Use { at: slot, k, epoch });
                    }
                }
                Op::Cancel(_) | Op::Commit(_) => {}
                Op::Reconfigure(n, p, w, e) => {
                    let new = Cfg::new(n, p, w, e);
                    limiter.reconfigure(new.config());
                    let was_enabled = model.cfg.enabled;
                    if let Some(avail) = model.reconfigure(now, new) {
                        let kept = if was_enabled { avail.min(new.n) } else { new.n };
                        epochs.push((now, new, kept));
                    }
                    prop_assert_eq!(limiter.config(), new.config());
                    prop_assert_eq!(
                        limiter.available_permits() as u128,
                        model.available(now)
                    );
                }
            }
            let now = clock.now() as u128;
            prop_assert_eq!(limiter.available_permits() as u128, model.available(now));
            let retry = if model.cfg.enabled { model.wait(now, 1) } else { 0 };
            prop_assert_eq!(limiter.retry_after().as_nanos(), retry);
        }
        for (r, written, k, slot, epoch) in open {
            r.commit();
            if written.is_some() {
                uses.push(Use { at: slot, k, epoch });
            }
        }
        check_bounds(&uses, &epochs)?;
    }
}

/// The examples of the change rule, one by one.
#[test]
fn available_permits_become_the_smaller_and_owed_permits_stay_owed() {
    let clock = ManualClock::new();
    let c = |n, ms| Config::new(n, Duration::from_millis(ms)).unwrap();
    let l = RateLimiter::new(
        "api",
        c(10, 1000).with_max_wait(Duration::from_secs(5)),
        &clock,
    );
    l.try_acquire_n(7).unwrap();
    l.reconfigure(c(5, 1000).with_max_wait(Duration::from_secs(5)));
    assert_eq!(l.available_permits(), 3, "min(3, 5)");
    l.reconfigure(c(2, 1000).with_max_wait(Duration::from_secs(5)));
    assert_eq!(l.available_permits(), 2, "min(3, 2)");
    // Owed: reserve beyond the burst, then loosen: the reservations keep their slots and the next
    // call queues after the last one.
    l.try_acquire_n(2).unwrap();
    let a = l.reserve().unwrap(); // 500 ms
    let b = l.reserve().unwrap(); // 1000 ms
    assert_eq!(
        (a.wait_time(), b.wait_time()),
        (Duration::from_millis(500), Duration::from_millis(1000))
    );
    l.reconfigure(c(100, 1000).with_max_wait(Duration::from_secs(5)));
    assert_eq!(l.available_permits(), 0);
    let next = l.reserve().unwrap();
    // After b, at the new 10 ms spacing (and 1 ns: from the second change on the state never
    // keeps its number across a change, and here it would have).
    assert_eq!(next.wait_time(), Duration::from_nanos(1_010_000_001));
    // A reservation made before the change does not go back after it.
    assert!(!b.cancel());
    a.commit();
    next.commit();
}

#[test]
fn reconfiguring_to_the_same_config_changes_nothing() {
    let clock = ManualClock::new();
    let cfg = Config::new(3, Duration::from_secs(1)).unwrap();
    let l = RateLimiter::new("api", cfg, &clock);
    l.try_acquire().unwrap();
    l.reconfigure(cfg);
    assert!(!l.is_reconfigured());
    assert_eq!(l.available_permits(), 2);
}

#[test]
fn disabling_and_enabling_live() {
    let clock = ManualClock::new();
    let cfg = Config::new(1, Duration::from_secs(1)).unwrap();
    let l = RateLimiter::new("api", cfg, &clock);
    l.try_acquire().unwrap();
    assert!(l.try_acquire().is_err());
    l.reconfigure(cfg.with_enabled(false));
    for _ in 0..10 {
        l.try_acquire().unwrap();
    }
    l.reconfigure(cfg);
    l.try_acquire().unwrap(); // a disabled limiter kept no state: a full burst again
    assert!(l.try_acquire().is_err());
}

/// Real threads take permits while another thread reconfigures back and forth between two
/// configs, on a clock that never moves: in total they never get more than the first burst plus
/// what each change handed out (never more than available at the change: here none beyond the
/// burst, since nothing refills).
#[test]
fn threads_racing_reconfigures_never_exceed_the_burst() {
    let clock = ManualClock::starting_at(1_000_000_000);
    let small = Config::new(5, Duration::from_secs(1)).unwrap();
    let large = Config::new(50, Duration::from_secs(1)).unwrap();
    let l = RateLimiter::new("race", large, &clock);
    let admitted = AtomicU64::new(0);
    std::thread::scope(|s| {
        for _ in 0..3 {
            s.spawn(|| {
                for _ in 0..2_000 {
                    if l.try_acquire().is_ok() {
                        admitted.fetch_add(1, Ordering::Relaxed);
                    }
                    if let Ok(r) = l.reserve_n(1)
                        && r.wait_time().is_zero()
                    {
                        admitted.fetch_add(1, Ordering::Relaxed);
                        r.commit();
                    }
                }
            });
        }
        for i in 0..2_000 {
            l.reconfigure(if i % 2 == 0 { small } else { large });
        }
    });
    // The time never moves: 50 permits at most, whatever the configs did, counting those still
    // available at the end.
    let admitted = admitted.load(Ordering::Relaxed);
    let left = u64::from(l.available_permits());
    assert!(admitted + left <= 50, "{admitted} admitted, {left} left");
}

/// `k` is checked against the config in force: more than its permits is an error, not a wait.
#[test]
fn permits_asked_are_checked_against_the_config_in_force() {
    let clock = ManualClock::new();
    let c = |n| Config::new(n, Duration::from_secs(1)).unwrap();
    let l = RateLimiter::new("api", c(10), &clock);
    l.reconfigure(c(2));
    for k in [0, 3, 10, 12] {
        assert!(
            matches!(l.try_acquire_n(k), Err(AcquireError::InvalidPermits(e)) if e.permits() == 2),
            "k = {k}"
        );
        assert!(matches!(
            l.reserve_n(k),
            Err(AcquireError::InvalidPermits(_))
        ));
        assert!(l.retry_after_n(k).is_err());
    }
    l.reconfigure(c(20));
    assert!(l.try_acquire_n(2).is_ok()); // 2 were available, and stay so
    assert!(matches!(
        l.try_acquire_n(15),
        Err(AcquireError::RateLimited(_))
    ));
    clock.advance(Duration::from_secs(1));
    assert!(l.try_acquire_n(15).is_ok());
}
