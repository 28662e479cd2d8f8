//! The client layer's cost per request beside the same client without it.
//!
//! ```sh
//! cargo bench -p ritmo-client --bench overhead            # criterion: time per request
//! cargo bench -p ritmo-client --bench overhead -- --test  # smoke: each runs once
//! # instructions per request (callgrind counts only the measured loop):
//! valgrind --tool=callgrind --toggle-collect='*overhead*measured_loop*' \
//!     target/release/deps/overhead-<hash> count <stack> 20000
//! ```
//!
//! Each iteration sends one request through the stack with `oneshot` and polls it once with a
//! no-op waker: the inner service answers at once and the quota is never spent, so nothing
//! waits and no runtime is measured. The inner service is an in-process stand-in for the HTTP
//! client (what the layer adds does not depend on it). Stacks:
//! - `bare`: the inner service alone;
//! - `identity`: the inner service under `tower::layer::util::Identity` (the floor the bars of
//!   `scripts/tower-instructions` are net of);
//! - `per-host`: `ClientLayer` with one quota per `host:port` (a key built per request);
//! - `global`: `ClientLayer` with one quota for every request;
//! - `per-host-fields`: `per-host`, the response carrying `RateLimit: "api";r=99;t=1` (a
//!   structured-field list parsed per response).

use std::convert::Infallible;
use std::future::{Future, ready};
use std::hint::black_box;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use criterion::Criterion;
use http::{HeaderValue, Request, Response};
use ritmo_client::{ClientLayer, Outbound};
use ritmo_core::Config;
use tower::layer::util::Identity;
use tower::{Layer, Service, ServiceExt, service_fn};

fn unlimited() -> Config {
    Config::new(u32::MAX, Duration::from_nanos(u64::from(u32::MAX))).unwrap()
}

fn request() -> Request<()> {
    Request::get("http://api.example/search").body(()).unwrap()
}

fn now<F: Future>(future: F) -> F::Output {
    match pin!(future).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("nothing here waits"),
    }
}

type Inner = fn(Request<()>) -> std::future::Ready<Result<Response<()>, Infallible>>;

fn plain(_: Request<()>) -> std::future::Ready<Result<Response<()>, Infallible>> {
    ready(Ok(Response::new(())))
}

fn with_fields(_: Request<()>) -> std::future::Ready<Result<Response<()>, Infallible>> {
    let mut r = Response::new(());
    r.headers_mut()
        .insert("ratelimit", HeaderValue::from_static("\"api\";r=99;t=1"));
    ready(Ok(r))
}

/// One request through `svc`, to completion.
fn one<S>(svc: &S)
where
    S: Service<Request<()>> + Clone,
    S::Error: std::fmt::Debug,
{
    let response = now(svc.clone().oneshot(request()));
    black_box(response.is_ok());
}

fn stack(name: &str) -> Box<dyn Fn()> {
    let inner = |f: Inner| service_fn(f);
    match name {
        "bare" => {
            let svc = inner(plain);
            Box::new(move || one(&svc))
        }
        "identity" => {
            let svc = Identity::new().layer(inner(plain));
            Box::new(move || one(&svc))
        }
        "per-host" => {
            let svc = ClientLayer::new(Outbound::per_host("bench", unlimited()).build())
                .layer(inner(plain));
            Box::new(move || one(&svc))
        }
        "global" => {
            let svc = ClientLayer::new(Outbound::global("bench", unlimited()).build())
                .layer(inner(plain));
            Box::new(move || one(&svc))
        }
        "per-host-fields" => {
            let svc = ClientLayer::new(Outbound::per_host("bench", unlimited()).build())
                .layer(inner(with_fields));
            Box::new(move || one(&svc))
        }
        other => panic!("unknown stack {other}: bare, identity, per-host, global, per-host-fields"),
    }
}

const STACKS: [&str; 5] = ["bare", "identity", "per-host", "global", "per-host-fields"];

#[inline(never)]
fn measured_loop(run: &dyn Fn(), n: u64) {
    for _ in 0..n {
        run();
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("count") {
        let name = args.get(2).map_or("bare", String::as_str);
        let n: u64 = args.get(3).and_then(|n| n.parse().ok()).unwrap_or(20_000);
        let run = stack(name);
        run(); // first-request set-up (the key's first state) outside the count
        measured_loop(&*run, n);
        println!("{name}: {n} requests");
        return;
    }
    let mut c = Criterion::default().configure_from_args();
    let mut group = c.benchmark_group("client-layer");
    for name in STACKS {
        let run = stack(name);
        group.bench_function(name, |b| b.iter(&run));
    }
    group.finish();
    c.final_summary();
}
