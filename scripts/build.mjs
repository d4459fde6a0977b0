// Builds the package directory pkg/ from the crate and js/:
//   cargo (wasm32, release) → wasm-bindgen --target web → wasm-opt -Oz → copy js/ → package.json
// Plain cargo + wasm-bindgen: wasm-pack would try to download its tools, which
// this project's CI cannot do (see README, "Design").
import { execFileSync } from "node:child_process";
import { copyFileSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const pkg = join(root, "pkg");
// Build beside pkg/ and swap it in at the end, so a test run reading pkg/
// never sees a half-built package.
const out = join(root, `.pkg-build-${process.pid}`);
const run = (cmd, args) => execFileSync(cmd, args, { cwd: root, stdio: ["ignore", "inherit", "inherit"] });

run("cargo", ["build", "--lib", "--profile", "wasm", "--target", "wasm32-unknown-unknown"]);
rmSync(out, { recursive: true, force: true });
process.on("exit", () => rmSync(out, { recursive: true, force: true }));
run(join(root, ".tools/bin/wasm-bindgen"), [
  "--target", "web",
  "--out-dir", out,
  "--out-name", "edge_deadline",
  "--no-typescript",
  "--remove-name-section",
  join(root, "target/wasm32-unknown-unknown/wasm/edge_deadline.wasm"),
]);
const wasm = join(out, "edge_deadline_bg.wasm");
run(join(root, "node_modules/.bin/wasm-opt"), [
  "-Oz",
  ...["reference-types", "bulk-memory", "nontrapping-float-to-int", "sign-ext", "multivalue", "mutable-globals"].map(
    (f) => `--enable-${f}`,
  ),
  wasm, "-o", wasm,
]);

for (const f of readdirSync(join(root, "js"))) copyFileSync(join(root, "js", f), join(out, f));
copyFileSync(join(root, "LICENSE"), join(out, "LICENSE"));

const crate = readFileSync(join(root, "Cargo.toml"), "utf8");
const version = /^version = "([^"]+)"/m.exec(crate)[1];
const entry = (file) => ({ types: "./index.d.ts", default: file });
writeFileSync(
  join(out, "package.json"),
  JSON.stringify(
    {
      name: "edge-deadline",
      version,
      description: "Real deadlines for edge runtimes: one instant, budgets, stall detection, derived timeouts",
      license: "MIT",
      type: "module",
      sideEffects: false,
      types: "./index.d.ts",
      main: "./node.js",
      exports: {
        ".": {
          types: "./index.d.ts",
          workerd: entry("./workerd.js"),
          // `worker` is also set by bundlers for browser Web Workers, which
          // cannot import a bare .wasm; wrangler matches `workerd` first.
          worker: entry("./index.js"),
          deno: entry("./index.js"),
          browser: entry("./index.js"),
          node: entry("./node.js"),
          default: entry("./index.js"),
        },
        // The Hono middleware: one module for every runtime (it needs no Wasm loader of its own:
        // the app calls the main entry's `init()`).
        "./hono": { types: "./hono.d.ts", default: "./hono.js" },
        "./edge_deadline_bg.wasm": "./edge_deadline_bg.wasm",
        "./package.json": "./package.json",
      },
      files: readdirSync(out).filter((f) => f !== "package.json"),
    },
    null,
    2,
  ) + "\n",
);

rmSync(pkg, { recursive: true, force: true });
renameSync(out, pkg);

const gz = (f) => gzipSync(readFileSync(join(pkg, f)), { level: 9 }).length;
const js = readdirSync(pkg).filter((f) => f.endsWith(".js"));
const wasmGz = gz("edge_deadline_bg.wasm");
const jsGz = js.reduce((s, f) => s + gz(f), 0);
console.log(
  `pkg/: .wasm ${statSync(join(pkg, "edge_deadline_bg.wasm")).size} B (${wasmGz} B gzip), JS ${js.length} files ${jsGz} B gzip; total ${((wasmGz + jsGz) / 1024).toFixed(1)} KB gzip`,
);
