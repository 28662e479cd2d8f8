//! Every text input, fed random and adversarial strings: durations (`parse_duration`, the
//! builder's text durations), booleans (`parse_bool`, `enabled`). Each must give the value a
//! simple reference parser written here gives, or the stable error code, quoting the text
//! (cut short on a character boundary), and never panic.
//!
//! The `fuzz/` directory runs the same functions under cargo-fuzz (see RELIABILITY.md).

use core::time::Duration;

use proptest::prelude::*;
use ritmo_core::{Config, ConfigError, ErrorCode, parse_bool, parse_duration};

mod support;
use support::{any_text, duration_like, quoted, reference_duration};

fn check_error(err: &ConfigError, code: ErrorCode, text: &str) -> Result<(), TestCaseError> {
    prop_assert_eq!(err.code(), code, "{:?}", text);
    prop_assert_eq!(err.text(), quoted(text));
    prop_assert!(err.text().len() <= 32);
    let shown = err.to_string();
    prop_assert!(shown.starts_with(code.as_str()), "{}", shown);
    prop_assert!(shown.contains(&format!("{:?}", quoted(text))), "{}", shown);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6_000, ..ProptestConfig::default() })]

    /// Duration text, adversarial shapes: the same answer as the reference parser, and on error
    /// `RITMO-ATR-001` quoting the text.
    #[test]
    fn duration_text_matches_the_reference(text in duration_like()) {
        match (parse_duration(&text), reference_duration(&text)) {
            (Ok(got), Some(expected)) => prop_assert_eq!(got, expected, "{:?}", text),
            (Err(err), None) => check_error(&err, ErrorCode::InvalidDuration, &text)?,
            (got, expected) => prop_assert!(false, "{:?}: got {:?}, reference {:?}", text, got, expected),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4_000, ..ProptestConfig::default() })]

    /// Duration text, anything at all: the same answer as the reference parser.
    #[test]
    fn any_text_as_a_duration_matches_the_reference(text in any_text()) {
        match (parse_duration(&text), reference_duration(&text)) {
            (Ok(got), Some(expected)) => prop_assert_eq!(got, expected, "{:?}", text),
            (Err(err), None) => check_error(&err, ErrorCode::InvalidDuration, &text)?,
            (got, expected) => prop_assert!(false, "{:?}: got {:?}, reference {:?}", text, got, expected),
        }
    }

    /// `enabled`: exactly `true` or `false`, anything else `RITMO-ATR-006` quoting the text.
    #[test]
    fn any_text_as_a_bool(text in prop_oneof![
        any_text(),
        "(?i)(true|false)",
        "[ \t]?(true|false|1|0|yes|no|on|off)[ \t\n]?",
    ]) {
        match parse_bool(&text) {
            Ok(b) => prop_assert_eq!(text.as_str(), if b { "true" } else { "false" }),
            Err(err) => {
                prop_assert!(text != "true" && text != "false");
                check_error(&err, ErrorCode::InvalidBool, &text)?;
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3_000, ..ProptestConfig::default() })]

    /// The builder, all from text: the first bad value's code in the order the builder was told
    /// them, then the config's own checks, as if each value had been parsed by the reference.
    #[test]
    fn a_config_built_from_text(
        permits in prop_oneof![Just(0u32), 1u32..1_000, any::<u32>()],
        period in prop_oneof![duration_like(), any_text()],
        max_wait in prop_oneof![duration_like(), any_text()],
        enabled in prop_oneof![Just("true".to_owned()), Just("false".to_owned()), any_text()],
    ) {
        let built = Config::builder()
            .permits(permits)
            .period(period.as_str())
            .max_wait(max_wait.as_str())
            .enabled_text(&enabled)
            .build();
        let expected = match (
            reference_duration(&period),
            reference_duration(&max_wait),
            enabled.as_str(),
        ) {
            (None, _, _) => Err((ErrorCode::InvalidDuration, Some(period.as_str()))),
            (_, None, _) => Err((ErrorCode::InvalidDuration, Some(max_wait.as_str()))),
            (_, _, e) if e != "true" && e != "false" => Err((ErrorCode::InvalidBool, Some(e))),
            (Some(_), Some(_), _) if permits == 0 => Err((ErrorCode::InvalidPermits, None)),
            (Some(p), Some(_), _) if p.is_zero() => Err((ErrorCode::ZeroPeriod, None)),
            (Some(p), Some(_), _) if p.as_nanos() < permits as u128 => Err((ErrorCode::TooFast, None)),
            (Some(p), Some(w), e) => Ok((p, w, e == "true")),
        };
        match (built, expected) {
            (Ok(config), Ok((p, w, e))) => {
                prop_assert_eq!(config.permits(), permits);
                prop_assert_eq!(config.period(), p);
                prop_assert_eq!(config.max_wait(), w);
                prop_assert_eq!(config.enabled(), e);
            }
            (Err(err), Err((code, Some(text)))) => check_error(&err, code, text)?,
            (Err(err), Err((code, None))) => {
                prop_assert_eq!(err.code(), code);
                prop_assert!(err.to_string().starts_with(code.as_str()));
            }
            (got, expected) => prop_assert!(false, "got {:?}, expected {:?}", got, expected),
        }
    }
}

/// The strings the issue names, one by one, so a regression points at the culprit.
#[test]
fn named_adversarial_strings() {
    let cases = [
        "",
        " ",
        "\t1s",
        "+1s",
        "-1s",
        "−1s",
        "99999999999999999999d",
        "18446744073709551615d",
        "213503982334601d",
        "1D",
        "1Ms",
        "1MS",
        "1NS",
        "1µs",
        "1μs",
        "１s",
        "٣s",
        "1s\u{301}",
        "1ſ",
        "🦀",
        "\u{0}",
    ];
    for text in cases {
        assert_eq!(
            parse_duration(text).map_err(|e| e.code()),
            reference_duration(text).ok_or(ErrorCode::InvalidDuration),
            "{text:?}"
        );
    }
    // The largest valid values of each unit, and one past them.
    assert_eq!(
        parse_duration("213503982334601d"),
        Ok(Duration::from_secs(213_503_982_334_601 * 86_400))
    );
    assert_eq!(
        parse_duration("18446744073709551615ms"),
        Ok(Duration::from_millis(u64::MAX))
    );
    assert!(parse_duration("18446744073709551616ms").is_err());
    let long = "9".repeat(1 << 16) + "s";
    assert_eq!(
        parse_duration(&long).unwrap_err().code(),
        ErrorCode::InvalidDuration
    );
    let zeros = "0".repeat(1 << 16) + "1s";
    assert_eq!(parse_duration(&zeros), Ok(Duration::from_secs(1)));
}
