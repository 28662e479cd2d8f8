//! Durations as people read them: a refusal's `retry_after` printed rounded up to the
//! millisecond, in the largest units that fit (never `29.999943846s`).

use core::time::Duration;
use ritmo_core::{HumanDuration, RateLimitExceeded, Reason};

#[test]
fn durations_as_a_person_reads_them() {
    let ms = Duration::from_millis;
    for (d, text) in [
        (Duration::ZERO, "0s"),
        (Duration::from_nanos(1), "1ms"),
        (ms(250), "250ms"),
        (Duration::from_nanos(249_000_001), "250ms"),
        (ms(999), "999ms"),
        (ms(1000), "1s"),
        (ms(1500), "1.5s"),
        (ms(1250), "1.25s"),
        (ms(1001), "1.001s"),
        (Duration::from_nanos(29_999_943_846), "30s"),
        (ms(60_000), "1m"),
        (ms(125_500), "2m5.5s"),
        (ms(3_600_000), "1h"),
        (ms(3_601_000), "1h0m1s"),
        (ms(5_400_000), "1h30m"),
        (Duration::MAX, "5124095576030431h0m16s"),
    ] {
        assert_eq!(HumanDuration(d).to_string(), text, "{d:?}");
    }
}

#[test]
fn a_refusal_prints_its_wait_rounded_up() {
    let e = RateLimitExceeded::from_parts(
        "api",
        Reason::NoPermitInTime,
        Duration::from_nanos(29_999_943_846),
    );
    assert_eq!(
        e.to_string(),
        "rate limiter 'api': no permit in time; retry after 30s"
    );
}
