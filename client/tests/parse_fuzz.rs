//! The parsers on arbitrary bytes: never a panic, and a response's wait is never zero (a wait
//! of zero holds nothing); whatever a response says, the client's hold never outlasts its cap,
//! reading the fields directly and over real HTTP on 127.0.0.1.

use std::time::{Duration, SystemTime};

use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use proptest::prelude::*;
use ritmo_client::headers::{
    announced_policies, go_duration, limit_statuses, reset_wait, response_time, retry_after,
    server_wait, x_ratelimit_wait,
};
use ritmo_client::{HostKey, Outbound};
use ritmo_core::Config;

#[path = "support/raw.rs"]
mod raw;

fn names() -> impl Strategy<Value = HeaderName> {
    prop_oneof![
        Just(HeaderName::from_static("retry-after")),
        Just(HeaderName::from_static("ratelimit")),
        Just(HeaderName::from_static("ratelimit-policy")),
        Just(HeaderName::from_static("x-ratelimit-remaining")),
        Just(HeaderName::from_static("x-ratelimit-reset")),
        Just(HeaderName::from_static("x-ratelimit-reset-after")),
        Just(HeaderName::from_static("ratelimit-limit")),
        Just(HeaderName::from_static("ratelimit-remaining")),
        Just(HeaderName::from_static("ratelimit-reset")),
        Just(HeaderName::from_static("date")),
        // Per-resource pairs, the usual names and any other.
        Just(HeaderName::from_static("x-ratelimit-remaining-requests")),
        Just(HeaderName::from_static("x-ratelimit-reset-requests")),
        Just(HeaderName::from_static("x-ratelimit-remaining-tokens")),
        Just(HeaderName::from_static("x-ratelimit-reset-tokens")),
        "[a-z0-9-]{0,6}"
            .prop_flat_map(|suffix| {
                prop_oneof![
                    Just(format!("x-ratelimit-remaining-{suffix}")),
                    Just(format!("x-ratelimit-reset-{suffix}")),
                ]
            })
            .prop_filter_map("a field name", |n| HeaderName::from_bytes(n.as_bytes())
                .ok()),
    ]
}

/// Bytes shaped like the fields' syntax, so that the parsers get past their first checks.
fn fieldish() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..64),
        "[\"a-z0-9;=:,.() *?-]{0,48}".prop_map(String::into_bytes),
        "\"[a-z]{0,4}\";r=-?[0-9]{0,22};t=-?[0-9.]{0,22}(;pk=:[A-Za-z0-9+/=]{0,8}:)?"
            .prop_map(String::into_bytes),
        "[0-9]{0,30}(\\.[0-9]{0,12})?".prop_map(String::into_bytes),
        // Go durations, well and badly formed.
        "(-?[0-9]{0,25}(\\.[0-9]{0,25})?(h|m|s|ms|us|\u{b5}s|ns|d|)){1,4}"
            .prop_map(String::into_bytes),
        // HTTP-dates, some valid, some not.
        "(Mon|Wed|Sun), [0-9]{1,2} (Jan|Oct|Foo) [0-9]{1,5} [0-9]{2}:[0-9]{2}:[0-9]{2} GMT"
            .prop_map(String::into_bytes),
        Just(b"0".to_vec()),
    ]
}

fn now() -> impl Strategy<Value = SystemTime> {
    (0u64..=4_000_000_000).prop_map(|s| SystemTime::UNIX_EPOCH + Duration::from_secs(s))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn single_values_never_panic(a in fieldish(), b in fieldish(), now in now()) {
        // `0` is a valid answer of each ("no wait"); `server_wait` drops it.
        let _ = retry_after(&a, now);
        let _ = x_ratelimit_wait(&a, &b, now);
        let _ = reset_wait(&a, now);
        let _ = go_duration(&a);
    }

    #[test]
    fn whole_responses_never_panic(
        fields in prop::collection::vec((names(), fieldish()), 0..6),
        status in prop_oneof![Just(200u16), Just(429), Just(503), 100u16..600],
        now in now(),
    ) {
        let mut headers = HeaderMap::new();
        for (name, value) in fields {
            if let Ok(v) = HeaderValue::from_bytes(&value) {
                headers.append(name, v);
            }
        }
        let status = StatusCode::from_u16(status).unwrap();
        if let Some(w) = server_wait(status, &headers, now) { prop_assert!(!w.is_zero()); }
        let _ = limit_statuses(&headers);
        let _ = announced_policies(&headers);
        let _ = response_time(&headers, now);
    }

    /// What the client keeps of any response: a hold of at most its cap, whatever the fields.
    #[test]
    fn no_response_holds_longer_than_the_cap(
        fields in prop::collection::vec((names(), fieldish()), 0..8),
        status in prop_oneof![Just(200u16), Just(429), Just(503)],
        cap_ms in 1u64..=10_000_000,
    ) {
        let mut headers = HeaderMap::new();
        for (name, value) in fields {
            if let Ok(v) = HeaderValue::from_bytes(&value) {
                headers.append(name, v);
            }
        }
        let cap = Duration::from_millis(cap_ms);
        // On a clock that stands still: a hold of a few microseconds (`1us2µs`) must not end
        // between `observe` and `held_for`.
        let paused = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap();
        let _in_it = paused.enter();
        let outbound = Outbound::global("fuzz", Config::new(1, Duration::from_secs(1)).unwrap())
            .max_hold(cap)
            .build();
        let asked = outbound.observe(&(), StatusCode::from_u16(status).unwrap(), &headers);
        prop_assert!(asked.is_none_or(|w| w <= cap), "{asked:?}");
        prop_assert!(outbound.held_for(&()).is_none_or(|w| w <= cap));
        prop_assert_eq!(asked.is_some(), outbound.held_for(&()).is_some());
    }
}

proptest! {
    // Each case is one exchange over 127.0.0.1: few, and each bounded by the paused clock.
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Arbitrary bytes (all a response's field value may carry on the wire: visible ASCII,
    /// spaces, tabs, bytes from 0x80; and any byte at all, line ends included, which may break
    /// the response) through a real server and hyper's parser: the client never panics, and its
    /// hold never outlasts its cap.
    #[test]
    fn over_http_arbitrary_bytes_never_hold_past_the_cap(
        fields in prop::collection::vec(
            (names(), prop_oneof![
                prop::collection::vec(prop_oneof![0x20u8..=0x7e, 0x80u8..=0xff, Just(b'\t')], 0..40),
                // Shaped like the fields, so that some responses ask for waits, long ones too.
                fieldish(),
            ]),
            1..6,
        ),
        status in prop_oneof![Just(200u16), Just(429), Just(503)],
        // One resource always spent, with a reset from 1 ms to 10^12 hours: most ask for more
        // than the cap, which the arbitrary fields beside it may lengthen but never unbound.
        reset in "[1-9][0-9]{0,11}(h|m|s|ms)",
    ) {
        let mut fields = fields;
        fields.push((HeaderName::from_static("x-ratelimit-remaining-requests"), b"0".to_vec()));
        fields.push((HeaderName::from_static("x-ratelimit-reset-requests"), reset.into_bytes()));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap();
        let held = runtime.block_on(async {
            let lines: Vec<Vec<u8>> = fields
                .iter()
                .map(|(name, value)| [name.as_str().as_bytes(), b": ", value].concat())
                .collect();
            let line_refs: Vec<&[u8]> = lines.iter().map(Vec::as_slice).collect();
            let (addr, _log) = raw::serve(vec![raw::reply(status, &line_refs)]).await;
            let outbound = Outbound::per_host("fuzz", Config::new(10, Duration::from_secs(1)).unwrap())
                .max_hold(Duration::from_secs(90))
                .build();
            let hyper = hyper_util::client::legacy::Client::builder(
                hyper_util::rt::TokioExecutor::new(),
            )
            .build_http::<http_body_util::Empty<bytes::Bytes>>();
            let svc = tower::Layer::layer(&ritmo_client::ClientLayer::new(outbound.clone()), hyper);
            let request = http::Request::get(format!("http://{addr}/"))
                .body(http_body_util::Empty::new())
                .unwrap();
            // A value hyper refuses is a transport error: also an answer, never a panic.
            let _ = tower::ServiceExt::oneshot(svc, request).await;
            let key: HostKey = addr.to_string().parse().unwrap();
            outbound.held_for(&key)
        });
        prop_assert!(held.is_none_or(|w| w <= Duration::from_secs(90)), "{held:?}");
    }
}
