//! Model checks of the keyed table's insert/evict race: two threads and one slot, under every
//! interleaving (see `loom_tests.rs` for how these run).
//!
//! ```text
//! RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 \
//!     cargo test -p ritmo-core --lib --release --target-dir target/loom loom_keyed_tests
//! ```
//!
//! Under `--cfg loom` the table's lock is loom's mutex and the clock loom's atomics, so loom sees
//! every order in which the two threads read the clock, take the lock, find the slot idle or
//! live, and evict or keep its key.

extern crate std;

use core::time::Duration;
use std::sync::atomic::{AtomicUsize, Ordering as StdOrdering};

use loom::sync::Arc;
use loom::thread;
use std::eprintln;
use std::vec::Vec;

use crate::keyed::KeyedLimiter;
use crate::{Config, ManualClock, Reason};

const T: Duration = Duration::from_secs(1);

fn explore(model: impl Fn() + Sync + Send + 'static) -> usize {
    let runs = std::sync::Arc::new(AtomicUsize::new(0));
    let counter = runs.clone();
    loom::model(move || {
        counter.fetch_add(1, StdOrdering::Relaxed);
        model();
    });
    let runs = runs.load(StdOrdering::Relaxed);
    eprintln!("loom explored {runs} interleavings");
    runs
}

fn one_slot() -> Arc<KeyedLimiter<u8, ManualClock, 1>> {
    let config = Config::new(1, T).expect("valid config");
    Arc::new(KeyedLimiter::new("loom", config, ManualClock::new(), 7))
}

/// Key 1 holds the only slot and has just gone idle. One thread calls for key 1 again while
/// another calls for key 2, which may evict it: in every interleaving exactly one wins the slot,
/// the other is refused for want of room (with the winner's time to idle), and the slot holds
/// the winner with its permit spent. Never both: the loser can neither take a permit from an
/// evicted key nor evict a key that was just renewed.
#[test]
fn renewing_and_evicting_an_idle_key_race_for_one_slot() {
    let runs = explore(|| {
        let table = one_slot();
        table.try_acquire(&1).unwrap();
        table.clock().advance(T); // key 1 is idle now
        let renew = {
            let table = table.clone();
            thread::spawn(move || table.try_acquire(&1))
        };
        let evict = {
            let table = table.clone();
            thread::spawn(move || table.try_acquire(&2))
        };
        let (renewed, evicted) = (renew.join().unwrap(), evict.join().unwrap());
        assert!(
            renewed.is_ok() != evicted.is_ok(),
            "{renewed:?} {evicted:?}"
        );
        let (winner, loser) = if renewed.is_ok() {
            (1, evicted)
        } else {
            (2, renewed)
        };
        let err = loser.unwrap_err();
        assert_eq!(err.reason(), Reason::KeyCapacity);
        assert_eq!(err.retry_after(), T);
        let live = table.live_keys();
        assert_eq!(
            (live.len(), live[0].key, live[0].available_permits),
            (1, winner, 0)
        );
    });
    assert!(runs > 1, "loom explored {runs} interleavings");
}

/// Two threads call for the same new key while a third moves the clock past the previous key's
/// idle instant: the new key is admitted at most once (its burst is 1), whoever inserts it.
#[test]
fn inserting_one_new_key_twice_admits_it_once() {
    let runs = explore(|| {
        let table = one_slot();
        table.try_acquire(&1).unwrap();
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let table = table.clone();
                thread::spawn(move || table.try_acquire(&2))
            })
            .collect();
        table.clock().advance(T);
        let results: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        let admitted = results.iter().filter(|r| r.is_ok()).count();
        assert!(admitted <= 1, "{results:?}");
        for e in results.iter().filter_map(|r| r.as_ref().err()) {
            assert!(matches!(
                e.reason(),
                Reason::KeyCapacity | Reason::NoPermitInTime
            ));
        }
        if admitted == 1 {
            assert_eq!(table.available_permits(&2), 0);
        }
    });
    assert!(runs > 1, "loom explored {runs} interleavings");
}

/// A reservation for key 1 is cancelled while another thread evicts key 1 for key 2: the refund
/// never lands on key 2's state, and key 2, if it got the slot, keeps its permit spent.
#[test]
fn a_refund_never_lands_on_the_key_that_took_the_slot() {
    let runs = explore(|| {
        let table = one_slot();
        let reservation_for_1 = {
            let table = table.clone();
            thread::spawn(move || {
                let r = table.reserve(&1);
                r.map(|r| r.cancel())
            })
        };
        let other = {
            let table = table.clone();
            thread::spawn(move || table.try_acquire(&2))
        };
        let (cancelled, took) = (reservation_for_1.join().unwrap(), other.join().unwrap());
        if took.is_ok() {
            assert_eq!(table.available_permits(&2), 0, "{cancelled:?}");
        }
        if let Ok(true) = cancelled {
            // Key 1's permit went back; it holds no more than its burst.
            assert_eq!(
                table.available_permits(&1),
                if took.is_ok() { 0 } else { 1 }
            );
        }
    });
    assert!(runs > 1, "loom explored {runs} interleavings");
}
