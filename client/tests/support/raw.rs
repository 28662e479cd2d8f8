//! A scripted HTTP/1.1 server on 127.0.0.1 that writes each reply byte for byte (status line and
//! header lines exactly as scripted, no `Date` added): so a test controls every field, the
//! response's `Date` included, and can send bytes a framework would refuse to.
//!
//! No timers anywhere (one connection a request, closed after the reply), so it runs on tokio's
//! paused clock: a test's instants are exact.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::Instant;

/// What the server answered, and when (tokio's clock) each request arrived.
#[derive(Debug, Default)]
pub struct Log {
    replies: Mutex<VecDeque<Vec<u8>>>,
    arrivals: Mutex<Vec<Instant>>,
}

impl Log {
    /// When each request arrived, on tokio's clock.
    pub fn arrivals(&self) -> Vec<Instant> {
        self.arrivals.lock().unwrap().clone()
    }

    /// How many requests arrived.
    pub fn count(&self) -> usize {
        self.arrivals.lock().unwrap().len()
    }
}

/// A reply: `status` and the raw header lines (`name: value`, without line ends).
pub fn reply(status: u16, lines: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status} Scripted\r\n").into_bytes();
    for line in lines {
        out.extend_from_slice(line);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"content-length: 0\r\nconnection: close\r\n\r\n");
    out
}

/// Starts the server; each request gets the next scripted reply, then `200` with no fields.
pub async fn serve(replies: Vec<Vec<u8>>) -> (SocketAddr, Arc<Log>) {
    let log = Arc::new(Log {
        replies: Mutex::new(replies.into()),
        arrivals: Mutex::new(Vec::new()),
    });
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let served = Arc::clone(&log);
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let log = Arc::clone(&served);
            tokio::spawn(async move {
                // The request's head, bounded: up to its blank line (a GET has no body).
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 64 * 1024 {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                log.arrivals.lock().unwrap().push(Instant::now());
                let answer = log
                    .replies
                    .lock()
                    .unwrap()
                    .pop_front()
                    .unwrap_or_else(|| reply(200, &[]));
                let _ = stream.write_all(&answer).await;
                let _ = stream.shutdown().await;
            });
        }
    });
    (addr, log)
}
