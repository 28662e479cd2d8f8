//! Behaviours of the keyed rules (core's table and the rules every keyed store shares) that no
//! other test pinned, found by mutation testing of `keyed/` after its restructure: one test per
//! behaviour, its expectation written from what a user is promised (idle is new, the tail rule,
//! listeners), not from the code.

use core::time::Duration;
use std::sync::Mutex;
use std::vec::Vec;

use ritmo_core::keyed::{KeyListener, KeyedLimiter, Tier, Tiers};
use ritmo_core::{AcquireError, AdvanceClock, Clock, Config, Event, Listener, ManualClock, Reason};

fn per_second(n: u32) -> Config {
    Config::new(n, Duration::from_secs(1)).unwrap()
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// `reclaim_idle` drops exactly the keys that are idle (their burst whole again) and says how
/// many keys are left; a key still owed permits stays.
#[test]
fn reclaim_idle_drops_and_counts_only_the_idle_keys() {
    let clock = ManualClock::new();
    let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("keys", per_second(1), &clock, 3);
    for key in 1..=3 {
        l.try_acquire(&key).unwrap();
    }
    clock.advance(ms(600));
    l.try_acquire(&4).unwrap(); // idle at 1.6 s
    l.try_acquire(&5).unwrap();
    clock.advance(ms(400)); // 1.0 s: keys 1 to 3 idle from now, keys 4 and 5 not
    assert_eq!(l.keys_held(), 5);
    assert_eq!(l.reclaim_idle(), 2, "the keys left");
    assert_eq!(l.keys_held(), 2);
    assert_eq!(l.available_permits(&4), 0);
    clock.advance(ms(600));
    assert_eq!(l.reclaim_idle(), 0);
    assert_eq!(l.keys_held(), 0);
}

/// `live_keys` lists the keys that are not idle at this instant: a key whose next permit
/// arrives exactly now is idle (its burst is whole), so it is left out.
#[test]
fn live_keys_leave_out_a_key_idle_from_this_very_instant() {
    let clock = ManualClock::new();
    let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("keys", per_second(2), &clock, 3);
    l.try_acquire(&9).unwrap(); // one permit every 500 ms: idle again at 500 ms
    clock.advance(ms(400));
    l.try_acquire(&7).unwrap(); // idle again at 900 ms
    clock.advance(ms(100)); // 500 ms
    let live: Vec<(u8, u32)> = l
        .live_keys()
        .iter()
        .map(|s| (s.key, s.available_permits))
        .collect();
    assert_eq!(live, [(7, 1)]);
    clock.advance(ms(400)); // 900 ms: key 7 idle too
    assert!(l.live_keys().is_empty());
}

/// A reservation on a key that has since gone idle gives its permits back (they all came back
/// already), whether the table still holds the key or dropped it: no answer may depend on
/// whether a store kept or dropped an idle key.
#[test]
fn a_reservation_on_a_key_gone_idle_answers_the_same_kept_or_dropped() {
    for drop_it in [false, true] {
        let clock = ManualClock::new();
        let l: KeyedLimiter<u8, _, 8> = KeyedLimiter::with_clock("keys", per_second(1), &clock, 3);
        let reservation = l.reserve(&5).unwrap();
        clock.advance(ms(1500));
        if drop_it {
            assert_eq!(l.reclaim_idle(), 0); // none left
        }
        assert!(reservation.cancel(), "dropped: {drop_it}");
        assert_eq!(l.available_permits(&5), 1, "dropped: {drop_it}");
    }
}

/// A refusal reaches a key listener when the limiter has no other listener, and a plain
/// listener when it has no key listener: each hears it alone.
#[test]
fn a_keyed_refusal_reaches_a_lone_key_listener_and_a_lone_plain_listener() {
    struct Keys(Mutex<Vec<(u8, Reason)>>);
    impl KeyListener<u8> for Keys {
        fn on_event(&self, key: &u8, event: &Event) {
            if let Event::Rejected(e) = event {
                self.0.lock().unwrap().push((*key, e.reason()));
            }
        }
    }
    struct Plain(Mutex<Vec<Reason>>);
    impl Listener for Plain {
        fn on_event(&self, event: &Event) {
            if let Event::Rejected(e) = event {
                self.0.lock().unwrap().push(e.reason());
            }
        }
    }

    let keys: &'static Keys = Box::leak(Box::new(Keys(Mutex::new(Vec::new()))));
    let l: KeyedLimiter<u8, _, 4> =
        KeyedLimiter::with_clock("keys", per_second(1), ManualClock::new(), 0)
            .with_key_listener(keys);
    l.try_acquire(&2).unwrap();
    assert!(l.try_acquire(&2).is_err());
    assert_eq!(*keys.0.lock().unwrap(), [(2, Reason::NoPermitInTime)]);

    let plain: &'static Plain = Box::leak(Box::new(Plain(Mutex::new(Vec::new()))));
    let l: KeyedLimiter<u8, _, 4> =
        KeyedLimiter::with_clock("keys", per_second(1), ManualClock::new(), 0).with_listener(plain);
    l.try_acquire(&2).unwrap();
    assert!(l.try_acquire(&2).is_err());
    assert_eq!(*plain.0.lock().unwrap(), [Reason::NoPermitInTime]);
}

/// A tiered limiter's `Debug` names each tier with its config, as given.
#[test]
fn tiers_debug_names_each_tier_and_its_config() {
    let tiers: Tiers<u8, 2, &str, _> = Tiers::new(
        [
            Tier::new("free", per_second(1)),
            Tier::new("paid", per_second(9)),
        ],
        |key: &u8| if *key < 10 { "free" } else { "paid" },
    );
    let text = format!("{tiers:?}");
    assert!(text.contains("\"free\""), "{text}");
    assert!(text.contains("\"paid\""), "{text}");
    assert!(text.contains(&format!("{:?}", per_second(9))), "{text}");
}

/// A key's config is its tier's: `config_of` answers the config of the tier the key is on now.
#[test]
fn config_of_is_the_config_of_the_keys_tier() {
    let tiers: Tiers<u8, 2, &str, _> = Tiers::new(
        [
            Tier::new("free", per_second(1)),
            Tier::new("paid", per_second(9)),
        ],
        |key: &u8| if *key < 10 { "free" } else { "paid" },
    );
    let l: KeyedLimiter<u8, _, 8, _> =
        KeyedLimiter::tiered_with_clock("plans", tiers, ManualClock::new(), 0);
    assert_eq!(l.config_of(&3), Some(per_second(1)));
    assert_eq!(l.config_of(&30), Some(per_second(9)));
}

/// A reservation made while its key was on one tier gives nothing back once a call has moved
/// the key to a tier with other numbers (the key was reconfigured alone: its state carried
/// over), and the cancel leaves the key as that call left it.
#[test]
fn a_reservation_gives_nothing_back_after_its_key_moved_tier() {
    use std::sync::atomic::{AtomicBool, Ordering};
    static PAID: AtomicBool = AtomicBool::new(false);
    let tiers: Tiers<u8, 2, &str, _> = Tiers::new(
        [
            Tier::new("free", per_second(1)),
            Tier::new("slow", Config::new(1, Duration::from_secs(2)).unwrap()),
        ],
        |_: &u8| {
            if PAID.load(Ordering::Relaxed) {
                "slow"
            } else {
                "free"
            }
        },
    );
    let l: KeyedLimiter<u8, _, 8, _> =
        KeyedLimiter::tiered_with_clock("plans", tiers, ManualClock::new(), 0);
    let reservation = l.reserve(&1).unwrap();
    PAID.store(true, Ordering::Relaxed);
    assert!(l.try_acquire(&1).is_err()); // moves the key to "slow"
    let before = (l.available_permits(&1), l.retry_after(&1));
    assert!(!reservation.cancel());
    assert_eq!((l.available_permits(&1), l.retry_after(&1)), before);
}

/// The rules of a keyed limiter print its name and whether a key listener hears it.
#[test]
fn key_rules_debug_names_the_limiter_and_its_key_listener() {
    let l: KeyedLimiter<u8, _, 4> =
        KeyedLimiter::with_clock("peers", per_second(1), ManualClock::new(), 0);
    let text = format!("{:?}", l.key_rules());
    assert!(text.starts_with("KeyRules"), "{text}");
    assert!(text.contains("\"peers\""), "{text}");
    assert!(text.contains("has_key_listener: false"), "{text}");
}

/// The one keyed type prints its name, id and config, and its store (the table's capacity).
#[test]
fn keyed_debug_names_the_limiter_and_its_store() {
    let l: KeyedLimiter<u8, _, 4> =
        KeyedLimiter::with_clock("peers", per_second(1), ManualClock::new(), 0);
    let text = format!("{l:?}");
    assert!(text.starts_with("Keyed {"), "{text}");
    assert!(text.contains("id: \"peers\""), "{text}");
    assert!(text.contains("config: Config"), "{text}");
    assert!(text.contains("store: FixedTable { capacity: 4"), "{text}");
}

/// A store reads the key listener its rules were given, to tell it about its own events.
#[test]
fn key_rules_hand_out_the_key_listener_they_were_given() {
    struct Quiet;
    impl KeyListener<u8> for Quiet {
        fn on_event(&self, _: &u8, _: &Event) {}
    }
    static QUIET: Quiet = Quiet;
    let l: KeyedLimiter<u8, _, 4> =
        KeyedLimiter::with_clock("peers", per_second(1), ManualClock::new(), 0);
    assert!(l.key_rules().key_listener().is_none());
    let l = l.with_key_listener(&QUIET);
    assert!(l.key_rules().key_listener().is_some());
}

/// A record restored into a table that already holds live keys, with no room for the record's
/// keys: they raise the mark every key not held starts from, and a key the table holds keeps
/// its own state. Its available permits say what a call then gets (before, no test restored into
/// a table holding keys below the mark, and a peek that put every held key under the mark went
/// unseen).
#[test]
fn a_held_key_below_a_restored_mark_peeks_what_a_call_gets() {
    use ritmo_core::persist::Restored;
    let clock = ManualClock::new();
    let config = Config::new(10, Duration::from_secs(10)).unwrap();
    let saver: KeyedLimiter<u32, _, 2> = KeyedLimiter::with_clock("peers", config, &clock, 1);
    saver.try_acquire_n(&3, 10).unwrap();
    saver.try_acquire_n(&4, 10).unwrap();
    let mut saved = [0u8; KeyedLimiter::<u32, &ManualClock, 2>::SAVED_LEN];
    assert!(saver.save_into(&mut saved));
    let table: KeyedLimiter<u32, _, 2> = KeyedLimiter::with_clock("peers", config, &clock, 2);
    table.try_acquire(&1).unwrap();
    table.try_acquire_n(&2, 2).unwrap();
    assert_eq!(table.restore(&saved), Restored::Saved);
    // Keys 3 and 4 did not fit: a key not held now starts spent (none fits here either).
    assert!(table.try_acquire(&5).is_err());
    assert_eq!(
        (table.available_permits(&1), table.available_permits(&2)),
        (9, 8)
    );
    table.try_acquire_n(&1, 9).unwrap();
    assert!(table.try_acquire(&1).is_err());
}

/// `KeyRate`, the numbers a keyed store decides with, answers in its units (nanoseconds on a
/// 1 GHz clock) what a limiter of its config promises: 4 per second is 250 ms a permit, the full
/// burst for a state at or before now (idle), the wait for the permits a spent state owes, and
/// the numbers of a change once it is made. Only the std map's paths called these, and no test
/// asked them directly.
#[test]
fn a_key_rate_answers_its_configs_numbers_in_units() {
    use ritmo_core::keyed::KeyRate;
    let config = per_second(4).with_max_wait(Duration::from_secs(2));
    let rate = KeyRate::with_clock("api", config, ManualClock::new());
    assert!(rate.enabled());
    assert!(rate.check_permits(0).is_err());
    assert!(rate.check_permits(4).is_ok());
    assert!(rate.check_permits(5).is_err());
    assert_eq!(rate.max_wait(), 2_000_000_000);
    assert_eq!(
        (rate.increment(1), rate.increment(3)),
        (250_000_000, 750_000_000)
    );
    assert!(rate.is_idle(5, 5) && !rate.is_idle(6, 5));
    assert_eq!(rate.available(0, 0), 4);
    assert_eq!(rate.available(500_000_000, 0), 2);
    assert_eq!(rate.available(1_000_000_000, 0), 0);
    assert_eq!(rate.wait(1_000_000_000, 0, 1), 250_000_000);
    assert_eq!(rate.wait(1_000_000_000, 0, 2), 500_000_000);
    let off = KeyRate::with_clock("off", config.with_enabled(false), ManualClock::new());
    assert!(!off.enabled());
    #[cfg(feature = "reconfigure")]
    {
        rate.change(per_second(8), 0, |_| {});
        assert_eq!((rate.increment(1), rate.available(0, 0)), (125_000_000, 8));
        assert_eq!(rate.max_wait(), 0);
        assert!(rate.check_permits(8).is_ok());
    }
}

/// The trait's own answers on core's table: its id, emptiness, and the tier a key is on, by
/// position in the tiers given (`None` for a plan no tier has).
#[test]
fn the_keyed_face_answers_its_id_emptiness_and_tier_positions() {
    let l: KeyedLimiter<u8, _, 4> =
        KeyedLimiter::with_clock("uploads", per_second(1), ManualClock::new(), 0);
    assert_eq!(l.id(), "uploads");
    assert!(l.is_empty());
    l.try_acquire(&1).unwrap();
    assert!(!l.is_empty());
    assert_eq!(l.tier_index(&1), Some(0), "one config is tier 0");

    let tiers = Tiers::new(
        [
            Tier::new("free", per_second(1)),
            Tier::new("team", per_second(4)),
            Tier::new("paid", per_second(9)),
        ],
        |key: &u8| ["free", "team", "paid", "gold"][usize::from(*key)],
    );
    let t: KeyedLimiter<u8, _, 4, _> =
        KeyedLimiter::tiered_with_clock("plans", tiers, ManualClock::new(), 0);
    let positions: Vec<_> = (0..4).map(|key| t.tier_index(&key)).collect();
    assert_eq!(positions, [Some(0), Some(1), Some(2), None]);
}

/// The waiting verbs take their permits at their slot (the fake clock moves there), one or `k`
/// at once, and a call whose permits would come after `max_wait` is refused, taking nothing
/// and leaving the clock where it was.
#[test]
fn keyed_waits_take_their_slot_or_refuse_beyond_max_wait() {
    let clock = ManualClock::new();
    let c = per_second(2).with_max_wait(ms(500));
    let l: KeyedLimiter<u8, _, 4> = KeyedLimiter::with_clock("waits", c, &clock, 0);
    l.acquire_advancing(&1).unwrap();
    l.acquire_with(&1, &mut AdvanceClock).unwrap();
    assert_eq!(clock.now(), 0, "the burst of 2 needs no wait");
    l.acquire_advancing(&1).unwrap();
    assert_eq!(clock.now(), 500_000_000, "the third permit's slot");
    // Two more would arrive at 1.5 s, 1 s away: beyond max_wait.
    let refused = l.acquire_n_advancing(&1, 2).unwrap_err();
    assert!(
        matches!(refused, AcquireError::RateLimited(_)),
        "{refused:?}"
    );
    let refused = l.acquire_n_with(&1, 2, &mut AdvanceClock).unwrap_err();
    assert!(
        matches!(refused, AcquireError::RateLimited(_)),
        "{refused:?}"
    );
    assert_eq!(clock.now(), 500_000_000);
    l.acquire_n_with(&1, 1, &mut AdvanceClock).unwrap();
    assert_eq!(clock.now(), 1_000_000_000);
    l.acquire_n_advancing(&1, 1).unwrap();
    assert_eq!(clock.now(), 1_500_000_000);

    // Without a wait allowed, a spent key is refused by every waiting verb.
    let now: KeyedLimiter<u8, _, 4> = KeyedLimiter::with_clock("now", per_second(1), &clock, 0);
    now.try_acquire(&1).unwrap();
    let refused = now.acquire_advancing(&1).unwrap_err();
    assert_eq!(refused.reason(), Reason::NoPermitInTime);
    assert!(now.acquire_with(&1, &mut AdvanceClock).is_err());
    assert_eq!(clock.now(), 1_500_000_000);
}

/// Calls admitted after a wait are counted apart from those admitted at once.
#[cfg(feature = "counters")]
#[test]
fn keyed_counts_waited_calls_apart() {
    let clock = ManualClock::new();
    let c = per_second(1).with_max_wait(Duration::from_secs(2));
    let l: KeyedLimiter<u8, _, 4> = KeyedLimiter::with_clock("counts", c, &clock, 0);
    l.acquire_advancing(&1).unwrap();
    l.acquire_advancing(&1).unwrap();
    l.acquire_advancing(&1).unwrap();
    assert_eq!((l.admitted_count(), l.waited_count()), (1, 2));
}

/// A full table of 1024 slots (one that keeps bounds to find its soonest key) on two tiers:
/// after one tier's config changes so that its key frees up first, a new key's `KeyCapacity`
/// refusal names that key's time (SPEC §10: `retry_after` is when the soonest live key frees
/// up), and waiting it out finds room.
#[cfg(feature = "reconfigure")]
#[test]
fn a_full_large_table_names_the_soonest_key_after_a_tier_change() {
    let clock = ManualClock::new();
    let tiers = Tiers::new(
        [
            Tier::new("mid", Config::new(1, Duration::from_secs(5)).unwrap()),
            Tier::new("slow", Config::new(1, Duration::from_secs(10)).unwrap()),
        ],
        |key: &u16| if *key == 0 { "slow" } else { "mid" },
    );
    let l: KeyedLimiter<u16, _, 1024, _> = KeyedLimiter::tiered_with_clock("big", tiers, &clock, 7);
    let cap = u16::try_from(l.capacity()).unwrap();
    for key in 0..cap {
        l.try_acquire(&key).unwrap();
    }
    let full = l.try_acquire(&cap).unwrap_err();
    assert_eq!(full.reason(), Reason::KeyCapacity);
    assert_eq!(full.retry_after(), Duration::from_secs(5));
    // Key 0 owes its next permit 1 s from now under 1 per second (progress capped at the new
    // interval): every other key frees up at 5 s.
    l.set_tier_config("slow", per_second(1)).unwrap();
    let full = l.try_acquire(&cap).unwrap_err();
    assert_eq!(full.reason(), Reason::KeyCapacity);
    assert_eq!(full.retry_after(), Duration::from_secs(1));
    clock.advance(Duration::from_secs(1));
    l.try_acquire(&cap).unwrap();
}

/// A store's one-permit fast path decides with the numbers it read before the call
/// (`unchanged_rules`). Once a change of config has begun, `take_unchanged` with those numbers
/// must do nothing and answer `None`, so that the store decides again with the numbers in force:
/// a permit taken with the old numbers on a state the change converted would be taken under
/// neither config. Only the std map's hot path calls these, and only a change landing between
/// its two reads of the generation showed the difference there.
#[cfg(feature = "reconfigure")]
#[test]
fn the_fast_path_takes_nothing_with_numbers_read_before_a_change() {
    use ritmo_core::keyed::{KeyCell, KeyRules};
    let rules: KeyRules<u8, _> = KeyRules::with_clock("api", per_second(1), ManualClock::new());
    let cell = KeyCell::new();
    let before = rules.unchanged_rules(()).expect("never changed");
    rules
        .key_rate()
        .change(per_second(4), 0, |convert| cell.convert(convert));
    let converted = cell.tat();
    assert!(rules.unchanged_rules(()).is_none(), "changed: no fast path");
    assert_eq!(rules.take_unchanged(&cell, &before, 0), None);
    assert_eq!(cell.tat(), converted, "nothing taken with the old numbers");
}

/// `still` answers whether the numbers a store settled on are in force: not once a change has
/// begun (inside the change, while it converts the keys), nor after it.
#[cfg(feature = "reconfigure")]
#[test]
fn settled_numbers_are_not_still_in_force_during_or_after_a_change() {
    use ritmo_core::keyed::KeyRate;
    let rate = KeyRate::with_clock("api", per_second(1), ManualClock::new());
    let settled = rate.settled();
    assert!(rate.still(&settled));
    let mut during = None;
    rate.change(per_second(2), 0, |_| during = Some(rate.still(&settled)));
    assert_eq!(during, Some(false), "a change in progress");
    assert!(!rate.still(&settled), "a change made");
    let again = rate.settled();
    assert!(rate.still(&again), "the new numbers, settled");
}
