//! A flood of new client addresses for `scripts/load`: each request on a connection of its own
//! from the next source address of 127.0.0.0/8 (127.1.0.1, 127.1.0.2, ...: every one is this
//! machine's loopback on Linux), to a server on 127.0.0.1. wrk cannot bind source addresses,
//! hence this client. Bounded: it stops after `seconds` or `max` requests, whichever comes first.
//!
//! ```sh
//! cargo run --release -p ritmo-tower --features axum --example load-client -- <port> <seconds> <connections> <max>
//! ```
//!
//! Prints one line: `requests <n> seconds <s> rps <r> p50_us <a> p99_us <b> ok <n> refused <n> other <n>`.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpSocket;

/// The `i`-th source address: 127.1.0.1 onwards, skipping .0 and .255 host bytes.
fn source(i: u64) -> Ipv4Addr {
    let i = i % (254 * 256 * 254);
    let (a, rest) = (1 + i / (256 * 254), i % (256 * 254));
    let (b, c) = (rest / 254, 1 + rest % 254);
    Ipv4Addr::new(127, a as u8, b as u8, c as u8)
}

/// One request from `from` to `to`: its status code and latency.
async fn one(from: Ipv4Addr, to: SocketAddr) -> std::io::Result<(u16, Duration)> {
    let start = Instant::now();
    let socket = TcpSocket::new_v4()?;
    socket.bind(SocketAddr::from((from, 0)))?;
    let mut stream = socket.connect(to).await?;
    stream
        .write_all(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .await?;
    let mut response = Vec::with_capacity(512);
    stream.read_to_end(&mut response).await?;
    let status = response
        .get(9..12)
        .and_then(|s| std::str::from_utf8(s).ok())
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    Ok((status, start.elapsed()))
}

fn arg(args: &[String], i: usize, name: &str) -> u64 {
    match args.get(i).map(|a| a.parse()) {
        Some(Ok(v)) => v,
        _ => {
            eprintln!("load-client: give {name} (usage: <port> <seconds> <connections> <max>)");
            std::process::exit(2);
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let port = arg(&args, 0, "a port") as u16;
    let seconds = arg(&args, 1, "seconds");
    let connections = arg(&args, 2, "connections").max(1);
    let max = arg(&args, 3, "a request count");
    let to = SocketAddr::from(([127, 0, 0, 1], port));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let next = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let start = Instant::now();
    let results = runtime.block_on(async move {
        let mut tasks = Vec::new();
        for _ in 0..connections {
            let next = Arc::clone(&next);
            tasks.push(tokio::spawn(async move {
                let mut seen = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= max || Instant::now() >= deadline {
                        return seen;
                    }
                    seen.push(one(source(i), to).await.unwrap_or((0, Duration::ZERO)));
                }
            }));
        }
        let mut all = Vec::new();
        for task in tasks {
            all.extend(task.await.unwrap_or_default());
        }
        all
    });
    let elapsed = start.elapsed().as_secs_f64();
    let mut latencies: Vec<Duration> = results.iter().map(|r| r.1).collect();
    latencies.sort();
    let at = |q: f64| {
        latencies
            .get(((latencies.len() as f64 - 1.0) * q) as usize)
            .map_or(0.0, |d| d.as_secs_f64() * 1e6)
    };
    let count = |f: &dyn Fn(u16) -> bool| results.iter().filter(|r| f(r.0)).count();
    println!(
        "requests {} seconds {:.2} rps {:.0} p50_us {:.0} p99_us {:.0} ok {} refused {} other {}",
        results.len(),
        elapsed,
        results.len() as f64 / elapsed,
        at(0.5),
        at(0.99),
        count(&|s| s == 200),
        count(&|s| s == 429),
        count(&|s| s != 200 && s != 429),
    );
}
