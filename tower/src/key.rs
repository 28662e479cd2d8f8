//! What a request is limited by: one global quota, the client's IP address, a header (an API key),
//! or any function of the request.
//!
//! An extractor that finds no key returns `None`; the layer then does what
//! [`MissingKey`](crate::MissingKey) says (reject, or pass unlimited).

use core::fmt;
use core::marker::PhantomData;
use core::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use http::{HeaderName, HeaderValue, Request};
use ipnet::IpNet;
pub use ritmo_std::IpKey;

use crate::forwarded;

/// Finds the key a request is limited by.
///
/// Implemented by [`Global`], [`PeerIp`], [`ForwardedIp`], [`Header`] and, through [`from_fn`],
/// by any `Fn(&Request) -> Option<Key>`.
pub trait KeyExtractor<Req>: Clone + Send + Sync + 'static {
    /// The key type (the store's key).
    type Key;

    /// The request's key, or `None` if it has none.
    fn extract(&self, request: &Req) -> Option<Self::Key>;

    /// Why `request` has no key when that can only be a setup error (the server never records
    /// what this extractor reads), with how to fix it; `None` (the default) when a request
    /// without a key is normal (an optional API-key header). The layer logs it as a `tracing`
    /// error the first time it happens, so a misconfigured layer never answers every request
    /// without a word.
    fn why_missing(&self, request: &Req) -> Option<&'static str> {
        let _ = request;
        None
    }
}

/// What [`PeerIp`] and [`ForwardedIp`] say on tonic when a request carries no connection address.
#[cfg(feature = "tonic")]
macro_rules! tonic_hint {
    () => {
        "; on tonic, serve TCP connections (`Server::serve`, or `serve_with_incoming` of \
        `TcpIncoming`): tonic then records the peer as `TcpConnectInfo`"
    };
}
#[cfg(not(feature = "tonic"))]
macro_rules! tonic_hint {
    () => {
        "; on tonic, turn on the `tonic` feature (ritmo's or ritmo-tower's: tonic 0.14's \
        `TcpConnectInfo` is read), or insert `request.remote_addr()` as a `SocketAddr`"
    };
}

/// What [`PeerIp`] and [`ForwardedIp`] say when a request carries no connection address.
#[cfg(feature = "axum")]
const NO_PEER_ADDRESS: &str = concat!(
    "no connection address in the request's extensions: serve the \
axum app with `into_make_service_with_connect_info::<SocketAddr>()`, or insert the peer's \
`SocketAddr` into each request's extensions (hyper)",
    tonic_hint!()
);
#[cfg(not(feature = "axum"))]
const NO_PEER_ADDRESS: &str = concat!(
    "no connection address in the request's extensions: on axum, turn \
on the `axum` feature (`ritmo = { features = [\"axum\"] }` or ritmo-tower's `axum`) and serve \
the app with `into_make_service_with_connect_info::<SocketAddr>()`; on hyper, insert the peer's \
`SocketAddr` into each request's extensions",
    tonic_hint!()
);

/// One quota for every request: the key is `()`.
///
/// ```
/// use ritmo::tower::key::{Global, KeyExtractor};
/// assert_eq!(Global.extract(&http::Request::new(())), Some(()));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Global;

impl<Req> KeyExtractor<Req> for Global {
    type Key = ();

    fn extract(&self, _request: &Req) -> Option<()> {
        Some(())
    }
}

/// The client's IP address as the connection reports it.
///
/// Read from the request's extensions: axum's `ConnectInfo<SocketAddr>` (feature `axum`, inserted
/// by `into_make_service_with_connect_info::<SocketAddr>()`), tonic's `TcpConnectInfo` (feature
/// `tonic`: tonic 0.14 records it for every TCP connection it serves), or a plain `SocketAddr`
/// that a hyper server inserted itself. The key is an [`IpKey`] (the keyed limiter's own IP key)
/// by default, or an [`IpAddr`] for a `KeyedRateLimiter<IpAddr>` (any [`FromPeerIp`] type: the
/// key type follows the store's). Either way IPv6 clients are grouped by their /64 prefix by
/// default (one host usually holds a whole /64, so per-address keys would let it rotate through
/// 2^64 fresh quotas; an `IpAddr` key is then the prefix's first address); IPv4-mapped IPv6
/// addresses count as the IPv4 address.
///
/// ```
/// use std::net::{IpAddr, SocketAddr};
/// use ritmo::tower::key::{IpKey, KeyExtractor, PeerIp};
/// let mut request = http::Request::new(());
/// request.extensions_mut().insert(SocketAddr::from(([0x2001, 0xdb8, 0, 7, 1, 2, 3, 4], 443)));
/// let key: IpKey = PeerIp::new().extract(&request).unwrap();
/// assert_eq!(key.ip(), "2001:db8:0:7::".parse::<IpAddr>().unwrap());
/// let key: IpAddr = PeerIp::new().extract(&request).unwrap(); // the same /64, as an address
/// assert_eq!(key, "2001:db8:0:7::".parse::<IpAddr>().unwrap());
/// ```
///
/// Without the `axum` feature (of ritmo-tower, or of the `ritmo` facade) axum's `ConnectInfo` is
/// not read, and on an axum router no request has a key: the layer then answers `400` saying how
/// to fix it, and logs an error once (see [`RateLimitLayer`](crate::RateLimitLayer)).
pub struct PeerIp<K = IpKey> {
    ipv6_prefix: u8,
    key: PhantomData<fn() -> K>,
}

/// A key [`PeerIp`] can make of a client's address: [`IpKey`] (the default) or [`IpAddr`].
pub trait FromPeerIp: Clone + Send + 'static {
    /// The key of a client at `ip`, an IPv6 address grouped by its first `ipv6_prefix` bits
    /// (IPv4-mapped IPv6 addresses count as the IPv4 address).
    fn from_peer_ip(ip: IpAddr, ipv6_prefix: u8) -> Self;
}

impl FromPeerIp for IpKey {
    fn from_peer_ip(ip: IpAddr, ipv6_prefix: u8) -> Self {
        IpKey::with_ipv6_prefix(ip, ipv6_prefix)
    }
}

/// The grouped address: an IPv6 client's prefix as its first address.
impl FromPeerIp for IpAddr {
    fn from_peer_ip(ip: IpAddr, ipv6_prefix: u8) -> Self {
        IpKey::with_ipv6_prefix(ip, ipv6_prefix).ip()
    }
}

impl<K> fmt::Debug for PeerIp<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PeerIp")
            .field("ipv6_prefix", &self.ipv6_prefix)
            .finish()
    }
}

impl<K> Clone for PeerIp<K> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<K> Copy for PeerIp<K> {}

impl<K> PartialEq for PeerIp<K> {
    fn eq(&self, other: &Self) -> bool {
        self.ipv6_prefix == other.ipv6_prefix
    }
}

impl<K> Eq for PeerIp<K> {}

impl<K: FromPeerIp> Default for PeerIp<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: FromPeerIp> PeerIp<K> {
    /// The peer's address, IPv6 grouped by /64; the key type ([`IpKey`] or [`IpAddr`]) is the
    /// store's.
    pub const fn new() -> Self {
        PeerIp {
            ipv6_prefix: 64,
            key: PhantomData,
        }
    }

    /// Groups IPv6 clients by a prefix of `bits` (clamped to 128; 128 = one key per address).
    #[must_use]
    pub const fn ipv6_prefix(mut self, bits: u8) -> Self {
        self.ipv6_prefix = if bits > 128 { 128 } else { bits };
        self
    }

    fn key(&self, ip: IpAddr) -> K {
        K::from_peer_ip(ip, self.ipv6_prefix)
    }
}

/// The address the connection came from, if the server recorded it.
pub(crate) fn peer_addr<B>(request: &Request<B>) -> Option<IpAddr> {
    #[cfg(feature = "axum")]
    if let Some(info) = request
        .extensions()
        .get::<axum::extract::ConnectInfo<SocketAddr>>()
    {
        return Some(info.0.ip());
    }
    #[cfg(feature = "tonic")]
    if let Some(info) = request
        .extensions()
        .get::<tonic::transport::server::TcpConnectInfo>()
        .and_then(tonic::transport::server::TcpConnectInfo::remote_addr)
    {
        return Some(info.ip());
    }
    request
        .extensions()
        .get::<SocketAddr>()
        .map(|addr| addr.ip())
}

impl<B, K: FromPeerIp> KeyExtractor<Request<B>> for PeerIp<K> {
    type Key = K;

    fn extract(&self, request: &Request<B>) -> Option<K> {
        peer_addr(request).map(|ip| self.key(ip))
    }

    fn why_missing(&self, request: &Request<B>) -> Option<&'static str> {
        peer_addr(request).is_none().then_some(NO_PEER_ADDRESS)
    }
}

/// Which header a trusted proxy writes the client's address into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ForwardedHeader {
    /// `X-Forwarded-For: client, proxy1, proxy2` (every occurrence, in order).
    XForwardedFor,
    /// `Forwarded: for=client, for="[2001:db8::1]:4711"` (RFC 7239), its `for=` parameters.
    Forwarded,
}

/// The client's IP address behind reverse proxies you trust: an explicit opt-in.
///
/// Anyone can send an `X-Forwarded-For` header, so its content is believed only as far as it was
/// written by a proxy in the trusted list:
/// - a request whose connection does not come from a trusted proxy is keyed by the connection's
///   address, and the header is ignored;
/// - otherwise the header's entries are read from the right (the last proxy's entry) to the left,
///   skipping trusted proxies, and the first untrusted address is the client. Entries further left
///   were written by that client and are never believed (taking the leftmost entry, as some
///   middleware does, lets every client pick its own key and so its own fresh quota);
/// - if every entry is a trusted proxy, the leftmost is the client; if an entry a trusted proxy
///   wrote is not an address, the request has no key.
///
/// IPv6 is grouped by /64 as in [`PeerIp`].
///
/// ```
/// use std::net::{IpAddr, SocketAddr};
/// use ritmo::tower::key::{ForwardedIp, KeyExtractor};
/// let behind_lb = ForwardedIp::trusting(["10.0.0.0/8".parse().unwrap()]);
/// let mut request = http::Request::builder()
///     .header("x-forwarded-for", "6.6.6.6, 203.0.113.9, 10.0.0.7")
///     .body(())
///     .unwrap();
/// request.extensions_mut().insert(SocketAddr::from(([10, 0, 0, 2], 40000)));
/// // 10.0.0.7 and the connection are trusted; 6.6.6.6 was written by the client itself.
/// assert_eq!(behind_lb.extract(&request).unwrap().ip(), "203.0.113.9".parse::<IpAddr>().unwrap());
/// ```
#[derive(Debug, Clone)]
pub struct ForwardedIp {
    trusted: Arc<[IpNet]>,
    header: ForwardedHeader,
    peer: PeerIp,
}

impl ForwardedIp {
    /// Believes `X-Forwarded-For` entries written by proxies in `trusted` (networks, e.g.
    /// `10.0.0.0/8`, or single addresses as `/32` and `/128`).
    pub fn trusting(trusted: impl IntoIterator<Item = IpNet>) -> Self {
        ForwardedIp {
            trusted: trusted.into_iter().collect(),
            header: ForwardedHeader::XForwardedFor,
            peer: PeerIp::new(),
        }
    }

    /// Reads another header (RFC 7239 `Forwarded`) instead of `X-Forwarded-For`.
    #[must_use]
    pub fn header(mut self, header: ForwardedHeader) -> Self {
        self.header = header;
        self
    }

    /// Groups IPv6 clients by a prefix of `bits` (see [`PeerIp::ipv6_prefix`]).
    #[must_use]
    pub fn ipv6_prefix(mut self, bits: u8) -> Self {
        self.peer = self.peer.ipv6_prefix(bits);
        self
    }

    fn is_trusted(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        self.trusted.iter().any(|net| net.contains(&ip))
    }

    /// The client's address from the chain `entries` (left to right, as written; `None` for an
    /// entry that is not an address), with `peer` the connection's address.
    fn client(
        &self,
        peer: IpAddr,
        entries: impl DoubleEndedIterator<Item = Option<IpAddr>>,
    ) -> Option<IpAddr> {
        if !self.is_trusted(peer) {
            return Some(peer);
        }
        let mut leftmost = peer;
        for entry in entries.rev() {
            let ip = entry?;
            if !self.is_trusted(ip) {
                return Some(ip);
            }
            leftmost = ip;
        }
        Some(leftmost)
    }
}

/// One `X-Forwarded-For` hop: `1.2.3.4`, `1.2.3.4:80`, `2001:db8::1`, `[2001:db8::1]:80`,
/// optionally quoted.
fn parse_entry(entry: &str) -> Option<IpAddr> {
    let entry = entry.trim().trim_matches('"');
    if let Ok(ip) = entry.parse::<IpAddr>() {
        return Some(ip);
    }
    if let Ok(addr) = entry.parse::<SocketAddr>() {
        return Some(addr.ip());
    }
    let inner = entry.strip_prefix('[')?;
    inner.split(']').next()?.parse().ok()
}

impl<B> KeyExtractor<Request<B>> for ForwardedIp {
    type Key = IpKey;

    fn extract(&self, request: &Request<B>) -> Option<IpKey> {
        let peer = peer_addr(request)?;
        let name = match self.header {
            ForwardedHeader::XForwardedFor => "x-forwarded-for",
            ForwardedHeader::Forwarded => "forwarded",
        };
        // Every occurrence of the header, in order, is one list.
        let mut entries = Vec::new();
        for value in request.headers().get_all(name) {
            let value = value.to_str().ok()?;
            match self.header {
                ForwardedHeader::XForwardedFor => {
                    entries.extend(value.split(',').map(parse_entry));
                }
                ForwardedHeader::Forwarded => {
                    // A field line that breaks RFC 7239's grammar cannot be read from the right
                    // (a quote may hide separators): no entry of it is believed.
                    let Ok(nodes) = forwarded::for_nodes(value) else {
                        entries.push(None);
                        continue;
                    };
                    // Elements without `for=` say nothing about the client.
                    entries.extend(
                        nodes
                            .into_iter()
                            .flatten()
                            .map(|node| forwarded::node_ip(&node)),
                    );
                }
            }
        }
        let client = self.client(peer, entries.into_iter())?;
        Some(self.peer.key(client))
    }

    fn why_missing(&self, request: &Request<B>) -> Option<&'static str> {
        peer_addr(request).is_none().then_some(NO_PEER_ADDRESS)
    }
}

/// The value of one request header, e.g. an API key; no header, no key.
///
/// ```
/// use ritmo::tower::key::{Header, KeyExtractor};
/// let by_key = Header::new(http::HeaderName::from_static("x-api-key"));
/// let request = http::Request::builder().header("x-api-key", "k-42").body(()).unwrap();
/// assert_eq!(by_key.extract(&request).unwrap(), "k-42");
/// assert!(by_key.extract(&http::Request::new(())).is_none());
/// ```
#[derive(Debug, Clone)]
pub struct Header {
    name: HeaderName,
}

impl Header {
    /// Keys requests by the value of header `name`.
    pub fn new(name: HeaderName) -> Self {
        Header { name }
    }
}

impl<B> KeyExtractor<Request<B>> for Header {
    type Key = HeaderValue;

    fn extract(&self, request: &Request<B>) -> Option<HeaderValue> {
        request.headers().get(&self.name).cloned()
    }
}

/// A key extractor from any `Fn(&Request) -> Option<Key>`: see [`from_fn`].
#[derive(Debug, Clone, Copy)]
pub struct FromFn<F>(F);

/// Keys requests by `f`: return `None` for a request that has no key.
///
/// ```
/// use ritmo::tower::key::{from_fn, KeyExtractor};
/// let by_tenant = from_fn(|r: &http::Request<()>| {
///     r.uri().path().strip_prefix("/t/")?.split('/').next().map(str::to_owned)
/// });
/// let request = http::Request::get("/t/acme/orders").body(()).unwrap();
/// assert_eq!(by_tenant.extract(&request).as_deref(), Some("acme"));
/// ```
pub fn from_fn<F>(f: F) -> FromFn<F> {
    FromFn(f)
}

impl<Req, K, F> KeyExtractor<Req> for FromFn<F>
where
    F: Fn(&Req) -> Option<K> + Clone + Send + Sync + 'static,
{
    type Key = K;

    fn extract(&self, request: &Req) -> Option<K> {
        (self.0)(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(peer: [u8; 4], xff: &[&str]) -> Request<()> {
        let mut builder = Request::builder();
        for value in xff {
            builder = builder.header("x-forwarded-for", *value);
        }
        let mut request = builder.body(()).unwrap();
        request
            .extensions_mut()
            .insert(SocketAddr::from((peer, 1234)));
        request
    }

    fn ip(text: &str) -> IpKey {
        IpKey::new(text.parse().unwrap())
    }

    #[test]
    fn untrusted_peer_ignores_the_header() {
        let x = ForwardedIp::trusting(["10.0.0.0/8".parse().unwrap()]);
        assert_eq!(
            x.extract(&request([1, 2, 3, 4], &["9.9.9.9"])),
            Some(ip("1.2.3.4"))
        );
    }

    #[test]
    fn rightmost_untrusted_entry_across_headers() {
        let x = ForwardedIp::trusting(["10.0.0.0/8".parse().unwrap()]);
        let r = request([10, 0, 0, 1], &["6.6.6.6, 5.5.5.5", "7.7.7.7, 10.1.1.1"]);
        assert_eq!(x.extract(&r), Some(ip("7.7.7.7")));
    }

    #[test]
    fn all_trusted_takes_the_leftmost_and_garbage_from_a_proxy_has_no_key() {
        let x = ForwardedIp::trusting(["10.0.0.0/8".parse().unwrap()]);
        assert_eq!(
            x.extract(&request([10, 0, 0, 1], &["10.2.2.2, 10.3.3.3"])),
            Some(ip("10.2.2.2"))
        );
        assert_eq!(
            x.extract(&request([10, 0, 0, 1], &["1.1.1.1, nonsense"])),
            None
        );
        // Garbage left of the client's entry was written by the client: never read.
        assert_eq!(
            x.extract(&request([10, 0, 0, 1], &["nonsense, 1.1.1.1"])),
            Some(ip("1.1.1.1"))
        );
        // No header at all: the (trusted) connection itself.
        assert_eq!(
            x.extract(&request([10, 0, 0, 1], &[])),
            Some(ip("10.0.0.1"))
        );
    }

    #[test]
    fn forwarded_header_for_parameters() {
        let x = ForwardedIp::trusting(["10.0.0.0/8".parse().unwrap()])
            .header(ForwardedHeader::Forwarded);
        let mut r = Request::builder()
            .header(
                "forwarded",
                "for=6.6.6.6, for=\"[2001:db8:cafe::17]:4711\";proto=https, For=10.9.9.9",
            )
            .body(())
            .unwrap();
        r.extensions_mut()
            .insert(SocketAddr::from(([10, 0, 0, 1], 1)));
        assert_eq!(x.extract(&r), Some(ip("2001:db8:cafe::")));
    }

    #[test]
    fn forwarded_quoted_values_are_read_as_rfc_7239_says() {
        let x = ForwardedIp::trusting(["10.0.0.0/8".parse().unwrap()])
            .header(ForwardedHeader::Forwarded);
        let with = |value: &str| {
            let mut r = Request::builder()
                .header("forwarded", value)
                .body(())
                .unwrap();
            r.extensions_mut()
                .insert(SocketAddr::from(([10, 0, 0, 1], 1)));
            x.extract(&r)
        };
        // A proxy's `host` holding `;` and `,`: neither is a separator inside quotes.
        assert_eq!(
            with(r#"host="a;for=6.6.6.6";for="[2001:db8::1]:4711""#),
            Some(ip("2001:db8::"))
        );
        assert_eq!(
            with(r#"for=192.0.2.7;host="x,for=6.6.6.6""#),
            Some(ip("192.0.2.7"))
        );
        // A field that breaks the grammar is not believed: no key.
        assert_eq!(with(r#"for="[2001:db8::1]:4711"#), None);
        assert_eq!(with("for=[2001:db8::1]:4711"), None);
    }

    #[test]
    fn forwarded_garbage_on_the_clients_own_line_is_never_read() {
        let x = ForwardedIp::trusting(["10.0.0.0/8".parse().unwrap()])
            .header(ForwardedHeader::Forwarded);
        let mut r = Request::builder()
            .header("forwarded", r#"for="unterminated"#)
            .header("forwarded", "for=198.51.100.4, for=10.2.2.2")
            .body(())
            .unwrap();
        r.extensions_mut()
            .insert(SocketAddr::from(([10, 0, 0, 1], 1)));
        assert_eq!(x.extract(&r), Some(ip("198.51.100.4")));
    }

    #[test]
    fn peer_ip_groups_ipv6_and_maps_v4() {
        let key = |addr: &str, bits: u8| {
            let mut r = Request::new(());
            r.extensions_mut()
                .insert(SocketAddr::new(addr.parse().unwrap(), 1));
            PeerIp::<IpKey>::new()
                .ipv6_prefix(bits)
                .extract(&r)
                .unwrap()
        };
        assert_eq!(key("::ffff:1.2.3.4", 64), ip("1.2.3.4"));
        assert_eq!(
            key("2001:db8::1:2:3:4", 48).ip(),
            "2001:db8::".parse::<IpAddr>().unwrap()
        );
        assert_eq!(
            key("2001:db8::1", 128).ip(),
            "2001:db8::1".parse::<IpAddr>().unwrap()
        );
        assert_eq!(key("2001:db8::1", 0).ip(), "::".parse::<IpAddr>().unwrap());
    }
}
