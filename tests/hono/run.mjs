// The Hono middleware with the real `hono` package in Node (20 and 24), Bun, Deno and workerd
// (tests/hono/checks.js). workerd gets one module bundled by esbuild (hono has
// many files) beside the package's .wasm, imported as a WebAssembly.Module
// the way Workers load it. Prints one JSON report line per runtime.
import { spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { freePort } from "../package/lib.mjs";
import { workerdConfig } from "../../scripts/workerd-config.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const out = join(root, "test-output/hono");
mkdirSync(out, { recursive: true });
const deno = join(root, "node_modules/@deno/linux-x64-glibc/deno");
const workerd = join(root, "node_modules/@cloudflare/workerd-linux-64/bin/workerd");

function runJson(cmd, args, env = {}) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: root, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "inherit"] });
    let stdout = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.on("close", () => resolve(lastJson(stdout, cmd)));
  });
}

function lastJson(text, who) {
  const line = text.trim().split("\n").reverse().find((l) => l.startsWith("{"));
  return line ? JSON.parse(line) : { runtime: `hono in ${who}`, passed: 0, failed: 1, skipped: 0, failures: [{ name: "runner", error: "no report printed" }] };
}

async function inWorkerd() {
  await build({
    entryPoints: [join(root, "tests/hono/workerd.js")],
    bundle: true,
    format: "esm",
    platform: "neutral",
    outfile: join(out, "worker.js"),
    external: ["*.wasm"],
    logLevel: "error", // wasm-bindgen's glue repeats an import key: harmless, and not ours to fix
  });
  const port = await freePort();
  const config = join(out, "workerd.capnp");
  const modules = [
    { name: "worker.js", path: "worker.js" },
    { name: "edge_deadline_bg.wasm", path: "../../pkg/edge_deadline_bg.wasm" },
  ];
  writeFileSync(config, workerdConfig({ port, modules, compatibilityDate: "2026-11-24" }));
  const child = spawn(workerd, ["serve", config], { cwd: out, stdio: ["ignore", "inherit", "inherit"] });
  try {
    let report;
    for (let i = 0; i < 100 && !report; i++) {
      try {
        report = await (await fetch(`http://127.0.0.1:${port}/`)).json();
      } catch {
        await new Promise((r) => setTimeout(r, 100)); // waiting for workerd to listen
      }
    }
    if (!report) return { runtime: "hono in workerd", passed: 0, failed: 1, skipped: 0, failures: [{ name: "workerd", error: "workerd did not answer" }] };
    // Over real HTTP: the middleware's Server-Timing, and a streamed body relayed in full.
    const name = "hono: over HTTP in workerd, a streamed response keeps its Server-Timing and the deadline stays ambient";
    try {
      const res = await fetch(`http://127.0.0.1:${port}/app/stream`);
      const text = await res.text();
      const timing = res.headers.get("server-timing") ?? "";
      if (text !== "data: 1 true\n\ndata: 2 true\n\ndata: 3 true\n\n") throw new Error(`body ${JSON.stringify(text)}`);
      if (!/^edge-deadline;dur=[\d.]+;desc="budget \d+ ms from product, \d+ ms left"$/.test(timing)) throw new Error(`Server-Timing ${timing}`);
      report.passed++;
    } catch (error) {
      report.failed++;
      report.failures.push({ name, error: String(error?.stack ?? error) });
    }
    return report;
  } finally {
    child.kill();
  }
}

const reports = [
  await runJson(process.execPath, ["tests/hono/node.mjs"]),
  // Node 24 (LTS) and Bun, real binaries from the npm registry (package.json): the same runner.
  await runJson(join(root, "node_modules/node24/bin/node"), ["tests/hono/node.mjs"]),
  await runJson(join(root, "node_modules/@oven/bun-linux-x64/bin/bun"), ["tests/hono/node.mjs"]),
  await runJson(deno, ["run", "--allow-read", "tests/hono/deno.js"], { DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1", DENO_DIR: join(out, "deno-cache") }),
  await inWorkerd(),
];
for (const r of reports) console.log(JSON.stringify(r));
