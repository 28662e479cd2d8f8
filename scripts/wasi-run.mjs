// Runs a wasm32-wasip1 program (a test binary) under Node's WASI: `node scripts/wasi-run.mjs
// PROGRAM.wasm ARGS...`; exits with the program's status. Cargo's runner for wasm32-wasip1 in
// scripts/embedded. Imports that are not WASI's (symbols the old wasi-libc lacks, such as
// pthread_join: std links them, single-threaded tests never call them) trap if called.
import { readFile } from "node:fs/promises";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { WASI } from "node:wasi";

const [program, ...args] = process.argv.slice(2);
const root = fileURLToPath(new URL("..", import.meta.url)).replace(/\/$/, "");
const wasi = new WASI({
  version: "preview1",
  args: [program, ...args],
  env: process.env,
  // The checkout, under its own path, so that a test's files (its CARGO_MANIFEST_DIR) resolve.
  preopens: { [root]: root, ".": "." },
  returnOnExit: true,
});
const module = await WebAssembly.compile(await readFile(program));
const imports = { wasi_snapshot_preview1: wasi.wasiImport };
for (const { module: from, name } of WebAssembly.Module.imports(module)) {
  if (from === "wasi_snapshot_preview1") continue;
  imports[from] ??= {};
  imports[from][name] = () => {
    throw new Error(`${from}.${name} is not available under WASI`);
  };
}
const instance = await WebAssembly.instantiate(module, imports);
process.exit(wasi.start(instance));
