//! Reference parsers and input generators shared by the tests that feed ritmo text.
#![allow(dead_code)] // each test file uses its own share

use core::time::Duration;

use proptest::prelude::*;

/// Duration text as ritmo documents it, written the obvious way: `"0"`, or ASCII digits followed by one of
/// the units, with the value in exact `u128` nanoseconds; `None` where it is not valid (not that
/// shape, or the number does not fit a `u64`, or whole seconds overflow a `u64`).
pub fn reference_duration(text: &str) -> Option<Duration> {
    if text == "0" {
        return Some(Duration::ZERO);
    }
    let digits: String = text.chars().take_while(|c| c.is_ascii_digit()).collect();
    let unit = &text[digits.len()..];
    if digits.is_empty() {
        return None;
    }
    let significant = digits.trim_start_matches('0');
    if significant.len() > 20 {
        return None;
    }
    let value: u128 = if significant.is_empty() {
        0
    } else {
        significant.parse().ok()?
    };
    if value > u64::MAX as u128 {
        return None;
    }
    const NS: u128 = 1_000_000_000;
    let nanos = match unit {
        "ns" => value,
        "us" => value * 1_000,
        "ms" => value * 1_000_000,
        "s" => value * NS,
        "m" => value * 60 * NS,
        "h" => value * 3_600 * NS,
        "d" => value * 86_400 * NS,
        _ => return None,
    };
    let secs = nanos / NS;
    if secs > u64::MAX as u128 {
        return None;
    }
    Some(Duration::new(secs as u64, (nanos % NS) as u32))
}

/// What an error quotes of the offending text (32 bytes at most).
pub fn quoted(text: &str) -> String {
    quoted_in(text, 32)
}

/// What a `ConfigError` keeps of `text` in a field of `n` bytes: all of it if it fits, else its
/// longest prefix of whole characters that leaves room for `…`.
pub fn quoted_in(text: &str, n: usize) -> String {
    if text.len() <= n {
        return text.to_owned();
    }
    let mut cut = n - '…'.len_utf8();
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}…", &text[..cut])
}

/// Strings shaped like durations, with every kind of damage: signs, spaces, leading zeros, huge
/// numbers, units in other cases or scripts, trailing junk.
pub fn duration_like() -> impl Strategy<Value = String> {
    let prefix = prop_oneof![
        4 => Just(String::new()),
        1 => prop::sample::select(vec!["+", "-", " ", "\t", "0x", "\u{feff}", "\u{2212}", "."])
            .prop_map(str::to_owned),
    ];
    let number = prop_oneof![
        3 => (0u64..100_000).prop_map(|v| v.to_string()),
        2 => any::<u64>().prop_map(|v| v.to_string()),
        1 => "[0-9]{19,25}",
        1 => "0{1,40}[0-9]{0,21}",
        1 => Just(String::new()),
        1 => "[0-9]{1,3}\\.[0-9]{1,3}",
        1 => "[٠-٩０-９]{1,4}",
    ];
    let unit = prop_oneof![
        6 => prop::sample::select(vec!["ns", "us", "ms", "s", "m", "h", "d"]).prop_map(str::to_owned),
        3 => prop::sample::select(vec![
            "", "NS", "Us", "uS", "MS", "Ms", "S", "M", "H", "D", "µs", "μs", "sec", "secs", "min",
            "hr", "day", "days", "w", "y", "ms ", " s", "s\0", "ſ", "ｓ", "msms", "e3ms",
        ])
        .prop_map(str::to_owned),
        1 => "\\PC{0,4}",
    ];
    let suffix = prop_oneof![
        6 => Just(String::new()),
        1 => prop::sample::select(vec![" ", "\n", "1", "s", "ms", "\u{301}", "🦀"]).prop_map(str::to_owned),
    ];
    (prefix, number, unit, suffix).prop_map(|(p, n, u, s)| format!("{p}{n}{u}{s}"))
}

/// Any text at all: random unicode, random bytes that are valid UTF-8, very long strings.
pub fn any_text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => any::<String>(),
        2 => "\\PC{0,12}",
        1 => "[0-9smhdnu ]{0,12}",
        1 => "(é|🦀|a|1){30,400}",
        1 => "[0-9]{200,2000}s",
    ]
}
