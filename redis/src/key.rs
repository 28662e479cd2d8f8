//! How a limiter's keys become Redis keys.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ritmo_std::IpKey;

/// A value a keyed limiter can limit by: it writes the bytes that name its quota in the store.
///
/// Two keys that write the same bytes share one quota, so an implementation must write different
/// bytes for values that must be limited apart. Implemented for text, bytes, integers, `char`,
/// `bool`, IP addresses, [`IpKey`] (an IPv6 key as its prefix, `2001:db8:1:2::`) and references
/// to them; implement it for a key type of your own by
/// writing its fields (with a separator that cannot occur inside them).
///
/// ```
/// use ritmo::redis::StoreKey;
/// let mut out = Vec::new();
/// "alice".write_key(&mut out);
/// assert_eq!(out, b"alice");
/// out.clear();
/// std::net::Ipv4Addr::new(10, 0, 0, 1).write_key(&mut out);
/// assert_eq!(out, b"10.0.0.1");
/// out.clear();
/// std::sync::Arc::<str>::from("bob").write_key(&mut out);
/// b"/x".to_vec().write_key(&mut out);
/// assert_eq!(out, b"bob/x");
/// ```
pub trait StoreKey {
    /// Appends the key's bytes to `out`.
    fn write_key(&self, out: &mut Vec<u8>);
}

impl<T: StoreKey + ?Sized> StoreKey for &T {
    fn write_key(&self, out: &mut Vec<u8>) {
        (**self).write_key(out)
    }
}

/// The key of a limiter with one quota: writes nothing.
impl StoreKey for () {
    fn write_key(&self, _out: &mut Vec<u8>) {}
}

/// Keys that are bytes already: written as they are.
macro_rules! byte_keys {
    ($($t:ty),*) => {$(
        impl StoreKey for $t {
            fn write_key(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(AsRef::<[u8]>::as_ref(self))
            }
        }
    )*};
}
byte_keys!(str, String, [u8], Vec<u8>);
// A header's value (an API key), as ritmo-tower's `Header` extractor gives it.
#[cfg(feature = "tower")]
byte_keys!(http::HeaderValue);

impl StoreKey for std::sync::Arc<str> {
    fn write_key(&self, out: &mut Vec<u8>) {
        (**self).write_key(out)
    }
}

macro_rules! display_keys {
    ($($t:ty),*) => {$(
        impl StoreKey for $t {
            fn write_key(&self, out: &mut Vec<u8>) {
                use std::io::Write;
                // Writing to a Vec cannot fail.
                let _ = write!(out, "{self}");
            }
        }
    )*};
}
display_keys!(
    u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize, char, bool, IpAddr, Ipv4Addr,
    Ipv6Addr, IpKey
);

/// The Redis key of a limiter with one quota: `{<prefix>:<id>}`, prefix and id escaped by
/// [`escape_tag`]. A keyed limiter's keys are this, then `:` and the key's bytes as written
/// ([`StoreKey::write_key`]), unescaped.
///
/// The layout is injective: no two distinct (prefix, id, key) triples, nor a limiter with one
/// quota and a keyed one, ever share a Redis key, whatever bytes they hold. The escaped prefix and
/// id hold no `{`, `}` or `:`, so the first `}` of a Redis key closes the braces, the first `:`
/// inside them splits prefix from id, and after the `}` comes either nothing (one quota) or `:`
/// and the client key, whose bytes need no escaping as nothing follows them. The braces are a
/// Redis Cluster hash tag (the bytes between the first `{` and the next `}`): it holds exactly the
/// escaped prefix and id, so every key of one limiter hashes to one slot, and no id can close the
/// tag early.
pub(crate) fn base_key(prefix: &str, id: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(prefix.len() + id.len() + 3);
    out.push(b'{');
    escape_tag(prefix.as_bytes(), &mut out);
    out.push(b':');
    escape_tag(id.as_bytes(), &mut out);
    out.push(b'}');
    out
}

/// Appends a keyed limiter's client key to its [`base_key`]: `:` and the key's bytes.
pub(crate) fn append_key<K: StoreKey + ?Sized>(out: &mut Vec<u8>, key: &K) {
    out.push(b':');
    key.write_key(out);
}

/// Appends `bytes` to `out` with `%`, `{`, `}` and `:` written as `%25`, `%7B`, `%7D` and `%3A`
/// (percent-encoding, restricted to the bytes that would make the layout ambiguous); every other
/// byte as it is. Injective, since `%` itself is escaped; ids made of letters, digits, `-`, `_`,
/// `.` and `/` keep their spelling.
pub(crate) fn escape_tag(bytes: &[u8], out: &mut Vec<u8>) {
    for &b in bytes {
        match b {
            b'%' => out.extend_from_slice(b"%25"),
            b'{' => out.extend_from_slice(b"%7B"),
            b'}' => out.extend_from_slice(b"%7D"),
            b':' => out.extend_from_slice(b"%3A"),
            _ => out.push(b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The Redis key of (prefix, id, client key), `None` for a limiter with one quota: exactly
    /// what `Inner::redis_key` builds.
    fn redis_key(prefix: &str, id: &str, key: Option<&[u8]>) -> Vec<u8> {
        let mut out = base_key(prefix, id);
        if let Some(key) = key {
            append_key(&mut out, key);
        }
        out
    }

    fn unescape(bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'%' {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap();
                out.push(u8::from_str_radix(hex, 16).unwrap());
                i += 3;
            } else {
                out.push(bytes[i]);
                i += 1;
            }
        }
        out
    }

    /// Reads (prefix, id, key) back from a Redis key: if this inverts `redis_key` for every
    /// input, no two inputs share a key.
    fn decode(redis_key: &[u8]) -> (Vec<u8>, Vec<u8>, Option<Vec<u8>>) {
        assert_eq!(redis_key[0], b'{');
        let close = redis_key.iter().position(|&b| b == b'}').unwrap();
        let tag = &redis_key[1..close];
        let colon = tag.iter().position(|&b| b == b':').unwrap();
        let rest = &redis_key[close + 1..];
        let key = match rest.split_first() {
            None => None,
            Some((b':', key)) => Some(key.to_vec()),
            Some(_) => panic!("a byte other than ':' after the hash tag"),
        };
        (unescape(&tag[..colon]), unescape(&tag[colon + 1..]), key)
    }

    /// The Redis Cluster hash tag: the bytes between the first `{` and the next `}` (the whole
    /// key when there is none, or when it is empty).
    fn hash_tag(key: &[u8]) -> &[u8] {
        let Some(open) = key.iter().position(|&b| b == b'{') else {
            return key;
        };
        match key[open + 1..].iter().position(|&b| b == b'}') {
            Some(0) | None => key,
            Some(len) => &key[open + 1..open + 1 + len],
        }
    }

    /// CRC16/XMODEM mod 16384: the Cluster slot of a key.
    fn slot(key: &[u8]) -> u16 {
        let mut crc: u16 = 0;
        for &b in hash_tag(key) {
            crc ^= u16::from(b) << 8;
            for _ in 0..8 {
                crc = if crc & 0x8000 != 0 {
                    (crc << 1) ^ 0x1021
                } else {
                    crc << 1
                };
            }
        }
        crc % 16384
    }

    #[test]
    fn the_slot_function_is_redis_s() {
        // From the Redis Cluster specification and `CLUSTER KEYSLOT`.
        assert_eq!(slot(b"123456789"), 0x31C3);
        assert_eq!(slot(b"{user1000}.following"), slot(b"user1000"));
        assert_eq!(hash_tag(b"foo{}{bar}"), b"foo{}{bar}");
        assert_eq!(hash_tag(b"foo{{bar}}zap"), b"{bar");
    }

    #[test]
    fn the_issue_s_collisions_are_distinct_keys() {
        // Keyed "a}:b" with key "c" and keyed "a" with key "b}:c".
        assert_ne!(
            redis_key("ritmo", "a}:b", Some(b"c")),
            redis_key("ritmo", "a", Some(b"b}:c"))
        );
        // One quota "x}:y" and keyed "x" with key "y}".
        assert_ne!(
            redis_key("ritmo", "x}:y", None),
            redis_key("ritmo", "x", Some(b"y}"))
        );
        // A prefix with a colon against an id with one.
        assert_ne!(redis_key("a:b", "c", None), redis_key("a", "b:c", None));
        // Plain ids keep their spelling.
        assert_eq!(redis_key("ritmo", "api", None), b"{ritmo:api}");
        assert_eq!(
            redis_key("ritmo", "api", Some(b"alice")),
            b"{ritmo:api}:alice"
        );
        assert_eq!(
            redis_key("ritmo", "%{}:", Some(b"")),
            b"{ritmo:%25%7B%7D%3A}:"
        );
    }

    /// Text made mostly of the bytes that matter to the layout, so that collisions would be
    /// likely if the layout allowed them; and any text at all.
    fn hostile() -> impl Strategy<Value = String> {
        prop_oneof![
            proptest::collection::vec(
                prop_oneof![
                    Just("{"),
                    Just("}"),
                    Just(":"),
                    Just("%"),
                    Just("%7D"),
                    Just("a"),
                    Just("\r\n"),
                    Just("\0"),
                    Just("")
                ],
                0..6
            )
            .prop_map(|parts| parts.concat()),
            any::<String>(),
            "[a-z{}:%]{1000,1100}",
        ]
    }

    fn hostile_bytes() -> impl Strategy<Value = Option<Vec<u8>>> {
        proptest::option::of(prop_oneof![
            hostile().prop_map(String::into_bytes),
            any::<Vec<u8>>(),
            proptest::collection::vec(any::<u8>(), 1024..1100),
        ])
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]

        /// Injective: decoding gives back every input, so two distinct inputs never share a key.
        #[test]
        fn every_key_decodes_to_its_prefix_id_and_client_key(
            prefix in hostile(), id in hostile(), key in hostile_bytes(),
        ) {
            let redis = redis_key(&prefix, &id, key.as_deref());
            let (p, i, k) = decode(&redis);
            prop_assert_eq!(p, prefix.into_bytes());
            prop_assert_eq!(i, id.into_bytes());
            prop_assert_eq!(k, key);
        }

        /// The same, pairwise, on inputs drawn from a small alphabet (where the old layout
        /// collided); and one limiter's keys share one hash tag, and so one Cluster slot.
        #[test]
        fn distinct_inputs_never_share_a_key_and_a_limiter_keeps_one_slot(
            a in (hostile(), hostile_bytes()), b in (hostile(), hostile_bytes()),
        ) {
            let ka = redis_key("ritmo", &a.0, a.1.as_deref());
            let kb = redis_key("ritmo", &b.0, b.1.as_deref());
            prop_assert_eq!(ka == kb, a == b);
            let mut tag = b"ritmo:".to_vec();
            escape_tag(a.0.as_bytes(), &mut tag);
            prop_assert_eq!(hash_tag(&ka), &tag[..]);
            let one = redis_key("ritmo", &a.0, None);
            prop_assert_eq!(hash_tag(&one), hash_tag(&ka));
            prop_assert_eq!(slot(&one), slot(&ka));
            let other = redis_key("ritmo", &a.0, b.1.as_deref());
            prop_assert_eq!(slot(&other), slot(&ka));
        }

        /// The escape itself is injective over any bytes (ids of any bytes, not only text).
        #[test]
        fn the_escape_inverts_over_any_bytes(bytes in any::<Vec<u8>>()) {
            let mut out = Vec::new();
            escape_tag(&bytes, &mut out);
            let clean = !out.iter().any(|b| matches!(b, b'{' | b'}' | b':'));
            prop_assert!(clean, "a brace or colon left in {:?}", out);
            prop_assert_eq!(unescape(&out), bytes);
        }
    }
}
