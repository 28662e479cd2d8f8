//! Configuration: validation with the stable error codes, durations from text and fugit,
//! const configs.

use core::time::Duration;

use ritmo_core::{Config, ConfigError, DurationValue, ErrorCode, parse_bool, parse_duration};

fn code(result: Result<impl core::fmt::Debug, ConfigError>) -> ErrorCode {
    result.expect_err("expected an error").code()
}

#[test]
fn invalid_configs_in_code_have_their_codes() {
    assert_eq!(
        code(Config::new(0, Duration::from_secs(1))),
        ErrorCode::InvalidPermits
    );
    assert_eq!(code(Config::new(1, Duration::ZERO)), ErrorCode::ZeroPeriod);
    assert_eq!(
        code(Config::new(0, Duration::ZERO)),
        ErrorCode::InvalidPermits
    );
    // Less than 1 ns per permit.
    assert_eq!(
        code(Config::new(2, Duration::from_nanos(1))),
        ErrorCode::TooFast
    );
    assert_eq!(
        code(Config::new(1_000_000_001, Duration::from_secs(1))),
        ErrorCode::TooFast
    );
    // Exactly 1 ns per permit is fine.
    assert!(Config::new(1_000_000_000, Duration::from_secs(1)).is_ok());
    assert!(Config::new(u32::MAX, Duration::from_nanos(u32::MAX as u64)).is_ok());
}

#[test]
fn display_starts_with_the_code() {
    for (err, code) in [
        (
            Config::new(0, Duration::from_secs(1)).unwrap_err(),
            "RITMO-ATR-003",
        ),
        (Config::new(1, Duration::ZERO).unwrap_err(), "RITMO-ATR-002"),
        (
            Config::new(9, Duration::from_nanos(8)).unwrap_err(),
            "RITMO-REG-001",
        ),
        (parse_duration("fast").unwrap_err(), "RITMO-ATR-001"),
        (parse_bool("yes").unwrap_err(), "RITMO-ATR-006"),
    ] {
        assert!(err.to_string().starts_with(code), "{err}");
        assert_eq!(err.code().as_str(), code);
    }
}

#[test]
fn duration_text() {
    let ok = [
        ("0", Duration::ZERO),
        ("0s", Duration::ZERO),
        ("1ns", Duration::from_nanos(1)),
        ("250us", Duration::from_micros(250)),
        ("500ms", Duration::from_millis(500)),
        ("1s", Duration::from_secs(1)),
        ("2m", Duration::from_secs(120)),
        ("3h", Duration::from_secs(3 * 3600)),
        ("7d", Duration::from_secs(7 * 86_400)),
        ("007ms", Duration::from_millis(7)),
        ("18446744073709551615ns", Duration::from_nanos(u64::MAX)),
    ];
    for (text, expected) in ok {
        assert_eq!(parse_duration(text), Ok(expected), "{text:?}");
        assert_eq!(text.to_duration(), Ok(expected), "{text:?}");
    }
    let bad = [
        "",
        " ",
        "s",
        "1",
        "10",
        "1 s",
        " 1s",
        "1s ",
        "+1s",
        "-1s",
        "1.5s",
        "1e3ms",
        "1S",
        "1MS",
        "1Ms",
        "1sec",
        "1µs",
        "１s",
        "0x10s",
        "99999999999999999999d",
        "18446744073709551616ns",
        "213503982334602d",
        "1s1ms",
        "ms",
        "-0",
        "\u{0}",
    ];
    for text in bad {
        let err = parse_duration(text).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidDuration, "{text:?}");
        assert!(
            err.to_string().contains(&format!("{text:?}")) || text.len() > 30,
            "{err}"
        );
    }
}

#[test]
fn long_offending_text_is_quoted_cut_short_without_breaking_a_character() {
    let text = "é".repeat(100);
    let err = parse_duration(&text).unwrap_err();
    assert!(err.text().ends_with('…'));
    assert!(err.text().len() <= 32);
    assert!(text.starts_with(err.text().trim_end_matches('…')));
}

#[test]
fn enabled_text() {
    assert_eq!(parse_bool("true"), Ok(true));
    assert_eq!(parse_bool("false"), Ok(false));
    for bad in ["", "TRUE", "False", "1", "0", "yes", "on", " true"] {
        assert_eq!(
            parse_bool(bad).unwrap_err().code(),
            ErrorCode::InvalidBool,
            "{bad:?}"
        );
    }
}

#[test]
fn fugit_durations() {
    assert_eq!(
        fugit::MillisDurationU32::from_ticks(1500).to_duration(),
        Ok(Duration::from_millis(1500))
    );
    assert_eq!(
        fugit::Duration::<u64, 1, 32_768>::from_ticks(32_768).to_duration(),
        Ok(Duration::from_secs(1))
    );
    // One tick of a 32768 Hz timer is 30517.578125 ns: rounded up.
    assert_eq!(
        fugit::Duration::<u32, 1, 32_768>::from_ticks(1).to_duration(),
        Ok(Duration::from_nanos(30_518))
    );
    let c = Config::builder()
        .permits(10)
        .period(fugit::SecsDurationU32::from_ticks(1))
        .max_wait(fugit::MicrosDurationU64::from_ticks(250))
        .build()
        .unwrap();
    assert_eq!(c.max_wait(), Duration::from_micros(250));
}

#[test]
fn builder_reports_the_first_bad_value() {
    let b = || Config::builder().permits(5).period("1s");
    assert_eq!(
        b().build().unwrap(),
        Config::new(5, Duration::from_secs(1)).unwrap()
    );
    assert_eq!(
        code(b().max_wait("soon").build()),
        ErrorCode::InvalidDuration
    );
    assert_eq!(code(b().period("0").build()), ErrorCode::ZeroPeriod);
    assert_eq!(code(b().permits(0).build()), ErrorCode::InvalidPermits);
    assert_eq!(
        code(b().enabled_text("maybe").build()),
        ErrorCode::InvalidBool
    );
    assert_eq!(code(b().permits(2_000_000_000).build()), ErrorCode::TooFast);
    assert_eq!(
        code(Config::builder().period("1s").build()),
        ErrorCode::InvalidPermits
    );
    assert_eq!(
        code(Config::builder().permits(1).build()),
        ErrorCode::ZeroPeriod
    );
    let err = b().period("1 s").max_wait("2 s").build().unwrap_err();
    assert_eq!(err.text(), "1 s", "the first bad value is reported");
    let c = b().max_wait("0").enabled_text("false").build().unwrap();
    assert!(!c.enabled());
}

#[test]
fn configs_are_const() {
    const C: Config = ritmo_core::const_config!(10, Duration::from_secs(1))
        .with_max_wait(Duration::from_millis(5));
    const _: () = assert!(C.permits() == 10);
    assert_eq!(C.emission_interval(), Duration::from_millis(100));
}
