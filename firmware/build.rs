//! Puts `memory.x` where the linker finds it, and tells the code which emulated board the target
//! runs on (its core clock differs).
use std::{env, fs, path::PathBuf};

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").unwrap());
    let target = env::var("TARGET").unwrap();
    // RISC-V (QEMU's virt board) has its memory at 0x8000_0000 and riscv-rt's region names: its
    // own file, which `.cargo/config.toml` names to the linker before riscv-rt's `link.x`.
    fs::copy("memory.x", out.join("memory.x")).unwrap();
    fs::copy("memory-riscv.x", out.join("memory-riscv.x")).unwrap();
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rerun-if-changed=memory.x");
    println!("cargo:rerun-if-changed=memory-riscv.x");
    println!("cargo:rerun-if-changed=build.rs");

    // Only the defmt firmware links defmt's linker script (the others have no defmt logger).
    if env::var_os("CARGO_FEATURE_DEFMT").is_some() {
        println!("cargo:rustc-link-arg-bin=defmt_log=-Tdefmt.x");
    }

    println!(
        "cargo::rustc-check-cfg=cfg(board, values(\"microbit\", \"lm3s6965evb\", \"mps2_an386\", \"virt\"))"
    );
    let board = if target.starts_with("riscv") {
        "virt"
    } else if target.starts_with("thumbv6m") {
        "microbit"
    } else if target.starts_with("thumbv7m") {
        "lm3s6965evb"
    } else {
        "mps2_an386"
    };
    println!("cargo:rustc-cfg=board=\"{board}\"");
}
