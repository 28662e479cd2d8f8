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
/// use ritmo_redis::StoreKey;
/// let mut out = Vec::new();
/// "alice".write_key(&mut out);
/// assert_eq!(out, b"alice");
/// out.clear();
/// std::net::Ipv4Addr::new(10, 0, 0, 1).write_key(&mut out);
/// assert_eq!(out, b"10.0.0.1");
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

impl StoreKey for str {
    fn write_key(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.as_bytes())
    }
}

impl StoreKey for String {
    fn write_key(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.as_bytes())
    }
}

impl StoreKey for [u8] {
    fn write_key(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self)
    }
}

impl StoreKey for Vec<u8> {
    fn write_key(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self)
    }
}

impl StoreKey for std::sync::Arc<str> {
    fn write_key(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.as_bytes())
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

/// The Redis key of a limiter's state: `{<prefix>:<id>}` for a limiter with one quota,
/// `{<prefix>:<id>}:<key>` for a keyed one. The braces are a Redis Cluster hash tag.
pub(crate) fn base_key(prefix: &str, id: &str) -> Vec<u8> {
    format!("{{{prefix}:{id}}}").into_bytes()
}

/// A header's value (an API key), as ritmo-tower's `Header` extractor gives it: its bytes.
#[cfg(feature = "tower")]
impl StoreKey for http::HeaderValue {
    fn write_key(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.as_bytes())
    }
}
