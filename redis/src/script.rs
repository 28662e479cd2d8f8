//! The Lua scripts, loaded once per server and then called by their SHA1 (`EVALSHA`); the
//! client loads a script again when a server answers `NOSCRIPT` (after a restart or
//! `SCRIPT FLUSH`).

use std::sync::LazyLock;

use redis::Script;

/// Takes `k` permits, or reserves them within `max_wait`, or refuses: one round trip.
pub(crate) static ACQUIRE: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("acquire.lua")));

/// Gives a reservation's permits back if nothing was taken after it.
pub(crate) static REFUND: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("refund.lua")));

/// Reads a state without changing it.
pub(crate) static PEEK: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("peek.lua")));
