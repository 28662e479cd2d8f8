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
const HEAD: usize = 16;

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

/// The fingerprint of the numbers `rates` count in.
fn fingerprint(rates: &[Rate]) -> u32 {
    let mut crc = !0;
    for rate in rates {
        crc = crc32(crc, &rate.interval.to_le_bytes());
        crc = crc32(crc, &rate.limit.to_le_bytes());
        crc = crc32(crc, &rate.unit_hz.to_le_bytes());
        crc = crc32(crc, &[rate.shift]);
    }
    !crc
}

/// Writes the record of `states` at clock reading `reading` into `out` (exactly
/// `HEAD + 8 * states.len() + 4` bytes).
fn write(out: &mut [u8], states: &[State], rates: &[Rate], reading: u64) {
    out[0] = VERSION;
    out[1] = states.len() as u8;
    out[2] = 0;
    out[3] = 0;
    out[4..8].copy_from_slice(&fingerprint(rates).to_le_bytes());
    out[8..16].copy_from_slice(&reading.to_le_bytes());
    for (i, state) in states.iter().enumerate() {
        out[HEAD + 8 * i..HEAD + 8 * i + 8].copy_from_slice(&state.tat().to_le_bytes());
    }
    let end = out.len() - 4;
    let crc = !crc32(!0, &out[..end]);
    out[end..].copy_from_slice(&crc.to_le_bytes());
}

/// Reads `saved` for `states` counted in `rates` at clock reading `now` and applies it: each
/// state raised to its saved value, or to fully spent when the record is not trusted.
fn restore(saved: &[u8], states: &[State], rates: &[Rate], now: u64) -> Restored {
    let verdict = check(saved, states.len(), rates, now);
    match verdict {
        Restored::Saved => {
            for (i, state) in states.iter().enumerate() {
                let at = HEAD + 8 * i;
                let mut tat = [0u8; 8];
                tat.copy_from_slice(&saved[at..at + 8]);
                state.raise_to(u64::from_le_bytes(tat));
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
    let untrusted = |why| Restored::Spent(why);
    if saved.len() != HEAD + 8 * count + 4 || saved[0] != VERSION || saved[2] != 0 || saved[3] != 0
    {
        return untrusted(Untrusted::Corrupt);
    }
    let end = saved.len() - 4;
    let mut crc = [0u8; 4];
    crc.copy_from_slice(&saved[end..]);
    if u32::from_le_bytes(crc) != !crc32(!0, &saved[..end]) {
        return untrusted(Untrusted::Corrupt);
    }
    let mut print = [0u8; 4];
    print.copy_from_slice(&saved[4..8]);
    if usize::from(saved[1]) != count || u32::from_le_bytes(print) != fingerprint(rates) {
        return untrusted(Untrusted::ForeignConfig);
    }
    let mut reading = [0u8; 8];
    reading.copy_from_slice(&saved[8..16]);
    if u64::from_le_bytes(reading) > now {
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
            None => out[0] = !VERSION, // never trusted
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
            None => {
                out.fill(0);
                out[0] = !VERSION;
            }
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
