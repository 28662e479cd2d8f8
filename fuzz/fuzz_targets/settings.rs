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
                    ErrorCode::Atr001
                        | ErrorCode::Atr003
                        | ErrorCode::Atr006
                        | ErrorCode::Reg003
                        | ErrorCode::Reg004
                ));
                assert!(e.key().is_some(), "{e}");
            }
        }
    }
});
