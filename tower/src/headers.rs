//! The response fields: `Retry-After`, and the IETF `RateLimit-Policy` and `RateLimit` fields as
//! structured-field lists (`"api";q=10;w=1` and `"api";r=3;t=1`), as
//! draft-ietf-httpapi-ratelimit-headers-11 defines them: `r` the available quota, `t` the
//! effective window (the seconds within which the client can use no more than `r`).

use core::fmt::Write as _;
use core::time::Duration;

use std::collections::BTreeSet;
use std::sync::{Mutex, PoisonError};

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue};

use crate::store::{Policy, Status};

/// `RateLimit-Policy`: the quota policies that apply to the request.
pub const RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
/// `RateLimit`: the current service limit for each policy.
pub const RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");

/// Whole seconds, rounded up: a client told to wait this long never comes back too early.
///
/// ```
/// use core::time::Duration;
/// use ritmo::tower::headers::seconds_ceil;
/// assert_eq!(seconds_ceil(Duration::from_millis(1)), 1);
/// assert_eq!(seconds_ceil(Duration::from_secs(2)), 2);
/// assert_eq!(seconds_ceil(Duration::from_nanos(2_000_000_001)), 3);
/// assert_eq!(seconds_ceil(Duration::ZERO), 0);
/// ```
pub fn seconds_ceil(d: Duration) -> u64 {
    d.as_secs().saturating_add(u64::from(d.subsec_nanos() > 0))
}

/// The `Retry-After` value for a wait: whole seconds rounded up, at least 1.
///
/// ```
/// use core::time::Duration;
/// use ritmo::tower::headers::retry_after_secs;
/// assert_eq!(retry_after_secs(Duration::from_millis(100)), 1);
/// assert_eq!(retry_after_secs(Duration::ZERO), 1);
/// assert_eq!(retry_after_secs(Duration::from_millis(1500)), 2);
/// ```
pub fn retry_after_secs(wait: Duration) -> u64 {
    seconds_ceil(wait).max(1)
}

/// The window in whole seconds and the quota over that window, as `RateLimit-Policy` can state
/// them: the field only has whole, non-zero seconds. A period of whole seconds is stated as is;
/// otherwise the window is rounded up to whole seconds and the quota scaled to it, rounded down, so
/// the stated rate is never above the real one (5 per 500 ms is stated as `q=10;w=1`).
///
/// ```
/// use core::time::Duration;
/// use ritmo::tower::{headers::policy_window, Policy};
/// assert_eq!(policy_window(&Policy::new("a", 10, Duration::from_secs(60))), (10, 60));
/// assert_eq!(policy_window(&Policy::new("a", 5, Duration::from_millis(500))), (10, 1));
/// assert_eq!(policy_window(&Policy::new("a", 7, Duration::from_millis(1500))), (9, 2));
/// ```
pub fn policy_window(policy: &Policy) -> (u64, u64) {
    // A limiter reports the period it applies: its emission interval rounded up to whole clock
    // ticks, so 3 per second reads back as 1.000000002 s. That rounding (nanoseconds) is not the
    // policy: the window is taken to the nearest microsecond first.
    let period = nearest_micros(policy.window());
    let w = seconds_ceil(period).max(1);
    let nanos = period.as_nanos().max(1);
    let q = u128::from(policy.quota()) * u128::from(w) * 1_000_000_000 / nanos;
    (u64::try_from(q).unwrap_or(u64::MAX), w)
}

fn nearest_micros(d: Duration) -> Duration {
    let nanos = d.as_nanos();
    let micros = (nanos + 500) / 1_000;
    match u64::try_from(micros) {
        Ok(micros) if micros > 0 => Duration::from_micros(micros),
        _ => d,
    }
}

/// The policy name as a structured-field string: `"` and `\` escaped, any byte outside printable
/// ASCII replaced by `_`.
fn push_sf_string(out: &mut String, name: &str) {
    out.push('"');
    for c in name.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            ' '..='~' => out.push(c),
            _ => out.push('_'),
        }
    }
    out.push('"');
}

/// `"name";q=10;w=1`
///
/// ```
/// use core::time::Duration;
/// use ritmo::tower::{headers::policy_value, Policy};
/// let v = policy_value(&Policy::new("api", 10, Duration::from_secs(1)));
/// assert_eq!(v, "\"api\";q=10;w=1");
/// ```
pub fn policy_value(policy: &Policy) -> HeaderValue {
    let (q, w) = policy_window(policy);
    let mut out = String::with_capacity(24 + policy.name().len());
    push_sf_string(&mut out, policy.name());
    let _ = write!(out, ";q={q};w={w}");
    HeaderValue::try_from(out).unwrap_or_else(|_| HeaderValue::from_static("\"ratelimit\""))
}

/// The `t` parameter of the `RateLimit` field, in whole seconds: how long until more quota is
/// made available, that is until one more permit comes back ([`Status::reset`]), rounded up, so
/// that it is never short and a client keeping to `r` per `t` never sends more than the limiter
/// admits. With the quota whole (nothing owed, `reset` zero) nothing is coming back and there is
/// nothing to wait for: 0. (It was one emission interval, a reset in the future for a quota
/// already whole: a refunded response read `r=2;t=30` for 2 per 60 s.)
///
/// ```
/// use core::time::Duration;
/// use ritmo::tower::{headers::effective_window_secs, Policy, Status};
/// let p = Policy::new("api", 10, Duration::from_secs(60)); // one permit back every 6 s
/// assert_eq!(effective_window_secs(&p, &Status::new(0, Duration::from_millis(100))), 1);
/// assert_eq!(effective_window_secs(&p, &Status::new(3, Duration::from_millis(4500))), 5);
/// assert_eq!(effective_window_secs(&p, &Status::new(10, Duration::ZERO)), 0);
/// ```
pub fn effective_window_secs(policy: &Policy, status: &Status) -> u64 {
    // The policy no longer matters (the quota whole is 0, not one emission interval); kept in
    // the signature, which is public.
    let _ = policy;
    seconds_ceil(status.reset())
}

/// `"name";r=3;t=1`: `r` the permits available now, `t` the effective window (see
/// [`effective_window_secs`]).
///
/// ```
/// use core::time::Duration;
/// use ritmo::tower::{headers::status_value, Policy, Status};
/// let p = Policy::new("api", 10, Duration::from_secs(1));
/// assert_eq!(status_value(&p, &Status::new(0, Duration::from_millis(100))), "\"api\";r=0;t=1");
/// assert_eq!(status_value(&p, &Status::new(10, Duration::ZERO)), "\"api\";r=10;t=0");
/// ```
pub fn status_value(policy: &Policy, status: &Status) -> HeaderValue {
    let mut out = String::with_capacity(24 + policy.name().len());
    push_sf_string(&mut out, policy.name());
    let _ = write!(
        out,
        ";r={};t={}",
        status.remaining(),
        effective_window_secs(policy, status)
    );
    HeaderValue::try_from(out).unwrap_or_else(|_| HeaderValue::from_static("\"ratelimit\";r=0"))
}

/// `value` as a header value over a `'static` copy of its text, so that each response's clone
/// and drop of it touch no reference count. Each distinct text is copied once per process and
/// kept (a set of them, shared by every layer): the texts are a policy's, whose names are
/// `&'static str` already, so the set is as bounded as the program's policies.
fn interned(value: HeaderValue) -> HeaderValue {
    static TEXTS: Mutex<BTreeSet<&'static [u8]>> = Mutex::new(BTreeSet::new());
    let mut texts = TEXTS.lock().unwrap_or_else(PoisonError::into_inner);
    let text: &'static [u8] = match texts.get(value.as_bytes()) {
        Some(text) => text,
        None => {
            let text = Box::leak(Box::<[u8]>::from(value.as_bytes()));
            texts.insert(text);
            text
        }
    };
    HeaderValue::from_maybe_shared(Bytes::from_static(text)).unwrap_or(value)
}

/// One policy's fields, rendered once when the layer is built: what every response of that policy
/// shares. A response then clones `RateLimit-Policy` (a reference count), clones `RateLimit` too
/// while the key's quota is full (the common case for most keys: nothing owed), and otherwise
/// renders only the two numbers of `RateLimit` after a prefix prepared here, without `fmt`.
#[derive(Debug, Clone)]
pub(crate) struct PolicyFields {
    policy: Policy,
    /// `RateLimit-Policy`: `"name";q=10;w=1`.
    policy_header: HeaderValue,
    /// `RateLimit` with the quota full: `"name";r=<quota>;t=0`.
    full: HeaderValue,
    /// `"name";r=`: how every other `RateLimit` value of this policy starts.
    prefix: Box<[u8]>,
}

impl PolicyFields {
    /// The fields of `policy`.
    pub(crate) fn new(policy: Policy) -> Self {
        let mut prefix = String::with_capacity(8 + policy.name().len());
        push_sf_string(&mut prefix, policy.name());
        prefix.push_str(";r=");
        PolicyFields {
            policy_header: interned(policy_value(&policy)),
            full: interned(status_value(
                &policy,
                &Status::new(policy.quota(), Duration::ZERO),
            )),
            prefix: prefix.into_bytes().into_boxed_slice(),
            policy,
        }
    }

    /// The policy.
    pub(crate) fn policy(&self) -> &Policy {
        &self.policy
    }

    /// `RateLimit-Policy`.
    pub(crate) fn policy_header(&self) -> &HeaderValue {
        &self.policy_header
    }

    /// `RateLimit` for `status`: the same text as [`status_value`].
    pub(crate) fn status_value(&self, status: &Status) -> HeaderValue {
        if status.reset().is_zero() && status.remaining() == self.policy.quota() {
            return self.full.clone();
        }
        let mut r = itoa::Buffer::new();
        let r = r.format(status.remaining()).as_bytes();
        let mut t = itoa::Buffer::new();
        let t = t
            .format(effective_window_secs(&self.policy, status))
            .as_bytes();
        // The exact length, so that the bytes become the value's without another allocation.
        let mut out = Vec::with_capacity(self.prefix.len() + r.len() + 3 + t.len());
        out.extend_from_slice(&self.prefix);
        out.extend_from_slice(r);
        out.extend_from_slice(b";t=");
        out.extend_from_slice(t);
        HeaderValue::from_maybe_shared(Bytes::from(out))
            .unwrap_or_else(|_| HeaderValue::from_static("\"ratelimit\";r=0"))
    }

    /// Sets `RateLimit-Policy` and `RateLimit` (for `status`) on `headers`.
    pub(crate) fn set(&self, headers: &mut HeaderMap, status: &Status) {
        headers.insert(RATELIMIT_POLICY, self.policy_header.clone());
        headers.insert(RATELIMIT, self.status_value(status));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_escaped_strings() {
        let p = Policy::new("a\"b\\c é", 1, Duration::from_secs(1));
        assert_eq!(policy_value(&p), "\"a\\\"b\\\\c _\";q=1;w=1");
    }

    #[test]
    fn prepared_fields_read_as_rendered_ones() {
        let p = Policy::new("a\"pi", 10, Duration::from_secs(60));
        let fields = PolicyFields::new(p);
        assert_eq!(fields.policy_header(), &policy_value(&p));
        for status in [
            Status::new(10, Duration::ZERO),
            Status::new(9, Duration::ZERO),
            Status::new(10, Duration::from_millis(1)),
            Status::new(0, Duration::from_millis(5_500)),
            Status::new(u32::MAX, Duration::from_secs(u64::MAX / 4)),
        ] {
            assert_eq!(fields.status_value(&status), status_value(&p, &status));
        }
    }

    #[test]
    fn huge_and_tiny_periods_do_not_overflow() {
        let p = Policy::new("x", u32::MAX, Duration::from_nanos(1));
        assert_eq!(policy_window(&p), (u64::from(u32::MAX) * 1_000_000_000, 1));
        let p = Policy::new("x", 1, Duration::MAX);
        let (q, w) = policy_window(&p);
        assert!(w >= u64::MAX / 2 && q <= 1);
    }
}
