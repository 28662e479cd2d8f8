//! `parse_duration` and `parse_bool` on any text: never a panic, only their own codes, the text
//! quoted (cut on a character boundary), and a parsed duration that prints back to itself.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ritmo_core::{ErrorCode, parse_bool, parse_duration};

fuzz_target!(|text: &str| {
    match parse_duration(text) {
        Ok(d) => {
            // Valid text is ASCII digits and a unit (or "0"): the same value in nanoseconds
            // parses back to the same duration when it fits a u64.
            assert!(text.is_ascii());
            if let Ok(ns) = u64::try_from(d.as_nanos()) {
                assert_eq!(parse_duration(&format!("{ns}ns")), Ok(d));
            }
        }
        Err(e) => {
            assert_eq!(e.code(), ErrorCode::InvalidDuration);
            let quoted = e.text().trim_end_matches('…');
            assert!(text.starts_with(quoted));
            assert!(e.to_string().starts_with("RITMO-ATR-001"));
        }
    }
    match parse_bool(text) {
        Ok(b) => assert_eq!(text, if b { "true" } else { "false" }),
        Err(e) => assert_eq!(e.code(), ErrorCode::InvalidBool),
    }
});
