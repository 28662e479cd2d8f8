//! Calls on real threads racing changes of config, arranged so that the calls meet states
//! written under every config whatever the scheduler does.

use std::sync::atomic::{AtomicU32, Ordering};

/// Runs `callers` threads of `rounds` rounds each beside one thread that changes the config
/// for as long as any caller runs: `change(i)` makes the `i`-th change. Each round is
/// `call(caller)`, and the next round starts only after at least one more change has ended, so
/// every caller decides on states converted to each config in turn (and, between rounds, on
/// states a change is converting). Bounded: the callers' rounds end it.
///
/// A test asserts afterwards what no interleaving may break; under a frozen clock, that no
/// more permits passed than the burst allows. That bound holds only where a change cannot
/// legitimately refill: a limiter with `a` of `n` left that changes to a config of `m <= a`
/// permits holds `m`, its full burst, so it is idle, and a change back to `n` starts it afresh
/// with all `n` (SPEC §14, idle is new). Race configs of one burst and different periods.
pub fn rounds_between_changes(
    callers: u32,
    rounds: u32,
    call: impl Fn(u32) + Sync,
    mut change: impl FnMut(u32) + Send,
) {
    let (running, changes) = (AtomicU32::new(callers), AtomicU32::new(0));
    std::thread::scope(|s| {
        for caller in 0..callers {
            let (call, running, changes) = (&call, &running, &changes);
            s.spawn(move || {
                // Counts this caller out even when `call` panics, so the changer stops and the
                // scope re-raises the panic instead of changing configs for ever.
                let _out = CountOut(running);
                for _ in 0..rounds {
                    let seen = changes.load(Ordering::Acquire);
                    call(caller);
                    while changes.load(Ordering::Acquire) == seen {
                        std::thread::yield_now();
                    }
                }
            });
        }
        s.spawn(|| {
            let mut i = 0;
            // A caller waits for a change after each round, so the changer runs until the last
            // caller is out; a caller that panicked is out too.
            while running.load(Ordering::Acquire) > 0 {
                change(i);
                changes.fetch_add(1, Ordering::Release);
                i += 1;
            }
        });
    });
}

/// Takes one caller off the count of those running when dropped, on return or on panic.
struct CountOut<'a>(&'a AtomicU32);

impl Drop for CountOut<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::rounds_between_changes;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[test]
    fn every_round_waits_for_a_change() {
        let (calls, changes) = (AtomicU32::new(0), AtomicU32::new(0));
        rounds_between_changes(
            3,
            5,
            |_| {
                calls.fetch_add(1, Ordering::Relaxed);
            },
            |_| {
                changes.fetch_add(1, Ordering::Relaxed);
            },
        );
        assert_eq!(calls.into_inner(), 15);
        // Each caller's 5 rounds each waited for one more change.
        assert!(changes.into_inner() >= 5);
    }

    #[test]
    fn a_call_that_panics_fails_the_run_rather_than_hanging_it() {
        let run = std::panic::catch_unwind(|| {
            rounds_between_changes(
                2,
                3,
                |caller| assert!(caller != 1, "caller 1 fails"),
                |_| std::thread::yield_now(),
            )
        });
        assert!(run.is_err());
    }
}
