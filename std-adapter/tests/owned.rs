//! Owned reservations follow the one lifecycle, for every kind: a reservation that owns its
//! limiter through an `Arc` commits, and gives its permits back on cancel or drop only while it is
//! the newest (the tail rule), exactly as a borrowed one does; it outlives the borrow (moved to
//! another thread). Expected numbers come from the rule: with 1 permit per second and a burst of
//! 1, the first call passes at once and each next one is 1 s later.

use std::sync::Arc;
use std::time::Duration;

use ritmo_core::keyed::{Tier, Tiers};
use ritmo_core::{Bands, Config, ManualClock, RateLimiter};
use ritmo_std::{KeyedRateLimiter, Limit};

fn config() -> Config {
    Config::new(1, Duration::from_secs(1))
        .unwrap()
        .with_max_wait(Duration::from_secs(10))
}

/// The tail rule on `limiter` for `key`, through owned reservations: `available` reads the
/// permits that would pass now.
fn tail_rule<L: Limit>(limiter: &Arc<L>, key: &L::Key, available: impl Fn() -> u32) {
    let first = limiter.reserve_owned(key, 1, None).unwrap();
    assert_eq!(first.wait_time(), Duration::ZERO);
    let second = limiter.reserve_owned(key, 1, None).unwrap();
    assert_eq!(second.wait_time(), Duration::from_secs(1));
    let third = limiter.reserve_owned(key, 1, None).unwrap();
    assert_eq!(third.wait_time(), Duration::from_secs(2));
    // Not the newest: nothing goes back, its slot stays unused.
    assert!(!second.cancel());
    // The newest, dropped on another thread (it owns its limiter): its permit goes back, so the
    // next reservation takes its slot, 2 s away.
    std::thread::spawn(move || drop(third)).join().unwrap();
    let again = limiter
        .reserve_owned(key, 1, Some(Duration::from_secs(2)))
        .unwrap();
    assert_eq!(again.wait_time(), Duration::from_secs(2));
    again.commit();
    first.commit();
    assert_eq!(available(), 0);
    // A call that would wait beyond its own max_wait is refused without a change.
    assert!(
        limiter
            .reserve_owned(key, 1, Some(Duration::from_secs(2)))
            .is_err()
    );
    assert!(limiter.try_acquire_for(key, 1).is_err());
}

#[test]
fn an_owned_reservation_of_a_limiter_follows_the_tail_rule() {
    let limiter = Arc::new(RateLimiter::new("one", config(), ManualClock::new()));
    tail_rule(&limiter, &(), || limiter.available_permits());
}

#[test]
fn an_owned_reservation_of_bands_follows_the_tail_rule_in_every_band() {
    let wide = Config::new(10, Duration::from_secs(10)).unwrap();
    let bands = Bands::new("bands", [config(), wide], ManualClock::new());
    let bands = Arc::new(bands.with_max_wait(Duration::from_secs(10)));
    tail_rule(&bands, &(), || bands.available_permits());
    // Three reservations kept (first, second's unused slot, again): the wide band, 10 per 10 s,
    // lost exactly those three.
    assert_eq!(bands.available_permits_per_band()[1], 7);
}

#[test]
fn an_owned_reservation_of_a_keyed_limiter_follows_the_tail_rule_per_key() {
    let limiter = Arc::new(KeyedRateLimiter::with_clock(
        "keyed",
        config(),
        8,
        ManualClock::new(),
    ));
    tail_rule(&limiter, &7u8, || limiter.available_permits(&7));
    // Another key is untouched.
    assert_eq!(limiter.available_permits(&8), 1);
}

#[test]
fn an_owned_reservation_of_a_tiered_keyed_limiter_follows_its_keys_tier() {
    let tiers = Tiers::new(
        [
            Tier::of(0, "slow", config()),
            Tier::of(1, "fast", Config::new(4, Duration::from_secs(1)).unwrap()),
        ],
        (|key: &u8| usize::from(*key >= 100)) as fn(&u8) -> usize,
    );
    let limiter = Arc::new(KeyedRateLimiter::tiered_with_clock(
        "tiered",
        tiers,
        8,
        ManualClock::new(),
    ));
    tail_rule(&limiter, &1, || limiter.available_permits(&1));
    // A key of the fast tier has its own 4.
    let owned = limiter.reserve_owned(&100, 4, None).unwrap();
    assert_eq!(owned.wait_time(), Duration::ZERO);
    assert!(owned.cancel());
    assert_eq!(limiter.available_permits(&100), 4);
}

#[test]
fn a_borrowed_reservation_becomes_owned_only_with_its_own_limiter() {
    let a = Arc::new(RateLimiter::new("a", config(), ManualClock::new()));
    let b = Arc::new(RateLimiter::new("b", config(), ManualClock::new()));
    let reserved = a.reserve().unwrap();
    // Another limiter's handle: refused, the reservation handed back unchanged.
    let reserved = reserved.with_handle(Arc::clone(&b)).unwrap_err();
    assert_eq!(reserved.limiter().id(), "a");
    let owned = reserved.with_handle(Arc::clone(&a)).unwrap();
    assert!(owned.cancel());
    assert_eq!((a.available_permits(), b.available_permits()), (1, 1));
}
