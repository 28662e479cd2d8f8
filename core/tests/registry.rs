//! The registry surface: named limiters shared by id, their errors, layered settings, a `static`
//! registry under threads, and events. Everything runs on `ManualClock`s: no test sleeps.

use std::sync::Barrier;
use std::thread;
use std::time::Duration;

use ritmo_core::{
    Clock, Config, ErrorCode, Event, ManualClock, Overrides, RateLimitExceeded, Reason, Registry,
    Settings, SettingsError, const_config,
};

mod support;
use support::{Recorder, parts};

const MS: Duration = Duration::from_millis(1);

/// 5 per second, waiting up to 500 ms: the "geocoding" quota.
const GEOCODING: Config =
    const_config!(5, Duration::from_secs(1)).with_max_wait(Duration::from_millis(500));

type Limiters<'c> = Registry<&'c ManualClock, 4>;

/// One caller of the geocoding quota.
fn geocode(limiters: &Limiters<'_>) -> Result<(), RateLimitExceeded> {
    limiters
        .get_or_create("geocoding", GEOCODING)
        .expect("one config for geocoding")
        .acquire_advancing()
}

/// Another, unrelated function that spends the same quota.
fn reverse(limiters: &Limiters<'_>) -> Result<(), RateLimitExceeded> {
    limiters
        .get_or_create("geocoding", GEOCODING)
        .expect("one config for geocoding")
        .acquire_advancing()
}

#[test]
fn geocode_and_reverse_share_one_quota() {
    let clock = ManualClock::new();
    let limiters: Limiters<'_> = Registry::new(&clock);

    // Together they get the burst of 5, at once.
    for i in 0..5 {
        let call = if i % 2 == 0 { geocode } else { reverse };
        call(&limiters).unwrap();
        assert_eq!(clock.now(), 0, "call {i} of the burst waited");
    }
    assert_eq!(limiters.len(), 1);

    // The next call waits exactly one emission interval.
    reverse(&limiters).unwrap();
    assert_eq!(clock.now(), 200 * MS.as_nanos() as u64);

    // Two callers in flight hold the next slots (200 ms and 400 ms away)...
    let shared = limiters.get("geocoding").unwrap();
    let first = shared.reserve().unwrap();
    let second = shared.reserve().unwrap();
    assert_eq!(
        (first.wait_time(), second.wait_time()),
        (200 * MS, 400 * MS)
    );

    // ...so a third would wait 600 ms > max_wait: rejected at once, the clock untouched.
    let err = geocode(&limiters).unwrap_err();
    assert_eq!(err.id(), "geocoding");
    assert_eq!(err.reason(), Reason::NoPermitInTime);
    assert_eq!(err.retry_after(), 600 * MS);
    assert_eq!(clock.now(), 200 * MS.as_nanos() as u64);

    // The last caller gives up: its slot goes back, and the next call waits 400 ms for it.
    assert!(second.cancel());
    first.commit();
    reverse(&limiters).unwrap();
    assert_eq!(clock.now(), 600 * MS.as_nanos() as u64);
}

#[test]
fn one_id_with_another_config_is_reg_008_and_changes_nothing() {
    let clock = ManualClock::new();
    let limiters: Limiters<'_> = Registry::new(&clock);
    let geocoding = limiters.get_or_create("geocoding", GEOCODING).unwrap();
    geocoding.try_acquire_n(2).unwrap();

    for other in [
        Config::new(6, Duration::from_secs(1)).unwrap(),
        GEOCODING.with_max_wait(Duration::ZERO),
        GEOCODING.with_enabled(false),
    ] {
        let err = limiters.get_or_create("geocoding", other).unwrap_err();
        assert_eq!(err.code(), ErrorCode::ConfigMismatch);
        assert_eq!(err.id(), "geocoding");
        assert!(err.to_string().starts_with("RITMO-REG-008"), "{err}");
    }
    let same = limiters.get("geocoding").unwrap();
    assert!(std::ptr::eq(same, geocoding));
    assert_eq!(same.config(), GEOCODING);
    assert_eq!(same.available_permits(), 3);
    assert_eq!(limiters.len(), 1);
}

#[test]
fn unknown_id_is_reg_009() {
    let clock = ManualClock::new();
    let limiters: Limiters<'_> = Registry::new(&clock);
    let err = limiters.get("geocoding").unwrap_err();
    assert_eq!((err.code(), err.id()), (ErrorCode::UnknownId, "geocoding"));

    limiters.get_or_create("geocoding", GEOCODING).unwrap();
    assert!(limiters.get("geocoding").is_ok());
    assert_eq!(
        limiters.get("Geocoding").unwrap_err().code(),
        ErrorCode::UnknownId
    );
}

#[test]
fn more_limiters_than_capacity_is_reg_010() {
    let clock = ManualClock::new();
    let limiters: Registry<&ManualClock, 3> = Registry::new(&clock);
    let config = Config::new(1, Duration::from_secs(1)).unwrap();
    for id in ["a", "b", "c"] {
        limiters.get_or_create(id, config).unwrap();
    }
    let err = limiters.get_or_create("d", config).unwrap_err();
    assert_eq!((err.code(), err.id()), (ErrorCode::RegistryFull, "d"));
    // The ones it holds are still there, and still shared.
    assert!(limiters.get_or_create("b", config).is_ok());
    assert_eq!(limiters.len(), 3);
}

#[test]
fn handles_and_the_registry_give_snapshots() {
    let clock = ManualClock::new();
    let limiters: Limiters<'_> = Registry::new(&clock);
    let api = limiters
        .get_or_create("api", Config::new(10, Duration::from_secs(1)).unwrap())
        .unwrap();
    let uart = limiters
        .get_or_create("uart", Config::new(4, Duration::from_millis(4)).unwrap())
        .unwrap();
    api.try_acquire_n(7).unwrap();
    uart.try_acquire_n(4).unwrap();
    assert_eq!(api.available_permits(), 3);
    assert_eq!(parts(uart.snapshot()), ("uart", 0, 4));
    clock.advance(2 * MS);
    assert_eq!(
        limiters
            .snapshot()
            .into_iter()
            .map(parts)
            .collect::<Vec<_>>(),
        [("api", 3, 10), ("uart", 2, 4),]
    );
}

// ---------------------------------------------------------------------------------------------
// Layered settings

/// What a resolution should give: permits, period, max_wait, enabled.
type Expected = (u32, Duration, Duration, bool);

#[test]
fn layered_resolutions() {
    const S: Duration = Duration::from_secs(1);
    const Z: Duration = Duration::ZERO;
    let base: &[(&str, &str)] = &[
        ("configs.default.permits", "10"),
        ("configs.default.period", "1s"),
        ("configs.slow.permits", "1"),
        ("configs.slow.period", "1m"),
        ("configs.slow.max-wait", "30s"),
        ("configs.slow.enabled", "false"),
        ("instances.geocoding.permits", "5"),
        ("instances.geocoding.max-wait", "500ms"),
        ("instances.backup.config", "slow"),
        ("instances.backup.enabled", "true"),
        ("instances.batch.config", "slow"),
        ("instances.batch.max_wait", "2s"),
        ("instances.api.v2.permits", "3"),
    ];
    let rows: &[(&str, &str, Overrides, Expected)] = &[
        (
            "defaults only below configs.default",
            "search",
            Overrides::new(),
            (10, S, Z, true),
        ),
        (
            "instance over default",
            "geocoding",
            Overrides::new(),
            (5, S, 500 * MS, true),
        ),
        (
            "named base replaces default",
            "backup",
            Overrides::new(),
            (1, 60 * S, 30 * S, true),
        ),
        (
            "max_wait spelling",
            "batch",
            Overrides::new(),
            (1, 60 * S, 2 * S, false),
        ),
        (
            "an id with dots",
            "api.v2",
            Overrides::new(),
            (3, S, Z, true),
        ),
        (
            "code over instance",
            "geocoding",
            Overrides::new().permits(2),
            (2, S, 500 * MS, true),
        ),
        (
            "code over everything",
            "backup",
            Overrides::new()
                .permits(4)
                .period(S)
                .max_wait(Z)
                .enabled(false),
            (4, S, Z, false),
        ),
    ];
    let settings = Settings::new(base);
    for (what, id, code, expected) in rows {
        let c = settings
            .resolve_with(id, *code)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(
            (c.permits(), c.period(), c.max_wait(), c.enabled()),
            *expected,
            "{what}"
        );
    }

    // Without configs.default nothing is inherited, and the last pair for a key wins.
    let bare = Settings::new(&[
        ("instances.a.permits", "1"),
        ("instances.a.period", "1s"),
        ("instances.a.permits", "8"),
    ]);
    assert_eq!(bare.resolve("a").unwrap().permits(), 8);
    assert_eq!(
        bare.resolve("b").unwrap_err().code(),
        ErrorCode::InvalidSetting
    );
}

#[test]
fn settings_work_from_owned_pairs_and_maps() {
    let owned: Vec<(String, String)> = vec![
        ("instances.a.permits".into(), "2".into()),
        ("instances.a.period".into(), "10ms".into()),
    ];
    let from_vec = Settings::new(&owned).resolve("a").unwrap();
    let map: std::collections::BTreeMap<String, String> = owned.iter().cloned().collect();
    let from_map = Settings::new(&map).resolve("a").unwrap();
    assert_eq!(from_vec, Config::new(2, 10 * MS).unwrap());
    assert_eq!(from_map, from_vec);
}

/// The settings error of limiter `id`, or a panic naming what resolved instead.
fn error_of(pairs: &[(&str, &str)], id: &str, code: Overrides) -> SettingsError {
    match Settings::new(pairs).resolve_with(id, code) {
        Ok(config) => panic!("{pairs:?} resolved to {config:?}"),
        Err(e) => e,
    }
}

#[test]
fn each_settings_error_has_its_code_and_key() {
    let ok: &[(&str, &str)] = &[("instances.x.permits", "5"), ("instances.x.period", "1s")];
    let with = |extra: &[(&'static str, &'static str)]| -> Vec<(&'static str, &'static str)> {
        ok.iter().chain(extra).copied().collect()
    };
    // (pairs, code, cause, text, key)
    type Row = (
        Vec<(&'static str, &'static str)>,
        ErrorCode,
        Option<ErrorCode>,
        &'static str,
        &'static str,
    );
    let rows: Vec<Row> = vec![
        (
            with(&[("instances.x.period", "1 sec")]),
            ErrorCode::InvalidDuration,
            None,
            "1 sec",
            "instances.x.period",
        ),
        (
            with(&[("instances.x.max-wait", "-5ms")]),
            ErrorCode::InvalidDuration,
            None,
            "-5ms",
            "instances.x.max-wait",
        ),
        (
            with(&[("instances.x.permits", "five")]),
            ErrorCode::InvalidPermits,
            None,
            "five",
            "instances.x.permits",
        ),
        (
            with(&[("instances.x.permits", "-1")]),
            ErrorCode::InvalidPermits,
            None,
            "-1",
            "instances.x.permits",
        ),
        (
            with(&[("instances.x.enabled", "yes")]),
            ErrorCode::InvalidBool,
            None,
            "yes",
            "instances.x.enabled",
        ),
        (
            with(&[("instances.x.config", "fast")]),
            ErrorCode::UnknownConfig,
            None,
            "fast",
            "instances.x.config",
        ),
        (
            with(&[("instances.x.config", "default")]),
            ErrorCode::UnknownConfig,
            None,
            "default",
            "instances.x.config",
        ),
        (
            with(&[("instances.x.permits", "0")]),
            ErrorCode::InvalidSetting,
            Some(ErrorCode::InvalidPermits),
            "",
            "instances.x.permits",
        ),
        (
            with(&[("instances.x.period", "0")]),
            ErrorCode::InvalidSetting,
            Some(ErrorCode::ZeroPeriod),
            "",
            "instances.x.period",
        ),
        (
            with(&[("instances.x.permits", "2000000000")]),
            ErrorCode::InvalidSetting,
            Some(ErrorCode::TooFast),
            "",
            "instances.x.period",
        ),
        (
            vec![
                ("configs.default.permits", "0"),
                ("instances.x.period", "1s"),
            ],
            ErrorCode::InvalidSetting,
            Some(ErrorCode::InvalidPermits),
            "",
            "configs.default.permits",
        ),
        (
            vec![("instances.x.permits", "5")],
            ErrorCode::InvalidSetting,
            Some(ErrorCode::ZeroPeriod),
            "",
            "instances.x.period",
        ),
        (
            vec![("configs.default.period", "1s")],
            ErrorCode::InvalidSetting,
            Some(ErrorCode::InvalidPermits),
            "",
            "instances.x.permits",
        ),
    ];
    for (pairs, code, cause, text, key) in &rows {
        let err = error_of(pairs, "x", Overrides::new());
        assert_eq!(
            (err.code(), err.cause(), err.text(), err.key()),
            (*code, *cause, *text, *key),
            "{pairs:?}"
        );
        assert!(err.to_string().starts_with(code.as_str()), "{err}");
        assert!(err.to_string().contains(key), "{err}");
    }

    // Values the code gives are not settings: their errors have Config::new's own code.
    let err = error_of(ok, "x", Overrides::new().permits(0));
    assert_eq!(
        (err.code(), err.cause(), err.key()),
        (ErrorCode::InvalidPermits, None, "instances.x.permits")
    );
    // ...unless the settings' half of the config is the one to fix.
    let err = error_of(ok, "x", Overrides::new().permits(2_000_000_000));
    assert_eq!(
        (err.code(), err.cause(), err.key()),
        (
            ErrorCode::InvalidSetting,
            Some(ErrorCode::TooFast),
            "instances.x.period"
        )
    );
}

// ---------------------------------------------------------------------------------------------
// A `static` registry under threads

static SHARED_CLOCK: ManualClock = ManualClock::new();
static SHARED: Registry<&ManualClock, 8> = Registry::new(&SHARED_CLOCK);

#[test]
fn a_static_registry_admits_exactly_its_permits_across_threads() {
    const THREADS: usize = 8;
    const CALLS: usize = 300;
    let quotas: [(&'static str, u32); 3] = [("a", 50), ("b", 120), ("c", 333)];
    let config = |permits| Config::new(permits, Duration::from_secs(3600)).unwrap();

    let admitted: Vec<[u32; 3]> = thread::scope(|s| {
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                s.spawn(move || {
                    let mut admitted = [0u32; 3];
                    for i in 0..CALLS {
                        let q = (i + t) % 3;
                        let (id, permits) = quotas[q];
                        let limiter = SHARED.get_or_create(id, config(permits)).unwrap();
                        if limiter.try_acquire().is_ok() {
                            admitted[q] += 1;
                        }
                    }
                    admitted
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });

    // The clock never moved, so each quota admitted exactly its burst, no more, no fewer
    // (each saw THREADS * CALLS / 3 = 800 calls, more than any burst).
    for (q, (id, permits)) in quotas.iter().enumerate() {
        let total: u32 = admitted.iter().map(|a| a[q]).sum();
        assert_eq!(total, *permits, "{id}");
        assert_eq!(SHARED.get(id).unwrap().available_permits(), 0);
    }
    assert_eq!(SHARED.len(), 3);
}

#[test]
fn racing_registrations_of_one_id_yield_one_limiter() {
    const THREADS: usize = 8;
    let clock = ManualClock::new();
    let config = Config::new(3, Duration::from_secs(1)).unwrap();
    for round in 0..50 {
        let limiters: Registry<&ManualClock, 4> = Registry::new(&clock);
        let barrier = Barrier::new(THREADS);
        let got: Vec<usize> = thread::scope(|s| {
            let workers: Vec<_> = (0..THREADS)
                .map(|_| {
                    s.spawn(|| {
                        barrier.wait();
                        let limiter = limiters.get_or_create("race", config).unwrap();
                        std::ptr::from_ref(limiter) as usize
                    })
                })
                .collect();
            workers.into_iter().map(|w| w.join().unwrap()).collect()
        });
        assert!(got.iter().all(|&p| p == got[0]), "round {round}: {got:?}");
        assert_eq!(limiters.len(), 1, "round {round}");
    }
}

#[test]
fn racing_registrations_never_overfill_the_registry() {
    const IDS: [&str; 8] = ["a", "b", "c", "d", "e", "f", "g", "h"];
    let clock = ManualClock::new();
    let config = Config::new(1, Duration::from_secs(1)).unwrap();
    for round in 0..50 {
        let limiters: Registry<&ManualClock, 5> = Registry::new(&clock);
        let barrier = Barrier::new(IDS.len());
        let results: Vec<Result<&str, ErrorCode>> = thread::scope(|s| {
            let workers: Vec<_> = IDS
                .iter()
                .map(|&id| {
                    let (limiters, barrier) = (&limiters, &barrier);
                    s.spawn(move || {
                        barrier.wait();
                        limiters
                            .get_or_create(id, config)
                            .map(|l| l.id())
                            .map_err(|e| e.code())
                    })
                })
                .collect();
            workers.into_iter().map(|w| w.join().unwrap()).collect()
        });
        let created: Vec<&str> = results.iter().filter_map(|r| r.ok()).collect();
        assert_eq!(created.len(), 5, "round {round}: {results:?}");
        assert!(
            results
                .iter()
                .all(|r| r.is_ok() || *r == Err(ErrorCode::RegistryFull))
        );
        let mut held: Vec<&str> = limiters.iter().map(|l| l.id()).collect();
        let mut created = created;
        held.sort_unstable();
        created.sort_unstable();
        assert_eq!(held, created, "round {round}");
    }
}

// ---------------------------------------------------------------------------------------------
// Events

#[test]
fn the_registry_listener_sees_rejections_and_released_permits_only() {
    static EVENTS: Recorder = Recorder::new();
    let clock = ManualClock::new();
    let limiters: Registry<&ManualClock, 4> = Registry::new(&clock).with_listener(&EVENTS);
    let config = Config::new(2, Duration::from_secs(1))
        .unwrap()
        .with_max_wait(Duration::from_secs(1));
    let geocoding = limiters.get_or_create("geocoding", config).unwrap();

    // Admitted calls, now or after a wait, publish nothing.
    geocoding.try_acquire().unwrap();
    geocoding.acquire_advancing().unwrap();
    geocoding.acquire_advancing().unwrap();
    assert_eq!(EVENTS.take(), []);

    // A rejection is published with the id, the reason and retry_after.
    let rejected = geocoding.try_acquire().unwrap_err();
    assert_eq!(rejected.retry_after(), 500 * MS);
    assert_eq!(EVENTS.take(), [Event::Rejected(rejected)]);

    // Reservations given up: the last one's permit goes back; one with a later reservation
    // behind it leaves its slot unused.
    let first = geocoding.reserve().unwrap();
    let second = geocoding.reserve().unwrap();
    assert!(!first.cancel());
    drop(second);
    let released = |returned| Event::Released {
        id: "geocoding",
        permits: 1,
        reason: Reason::Cancelled,
        returned,
    };
    assert_eq!(EVENTS.take(), [released(false), released(true)]);

    // Every limiter the registry creates has the listener.
    let uart = limiters
        .get_or_create("uart", Config::new(1, Duration::from_secs(1)).unwrap())
        .unwrap();
    uart.try_acquire().unwrap();
    let rejected = uart.try_acquire().unwrap_err();
    assert_eq!(EVENTS.take(), [Event::Rejected(rejected)]);
    assert_eq!(rejected.id(), "uart");
}

#[test]
fn without_a_listener_nothing_is_published_anywhere() {
    static EVENTS: Recorder = Recorder::new();
    let clock = ManualClock::new();
    let heard: Registry<&ManualClock, 1> = Registry::new(&clock).with_listener(&EVENTS);
    let silent: Registry<&ManualClock, 1> = Registry::new(&clock);
    let config = Config::new(1, Duration::from_secs(1)).unwrap();
    let a = silent.get_or_create("a", config).unwrap();
    a.try_acquire().unwrap();
    assert!(a.try_acquire().is_err());
    assert_eq!(EVENTS.take(), []);
    // The same calls on a limiter of the other registry are heard.
    let b = heard.get_or_create("a", config).unwrap();
    b.try_acquire().unwrap();
    assert!(b.try_acquire().is_err());
    assert_eq!(EVENTS.take().len(), 1);
}
