//! [`ClientClock`]: the clock of a client's limiters, chosen once when the client is built.

use core::time::Duration;

use ritmo_core::{Clock, TickRate};
use ritmo_std::{StdClock, TokioClock};

/// The clock of a client's limiters: tokio's clock if it stood still (paused) when the client
/// was built, so that the limiters follow `tokio::time::advance` in tests; else the CPU's counter
/// ([`StdClock`], the server clock), which reads in a few instructions where tokio's `Instant`
/// costs a look at the runtime's clock and a `Duration` subtraction (about 100 instructions a
/// request, measured: benches/RESULTS.md). Both read real time when tokio's clock runs.
#[derive(Debug, Clone)]
pub enum ClientClock {
    /// Tokio's clock, paused when the client was built.
    Paused(TokioClock),
    /// The CPU's counter.
    Counter(StdClock),
}

impl ClientClock {
    /// Tokio's clock if it is paused now, else the counter.
    pub(crate) fn new() -> Self {
        if tokio_clock_paused() {
            ClientClock::Paused(TokioClock::new())
        } else {
            ClientClock::Counter(StdClock::new())
        }
    }
}

/// Whether tokio's clock stands still. Running (or outside a runtime, or without tokio's
/// `test-util`), it is the OS's monotonic clock; paused, it moves only when the runtime advances
/// it, never while this synchronous code runs. So it is read, the OS clock is left to move on by
/// a microsecond, and it is read again.
fn tokio_clock_paused() -> bool {
    let before = tokio::time::Instant::now();
    let start = std::time::Instant::now();
    // Bounded, whatever the OS clock does: a clock that does not move is taken as paused.
    for _ in 0..1_000_000 {
        if start.elapsed() >= Duration::from_micros(1) {
            break;
        }
        core::hint::spin_loop();
    }
    tokio::time::Instant::now() == before
}

impl Clock for ClientClock {
    #[inline]
    fn now(&self) -> u64 {
        match self {
            ClientClock::Paused(clock) => clock.now(),
            ClientClock::Counter(clock) => clock.now(),
        }
    }

    #[inline]
    fn tick_rate(&self) -> TickRate {
        match self {
            ClientClock::Paused(clock) => clock.tick_rate(),
            ClientClock::Counter(clock) => clock.tick_rate(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outside_a_runtime_the_counter() {
        assert!(matches!(ClientClock::new(), ClientClock::Counter(_)));
    }

    #[tokio::test]
    async fn a_running_clock_the_counter() {
        assert!(matches!(ClientClock::new(), ClientClock::Counter(_)));
    }

    #[tokio::test(start_paused = true)]
    async fn a_paused_clock_tokio_s() {
        let clock = ClientClock::new();
        assert!(matches!(clock, ClientClock::Paused(_)));
        let before = clock.now();
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(clock.now() - before, 1_000_000_000);
    }
}
