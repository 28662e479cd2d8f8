//! Per-client limiting, simulated: clients on a fake clock hit an API limited per IP address,
//! and the example prints who is limited each second.
//!
//! - eight well-behaved clients make one request a second: never limited;
//! - two scrapers make twenty a second: limited to the quota (5 a second after a burst of 5);
//! - one IPv6 host rotates through fresh addresses in its `/64` on every request: the key is its
//!   `/64`, so rotating buys it nothing;
//! - in second 3 a flood of 5,000 never-seen addresses arrives against `max_keys = 1,000`: the
//!   map fills, the rest are refused for want of room (`KeyCapacity`), and the clients already
//!   being limited stay limited (a flood cannot buy them a fresh burst).
//!
//! Run: `cargo run --example keyed`

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use ritmo::server::{IpKey, KeyedRateLimiter};
use ritmo::{Config, ManualClock, Reason};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let clock = ManualClock::new();
    let per_ip = KeyedRateLimiter::with_clock(
        "api",
        Config::new(5, Duration::from_secs(1))?,
        1_000,
        &clock,
    );

    let polite: Vec<IpAddr> = (1..=8)
        .map(|i| IpAddr::V4(Ipv4Addr::new(198, 51, 100, i)))
        .collect();
    let scrapers = [
        IpAddr::V4(Ipv4Addr::new(203, 0, 113, 7)),
        "::ffff:203.0.113.8".parse()?,
    ];
    let rotating_prefix = Ipv6Addr::new(0x2001, 0xdb8, 0xbad, 0x1, 0, 0, 0, 0);

    for second in 0..5u32 {
        // (admitted, limited) per client label, this second.
        let mut tally: BTreeMap<String, (u32, u32)> = BTreeMap::new();
        let mut capacity_refusals = 0;
        // 20 ticks of 50 ms.
        for tick in 0..20u32 {
            let mut request = |label: String, ip: IpAddr| {
                let entry = tally.entry(label).or_default();
                match per_ip.try_acquire(&IpKey::from(ip)) {
                    Ok(()) => entry.0 += 1,
                    Err(_) => entry.1 += 1,
                }
            };
            if tick == 0 {
                for (i, ip) in polite.iter().enumerate() {
                    request(format!("polite #{}", i + 1), *ip);
                }
            }
            for ip in scrapers {
                request(format!("scraper {}", IpKey::from(ip)), ip);
            }
            // A fresh address in the same /64 on every request.
            let fresh = u128::from(rotating_prefix) | u128::from(second * 20 + tick + 1);
            request(
                format!("rotating {}/64", IpKey::from(rotating_prefix)),
                IpAddr::V6(Ipv6Addr::from(fresh)),
            );
            if second == 3 && tick == 10 {
                for n in 0..5_000u32 {
                    let spoofed = IpAddr::V4(Ipv4Addr::from(0x0a00_0000 | n));
                    if let Err(e) = per_ip.try_acquire(&IpKey::from(spoofed)) {
                        assert_eq!(e.reason(), Reason::KeyCapacity);
                        capacity_refusals += 1;
                    }
                }
            }
            clock.advance(Duration::from_millis(50));
        }
        println!("second {second}:");
        for (label, (admitted, limited)) in &tally {
            let verdict = if *limited > 0 { "LIMITED" } else { "ok" };
            println!("  {label:<32} {admitted:>2} admitted, {limited:>2} limited  {verdict}");
        }
        if capacity_refusals > 0 {
            println!(
                "  flood: 5000 new addresses, {capacity_refusals} refused for want of room (max_keys {})",
                per_ip.capacity()
            );
        }
        println!(
            "  keys held {} of {}, {} being limited now",
            per_ip.keys_held(),
            per_ip.capacity(),
            per_ip.len()
        );
    }
    Ok(())
}
