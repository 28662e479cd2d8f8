//! The parsers on arbitrary bytes: never a panic, and a response's wait is never zero (a wait
//! of zero holds nothing; the hold's cap bounds the rest).

use std::time::{Duration, SystemTime};

use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use proptest::prelude::*;
use ritmo_client::headers::{
    announced_policies, limit_statuses, retry_after, server_wait, x_ratelimit_wait,
};

fn names() -> impl Strategy<Value = HeaderName> {
    prop_oneof![
        Just(HeaderName::from_static("retry-after")),
        Just(HeaderName::from_static("ratelimit")),
        Just(HeaderName::from_static("ratelimit-policy")),
        Just(HeaderName::from_static("x-ratelimit-remaining")),
        Just(HeaderName::from_static("x-ratelimit-reset")),
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
    ]
}

fn now() -> impl Strategy<Value = SystemTime> {
    (0u64..=4_000_000_000).prop_map(|s| SystemTime::UNIX_EPOCH + Duration::from_secs(s))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn single_values_never_panic(a in fieldish(), b in fieldish(), now in now()) {
        // `0` is a valid answer of both ("no wait"); `server_wait` drops it.
        let _ = retry_after(&a, now);
        let _ = x_ratelimit_wait(&a, &b, now);
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
    }
}
