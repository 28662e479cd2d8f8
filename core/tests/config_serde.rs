//! A `Config` read by serde (feature `serde`): checked when read, with `max_wait` 0 and
//! `enabled` true where those fields are left out, and written back as it was read.
#![cfg(feature = "serde")]

use core::time::Duration;
use ritmo_core::Config;

fn read(json: &str) -> Result<Config, serde_json::Error> {
    serde_json::from_str(json)
}

#[test]
fn a_config_read_without_its_optional_fields_is_enabled_with_no_wait() {
    let c = read(r#"{"permits": 5, "period": {"secs": 2, "nanos": 0}}"#).unwrap();
    assert_eq!(c, Config::new(5, Duration::from_secs(2)).unwrap());
    assert!(c.enabled());
    assert_eq!(c.max_wait(), Duration::ZERO);
    let off = read(r#"{"permits": 5, "period": {"secs": 2, "nanos": 0}, "enabled": false}"#);
    assert!(!off.unwrap().enabled());
}

#[test]
fn a_config_is_checked_when_read_and_written_back_as_read() {
    let zero = read(r#"{"permits": 0, "period": {"secs": 1, "nanos": 0}}"#).unwrap_err();
    assert!(zero.to_string().contains("RITMO-"), "{zero}");
    assert!(read(r#"{"permits": 1, "period": {"secs": 1, "nanos": 0}, "burst": 2}"#).is_err());
    let c = Config::new(3, Duration::from_millis(1500))
        .unwrap()
        .with_max_wait(Duration::from_millis(20))
        .with_enabled(false);
    let text = serde_json::to_string(&c).unwrap();
    assert_eq!(read(&text).unwrap(), c);
}
