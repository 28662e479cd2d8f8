//! SPEC §24, a keyed table's state across resets, against the shared reference model
//! (`ritmo-test-support`'s `KeyedModel` and `Gcra`, which never reset):
//! - a reset at any point of a random schedule (the table saved after each step, rebuilt with
//!   another seed and restored on a clock that kept counting) changes no later decision, in a
//!   table too small for every key (so room for keys runs out too), on a nanosecond and a
//!   32768 Hz clock;
//! - any bytes restored (random, a valid record with one byte changed, one from another config,
//!   capacity or key type, one from a clock ahead of now) never panic and never give any key more
//!   than the model without the reset; an untrusted record leaves every key fully spent, the keys
//!   never seen included: each then decides exactly as a fresh limiter that took its whole burst
//!   at the instant of the restore (SPEC: "restores as fully spent, never as fresh").

use core::time::Duration;

use proptest::prelude::*;
use ritmo_core::keyed::{KeyedLimiter, Tier, Tiers};
use ritmo_core::persist::{Restored, Untrusted, keyed_saved_len};
use ritmo_core::{Clock, Config, ManualClock};
use ritmo_test_support::record::seal;
use ritmo_test_support::{Gcra, KeyedModel, KeyedOp, Op, Outcome, Units, ops};

/// Keys the schedules use.
const KEYS: u8 = 6;
/// A key no schedule uses: never seen by any table.
const NEVER: u8 = 200;

/// A step: let time pass, then ask for `k` permits for a key.
fn steps(ops: &[KeyedOp]) -> Vec<(u64, u8, u32)> {
    let mut out = Vec::new();
    let mut gap = 0;
    for KeyedOp { key, op } in ops {
        let key = key % KEYS;
        match *op {
            Op::Advance(d) => gap += d,
            Op::TryOne => out.push((std::mem::take(&mut gap), key, 1)),
            Op::TryAcquire(k) | Op::Reserve(k) | Op::ReserveWithin(k, _) => {
                out.push((std::mem::take(&mut gap), key, k));
            }
            _ => {}
        }
    }
    out
}

type Table<'a, const HZ: u64, const N: usize> = KeyedLimiter<u8, &'a ManualClock<HZ>, N>;

/// Runs `steps` on a table of `N` slots that is reset before step `reset` (saved after each
/// step, rebuilt with another seed, restored) and on the model of `N` slots: every answer and
/// every key's available permits the same.
fn reset_keyed<const HZ: u64, const N: usize>(
    config: Config,
    steps: &[(u64, u8, u32)],
    reset: usize,
) -> Result<(), TestCaseError> {
    let units = Units::new(HZ);
    let clock = ManualClock::<HZ>::with_reading(1);
    let mut table: Table<HZ, N> = KeyedLimiter::with_clock("persist", config, &clock, 1);
    let mut model = KeyedModel::new(units, config, N);
    let mut saved = vec![0u8; Table::<HZ, N>::SAVED_LEN];
    prop_assert!(table.save_into(&mut saved));
    for (i, &(gap, key, k)) in steps.iter().enumerate() {
        if i == reset {
            table = KeyedLimiter::with_clock("persist", config, &clock, 0xfeed);
            prop_assert_eq!(table.restore(&saved), Restored::Saved);
        }
        clock.advance_ticks(gap);
        let now = clock.now();
        let expected = model.try_acquire(&key, now, k);
        let got = Outcome::of_try(table.try_acquire_n(&key, k));
        expected
            .check(&got, &units)
            .map_err(|e| TestCaseError::fail(format!("step {i}, key {key}: {e}")))?;
        for key in (0..KEYS).chain([NEVER]) {
            prop_assert_eq!(
                table.available_permits(&key),
                model.available(&key, now),
                "step {}, key {}",
                i,
                key
            );
        }
        prop_assert!(table.save_into(&mut saved));
    }
    Ok(())
}

/// Bytes to restore: random, a trusted record with one byte changed, one from another config,
/// another capacity or another key type, one saved at a later reading, or the trusted record.
#[derive(Debug, Clone)]
enum Bytes {
    Random(Vec<u8>),
    Flipped(usize, u8),
    Foreign(Config),
    OtherCapacity,
    OtherKeyType,
    Ahead(u64),
    Trusted,
}

/// Slots of the table of the arbitrary-bytes test: room for every key, so that the model's
/// answers are each key's own quota (room is a bound on memory, not a quota).
const ROOMY: usize = 8;

fn bytes() -> impl Strategy<Value = Bytes> {
    let len = keyed_saved_len(ROOMY, 1);
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..len + 8).prop_map(Bytes::Random),
        (0..len, 1u8..=255).prop_map(|(at, x)| Bytes::Flipped(at, x)),
        ops::config(8, Duration::from_secs(2)).prop_map(Bytes::Foreign),
        Just(Bytes::OtherCapacity),
        Just(Bytes::OtherKeyType),
        (1u64..1_000_000_000).prop_map(Bytes::Ahead),
        Just(Bytes::Trusted),
    ]
}

/// Every key, the ones never seen included, as a fresh limiter of `config` that took its whole
/// burst at reading `at`: what a table restored as fully spent at `at` must decide.
struct SpentModel {
    units: Units,
    config: Config,
    at: u64,
    keys: std::collections::BTreeMap<u8, Gcra>,
}

impl SpentModel {
    fn key(&mut self, key: u8) -> &mut Gcra {
        let (units, config, at) = (self.units, self.config, self.at);
        self.keys.entry(key).or_insert_with(|| {
            let mut spent = Gcra::new(units, config);
            let burst = spent.try_acquire(at, config.permits());
            assert_eq!(burst, Outcome::Admitted, "a fresh limiter passes its burst");
            spent
        })
    }
}

/// Runs `steps[..cut]`, saves, restores `bytes` into a table built afresh, then runs the rest on
/// it and on the model (which never reset): every call the restored table admits, the model
/// admits too. A trusted record restores exactly what the model holds; an untrusted one leaves
/// every key, the one never seen too, exactly as a limiter spent at the instant of the restore.
fn arbitrary_restore<const HZ: u64>(
    config: Config,
    steps: &[(u64, u8, u32)],
    cut: usize,
    bytes: &Bytes,
) -> Result<(), TestCaseError> {
    let units = Units::new(HZ);
    let clock = ManualClock::<HZ>::with_reading(1_000);
    let table: Table<HZ, ROOMY> = KeyedLimiter::with_clock("persist", config, &clock, 3);
    let mut model = KeyedModel::new(units, config, ROOMY);
    let cut = cut % (steps.len() + 1);
    for &(gap, key, k) in &steps[..cut] {
        clock.advance_ticks(gap);
        let admitted = table.try_acquire_n(&key, k).is_ok();
        prop_assert_eq!(
            model.try_acquire(&key, clock.now(), k) == Outcome::Admitted,
            admitted
        );
    }
    let mut trusted = vec![0u8; Table::<HZ, ROOMY>::SAVED_LEN];
    prop_assert!(table.save_into(&mut trusted));
    let mut reading = clock.now();
    let record: Vec<u8> = match bytes {
        Bytes::Random(b) => b.clone(),
        Bytes::Flipped(at, x) => {
            let mut b = trusted.clone();
            b[*at] ^= x;
            b
        }
        Bytes::Foreign(other) => {
            let other: Table<HZ, ROOMY> = KeyedLimiter::with_clock("other", *other, &clock, 3);
            let mut b = vec![0u8; Table::<HZ, ROOMY>::SAVED_LEN];
            prop_assert!(other.save_into(&mut b));
            b
        }
        Bytes::OtherCapacity => {
            let other: Table<HZ, 4> = KeyedLimiter::with_clock("other", config, &clock, 3);
            let mut b = vec![0u8; Table::<HZ, 4>::SAVED_LEN];
            prop_assert!(other.save_into(&mut b));
            b
        }
        Bytes::OtherKeyType => {
            // A table of `u16` keys, its record padded to the length of ours.
            let other: KeyedLimiter<u16, _, 7> =
                KeyedLimiter::with_clock("other", config, &clock, 3);
            let mut b = vec![0u8; KeyedLimiter::<u16, &ManualClock<HZ>, 7>::SAVED_LEN];
            prop_assert!(other.save_into(&mut b));
            b.resize(trusted.len(), 0);
            b
        }
        Bytes::Ahead(ticks) => {
            // Saved at a later reading; the table restores it on a clock that is back where it
            // was (the clock went backwards).
            let ahead = ManualClock::<HZ>::with_reading(clock.now() + ticks);
            let later: KeyedLimiter<u8, _, ROOMY> =
                KeyedLimiter::with_clock("persist", config, &ahead, 3);
            let mut b = vec![0u8; Table::<HZ, ROOMY>::SAVED_LEN];
            prop_assert!(later.save_into(&mut b));
            b
        }
        Bytes::Trusted => trusted.clone(),
    };
    let restored: Table<HZ, ROOMY> = KeyedLimiter::with_clock("persist", config, &clock, 4);
    let verdict = restored.restore(&record);
    reading = reading.max(clock.now());
    let now = clock.now();
    if matches!(bytes, Bytes::Trusted) {
        prop_assert_eq!(verdict, Restored::Saved);
    }
    match bytes {
        Bytes::Foreign(other) if other != &config => {
            prop_assert_eq!(verdict, Restored::Spent(Untrusted::ForeignConfig));
        }
        Bytes::Ahead(_) => prop_assert_eq!(verdict, Restored::Spent(Untrusted::ClockBehind)),
        Bytes::OtherCapacity | Bytes::OtherKeyType => prop_assert!(verdict != Restored::Saved),
        _ => {}
    }
    let mut spent = match verdict {
        Restored::Saved => {
            for key in (0..KEYS).chain([NEVER]) {
                prop_assert_eq!(restored.available_permits(&key), model.available(&key, now));
            }
            None
        }
        Restored::Spent(why) => {
            for key in (0..KEYS).chain([NEVER]) {
                prop_assert_eq!(restored.available_permits(&key), 0, "{:?}", why);
            }
            Some(SpentModel {
                units,
                config,
                at: reading,
                keys: Default::default(),
            })
        }
    };
    // The model is given only what the restored table admitted (a call the table refused takes
    // nothing from the model either): it must admit each of them.
    for &(gap, key, k) in &steps[cut..] {
        clock.advance_ticks(gap);
        let now = clock.now();
        prop_assert!(restored.available_permits(&key) <= model.available(&key, now));
        let got = Outcome::of_try(restored.try_acquire_n(&key, k));
        if let Some(spent) = &mut spent {
            spent
                .key(key)
                .try_acquire(now, k)
                .check(&got, &units)
                .map_err(|e| {
                    TestCaseError::fail(format!("key {key} after a spent restore: {e}"))
                })?;
            if got == Outcome::Admitted {
                prop_assert_eq!(model.try_acquire(&key, now, k), Outcome::Admitted);
            }
        } else {
            model
                .try_acquire(&key, now, k)
                .check(&got, &units)
                .map_err(|e| TestCaseError::fail(format!("key {key} after a restore: {e}")))?;
        }
    }
    if let Some(spent) = &mut spent {
        let now = clock.now();
        let expected = spent.key(NEVER).available(now);
        prop_assert_eq!(restored.available_permits(&NEVER), expected);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn a_reset_anywhere_changes_no_later_decision_of_a_keyed_table(
        (config, ops) in ops::crowded_keyed_schedule(6, Units::NANOS, KEYS, 120),
        reset in any::<prop::sample::Index>(),
    ) {
        let config = config.with_max_wait(Duration::ZERO);
        let steps = steps(&ops);
        let reset = reset.index(steps.len() + 1);
        reset_keyed::<1_000_000_000, 3>(config, &steps, reset)?;
        reset_keyed::<32_768, 3>(config, &steps, reset)?;
    }

    #[test]
    fn a_reset_anywhere_changes_no_later_decision_of_a_keyed_table_with_idle_time(
        (config, ops) in ops::keyed_schedule(6, Duration::from_secs(2), Units::NANOS, KEYS, 120),
        reset in any::<prop::sample::Index>(),
    ) {
        let config = config.with_max_wait(Duration::ZERO);
        let steps = steps(&ops);
        let reset = reset.index(steps.len() + 1);
        reset_keyed::<1_000_000_000, 3>(config, &steps, reset)?;
        reset_keyed::<32_768, 3>(config, &steps, reset)?;
    }

    #[test]
    fn any_bytes_restore_a_keyed_table_without_panic_and_never_above_the_model(
        (config, ops) in ops::keyed_schedule(6, Duration::from_secs(2), Units::NANOS, KEYS, 120),
        cut in any::<usize>(),
        bytes in bytes(),
    ) {
        let config = config.with_max_wait(Duration::ZERO);
        let steps = steps(&ops);
        arbitrary_restore::<1_000_000_000>(config, &steps, cut, &bytes)?;
        arbitrary_restore::<32_768>(config, &steps, cut, &bytes)?;
    }
}

/// A table of 4 `u32` keys of 10 permits per 10 s, on `clock`.
fn radio(clock: &ManualClock) -> KeyedLimiter<u32, &ManualClock, 4> {
    let config = Config::new(10, Duration::from_secs(10)).unwrap();
    KeyedLimiter::with_clock("radio", config, clock, 9)
}

const LEN: usize = KeyedLimiter::<u32, &ManualClock, 4>::SAVED_LEN;

/// The untrusted kinds, one by one, with their reasons: each leaves a key the table held and a
/// key never seen fully spent, then one permit back per second (10 per 10 s).
#[test]
fn untrusted_records_leave_every_key_fully_spent_the_unseen_ones_too() {
    assert_eq!(LEN, keyed_saved_len(4, 4));
    let clock = ManualClock::new();
    let table = radio(&clock);
    table.try_acquire_n(&1, 3).unwrap();
    let mut saved = [0u8; LEN];
    assert!(table.save_into(&mut saved));

    let spent = |table: &KeyedLimiter<u32, &ManualClock, 4>, clock: &ManualClock| {
        // held before the restore, and never seen
        table.try_acquire(&5).ok();
        assert_eq!(table.available_permits(&5), 0);
        assert_eq!(table.available_permits(&1), 0);
        assert_eq!(table.available_permits(&77), 0);
        assert!(table.try_acquire(&78).is_err());
        clock.advance(Duration::from_secs(1));
        assert_eq!(table.available_permits(&77), 1);
        assert_eq!(table.available_permits(&1), 1);
    };

    for at in [0, 1, 16, 20, 28, LEN - 1] {
        let mut flipped = saved;
        flipped[at] ^= 0x40;
        let clock = ManualClock::new();
        let fresh = radio(&clock);
        fresh.try_acquire(&5).unwrap();
        let expected = if at == 1 {
            Untrusted::ForeignConfig // the number of tiers: checked after the CRC, which fails
        } else {
            Untrusted::Corrupt
        };
        let verdict = fresh.restore(&flipped);
        assert!(
            verdict == Restored::Spent(Untrusted::Corrupt) || verdict == Restored::Spent(expected),
            "byte {at}: {verdict:?}"
        );
        spent(&fresh, &clock);
    }
    let fresh = radio(&clock);
    assert_eq!(
        fresh.restore(&saved[..LEN - 1]),
        Restored::Spent(Untrusted::Corrupt)
    );
    // A key no key encodes as: a valid checksum over an entry count above the capacity.
    let mut too_many = saved;
    too_many[24..28].copy_from_slice(&5u32.to_le_bytes());
    seal(&mut too_many);
    let fresh = radio(&clock);
    assert_eq!(
        fresh.restore(&too_many),
        Restored::Spent(Untrusted::Corrupt)
    );

    // Another config, another clock.
    let other = Config::new(11, Duration::from_secs(10)).unwrap();
    let fresh: KeyedLimiter<u32, _, 4> = KeyedLimiter::with_clock("radio", other, &clock, 9);
    assert_eq!(
        fresh.restore(&saved),
        Restored::Spent(Untrusted::ForeignConfig)
    );
    assert_eq!(fresh.available_permits(&77), 0);
    let rtc = ManualClock::<32_768>::with_reading(0);
    let config = Config::new(10, Duration::from_secs(10)).unwrap();
    let fresh: KeyedLimiter<u32, _, 4> = KeyedLimiter::with_clock("radio", config, &rtc, 9);
    assert_eq!(
        fresh.restore(&saved),
        Restored::Spent(Untrusted::ForeignConfig)
    );
    // Another key type of the same size: told apart by nothing but its size (documented).
    let fresh: KeyedLimiter<[u8; 4], _, 4> = KeyedLimiter::with_clock("radio", config, &clock, 9);
    assert_eq!(
        fresh.restore(&saved),
        Restored::Saved,
        "same length, same fingerprint"
    );
    let fresh: KeyedLimiter<char, _, 4> = KeyedLimiter::with_clock("radio", config, &clock, 9);
    assert_eq!(fresh.restore(&saved), Restored::Saved);

    // A clock behind the save.
    let clock = ManualClock::new();
    clock.advance(Duration::from_secs(5));
    let later = radio(&clock);
    let mut ahead = [0u8; LEN];
    assert!(later.save_into(&mut ahead));
    let behind = ManualClock::new();
    let fresh = radio(&behind);
    fresh.try_acquire(&5).unwrap();
    assert_eq!(
        fresh.restore(&ahead),
        Restored::Spent(Untrusted::ClockBehind)
    );
    spent(&fresh, &behind);

    // The trusted record, 5 s later: key 1's 3 are back (capped at 10), the others are fresh.
    let fresh = radio(&clock);
    assert_eq!(fresh.restore(&saved), Restored::Saved);
    assert_eq!(fresh.available_permits(&1), 10);
    assert_eq!(fresh.available_permits(&77), 10);
}

/// A table restored as spent and saved again stays spent across the next reset: the record
/// carries the mark, and a valid record restores it.
#[test]
fn the_spent_mark_survives_a_second_reset() {
    let clock = ManualClock::new();
    clock.advance(Duration::from_secs(100));
    let table = radio(&clock);
    assert_eq!(
        table.restore(&[1, 2, 3]),
        Restored::Spent(Untrusted::Corrupt)
    );
    clock.advance(Duration::from_secs(3));
    let mut saved = [0u8; LEN];
    assert!(table.save_into(&mut saved));
    let table = radio(&clock);
    assert_eq!(table.restore(&saved), Restored::Saved);
    // spent at 100 s, 3 s ago: 3 permits back, for a key never seen too
    assert_eq!(table.available_permits(&77), 3);
    // and after the window, a full burst
    clock.advance(Duration::from_secs(7));
    assert_eq!(table.available_permits(&77), 10);
}

/// A valid record of a table that held keys restores them into a table that already holds
/// others (not just built): each key raised, none lowered.
#[test]
fn a_trusted_restore_raises_never_lowers() {
    let clock = ManualClock::new();
    let table = radio(&clock);
    table.try_acquire_n(&1, 4).unwrap();
    table.try_acquire_n(&2, 1).unwrap();
    let mut saved = [0u8; LEN];
    assert!(table.save_into(&mut saved));
    let other = radio(&clock);
    other.try_acquire_n(&1, 2).unwrap(); // less spent than the record: raised
    other.try_acquire_n(&2, 7).unwrap(); // more: kept
    assert_eq!(other.restore(&saved), Restored::Saved);
    assert_eq!(other.available_permits(&1), 6);
    assert_eq!(other.available_permits(&2), 3);
    assert_eq!(other.available_permits(&3), 10);
}

/// A tiered table: the tier byte and the tier set in the fingerprint.
#[test]
fn a_tiered_table_restores_each_key_on_its_tier() {
    fn plan(key: &u16) -> &'static str {
        if *key >= 100 { "fast" } else { "slow" }
    }
    let tiers = || {
        Tiers::new(
            [
                Tier::new("slow", Config::new(2, Duration::from_secs(10)).unwrap()),
                Tier::new("fast", Config::new(5, Duration::from_secs(1)).unwrap()),
            ],
            plan as fn(&u16) -> &'static str,
        )
    };
    type Tiered<'a> = KeyedLimiter<u16, &'a ManualClock, 4, Tiers<u16, 2>>;
    let clock = ManualClock::new();
    let table: Tiered = KeyedLimiter::tiered_with_clock("t", tiers(), &clock, 1);
    table.try_acquire_n(&1, 2).unwrap();
    table.try_acquire_n(&100, 5).unwrap();
    let mut saved = [0u8; Tiered::SAVED_LEN];
    assert!(table.save_into(&mut saved));
    clock.advance(Duration::from_millis(400));
    let table: Tiered = KeyedLimiter::tiered_with_clock("t", tiers(), &clock, 2);
    assert_eq!(table.restore(&saved), Restored::Saved);
    assert_eq!(table.available_permits(&1), 0); // 1 per 5 s
    assert_eq!(table.available_permits(&100), 2); // 1 per 200 ms
    // the same table of one config: another fingerprint
    let one: KeyedLimiter<u16, _, 4> = KeyedLimiter::with_clock(
        "t",
        Config::new(2, Duration::from_secs(10)).unwrap(),
        &clock,
        1,
    );
    let mut bigger = saved.to_vec();
    bigger.truncate(KeyedLimiter::<u16, &ManualClock, 4>::SAVED_LEN);
    assert!(one.restore(&bigger) != Restored::Saved);
    // spent: every key on its own tier, never seen ones too
    let table: Tiered = KeyedLimiter::tiered_with_clock("t", tiers(), &clock, 2);
    assert_eq!(table.restore(&[]), Restored::Spent(Untrusted::Corrupt));
    assert_eq!(table.available_permits(&7), 0);
    assert_eq!(table.available_permits(&107), 0);
    clock.advance(Duration::from_millis(600));
    assert_eq!(table.available_permits(&7), 0);
    assert_eq!(table.available_permits(&107), 3);
}

/// Three tiers: each key restored comes back on the tier it was saved on, the first and the
/// last included, with what it had left there.
#[test]
fn each_key_restores_onto_its_own_tier_of_three() {
    fn plan(key: &u16) -> &'static str {
        ["quick", "slow", "wide"][usize::from(*key % 3)]
    }
    let tiers = || {
        Tiers::new(
            [
                Tier::new("quick", Config::new(4, Duration::from_secs(1)).unwrap()),
                Tier::new("slow", Config::new(1, Duration::from_secs(10)).unwrap()),
                Tier::new("wide", Config::new(8, Duration::from_secs(1)).unwrap()),
            ],
            plan as fn(&u16) -> &'static str,
        )
    };
    type Tiered<'a> = KeyedLimiter<u16, &'a ManualClock, 4, Tiers<u16, 3>>;
    let clock = ManualClock::new();
    let table: Tiered = KeyedLimiter::tiered_with_clock("t", tiers(), &clock, 1);
    table.try_acquire_n(&3, 2).unwrap(); // quick: 2 of 4 left
    table.try_acquire_n(&5, 3).unwrap(); // wide: 5 of 8 left
    let mut saved = [0u8; Tiered::SAVED_LEN];
    assert!(table.save_into(&mut saved));
    let table: Tiered = KeyedLimiter::tiered_with_clock("t", tiers(), &clock, 2);
    assert_eq!(table.restore(&saved), Restored::Saved);
    assert_eq!(table.available_permits(&3), 2);
    assert_eq!(table.available_permits(&5), 5);
    assert_eq!(
        table.available_permits(&4),
        1,
        "a key never seen: its own tier's burst"
    );
}

/// A reconfigure after a restore as spent treats the keys never seen as the keys held: SPEC §14's
/// rule on a limiter that took its full burst at the restore.
#[cfg(feature = "reconfigure")]
#[test]
fn a_reconfigure_after_a_spent_restore_converts_the_keys_never_seen() {
    let units = Units::NANOS;
    let old = Config::new(10, Duration::from_secs(10)).unwrap();
    let new = Config::new(5, Duration::from_secs(1)).unwrap();
    let clock = ManualClock::<1_000_000_000>::with_reading(50_000_000_000);
    let table: KeyedLimiter<u32, _, 4> = KeyedLimiter::with_clock("r", old, &clock, 1);
    assert_eq!(table.restore(&[0; 3]), Restored::Spent(Untrusted::Corrupt));
    let mut model = Gcra::new(units, old);
    assert_eq!(model.try_acquire(clock.now(), 10), Outcome::Admitted);
    clock.advance(Duration::from_secs(3));
    table.reconfigure(new);
    model.reconfigure(clock.now(), new);
    assert_eq!(table.available_permits(&77), model.available(clock.now()));
    assert_eq!(table.available_permits(&77), 3);
    for step in 0..12 {
        clock.advance(Duration::from_millis(150));
        let now = clock.now();
        assert_eq!(
            table.available_permits(&77),
            model.available(now),
            "step {step}"
        );
        let got = Outcome::of_try(table.try_acquire(&77));
        model.try_acquire(now, 1).check(&got, &units).unwrap();
    }
}

/// SPEC §24 on a clock whose ticks are not the limiter's units: a 32768 Hz clock (the limiter
/// counts in fractions of its tick) and 3 permits per second, a permit every 10922⅔ ticks, so
/// that the saved states fall between ticks. The record stamps the clock's own reading
/// (`ritmo::persist`'s format: the clock reading at the save, bytes 8..16), and a table built
/// afresh and restored from it, on the clock that kept counting, answers every peek at every
/// tick of the next window as the model that never reset: no state slips by a tick either way
/// (SPEC: never more than without the reset; saved after the last call, none less).
#[test]
fn a_restore_on_a_clock_slower_than_the_units_keeps_every_state_to_the_unit() {
    const HZ: u64 = 32_768;
    let units = Units::new(HZ);
    let config = Config::new(3, Duration::from_secs(1)).unwrap();
    let clock = ManualClock::<HZ>::with_reading(5);
    let table: Table<HZ, 4> = KeyedLimiter::with_clock("persist", config, &clock, 1);
    let mut model = KeyedModel::new(units, config, 4);
    // Each key's state a different fraction of a tick past a tick.
    for (key, k) in [(0u8, 1u32), (1, 2), (2, 3), (0, 1), (1, 1)] {
        clock.advance_ticks(3);
        let now = clock.now();
        let expected = model.try_acquire(&key, now, k);
        expected
            .check(&Outcome::of_try(table.try_acquire_n(&key, k)), &units)
            .unwrap();
    }
    let mut saved = vec![0u8; Table::<HZ, 4>::SAVED_LEN];
    assert!(table.save_into(&mut saved));
    let stamp = u64::from_le_bytes(saved[8..16].try_into().unwrap());
    assert_eq!(stamp, clock.now(), "the record stamps the clock's reading");
    // A reset: the clock kept counting.
    clock.advance_ticks(100);
    let restored: Table<HZ, 4> = KeyedLimiter::with_clock("persist", config, &clock, 0xfeed);
    assert_eq!(restored.restore(&saved), Restored::Saved);
    for _ in 0..HZ + 2 {
        let now = clock.now();
        for key in [0, 1, 2, NEVER] {
            assert_eq!(
                restored.available_permits(&key),
                model.available(&key, now),
                "key {key} at {now}"
            );
            let got = Outcome::Rejected {
                retry_after: restored.retry_after(&key),
            };
            model
                .retry_after(&key, now)
                .check(&got, &units)
                .unwrap_or_else(|e| panic!("key {key} at {now}: {e}"));
        }
        clock.advance_ticks(1);
    }
}

/// A keyed table's record takes `32 + capacity * (key_len + 9)` bytes, as documented: a head,
/// the spent mark and the count, then per key its bytes, its state and its tier, then the
/// checksum.
#[test]
fn a_keyed_record_takes_the_documented_length() {
    for (capacity, key_len) in [(0, 1), (1, 16), (8, 4), (300, 2)] {
        assert_eq!(
            keyed_saved_len(capacity, key_len),
            32 + capacity * (key_len + 9)
        );
    }
    assert_eq!(KeyedLimiter::<u32, ManualClock, 8>::SAVED_LEN, 136);
}

/// A sealed record with one bad entry is corrupt, whichever entry it is: a key whose bytes
/// encode no key, or a tier byte past the tiers. Nothing of it is restored, and nothing panics.
#[test]
fn a_sealed_keyed_record_with_one_bad_entry_is_corrupt() {
    // bool keys: one byte each, 0 or 1 (an entry: the key, its state, its tier).
    let clock = ManualClock::new();
    let table: KeyedLimiter<bool, _, 2> = KeyedLimiter::with_clock("b", per_second(4), &clock, 1);
    table.try_acquire(&true).unwrap();
    let mut saved = [0u8; KeyedLimiter::<bool, &ManualClock, 2>::SAVED_LEN];
    assert!(table.save_into(&mut saved));
    let entry = 28; // after the head, the spent mark and the count
    assert_eq!(saved[entry], 1, "the key true");
    saved[entry] = 2;
    seal(&mut saved);
    let fresh: KeyedLimiter<bool, _, 2> = KeyedLimiter::with_clock("b", per_second(4), &clock, 2);
    assert_eq!(fresh.restore(&saved), Restored::Spent(Untrusted::Corrupt));

    // Two tiers; the second entry's tier byte names a third.
    let tiers = || {
        Tiers::new(
            [Tier::new("a", per_second(4)), Tier::new("b", per_second(8))],
            |key: &u16| if *key < 100 { "a" } else { "b" },
        )
    };
    let table = KeyedLimiter::<u16, _, 4, _>::tiered_with_clock("t", tiers(), &clock, 1);
    table.try_acquire(&1).unwrap();
    table.try_acquire(&100).unwrap();
    let mut saved = vec![0u8; keyed_saved_len(4, 2)];
    assert!(table.save_into(&mut saved));
    let second_tier = entry + (2 + 9) + 2 + 8;
    assert!(saved[second_tier] < 2);
    saved[second_tier] = 2;
    seal(&mut saved);
    let fresh = KeyedLimiter::<u16, _, 4, _>::tiered_with_clock("t", tiers(), &clock, 2);
    assert_eq!(fresh.restore(&saved), Restored::Spent(Untrusted::Corrupt));
}

/// A key saved on one tier and held on another when restored (its plan changed in between) is
/// raised to the saved state carried over to the tier it holds now, as a key that changed tier
/// without a reset would be: 0 left of the slow tier's 1 becomes 0 of the fast tier's 10, the
/// next permit one fast interval away.
#[test]
fn a_key_restored_onto_another_tier_carries_its_saved_state_over() {
    use std::sync::atomic::{AtomicBool, Ordering};
    static FAST: AtomicBool = AtomicBool::new(false);
    let tiers = || {
        Tiers::new(
            [
                Tier::new("slow", Config::new(1, Duration::from_secs(10)).unwrap()),
                Tier::new("fast", per_second(10)),
            ],
            |_: &u8| {
                if FAST.load(Ordering::Relaxed) {
                    "fast"
                } else {
                    "slow"
                }
            },
        )
    };
    let clock = ManualClock::new();
    let table = KeyedLimiter::<u8, _, 4, _>::tiered_with_clock("t", tiers(), &clock, 1);
    table.try_acquire(&1).unwrap();
    let mut saved = [0u8; keyed_saved_len(4, 1)];
    assert!(table.save_into(&mut saved));

    FAST.store(true, Ordering::Relaxed);
    let table = KeyedLimiter::<u8, _, 4, _>::tiered_with_clock("t", tiers(), &clock, 2);
    table.try_acquire(&1).unwrap(); // held on the fast tier: 9 of 10 left
    assert_eq!(table.restore(&saved), Restored::Saved);
    assert_eq!(table.available_permits(&1), 0);
    clock.advance(ms(100));
    assert_eq!(table.available_permits(&1), 1);
    clock.advance(ms(100));
    assert_eq!(table.available_permits(&1), 2);
}

fn per_second(n: u32) -> Config {
    Config::new(n, Duration::from_secs(1)).unwrap()
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}
