//! [`IpKey`]: the key for limiting per client address.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// A client's address as a limiter key: an IPv4 address as it is, an IPv6 address by its network
/// prefix (`/64` unless you choose another), and an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`,
/// what a dual-stack socket reports for an IPv4 client) as the IPv4 address it carries.
///
/// Why a prefix: one IPv6 host is usually handed a whole `/64`, and can pick a fresh address in it
/// for every request; keyed by full address, each would get a fresh burst. 16 bytes, no heap.
///
/// ```
/// use std::net::IpAddr;
/// use ritmo::server::IpKey;
///
/// let a: IpAddr = "2001:db8:1:2::10".parse()?;
/// let b: IpAddr = "2001:db8:1:2:ffff::1".parse()?; // the same /64
/// let c: IpAddr = "2001:db8:1:3::10".parse()?;     // the next /64
/// assert_eq!(IpKey::from(a), IpKey::from(b));
/// assert_ne!(IpKey::from(a), IpKey::from(c));
///
/// let v4: IpAddr = "203.0.113.7".parse()?;
/// let mapped: IpAddr = "::ffff:203.0.113.7".parse()?;
/// assert_eq!(IpKey::from(v4), IpKey::from(mapped));
/// assert_eq!(IpKey::from(mapped).to_string(), "203.0.113.7");
/// # Ok::<(), std::net::AddrParseError>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct IpKey([u8; 16]);

/// The 16 bytes as one `u128`: one call to the hasher instead of a length and a slice
/// (measured under callgrind: the keyed map's lookup of an `IpKey` 11 instructions fewer).
/// Keys that are equal hash equally, as `Eq` requires.
impl core::hash::Hash for IpKey {
    #[inline]
    fn hash<H: core::hash::Hasher>(&self, state: &mut H) {
        state.write_u128(u128::from_ne_bytes(self.0));
    }
}

impl IpKey {
    /// The key for `addr`, with IPv6 addresses taken by their `/64`.
    ///
    /// ```
    /// use std::net::{IpAddr, Ipv6Addr};
    /// use ritmo::server::IpKey;
    /// let k = IpKey::new("2001:db8::1234".parse::<IpAddr>()?);
    /// assert_eq!(k.ip(), IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0)));
    /// # Ok::<(), std::net::AddrParseError>(())
    /// ```
    pub fn new(addr: IpAddr) -> IpKey {
        Self::with_ipv6_prefix(addr, 64)
    }

    /// The key for `addr`, with IPv6 addresses taken by their first `prefix` bits (`/48` for a
    /// site, `/56` for what many ISPs hand a home, `128` for the full address); values above 128
    /// are taken as 128. IPv4 addresses (mapped ones too) are always taken whole.
    ///
    /// ```
    /// use std::net::IpAddr;
    /// use ritmo::server::IpKey;
    /// let a: IpAddr = "2001:db8:1:2::1".parse()?;
    /// let b: IpAddr = "2001:db8:1:3::1".parse()?;
    /// assert_eq!(IpKey::with_ipv6_prefix(a, 48), IpKey::with_ipv6_prefix(b, 48));
    /// assert_ne!(IpKey::with_ipv6_prefix(a, 64), IpKey::with_ipv6_prefix(b, 64));
    /// # Ok::<(), std::net::AddrParseError>(())
    /// ```
    #[inline]
    pub fn with_ipv6_prefix(addr: IpAddr, prefix: u8) -> IpKey {
        match addr {
            IpAddr::V4(v4) => Self::v4(v4),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => Self::v4(v4),
                None => {
                    let bits = u128::from(v6);
                    let keep = u32::from(prefix.min(128));
                    let mask = if keep == 0 {
                        0
                    } else {
                        u128::MAX << (128 - keep)
                    };
                    IpKey((bits & mask).to_be_bytes())
                }
            },
        }
    }

    #[inline]
    fn v4(v4: Ipv4Addr) -> IpKey {
        IpKey(v4.to_ipv6_mapped().octets())
    }

    /// The address the key stands for: the IPv4 address, or the IPv6 prefix with its host bits
    /// zero.
    ///
    /// ```
    /// use std::net::IpAddr;
    /// use ritmo::server::IpKey;
    /// let k = IpKey::new("::ffff:192.0.2.1".parse::<IpAddr>()?);
    /// assert_eq!(k.ip(), "192.0.2.1".parse::<IpAddr>()?);
    /// # Ok::<(), std::net::AddrParseError>(())
    /// ```
    pub fn ip(&self) -> IpAddr {
        let v6 = Ipv6Addr::from(self.0);
        match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(v6),
        }
    }

    /// Whether it stands for an IPv4 address.
    ///
    /// ```
    /// use std::net::Ipv4Addr;
    /// use ritmo::server::IpKey;
    /// assert!(IpKey::from(Ipv4Addr::LOCALHOST).is_ipv4());
    /// ```
    pub fn is_ipv4(&self) -> bool {
        matches!(self.ip(), IpAddr::V4(_))
    }
}

/// How the keyed map keeps an [`IpKey`]: in 8 bytes when it can, else whole (16). An IPv4
/// address is its 32 bits (the upper half zero); an IPv6 prefix of at most 64 bits is those bits,
/// unless its first 32 are zero (`::/32`, reserved: no such prefix is a global address), which
/// would read as an IPv4 address: such a key, and a key of a prefix above 64, is kept whole. So
/// each packed value stands for one key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Packed {
    Bits(u64),
    Whole,
}

impl IpKey {
    /// Its form in the keyed map.
    #[inline(always)]
    pub(super) fn packed(&self) -> Packed {
        let bits = u128::from_be_bytes(self.0);
        let (high, low) = ((bits >> 64) as u64, bits as u64);
        if high == 0 && low >> 32 == 0xffff {
            Packed::Bits(low & 0xffff_ffff) // `::ffff:a.b.c.d`: how an IPv4 key is kept
        } else if low == 0 && high >> 32 != 0 {
            Packed::Bits(high)
        } else {
            Packed::Whole
        }
    }

    /// The key whose form is [`Packed::Bits`]`(bits)`.
    pub(super) fn unpack(bits: u64) -> IpKey {
        let key = if bits >> 32 == 0 {
            (0xffff_u128 << 32) | u128::from(bits)
        } else {
            u128::from(bits) << 64
        };
        IpKey(key.to_be_bytes())
    }
}

impl From<IpAddr> for IpKey {
    fn from(addr: IpAddr) -> Self {
        IpKey::new(addr)
    }
}

impl From<Ipv4Addr> for IpKey {
    fn from(addr: Ipv4Addr) -> Self {
        IpKey::v4(addr)
    }
}

impl From<Ipv6Addr> for IpKey {
    fn from(addr: Ipv6Addr) -> Self {
        IpKey::new(IpAddr::V6(addr))
    }
}

impl From<SocketAddr> for IpKey {
    /// The peer's address, without its port.
    fn from(addr: SocketAddr) -> Self {
        IpKey::new(addr.ip())
    }
}

/// Parses an address (`203.0.113.7`, `2001:db8::1`) into its key, IPv6 by its `/64`.
///
/// ```
/// use ritmo::server::IpKey;
/// let k: IpKey = "2001:db8:1:2::7".parse()?;
/// assert_eq!(k.to_string(), "2001:db8:1:2::");
/// assert!("not an address".parse::<IpKey>().is_err());
/// # Ok::<(), std::net::AddrParseError>(())
/// ```
impl std::str::FromStr for IpKey {
    type Err = std::net::AddrParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        s.parse::<IpAddr>().map(IpKey::new)
    }
}

impl fmt::Display for IpKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.ip().fmt(f)
    }
}

impl fmt::Debug for IpKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "IpKey({})", self.ip())
    }
}

#[cfg(test)]
mod tests {
    use std::net::IpAddr;

    use super::{IpKey, Packed};

    /// Every key has one form, and a packed form gives the key back: IPv4 and an IPv6 prefix
    /// of at most 64 bits in 8 bytes, the rest whole.
    #[test]
    fn each_key_packs_to_one_form_and_back() {
        let cases: [(&str, u8, Packed); 8] = [
            ("203.0.113.7", 64, Packed::Bits(0xcb00_7107)),
            ("::ffff:203.0.113.7", 64, Packed::Bits(0xcb00_7107)),
            ("0.0.0.0", 64, Packed::Bits(0)),
            ("2001:db8:1:2::10", 64, Packed::Bits(0x2001_0db8_0001_0002)),
            ("2001:db8:1:2::10", 48, Packed::Bits(0x2001_0db8_0001_0000)),
            ("::1", 64, Packed::Whole),
            ("0:0:cb00:7107::", 64, Packed::Whole),
            ("2001:db8:1:2::10", 128, Packed::Whole),
        ];
        for (addr, prefix, form) in cases {
            let key = IpKey::with_ipv6_prefix(addr.parse::<IpAddr>().unwrap(), prefix);
            assert_eq!(key.packed(), form, "{addr}/{prefix}");
            if let Packed::Bits(bits) = form {
                assert_eq!(IpKey::unpack(bits), key, "{addr}/{prefix}");
            }
        }
    }
}
