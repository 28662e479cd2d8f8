//! One deadline per call: with a 250 ms timeout every call, blocking and async, connecting and
//! handshake included, ends within its timeout (plus slack for a loaded machine) and follows the
//! declared failure policy, whatever the store does: hung (SIGSTOP, the kernel still accepting
//! connections), gone (killed, its port closed), slow (a server that answers after a second),
//! silent (one that accepts and never answers), refusing connections; with a database number in
//! the URL too, and a password (one or two more handshake steps).

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use ritmo_core::{Config, RateLimitExceeded, Reason};
use ritmo_redis::{FailurePolicy, Permit, Source};

const TIMEOUT: Duration = Duration::from_millis(250);
/// Generous: the bound is the timeout plus a few milliseconds; the slack is for a busy machine.
const SLACK: Duration = Duration::from_millis(150);
/// Calls per limiter once the store is away: the first finds a pooled connection, the later ones
/// connect afresh.
const CALLS: usize = 3;

type Call = Box<dyn Fn() -> Result<Permit, RateLimitExceeded>>;

struct Limiter {
    label: String,
    call: Call,
    policy: FailurePolicy,
}

/// A blocking and an async limiter for each failure policy, on `url`.
fn limiters(url: &str) -> Vec<Limiter> {
    let rt = Arc::new(
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap(),
    );
    let config = Config::new(1000, Duration::from_secs(1)).unwrap();
    let local = Config::new(100, Duration::from_secs(1)).unwrap();
    let mut out = Vec::new();
    for policy in [
        FailurePolicy::Reject,
        FailurePolicy::Admit,
        FailurePolicy::Local(local),
    ] {
        let builder = || {
            ritmo_redis::builder("deadline", config)
                .timeout(TIMEOUT)
                .on_unavailable(policy)
        };
        let blocking = builder().connect_blocking(url).unwrap();
        out.push(Limiter {
            label: format!("blocking {policy:?}"),
            call: Box::new(move || blocking.try_acquire()),
            policy,
        });
        let limiter = {
            let _guard = rt.enter();
            builder().connect(url).unwrap()
        };
        let rt = rt.clone();
        out.push(Limiter {
            label: format!("async {policy:?}"),
            call: Box::new(move || rt.block_on(limiter.try_acquire())),
            policy,
        });
    }
    out
}

/// Every limiter answers from the store (so a connection is pooled or open when the fault comes).
fn warm(limiters: &[Limiter]) {
    for l in limiters {
        let permit = (l.call)().unwrap_or_else(|e| panic!("{}: {e}", l.label));
        assert_eq!(permit.source(), Source::Store, "{}", l.label);
    }
}

/// Each call ends within the timeout plus slack, and as its policy declares.
fn assert_bounded(limiters: &[Limiter], fault: &str) {
    for l in limiters {
        for i in 0..CALLS {
            let start = Instant::now();
            let result = (l.call)();
            let took = start.elapsed();
            eprintln!("{fault}, {}, call {i}: {took:?}", l.label);
            assert!(
                took <= TIMEOUT + SLACK,
                "{fault}, {}, call {i}: {took:?} (timeout {TIMEOUT:?})",
                l.label
            );
            match l.policy {
                FailurePolicy::Reject => assert_eq!(
                    result.map_err(|e| e.reason()),
                    Err(Reason::Unavailable),
                    "{fault}, {}",
                    l.label
                ),
                FailurePolicy::Admit => assert_eq!(
                    result.map(|p| p.source()).map_err(|e| e.reason()),
                    Ok(Source::Open),
                    "{fault}, {}",
                    l.label
                ),
                _ => assert_eq!(
                    result.map(|p| p.source()).map_err(|e| e.reason()),
                    Ok(Source::Fallback),
                    "{fault}, {}",
                    l.label
                ),
            }
        }
    }
}

fn hung(db: &str) {
    let Some(server) = support::Server::start() else {
        return;
    };
    let limiters = limiters(&format!("{}{db}", server.url()));
    warm(&limiters);
    server.pause();
    assert_bounded(&limiters, "hung");
    server.resume();
}

#[test]
fn a_hung_server_costs_each_call_its_timeout_at_most() {
    hung("");
}

#[test]
fn a_hung_server_with_a_database_number_costs_each_call_its_timeout_at_most() {
    hung("3");
}

#[test]
fn a_killed_server_costs_each_call_its_timeout_at_most() {
    let Some(mut server) = support::Server::start() else {
        return;
    };
    let limiters = limiters(&format!("{}2", server.url()));
    warm(&limiters);
    server.kill();
    assert_bounded(&limiters, "gone");
}

#[test]
fn a_slow_server_costs_each_call_its_timeout_at_most() {
    let slow = support::Slow::start(Some(Duration::from_secs(1)));
    assert_bounded(&limiters(&slow.url()), "slow");
    let slow = support::Slow::start(Some(Duration::from_secs(1)));
    assert_bounded(&limiters(&format!("{}1", slow.url())), "slow, database 1");
}

#[test]
fn a_server_that_never_answers_costs_each_call_its_timeout_at_most() {
    let silent = support::Slow::start(None);
    assert_bounded(&limiters(&format!("{}5", silent.url())), "silent");
    assert!(silent.accepted() > 0, "the calls reached the server");
    // A password too: AUTH joins the handshake, still within the one deadline.
    let silent = support::Slow::start(None);
    let url = silent.url().replace("redis://", "redis://ritmo:secret@");
    assert_bounded(&limiters(&format!("{url}5")), "silent, AUTH and SELECT");
}

#[test]
fn refused_connections_cost_each_call_its_timeout_at_most() {
    let refusing = support::Refusing::bind();
    assert_bounded(&limiters(&refusing.url()), "refusing");
}
