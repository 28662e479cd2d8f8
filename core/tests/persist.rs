//! SPEC §24, state across resets, against the shared reference model (`ritmo-test-support`,
//! which never resets):
//! - a reset at any point of a random schedule, the state saved after each step and restored into
//!   a limiter built afresh on a clock that kept counting, changes no later decision, on a
//!   nanosecond and a 32768 Hz clock, for a single limiter and for bands;
//! - any bytes restored (random, a valid record with bytes flipped, one from another config, one
//!   from a clock ahead of now) never panic and never give more than the model without the reset:
//!   every call the restored limiter admits afterwards the model admits too, and the untrusted
//!   ones leave the limiter fully spent.

use core::time::Duration;

use proptest::prelude::*;
use ritmo_core::persist::{Restored, Untrusted};
use ritmo_core::{Bands, Clock, Config, ManualClock, RateLimiter};
use ritmo_test_support::record::{crc32, seal};
use ritmo_test_support::{BandsModel, Gcra, Op, Outcome, Units, ops};

/// A step: let time pass, then ask for `k` permits.
fn steps(ops: &[Op]) -> Vec<(u64, u32)> {
    let mut out = Vec::new();
    let mut gap = 0;
    for op in ops {
        match *op {
            Op::Advance(d) => gap += d,
            Op::TryOne => out.push((std::mem::take(&mut gap), 1)),
            Op::TryAcquire(k) | Op::Reserve(k) | Op::ReserveWithin(k, _) => {
                out.push((std::mem::take(&mut gap), k));
            }
            _ => {}
        }
    }
    out
}

/// Runs `steps` on a limiter that is reset after step `reset` (saved, rebuilt, restored) and on
/// the model: every answer the same.
fn reset_single<const HZ: u64>(
    config: Config,
    steps: &[(u64, u32)],
    reset: usize,
) -> Result<(), TestCaseError> {
    let clock = ManualClock::<HZ>::with_reading(1);
    let mut limiter = RateLimiter::with_clock("persist", config, &clock);
    let mut model = Gcra::new(Units::new(HZ), config);
    let mut saved = limiter.save();
    for (i, &(gap, k)) in steps.iter().enumerate() {
        if i == reset {
            limiter = RateLimiter::with_clock("persist", config, &clock);
            prop_assert_eq!(limiter.restore(&saved), Restored::Saved);
        }
        clock.advance_ticks(gap);
        let now = clock.now();
        let expected = model.try_acquire(now, k);
        let got = Outcome::of_try(limiter.try_acquire_n(k));
        expected
            .check(&got, &Units::new(HZ))
            .map_err(TestCaseError::fail)?;
        prop_assert_eq!(
            limiter.available_permits(),
            model.available(now),
            "step {}",
            i
        );
        saved = limiter.save();
    }
    Ok(())
}

/// [`reset_single`] for two bands.
fn reset_bands<const HZ: u64>(
    configs: [Config; 2],
    steps: &[(u64, u32)],
    reset: usize,
) -> Result<(), TestCaseError> {
    let clock = ManualClock::<HZ>::with_reading(1);
    let build = || Bands::with_clock("persist", configs, &clock).with_max_wait(Duration::ZERO);
    let mut bands = build();
    let mut model = BandsModel::new(Units::new(HZ), &configs, Duration::ZERO);
    let mut saved = [0u8; Bands::<&ManualClock, 2>::SAVED_LEN];
    prop_assert!(bands.save_into(&mut saved));
    for (i, &(gap, k)) in steps.iter().enumerate() {
        if i == reset {
            bands = build();
            prop_assert_eq!(bands.restore(&saved), Restored::Saved);
        }
        clock.advance_ticks(gap);
        let now = clock.now();
        let expected = model.try_acquire(now, k);
        let got = Outcome::of_try(bands.try_acquire_n(k));
        expected
            .check(&got, &Units::new(HZ))
            .map_err(TestCaseError::fail)?;
        prop_assert_eq!(
            bands.available_permits(),
            model.available(now),
            "step {}",
            i
        );
        prop_assert!(bands.save_into(&mut saved));
    }
    Ok(())
}

/// Bytes to restore: random, a trusted record with one byte changed, one from another config,
/// one saved at a later reading, or the trusted record itself.
#[derive(Debug, Clone)]
enum Bytes {
    Random(Vec<u8>),
    Flipped(usize, u8),
    Foreign(Config),
    Ahead(u64),
    Trusted,
}

fn bytes() -> impl Strategy<Value = Bytes> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..40).prop_map(Bytes::Random),
        (0usize..28, 1u8..=255).prop_map(|(at, x)| Bytes::Flipped(at, x)),
        ops::config(50, Duration::from_secs(2)).prop_map(Bytes::Foreign),
        (1u64..1_000_000_000).prop_map(Bytes::Ahead),
        Just(Bytes::Trusted),
    ]
}

/// Runs `steps[..cut]`, saves, restores `bytes` into a limiter built afresh, then runs the rest on
/// it and on the model (which never reset) given only what the limiter admitted: the model admits
/// each of them, so the restored limiter never gives more than the one that kept running.
fn arbitrary_restore<const HZ: u64>(
    config: Config,
    steps: &[(u64, u32)],
    cut: usize,
    bytes: &Bytes,
) -> Result<(), TestCaseError> {
    let units = Units::new(HZ);
    let clock = ManualClock::<HZ>::with_reading(1_000);
    let limiter = RateLimiter::with_clock("persist", config, &clock);
    let mut model = Gcra::new(units, config);
    let cut = cut % (steps.len() + 1);
    for &(gap, k) in &steps[..cut] {
        clock.advance_ticks(gap);
        let admitted = limiter.try_acquire_n(k).is_ok();
        prop_assert_eq!(
            model.try_acquire(clock.now(), k) == Outcome::Admitted,
            admitted
        );
    }
    let trusted = limiter.save();
    let record: Vec<u8> = match bytes {
        Bytes::Random(b) => b.clone(),
        Bytes::Flipped(at, x) => {
            let mut b = trusted.to_vec();
            b[*at] ^= x;
            b
        }
        Bytes::Foreign(other) => {
            let other = RateLimiter::with_clock("other", *other, &clock);
            other.save().to_vec()
        }
        Bytes::Ahead(ticks) => {
            clock.advance_ticks(*ticks);
            let ahead = RateLimiter::with_clock("ahead", config, &clock).save();
            // the clock goes back to where it was: the record is from its future
            let back = ManualClock::<HZ>::with_reading(clock.now() - ticks);
            let restored = RateLimiter::with_clock("persist", config, &back);
            let verdict = restored.restore(&ahead);
            prop_assert_eq!(verdict, Restored::Spent(Untrusted::ClockBehind));
            prop_assert_eq!(restored.available_permits(), 0);
            return Ok(());
        }
        Bytes::Trusted => trusted.to_vec(),
    };
    let restored = RateLimiter::with_clock("persist", config, &clock);
    let verdict = restored.restore(&record);
    let now = clock.now();
    match verdict {
        Restored::Saved => {
            prop_assert_eq!(restored.available_permits(), model.available(now));
        }
        Restored::Spent(why) => {
            prop_assert_eq!(restored.available_permits(), 0, "{:?}", why);
            if let Bytes::Foreign(other) = bytes
                && other == &config
            {
                prop_assert!(false, "the same config was taken as foreign");
            }
        }
    }
    if matches!(bytes, Bytes::Trusted) {
        prop_assert_eq!(verdict, Restored::Saved);
    }
    for &(gap, k) in &steps[cut..] {
        clock.advance_ticks(gap);
        let now = clock.now();
        prop_assert!(restored.available_permits() <= model.available(now));
        if restored.try_acquire_n(k).is_ok() {
            prop_assert_eq!(model.try_acquire(now, k), Outcome::Admitted);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn a_reset_anywhere_changes_no_later_decision_of_a_single_limiter(
        (config, ops) in ops::schedule(8, Duration::from_secs(2), Units::NANOS, 120),
        reset in any::<prop::sample::Index>(),
    ) {
        let steps = steps(&ops);
        let reset = reset.index(steps.len() + 1);
        reset_single::<1_000_000_000>(config, &steps, reset)?;
        reset_single::<32_768>(config, &steps, reset)?;
    }

    #[test]
    fn a_reset_anywhere_changes_no_later_decision_of_bands(
        a in ops::config(8, Duration::from_secs(2)),
        b in ops::config(8, Duration::from_secs(2)),
        (_, ops) in ops::schedule(8, Duration::from_secs(2), Units::NANOS, 120),
        reset in any::<prop::sample::Index>(),
    ) {
        let configs = [a.with_max_wait(Duration::ZERO), b.with_max_wait(Duration::ZERO)];
        let steps = steps(&ops);
        let reset = reset.index(steps.len() + 1);
        reset_bands::<1_000_000_000>(configs, &steps, reset)?;
        reset_bands::<32_768>(configs, &steps, reset)?;
    }

    #[test]
    fn any_bytes_restore_without_panic_and_never_above_the_model(
        (config, ops) in ops::schedule(8, Duration::from_secs(2), Units::NANOS, 120),
        cut in any::<usize>(),
        bytes in bytes(),
    ) {
        let steps = steps(&ops);
        arbitrary_restore::<1_000_000_000>(config, &steps, cut, &bytes)?;
        arbitrary_restore::<32_768>(config, &steps, cut, &bytes)?;
    }

    #[test]
    fn bands_restore_any_bytes_without_panic(
        record in prop::collection::vec(any::<u8>(), 0..64),
    ) {
        let clock = ManualClock::new();
        let configs = [Config::new(3, Duration::from_secs(1)).unwrap(); 2];
        let bands = Bands::new("persist", configs, &clock);
        match bands.restore(&record) {
            Restored::Saved => {}
            Restored::Spent(_) => prop_assert_eq!(bands.available_permits(), 0),
        }
    }
}

/// The three untrusted kinds, one by one, with their reasons.
#[test]
fn untrusted_records_restore_fully_spent_with_their_reason() {
    let config = Config::new(10, Duration::from_secs(10)).unwrap();
    let clock = ManualClock::new();
    let limiter = RateLimiter::new("a", config, &clock);
    limiter.try_acquire_n(3).unwrap();
    let saved = limiter.save();

    let mut flipped = saved;
    flipped[16] ^= 0x80;
    let fresh = RateLimiter::new("a", config, &clock);
    assert_eq!(fresh.restore(&flipped), Restored::Spent(Untrusted::Corrupt));
    assert_eq!(fresh.available_permits(), 0);
    let fresh = RateLimiter::new("a", config, &clock);
    assert_eq!(
        fresh.restore(&saved[..27]),
        Restored::Spent(Untrusted::Corrupt)
    );

    let other = Config::new(11, Duration::from_secs(10)).unwrap();
    let fresh = RateLimiter::new("a", other, &clock);
    assert_eq!(
        fresh.restore(&saved),
        Restored::Spent(Untrusted::ForeignConfig)
    );
    assert_eq!(fresh.available_permits(), 0);
    // the same config on another clock is foreign too
    let rtc = ManualClock::<32_768>::with_reading(0);
    let fresh = RateLimiter::with_clock("a", config, &rtc);
    assert_eq!(
        fresh.restore(&saved),
        Restored::Spent(Untrusted::ForeignConfig)
    );

    clock.advance(Duration::from_secs(5));
    let later = RateLimiter::new("a", config, &clock).save();
    let behind = ManualClock::new();
    let fresh = RateLimiter::new("a", config, &behind);
    assert_eq!(
        fresh.restore(&later),
        Restored::Spent(Untrusted::ClockBehind)
    );
    assert_eq!(fresh.available_permits(), 0);
    // fully spent, then the steady rate: one permit per second
    behind.advance(Duration::from_secs(1));
    assert_eq!(fresh.available_permits(), 1);

    let fresh = RateLimiter::new("a", config, &clock);
    assert_eq!(fresh.restore(&saved), Restored::Saved);
    assert_eq!(fresh.available_permits(), 10); // 5 s later: the 3 are back, capped at 10
}

/// Each key type's bytes read back as the same key (the `KeyBytes` contract), and bytes that
/// encode no key of the type read as none.
#[test]
fn key_bytes_read_back_what_they_wrote() {
    use core::net::{Ipv4Addr, Ipv6Addr};
    use ritmo_core::persist::KeyBytes;
    fn round_trip<K: KeyBytes + PartialEq + core::fmt::Debug>(key: K) {
        let mut out = vec![0u8; K::LEN];
        key.write(&mut out);
        assert_eq!(K::read(&out), Some(key));
    }
    round_trip([7u8, 0, 255]);
    round_trip(true);
    round_trip(false);
    round_trip('é');
    round_trip(Ipv4Addr::new(192, 0, 2, 7));
    round_trip(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 7));
    assert_eq!(bool::read(&[2]), None);
    assert_eq!(
        char::read(&0xD800u32.to_le_bytes()),
        None,
        "a surrogate is no char"
    );
    assert_eq!(<[u8; 4]>::read(&[1, 2, 3]), None, "three bytes are no four");
}

/// Bands reconfigured since they were built save a record no bands trust (as a reconfigured
/// limiter does), overwriting a valid one in the same place: restored, the bands are fully
/// spent, never given the older record's permits back.
#[cfg(feature = "reconfigure")]
#[test]
fn reconfigured_bands_overwrite_a_saved_record_with_one_never_trusted() {
    let configs = [
        Config::new(4, Duration::from_secs(1)).unwrap(),
        Config::new(10, Duration::from_secs(60)).unwrap(),
    ];
    let clock = ManualClock::new();
    let bands = Bands::new("radio", configs, &clock);
    let mut saved = [0u8; Bands::<&ManualClock, 2>::SAVED_LEN];
    assert!(bands.save_into(&mut saved)); // a valid record of fresh bands
    bands.reconfigure([Config::new(8, Duration::from_secs(2)).unwrap(), configs[1]]);
    bands.try_acquire_n(4).unwrap();
    assert!(bands.save_into(&mut saved));
    let after_reset = Bands::new("radio", configs, &clock);
    assert!(matches!(after_reset.restore(&saved), Restored::Spent(_)));
    assert_eq!(after_reset.available_permits(), 0);
}

/// A record whose checksum is right but whose head is not (another version, a byte that must be
/// zero set) is corrupt, each fault alone; a record too short to hold a head is corrupt too,
/// and none of them panics.
#[test]
fn a_sealed_record_with_a_bad_head_is_corrupt() {
    let config = Config::new(10, Duration::from_secs(10)).unwrap();
    let clock = ManualClock::new();
    let limiter = RateLimiter::new("a", config, &clock);
    limiter.try_acquire_n(3).unwrap();
    let saved = limiter.save();
    let end = saved.len() - 4;
    assert_eq!(
        saved[end..],
        crc32(&saved[..end]).to_le_bytes(),
        "the docs' checksum"
    );
    for (at, value) in [(0, saved[0].wrapping_add(1)), (2, 1), (3, 1)] {
        let mut bad = saved;
        bad[at] = value;
        seal(&mut bad);
        let fresh = RateLimiter::new("a", config, &clock);
        assert_eq!(
            fresh.restore(&bad),
            Restored::Spent(Untrusted::Corrupt),
            "byte {at} set to {value}"
        );
    }
    for short in [&saved[..1], &saved[..3], &saved[..4]] {
        let fresh = RateLimiter::new("a", config, &clock);
        assert_eq!(fresh.restore(short), Restored::Spent(Untrusted::Corrupt));
    }
}

/// `save_into` writes only into a place of exactly `SAVED_LEN` bytes (else `false`, nothing
/// written), and bands as many as a record counts (255) save and restore.
#[test]
fn bands_save_only_into_their_length_and_up_to_255_of_them() {
    let config = Config::new(4, Duration::from_secs(1)).unwrap();
    let clock = ManualClock::new();
    let bands = Bands::new("radio", [config; 2], &clock);
    bands.try_acquire_n(3).unwrap();
    let mut wrong = [7u8; Bands::<&ManualClock, 2>::SAVED_LEN + 1];
    assert!(!bands.save_into(&mut wrong));
    assert!(!bands.save_into(&mut wrong[..10]));
    assert!(wrong.iter().all(|&b| b == 7), "nothing written");

    let many = Bands::new("many", [config; 255], &clock);
    many.try_acquire_n(3).unwrap();
    let mut saved = vec![0u8; Bands::<&ManualClock, 255>::SAVED_LEN];
    assert!(many.save_into(&mut saved));
    let restored = Bands::new("many", [config; 255], &clock);
    assert_eq!(restored.restore(&saved), Restored::Saved);
    assert_eq!(restored.available_permits(), 1);
}
