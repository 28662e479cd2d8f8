//! Keyed limiters under test, seen through one interface, and the run that compares one with
//! [`KeyedModel`] (the fixed table in core and the std sharded map share it), over any key type
//! that numbers its keys ([`TestKey`]: `u8`, `u16`).

use core::fmt::Debug;
use core::hash::Hash;
use core::time::Duration;

use ritmo_core::AcquireError;
use ritmo_core::keyed::{KeyReservation, Keyed, KeyedStore};

use crate::keyed::{KeyedModel, KeyedTicket};
use crate::ops::{KeyedOp, Op};
use crate::outcome::Outcome;
use crate::units::Units;
use crate::{Use, window_bound};

/// A keyed reservation of the limiter under test.
pub trait KeyedHeld {
    /// `wait_time()`.
    fn wait_time(&self) -> Duration;
    /// `slot()`.
    fn slot(&self) -> u64;
    /// `cancel()`.
    fn cancel(self: Box<Self>) -> bool;
    /// `commit()`.
    fn commit(self: Box<Self>);
}

/// Every keyed store's reservation (the fixed table's and the std map's are this one type).
impl<K: Hash + Eq + Clone + 'static, S: KeyedStore<K>> KeyedHeld
    for KeyReservation<'_, K, Keyed<K, S>>
{
    fn wait_time(&self) -> Duration {
        KeyReservation::wait_time(self)
    }
    fn slot(&self) -> u64 {
        KeyReservation::slot(self)
    }
    fn cancel(self: Box<Self>) -> bool {
        KeyReservation::cancel(*self)
    }
    fn commit(self: Box<Self>) {
        KeyReservation::commit(*self)
    }
}

/// Implements [`KeyedSubject`] for a test's wrapper of a keyed limiter: a struct with a field
/// `limiter` (ritmo-core's `KeyedLimiter` or ritmo-std's `KeyedRateLimiter`, with or without
/// tiers) and a field `clock` (a `&ManualClock<HZ>`). The generics go in brackets, the key type
/// after a comma (`u8` if not given): `keyed_subject!([const HZ: u64] Map<'_, HZ>);`,
/// `keyed_subject!([] Wide<'_>, u16);`. One permit goes through `try_acquire`, the hot path,
/// and more through `try_acquire_n`.
#[macro_export]
macro_rules! keyed_subject {
    ([$($generics:tt)*] $subject:ty) => {
        $crate::keyed_subject!([$($generics)*] $subject, u8);
    };
    ([$($generics:tt)*] $subject:ty, $key:ty) => {
        impl<$($generics)*> $crate::KeyedSubject<$key> for $subject {
            fn now(&self) -> u64 {
                self.clock.now()
            }
            fn advance(&self, ticks: u64) {
                self.clock.advance_ticks(ticks)
            }
            fn try_acquire_n(
                &self,
                key: &$key,
                k: u32,
            ) -> ::core::result::Result<(), ::ritmo_core::AcquireError> {
                if k == 1 {
                    return self
                        .limiter
                        .try_acquire(key)
                        .map_err(::ritmo_core::AcquireError::from);
                }
                self.limiter.try_acquire_n(key, k)
            }
            fn reserve_n(
                &self,
                key: &$key,
                k: u32,
            ) -> ::core::result::Result<
                ::std::boxed::Box<dyn $crate::KeyedHeld + '_>,
                ::ritmo_core::AcquireError,
            > {
                self.limiter
                    .reserve_n(key, k)
                    .map(|r| ::std::boxed::Box::new(r) as ::std::boxed::Box<dyn $crate::KeyedHeld>)
            }
            fn reserve_n_within(
                &self,
                key: &$key,
                k: u32,
                max_wait: ::core::time::Duration,
            ) -> ::core::result::Result<
                ::std::boxed::Box<dyn $crate::KeyedHeld + '_>,
                ::ritmo_core::AcquireError,
            > {
                self.limiter
                    .reserve_n_within(key, k, max_wait)
                    .map(|r| ::std::boxed::Box::new(r) as ::std::boxed::Box<dyn $crate::KeyedHeld>)
            }
            fn available_permits(&self, key: &$key) -> u32 {
                self.limiter.available_permits(key)
            }
            fn retry_after(&self, key: &$key) -> ::core::time::Duration {
                self.limiter.retry_after(key)
            }
            fn live_key_count(&self) -> usize {
                self.limiter.len()
            }
            fn keys_held(&self) -> usize {
                self.limiter.keys_held()
            }
            fn capacity(&self) -> usize {
                self.limiter.capacity()
            }
        }
    };
}

/// A key type of the tests: keys are numbered `0..keys`, and a test's key is its number modulo
/// the keys it uses.
pub trait TestKey: Copy + Ord + Hash + Debug + 'static {
    /// The key numbered `i` (less than the keys a test uses, which fit the type).
    fn nth(i: usize) -> Self;
    /// Its number.
    fn index(self) -> usize;
}

macro_rules! test_key {
    ($($t:ty),*) => {$(
        impl TestKey for $t {
            fn nth(i: usize) -> $t {
                <$t>::try_from(i).expect("the keys a test uses fit its key type")
            }
            fn index(self) -> usize {
                usize::from(self)
            }
        }
    )*};
}
test_key!(u8, u16);

/// A keyed limiter under test, keyed by `K`, on a clock the test moves.
pub trait KeyedSubject<K: TestKey = u8> {
    /// The clock's reading.
    fn now(&self) -> u64;
    /// Moves the clock forward by `ticks`.
    fn advance(&self, ticks: u64);
    /// `try_acquire_n(key, k)`.
    fn try_acquire_n(&self, key: &K, k: u32) -> Result<(), AcquireError>;
    /// `reserve_n(key, k)`.
    fn reserve_n(&self, key: &K, k: u32) -> Result<Box<dyn KeyedHeld + '_>, AcquireError>;
    /// `reserve_n_within(key, k, max_wait)`.
    fn reserve_n_within(
        &self,
        key: &K,
        k: u32,
        max_wait: Duration,
    ) -> Result<Box<dyn KeyedHeld + '_>, AcquireError>;
    /// `available_permits(key)`.
    fn available_permits(&self, key: &K) -> u32;
    /// `retry_after(key)`.
    fn retry_after(&self, key: &K) -> Duration;
    /// `len()`: how many keys are live.
    fn live_key_count(&self) -> usize;
    /// `keys_held()`: keys held, live or idle and not yet dropped.
    fn keys_held(&self) -> usize;
    /// `capacity()`: the most keys it holds at once.
    fn capacity(&self) -> usize;
}

/// What a keyed `reserve_n` answered, as an [`Outcome`].
pub(crate) fn reserved(result: &Result<Box<dyn KeyedHeld + '_>, AcquireError>) -> Outcome {
    match result {
        Ok(r) => Outcome::Reserved {
            wait: r.wait_time(),
            slot: r.slot(),
        },
        Err(e) => Outcome::of_error(e),
    }
}

/// Runs `ops` (keys taken modulo `keys`) on `subject` and on `model`, comparing every answer and,
/// after every step, the number of live keys and the `available_permits` and `retry_after` of
/// every key (of the step's key and the next one, above 8 keys), and checking that it holds no
/// more keys than its capacity; at the end each key's window bound. `Err` says where they first
/// differ.
pub fn run_keyed<K: TestKey, S: KeyedSubject<K>>(
    subject: &S,
    model: KeyedModel<K>,
    keys: K,
    ops: Vec<KeyedOp<K>>,
) -> Result<(), String> {
    run_keyed_with_changes(subject, model, keys, ops, None)
}

/// How a test changes the config of its keyed limiter under test.
pub type Reconfigure<'a, S> = &'a dyn Fn(&S, ritmo_core::Config);

/// [`run_keyed`] with changes of config: each [`Op::Reconfigure`] calls `reconfigure` on the
/// subject (`None`: ignored) and [`KeyedModel::reconfigure`] on the model (SPEC §14: idle keys
/// afresh, live keys `min(available, n')`), and every answer after it is compared as before. Once
/// a change has happened a dropped reservation is cancelled instead, so that its answer is seen
/// (the tail rule leaves a choice after a change that kept the state), and the window bounds,
/// which hold per config, are left to the step-by-step comparison.
pub fn run_keyed_with_changes<K: TestKey, S: KeyedSubject<K>>(
    subject: &S,
    mut model: KeyedModel<K>,
    keys: K,
    ops: Vec<KeyedOp<K>>,
    reconfigure: Option<Reconfigure<'_, S>>,
) -> Result<(), String> {
    let mut changed = false;
    let units: Units = model.units();
    let keys = keys.index().max(1);
    let mut open: Vec<(Box<dyn KeyedHeld + '_>, KeyedTicket<K>)> = Vec::new();
    let mut uses: Vec<Vec<Use>> = vec![Vec::new(); keys];
    for (step, KeyedOp { key, op }) in ops.into_iter().enumerate() {
        let key = K::nth(key.index() % keys);
        let now = subject.now();
        let at = |e: String| format!("step {step} ({op:?} on key {key:?}) at {now}: {e}");
        match op {
            Op::Advance(d) => subject.advance(d),
            Op::TryOne | Op::TryAcquire(_) => {
                let k = if let Op::TryAcquire(k) = op { k } else { 1 };
                let expected = model.try_acquire(&key, now, k);
                let got = Outcome::of_try(subject.try_acquire_n(&key, k));
                expected.check(&got, &units).map_err(at)?;
                if got == Outcome::Admitted {
                    uses[key.index()].push(Use::at_reading(&units, now, k));
                }
            }
            Op::Reserve(k) | Op::ReserveWithin(k, _) => {
                let (result, (expected, ticket)) = match op {
                    Op::ReserveWithin(_, max_wait) => (
                        subject.reserve_n_within(&key, k, max_wait),
                        model.reserve_within(&key, now, k, max_wait),
                    ),
                    _ => (subject.reserve_n(&key, k), model.reserve(&key, now, k)),
                };
                expected.check(&reserved(&result), &units).map_err(at)?;
                if let (Ok(r), Some(t)) = (result, ticket) {
                    open.push((r, t));
                }
            }
            Op::Cancel(i) | Op::Drop(i) | Op::Commit(i) if !open.is_empty() => {
                let (r, ticket) = open.remove(i % open.len());
                match op {
                    Op::Cancel(_) => model.cancel(&ticket, now, r.cancel()).map_err(at)?,
                    Op::Drop(_) if changed => model.cancel(&ticket, now, r.cancel()).map_err(at)?,
                    Op::Drop(_) => {
                        drop(r);
                        model.drop_ticket(&ticket);
                    }
                    _ => {
                        r.commit();
                        uses[ticket.key.index()].push(ticket.ticket.used());
                    }
                }
            }
            Op::Reconfigure(config) => {
                if let Some(reconfigure) = reconfigure {
                    reconfigure(subject, config);
                    model.reconfigure(now, config);
                    changed = true;
                }
            }
            Op::Cancel(_) | Op::Drop(_) | Op::Commit(_) | Op::Peek => {}
        }
        let now = subject.now();
        // Every key's peeks while there are few; with many, the step's key and the next one.
        let peeked: Vec<K> = if keys <= 8 {
            (0..keys).map(K::nth).collect()
        } else {
            vec![key, K::nth((key.index() + 1) % keys)]
        };
        for key in peeked {
            let at = |e: String| format!("after step {step}, key {key:?} at {now}: {e}");
            let (available, expected) =
                (subject.available_permits(&key), model.available(&key, now));
            if available != expected {
                return Err(at(format!(
                    "available_permits {available}, the model says {expected}"
                )));
            }
            let expected = model.retry_after(&key, now);
            let got = subject.retry_after(&key);
            let got = match expected {
                Outcome::NoRoom { .. } => Outcome::NoRoom { retry_after: got },
                _ => Outcome::Rejected { retry_after: got },
            };
            expected.check(&got, &units).map_err(at)?;
        }
        let live = model.live_keys(now).len();
        if subject.live_key_count() != live {
            return Err(format!(
                "after step {step} at {now}: len() {}, the model has {live} live keys",
                subject.live_key_count()
            ));
        }
        if subject.keys_held() > subject.capacity() {
            return Err(format!(
                "after step {step} at {now}: {} keys held, room for {}",
                subject.keys_held(),
                subject.capacity()
            ));
        }
    }
    for (r, ticket) in open {
        r.commit();
        uses[ticket.key.index()].push(ticket.ticket.used());
    }
    if changed {
        return Ok(());
    }
    let c = model.config();
    for (key, uses) in uses.iter().enumerate() {
        window_bound(uses, c.permits(), c.period(), &units)
            .map_err(|e| format!("key {key}: {e}"))?;
    }
    Ok(())
}
