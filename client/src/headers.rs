//! Reading what a server says about its limits: `Retry-After`, the IETF `RateLimit` and
//! `RateLimit-Policy` fields, and the older `X-RateLimit-Remaining` / `X-RateLimit-Reset` pair.
//!
//! Every function here is total: any bytes give an answer (a wait, or nothing), never a panic.
//! A value that cannot be read is ignored and reported as a `tracing` event (target
//! `ritmo_client`, level `WARN`). The caps on a hold are applied where the hold is kept, not
//! here: [`server_wait`] reports what the server asked for, however long.
//!
//! # What is read, and how
//!
//! | field | when | read as |
//! | --- | --- | --- |
//! | `Retry-After` | on `429` and `503` only | delta-seconds (`120`), or an HTTP-date (`Wed, 21 Oct 2015 07:28:00 GMT`, also the two obsolete forms) minus the wall clock |
//! | `RateLimit` | any status | a structured-field list; an item with `r=0` asks to wait `t` seconds |
//! | `RateLimit-Policy` | any status | a structured-field list of `q` per `w` policies ([`announced_policies`]); informational |
//! | `X-RateLimit-Remaining` + `X-RateLimit-Reset` | any status | remaining `0` asks to wait until the reset |
//!
//! Choices where the texts are silent or servers disagree:
//! - **Several answers**: the longest wait wins (all fields, all lines, all list items, all
//!   policies and partitions): a server can only slow a client down, so the most cautious reading
//!   is the one that cannot be wrong.
//! - **`X-RateLimit-Reset`** is seconds to wait when it is at most 10⁹ (about 31.7 years), and a
//!   Unix time in seconds above that (GitHub sends Unix times, others send seconds; no server
//!   asks for a 31-year wait, and no Unix time since 2001 is below 10⁹).
//! - **Fractions** (`1.5`) in `Retry-After` and `X-RateLimit-Reset` are rounded up to the next
//!   millisecond rather than refused: the server meant "wait", and rounding up never comes back
//!   early. Negative values, signs, exponents, `NaN` and words are ignored.
//! - **Enormous** numbers (beyond `u64` seconds) read as the longest possible wait; the hold's
//!   cap then shortens it.
//! - **Past dates** (an HTTP-date or Unix reset already gone) ask for no wait and are ignored.
//! - **`RateLimit` items** without `r`, or with `r=0` but without a valid `t`, are ignored; `pk`
//!   (the partition key) names the server's partition, which the server derived from this very
//!   client's requests: the wait applies to this client's key whatever its partition.
//! - A structured field that does not parse as a list is ignored as a whole (RFC 9651: a field
//!   that fails to parse is ignored); several field lines are joined with `,` first.

use core::time::Duration;
use std::time::SystemTime;

use http::{HeaderMap, HeaderName, StatusCode};
use sfv::{BareItem, List, ListEntry, Parser};

/// `RateLimit`: the current service limit for each policy (`"api";r=0;t=3`).
pub const RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");
/// `RateLimit-Policy`: the quota policies that apply (`"api";q=100;w=60`).
pub const RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
/// `X-RateLimit-Remaining`: requests left in the current window (older, unstandardised).
pub const X_RATELIMIT_REMAINING: HeaderName = HeaderName::from_static("x-ratelimit-remaining");
/// `X-RateLimit-Reset`: when the window resets, as seconds or a Unix time (see the module docs).
pub const X_RATELIMIT_RESET: HeaderName = HeaderName::from_static("x-ratelimit-reset");

/// `X-RateLimit-Reset` values above this are Unix times in seconds, values up to it are seconds
/// to wait.
pub const UNIX_TIME_THRESHOLD: u64 = 1_000_000_000;

/// Reports an ignored value; the value is shown escaped and cut to 64 bytes.
fn ignored(field: &str, value: &[u8], why: &str) {
    let shown = value
        .get(..value.len().min(64))
        .unwrap_or(value)
        .escape_ascii()
        .to_string();
    tracing::warn!(target: "ritmo_client", field, value = %shown, why, "ignored a server's rate-limit field");
}

/// A non-negative decimal number of seconds (`12`, `1.5`), rounded up to the next millisecond;
/// digits beyond `u64` seconds read as the longest wait. Anything else (sign, exponent, spaces
/// inside, no digits) is `None`.
fn seconds(text: &[u8]) -> Option<Duration> {
    let (whole, frac) = match text.iter().position(|&b| b == b'.') {
        Some(dot) => (&text[..dot], Some(&text[dot + 1..])),
        None => (text, None),
    };
    if whole.is_empty() || !whole.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut secs: u64 = 0;
    for &d in whole {
        secs = match secs
            .checked_mul(10)
            .and_then(|s| s.checked_add(u64::from(d - b'0')))
        {
            Some(s) => s,
            None => return Some(Duration::MAX),
        };
    }
    let mut nanos: u64 = 0;
    if let Some(frac) = frac {
        if frac.is_empty() || !frac.iter().all(u8::is_ascii_digit) {
            return None;
        }
        // Milliseconds, rounded up: any non-zero digit after the third adds one.
        let mut millis = 0u64;
        for (i, &d) in frac.iter().enumerate() {
            let d = u64::from(d - b'0');
            if i < 3 {
                millis = millis * 10 + d;
            } else if d > 0 {
                millis += 1;
                break;
            }
        }
        for _ in frac.len()..3 {
            millis *= 10;
        }
        nanos = millis * 1_000_000;
    }
    Some(Duration::from_secs(secs).saturating_add(Duration::from_nanos(nanos)))
}

fn trim(value: &[u8]) -> &[u8] {
    value.trim_ascii()
}

/// How long a `Retry-After` value asks to wait: delta-seconds, or an HTTP-date minus `now` (the
/// wall clock). `None` for values that cannot be read or dates already past.
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use ritmo_client::headers::retry_after;
/// let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_445_412_470);
/// assert_eq!(retry_after(b"120", now), Some(Duration::from_secs(120)));
/// assert_eq!(retry_after(b"Wed, 21 Oct 2015 07:28:00 GMT", now), Some(Duration::from_secs(10)));
/// assert_eq!(retry_after(b"-5", now), None);
/// assert_eq!(retry_after(b"soon", now), None);
/// ```
pub fn retry_after(value: &[u8], now: SystemTime) -> Option<Duration> {
    let text = trim(value);
    if let Some(wait) = seconds(text) {
        return Some(wait);
    }
    let date = core::str::from_utf8(text)
        .ok()
        .and_then(|s| httpdate::parse_http_date(s).ok());
    match date {
        Some(date) => match date.duration_since(now) {
            Ok(wait) if !wait.is_zero() => Some(wait),
            _ => {
                ignored("retry-after", value, "date already past");
                None
            }
        },
        None => {
            ignored(
                "retry-after",
                value,
                "neither delta-seconds nor an HTTP-date",
            );
            None
        }
    }
}

/// How long the `X-RateLimit-Remaining` / `X-RateLimit-Reset` pair asks to wait: the reset when
/// remaining is `0`, read as seconds up to [`UNIX_TIME_THRESHOLD`] and as a Unix time above it.
/// `None` when requests remain, or when either value cannot be read.
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use ritmo_client::headers::x_ratelimit_wait;
/// let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
/// assert_eq!(x_ratelimit_wait(b"0", b"30", now), Some(Duration::from_secs(30)));
/// assert_eq!(x_ratelimit_wait(b"0", b"1700000045", now), Some(Duration::from_secs(45)));
/// assert_eq!(x_ratelimit_wait(b"4", b"30", now), None);
/// ```
pub fn x_ratelimit_wait(remaining: &[u8], reset: &[u8], now: SystemTime) -> Option<Duration> {
    let left = trim(remaining);
    if left.is_empty() || !left.iter().all(u8::is_ascii_digit) {
        ignored(
            "x-ratelimit-remaining",
            remaining,
            "not a non-negative integer",
        );
        return None;
    }
    if left.iter().any(|&d| d != b'0') {
        return None;
    }
    let Some(value) = seconds(trim(reset)) else {
        ignored("x-ratelimit-reset", reset, "not a non-negative number");
        return None;
    };
    if value.as_secs() < UNIX_TIME_THRESHOLD
        || (value.as_secs() == UNIX_TIME_THRESHOLD && value.subsec_nanos() == 0)
    {
        return Some(value);
    }
    let since_epoch = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or(Duration::ZERO);
    match value.checked_sub(since_epoch) {
        Some(wait) if !wait.is_zero() => Some(wait),
        _ => {
            ignored("x-ratelimit-reset", reset, "Unix time already past");
            None
        }
    }
}

/// One item of a `RateLimit` field: a policy's remaining quota and when more comes back.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LimitStatus {
    /// The policy's name (a string or token item; empty for other item types).
    pub policy: String,
    /// `r`: the quota units left; `None` if absent or not a non-negative integer.
    pub remaining: Option<u64>,
    /// `t`: seconds until the quota is available again; `None` if absent or invalid.
    pub reset: Option<Duration>,
    /// `pk`: the partition key the server applied, as bytes; `None` if absent.
    pub partition: Option<Vec<u8>>,
}

impl LimitStatus {
    /// How long this item asks the client to wait: `t` when `r` is `0`.
    pub fn wait(&self) -> Option<Duration> {
        match self.remaining {
            Some(0) => self.reset,
            _ => None,
        }
    }
}

/// One item of a `RateLimit-Policy` field: `q` quota units per `w` seconds.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AnnouncedPolicy {
    /// The policy's name (a string or token item; empty for other item types).
    pub policy: String,
    /// `q`: the quota; `None` if absent or not a non-negative integer.
    pub quota: Option<u64>,
    /// `w`: the window; `None` if absent or not a positive integer of seconds.
    pub window: Option<Duration>,
    /// `pk`: the partition key, as bytes; `None` if absent.
    pub partition: Option<Vec<u8>>,
}

/// The field's lines joined with `,` and parsed as one structured-field list; `None` (reported)
/// when it does not parse.
fn field_list(headers: &HeaderMap, name: &HeaderName) -> Option<List> {
    let mut lines = headers.get_all(name).iter().peekable();
    lines.peek()?;
    let mut joined = Vec::new();
    for (i, line) in lines.enumerate() {
        if i > 0 {
            joined.push(b',');
        }
        joined.extend_from_slice(line.as_bytes());
    }
    match Parser::new(&joined).parse::<List>() {
        Ok(list) => Some(list),
        Err(_) => {
            ignored(name.as_str(), &joined, "not a structured-field list");
            None
        }
    }
}

fn item_name(item: &BareItem) -> String {
    match item {
        BareItem::String(s) => s.as_str().to_owned(),
        BareItem::Token(t) => t.as_str().to_owned(),
        _ => String::new(),
    }
}

fn non_negative(item: Option<&BareItem>) -> Option<u64> {
    item.and_then(BareItem::as_integer)
        .and_then(|i| u64::try_from(i64::from(i)).ok())
}

/// The items of the `RateLimit` field(s); inner lists (not used by the draft) are skipped.
///
/// ```
/// use std::time::Duration;
/// use http::{HeaderMap, HeaderValue};
/// use ritmo_client::headers::{limit_statuses, RATELIMIT};
/// let mut h = HeaderMap::new();
/// h.insert(RATELIMIT, HeaderValue::from_static("\"burst\";r=0;t=3, \"daily\";r=990;t=80000"));
/// let items = limit_statuses(&h);
/// assert_eq!(items.len(), 2);
/// assert_eq!(items[0].wait(), Some(Duration::from_secs(3)));
/// assert_eq!(items[1].wait(), None);
/// ```
pub fn limit_statuses(headers: &HeaderMap) -> Vec<LimitStatus> {
    let Some(list) = field_list(headers, &RATELIMIT) else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|entry| match entry {
            ListEntry::Item(item) => Some(item),
            ListEntry::InnerList(_) => None,
        })
        .map(|item| {
            let remaining = non_negative(item.params.get("r"));
            let reset = non_negative(item.params.get("t")).map(Duration::from_secs);
            let status = LimitStatus {
                policy: item_name(&item.bare_item),
                remaining,
                reset,
                partition: item
                    .params
                    .get("pk")
                    .and_then(BareItem::as_byte_sequence)
                    .map(<[u8]>::to_vec),
            };
            if remaining.is_none() {
                ignored(
                    "ratelimit",
                    status.policy.as_bytes(),
                    "item without a valid r",
                );
            } else if remaining == Some(0) && reset.is_none() {
                ignored(
                    "ratelimit",
                    status.policy.as_bytes(),
                    "r=0 without a valid t",
                );
            }
            status
        })
        .collect()
}

/// The items of the `RateLimit-Policy` field(s): what the server announces it allows.
///
/// ```
/// use std::time::Duration;
/// use http::{HeaderMap, HeaderValue};
/// use ritmo_client::headers::{announced_policies, RATELIMIT_POLICY};
/// let mut h = HeaderMap::new();
/// h.insert(RATELIMIT_POLICY, HeaderValue::from_static("\"api\";q=100;w=60;pk=:cHJvamVjdA==:"));
/// let p = &announced_policies(&h)[0];
/// assert_eq!((p.quota, p.window), (Some(100), Some(Duration::from_secs(60))));
/// assert_eq!(p.partition.as_deref(), Some(&b"project"[..]));
/// ```
pub fn announced_policies(headers: &HeaderMap) -> Vec<AnnouncedPolicy> {
    let Some(list) = field_list(headers, &RATELIMIT_POLICY) else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|entry| match entry {
            ListEntry::Item(item) => Some(item),
            ListEntry::InnerList(_) => None,
        })
        .map(|item| AnnouncedPolicy {
            policy: item_name(&item.bare_item),
            quota: non_negative(item.params.get("q")),
            window: non_negative(item.params.get("w"))
                .filter(|&w| w > 0)
                .map(Duration::from_secs),
            partition: item
                .params
                .get("pk")
                .and_then(BareItem::as_byte_sequence)
                .map(<[u8]>::to_vec),
        })
        .collect()
}

/// How long a response asks its client to wait before the next request, from every field above;
/// the longest wait wins. `now` is the wall clock (for HTTP-dates and Unix resets).
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use http::{HeaderMap, HeaderValue, StatusCode, header::RETRY_AFTER};
/// use ritmo_client::headers::server_wait;
/// let mut h = HeaderMap::new();
/// h.insert(RETRY_AFTER, HeaderValue::from_static("7"));
/// let now = SystemTime::now();
/// assert_eq!(server_wait(StatusCode::TOO_MANY_REQUESTS, &h, now), Some(Duration::from_secs(7)));
/// // Retry-After means something else on other statuses (a redirect's delay): not a hold.
/// assert_eq!(server_wait(StatusCode::MOVED_PERMANENTLY, &h, now), None);
/// ```
pub fn server_wait(status: StatusCode, headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let mut wait: Option<Duration> = None;
    let mut longest = |w: Option<Duration>| {
        if let Some(w) = w.filter(|w| !w.is_zero()) {
            wait = Some(wait.map_or(w, |old| old.max(w)));
        }
    };
    if status == StatusCode::TOO_MANY_REQUESTS || status == StatusCode::SERVICE_UNAVAILABLE {
        for value in headers.get_all(http::header::RETRY_AFTER) {
            longest(retry_after(value.as_bytes(), now));
        }
    }
    if headers.contains_key(&RATELIMIT) {
        for item in limit_statuses(headers) {
            longest(item.wait());
        }
    }
    let remaining = headers.get_all(&X_RATELIMIT_REMAINING);
    let reset = headers.get_all(&X_RATELIMIT_RESET);
    for left in remaining.iter() {
        for at in reset.iter() {
            longest(x_ratelimit_wait(left.as_bytes(), at.as_bytes(), now));
        }
    }
    wait
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn at(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn seconds_forms() {
        assert_eq!(seconds(b"0"), Some(Duration::ZERO));
        assert_eq!(seconds(b"1.5"), Some(Duration::from_millis(1500)));
        assert_eq!(seconds(b"1.0001"), Some(Duration::from_millis(1001)));
        assert_eq!(seconds(b"0.1"), Some(Duration::from_millis(100)));
        assert_eq!(seconds(b"99999999999999999999999"), Some(Duration::MAX));
        for bad in [
            &b""[..],
            b"-1",
            b"+1",
            b"1e3",
            b".5",
            b"5.",
            b"1 2",
            b"NaN",
            b"1.-2",
        ] {
            assert_eq!(seconds(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn retry_after_dates() {
        let now = at(1_445_412_470); // 2015-10-21 07:27:50 UTC
        assert_eq!(
            retry_after(b"Wednesday, 21-Oct-15 07:28:00 GMT", now),
            Some(Duration::from_secs(10))
        );
        assert_eq!(
            retry_after(b"Wed Oct 21 07:28:00 2015", now),
            Some(Duration::from_secs(10))
        );
        assert_eq!(retry_after(b"Wed, 21 Oct 2015 07:27:00 GMT", now), None);
        assert_eq!(retry_after(b"Wed, 21 Oct 2015 07:28:00 CET", now), None);
        assert_eq!(retry_after(b" 3 ", now), Some(Duration::from_secs(3)));
    }

    #[test]
    fn x_ratelimit_forms() {
        let now = at(1_700_000_000);
        assert_eq!(
            x_ratelimit_wait(b"0", b"1000000000", now),
            Some(Duration::from_secs(1_000_000_000))
        );
        assert_eq!(x_ratelimit_wait(b"0", b"1600000000", now), None, "past");
        assert_eq!(
            x_ratelimit_wait(b"00", b"2.25", now),
            Some(Duration::from_millis(2250))
        );
        assert_eq!(x_ratelimit_wait(b"-1", b"2", now), None);
        assert_eq!(x_ratelimit_wait(b"0", b"-2", now), None);
        assert_eq!(x_ratelimit_wait(b"x", b"2", now), None);
    }

    #[test]
    fn ratelimit_lists() {
        let mut h = HeaderMap::new();
        h.append(RATELIMIT, HeaderValue::from_static("\"a\";r=5;t=1"));
        h.append(RATELIMIT, HeaderValue::from_static("b;r=0;t=9;pk=:AQI=:"));
        let items = limit_statuses(&h);
        assert_eq!(items.len(), 2);
        assert_eq!(items[1].policy, "b");
        assert_eq!(items[1].partition.as_deref(), Some(&[1u8, 2][..]));
        assert_eq!(
            server_wait(StatusCode::OK, &h, at(0)),
            Some(Duration::from_secs(9))
        );

        let mut bad = HeaderMap::new();
        bad.insert(RATELIMIT, HeaderValue::from_static("\"a\";r=0;t=9, (x"));
        assert!(
            limit_statuses(&bad).is_empty(),
            "a list that does not parse is ignored"
        );
        bad.insert(
            RATELIMIT,
            HeaderValue::from_static("\"a\";r=0;t=-9, \"b\";r=0;t=1.5, \"c\";r=-1;t=4"),
        );
        assert_eq!(server_wait(StatusCode::OK, &bad, at(0)), None);
    }

    #[test]
    fn longest_wait_wins() {
        let mut h = HeaderMap::new();
        h.append(http::header::RETRY_AFTER, HeaderValue::from_static("3"));
        h.append(http::header::RETRY_AFTER, HeaderValue::from_static("8"));
        h.insert(RATELIMIT, HeaderValue::from_static("\"a\";r=0;t=5"));
        h.insert(X_RATELIMIT_REMAINING, HeaderValue::from_static("0"));
        h.insert(X_RATELIMIT_RESET, HeaderValue::from_static("6"));
        assert_eq!(
            server_wait(StatusCode::SERVICE_UNAVAILABLE, &h, at(0)),
            Some(Duration::from_secs(8))
        );
        assert_eq!(
            server_wait(StatusCode::OK, &h, at(0)),
            Some(Duration::from_secs(6))
        );
    }

    #[test]
    fn policies() {
        let mut h = HeaderMap::new();
        h.insert(
            RATELIMIT_POLICY,
            HeaderValue::from_static(
                "\"burst\";q=100;w=60, \"daily\";q=1000;w=86400;qu=\"requests\", \"z\";q=1;w=0",
            ),
        );
        let p = announced_policies(&h);
        assert_eq!(p.len(), 3);
        assert_eq!(p[1].window, Some(Duration::from_secs(86_400)));
        assert_eq!(p[2].window, None);
    }
}
