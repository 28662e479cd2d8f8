//! ritmo-std's settings loaders on arbitrary text: a TOML file, and the same text read as an
//! environment (`KEY=value` lines). Loading and then resolving any id never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ritmo_std::settings::OwnedSettings;

fuzz_target!(|text: &str| {
    if let Ok(settings) = OwnedSettings::from_toml_str(text) {
        for (key, _) in settings.pairs() {
            if let Some((_, rest)) = key.split_once('.') {
                if let Some((id, _)) = rest.rsplit_once('.') {
                    let _ = settings.resolve(id);
                }
            }
        }
    }
    let vars: Vec<(String, String)> = text
        .lines()
        .map(|l| {
            let (k, v) = l.split_once('=').unwrap_or((l, ""));
            (k.to_owned(), v.to_owned())
        })
        .collect();
    if let Ok(settings) = OwnedSettings::from_env_map(&vars) {
        let _ = settings.resolve("api");
    }
});
