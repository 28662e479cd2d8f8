//! A reference model of "the client's own quota plus the server's holds", written from SPEC §21
//! and the crate's rules, against the tower layer on tokio's paused clock: random schedules of
//! calls on two hosts, random server answers, and call by call the same outcome (sent at the
//! same instant, or refused with the same cause, `retry_after` and instant).
//!
//! The model, per key: a GCRA state (`tat`, with `T = period / permits` and a burst tolerance
//! `tau = (permits - 1) * T`) and the instant the server's hold ends. A call at `t` with
//! `deadline = t + max_wait`:
//! - held until `h > t`: refused at `t` if `h > deadline` (retry after `h - t`), else it starts
//!   over at `x = h`; otherwise `x = t`;
//! - its slot is `max(x, tat - tau)` (`x` for a key never seen); beyond `deadline` it is refused
//!   at `x` (retry after `slot - x`); else `tat = max(tat, x) + T` and it is sent at the slot;
//! - a server answer that asks to wait `w > 0` holds the key until `max(h, sent + min(w,
//!   max_hold))`: 429/503 `Retry-After`, `RateLimit` with `r=0`, `X-RateLimit-Remaining: 0`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::{Request, Response};
use proptest::prelude::*;
use ritmo_client::{Cause, ClientLayer, Outbound};
use ritmo_core::Config;
use tokio::time::Instant;
use tower::{Layer, ServiceExt, service_fn};

/// What the server answers to one call (if it is sent).
#[derive(Debug, Clone, Copy)]
enum Answer {
    Plain,
    RetryAfter429(u64),
    RetryAfter503(u64),
    FractionalRetryAfter(u64),
    RateLimitZero(u64),
    RateLimitLeft(u64),
    XRateLimit(u64),
    GarbageRetryAfter,
    RetryAfterOn200(u64),
}

impl Answer {
    fn response(self) -> Response<()> {
        let (status, headers): (u16, Vec<(&str, String)>) = match self {
            Answer::Plain => (200, vec![]),
            Answer::RetryAfter429(s) => (429, vec![("retry-after", s.to_string())]),
            Answer::RetryAfter503(s) => (503, vec![("retry-after", s.to_string())]),
            Answer::FractionalRetryAfter(s) => (429, vec![("retry-after", format!("{s}.5"))]),
            Answer::RateLimitZero(s) => (200, vec![("ratelimit", format!("\"api\";r=0;t={s}"))]),
            Answer::RateLimitLeft(s) => (200, vec![("ratelimit", format!("\"api\";r=2;t={s}"))]),
            Answer::XRateLimit(s) => (
                200,
                vec![
                    ("x-ratelimit-remaining", "0".into()),
                    ("x-ratelimit-reset", s.to_string()),
                ],
            ),
            Answer::GarbageRetryAfter => (429, vec![("retry-after", "later, maybe".into())]),
            Answer::RetryAfterOn200(s) => (200, vec![("retry-after", s.to_string())]),
        };
        let mut b = Response::builder().status(status);
        for (n, v) in headers {
            b = b.header(n, v);
        }
        b.body(()).unwrap()
    }

    /// What the answer asks for, in ms, read from the field texts' meaning (not from the code).
    fn wait_ms(self) -> u64 {
        match self {
            Answer::RetryAfter429(s)
            | Answer::RetryAfter503(s)
            | Answer::RateLimitZero(s)
            | Answer::XRateLimit(s) => s * 1000,
            Answer::FractionalRetryAfter(s) => s * 1000 + 500,
            Answer::Plain
            | Answer::RateLimitLeft(_)
            | Answer::GarbageRetryAfter
            | Answer::RetryAfterOn200(_) => 0,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// Sent at this instant (ms since the start).
    Sent(u64),
    /// Refused at this instant, with this cause and `retry_after` (ms).
    Refused {
        at: u64,
        cause: Cause,
        retry_after: u64,
    },
}

struct Model {
    t: u64,
    tau: u64,
    max_wait: u64,
    max_hold: u64,
    tat: HashMap<usize, u64>,
    hold: HashMap<usize, u64>,
}

impl Model {
    fn call(&mut self, now: u64, key: usize, answer: Answer) -> Outcome {
        let deadline = now + self.max_wait;
        let mut x = now;
        let held = self.hold.get(&key).copied().unwrap_or(0);
        if held > now {
            if held > deadline {
                return Outcome::Refused {
                    at: now,
                    cause: Cause::ServerHold,
                    retry_after: held - now,
                };
            }
            x = held;
        }
        let tat = self.tat.get(&key).copied();
        let slot = tat.map_or(x, |tat| x.max(tat.saturating_sub(self.tau)));
        if slot > deadline {
            return Outcome::Refused {
                at: x,
                cause: Cause::LocalQuota,
                retry_after: slot - x,
            };
        }
        self.tat.insert(key, tat.unwrap_or(0).max(x) + self.t);
        let w = answer.wait_ms();
        if w > 0 {
            let end = slot + w.min(self.max_hold);
            let h = self.hold.entry(key).or_insert(0);
            *h = (*h).max(end);
        }
        Outcome::Sent(slot)
    }
}

fn answer() -> impl Strategy<Value = Answer> {
    let s = 0u64..4;
    prop_oneof![
        3 => Just(Answer::Plain),
        2 => s.clone().prop_map(Answer::RetryAfter429),
        1 => s.clone().prop_map(Answer::RetryAfter503),
        1 => s.clone().prop_map(Answer::FractionalRetryAfter),
        2 => s.clone().prop_map(Answer::RateLimitZero),
        1 => s.clone().prop_map(Answer::RateLimitLeft),
        1 => s.clone().prop_map(Answer::XRateLimit),
        1 => Just(Answer::GarbageRetryAfter),
        1 => s.prop_map(Answer::RetryAfterOn200),
    ]
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap()
}

fn run(
    permits: u32,
    period_ms: u64,
    max_wait_ms: u64,
    max_hold_ms: u64,
    steps: &[(u64, usize, Answer)],
) -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    rt.block_on(async {
        let start = Instant::now();
        let config = Config::new(permits, Duration::from_millis(period_ms))
            .unwrap()
            .with_max_wait(Duration::from_millis(max_wait_ms));
        let outbound = Outbound::per_host("model", config)
            .max_hold(Duration::from_millis(max_hold_ms))
            .build();
        let sent_at: Arc<Mutex<Vec<u64>>> = Arc::default();
        let answers: Arc<Mutex<Option<Answer>>> = Arc::default();
        let inner = {
            let sent_at = Arc::clone(&sent_at);
            let answers = Arc::clone(&answers);
            service_fn(move |_req: Request<()>| {
                sent_at.lock().unwrap().push(ms(start.elapsed()));
                let a = answers.lock().unwrap().take().expect("one answer per call");
                async move { Ok::<_, std::convert::Infallible>(a.response()) }
            })
        };
        let svc = ClientLayer::new(outbound).layer(inner);
        let t = period_ms / u64::from(permits);
        let mut model = Model {
            t,
            tau: t * (u64::from(permits) - 1),
            max_wait: max_wait_ms,
            max_hold: max_hold_ms,
            tat: HashMap::new(),
            hold: HashMap::new(),
        };
        for (i, &(gap, key, answer)) in steps.iter().enumerate() {
            tokio::time::sleep(Duration::from_millis(gap)).await;
            let now = ms(start.elapsed());
            *answers.lock().unwrap() = Some(answer);
            let req = Request::get(format!("http://k{key}.test/"))
                .body(())
                .unwrap();
            let got = match svc.clone().oneshot(req).await {
                Ok(_) => Outcome::Sent(*sent_at.lock().unwrap().last().unwrap()),
                Err(e) => {
                    let l = e.limited().ok_or("not a refusal")?;
                    let ra = l.retry_after();
                    // retry_after is never short and at most one clock tick long (SPEC §17).
                    let ra_ms = ms(ra);
                    if ra > Duration::from_millis(ra_ms) + Duration::from_micros(1) {
                        return Err(format!("call {i}: retry_after {ra:?} is not whole ms"));
                    }
                    Outcome::Refused {
                        at: ms(start.elapsed()),
                        cause: l.cause(),
                        retry_after: ra_ms,
                    }
                }
            };
            let want = model.call(now, key, answer);
            if got != want {
                return Err(format!(
                    "call {i} at {now} ms (key {key}, {answer:?}): layer {got:?}, model {want:?}"
                ));
            }
        }
        Ok(())
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn layer_agrees_with_the_model(
        permits in 1u32..=4,
        period_ms in prop_oneof![Just(1200u64), Just(2400)],
        max_wait_ms in prop_oneof![Just(0u64), Just(500), Just(1000), Just(2500), Just(5000)],
        max_hold_ms in prop_oneof![Just(1000u64), Just(3000), Just(3_600_000)],
        steps in prop::collection::vec(
            (prop_oneof![Just(0u64), Just(100), Just(300), Just(600), Just(1200), Just(3000)], 0usize..2, answer()),
            1..40,
        ),
    ) {
        let r = run(permits, period_ms, max_wait_ms, max_hold_ms, &steps);
        prop_assert!(r.is_ok(), "{}", r.unwrap_err());
    }
}
