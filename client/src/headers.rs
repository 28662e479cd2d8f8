//! Reading what a server says about its limits: `Retry-After`, the IETF `RateLimit` and
//! `RateLimit-Policy` fields, the older drafts' `RateLimit-Limit` / `-Remaining` / `-Reset`, and
//! the unstandardised `X-RateLimit-*` families servers really send.
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
//! | `Retry-After` | on `429` and `503` only | delta-seconds (`120`, `1.5`), or an HTTP-date (`Wed, 21 Oct 2015 07:28:00 GMT`, also the two obsolete forms) minus the response's `Date` |
//! | `RateLimit` | any status | a structured-field list; an item with `r=0` asks to wait `t` seconds |
//! | `RateLimit-Policy` | any status | a structured-field list of `q` per `w` policies ([`announced_policies`]); informational |
//! | `X-RateLimit-Remaining` + `X-RateLimit-Reset` | any status | remaining `0` asks to wait until the reset ([`reset_wait`]) |
//! | `X-RateLimit-Remaining` + `X-RateLimit-Reset-After` | any status | remaining `0` asks to wait the reset's seconds (`1.5`: fractions allowed) |
//! | `X-RateLimit-Remaining-<name>` + `X-RateLimit-Reset-<name>` | any status | one pair per resource (`-requests`, `-tokens`, any name): remaining `0` asks to wait until that reset, often a Go duration (`6m0s`, [`go_duration`]) |
//! | `RateLimit-Remaining` + `RateLimit-Reset` | any status | the older drafts (before structured fields): remaining `0` asks to wait until the reset ([`reset_wait`]); `RateLimit-Limit` is informational |
//!
//! # A reset's forms, told apart
//!
//! A reset ([`reset_wait`]) is a Go duration when it has a unit (`1h2m3.5s`, `20ms`, `6m0s`),
//! else a number, read by its size:
//!
//! | value | read as | why the bound cannot mislead |
//! | --- | --- | --- |
//! | up to 10⁹ ([`UNIX_TIME_THRESHOLD`]) | seconds to wait | 10⁹ s is 31.7 years: no server asks that, and no Unix time in seconds since 2001 is that small |
//! | above 10⁹, below 10¹¹ ([`UNIX_MILLIS_THRESHOLD`]) | a Unix time in seconds | 10¹¹ s is the year 5138 |
//! | from 10¹¹ | a Unix time in milliseconds | 10¹¹ ms is March 1973: every Unix time in milliseconds since then is above it |
//!
//! So a reset in milliseconds (`1764763200000`) holds until that instant, not for a wait of 1.7
//! trillion seconds cut to the cap.
//!
//! # Whose clock
//!
//! An HTTP-date and a Unix time are instants of the server's clock. They are measured against
//! the response's own `Date` field when it has one that parses ([`response_time`]): the two
//! clocks may differ by minutes, and the server's reset minus the server's time is what the
//! server meant. `Date` has whole seconds, truncated: the wait read is never shorter than meant.
//! Without a `Date`, the client's wall clock stands in.
//!
//! # Choices where the texts are silent or servers disagree
//!
//! - **Several answers**: the longest wait wins (all fields, all lines, all list items, all
//!   policies, partitions and resources): a server can only slow a client down, so the most
//!   cautious reading is the one that cannot be wrong.
//! - **Fractions** (`1.5`) in `Retry-After` and the resets are rounded up to the next
//!   millisecond rather than refused: the server meant "wait", and rounding up never comes back
//!   early. Negative values, signs, exponents, `NaN` and words are ignored.
//! - **Enormous** numbers (beyond `u64` seconds) read as the longest possible wait; the hold's
//!   cap then shortens it.
//! - **Past dates** (an HTTP-date or Unix reset already gone) ask for no wait and are ignored.
//! - **A reset without its remaining** (or with requests remaining) asks for nothing: the reset
//!   says when the window ends, not that it is spent.
//! - **`RateLimit` items** without `r`, or with `r=0` but without a valid `t`, are ignored; `pk`
//!   (the partition key) names the server's partition, which the server derived from this very
//!   client's requests: the wait applies to this client's key whatever its partition.
//! - A structured field that does not parse as a list is ignored as a whole (RFC 9651: a field
//!   that fails to parse is ignored); several field lines are joined with `,` first.

use core::time::Duration;
use std::time::SystemTime;

use http::{HeaderMap, HeaderName, StatusCode};
use sfv::{BareItem, Item, List, ListEntry, Parser};

/// `RateLimit`: the current service limit for each policy (`"api";r=0;t=3`).
pub const RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");
/// `RateLimit-Policy`: the quota policies that apply (`"api";q=100;w=60`).
pub const RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
/// `X-RateLimit-Remaining`: requests left in the current window (older, unstandardised).
pub const X_RATELIMIT_REMAINING: HeaderName = HeaderName::from_static("x-ratelimit-remaining");
/// `X-RateLimit-Reset`: when the window resets, as seconds, a Unix time in seconds or in
/// milliseconds, or a Go duration (see [`reset_wait`]).
pub const X_RATELIMIT_RESET: HeaderName = HeaderName::from_static("x-ratelimit-reset");
/// `X-RateLimit-Reset-After`: seconds until the window resets, fractions allowed (`1.5`).
pub const X_RATELIMIT_RESET_AFTER: HeaderName = HeaderName::from_static("x-ratelimit-reset-after");
/// `RateLimit-Limit` (older drafts of the IETF fields): the quota; informational.
pub const RATELIMIT_LIMIT: HeaderName = HeaderName::from_static("ratelimit-limit");
/// `RateLimit-Remaining` (older drafts of the IETF fields): quota units left.
pub const RATELIMIT_REMAINING: HeaderName = HeaderName::from_static("ratelimit-remaining");
/// `RateLimit-Reset` (older drafts of the IETF fields): seconds until the quota resets (a Unix
/// time from some servers: read as [`reset_wait`] reads any reset).
pub const RATELIMIT_RESET: HeaderName = HeaderName::from_static("ratelimit-reset");

/// A numeric reset up to this is seconds to wait; above it, a Unix time (see [`reset_wait`]).
pub const UNIX_TIME_THRESHOLD: u64 = 1_000_000_000;
/// A numeric reset from this on is a Unix time in milliseconds; below it (and above
/// [`UNIX_TIME_THRESHOLD`]), a Unix time in seconds.
pub const UNIX_MILLIS_THRESHOLD: u64 = 100_000_000_000;

/// Reports an ignored value (shown escaped and cut to 64 bytes): no answer from it.
fn ignored<T>(field: &str, value: &[u8], why: &str) -> Option<T> {
    let shown = value[..value.len().min(64)].escape_ascii().to_string();
    tracing::warn!(target: "ritmo_client", field, value = %shown, why, "ignored a server's rate-limit field");
    None
}

/// A non-negative decimal number of seconds (`12`, `1.5`), rounded up to the next millisecond;
/// digits beyond `u64` seconds read as the longest wait. Anything else (sign, exponent, spaces
/// inside, no digits) is `None`.
fn seconds(text: &[u8]) -> Option<Duration> {
    let (whole, frac) = match text.iter().position(|&b| b == b'.') {
        Some(dot) => (&text[..dot], Some(&text[dot + 1..])),
        None => (text, None),
    };
    let digits = |d: &[u8]| !d.is_empty() && d.iter().all(u8::is_ascii_digit);
    if !digits(whole) || !frac.is_none_or(digits) {
        return None;
    }
    // Only digits: the one error left is an overflow.
    let Ok(secs) = core::str::from_utf8(whole).unwrap_or("").parse::<u64>() else {
        return Some(Duration::MAX);
    };
    // Milliseconds, rounded up: the first three digits, and one more if any later is not zero.
    let frac = frac.unwrap_or_default();
    let millis = frac.iter().chain(b"000").take(3);
    let millis = millis.fold(0, |m, &d| m * 10 + u64::from(d - b'0'));
    let up = u64::from(frac.iter().skip(3).any(|&d| d != b'0'));
    Some(Duration::from_secs(secs).saturating_add(Duration::from_millis(millis + up)))
}

/// How long a `Retry-After` value asks to wait: delta-seconds, or an HTTP-date minus `now` (the
/// server's time: the response's `Date`, see [`response_time`], else the wall clock). `None` for
/// values that cannot be read or dates already past.
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use ritmo::client::headers::retry_after;
/// let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_445_412_470);
/// assert_eq!(retry_after(b"120", now), Some(Duration::from_secs(120)));
/// assert_eq!(retry_after(b"Wed, 21 Oct 2015 07:28:00 GMT", now), Some(Duration::from_secs(10)));
/// assert_eq!(retry_after(b"-5", now), None);
/// assert_eq!(retry_after(b"soon", now), None);
/// ```
pub fn retry_after(value: &[u8], now: SystemTime) -> Option<Duration> {
    let text = value.trim_ascii();
    if let Some(wait) = seconds(text) {
        return Some(wait);
    }
    let date = core::str::from_utf8(text).map(httpdate::parse_http_date);
    let Ok(Ok(date)) = date else {
        return ignored(
            "retry-after",
            value,
            "neither delta-seconds nor an HTTP-date",
        );
    };
    match date.duration_since(now) {
        Ok(wait) if !wait.is_zero() => Some(wait),
        _ => ignored("retry-after", value, "date already past"),
    }
}

/// Whether a remaining count reads as `0`; `None` (reported) when it is not a non-negative
/// integer.
fn spent(field: &str, remaining: &[u8]) -> Option<bool> {
    let left = remaining.trim_ascii();
    if left.is_empty() || !left.iter().all(u8::is_ascii_digit) {
        return ignored(field, remaining, "not a non-negative integer");
    }
    Some(left.iter().all(|&d| d == b'0'))
}

/// How long the `X-RateLimit-Remaining` / `X-RateLimit-Reset` pair asks to wait: the reset
/// ([`reset_wait`]) when remaining is `0`. `None` when requests remain, or when either value
/// cannot be read.
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use ritmo::client::headers::x_ratelimit_wait;
/// let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
/// assert_eq!(x_ratelimit_wait(b"0", b"30", now), Some(Duration::from_secs(30)));
/// assert_eq!(x_ratelimit_wait(b"0", b"1700000045", now), Some(Duration::from_secs(45)));
/// assert_eq!(x_ratelimit_wait(b"0", b"1700000002500", now), Some(Duration::from_millis(2500)));
/// assert_eq!(x_ratelimit_wait(b"0", b"6m0s", now), Some(Duration::from_secs(360)));
/// assert_eq!(x_ratelimit_wait(b"4", b"30", now), None);
/// ```
pub fn x_ratelimit_wait(remaining: &[u8], reset: &[u8], now: SystemTime) -> Option<Duration> {
    if !spent("x-ratelimit-remaining", remaining)? {
        return None;
    }
    reset_wait(reset, now)
}

/// How long a reset value asks to wait, whatever its form: a Go duration when it has a unit
/// (`6m0s`, `20ms`: [`go_duration`]); else a non-negative number (fractions allowed), read as
/// seconds to wait up to [`UNIX_TIME_THRESHOLD`], a Unix time in seconds below
/// [`UNIX_MILLIS_THRESHOLD`], and a Unix time in milliseconds from it on (the module docs say
/// why these bounds cannot mislead). A Unix time is measured against `now`, the server's time
/// ([`response_time`]). `None` (reported) for values that cannot be read and instants past.
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use ritmo::client::headers::reset_wait;
/// let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
/// assert_eq!(reset_wait(b"1.5", now), Some(Duration::from_millis(1500))); // seconds
/// assert_eq!(reset_wait(b"1700000060", now), Some(Duration::from_secs(60))); // Unix seconds
/// assert_eq!(reset_wait(b"1700000000250", now), Some(Duration::from_millis(250))); // Unix ms
/// assert_eq!(reset_wait(b"1h2m3.5s", now), Some(Duration::from_millis(3_723_500))); // Go
/// assert_eq!(reset_wait(b"1600000000", now), None); // past
/// assert_eq!(reset_wait(b"soon", now), None);
/// ```
pub fn reset_wait(value: &[u8], now: SystemTime) -> Option<Duration> {
    let text = value.trim_ascii();
    if text
        .iter()
        .any(|b| b.is_ascii_alphabetic() || !b.is_ascii())
    {
        let wait = go_duration(text);
        return wait.or_else(|| ignored("reset", value, "neither a number nor a Go duration"));
    }
    let Some(number) = seconds(text) else {
        return ignored("reset", value, "not a non-negative number");
    };
    let whole = number.as_secs();
    if whole < UNIX_TIME_THRESHOLD || (whole == UNIX_TIME_THRESHOLD && number.subsec_nanos() == 0) {
        return Some(number);
    }
    let at = if whole < UNIX_MILLIS_THRESHOLD {
        number
    } else {
        // The number is milliseconds: its whole part, plus its fraction of a millisecond
        // (rounded up to the nanosecond).
        Duration::from_millis(whole).saturating_add(Duration::from_nanos(u64::from(
            number.subsec_nanos().div_ceil(1000),
        )))
    };
    let since_epoch = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or(Duration::ZERO);
    match at.checked_sub(since_epoch) {
        Some(wait) if !wait.is_zero() => Some(wait),
        _ => ignored("reset", value, "Unix time already past"),
    }
}

/// A Go duration (`time.Duration`'s `String()` and `ParseDuration` syntax), as the per-resource
/// resets of some APIs send it: one or more decimal numbers, each with a unit `h`, `m`, `s`,
/// `ms`, `us` (or `µs`), `ns`: `6m0s`, `1h2m3.5s`, `20ms`, `1.5s`; a bare `0` is zero. Fractions
/// of a nanosecond are rounded up; beyond `Duration::MAX` it saturates. Signs, spaces inside and
/// unknown units are `None`.
///
/// ```
/// use std::time::Duration;
/// use ritmo::client::headers::go_duration;
/// assert_eq!(go_duration(b"6m0s"), Some(Duration::from_secs(360)));
/// assert_eq!(go_duration(b"1h2m3.5s"), Some(Duration::from_millis(3_723_500)));
/// assert_eq!(go_duration(b"20ms"), Some(Duration::from_millis(20)));
/// assert_eq!(go_duration(b"-1s"), None);
/// assert_eq!(go_duration(b"5 minutes"), None);
/// ```
pub fn go_duration(value: &[u8]) -> Option<Duration> {
    const NS_PER_S: u128 = 1_000_000_000;
    let text = value.trim_ascii();
    if text == b"0" {
        return Some(Duration::ZERO);
    }
    if text.is_empty() {
        return None;
    }
    let digits = |b: &[u8]| b.iter().take_while(|d| d.is_ascii_digit()).count();
    let mut total: u128 = 0;
    let mut rest = text;
    while !rest.is_empty() {
        let (int, after) = rest.split_at(digits(rest));
        let (frac, after) = match after.split_first() {
            Some((b'.', tail)) => {
                let (f, t) = tail.split_at(digits(tail));
                (f, t)
            }
            _ => (&b""[..], after),
        };
        if int.is_empty() && frac.is_empty() {
            return None;
        }
        let unit_len = after
            .iter()
            .take_while(|b| !b.is_ascii_digit() && **b != b'.')
            .count();
        let (unit, after) = after.split_at(unit_len);
        let per: u128 = match unit {
            b"ns" => 1,
            b"us" | b"\xc2\xb5s" | b"\xce\xbcs" => 1_000,
            b"ms" => 1_000_000,
            b"s" => NS_PER_S,
            b"m" => 60 * NS_PER_S,
            b"h" => 3600 * NS_PER_S,
            _ => return None,
        };
        let whole = int.iter().fold(0u128, |n, &d| {
            n.saturating_mul(10).saturating_add(u128::from(d - b'0'))
        });
        total = total.saturating_add(whole.saturating_mul(per));
        // The fraction's first 20 digits, exactly (below 10^20 x 3.6x10^12: no overflow);
        // any further non-zero digit rounds up by a nanosecond.
        let kept = &frac[..frac.len().min(20)];
        if !kept.is_empty() {
            let num = kept
                .iter()
                .fold(0u128, |n, &d| n * 10 + u128::from(d - b'0'));
            let scale = 10u128.pow(u32::try_from(kept.len()).unwrap_or(20));
            let extra = u128::from(frac[kept.len()..].iter().any(|&d| d != b'0'));
            total = total.saturating_add((num * per).div_ceil(scale) + extra);
        }
        rest = after;
    }
    let secs = total / NS_PER_S;
    Some(match u64::try_from(secs) {
        // The remainder is below 10^9: it fits.
        Ok(secs) => Duration::new(secs, u32::try_from(total % NS_PER_S).unwrap_or(0)),
        Err(_) => Duration::MAX,
    })
}

/// The server's time of a response: its `Date` field when it has one that parses as an
/// HTTP-date, else `now` (the client's wall clock). HTTP-dates and Unix times in the response
/// are measured against it.
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use http::{HeaderMap, HeaderValue, header::DATE};
/// use ritmo::client::headers::response_time;
/// let mut h = HeaderMap::new();
/// h.insert(DATE, HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"));
/// let now = SystemTime::now();
/// assert_eq!(response_time(&h, now), SystemTime::UNIX_EPOCH + Duration::from_secs(1_445_412_480));
/// assert_eq!(response_time(&HeaderMap::new(), now), now);
/// ```
pub fn response_time(headers: &HeaderMap, now: SystemTime) -> SystemTime {
    headers
        .get(http::header::DATE)
        .and_then(|d| d.to_str().ok())
        .and_then(|d| httpdate::parse_http_date(d.trim()).ok())
        .unwrap_or(now)
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
        Err(_) => ignored(name.as_str(), &joined, "not a structured-field list"),
    }
}

/// The items of a structured-field list field (inner lists, not used by the drafts, skipped),
/// each with its policy's name (a string or token; empty for other types) and its `pk` bytes.
fn items(
    headers: &HeaderMap,
    name: &HeaderName,
) -> impl Iterator<Item = (Item, String, Option<Vec<u8>>)> {
    let items = field_list(headers, name).into_iter().flatten();
    items.filter_map(|entry| {
        let ListEntry::Item(item) = entry else {
            return None;
        };
        let name = match &item.bare_item {
            BareItem::String(s) => s.as_str().to_owned(),
            BareItem::Token(t) => t.as_str().to_owned(),
            _ => String::new(),
        };
        let pk = item.params.get("pk").and_then(BareItem::as_byte_sequence);
        let partition = pk.map(<[u8]>::to_vec);
        Some((item, name, partition))
    })
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
/// use ritmo::client::headers::{limit_statuses, RATELIMIT};
/// let mut h = HeaderMap::new();
/// h.insert(RATELIMIT, HeaderValue::from_static("\"burst\";r=0;t=3, \"daily\";r=990;t=80000"));
/// let items = limit_statuses(&h);
/// assert_eq!(items.len(), 2);
/// assert_eq!(items[0].wait(), Some(Duration::from_secs(3)));
/// assert_eq!(items[1].wait(), None);
/// ```
pub fn limit_statuses(headers: &HeaderMap) -> Vec<LimitStatus> {
    let status = |(item, policy, partition): (Item, String, _)| {
        let remaining = non_negative(item.params.get("r"));
        let reset = non_negative(item.params.get("t")).map(Duration::from_secs);
        let why = match (remaining, reset) {
            (None, _) => "item without a valid r",
            (Some(0), None) => "r=0 without a valid t",
            _ => "",
        };
        if !why.is_empty() {
            ignored::<()>("ratelimit", policy.as_bytes(), why);
        }
        LimitStatus {
            policy,
            remaining,
            reset,
            partition,
        }
    };
    items(headers, &RATELIMIT).map(status).collect()
}

/// The items of the `RateLimit-Policy` field(s): what the server announces it allows.
///
/// ```
/// use std::time::Duration;
/// use http::{HeaderMap, HeaderValue};
/// use ritmo::client::headers::{announced_policies, RATELIMIT_POLICY};
/// let mut h = HeaderMap::new();
/// h.insert(RATELIMIT_POLICY, HeaderValue::from_static("\"api\";q=100;w=60;pk=:cHJvamVjdA==:"));
/// let p = &announced_policies(&h)[0];
/// assert_eq!((p.quota, p.window), (Some(100), Some(Duration::from_secs(60))));
/// assert_eq!(p.partition.as_deref(), Some(&b"project"[..]));
/// ```
pub fn announced_policies(headers: &HeaderMap) -> Vec<AnnouncedPolicy> {
    let policy = |(item, policy, partition): (Item, String, _)| AnnouncedPolicy {
        policy,
        quota: non_negative(item.params.get("q")),
        window: non_negative(item.params.get("w"))
            .filter(|&w| w > 0)
            .map(Duration::from_secs),
        partition,
    };
    items(headers, &RATELIMIT_POLICY).map(policy).collect()
}

/// How long a response asks its client to wait before the next request, from every field above;
/// the longest wait wins. `now` is the client's wall clock: HTTP-dates and Unix resets are
/// measured against the response's `Date` instead when it has one ([`response_time`]).
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use http::{HeaderMap, HeaderValue, StatusCode, header::RETRY_AFTER};
/// use ritmo::client::headers::server_wait;
/// let mut h = HeaderMap::new();
/// h.insert(RETRY_AFTER, HeaderValue::from_static("7"));
/// let now = SystemTime::now();
/// assert_eq!(server_wait(StatusCode::TOO_MANY_REQUESTS, &h, now), Some(Duration::from_secs(7)));
/// // Retry-After means something else on other statuses (a redirect's delay): not a hold.
/// assert_eq!(server_wait(StatusCode::MOVED_PERMANENTLY, &h, now), None);
///
/// // A per-resource pair with a Go duration, on any status.
/// let mut h = HeaderMap::new();
/// h.insert("x-ratelimit-remaining-requests", HeaderValue::from_static("0"));
/// h.insert("x-ratelimit-reset-requests", HeaderValue::from_static("6m0s"));
/// assert_eq!(server_wait(StatusCode::OK, &h, now), Some(Duration::from_secs(360)));
/// ```
pub fn server_wait(status: StatusCode, headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let now = response_time(headers, now);
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
    for (remaining, resets) in reset_pairs(headers) {
        let spent = headers
            .get_all(&remaining)
            .iter()
            .any(|left| spent(remaining.as_str(), left.as_bytes()) == Some(true));
        if !spent {
            continue;
        }
        for reset in resets {
            for at in headers.get_all(&reset) {
                let value = at.as_bytes();
                longest(if reset == X_RATELIMIT_RESET_AFTER {
                    let why = "not a non-negative number of seconds";
                    seconds(value.trim_ascii()).or_else(|| ignored(reset.as_str(), value, why))
                } else {
                    reset_wait(value, now)
                });
            }
        }
    }
    wait
}

/// Whether a response has any field [`server_wait`] reads on a status other than `429` and
/// `503`: a look at the names only, so that a response without any costs no parsing.
pub(crate) fn has_wait_fields(headers: &HeaderMap) -> bool {
    // One pass over the names (a response has a handful), no hashing.
    headers.keys().any(|name| {
        let name = name.as_str();
        name == "ratelimit"
            || name == "ratelimit-remaining"
            || name.starts_with("x-ratelimit-remaining")
    })
}

/// The remaining fields a response has, each with the reset fields it pairs with.
fn reset_pairs(headers: &HeaderMap) -> Vec<(HeaderName, Vec<HeaderName>)> {
    let mut pairs = Vec::new();
    if headers.contains_key(&RATELIMIT_REMAINING) {
        pairs.push((RATELIMIT_REMAINING, vec![RATELIMIT_RESET]));
    }
    for name in headers.keys() {
        let Some(suffix) = name.as_str().strip_prefix("x-ratelimit-remaining") else {
            continue;
        };
        if suffix.is_empty() {
            pairs.push((
                X_RATELIMIT_REMAINING,
                vec![X_RATELIMIT_RESET, X_RATELIMIT_RESET_AFTER],
            ));
        } else if suffix.starts_with('-')
            && let Ok(reset) =
                HeaderName::from_bytes(format!("x-ratelimit-reset{suffix}").as_bytes())
        {
            pairs.push((name.clone(), vec![reset]));
        }
    }
    pairs
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

    #[test]
    fn go_durations() {
        let ms = Duration::from_millis;
        for (text, d) in [
            (&b"0"[..], Duration::ZERO),
            (b"1s", ms(1000)),
            (b"20ms", ms(20)),
            (b"6m0s", ms(360_000)),
            (b"1h2m3.5s", ms(3_723_500)),
            (b"1.5h", ms(5_400_000)),
            (b".5s", ms(500)),
            (b"100us", Duration::from_micros(100)),
            ("7\u{b5}s".as_bytes(), Duration::from_micros(7)),
            ("7\u{3bc}s".as_bytes(), Duration::from_micros(7)),
            (b"3ns", Duration::from_nanos(3)),
            (b"0.0000000001s", Duration::from_nanos(1)),
            (b" 2m ", ms(120_000)),
            (b"99999999999999999999999999999999999999999h", Duration::MAX),
        ] {
            assert_eq!(go_duration(text), Some(d), "{}", text.escape_ascii());
        }
        for bad in [
            &b""[..],
            b"1",
            b"s",
            b"-1s",
            b"+1s",
            b"1 s",
            b"1d",
            b"1.s.",
            b"1m 2s",
            b"..5s",
        ] {
            assert_eq!(go_duration(bad), None, "{}", bad.escape_ascii());
        }
    }

    #[test]
    fn resets_are_told_apart_by_size() {
        let now = at(1_700_000_000);
        // Seconds to wait, up to 10^9 inclusive.
        assert_eq!(reset_wait(b"30", now), Some(Duration::from_secs(30)));
        assert_eq!(
            reset_wait(b"1000000000", now),
            Some(Duration::from_secs(1_000_000_000))
        );
        // Unix seconds above it.
        assert_eq!(
            reset_wait(b"1700000045.5", now),
            Some(Duration::from_millis(45_500))
        );
        assert_eq!(reset_wait(b"1000000001", now), None, "a past Unix time");
        assert_eq!(
            reset_wait(b"99999999999", now),
            Some(Duration::from_secs(99_999_999_999 - 1_700_000_000))
        );
        // Unix milliseconds from 10^11: not a wait of 1.7x10^12 s.
        assert_eq!(
            reset_wait(b"1700000002500", now),
            Some(Duration::from_millis(2500))
        );
        assert_eq!(
            reset_wait(b"1700000000000.5", at(1_699_999_999)),
            Some(Duration::from_nanos(1_000_500_000))
        );
        assert_eq!(reset_wait(b"100000000000", now), None, "1973: past");
        assert_eq!(reset_wait(b"1699999999999", now), None, "past");
        // Go durations.
        assert_eq!(reset_wait(b"6m0s", now), Some(Duration::from_secs(360)));
        for bad in [&b"-1"[..], b"1e3", b"soon", b"", b"\xff"] {
            assert_eq!(reset_wait(bad, now), None, "{}", bad.escape_ascii());
        }
    }

    #[test]
    fn every_dialect_of_remaining_and_reset() {
        let now = at(1_700_000_000);
        let wait = |fields: &[(&'static str, &'static str)]| {
            let mut h = HeaderMap::new();
            for &(name, value) in fields {
                h.append(name, HeaderValue::from_static(value));
            }
            server_wait(StatusCode::OK, &h, now)
        };
        let s = Duration::from_secs;
        assert_eq!(
            wait(&[
                ("x-ratelimit-remaining", "0"),
                ("x-ratelimit-reset-after", "1.5")
            ]),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            wait(&[
                ("x-ratelimit-remaining", "3"),
                ("x-ratelimit-reset-after", "1.5")
            ]),
            None
        );
        assert_eq!(wait(&[("x-ratelimit-reset-after", "1.5")]), None);
        assert_eq!(
            wait(&[
                ("x-ratelimit-remaining", "0"),
                ("x-ratelimit-reset-after", "1700000050")
            ]),
            Some(s(1_700_000_050)),
            "Reset-After is seconds whatever its size (the hold's cap cuts it)"
        );
        assert_eq!(
            wait(&[
                ("x-ratelimit-limit-requests", "60"),
                ("x-ratelimit-remaining-requests", "0"),
                ("x-ratelimit-reset-requests", "6m0s"),
                ("x-ratelimit-remaining-tokens", "1000"),
                ("x-ratelimit-reset-tokens", "1h"),
            ]),
            Some(s(360)),
            "only the spent resource holds"
        );
        assert_eq!(
            wait(&[
                ("x-ratelimit-remaining-requests", "0"),
                ("x-ratelimit-reset-requests", "1s"),
                ("x-ratelimit-remaining-tokens", "0"),
                ("x-ratelimit-reset-tokens", "20ms"),
            ]),
            Some(s(1))
        );
        assert_eq!(
            wait(&[
                ("ratelimit-limit", "100"),
                ("ratelimit-remaining", "0"),
                ("ratelimit-reset", "7")
            ]),
            Some(s(7))
        );
        assert_eq!(
            wait(&[("ratelimit-remaining", "1"), ("ratelimit-reset", "7")]),
            None
        );
        assert_eq!(
            wait(&[
                ("x-ratelimit-remaining", "0"),
                ("x-ratelimit-reset", "1700000002500")
            ]),
            Some(Duration::from_millis(2500))
        );
        assert_eq!(
            wait(&[("x-ratelimit-remaining-", "0"), ("x-ratelimit-reset-", "2")]),
            Some(s(2))
        );
        assert_eq!(
            wait(&[
                ("x-ratelimit-remaining-requests", "zero"),
                ("x-ratelimit-reset-requests", "2s")
            ]),
            None
        );
    }

    #[test]
    fn dates_against_the_response_s_date() {
        // The client's clock is a year ahead of the server's: the server's reset still holds.
        let client_now = at(1_445_412_480 + 365 * 86_400);
        let mut h = HeaderMap::new();
        h.insert(
            http::header::DATE,
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        h.insert(
            http::header::RETRY_AFTER,
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:30 GMT"),
        );
        assert_eq!(
            server_wait(StatusCode::TOO_MANY_REQUESTS, &h, client_now),
            Some(Duration::from_secs(30))
        );
        h.insert(X_RATELIMIT_REMAINING, HeaderValue::from_static("0"));
        h.insert(X_RATELIMIT_RESET, HeaderValue::from_static("1445412525"));
        assert_eq!(
            server_wait(StatusCode::OK, &h, client_now),
            Some(Duration::from_secs(45))
        );
        // A Date that does not parse: the client's clock stands in (the reset is long past).
        h.insert(http::header::DATE, HeaderValue::from_static("yesterday"));
        assert_eq!(server_wait(StatusCode::OK, &h, client_now), None);
    }
}
