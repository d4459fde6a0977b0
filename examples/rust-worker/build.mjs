// Builds the Rust Worker: cargo (wasm32, release) → wasm-bindgen --target web,
// copies the entry module next to the glue and writes a workerd config:
//   node build.mjs [outDir]        (default: dist/; PORT=8787 by default)
//   npx workerd serve dist/config.capnp
// Plain cargo + wasm-bindgen, because workers-rs's own `worker-build` downloads
// tools at build time. wasm-bindgen-cli must match the wasm-bindgen crate in
// Cargo.lock (0.2.130): `cargo install wasm-bindgen-cli --version 0.2.130`, or
// set WASM_BINDGEN to its path.
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const out = resolve(process.argv[2] ?? join(here, "dist"));
const target = process.env.CARGO_TARGET_DIR ?? join(here, "target");
const repoTool = join(here, "../../.tools/bin/wasm-bindgen");
const bindgen = process.env.WASM_BINDGEN ?? (existsSync(repoTool) ? repoTool : "wasm-bindgen");
const run = (cmd, args) => execFileSync(cmd, args, { cwd: here, stdio: ["ignore", "inherit", "inherit"], env: { ...process.env, CARGO_TARGET_DIR: target } });

run("cargo", ["build", "--release", "--target", "wasm32-unknown-unknown"]);
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
run(bindgen, [
  "--target", "web",
  "--out-dir", out,
  "--out-name", "worker",
  "--no-typescript",
  join(target, "wasm32-unknown-unknown/release/edge_deadline_rust_worker.wasm"),
]);
copyFileSync(join(here, "shim.mjs"), join(out, "shim.mjs"));

// Every module wasm-bindgen wrote (it may add snippets/…), the entry first.
const modules = readdirSync(out, { recursive: true })
  .filter((f) => /\.(m?js|wasm)$/.test(f))
  .sort((a, b) => (a === "shim.mjs" ? -1 : b === "shim.mjs" ? 1 : a.localeCompare(b)))
  .map((f) => `(name = "${f}", ${f.endsWith(".wasm") ? "wasm" : "esModule"} = embed "${f}")`);
const port = Number(process.env.PORT ?? 8787);
// COMPATIBILITY_FLAGS=a,b adds workerd compatibility flags (the test also runs with no_global_navigator).
const flags = (process.env.COMPATIBILITY_FLAGS ?? "").split(",").filter(Boolean);
writeFileSync(
  join(out, "config.capnp"),
  `using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
    (name = "main", worker = .worker),
    # fetch() to 127.0.0.1 needs an outbound network service that allows it.
    (name = "loopback", network = (allow = ["public", "private", "local"])),
  ],
  sockets = [ (name = "http", address = "127.0.0.1:${port}", http = (), service = "main") ],
);

const worker :Workerd.Worker = (
  modules = [
    ${modules.join(",\n    ")}
  ],
  compatibilityDate = "2026-11-24",
  compatibilityFlags = [${flags.map((f) => JSON.stringify(f)).join(", ")}],
  globalOutbound = "loopback",
);
`,
);
console.log(`built ${out} (serve with: workerd serve ${join(out, "config.capnp")}, port ${port})`);
