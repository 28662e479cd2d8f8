//! [`Outbound`]: the client's quota and the server's holds, one per key, and the one send loop
//! that the tower layer and the reqwest middleware both run.

use core::future::Future;
use core::time::Duration;
use std::hash::Hash;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use http::{HeaderMap, Method, StatusCode};
use ritmo_core::{AcquireError, Config, RateLimitExceeded, RateLimiter, Reason};
use ritmo_std::KeyedRateLimiter;
use ritmo_tower::{Decision, Permit, Store};
use tokio::time::Instant;

use crate::adopt::Adopted;
use crate::clock::ClientClock;
use crate::error::{Cause, Error, Limited};
use crate::headers::{RATELIMIT_POLICY, announced_policies, has_wait_fields};
use crate::hold::{Holds, later};

/// How long a server's hold may last at most unless set otherwise: one hour.
pub const DEFAULT_MAX_HOLD: Duration = Duration::from_secs(3600);
/// How many keys (hosts) the client tracks at most unless set otherwise.
pub const DEFAULT_MAX_KEYS: usize = 10_000;

/// A request's own `max_wait`, in place of the client's (`Config::max_wait`): how long this one
/// request may wait for a server's hold and a permit of the client's quota before it fails
/// without being sent. Shorter or longer than the client's; it also bounds the wait of a retried
/// `429` (see [`Builder::retry_once`]).
///
/// Put it where each client carries a request's extras:
///
/// - **tower** ([`ClientLayer`](crate::ClientLayer), hyper, tonic): in the request's extensions,
///   `request.extensions_mut().insert(MaxWait(..))`, as tower's own middleware read theirs;
/// - **reqwest** (feature `reqwest`): on reqwest-middleware's request builder,
///   `client.get(url).with_extension(MaxWait(..))`;
/// - **anything else**: [`Outbound::acquire_within`].
///
/// ```
/// use std::time::Duration;
/// use ritmo::client::MaxWait;
///
/// // This request would rather fail at once than wait for the quota or a server's reset.
/// let mut request = http::Request::get("http://api.example/health").body(())?;
/// request.extensions_mut().insert(MaxWait(Duration::ZERO));
/// # Ok::<(), http::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MaxWait(pub Duration);

/// The parts of a request a key is chosen from.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Target<'a> {
    /// The method.
    pub method: &'a Method,
    /// The scheme (`http`, `https`), if the URI has one.
    pub scheme: Option<&'a str>,
    /// The host, from the URI or else the `Host` header (without its port).
    pub host: Option<&'a str>,
    /// The port: the URI's, else the scheme's default (80, 443).
    pub port: Option<u16>,
    /// The path.
    pub path: &'a str,
    /// The request's headers.
    pub headers: &'a HeaderMap,
}

impl<'a> Target<'a> {
    /// A target from its parts.
    pub fn new(
        method: &'a Method,
        scheme: Option<&'a str>,
        host: Option<&'a str>,
        port: Option<u16>,
        path: &'a str,
        headers: &'a HeaderMap,
    ) -> Self {
        Target {
            method,
            scheme,
            host,
            port,
            path,
            headers,
        }
    }
}

/// The default key: the request's `host:port` (lower-case host; a request without a host shares
/// the key `""`).
///
/// ```
/// use http::{HeaderMap, Method};
/// use ritmo::client::{HostKey, Target};
/// let h = HeaderMap::new();
/// let t = Target::new(&Method::GET, Some("https"), Some("API.example"), Some(443), "/", &h);
/// assert_eq!(HostKey::of(&t).as_str(), "api.example:443");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HostKey(String);

/// The port a URI's scheme implies: `http` 80, `https` 443 (`http::Uri` spells both in lower
/// case, however the URI did).
pub(crate) fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        "https" => Some(443),
        "http" => Some(80),
        _ => None,
    }
}

impl HostKey {
    /// The key of a target.
    pub fn of(target: &Target<'_>) -> Self {
        match (target.host, target.port) {
            (Some(h), Some(p)) => HostKey(format!("{}:{p}", h.to_ascii_lowercase())),
            (Some(h), None) => HostKey(h.to_ascii_lowercase()),
            (None, _) => HostKey(String::new()),
        }
    }

    /// `host:port`, the host lower-cased.
    fn new(host: &str, port: u16) -> Self {
        HostKey(format!("{}:{port}", host.to_ascii_lowercase()))
    }

    /// `host:port`.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The key a request to `uri` gets: its host (lower-cased) and its port, else its scheme's
    /// default (`http` 80, `https` 443), as [`HostKey::of`] reads a request.
    ///
    /// ```
    /// use ritmo::client::HostKey;
    /// let uri: http::Uri = "https://API.example/v1/search?q=x".parse()?;
    /// assert_eq!(HostKey::from_uri(&uri)?.as_str(), "api.example:443");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`KeyError`] when the URI has no host, or no port and no scheme that gives one.
    pub fn from_uri(uri: &http::Uri) -> Result<Self, KeyError> {
        let host = uri.host().ok_or(KeyError::NoHost)?;
        if uri.authority().is_some_and(bad_port) {
            return Err(KeyError::Invalid);
        }
        let port = uri.port_u16().or_else(|| default_port(uri.scheme_str()?));
        Ok(HostKey::new(host, port.ok_or(KeyError::NoPort)?))
    }
}

/// `"host:port"` (`"api.example:443"`, `"[::1]:8080"`), or a whole URI with a scheme
/// (`"https://api.example/v1"`, read by [`HostKey::from_uri`]): the key its requests get.
///
/// ```
/// use ritmo::client::{HostKey, KeyError};
/// let key: HostKey = "API.example:443".parse()?;
/// assert_eq!(key.as_str(), "api.example:443");
/// assert_eq!("https://api.example/v1".parse::<HostKey>()?, key);
/// assert_eq!("api.example".parse::<HostKey>(), Err(KeyError::NoPort));
/// # Ok::<(), KeyError>(())
/// ```
impl core::str::FromStr for HostKey {
    type Err = KeyError;

    fn from_str(text: &str) -> Result<Self, KeyError> {
        if text.is_empty() {
            return Err(KeyError::Empty);
        }
        if text.contains("://") {
            let uri = text.parse::<http::Uri>().map_err(|_| KeyError::Invalid)?;
            return HostKey::from_uri(&uri);
        }
        let authority = text.parse::<http::uri::Authority>();
        let authority = authority.map_err(|_| KeyError::Invalid)?;
        if authority.as_str().contains('@') || bad_port(&authority) {
            return Err(KeyError::Invalid);
        }
        let port = authority.port_u16().ok_or(KeyError::NoPort)?;
        if authority.host().is_empty() {
            return Err(KeyError::NoHost);
        }
        Ok(HostKey::new(authority.host(), port))
    }
}

/// Whether an authority has a `:` after its host but no port in `1..=65535` (`:99999`, `:`).
fn bad_port(authority: &http::uri::Authority) -> bool {
    let text = authority.as_str();
    let after_host = text
        .rfind(authority.host())
        .map_or("", |at| &text[at + authority.host().len()..]);
    after_host.starts_with(':') && authority.port_u16().is_none_or(|p| p == 0)
}

impl TryFrom<&str> for HostKey {
    type Error = KeyError;

    /// As [`str::parse`] reads it (`"host:port"` or a URI with a scheme).
    fn try_from(text: &str) -> Result<Self, KeyError> {
        text.parse()
    }
}

impl TryFrom<&http::Uri> for HostKey {
    type Error = KeyError;

    /// As [`HostKey::from_uri`] reads it.
    fn try_from(uri: &http::Uri) -> Result<Self, KeyError> {
        HostKey::from_uri(uri)
    }
}

impl core::fmt::Display for HostKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Why a text or a URI names no [`HostKey`]; each has a stable code ([`KeyError::code`]), which
/// its `Display` begins with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum KeyError {
    /// `RITMO-CLI-001`: the text is empty.
    Empty,
    /// `RITMO-CLI-002`: not a `host:port` nor a URI (spaces, a user name, a bad port, ...).
    Invalid,
    /// `RITMO-CLI-003`: no host (a relative URI such as `/v1/search`).
    NoHost,
    /// `RITMO-CLI-004`: no port, and no `http`/`https` scheme to give its default.
    NoPort,
}

impl KeyError {
    /// The stable code: `"RITMO-CLI-001"` to `"RITMO-CLI-004"`.
    pub const fn code(&self) -> &'static str {
        match self {
            KeyError::Empty => "RITMO-CLI-001",
            KeyError::Invalid => "RITMO-CLI-002",
            KeyError::NoHost => "RITMO-CLI-003",
            KeyError::NoPort => "RITMO-CLI-004",
        }
    }
}

impl core::fmt::Display for KeyError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let what = match self {
            KeyError::Empty => "an empty text names no host",
            KeyError::Invalid => {
                "not a `host:port` (`api.example:443`) nor a URI (`https://api.example/`)"
            }
            KeyError::NoHost => "no host: a key needs `host:port` or an absolute URI",
            KeyError::NoPort => {
                "no port: write `host:port`, or a URI whose scheme is http or https"
            }
        };
        write!(f, "{}: {what}", self.code())
    }
}

impl std::error::Error for KeyError {}

type KeyFn<K> = dyn Fn(&Target<'_>) -> K + Send + Sync;

/// How a request's key is found: one key for every request (nothing of the request is read), or
/// a function of its [`Target`].
enum KeyOf<K> {
    Fixed(K),
    Of(Box<KeyFn<K>>),
}

/// Counts of what the client did, since it was built ([`Outbound::stats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Requests sent (retries included).
    pub sent: u64,
    /// Requests that waited for a slot of the client's own quota.
    pub waited_local: u64,
    /// Requests that waited for a server's hold to end.
    pub waited_server: u64,
    /// Requests refused because the client's quota had no permit within `max_wait`.
    pub limited_local: u64,
    /// Requests refused because a server's hold lasts beyond `max_wait`.
    pub limited_server: u64,
    /// Responses that set or extended a hold.
    pub holds: u64,
    /// `429`s sent again once.
    pub retried: u64,
}

#[derive(Debug, Default)]
struct Counters {
    sent: AtomicU64,
    waited_local: AtomicU64,
    waited_server: AtomicU64,
    limited_local: AtomicU64,
    limited_server: AtomicU64,
    holds: AtomicU64,
    retried: AtomicU64,
}

fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

/// The client's own quota when every request has the same key ([`Outbound::global`]): one
/// limiter, no map to look the key up in (measured, 75 instructions fewer a request through the
/// `ClientLayer`, benches/RESULTS.md). Every quota is taken through the server layer's trait,
/// [`Store`](crate::ritmo::tower::Store), its permits owning the limiter (held across `.await`).
pub type OneQuota = Arc<RateLimiter<ClientClock>>;

/// The client's own quota with one state per key ([`Outbound::per_host`],
/// [`Outbound::keyed_by`]).
pub type PerKey<K> = Arc<KeyedRateLimiter<K, ClientClock>>;

/// Makes a client's quota: from its id, config, `max_keys` and clock.
type MakeQuota<Q> = Box<dyn FnOnce(&'static str, Config, usize, ClientClock) -> Q + Send + Sync>;

struct Inner<K: 'static, Q> {
    limiter: Q,
    id: &'static str,
    config: Config,
    holds: Holds<K>,
    key: KeyOf<K>,
    max_wait: Duration,
    retry: Retry,
    adopted: Option<Adopted<K>>,
    counters: Counters,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Retry {
    Never,
    Idempotent,
    AnyMethod,
}

/// Builds an [`Outbound`]: its quota, how keys are chosen, the cap on holds, retries.
#[must_use]
pub struct Builder<K, Q = PerKey<K>> {
    make: MakeQuota<Q>,
    id: &'static str,
    config: Config,
    key: KeyOf<K>,
    max_keys: usize,
    max_hold: Duration,
    retry: Retry,
    adopt: bool,
}

impl<K, Q> core::fmt::Debug for Builder<K, Q> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Builder")
            .field("id", &self.id)
            .field("config", &self.config)
            .field("max_keys", &self.max_keys)
            .field("max_hold", &self.max_hold)
            .field("retry", &self.retry)
            .field("adopt", &self.adopt)
            .finish_non_exhaustive()
    }
}

impl<K: Hash + Eq + Clone + Send + Sync + 'static, Q: Store<Key = K>> Builder<K, Q> {
    fn new(id: &'static str, config: Config, key: KeyOf<K>, make: MakeQuota<Q>) -> Self {
        Builder {
            make,
            id,
            config,
            key,
            max_keys: DEFAULT_MAX_KEYS,
            max_hold: DEFAULT_MAX_HOLD,
            retry: Retry::Never,
            adopt: false,
        }
    }

    /// Adopts a policy a server announces (`RateLimit-Policy: "name";q=..;w=..`) as an extra
    /// quota of the key, when it is stricter than the client's own (off by default). Announced
    /// again with other numbers, it is reconfigured (no fresh burst); announced as no stricter,
    /// it is dropped. At most [`MAX_POLICIES`](crate::MAX_POLICIES) per key.
    pub fn adopt_policies(mut self, on: bool) -> Self {
        self.adopt = on;
        self
    }

    /// The longest hold a server can impose (default [`DEFAULT_MAX_HOLD`], one hour): a longer
    /// one is cut to it, with a `tracing` event.
    pub fn max_hold(mut self, max_hold: Duration) -> Self {
        self.max_hold = max_hold;
        self
    }

    /// How many keys the quota and the holds track at most (default [`DEFAULT_MAX_KEYS`]); a new
    /// key beyond them, while every key is still limited, is refused (`Reason::KeyCapacity`).
    pub fn max_keys(mut self, max_keys: usize) -> Self {
        self.max_keys = max_keys.max(1);
        self
    }

    /// Sends a `429` again, once, after the server's wait if it ends within `max_wait`: for
    /// idempotent methods only (`GET`, `HEAD`, `OPTIONS`, `TRACE`, `PUT`, `DELETE`), and only
    /// when the request can be copied before it is sent. Off by default.
    pub fn retry_once(mut self, on: bool) -> Self {
        self.retry = if on { Retry::Idempotent } else { Retry::Never };
        self
    }

    /// Like [`retry_once`](Self::retry_once), for every method: say so only when your `POST`s
    /// may safely arrive twice.
    pub fn retry_once_any_method(mut self) -> Self {
        self.retry = Retry::AnyMethod;
        self
    }

    /// The client: clone it freely (one shared quota and one set of holds).
    ///
    /// Tests that pause tokio's clock (`start_paused = true`, `tokio::time::pause`) build it
    /// after pausing it (in the test's runtime): a client built while tokio's clock stands still
    /// reads tokio's clock, so its quota follows `tokio::time::advance`, from the runtime's time;
    /// one built while it runs reads the CPU's counter (a few instructions a request).
    pub fn build(self) -> Outbound<K, Q> {
        let clock = ClientClock::new();
        let limiter = (self.make)(self.id, self.config, self.max_keys, clock.clone());
        let adopted = self
            .adopt
            .then(|| Adopted::new(self.id, self.config, clock, self.max_keys));
        Outbound {
            inner: Arc::new(Inner {
                limiter,
                id: self.id,
                config: self.config,
                holds: Holds::new(self.max_hold, self.max_keys),
                key: self.key,
                max_wait: self.config.max_wait(),
                retry: self.retry,
                adopted,
                counters: Counters::default(),
            }),
        }
    }
}

/// A client's rate limiting: its own quota per key and the holds its servers asked for.
///
/// # The rules, in the order a request meets them
///
/// `max_wait` below is the client's (its `Config`'s), or the request's own [`MaxWait`].
///
/// 1. **Key.** The request's key: its `host:port` ([`HostKey`], the default), one global key, or
///    any function of the request ([`Target`]).
/// 2. **Server hold.** If a server asked this key to wait, the request waits until that wait
///    ends, if it ends within `max_wait` of the request's start; otherwise it is refused at once
///    with [`Cause::ServerHold`] and `retry_after` = what is left of the server's wait.
/// 3. **Local quota.** Then it takes a permit of the client's own quota (ritmo's GCRA, one per
///    key) and of every policy adopted for the key, waiting for the latest slot within what is
///    left of `max_wait`; otherwise it is refused at once with [`Cause::LocalQuota`] and the
///    refusing quota's `retry_after`, and every permit taken goes back.
/// 4. If a server's hold for the key began while the request waited for its slot, the slot is
///    given back and the request goes back to step 2: nothing is ever sent while its key is held.
/// 5. **Send**, and read the response ([`headers::server_wait`](crate::headers::server_wait)):
///    a wait the server asks for holds the key from the moment the response arrives, capped at
///    `max_hold` (default one hour). Holds only add waiting: the server can never make the client
///    send faster than its own quota.
/// 6. **Retry once** (off by default): a `429` whose hold ends within `max_wait` is sent again,
///    once, through steps 2 to 5, for idempotent methods (`GET`, `HEAD`, `OPTIONS`, `TRACE`,
///    `PUT`, `DELETE`) or any method when allowed, and only when the request can be copied
///    before it is sent. If the second try is refused locally, the first `429` is returned.
///
/// A request future dropped while it waits gives its permit back (the tail rule of ritmo's
/// reservations) and sends nothing.
///
/// With [`Builder::adopt_policies`], a policy `q` per `w` that a server announces in
/// `RateLimit-Policy` becomes an extra quota of the key that received it (step 3), if it is
/// stricter than the client's own (a lower rate, or the same rate with a smaller burst). One
/// ritmo limiter per policy name; announced again with other numbers it is `reconfigure`d
/// (the permits available become `min(available, new permits)`: no fresh burst), announced as
/// no stricter it is dropped; at most [`MAX_POLICIES`](crate::MAX_POLICIES) per key.
///
/// # Use
///
/// Cheap to clone: every clone shares the quota and the holds. Hand it to
/// [`ClientLayer`](crate::ClientLayer) (tower) or, with feature `reqwest`, to
/// `reqwest::RateLimitMiddleware`; or use [`acquire`](Self::acquire) and
/// [`observe`](Self::observe) around any other client.
///
/// ```
/// use std::time::Duration;
/// use http::{HeaderMap, HeaderValue, StatusCode, header::RETRY_AFTER};
/// use ritmo::Config;
/// use ritmo::client::{Cause, HostKey, Outbound};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// // 10 requests per second to each host, waiting up to 2 s for a slot.
/// let config = Config::new(10, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(2));
/// let client = Outbound::per_host("search-api", config).build();
/// let key = HostKey::of(&ritmo::client::Target::new(
///     &http::Method::GET, Some("http"), Some("search.example"), Some(80), "/", &HeaderMap::new(),
/// ));
/// client.acquire(&key).await?;
/// // The server answers 429, Retry-After: 5: the key is held for 5 s, beyond max_wait.
/// let mut headers = HeaderMap::new();
/// headers.insert(RETRY_AFTER, HeaderValue::from_static("5"));
/// assert_eq!(client.observe(&key, StatusCode::TOO_MANY_REQUESTS, &headers), Some(Duration::from_secs(5)));
/// let refused = client.acquire(&key).await.unwrap_err();
/// assert_eq!(refused.cause(), Cause::ServerHold);
/// assert_eq!(refused.retry_after(), Duration::from_secs(5));
/// # Ok(())
/// # }
/// ```
///
/// `Q` is the quota's store: [`PerKey`] (the default), [`OneQuota`] for
/// [`global`](Outbound::global), or any other [`Store`](crate::ritmo::tower::Store), the same
/// trait the server layer takes: any kind, Redis included ([`with_quota`](Outbound::with_quota)).
pub struct Outbound<K: 'static, Q = PerKey<K>> {
    inner: Arc<Inner<K, Q>>,
}

impl<K, Q> Clone for Outbound<K, Q> {
    fn clone(&self) -> Self {
        Outbound {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<K, Q> core::fmt::Debug for Outbound<K, Q> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Outbound")
            .field("id", &self.inner.id)
            .field("config", &self.inner.config)
            .field("retry", &self.inner.retry)
            .finish_non_exhaustive()
    }
}

impl Outbound<HostKey> {
    /// One quota per `host:port` (the default), each allowing `config`.
    pub fn per_host(id: &'static str, config: Config) -> Builder<HostKey> {
        Outbound::keyed_by(id, config, HostKey::of)
    }
}

impl Outbound<(), OneQuota> {
    /// One quota for every request, whatever its host.
    pub fn global(id: &'static str, config: Config) -> Builder<(), OneQuota> {
        let one = |id, config, _, clock| Arc::new(RateLimiter::with_clock(id, config, clock));
        Builder::new(id, config, KeyOf::Fixed(()), Box::new(one))
    }
}

/// How long from `start` to `deadline` is left at `now`, never negative.
fn left(deadline: Instant, now: Instant) -> Duration {
    deadline.saturating_duration_since(now)
}

impl<K: Hash + Eq + Clone + Send + Sync + 'static> Outbound<K> {
    /// One quota per key, the key any function of the request (an API key header, a tenant).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ritmo::client::{Outbound, Target};
    /// let config = ritmo::Config::new(5, Duration::from_secs(1)).unwrap();
    /// let by_tenant = Outbound::keyed_by("tenants", config, |t: &Target<'_>| {
    ///     t.headers.get("x-tenant").map(|v| v.as_bytes().to_vec())
    /// }).build();
    /// # let _ = by_tenant;
    /// ```
    pub fn keyed_by(
        id: &'static str,
        config: Config,
        key: impl Fn(&Target<'_>) -> K + Send + Sync + 'static,
    ) -> Builder<K> {
        let per_key = |id, config, max_keys, clock| {
            Arc::new(KeyedRateLimiter::with_clock(id, config, max_keys, clock))
        };
        Builder::new(id, config, KeyOf::Of(Box::new(key)), Box::new(per_key))
    }
}

impl<K: Hash + Eq + Clone + Send + Sync + 'static, Q: Store<Key = K>> Outbound<K, Q> {
    /// A client over `quota`: the same [`Store`](crate::ritmo::tower::Store) the server layer
    /// takes, any kind (an `Arc` or `&'static` of a limiter, a `Bands`, a keyed limiter tiered
    /// or not) and Redis included (`ritmo::redis::RedisRateLimiter`, a quota shared by every
    /// process that calls the dependency). The key of a request is any function of it (`|_| ()`
    /// for one quota). `config` gives the client's `max_wait` and what [`config`](Self::config)
    /// reports; the quota keeps its own numbers and clock.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use ritmo::{Bands, Config, ManualClock};
    /// use ritmo::client::{Cause, Outbound, Target};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// // 2 per second and 3 per minute, together.
    /// let second = Config::new(2, Duration::from_secs(1))?;
    /// let bands = Arc::new(Bands::new("api", [second, Config::new(3, Duration::from_secs(60))?], ManualClock::new()));
    /// let client = Outbound::with_quota("api", second, bands, |_: &Target<'_>| ()).build();
    /// client.acquire(&()).await?;
    /// client.acquire(&()).await?;
    /// let refused = client.acquire(&()).await.unwrap_err(); // the second's band is spent
    /// assert_eq!(refused.cause(), Cause::LocalQuota);
    /// # Ok(())
    /// # }
    /// ```
    pub fn with_quota(
        id: &'static str,
        config: Config,
        quota: Q,
        key: impl Fn(&Target<'_>) -> K + Send + Sync + 'static,
    ) -> Builder<K, Q> {
        let key = KeyOf::Of(Box::new(key));
        Builder::new(id, config, key, Box::new(|_, _, _, _| quota))
    }

    /// The key of a request.
    pub fn key_of(&self, target: &Target<'_>) -> K {
        self.key_with(|| *target)
    }

    /// The key of a request whose [`Target`] `target` reads, read only if the key depends on it.
    pub(crate) fn key_with<'a>(&self, target: impl FnOnce() -> Target<'a>) -> K {
        match &self.inner.key {
            KeyOf::Fixed(key) => key.clone(),
            KeyOf::Of(key) => key(&target()),
        }
    }

    /// Takes a permit for `key` now, for a request that will not be retried, if nothing could
    /// make it wait or change its course: no hold on any key, no adopted policy, a permit of the
    /// client's quota there at once. `false` (nothing taken) sends it through [`run`](Self::run),
    /// as it does every request of a store without such a path (`Store::take`: Redis).
    /// What [`acquire`](Self::acquire) does when it neither waits nor is refused.
    #[inline]
    pub(crate) fn take_now(&self, key: &K) -> bool {
        let inner = &*self.inner;
        if inner.adopted.is_some() || !inner.holds.none_held() {
            return false;
        }
        if !matches!(inner.limiter.take(key, 1), Some(Ok(()))) {
            return false;
        }
        bump(&inner.counters.sent);
        true
    }

    /// The client's own quota (the config it was built with).
    pub fn config(&self) -> Config {
        self.inner.config
    }

    /// How long `key` is still held by its server (`None` when it is not held).
    pub fn held_for(&self, key: &K) -> Option<Duration> {
        let now = Instant::now();
        self.inner.holds.until(key, now).map(|end| left(end, now))
    }

    /// How many keys are held by their servers right now.
    pub fn keys_held(&self) -> usize {
        self.inner.holds.held(Instant::now())
    }

    /// What the client did so far.
    pub fn stats(&self) -> Stats {
        let c = &self.inner.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        Stats {
            sent: get(&c.sent),
            waited_local: get(&c.waited_local),
            waited_server: get(&c.waited_server),
            limited_local: get(&c.limited_local),
            limited_server: get(&c.limited_server),
            holds: get(&c.holds),
            retried: get(&c.retried),
        }
    }

    /// Waits until a request for `key` may be sent now: the server's hold, then a permit of the
    /// client's quota, all within `max_wait` (see the [rules](Outbound)). Send the request as
    /// soon as this returns `Ok`. Dropped while it waits, it gives its permit back.
    pub async fn acquire(&self, key: &K) -> Result<(), Limited> {
        self.acquire_within(key, self.inner.max_wait).await
    }

    /// [`acquire`](Self::acquire) with this request's own `max_wait` in place of the client's
    /// (what [`MaxWait`] does through the layer and the middleware).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ritmo::Config;
    /// use ritmo::client::{Cause, Outbound};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let config = Config::new(1, Duration::from_secs(1))?.with_max_wait(Duration::from_secs(5));
    /// let client = Outbound::global("api", config).build();
    /// client.acquire(&()).await?; // the burst of one
    /// // The next slot is 1 s away: within the client's 5 s, not within this request's 100 ms.
    /// let refused = client.acquire_within(&(), Duration::from_millis(100)).await.unwrap_err();
    /// assert_eq!(refused.cause(), Cause::LocalQuota);
    /// client.acquire(&()).await?; // waits the second
    /// # Ok(())
    /// # }
    /// ```
    pub async fn acquire_within(&self, key: &K, max_wait: Duration) -> Result<(), Limited> {
        let inner = &*self.inner;
        let start = Instant::now();
        let deadline = later(start, max_wait);
        let (mut waited_local, mut waited_server) = (false, false);
        let mut now = start;
        loop {
            if let Some(end) = inner.holds.until(key, now) {
                if end > deadline {
                    bump(&inner.counters.limited_server);
                    let error = RateLimitExceeded::from_parts(
                        inner.id,
                        Reason::NoPermitInTime,
                        left(end, now),
                    );
                    return Err(Limited::new(error, Cause::ServerHold));
                }
                if !waited_server {
                    waited_server = true;
                    bump(&inner.counters.waited_server);
                }
                tokio::time::sleep_until(end).await;
                now = Instant::now();
                continue;
            }
            let budget = left(deadline, now);
            let reservation = self.reserve(&inner.limiter, key, budget).await?;
            let bands = match &inner.adopted {
                Some(adopted) => adopted.limiters(key),
                None => Vec::new(),
            };
            let mut extra = Vec::with_capacity(bands.len());
            for band in &bands {
                // Every permit taken so far goes back with `extra` and `reservation` if refused.
                extra.push(self.reserve(band, &(), budget).await?);
            }
            let mut slept = false;
            loop {
                let wait = extra
                    .iter()
                    .map(Permit::remaining)
                    .fold(reservation.remaining(), Duration::max);
                if wait.is_zero() {
                    break;
                }
                if !waited_local {
                    waited_local = true;
                    bump(&inner.counters.waited_local);
                }
                tokio::time::sleep(wait).await;
                slept = true;
            }
            if slept {
                now = Instant::now();
                if inner.holds.until(key, now).is_some() {
                    // A hold began while this request waited for its slot: give the slots back
                    // (each returns only if no later request reserved behind it) and wait.
                    drop(extra);
                    drop(reservation);
                    continue;
                }
            }
            reservation.commit();
            extra.into_iter().for_each(Permit::commit);
            return Ok(());
        }
    }

    /// A permit of `store` (the client's quota or an adopted policy) for `key`, its slot within
    /// `budget`: decided at once in process, after the round trip for a remote store.
    async fn reserve<S: Store>(
        &self,
        store: &S,
        key: &S::Key,
        budget: Duration,
    ) -> Result<S::Permit, Limited> {
        let decided = match store.acquire(key, 1, Some(budget)) {
            Decision::Now(decided) => decided,
            Decision::Later(round_trip) => round_trip.await,
        };
        decided
            .map(|grant| grant.permit)
            .map_err(|denial| self.local_refusal(denial.error))
    }

    /// A refusal of the client's own quota (or of an adopted policy).
    fn local_refusal(&self, error: AcquireError) -> Limited {
        bump(&self.inner.counters.limited_local);
        let error = match error {
            AcquireError::RateLimited(e) => e,
            // One permit never exceeds a valid config's burst; kept total all the same.
            _ => RateLimitExceeded::from_parts(
                self.inner.id,
                Reason::NoPermitInTime,
                self.inner.config.period(),
            ),
        };
        Limited::new(error, Cause::LocalQuota)
    }

    /// Reads a response for `key`: if its server asks to wait, holds the key until then (capped
    /// at `max_hold`, never shortening a longer hold already running), and with
    /// [`Builder::adopt_policies`] adopts its stricter announced policies. Returns the wait it
    /// asked for, after the cap (`None` if it asked for none, or its values were ignored).
    pub fn observe(&self, key: &K, status: StatusCode, headers: &HeaderMap) -> Option<Duration> {
        // A response without any header field says nothing (a bare 429 asks for no particular
        // wait): no lookup of each field's name.
        if headers.is_empty() {
            return None;
        }
        if let Some(adopted) = &self.inner.adopted
            && headers.contains_key(&RATELIMIT_POLICY)
        {
            adopted.announce(key, &announced_policies(headers));
        }
        // Most responses carry none of the fields: no wall-clock read for them.
        if status != StatusCode::TOO_MANY_REQUESTS
            && status != StatusCode::SERVICE_UNAVAILABLE
            && !has_wait_fields(headers)
            && !crate::grpc::exhausted(headers)
        {
            return None;
        }
        let wall = SystemTime::now();
        let http = crate::headers::server_wait(status, headers, wall);
        // gRPC's refusal (HTTP 200, `grpc-status: 8`): see `grpc`.
        let wait = http.max(crate::grpc::grpc_wait(headers, wall))?;
        let now = Instant::now();
        self.inner.holds.hold(key, wait, now)?;
        bump(&self.inner.counters.holds);
        Some(wait.min(self.inner.holds.max_hold()))
    }

    /// Whether a request with this method may be copied for a retry.
    pub(crate) fn may_retry(&self, method: &Method) -> bool {
        match self.inner.retry {
            Retry::Never => false,
            Retry::AnyMethod => true,
            Retry::Idempotent => matches!(
                *method,
                Method::GET
                    | Method::HEAD
                    | Method::OPTIONS
                    | Method::TRACE
                    | Method::PUT
                    | Method::DELETE
            ),
        }
    }

    /// The client's `max_wait`, or the request's own.
    pub(crate) fn max_wait(&self, own: Option<&MaxWait>) -> Duration {
        own.map_or(self.inner.max_wait, |m| m.0)
    }

    /// The one send loop: acquire, send, observe, and maybe retry a `429` once with `replay`;
    /// each wait within `max_wait` (the client's, or the request's own).
    pub(crate) async fn run<Req, T: Transport<Req>>(
        &self,
        key: K,
        request: Req,
        replay: Option<Req>,
        max_wait: Duration,
        transport: &mut T,
    ) -> Result<T::Response, Error<T::Error>> {
        self.acquire_within(&key, max_wait).await?;
        bump(&self.inner.counters.sent);
        let response = transport.send(request).await.map_err(Error::Service)?;
        let status = response.status();
        let hold = self.observe(&key, status, response.headers());
        let Some(again) = replay else {
            return Ok(response);
        };
        match hold {
            Some(wait) if status == StatusCode::TOO_MANY_REQUESTS && wait <= max_wait => {}
            _ => return Ok(response),
        }
        if self.acquire_within(&key, max_wait).await.is_err() {
            return Ok(response);
        }
        bump(&self.inner.counters.retried);
        bump(&self.inner.counters.sent);
        drop(response);
        let response = transport.send(again).await.map_err(Error::Service)?;
        self.observe(&key, response.status(), response.headers());
        Ok(response)
    }
}

/// What the send loop needs of a response.
pub(crate) trait ResponseView {
    fn status(&self) -> StatusCode;
    fn headers(&self) -> &HeaderMap;
}

impl<B> ResponseView for http::Response<B> {
    fn status(&self) -> StatusCode {
        http::Response::status(self)
    }
    fn headers(&self) -> &HeaderMap {
        http::Response::headers(self)
    }
}

/// What the send loop needs of a client: send one request.
pub(crate) trait Transport<Req> {
    type Response: ResponseView;
    type Error;
    fn send(
        &mut self,
        request: Req,
    ) -> impl Future<Output = Result<Self::Response, Self::Error>> + Send + '_;
}
