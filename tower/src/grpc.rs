//! gRPC's form of the layer's answers: what a gRPC client understands as "slow down".
//!
//! A gRPC client reads a call's outcome from `grpc-status`, never from the HTTP status: an HTTP
//! `429` is, to tonic and grpcio, a broken call (`UNAVAILABLE`, retried at once, or `INTERNAL`
//! when they try to read the text body as a message). So a request whose `content-type` starts
//! with `application/grpc` (or every request, in [`Grpc`](crate::Grpc) mode) is refused with a
//! *trailers-only* response: HTTP `200`, no body, and in its headers
//!
//! - `content-type: application/grpc`, `grpc-status: 8` (`RESOURCE_EXHAUSTED`) and a
//!   `grpc-message` (percent-encoded as the gRPC wire spec asks);
//! - `retry-after`, `RateLimit-Policy` and `RateLimit`, exactly as an HTTP refusal has them;
//! - `grpc-status-details-bin`: a `google.rpc.Status` (base64, unpadded) whose one detail is a
//!   `google.rpc.RetryInfo`, its `retry_delay` the wait rounded **up** to the millisecond (finer
//!   than `retry-after`'s whole seconds, never shorter than the wait): a client that waits it out
//!   finds its permit there. tonic reads it with `tonic-types`
//!   (`Status::get_details_retry_info`), grpcio with `grpc_status.rpc_status.from_call`.
//!
//! The other refusals answer a `grpc-status` too, never a reset stream:
//!
//! | the layer's case | HTTP mode | gRPC |
//! |---|---|---|
//! | refused by the limiter | `429` | `8 RESOURCE_EXHAUSTED` |
//! | no key, [`MissingKey::Reject`](crate::MissingKey)`(400)` (the default) | `400` | `3 INVALID_ARGUMENT` |
//! | no key, `Reject(401)` | `401` | `16 UNAUTHENTICATED` |
//! | no key, `Reject(403)` | `403` | `7 PERMISSION_DENIED` |
//! | no key, `Reject(429)` | `429` | `8 RESOURCE_EXHAUSTED` |
//! | no key, `Reject(503)` | `503` | `14 UNAVAILABLE` |
//! | no key, any other `4xx` / `5xx` | as set | `9 FAILED_PRECONDITION` / `13 INTERNAL` |
//! | the store cannot decide (a cost above the quota) | `500` | `13 INTERNAL` |
//!
//! The encoding is written here (a `google.rpc.Status` with one `Any` is five length-delimited
//! fields and two varints), so the layer needs no protobuf runtime and works under any tonic
//! version: its responses' bodies are the inner service's body type made with `Default` (tonic
//! 0.12's `BoxBody`, 0.13 and 0.14's `tonic::body::Body`), or with `From<String>` in HTTP mode.

use core::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD_NO_PAD;
use http::{HeaderMap, HeaderName, HeaderValue, Request, Response, StatusCode, header};

use crate::headers::{self, RATELIMIT, RATELIMIT_POLICY};
use crate::reject::Rejection;

/// `grpc-status`: the call's status code.
pub const GRPC_STATUS: HeaderName = HeaderName::from_static("grpc-status");
/// `grpc-message`: the status message, percent-encoded.
pub const GRPC_MESSAGE: HeaderName = HeaderName::from_static("grpc-message");
/// `grpc-status-details-bin`: a `google.rpc.Status` message, base64.
pub const GRPC_STATUS_DETAILS_BIN: HeaderName = HeaderName::from_static("grpc-status-details-bin");
/// The `type_url` of a `google.rpc.RetryInfo` detail.
pub const RETRY_INFO_TYPE_URL: &str = "type.googleapis.com/google.rpc.RetryInfo";

/// gRPC's status codes the layer answers with or reads.
pub mod code {
    /// `UNKNOWN` (2).
    pub const UNKNOWN: u32 = 2;
    /// `INVALID_ARGUMENT` (3).
    pub const INVALID_ARGUMENT: u32 = 3;
    /// `DEADLINE_EXCEEDED` (4).
    pub const DEADLINE_EXCEEDED: u32 = 4;
    /// `PERMISSION_DENIED` (7).
    pub const PERMISSION_DENIED: u32 = 7;
    /// `RESOURCE_EXHAUSTED` (8): the answer to a refused call.
    pub const RESOURCE_EXHAUSTED: u32 = 8;
    /// `FAILED_PRECONDITION` (9).
    pub const FAILED_PRECONDITION: u32 = 9;
    /// `INTERNAL` (13).
    pub const INTERNAL: u32 = 13;
    /// `UNAVAILABLE` (14).
    pub const UNAVAILABLE: u32 = 14;
    /// `DATA_LOSS` (15).
    pub const DATA_LOSS: u32 = 15;
    /// `UNAUTHENTICATED` (16).
    pub const UNAUTHENTICATED: u32 = 16;
}

/// Whether a request is a gRPC call: its `content-type` is `application/grpc` or starts with
/// `application/grpc+` / `application/grpc;` (`+proto`, `+json`, parameters).
///
/// ```
/// use ritmo::tower::grpc::is_grpc;
/// let call = http::Request::builder().header("content-type", "application/grpc+proto").body(()).unwrap();
/// let page = http::Request::builder().header("content-type", "application/grpc-web").body(()).unwrap();
/// assert!(is_grpc(&call));
/// assert!(!is_grpc(&page)); // gRPC-Web is answered by its proxy's rules, not here
/// ```
pub fn is_grpc<B>(request: &Request<B>) -> bool {
    is_grpc_content_type(request.headers())
}

fn is_grpc_content_type(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(header::CONTENT_TYPE) else {
        return false;
    };
    let v = value.as_bytes();
    let prefix = b"application/grpc";
    v.len() >= prefix.len()
        && v[..prefix.len()].eq_ignore_ascii_case(prefix)
        && matches!(v.get(prefix.len()), None | Some(b'+' | b';'))
}

/// The `grpc-status` of a response's headers, if it has one there (a trailers-only response: a
/// call that failed before any message, or a refusal). A call that sent messages has its status
/// in the trailers, after the body, and none here.
///
/// ```
/// use ritmo::tower::grpc::{grpc_status, code};
/// let failed = http::Response::builder().header("grpc-status", "14").body(()).unwrap();
/// assert_eq!(grpc_status(failed.headers()), Some(code::UNAVAILABLE));
/// assert_eq!(grpc_status(http::Response::new(()).headers()), None);
/// ```
pub fn grpc_status(headers: &HeaderMap) -> Option<u32> {
    let value = headers.get(GRPC_STATUS)?.to_str().ok()?;
    value.trim().parse().ok()
}

/// The gRPC code a request without a key is refused with, for the HTTP status the layer is set
/// to refuse it with (see the table in this module's doc).
///
/// ```
/// use http::StatusCode;
/// use ritmo::tower::grpc::{code, code_for_status};
/// assert_eq!(code_for_status(StatusCode::BAD_REQUEST), code::INVALID_ARGUMENT);
/// assert_eq!(code_for_status(StatusCode::UNAUTHORIZED), code::UNAUTHENTICATED);
/// ```
pub fn code_for_status(status: StatusCode) -> u32 {
    match status.as_u16() {
        400 => code::INVALID_ARGUMENT,
        401 => code::UNAUTHENTICATED,
        403 => code::PERMISSION_DENIED,
        429 => code::RESOURCE_EXHAUSTED,
        503 => code::UNAVAILABLE,
        s if s >= 500 => code::INTERNAL,
        s if s >= 400 => code::FAILED_PRECONDITION,
        _ => code::UNKNOWN,
    }
}

/// A `grpc-message` value: the text with `%`, control characters and every byte outside
/// printable ASCII percent-encoded (UTF-8 bytes one by one), as the gRPC wire spec asks.
///
/// ```
/// use ritmo::tower::grpc::encode_message;
/// assert_eq!(encode_message("retry after 2 s"), "retry after 2 s");
/// assert_eq!(encode_message("100% über\n"), "100%25 %C3%BCber%0A");
/// ```
pub fn encode_message(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for &b in text.as_bytes() {
        if (0x20..=0x7e).contains(&b) && b != b'%' {
            out.push(char::from(b));
        } else {
            const HEX: &[u8; 16] = b"0123456789ABCDEF";
            out.push('%');
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 15)]));
        }
    }
    out
}

/// The `RetryInfo` delay for a refusal: its wait rounded up to the millisecond (never short).
///
/// ```
/// use core::time::Duration;
/// use ritmo::{RateLimitExceeded, Reason};
/// use ritmo::tower::{grpc::retry_delay, Policy, Rejection, Status};
/// let wait = Duration::from_nanos(1_200_000_001);
/// let error = RateLimitExceeded::from_parts("api", Reason::NoPermitInTime, wait);
/// let policy = Policy::new("api", 10, Duration::from_secs(1));
/// let r = Rejection::new(error, policy, Status::new(0, wait));
/// assert_eq!(retry_delay(&r), Duration::from_millis(1201));
/// ```
pub fn retry_delay(rejection: &Rejection) -> Duration {
    let wait = rejection.retry_after();
    let ms = wait
        .as_millis()
        .saturating_add(u128::from(!wait.subsec_nanos().is_multiple_of(1_000_000)));
    Duration::from_millis(u64::try_from(ms).unwrap_or(u64::MAX))
}

/// The `google.rpc.Status` message (protobuf bytes) of a status with one `google.rpc.RetryInfo`
/// detail: what `grpc-status-details-bin` carries, before base64.
///
/// ```
/// use core::time::Duration;
/// use ritmo::tower::grpc::status_with_retry_info;
/// let bytes = status_with_retry_info(8, "slow down", Duration::from_millis(1500));
/// // code = 8, then the message, then one `Any` detail.
/// assert_eq!(&bytes[..2], &[0x08, 8]);
/// ```
pub fn status_with_retry_info(code: u32, message: &str, delay: Duration) -> Vec<u8> {
    // google.protobuf.Duration { int64 seconds = 1; int32 nanos = 2; }
    let mut duration = Vec::with_capacity(16);
    if delay.as_secs() > 0 {
        varint_field(&mut duration, 1, delay.as_secs());
    }
    if delay.subsec_nanos() > 0 {
        varint_field(&mut duration, 2, u64::from(delay.subsec_nanos()));
    }
    // google.rpc.RetryInfo { google.protobuf.Duration retry_delay = 1; }
    let mut retry_info = Vec::with_capacity(duration.len() + 2);
    bytes_field(&mut retry_info, 1, &duration);
    // google.protobuf.Any { string type_url = 1; bytes value = 2; }
    let mut any = Vec::with_capacity(RETRY_INFO_TYPE_URL.len() + retry_info.len() + 4);
    bytes_field(&mut any, 1, RETRY_INFO_TYPE_URL.as_bytes());
    bytes_field(&mut any, 2, &retry_info);
    // google.rpc.Status { int32 code = 1; string message = 2; repeated Any details = 3; }
    let mut status = Vec::with_capacity(message.len() + any.len() + 8);
    if code != 0 {
        varint_field(&mut status, 1, u64::from(code));
    }
    if !message.is_empty() {
        bytes_field(&mut status, 2, message.as_bytes());
    }
    bytes_field(&mut status, 3, &any);
    status
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        // Truncation intended: the low seven bits, with the continuation bit.
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A varint field (wire type 0).
fn varint_field(out: &mut Vec<u8>, field: u64, v: u64) {
    varint(out, field << 3);
    varint(out, v);
}

/// A length-delimited field (wire type 2).
fn bytes_field(out: &mut Vec<u8>, field: u64, bytes: &[u8]) {
    varint(out, (field << 3) | 2);
    varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// A trailers-only gRPC response: HTTP 200, `content-type: application/grpc`, `grpc-status`
/// and `grpc-message`, with `body` (empty).
pub(crate) fn status_response<B>(body: B, code: u32, message: &str) -> Response<B> {
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/grpc"),
    );
    headers.insert(GRPC_STATUS, HeaderValue::from(code));
    if let Ok(value) = HeaderValue::try_from(encode_message(message)) {
        headers.insert(GRPC_MESSAGE, value);
    }
    response
}

/// The gRPC refusal of `rejection`: `RESOURCE_EXHAUSTED`, `retry-after`, the RateLimit fields
/// and the `RetryInfo` detail.
pub(crate) fn refusal<B>(
    body: B,
    rejection: &Rejection,
    policy_header: &HeaderValue,
) -> Response<B> {
    let secs = rejection
        .retry_after_secs()
        .max(headers::effective_window_secs(
            rejection.policy(),
            rejection.status(),
        ));
    let message = format!("Too Many Requests: retry after {secs} s");
    let mut response = status_response(body, code::RESOURCE_EXHAUSTED, &message);
    let details =
        status_with_retry_info(code::RESOURCE_EXHAUSTED, &message, retry_delay(rejection));
    let headers = response.headers_mut();
    headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
    headers.insert(RATELIMIT_POLICY, policy_header.clone());
    headers.insert(
        RATELIMIT,
        headers::status_value(rejection.policy(), rejection.status()),
    );
    if let Ok(value) = HeaderValue::try_from(STANDARD_NO_PAD.encode(details)) {
        headers.insert(GRPC_STATUS_DETAILS_BIN, value);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types() {
        let with = |ct: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::CONTENT_TYPE, HeaderValue::from_str(ct).unwrap());
            is_grpc_content_type(&h)
        };
        assert!(with("application/grpc"));
        assert!(with("Application/GRPC+json"));
        assert!(with("application/grpc; charset=utf-8"));
        assert!(!with("application/grpc-web+proto"));
        assert!(!with("application/json"));
        assert!(!with("application/grp"));
        assert!(!is_grpc_content_type(&HeaderMap::new()));
    }

    /// Protobuf as the spec writes it, decoded by hand: tag, then value.
    #[test]
    fn encodes_the_spec_bytes() {
        let bytes = status_with_retry_info(8, "hi", Duration::new(300, 5));
        let url = RETRY_INFO_TYPE_URL.as_bytes();
        let mut want = vec![0x08, 8, 0x12, 2, b'h', b'i', 0x1a];
        // Any: type_url (2 + 40), value: RetryInfo (2 + Duration: seconds 300 = 0xac 0x02, nanos 5)
        let duration = [0x08, 0xac, 0x02, 0x10, 5];
        let retry_info_len = 2 + duration.len();
        want.push(u8::try_from(2 + url.len() + 2 + retry_info_len).unwrap());
        want.extend_from_slice(&[0x0a, u8::try_from(url.len()).unwrap()]);
        want.extend_from_slice(url);
        want.extend_from_slice(&[0x12, u8::try_from(retry_info_len).unwrap()]);
        want.extend_from_slice(&[0x0a, u8::try_from(duration.len()).unwrap()]);
        want.extend_from_slice(&duration);
        assert_eq!(bytes, want);
    }

    #[test]
    fn long_varints() {
        let mut out = Vec::new();
        varint(&mut out, u64::MAX);
        assert_eq!(out.len(), 10);
        assert_eq!(out[9], 1);
    }

    #[test]
    fn missing_key_codes() {
        assert_eq!(
            code_for_status(StatusCode::FORBIDDEN),
            code::PERMISSION_DENIED
        );
        assert_eq!(
            code_for_status(StatusCode::NOT_FOUND),
            code::FAILED_PRECONDITION
        );
        assert_eq!(code_for_status(StatusCode::BAD_GATEWAY), code::INTERNAL);
        assert_eq!(
            code_for_status(StatusCode::SERVICE_UNAVAILABLE),
            code::UNAVAILABLE
        );
        assert_eq!(code_for_status(StatusCode::OK), code::UNKNOWN);
    }
}
