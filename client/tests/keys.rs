//! Naming a key from a `Uri` or from text: the same key a request to that host gets, and a coded
//! error for what names no host and port.

use std::time::Duration;

use http::{HeaderMap, HeaderValue, Request, StatusCode, Uri, header::RETRY_AFTER};
use ritmo_client::{HostKey, KeyError, Outbound};
use ritmo_core::Config;

/// The key the layer gives a request to `uri` (what the user's name must equal).
fn key_of_request(outbound: &Outbound<HostKey>, uri: &str) -> HostKey {
    let request = Request::get(uri).body(()).unwrap();
    let uri = request.uri();
    let headers = HeaderMap::new();
    let default_port = match uri.scheme_str() {
        Some("https") => Some(443),
        Some("http") => Some(80),
        _ => None,
    };
    outbound.key_of(&ritmo_client::Target::new(
        request.method(),
        uri.scheme_str(),
        uri.host(),
        uri.port_u16().or(default_port),
        uri.path(),
        &headers,
    ))
}

#[test]
fn names_from_text_and_uris_are_the_keys_requests_get() {
    let config = Config::new(1, Duration::from_secs(1)).unwrap();
    let outbound = Outbound::per_host("keys", config).build();
    for (name, request_uri) in [
        ("api.example:443", "https://api.example/v1/x"),
        ("API.Example:443", "https://api.example/"),
        ("api.example:80", "http://api.example/"),
        ("api.example:8443", "https://api.example:8443/"),
        ("127.0.0.1:3000", "http://127.0.0.1:3000/x"),
        ("[::1]:8080", "http://[::1]:8080/x"),
        ("https://api.example", "https://api.example/v1/x"),
        ("http://API.example:81/a?b=c", "http://api.example:81/"),
        ("HTTPS://API.example/v1", "HTTPS://api.example/"),
    ] {
        let from_text: HostKey = name.parse().unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(from_text, key_of_request(&outbound, request_uri), "{name}");
        assert_eq!(HostKey::try_from(name), Ok(from_text.clone()));
        let uri: Uri = request_uri.parse().unwrap();
        assert_eq!(
            HostKey::from_uri(&uri),
            Ok(from_text.clone()),
            "{request_uri}"
        );
        assert_eq!(HostKey::try_from(&uri), Ok(from_text));
    }
}

#[test]
fn bad_names_are_coded_errors() {
    for (text, error, code) in [
        ("", KeyError::Empty, "RITMO-CLI-001"),
        ("api example:80", KeyError::Invalid, "RITMO-CLI-002"),
        ("api.example:99999", KeyError::Invalid, "RITMO-CLI-002"),
        ("user@api.example:80", KeyError::Invalid, "RITMO-CLI-002"),
        ("https://", KeyError::Invalid, "RITMO-CLI-002"),
        (
            "http://api.example:99999/",
            KeyError::Invalid,
            "RITMO-CLI-002",
        ),
        ("api.example:", KeyError::Invalid, "RITMO-CLI-002"),
        ("api.example:0", KeyError::Invalid, "RITMO-CLI-002"),
        (":80", KeyError::NoHost, "RITMO-CLI-003"),
        ("api.example", KeyError::NoPort, "RITMO-CLI-004"),
        ("ftp://api.example/", KeyError::NoPort, "RITMO-CLI-004"),
    ] {
        let got = text.parse::<HostKey>();
        assert_eq!(got, Err(error), "{text:?}");
        assert_eq!(error.code(), code);
        assert!(error.to_string().starts_with(code), "{error}");
    }
    let relative: Uri = "/v1/search".parse().unwrap();
    assert_eq!(HostKey::from_uri(&relative), Err(KeyError::NoHost));
}

#[tokio::test(start_paused = true)]
async fn a_named_key_reads_and_sets_that_host_s_hold() {
    let config = Config::new(10, Duration::from_secs(1)).unwrap();
    let outbound = Outbound::per_host("keys", config).build();
    let key: HostKey = "api.example:443".parse().unwrap();
    let mut headers = HeaderMap::new();
    headers.insert(RETRY_AFTER, HeaderValue::from_static("4"));
    outbound.observe(&key, StatusCode::TOO_MANY_REQUESTS, &headers);
    let same = HostKey::from_uri(&"https://API.example/anything".parse().unwrap()).unwrap();
    assert_eq!(outbound.held_for(&same), Some(Duration::from_secs(4)));
    let other: HostKey = "api.example:80".parse().unwrap();
    assert_eq!(outbound.held_for(&other), None);
}
