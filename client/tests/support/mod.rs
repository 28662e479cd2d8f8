//! A scripted HTTP server on 127.0.0.1 (axum): it answers each request with the next scripted
//! reply (then `200` with no fields) and records when each request arrived.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderName, HeaderValue, Response, StatusCode};
use axum::routing::any;
use bytes::Bytes;
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

/// One scripted answer: a status and raw header lines.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(&'static str, Vec<u8>)>,
}

impl Reply {
    pub fn new(status: u16) -> Self {
        Reply {
            status,
            headers: Vec::new(),
        }
    }

    pub fn header(mut self, name: &'static str, value: impl AsRef<[u8]>) -> Self {
        self.headers.push((name, value.as_ref().to_vec()));
        self
    }
}

#[derive(Debug, Default)]
pub struct Script {
    replies: Mutex<VecDeque<Reply>>,
    arrivals: Mutex<Vec<Instant>>,
}

impl Script {
    /// When each request arrived, in order.
    pub fn arrivals(&self) -> Vec<Instant> {
        self.arrivals.lock().unwrap().clone()
    }

    /// How many requests arrived.
    pub fn count(&self) -> usize {
        self.arrivals.lock().unwrap().len()
    }
}

async fn answer(State(script): State<Arc<Script>>) -> Response<Full<Bytes>> {
    script.arrivals.lock().unwrap().push(Instant::now());
    let reply = script
        .replies
        .lock()
        .unwrap()
        .pop_front()
        .unwrap_or_else(|| Reply::new(200));
    let mut response = Response::new(Full::new(Bytes::from_static(b"scripted\n")));
    *response.status_mut() = StatusCode::from_u16(reply.status).unwrap();
    for (name, value) in reply.headers {
        response.headers_mut().append(
            HeaderName::from_static(name),
            HeaderValue::from_bytes(&value).expect("a header value the test can send"),
        );
    }
    response
}

/// Starts a scripted server on 127.0.0.1 (any free port); it runs until the test's runtime ends.
pub async fn serve(replies: Vec<Reply>) -> (SocketAddr, Arc<Script>) {
    let script = Arc::new(Script {
        replies: Mutex::new(replies.into()),
        arrivals: Mutex::new(Vec::new()),
    });
    let app = Router::new()
        .fallback(any(answer))
        .with_state(Arc::clone(&script));
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (addr, script)
}

/// A plain hyper-util client with `String` bodies (cloneable, so retries can copy them).
pub fn hyper_client() -> Client<HttpConnector, String> {
    Client::builder(TokioExecutor::new()).build_http::<String>()
}
