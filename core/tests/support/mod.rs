//! What several of ritmo-core's test files share: reference parsers and input generators for
//! the tests that feed ritmo text, the window bound every admission must keep, a listener that
//! records, a waiter that is interrupted at once, and small constructors.
#![allow(dead_code)] // each test file uses its own share

use std::sync::Mutex;

use ritmo_core::{Clock, Config, Event, Interrupted, Listener, Snapshot, Wait};

/// `permits` per `period`, which the test knows to be valid.
pub fn config(permits: u32, period: Duration) -> Config {
    Config::new(permits, period).expect("a valid config")
}

/// A snapshot's fields, to compare with a tuple (`Snapshot` may grow fields).
pub fn parts(s: Snapshot) -> (&'static str, u32, u32) {
    (s.id, s.available_permits, s.permits)
}

/// The bound: in any window of the record, the permits used fit `n + floor(w / T)` with
/// `T = period / n` exactly, that is `(count - n) * period <= w * n`. `uses` are `(instant, k)`
/// in nanoseconds (or any unit `period` is in).
pub fn bound_holds(uses: &[(u128, u128)], n: u128, period: u128) -> Result<(), TestCaseError> {
    let mut uses = uses.to_vec();
    uses.sort_unstable();
    for i in 0..uses.len() {
        let mut count = 0u128;
        for &(at, k) in &uses[i..] {
            count += k;
            let w = at - uses[i].0;
            prop_assert!(
                count <= n || (count - n) * period <= w * n,
                "{} permits in {} (n = {}, period = {})",
                count,
                w,
                n,
                period
            );
        }
    }
    Ok(())
}

/// Keeps every event it hears.
pub struct Recorder(Mutex<Vec<Event>>);

impl Recorder {
    pub const fn new() -> Self {
        Recorder(Mutex::new(Vec::new()))
    }

    /// The events heard since the last call.
    pub fn take(&self) -> Vec<Event> {
        std::mem::take(&mut self.0.lock().unwrap())
    }
}

impl Listener for Recorder {
    fn on_event(&self, event: &Event) {
        self.0.lock().unwrap().push(*event);
    }
}

/// A waiter interrupted as soon as it starts waiting.
pub struct InterruptAtOnce;

impl<C: Clock + ?Sized> Wait<C> for InterruptAtOnce {
    fn wait_until(&mut self, _clock: &C, _deadline: u64) -> Result<(), Interrupted> {
        Err(Interrupted)
    }
}

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
