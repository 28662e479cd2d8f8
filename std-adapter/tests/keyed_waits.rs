//! The std keyed limiter's waits (blocking, interrupted, tokio) and its IP keys.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use ritmo_core::{Config, Reason};
use ritmo_std::prelude::*;
use ritmo_std::{Interrupt, IpKey, KeyedRateLimiter};

fn config(permits: u32, period_ms: u64, max_wait_ms: u64) -> Config {
    Config::new(permits, Duration::from_millis(period_ms))
        .unwrap()
        .with_max_wait(Duration::from_millis(max_wait_ms))
}

#[test]
fn blocking_acquire_parks_until_the_keys_slot_and_other_keys_do_not_wait() {
    let limiter = KeyedRateLimiter::new("park", config(1, 30, 100), 10);
    limiter.acquire(&"a").unwrap();
    limiter.acquire(&"b").unwrap(); // another key: its own burst, no wait
    assert!(limiter.retry_after(&"a") > Duration::ZERO); // a must wait for its next permit...
    limiter.acquire(&"a").unwrap(); // ...so this parks until its slot, then takes it
    assert!(limiter.try_acquire(&"a").is_err());
    assert_eq!(limiter.call(&"c", || 7), Ok(7));
    assert!(limiter.acquire_n(&"a", 2).is_err()); // more than the burst
}

/// The waits are written once for the one keyed type: the heap-free table on a std clock parks
/// as the map does.
#[test]
fn the_fixed_table_parks_as_the_map_does() {
    use ritmo_core::keyed::KeyedLimiter;
    let table: KeyedLimiter<&str, ritmo_std::StdClock, 4> =
        KeyedLimiter::with_clock("table", config(1, 30, 100), ritmo_std::StdClock::new(), 0);
    table.acquire(&"a").unwrap();
    assert!(table.retry_after(&"a") > Duration::ZERO);
    table.acquire(&"a").unwrap(); // parks until its slot
    assert!(table.try_acquire(&"a").is_err());
    assert_eq!(table.call(&"b", || 7), Ok(7));
    assert!(table.acquire_n(&"a", 2).is_err()); // more than the burst
}

#[test]
fn an_interrupted_wait_returns_the_keys_permit() {
    let limiter = KeyedRateLimiter::new("interrupt", config(1, 60_000, 120_000), 10);
    limiter.try_acquire(&1u32).unwrap();
    std::thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::channel();
        let limiter = &limiter;
        let waiter = s.spawn(move || {
            tx.send(Interrupt::current()).unwrap();
            let result = limiter.acquire(&1);
            Interrupt::current().clear();
            result
        });
        let token = rx.recv().unwrap();
        while limiter.retry_after(&1) < Duration::from_secs(61) {
            std::thread::yield_now(); // until the waiter has reserved its slot
        }
        token.interrupt();
        assert_eq!(
            waiter.join().unwrap().unwrap_err().reason(),
            Reason::Interrupted
        );
    });
    // Its slot went back: the next permit is a minute away again, not two.
    assert!(limiter.retry_after(&1) <= Duration::from_secs(60));
}

#[cfg(feature = "tokio")]
mod tokio_waits {
    use super::*;
    use ritmo_std::TokioClock;

    #[tokio::test(start_paused = true)]
    async fn async_waits_sleep_per_key_and_a_dropped_wait_returns_its_permit() {
        let limiter =
            KeyedRateLimiter::with_clock("async", config(1, 100, 1_000), 10, TokioClock::new());
        let start = tokio::time::Instant::now();
        limiter.acquire_async(&"a").await.unwrap();
        limiter.acquire_async(&"b").await.unwrap();
        assert_eq!(start.elapsed(), Duration::ZERO);
        limiter.acquire_async(&"a").await.unwrap();
        assert_eq!(start.elapsed(), Duration::from_millis(100));
        // A wait dropped before its slot gives the permit back.
        let waiting =
            tokio::time::timeout(Duration::from_millis(10), limiter.acquire_async(&"a")).await;
        assert!(waiting.is_err());
        assert_eq!(limiter.retry_after(&"a"), Duration::from_millis(90));
        assert_eq!(limiter.call_async(&"c", async { 3 }).await, Ok(3));
        assert!(limiter.acquire_n_async(&"a", 2).await.is_err());
    }
}

#[test]
fn ip_keys_take_ipv4_whole_ipv6_by_prefix_and_unwrap_mapped_addresses() {
    let v4 = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1));
    let mapped: IpAddr = "::ffff:192.0.2.1".parse().unwrap();
    assert_eq!(IpKey::from(v4), IpKey::from(mapped));
    assert_eq!(IpKey::from(v4), IpKey::from(SocketAddr::new(mapped, 443)));
    assert!(IpKey::from(mapped).is_ipv4());
    assert_ne!(
        IpKey::from(v4),
        IpKey::from(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2)))
    );

    let a: IpAddr = "2001:db8:aa:bb:1:2:3:4".parse().unwrap();
    let same64: IpAddr = "2001:db8:aa:bb:ffff::".parse().unwrap();
    let next64: IpAddr = "2001:db8:aa:bc::1".parse().unwrap();
    assert_eq!(IpKey::from(a), IpKey::from(same64));
    assert_ne!(IpKey::from(a), IpKey::from(next64));
    assert_eq!(IpKey::from(a).to_string(), "2001:db8:aa:bb::");
    assert_eq!(
        IpKey::with_ipv6_prefix(a, 56),
        IpKey::with_ipv6_prefix(next64, 56)
    );
    assert_ne!(
        IpKey::with_ipv6_prefix(a, 128),
        IpKey::with_ipv6_prefix(same64, 128)
    );
    // Out-of-range prefixes are clamped, 0 puts every IPv6 address in one key.
    assert_eq!(
        IpKey::with_ipv6_prefix(a, 200),
        IpKey::with_ipv6_prefix(a, 128)
    );
    assert_eq!(
        IpKey::with_ipv6_prefix(a, 0),
        IpKey::from(Ipv6Addr::UNSPECIFIED)
    );
    assert_eq!(
        IpKey::with_ipv6_prefix(a, 0).ip(),
        IpAddr::V6(Ipv6Addr::UNSPECIFIED)
    );
    // An IPv6 address whose /64 is all zero never meets an IPv4 key.
    let low: IpAddr = "::1".parse().unwrap();
    assert!(!IpKey::from(low).is_ipv4());
    assert_ne!(
        IpKey::from(low),
        IpKey::from(IpAddr::V4(Ipv4Addr::new(0, 0, 0, 1)))
    );
    assert_eq!(std::mem::size_of::<IpKey>(), 16);
}

#[test]
fn a_rotating_ipv6_host_shares_one_quota() {
    let limiter = KeyedRateLimiter::new("v6", config(3, 60_000, 0), 100);
    for host in 1..=3u16 {
        let ip = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 1, 2, 0, 0, 0, host));
        limiter.try_acquire(&IpKey::from(ip)).unwrap();
    }
    let fresh = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 1, 2, 9, 9, 9, 9));
    assert_eq!(
        limiter
            .try_acquire(&IpKey::from(fresh))
            .unwrap_err()
            .reason(),
        Reason::NoPermitInTime
    );
}
