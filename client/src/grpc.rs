//! gRPC's own "slow down": `grpc-status: 8` (`RESOURCE_EXHAUSTED`) with `retry-after` or a
//! `google.rpc.RetryInfo` detail, read as a hold on the call's key.
//!
//! A gRPC server refuses with HTTP `200` and the status in `grpc-status`, so the HTTP rules
//! (`Retry-After` on `429` / `503`) never see it. [`Outbound::observe`](crate::Outbound::observe)
//! (and so the tower layer on a tonic channel) also reads, on a response whose headers say
//! `grpc-status: 8`:
//!
//! - `retry-after` (seconds or an HTTP-date, as on HTTP);
//! - `grpc-status-details-bin`: a base64 `google.rpc.Status` whose `google.rpc.RetryInfo`
//!   detail's `retry_delay` is the wait (a negative or malformed one is ignored, a long one is
//!   capped at `max_hold` like any other);
//!
//! and the longest wait of these and of the RateLimit fields (read on every response) holds the
//! key. A refusal has its status in the response headers (a trailers-only response, what servers
//! send for a call refused before it ran, ritmo-tower's among them); a status that comes in the
//! trailers, after messages, is not read.
//!
//! # On a tonic channel
//!
//! - **Keys.** A generated client (`HealthClient::new(channel)`) sends relative URIs (the
//!   channel adds its endpoint below the layer), so every call would share the key `""`. Give
//!   each client its channel's origin, `HealthClient::with_origin(channel, origin)`, and the
//!   calls are keyed `host:port` like HTTP requests.
//! - **Local refusals.** With feature `tonic`, a call the layer does not send (no permit within
//!   `max_wait`, or a server's hold beyond it) reaches the caller as tonic's
//!   `RESOURCE_EXHAUSTED`: tonic finds a `tonic::Status` in the error's source chain
//!   ([`Error`](crate::Error) → [`Limited`](crate::Limited) → the status). The status's own
//!   `source()` is the layer's [`Error`](crate::Error), with [`Limited::retry_after`](crate::Limited::retry_after).
//!   Without the feature tonic reports `UNKNOWN`.
//! - **No retry, no replay.** [`Builder::retry_once`](crate::Builder::retry_once) sends a `429`
//!   again; a gRPC refusal is an HTTP `200`, so it is never retried by the layer, and tonic's
//!   request body is a stream that [`CloneBody`](crate::CloneBody) cannot copy. The hold still
//!   applies: the next call waits for it (or is refused at once if it ends beyond `max_wait`).

use core::time::Duration;
use std::time::SystemTime;

use base64::Engine as _;
use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use http::{HeaderMap, HeaderName};

/// `grpc-status`.
pub const GRPC_STATUS: HeaderName = HeaderName::from_static("grpc-status");
/// `grpc-status-details-bin`.
pub const GRPC_STATUS_DETAILS_BIN: HeaderName = HeaderName::from_static("grpc-status-details-bin");
/// `RESOURCE_EXHAUSTED`: the gRPC status of a refusal.
pub const RESOURCE_EXHAUSTED: u32 = 8;
/// The `type_url` of a `google.rpc.RetryInfo` detail.
pub const RETRY_INFO_TYPE_URL: &str = "type.googleapis.com/google.rpc.RetryInfo";

/// Binary metadata is base64 with or without padding (the gRPC wire spec lets senders pick).
const BASE64: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// Whether a response's headers say `grpc-status: 8`.
///
/// ```
/// use http::HeaderMap;
/// use ritmo::client::grpc::exhausted;
/// let mut h = HeaderMap::new();
/// h.insert("grpc-status", "8".parse().unwrap());
/// assert!(exhausted(&h));
/// h.insert("grpc-status", "14".parse().unwrap());
/// assert!(!exhausted(&h));
/// ```
pub fn exhausted(headers: &HeaderMap) -> bool {
    headers
        .get(&GRPC_STATUS)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim() == "8")
}

/// How long a gRPC refusal asks to wait: the longest of its `retry-after` values and its
/// `RetryInfo` delay, `None` if the headers are no `RESOURCE_EXHAUSTED` or ask for no wait.
/// `now` is the wall clock (for an HTTP-date).
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use http::HeaderMap;
/// use ritmo::client::grpc::grpc_wait;
/// let mut h = HeaderMap::new();
/// h.insert("grpc-status", "8".parse().unwrap());
/// h.insert("retry-after", "3".parse().unwrap());
/// assert_eq!(grpc_wait(&h, SystemTime::now()), Some(Duration::from_secs(3)));
/// ```
pub fn grpc_wait(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    if !exhausted(headers) {
        return None;
    }
    let from_retry_after = headers
        .get_all(http::header::RETRY_AFTER)
        .iter()
        .filter_map(|v| crate::headers::retry_after(v.as_bytes(), now))
        .max();
    let from_details = headers
        .get_all(&GRPC_STATUS_DETAILS_BIN)
        .iter()
        .filter_map(|v| BASE64.decode(v.as_bytes()).ok())
        .filter_map(|status| retry_info_delay(&status))
        .max();
    from_retry_after
        .max(from_details)
        .filter(|wait| !wait.is_zero())
}

/// The `retry_delay` of the first `google.rpc.RetryInfo` detail in a `google.rpc.Status`'s
/// protobuf bytes; `None` if there is none, or the bytes are not a well-formed message, or the
/// delay is negative.
///
/// ```
/// use std::time::Duration;
/// use ritmo::client::grpc::retry_info_delay;
/// // What ritmo's server layer sends for a 1.5 s wait.
/// let status = ritmo::tower::grpc::status_with_retry_info(8, "slow down", Duration::from_millis(1500));
/// assert_eq!(retry_info_delay(&status), Some(Duration::from_millis(1500)));
/// assert_eq!(retry_info_delay(b"\xff\xff"), None);
/// ```
pub fn retry_info_delay(status: &[u8]) -> Option<Duration> {
    // google.rpc.Status { int32 code = 1; string message = 2; repeated Any details = 3; }
    for (field, value) in Fields(status) {
        let (3, Value::Bytes(any)) = (field, value.ok()?) else {
            continue;
        };
        // google.protobuf.Any { string type_url = 1; bytes value = 2; }
        let mut type_url = None;
        let mut body = None;
        for (field, value) in Fields(any) {
            match (field, value.ok()?) {
                (1, Value::Bytes(b)) => type_url = Some(b),
                (2, Value::Bytes(b)) => body = Some(b),
                _ => {}
            }
        }
        if type_url != Some(RETRY_INFO_TYPE_URL.as_bytes()) {
            continue;
        }
        // google.rpc.RetryInfo { google.protobuf.Duration retry_delay = 1; }
        let mut delay = Duration::ZERO;
        for (field, value) in Fields(body.unwrap_or_default()) {
            if let (1, Value::Bytes(duration)) = (field, value.ok()?) {
                delay = duration_of(duration)?;
            }
        }
        return Some(delay);
    }
    None
}

/// A `google.protobuf.Duration { int64 seconds = 1; int32 nanos = 2; }`, if not negative.
fn duration_of(bytes: &[u8]) -> Option<Duration> {
    let (mut secs, mut nanos) = (0_u64, 0_u64);
    for (field, value) in Fields(bytes) {
        match (field, value.ok()?) {
            (1, Value::Varint(v)) => secs = v,
            (2, Value::Varint(v)) => nanos = v,
            _ => {}
        }
    }
    // A negative int64 / int32 is a varint with its top bit set: not a wait.
    if i64::try_from(secs).is_err() || nanos >= 1_000_000_000 {
        return None;
    }
    Some(Duration::new(secs, u32::try_from(nanos).ok()?))
}

/// A protobuf field's value, of the two wire types these messages use (others are skipped).
enum Value<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    Other,
}

/// The fields of a protobuf message, in order: `(number, value)`, with `Err` once (then the end)
/// where the bytes are malformed.
struct Fields<'a>(&'a [u8]);

fn varint(bytes: &mut &[u8]) -> Option<u64> {
    let mut v = 0_u64;
    for i in 0..10 {
        let (&b, rest) = bytes.split_first()?;
        *bytes = rest;
        v |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

impl<'a> Iterator for Fields<'a> {
    type Item = (u64, Result<Value<'a>, ()>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.0.is_empty() {
            return None;
        }
        let malformed = |me: &mut Self| {
            me.0 = &[];
            Some((0, Err(())))
        };
        let Some(tag) = varint(&mut self.0) else {
            return malformed(self);
        };
        let value = match tag & 7 {
            0 => match varint(&mut self.0) {
                Some(v) => Value::Varint(v),
                None => return malformed(self),
            },
            1 | 5 => {
                let n = if tag & 7 == 1 { 8 } else { 4 };
                if self.0.len() < n {
                    return malformed(self);
                }
                self.0 = &self.0[n..];
                Value::Other
            }
            2 => {
                let len = varint(&mut self.0).and_then(|l| usize::try_from(l).ok());
                match len {
                    Some(len) if len <= self.0.len() => {
                        let (b, rest) = self.0.split_at(len);
                        self.0 = rest;
                        Value::Bytes(b)
                    }
                    _ => return malformed(self),
                }
            }
            _ => return malformed(self),
        };
        Some((tag >> 3, Ok(value)))
    }
}

/// The status a call the layer did not send reaches a tonic caller as: `RESOURCE_EXHAUSTED`.
#[cfg(feature = "tonic")]
pub(crate) fn status_of(cause: crate::Cause) -> &'static tonic::Status {
    use std::sync::LazyLock;
    static LOCAL: LazyLock<tonic::Status> = LazyLock::new(|| {
        tonic::Status::resource_exhausted(
            "not sent: the client's own rate limit has no permit within max_wait",
        )
    });
    static HOLD: LazyLock<tonic::Status> = LazyLock::new(|| {
        tonic::Status::resource_exhausted(
            "not sent: the server asked to wait beyond the client's max_wait",
        )
    });
    match cause {
        crate::Cause::LocalQuota => &LOCAL,
        crate::Cause::ServerHold => &HOLD,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Status { details: [Any { type_url, value: RetryInfo { Duration { secs, nanos } } }] }`,
    /// written out byte by byte.
    fn status(type_url: &str, duration: &[u8]) -> Vec<u8> {
        let mut retry_info = vec![0x0a, u8::try_from(duration.len()).unwrap()];
        retry_info.extend_from_slice(duration);
        let mut any = vec![0x0a, u8::try_from(type_url.len()).unwrap()];
        any.extend_from_slice(type_url.as_bytes());
        any.extend_from_slice(&[0x12, u8::try_from(retry_info.len()).unwrap()]);
        any.extend_from_slice(&retry_info);
        let mut out = vec![0x08, 8, 0x1a, u8::try_from(any.len()).unwrap()];
        out.extend_from_slice(&any);
        out
    }

    #[test]
    fn reads_retry_info() {
        let s = status(RETRY_INFO_TYPE_URL, &[0x08, 0xac, 0x02, 0x10, 5]);
        assert_eq!(retry_info_delay(&s), Some(Duration::new(300, 5)));
        // An empty Duration is zero.
        assert_eq!(
            retry_info_delay(&status(RETRY_INFO_TYPE_URL, &[])),
            Some(Duration::ZERO)
        );
        // Another detail type is not a delay.
        let other = status("type.googleapis.com/google.rpc.DebugInfo", &[0x08, 3]);
        assert_eq!(retry_info_delay(&other), None);
    }

    #[test]
    fn hostile_bytes_are_ignored() {
        // Negative seconds (-1 as int64: ten bytes).
        let negative = [
            0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
        ];
        assert_eq!(
            retry_info_delay(&status(RETRY_INFO_TYPE_URL, &negative)),
            None
        );
        // Nanos out of range.
        let nanos = [0x10, 0x80, 0x94, 0xeb, 0xdc, 0x03];
        assert_eq!(retry_info_delay(&status(RETRY_INFO_TYPE_URL, &nanos)), None);
        // A length beyond the end; a varint that never ends; an unknown wire type.
        assert_eq!(retry_info_delay(&[0x1a, 0x7f, 0x00]), None);
        assert_eq!(retry_info_delay(&[0x08; 12]), None);
        assert_eq!(retry_info_delay(&[0x0f]), None);
        assert_eq!(retry_info_delay(&[]), None);
        // Every prefix of a good message: no panic.
        let good = status(RETRY_INFO_TYPE_URL, &[0x08, 0xac, 0x02, 0x10, 5]);
        for end in 0..good.len() {
            let _ = retry_info_delay(&good[..end]);
        }
    }

    #[test]
    fn waits_from_headers() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let mut h = HeaderMap::new();
        h.insert("retry-after", "2".parse().unwrap());
        assert_eq!(grpc_wait(&h, now), None, "no grpc-status: no gRPC refusal");
        h.insert("grpc-status", "8".parse().unwrap());
        assert_eq!(grpc_wait(&h, now), Some(Duration::from_secs(2)));
        let details = status(RETRY_INFO_TYPE_URL, &[0x08, 3, 0x10, 1]);
        // Padded base64 is read too.
        let encoded = base64::engine::general_purpose::STANDARD.encode(details);
        h.insert("grpc-status-details-bin", encoded.parse().unwrap());
        assert_eq!(
            grpc_wait(&h, now),
            Some(Duration::new(3, 1)),
            "the longest wins"
        );
        h.insert("grpc-status-details-bin", "%%%".parse().unwrap());
        assert_eq!(grpc_wait(&h, now), Some(Duration::from_secs(2)));
        h.insert("grpc-status", "14".parse().unwrap());
        assert_eq!(grpc_wait(&h, now), None);
    }
}
