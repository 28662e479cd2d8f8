//! State across resets: a limiter's state saved into a few bytes, and restored at boot against a
//! clock that kept counting (an RTC, a counter kept through deep sleep).
//!
//! A record is, little-endian: a version byte, the number of states `B` (1 for a single
//! limiter), two zero bytes, a fingerprint of the numbers the limiter counts in (CRC-32 of each
//! state's emission interval, limit, clock units and shift: another config or another clock gives
//! another fingerprint), the clock reading at the save (8 bytes), each state (8 bytes each, in
//! the limiter's units), and a CRC-32 of everything before it. A single limiter's record is
//! [`SAVED_LEN`] = 28 bytes; `B` bands take `20 + 8 * B`.
//!
//! Restoring never grants more than the limiter without the reset: a valid record raises each
//! state to the saved one (never lowers it). A record that is corrupt (its checksum, its version,
//! its length), from another config or clock (its fingerprint), or saved at a reading later than
//! the clock's now (the clock went backwards, so how long the node was off is unknown) restores as
//! **fully spent**: as if a full burst had been taken at that instant; permits then come back at
//! the steady rate. Never as fresh.
//!
//! The saved state covers what was admitted before the save: save after each admission (or
//! before each transmission) so that nothing admitted is missing from it. Reservations still
//! waiting at the reset are lost with their waiters; their permits stay counted.
//!
//! No heap, no new dependency: the CRC is written here (bitwise, no table: a few dozen bytes of
//! flash), and none of this is linked into firmware that does not call it.

pub use crate::keyed::persist::keyed_saved_len;

use crate::bands::Bands;
use crate::clock::Clock;
use crate::limiter::RateLimiter;
use crate::rate::Rate;
use crate::state::State;

/// Bytes a single limiter's saved state takes ([`RateLimiter::save`]).
pub const SAVED_LEN: usize = 28;

/// The record's format version.
const VERSION: u8 = 1;
/// Bytes before the states: version, count, two zero bytes, fingerprint, reading.
pub(crate) const HEAD: usize = 16;

/// What a restore did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Restored {
    /// The record was valid: the limiter holds what it held at the save, less nothing, and time
    /// since then counts as time passed.
    Saved,
    /// The record could not be trusted: the limiter is fully spent as of now.
    Spent(Untrusted),
}

/// Why a saved state was not trusted ([`Restored::Spent`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Untrusted {
    /// Wrong length, unknown version, or a checksum that does not match.
    Corrupt,
    /// Saved by a limiter of another config, another number of bands, or on another clock.
    ForeignConfig,
    /// Saved at a clock reading later than now: the clock went backwards.
    ClockBehind,
    /// The limiter was reconfigured (feature `reconfigure`): its state is not the one a record
    /// describes.
    Reconfigured,
}

/// A key's encoding in a keyed table's saved state
/// ([`KeyedLimiter::save_into`](crate::keyed::KeyedLimiter::save_into)): exactly [`LEN`](Self::LEN)
/// bytes, read back into the same key.
///
/// Implemented for the unsigned integers (little-endian), byte arrays `[u8; L]` (a LoRaWAN
/// DevEUI, a MAC address), `bool`, `char` and IPv4/IPv6 addresses. For a key of your own, write
/// it into a few bytes and read it back, answering `None` for bytes no key writes (a record
/// holding them restores as fully spent, [`Untrusted::Corrupt`]):
///
/// ```
/// use ritmo::persist::KeyBytes;
///
/// /// The EU868 sub-bands a radio keeps a duty cycle for.
/// #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
/// enum SubBand { G, G1, G2, G3 }
///
/// impl KeyBytes for SubBand {
///     const LEN: usize = 1;
///     fn write(&self, out: &mut [u8]) {
///         out[0] = *self as u8;
///     }
///     fn read(bytes: &[u8]) -> Option<Self> {
///         match bytes[0] {
///             0 => Some(SubBand::G),
///             1 => Some(SubBand::G1),
///             2 => Some(SubBand::G2),
///             3 => Some(SubBand::G3),
///             _ => None,
///         }
///     }
/// }
///
/// let mut out = [0u8; 1];
/// SubBand::G2.write(&mut out);
/// assert_eq!(SubBand::read(&out), Some(SubBand::G2));
/// assert_eq!(SubBand::read(&[9]), None);
/// ```
///
/// The contract: `write` fills all of `out` (`LEN` bytes), `read` gets `LEN` bytes, and
/// `read` of what `write` wrote is the same key (equal by `Eq`, with the same hash). Neither may
/// panic for those lengths.
pub trait KeyBytes: Sized {
    /// Bytes one key takes.
    const LEN: usize;
    /// Writes the key into `out`, which is [`LEN`](Self::LEN) bytes long.
    fn write(&self, out: &mut [u8]);
    /// The key `bytes` ([`LEN`](Self::LEN) of them) encode; `None` if they encode none.
    fn read(bytes: &[u8]) -> Option<Self>;
}

macro_rules! key_bytes_le {
    ($($t:ty),*) => {$(
        /// Little-endian.
        impl KeyBytes for $t {
            const LEN: usize = core::mem::size_of::<$t>();
            fn write(&self, out: &mut [u8]) {
                out.copy_from_slice(&self.to_le_bytes());
            }
            fn read(bytes: &[u8]) -> Option<Self> {
                Some(<$t>::from_le_bytes(bytes.try_into().ok()?))
            }
        }
    )*};
}
key_bytes_le!(u8, u16, u32, u64, u128);

/// The bytes as they are.
impl<const L: usize> KeyBytes for [u8; L] {
    const LEN: usize = L;
    fn write(&self, out: &mut [u8]) {
        out.copy_from_slice(self);
    }
    fn read(bytes: &[u8]) -> Option<Self> {
        bytes.try_into().ok()
    }
}

/// One byte, 0 or 1.
impl KeyBytes for bool {
    const LEN: usize = 1;
    fn write(&self, out: &mut [u8]) {
        out[0] = u8::from(*self);
    }
    fn read(bytes: &[u8]) -> Option<Self> {
        match bytes {
            [0] => Some(false),
            [1] => Some(true),
            _ => None,
        }
    }
}

/// Its code point, little-endian.
impl KeyBytes for char {
    const LEN: usize = 4;
    fn write(&self, out: &mut [u8]) {
        u32::from(*self).write(out);
    }
    fn read(bytes: &[u8]) -> Option<Self> {
        char::from_u32(u32::read(bytes)?)
    }
}

/// Its four octets.
impl KeyBytes for core::net::Ipv4Addr {
    const LEN: usize = 4;
    fn write(&self, out: &mut [u8]) {
        out.copy_from_slice(&self.octets());
    }
    fn read(bytes: &[u8]) -> Option<Self> {
        <[u8; 4]>::read(bytes).map(Self::from)
    }
}

/// Its sixteen octets.
impl KeyBytes for core::net::Ipv6Addr {
    const LEN: usize = 16;
    fn write(&self, out: &mut [u8]) {
        out.copy_from_slice(&self.octets());
    }
    fn read(bytes: &[u8]) -> Option<Self> {
        <[u8; 16]>::read(bytes).map(Self::from)
    }
}

/// CRC-32 (IEEE 802.3, reflected, polynomial `0xEDB88320`) of `bytes`, continuing from `crc`
/// (start with `!0`, finish with `!`).
const fn crc32(mut crc: u32, bytes: &[u8]) -> u32 {
    let mut i = 0;
    while i < bytes.len() {
        crc ^= bytes[i] as u32;
        let mut bit = 0;
        while bit < 8 {
            crc = (crc >> 1) ^ (0xEDB8_8320 & (crc & 1).wrapping_neg());
            bit += 1;
        }
        i += 1;
    }
    crc
}

/// Adds the numbers `rate` counts in to a fingerprint being computed (start with `!0`).
pub(crate) fn fingerprint_add(crc: u32, rate: &Rate) -> u32 {
    let crc = crc32(crc, &rate.interval.to_le_bytes());
    let crc = crc32(crc, &rate.limit.to_le_bytes());
    let crc = crc32(crc, &rate.unit_hz.to_le_bytes());
    crc32(crc, &[rate.shift])
}

/// Adds `bytes` to a fingerprint being computed.
pub(crate) fn fingerprint_bytes(crc: u32, bytes: &[u8]) -> u32 {
    crc32(crc, bytes)
}

/// The fingerprint of the numbers `rates` count in.
fn fingerprint(rates: &[Rate]) -> u32 {
    !rates.iter().fold(!0, fingerprint_add)
}

/// Writes a record's head: the version, `count`, two zero bytes, the fingerprint `print` and
/// the clock reading at the save.
pub(crate) fn write_head(out: &mut [u8], count: u8, print: u32, reading: u64) {
    out[0] = VERSION;
    out[1] = count;
    out[2] = 0;
    out[3] = 0;
    out[4..8].copy_from_slice(&print.to_le_bytes());
    out[8..16].copy_from_slice(&reading.to_le_bytes());
}

/// Writes the CRC-32 of everything before the last 4 bytes of `out` into them.
pub(crate) fn seal(out: &mut [u8]) {
    let end = out.len() - 4;
    let crc = !crc32(!0, &out[..end]);
    out[end..].copy_from_slice(&crc.to_le_bytes());
}

/// A record no limiter trusts (written by a limiter whose state no record describes).
pub(crate) fn write_untrusted(out: &mut [u8]) {
    out.fill(0);
    out[0] = !VERSION;
}

/// The little-endian `u64` at `at` in `bytes` (which holds it).
pub(crate) fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(word)
}

/// The little-endian `u32` at `at` in `bytes` (which holds it).
pub(crate) fn u32_at(bytes: &[u8], at: usize) -> u32 {
    let mut word = [0u8; 4];
    word.copy_from_slice(&bytes[at..at + 4]);
    u32::from_le_bytes(word)
}

/// Writes the record of `states` at clock reading `reading` into `out` (exactly
/// `HEAD + 8 * states.len() + 4` bytes).
fn write(out: &mut [u8], states: &[State], rates: &[Rate], reading: u64) {
    write_head(out, states.len() as u8, fingerprint(rates), reading);
    for (i, state) in states.iter().enumerate() {
        out[HEAD + 8 * i..HEAD + 8 * i + 8].copy_from_slice(&state.tat().to_le_bytes());
    }
    seal(out);
}

/// Reads `saved` for `states` counted in `rates` at clock reading `now` and applies it: each
/// state raised to its saved value, or to fully spent when the record is not trusted.
fn restore(saved: &[u8], states: &[State], rates: &[Rate], now: u64) -> Restored {
    let verdict = check(saved, states.len(), rates, now);
    match verdict {
        Restored::Saved => {
            for (i, state) in states.iter().enumerate() {
                state.raise_to(u64_at(saved, HEAD + 8 * i));
            }
        }
        Restored::Spent(_) => spend(states, rates, now),
    }
    verdict
}

/// Every state fully spent as of reading `now`: `tat := now + n * T` in units (a disabled
/// limiter has nothing to spend).
fn spend(states: &[State], rates: &[Rate], now: u64) {
    for (state, rate) in states.iter().zip(rates) {
        if rate.enabled() {
            state.raise_to(rate.units(now).saturating_add(rate.window()));
        }
    }
}

/// Whether `saved` is a trusted record of `count` states counted in `rates`, saved no later than
/// reading `now`.
fn check(saved: &[u8], count: usize, rates: &[Rate], now: u64) -> Restored {
    check_head(saved, HEAD + 8 * count + 4, count, fingerprint(rates), now)
}

/// Whether `saved` is a trusted record `len` bytes long, of `count` states (or tiers) counted in
/// the numbers whose fingerprint is `print`, saved no later than reading `now`: its length,
/// version, zero bytes and checksum (else [`Untrusted::Corrupt`]), its count and fingerprint
/// (else [`Untrusted::ForeignConfig`]), its reading (else [`Untrusted::ClockBehind`]). `len` holds
/// a head and a checksum at least (every record's does), so a record of that length is indexed
/// safely.
pub(crate) fn check_head(saved: &[u8], len: usize, count: usize, print: u32, now: u64) -> Restored {
    let untrusted = |why| Restored::Spent(why);
    if saved.len() != len || saved[0] != VERSION || saved[2] != 0 || saved[3] != 0 {
        return untrusted(Untrusted::Corrupt);
    }
    let end = saved.len() - 4;
    if u32_at(saved, end) != !crc32(!0, &saved[..end]) {
        return untrusted(Untrusted::Corrupt);
    }
    if usize::from(saved[1]) != count || u32_at(saved, 4) != print {
        return untrusted(Untrusted::ForeignConfig);
    }
    if u64_at(saved, 8) > now {
        return untrusted(Untrusted::ClockBehind);
    }
    Restored::Saved
}

/// # State across resets
impl<C: Clock> RateLimiter<C> {
    /// Bytes [`save`](Self::save) writes.
    pub const SAVED_LEN: usize = SAVED_LEN;

    /// The limiter's state as [`SAVED_LEN`] bytes, for a place that survives a reset (a RAM
    /// section kept through reset, a flash page, an RTC's backup registers). Save after each
    /// admission, so that the record holds everything admitted.
    ///
    /// A reconfigured limiter (feature `reconfigure`) saves a record that no limiter trusts: it
    /// restores as fully spent.
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::persist::Restored;
    /// use ritmo::{Config, ManualClock, RateLimiter};
    ///
    /// let config = Config::at_most(36_000, Duration::from_secs(3600), 2_000)?; // ms on air
    /// let clock = ManualClock::new();
    /// let radio = RateLimiter::new("radio", config, &clock);
    /// radio.try_acquire_n(2_000).unwrap(); // a 2 s frame: the burst is spent
    /// let saved = radio.save();
    ///
    /// // ...a reset; the clock kept counting...
    /// clock.advance(Duration::from_secs(50));
    /// let radio = RateLimiter::new("radio", config, &clock);
    /// assert_eq!(radio.restore(&saved), Restored::Saved);
    /// // 50 s at one permit per 105.9 ms (3600 s / 34 000): 472 back, not the whole 2 000
    /// assert_eq!(radio.available_permits(), 472);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn save(&self) -> [u8; SAVED_LEN] {
        let mut out = [0u8; SAVED_LEN];
        let reading = self.clock().now();
        match self.persisted() {
            Some((state, rate)) => write(&mut out, core::slice::from_ref(state), &[*rate], reading),
            None => write_untrusted(&mut out), // never trusted
        }
        out
    }

    /// Restores a state [`save`](Self::save) wrote, on a limiter of the same config and clock
    /// (one just built at boot), against the clock's reading now. A trusted record raises the
    /// state to the saved one: the limiter then holds what it would have held had it kept
    /// running. A corrupt one, one from another config or clock, or one saved at a reading later
    /// than now restores the limiter as fully spent ([`Restored::Spent`]). Never more permits
    /// than without the reset; never a panic, whatever the bytes.
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::persist::{Restored, Untrusted};
    /// use ritmo::{Config, ManualClock, RateLimiter};
    ///
    /// let clock = ManualClock::new();
    /// let radio = RateLimiter::new("radio", Config::new(10, Duration::from_secs(10))?, &clock);
    /// let mut saved = radio.save();
    /// saved[20] ^= 1; // a bit flipped
    /// assert_eq!(radio.restore(&saved), Restored::Spent(Untrusted::Corrupt));
    /// assert_eq!(radio.available_permits(), 0);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn restore(&self, saved: &[u8]) -> Restored {
        let reading = self.clock().now();
        match self.persisted() {
            Some((state, rate)) => restore(saved, core::slice::from_ref(state), &[*rate], reading),
            None => Restored::Spent(Untrusted::Reconfigured),
        }
    }
}

/// # State across resets
impl<C: Clock, const B: usize> Bands<C, B> {
    /// Bytes [`save_into`](Self::save_into) writes: `20 + 8 * B`.
    pub const SAVED_LEN: usize = HEAD + 8 * B + 4;

    /// Writes every band's state into `out`, which must be [`SAVED_LEN`](Self::SAVED_LEN) bytes
    /// long; returns `false` (writing nothing) otherwise, or when `B > 255` (the record counts its
    /// states in one byte). See [`RateLimiter::save`].
    ///
    /// ```
    /// use core::time::Duration;
    /// use ritmo::persist::Restored;
    /// use ritmo::{Bands, Config, ManualClock};
    ///
    /// let hour = Duration::from_secs(3600);
    /// let clock = ManualClock::new();
    /// let configs = [Config::at_most(3_600, hour, 360)?, Config::at_most(36_000, hour, 360)?];
    /// let radio = Bands::new("radio", configs, &clock);
    /// radio.try_acquire_n(360).unwrap();
    /// let mut saved = [0u8; Bands::<&ManualClock, 2>::SAVED_LEN];
    /// assert!(radio.save_into(&mut saved));
    ///
    /// let radio = Bands::new("radio", configs, &clock); // after a reset
    /// assert_eq!(radio.restore(&saved), Restored::Saved);
    /// assert_eq!(radio.available_permits(), 0);
    /// # Ok::<(), ritmo::ConfigError>(())
    /// ```
    pub fn save_into(&self, out: &mut [u8]) -> bool {
        if out.len() != Self::SAVED_LEN || B > usize::from(u8::MAX) {
            return false;
        }
        let reading = self.clock().now();
        match self.persisted() {
            Some((states, rates)) => write(out, states, rates, reading),
            None => write_untrusted(out),
        }
        true
    }

    /// Restores what [`save_into`](Self::save_into) wrote, as [`RateLimiter::restore`] does:
    /// every band raised to its saved state, or every band fully spent.
    pub fn restore(&self, saved: &[u8]) -> Restored {
        let reading = self.clock().now();
        match self.persisted() {
            Some((states, rates)) => restore(saved, states, rates, reading),
            None => Restored::Spent(Untrusted::Reconfigured),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::crc32;

    /// The CRC-32 check value every implementation of this polynomial gives for "123456789".
    #[test]
    fn crc32_gives_the_check_value() {
        assert_eq!(!crc32(!0, b"123456789"), 0xCBF4_3926);
    }
}
