//! Named limiters from a settings file, shared through a `static` registry:
//! `cargo run --example settings --features settings`.
//!
//! Reads `examples/ritmo.toml`, lays any `RITMO_*` environment variables on top
//! (`RITMO_INSTANCES_GEOCODING_PERMITS=8 cargo run --example settings --features settings`), then
//! lets two functions share the "geocoding" quota on a fake clock, so the output is exact.

use core::time::Duration;

use ritmo::server::settings::OwnedSettings;
use ritmo::{Clock, ManualClock, Overrides, RateLimitExceeded, Registry};

static CLOCK: ManualClock = ManualClock::new();
static LIMITERS: Registry<&ManualClock, 8> = Registry::new(&CLOCK);

/// Both functions spend the same quota: they name it, the registry shares it.
fn geocode() -> Result<(), RateLimitExceeded> {
    LIMITERS
        .get("geocoding")
        .expect("registered at start-up")
        .acquire_advancing()
}

fn reverse() -> Result<(), RateLimitExceeded> {
    LIMITERS
        .get("geocoding")
        .expect("registered at start-up")
        .acquire_advancing()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/ritmo.toml");
    let settings = OwnedSettings::from_toml_file(file)?.then(OwnedSettings::from_env()?);

    for id in ["geocoding", "nightly-export", "metrics", "search"] {
        let config = LIMITERS
            .get_or_create_from(id, &settings.settings(), Overrides::new())?
            .config();
        println!(
            "{id:>14}: {} per {:?}, max wait {:?}, enabled {}",
            config.permits(),
            config.period(),
            config.max_wait(),
            config.enabled()
        );
    }

    let ms = || CLOCK.now() as f64 / 1e6;
    println!("\ngeocode() and reverse() share 'geocoding':");
    for i in 1..=7 {
        let (name, result) = if i % 2 == 1 {
            ("geocode", geocode())
        } else {
            ("reverse", reverse())
        };
        match result {
            Ok(()) => println!("  t={:>6.1} ms  {name}: admitted", ms()),
            Err(e) => println!("  t={:>6.1} ms  {name}: rejected ({e})", ms()),
        }
    }

    // Two callers in flight hold the next slots; a third would wait past max-wait.
    let geocoding = LIMITERS.get("geocoding")?;
    let in_flight = [geocoding.reserve(), geocoding.reserve()];
    match geocode() {
        Ok(()) => println!("  t={:>6.1} ms  geocode: admitted", ms()),
        Err(e) => println!("  t={:>6.1} ms  geocode: rejected at once ({e})", ms()),
    }
    drop(in_flight);

    // A second registration of one id must agree on its config.
    let other = settings
        .resolve("search")?
        .with_max_wait(Duration::from_secs(1));
    if let Err(e) = LIMITERS.get_or_create("search", other) {
        println!("\nre-registering 'search' with another config: {e}");
    }

    println!("\nsnapshot:");
    for s in LIMITERS.snapshot() {
        println!(
            "  {:>14}: {}/{} permits available",
            s.id, s.available_permits, s.permits
        );
    }
    Ok(())
}
