//! Settings keys and values, random and adversarial: `Settings::resolve_with` must give what a
//! reference resolver written here from the documented layers gives (the config, or the error's code, cause,
//! key and quoted text), and never panic.
//!
//! The reference looks keys up by the strings the docs name (`instances.<id>.<attribute>`,
//! `configs.<base>.<attribute>`, the last pair of a key winning), where the library splits each
//! key once: two ways to the same answer.

use core::time::Duration;

use proptest::prelude::*;
use ritmo_core::{Config, ErrorCode, Overrides, Settings, SettingsError};

mod support;
use support::{duration_like, quoted, quoted_in, reference_duration};

/// Text that is no kind of value: cheap to generate, so many cases fit in a debug build.
fn junk() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "\\PC{0,6}",
        1 => "[a-z0-9.]{0,70}",
        1 => "(é|🦀|x){20,40}",
    ]
}

const IDS: &[&str] = &["api", "geo-coding", "a.b", "", "é", "api.permits"];
const BASES: &[&str] = &["default", "slow", "a.b", "", "🦀", "api"];

/// The error the reference expects: code, cause, key (as the error keeps it) and quoted text.
type Expected = (ErrorCode, Option<ErrorCode>, Option<String>, String);

#[derive(Debug, Clone, Copy, PartialEq)]
enum From {
    Code,
    Instance,
    Config,
}

/// `permits` as the settings docs read it: ASCII digits, at most `u32::MAX`.
fn reference_permits(text: &str) -> Option<u32> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let significant = text.trim_start_matches('0');
    if significant.len() > 10 {
        return None;
    }
    let value: u64 = if significant.is_empty() {
        0
    } else {
        significant.parse().ok()?
    };
    u32::try_from(value).ok()
}

fn reference_bool(text: &str) -> Option<bool> {
    match text {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

/// A code override for each attribute (`None`: the code says nothing).
#[derive(Debug, Clone, Copy)]
struct Code {
    permits: Option<u32>,
    period: Option<Duration>,
    max_wait: Option<Duration>,
    enabled: Option<bool>,
}

impl Code {
    fn overrides(&self) -> Overrides {
        let mut o = Overrides::new();
        if let Some(p) = self.permits {
            o = o.permits(p);
        }
        if let Some(p) = self.period {
            o = o.period(p);
        }
        if let Some(w) = self.max_wait {
            o = o.max_wait(w);
        }
        if let Some(e) = self.enabled {
            o = o.enabled(e);
        }
        o
    }
}

fn reference(pairs: &[(String, String)], id: &str, code: Code) -> Result<Config, Expected> {
    let last = |keys: &[String]| pairs.iter().rev().find(|(k, _)| keys.contains(k));
    let defines = |name: &str| {
        let prefix = format!("configs.{name}.");
        pairs
            .iter()
            .any(|(k, _)| k.strip_prefix(&prefix).is_some_and(|a| !a.contains('.')))
    };
    let base = match last(&[format!("instances.{id}.config")]) {
        Some((key, name)) if !defines(name) => {
            return Err((
                ErrorCode::UnknownConfig,
                None,
                Some(quoted_in(key, 56)),
                quoted(name),
            ));
        }
        Some((_, name)) => Some(name.clone()),
        None => defines("default").then(|| "default".to_owned()),
    };
    // The winning (source, key, value) of an attribute known by `names` in the settings.
    let lookup = |names: &[&str]| -> Option<(From, &String, &String)> {
        let keys: Vec<String> = names
            .iter()
            .map(|a| format!("instances.{id}.{a}"))
            .collect();
        if let Some((k, v)) = last(&keys) {
            return Some((From::Instance, k, v));
        }
        let base = base.as_ref()?;
        let keys: Vec<String> = names
            .iter()
            .map(|a| format!("configs.{base}.{a}"))
            .collect();
        last(&keys).map(|(k, v)| (From::Config, k, v))
    };
    fn value<T>(
        code: Option<T>,
        found: Option<(From, &String, &String)>,
        parse: impl Fn(&str) -> Option<T>,
        error: ErrorCode,
    ) -> Result<Option<(T, From)>, Expected> {
        if let Some(v) = code {
            return Ok(Some((v, From::Code)));
        }
        match found {
            None => Ok(None),
            Some((from, key, text)) => match parse(text) {
                Some(v) => Ok(Some((v, from))),
                None => Err((error, None, Some(quoted_in(key, 56)), quoted(text))),
            },
        }
    }
    let permits = value(
        code.permits,
        lookup(&["permits"]),
        reference_permits,
        ErrorCode::InvalidPermits,
    )?;
    let period = value(
        code.period,
        lookup(&["period"]),
        reference_duration,
        ErrorCode::InvalidDuration,
    )?;
    let max_wait = value(
        code.max_wait,
        lookup(&["max-wait", "max_wait"]),
        reference_duration,
        ErrorCode::InvalidDuration,
    )?;
    let enabled = value(
        code.enabled,
        lookup(&["enabled"]),
        reference_bool,
        ErrorCode::InvalidBool,
    )?;
    let missing = |cause, attr| {
        Err((
            ErrorCode::InvalidSetting,
            Some(cause),
            Some(quoted_in(&format!("instances.{id}.{attr}"), 56)),
            String::new(),
        ))
    };
    let Some((permits, permits_from)) = permits else {
        return missing(ErrorCode::InvalidPermits, "permits");
    };
    let Some((period, period_from)) = period else {
        return missing(ErrorCode::ZeroPeriod, "period");
    };
    let key_of = |from: From, attr: &str| match from {
        From::Config => format!("configs.{}.{attr}", base.as_deref().unwrap_or_default()),
        _ => format!("instances.{id}.{attr}"),
    };
    let invalid = |cause: ErrorCode, blame: &[(From, &str)]| -> Expected {
        match blame.iter().find(|(from, _)| *from != From::Code) {
            Some((from, attr)) => (
                ErrorCode::InvalidSetting,
                Some(cause),
                Some(quoted_in(&key_of(*from, attr), 56)),
                String::new(),
            ),
            // Every value came from the code: the code's own error, at the instance's key.
            None => (
                cause,
                None,
                Some(quoted_in(&key_of(From::Instance, blame[0].1), 56)),
                String::new(),
            ),
        }
    };
    // Config::new's rules, checked here in exact arithmetic.
    if permits == 0 {
        return Err(invalid(
            ErrorCode::InvalidPermits,
            &[(permits_from, "permits")],
        ));
    }
    if period.is_zero() {
        return Err(invalid(ErrorCode::ZeroPeriod, &[(period_from, "period")]));
    }
    if period.as_nanos() < u128::from(permits) {
        return Err(invalid(
            ErrorCode::TooFast,
            &[(period_from, "period"), (permits_from, "permits")],
        ));
    }
    let mut config = Config::new(permits, period).expect("checked above");
    if let Some((w, _)) = max_wait {
        config = config.with_max_wait(w);
    }
    if let Some((e, _)) = enabled {
        config = config.with_enabled(e);
    }
    Ok(config)
}

fn permits_like() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => (1u32..100).prop_map(|v| v.to_string()),
        2 => prop::sample::select(vec![
            "0", "007", "4294967295", "4294967296", "99999999999999999999", "+5", "-1", " 5", "5 ",
            "5.0", "", "0x10", "1e3", "٥", "５",
        ])
        .prop_map(str::to_owned),
        1 => any::<u32>().prop_map(|v| v.to_string()),
        1 => junk(),
    ]
}

fn bool_like() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(vec!["true", "false"]).prop_map(str::to_owned),
        1 => prop::sample::select(vec!["TRUE", "False", "1", "0", "yes", " true", "true\n", ""])
            .prop_map(str::to_owned),
        1 => junk(),
    ]
}

/// A value for `attr`: mostly of its kind, sometimes not.
fn value_for(attr: &str) -> BoxedStrategy<String> {
    match attr {
        "permits" => permits_like().boxed(),
        "period" | "max-wait" | "max_wait" => duration_like().boxed(),
        "enabled" => bool_like().boxed(),
        "config" => prop_oneof![
            4 => prop::sample::select(BASES).prop_map(str::to_owned),
            1 => junk(),
        ]
        .boxed(),
        _ => junk().boxed(),
    }
}

/// A settings pair: mostly well-formed keys of the ids and bases above, with values of the
/// attribute's kind or not; sometimes a key that is anything at all.
fn pair() -> impl Strategy<Value = (String, String)> {
    let section = prop_oneof![
        8 => prop::sample::select(vec!["configs.", "instances."]),
        1 => prop::sample::select(vec!["Configs.", "instance.", "", "configs", "instances..", "."]),
    ];
    let name = prop::sample::select([IDS, BASES].concat());
    let attr = prop_oneof![
        8 => prop::sample::select(vec!["permits", "period", "max-wait", "max_wait", "enabled", "config"]),
        1 => prop::sample::select(vec!["Permits", "PERIOD", "burst", "", "max wait", "enabled.x"]),
    ];
    let shaped = (section, name, attr)
        .prop_flat_map(|(s, n, a)| (Just(format!("{s}{n}.{a}")), value_for(a)));
    prop_oneof![9 => shaped, 1 => (junk(), junk())]
}

/// A whole settings source for a query of `id`: a plausible file (the instance's or the default
/// config's permits and period, valid), then random pairs that may override or break it.
fn settings_for_id() -> impl Strategy<Value = (Vec<(String, String)>, &'static str)> {
    prop::sample::select(IDS).prop_flat_map(|id| {
        let section = prop::sample::select(vec![
            format!("instances.{id}."),
            "configs.default.".to_owned(),
        ]);
        let good = (
            section.clone(),
            1u32..50,
            section,
            prop::sample::select(vec!["1s", "250ms", "1m", "10us"]),
        )
            .prop_map(|(s1, permits, s2, period)| {
                vec![
                    (format!("{s1}permits"), permits.to_string()),
                    (format!("{s2}period"), period.to_owned()),
                ]
            });
        (good, prop::collection::vec(pair(), 0..8), Just(id)).prop_map(|(mut good, noise, id)| {
            good.extend(noise);
            (good, id)
        })
    })
}

fn code() -> impl Strategy<Value = Code> {
    (
        prop::option::weighted(0.15, prop_oneof![Just(0u32), 1u32..20, any::<u32>()]),
        prop::option::weighted(
            0.15,
            prop_oneof![
                Just(Duration::ZERO),
                (1u64..5_000_000_000).prop_map(Duration::from_nanos)
            ],
        ),
        prop::option::weighted(0.15, (0u64..1_000).prop_map(Duration::from_millis)),
        prop::option::weighted(0.15, any::<bool>()),
    )
        .prop_map(|(permits, period, max_wait, enabled)| Code {
            permits,
            period,
            max_wait,
            enabled,
        })
}

fn actual(err: SettingsError) -> Expected {
    (
        err.code(),
        err.cause(),
        Some(err.key().to_owned()),
        err.text().to_owned(),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3_000, ..ProptestConfig::default() })]

    #[test]
    fn settings_resolve_as_the_reference_says(
        (pairs, id) in prop_oneof![
            settings_for_id(),
            (prop::collection::vec(pair(), 0..12), prop::sample::select(IDS)),
        ],
        code in code(),
    ) {
        let got = Settings::new(&pairs).resolve_with(id, code.overrides());
        let expected = reference(&pairs, id, code);
        match (got, expected) {
            (Ok(got), Ok(expected)) => prop_assert_eq!(got, expected),
            (Err(err), Err(expected)) => {
                prop_assert!(err.to_string().starts_with(err.code().as_str()));
                prop_assert_eq!(actual(err), expected);
            }
            (got, expected) => {
                prop_assert!(false, "got {:?}, reference {:?}", got, expected);
            }
        }
    }
}

/// Both outcomes are exercised: a generator that never produced a valid config (or never an
/// error) would make the property above vacuous.
#[test]
fn the_generator_reaches_both_outcomes() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = (settings_for_id(), code());
    let (mut ok, mut err) = (0, 0);
    for _ in 0..2_000 {
        let ((pairs, id), code) = strategy.new_tree(&mut runner).unwrap().current();
        match reference(&pairs, id, code) {
            Ok(_) => ok += 1,
            Err(_) => err += 1,
        }
    }
    eprintln!("{ok} valid, {err} invalid");
    assert!(ok >= 100 && err >= 100, "{ok} valid, {err} invalid");
}
