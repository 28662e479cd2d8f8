//! Several bands at once (SPEC §14): all or nothing, the wait the longest band's, and a cancel
//! that puts every band back exactly as it was (§17).

use core::time::Duration;

use ritmo_core::Config;

use crate::gcra::Rate;
use crate::outcome::Outcome;
use crate::units::Units;

/// A reservation the bands model granted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BandsTicket {
    /// Permits it took.
    pub k: u32,
    /// Each band's state before it, exactly (SPEC §17: a cancel of the newest puts every band
    /// back exactly as it was; a band idle at the call is put back to its own idle state, so
    /// that the reservation before it is then the newest in that band too).
    pub before: Vec<u128>,
    /// Each band's `tat` it wrote.
    pub written: Vec<u128>,
    /// Its slot, as a clock reading.
    pub slot: u64,
    /// The instant its permits are there, in units (its slot before rounding to the tick).
    pub at: u128,
    /// The number of reconfigures before it.
    pub epoch: u32,
}

impl BandsTicket {
    /// Its permits, used when they are there (for [`crate::window_bound`]).
    pub fn used(&self) -> crate::Use {
        crate::Use {
            at: self.at,
            k: self.k,
        }
    }
}

/// `Bands`: one GCRA state per enabled band; a disabled band is left out of every decision.
///
/// A call of `k` permits at `now` is admitted at once only if every band admits it at once.
/// Otherwise its permit is there at the slowest band's slot; it may reserve if that slot, rounded
/// up to the clock's whole tick, is within `max_wait`, and then every band is charged as a call
/// made at that slot (`tat := max(tat, slot) + k * T`, the slot in units, as the single
/// limiter's state never rounds). Cancelling the newest reservation puts every band back as it
/// was before it; one that is no longer the newest returns nothing.
///
/// ```
/// use core::time::Duration;
/// use ritmo_core::Config;
/// use ritmo_test_support::{BandsModel, Outcome, Units};
///
/// // The issue's example: 2 per 1 s and 3 per 10 s, max_wait 5 s.
/// let c = |n, s| Config::new(n, Duration::from_secs(s)).unwrap();
/// let mut m = BandsModel::new(Units::NANOS, &[c(2, 1), c(3, 10)], Duration::from_secs(5));
/// assert_eq!(m.try_acquire(0, 2), Outcome::Admitted);
/// let now = 1_000_000_000;
/// assert_eq!(m.available_per_band(now), vec![2, 1]);
/// let (_, ticket) = m.reserve(now, 2);
/// m.cancel(&ticket.unwrap(), true).unwrap();
/// assert_eq!(m.available_per_band(now), vec![2, 1]);
/// assert_eq!(m.retry_after(now, 1), Duration::ZERO);
/// ```
#[derive(Debug, Clone)]
pub struct BandsModel {
    units: Units,
    configs: Vec<Config>,
    rates: Vec<Rate>,
    tats: Vec<u128>,
    max_wait: Duration,
    epoch: u32,
}

impl BandsModel {
    /// Fresh bands on a clock of `units`, a call waiting at most `max_wait`.
    pub fn new(units: Units, configs: &[Config], max_wait: Duration) -> BandsModel {
        BandsModel {
            units,
            configs: configs.to_vec(),
            rates: configs.iter().map(|c| Rate::new(&units, c)).collect(),
            tats: vec![0; configs.len()],
            max_wait,
            epoch: 0,
        }
    }

    /// The configs in force.
    pub fn configs(&self) -> &[Config] {
        &self.configs
    }

    /// `reconfigure(configs)` at `now` (SPEC §14, §17), a call waiting at most `max_wait` from
    /// then on. Each band whose config changes goes through the single limiter's rule
    /// ([`Gcra::reconfigure`](crate::Gcra::reconfigure)): idle is new (a band idle or disabled
    /// starts afresh with its new full burst), else its permits available become
    /// `min(available, new permits)` and permits owed stay owed; a band whose config is the same
    /// keeps its state exactly. Returns each band's permits kept at the change (available at
    /// that instant under the new configs), or `None` if no config changes (then nothing changes
    /// at all). A reservation made before a change is no longer the newest: cancelling it
    /// returns nothing.
    pub fn reconfigure(
        &mut self,
        now: u64,
        configs: &[Config],
        max_wait: Duration,
    ) -> Option<Vec<u32>> {
        if configs == self.configs.as_slice() {
            return None;
        }
        let before = self.available_per_band(now);
        for (i, new) in configs.iter().enumerate() {
            if *new != self.configs[i] {
                self.tats[i] = crate::gcra::carried_over(
                    &self.units,
                    &self.configs[i],
                    self.tats[i],
                    before[i],
                    now,
                    new,
                );
            }
        }
        self.configs = configs.to_vec();
        self.rates = configs.iter().map(|c| Rate::new(&self.units, c)).collect();
        self.max_wait = max_wait;
        self.epoch += 1;
        Some(self.available_per_band(now))
    }

    /// The longest `max_wait` of `configs`: what `Bands` waits by default.
    pub fn default_max_wait(configs: &[Config]) -> Duration {
        configs
            .iter()
            .map(|c| c.max_wait())
            .max()
            .unwrap_or(Duration::ZERO)
    }

    /// The clock.
    pub fn units(&self) -> Units {
        self.units
    }

    fn enabled(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.configs.len()).filter(|&i| self.configs[i].enabled())
    }

    /// Whether `k` permits can ever be asked for: `1..=` the smallest enabled band's permits.
    pub fn valid(&self, k: u32) -> bool {
        let max = self
            .enabled()
            .map(|i| self.configs[i].permits())
            .min()
            .unwrap_or(u32::MAX);
        k >= 1 && k <= max
    }

    /// Band `i`'s wait in units for `k` permits at `now` (units), 0 if they are there.
    fn band_wait(&self, i: usize, now: u128, k: u32) -> u128 {
        let r = self.rates[i];
        (self.tats[i].max(now) + (u128::from(k) - 1) * r.t).saturating_sub(now + r.tau())
    }

    /// The units until every band admits `k` permits at once (0: now).
    pub fn wait_units(&self, now: u64, k: u32) -> u128 {
        let now = self.units.from_ticks(now);
        self.enabled()
            .map(|i| self.band_wait(i, now, k))
            .max()
            .unwrap_or(0)
    }

    /// Whole ticks until every band admits `k` permits at once.
    pub fn wait_ticks(&self, now: u64, k: u32) -> u128 {
        match self.wait_units(now, k) {
            0 => 0,
            w => self.units.ticks_ceil(self.units.from_ticks(now) + w) - u128::from(now),
        }
    }

    /// `retry_after(k)` at `now`.
    pub fn retry_after(&self, now: u64, k: u32) -> Duration {
        self.units.duration(self.wait_ticks(now, k))
    }

    /// Permits every band would give at once.
    pub fn available(&self, now: u64) -> u32 {
        let max = self
            .enabled()
            .map(|i| self.configs[i].permits())
            .min()
            .unwrap_or(u32::MAX);
        (1..=max)
            .take_while(|&k| self.wait_units(now, k) == 0)
            .count() as u32
    }

    /// Each band alone: permits it would give at once (its `permits` if disabled).
    pub fn available_per_band(&self, now: u64) -> Vec<u32> {
        let now_u = self.units.from_ticks(now);
        (0..self.configs.len())
            .map(|i| {
                if !self.configs[i].enabled() {
                    return self.configs[i].permits();
                }
                (1..=self.configs[i].permits())
                    .take_while(|&k| self.band_wait(i, now_u, k) == 0)
                    .count() as u32
            })
            .collect()
    }

    /// Charges every enabled band as a call at `at` (units). `before` is each band's state
    /// exactly as it was (a cancel of the newest puts it back, SPEC §17).
    fn charge(&mut self, at: u128, k: u32, slot: u64) -> BandsTicket {
        let before = self.tats.clone();
        for i in self.enabled().collect::<Vec<_>>() {
            self.tats[i] = self.tats[i].max(at) + u128::from(k) * self.rates[i].t;
        }
        BandsTicket {
            k,
            before,
            written: self.tats.clone(),
            slot,
            at,
            epoch: self.epoch,
        }
    }

    /// `try_acquire_n(k)` at `now`.
    pub fn try_acquire(&mut self, now: u64, k: u32) -> Outcome {
        if !self.valid(k) {
            return Outcome::Invalid;
        }
        match self.wait_units(now, k) {
            0 => {
                self.charge(self.units.from_ticks(now), k, now);
                Outcome::Admitted
            }
            _ => Outcome::Rejected {
                retry_after: self.retry_after(now, k),
            },
        }
    }

    /// `reserve_n(k)` at `now`, waiting at most the model's `max_wait`.
    pub fn reserve(&mut self, now: u64, k: u32) -> (Outcome, Option<BandsTicket>) {
        self.reserve_within(now, k, self.max_wait)
    }

    /// `reserve_n_within(k, max_wait)` at `now`.
    pub fn reserve_within(
        &mut self,
        now: u64,
        k: u32,
        max_wait: Duration,
    ) -> (Outcome, Option<BandsTicket>) {
        if !self.valid(k) {
            return (Outcome::Invalid, None);
        }
        let ticks = self.wait_ticks(now, k);
        if !self.units.within(ticks, max_wait) {
            let retry_after = self.units.duration(ticks);
            return (Outcome::Rejected { retry_after }, None);
        }
        let at = self.units.from_ticks(now) + self.wait_units(now, k);
        let slot = u64::try_from(u128::from(now) + ticks).unwrap_or(u64::MAX);
        let ticket = self.charge(at, k, slot);
        let wait = self.units.duration(ticks);
        (Outcome::Reserved { wait, slot }, Some(ticket))
    }

    /// Whether `ticket` is still the newest charge (every band still holds what it wrote).
    pub fn is_newest(&self, ticket: &BandsTicket) -> bool {
        self.epoch == ticket.epoch && self.enabled().all(|i| self.tats[i] == ticket.written[i])
    }

    /// Cancels `ticket`; `returned` is the limiter's answer. The newest reservation goes back in
    /// every band, exactly; any other returns nothing.
    pub fn cancel(&mut self, ticket: &BandsTicket, returned: bool) -> Result<(), String> {
        let newest = self.is_newest(ticket);
        if newest != returned {
            return Err(format!(
                "bands cancel answered {returned}, the tail rule says {newest} ({ticket:?}, tats {:?})",
                self.tats
            ));
        }
        self.drop_ticket(ticket);
        Ok(())
    }

    /// Drops (or interrupts) `ticket`: the newest goes back, exactly.
    pub fn drop_ticket(&mut self, ticket: &BandsTicket) {
        if self.is_newest(ticket) {
            // A disabled band was not charged: it stays as it is.
            for i in self.enabled().collect::<Vec<_>>() {
                self.tats[i] = ticket.before[i];
            }
        }
    }
}
