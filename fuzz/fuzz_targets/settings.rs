//! Layered settings from arbitrary `key=value` lines: resolving any id never panics, and an
//! error carries one of the settings codes and names a key.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ritmo_core::{ErrorCode, Settings};

fuzz_target!(|text: &str| {
    let pairs: Vec<(&str, &str)> = text
        .lines()
        .map(|line| line.split_once('=').unwrap_or((line, "")))
        .collect();
    let settings = Settings::new(&pairs);
    let ids = pairs
        .iter()
        .filter_map(|(k, _)| k.strip_prefix("instances.")?.rsplit_once('.').map(|(id, _)| id));
    for id in ids.chain(["", "default", "api"]) {
        match settings.resolve(id) {
            Ok(config) => assert!(config.permits() >= 1),
            Err(e) => {
                assert!(matches!(
                    e.code(),
                    ErrorCode::InvalidDuration
                        | ErrorCode::InvalidPermits
                        | ErrorCode::InvalidBool
                        | ErrorCode::InvalidSetting
                        | ErrorCode::UnknownConfig
                ));
                assert!(!e.key().is_empty(), "{e}");
            }
        }
    }
});
