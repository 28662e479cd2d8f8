//! SPEC §17 for `Bands`: cancelling the newest reservation puts the state back exactly as it was
//! before it, in every band, also in a band that was idle when the reservation was made; then the
//! reservation before it is the newest and goes back too (refunds being all or nothing, a band
//! put back only to `now` made it fail the tail check and cost the live band a permit).

use core::time::Duration;

use ritmo_core::{Bands, Clock, Config, ManualClock};
use ritmo_test_support::{BandsModel, Outcome, Units};

fn cfg(n: u32, secs: u64) -> Config {
    Config::new(n, Duration::from_secs(secs)).unwrap()
}

/// 2 per 1 s and 3 per 10 s. R1 at 0; at 1 s the fast band is idle again and R2 is made;
/// cancelling R2 then R1 gives both back, every band as at the start (`[2, 3]`), as the model
/// says. Before the fix R1's cancel answered `false` and the 10 s band kept its permit: `[2, 2]`.
#[test]
fn cancelling_in_turn_restores_a_band_that_was_idle_exactly() {
    let clock = ManualClock::new();
    let configs = [cfg(2, 1), cfg(3, 10)];
    let max_wait = Duration::from_secs(10);
    let bands = Bands::new("api", configs, &clock).with_max_wait(max_wait);
    let mut model = BandsModel::new(Units::NANOS, &configs, max_wait);
    let reserve = |model: &mut BandsModel| {
        let now = clock.now();
        let r = bands.reserve().unwrap();
        let (expected, ticket) = model.reserve(now, 1);
        let got = Outcome::Reserved {
            wait: r.wait_time(),
            slot: r.slot(),
        };
        expected.check(&got, &Units::NANOS).unwrap();
        (r, ticket.unwrap())
    };
    let (r1, t1) = reserve(&mut model);
    clock.advance(Duration::from_secs(1));
    let (r2, t2) = reserve(&mut model);
    model.cancel(&t2, r2.cancel()).unwrap();
    let now = clock.now();
    assert_eq!(
        bands.available_permits_per_band().to_vec(),
        model.available_per_band(now)
    );
    model.cancel(&t1, r1.cancel()).unwrap();
    assert_eq!(
        bands.available_permits_per_band().to_vec(),
        model.available_per_band(now)
    );
    assert_eq!(bands.available_permits_per_band(), [2, 3]);
}
