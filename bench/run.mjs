// Runs every bench/*.bench.mjs in Node and Deno (each bench prints one JSON
// line: { runtime, rows: { label: nsPerOp }, ...extra }) and prints Markdown
// tables for BENCHMARKS.md. `node bench/run.mjs deadline` runs one bench.
// A bench that exports `run(lib, params)` (resolving to that same object) also
// runs in workerd, inside a fetch handler: workerd allows timers only there.
// Such a bench may import only ./harness.mjs and ../pkg/ (nothing else is
// embedded), and must not use a top-level await. Its answer to the first
// request may list more requests (`requests: [params, …]`), each answered by
// `run(lib, params)` in a request of its own (a request's timers, and its
// 10 000-timeout quota, are its own); a row measured in several requests is
// reported as the mean of its samples less the lowest and the highest. One that also exports `inChromium = true` runs
// in headless Chromium too (pkg/ served locally), as `run(lib)`.
import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { workerdConfig } from "../scripts/workerd-config.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const deno = join(root, "node_modules/@deno/linux-x64-glibc/deno");
const only = process.argv.slice(2);
const runtimes = [
  ["node", (file) => [process.execPath, [file]]],
  ["deno", (file) => [deno, ["run", "-A", file]]],
  ["workerd", null],
].filter(([name]) => !process.env.BENCH_RUNTIMES || process.env.BENCH_RUNTIMES.split(",").includes(name)); // e.g. BENCH_RUNTIMES=workerd

function freePort() {
  return new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** Runs the thunks one after another (benchmark requests must not overlap); resolves their results. */
async function sequential(thunks) {
  const out = [];
  for (const t of thunks) out.push(await t());
  return out;
}

/** Serves `bench/<file>`'s run(lib) from a workerd with pkg/ embedded; resolves its JSON. */
async function inWorkerd(file) {
  const out = join(root, "test-output", "bench-workerd");
  mkdirSync(out, { recursive: true });
  const entry = join(out, "entry.mjs");
  writeFileSync(
    entry,
    `import * as lib from "../pkg/workerd.js";
import * as core from "../pkg/edge_deadline.js";
import { watch, unwatch } from "../pkg/deadline.js";
import { run } from "./${file}";
export default {
  async fetch(request) {
    await lib.init();
    const params = JSON.parse(new URL(request.url).searchParams.get("p") ?? "{}");
    return Response.json(await run({ ...lib, __core: core, __watch: { watch, unwatch } }, params));
  },
};
`,
  );
  const listed = (dir, re) => readdirSync(join(root, dir)).filter((f) => re.test(f)).map((f) => join(dir, f));
  const modules = [["bench/__entry.mjs", entry], ...["bench/harness.mjs", `bench/${file}`, ...listed("pkg", /\.(js|wasm)$/)].map((f) => [f, join(root, f)])]
    .map(([name, path]) => ({ name, path: relative(out, path) }));
  const port = await freePort();
  const config = join(out, "workerd.capnp");
  writeFileSync(config, workerdConfig({ port, modules, compatibilityDate: "2026-11-24" }));
  const child = spawn(join(root, "node_modules/@cloudflare/workerd-linux-64/bin/workerd"), ["serve", config], { stdio: ["ignore", "inherit", "inherit"] });
  let exited = false;
  child.on("exit", () => (exited = true));
  try {
    const ask = async (params) => {
      const res = await fetch(`http://127.0.0.1:${port}/?p=${encodeURIComponent(JSON.stringify(params))}`);
      if (!res.ok) throw new Error(`workerd answered ${res.status}: ${await res.text()}`);
      return res.json();
    };
    let first;
    for (let i = 0; !first; i++) {
      try {
        first = await ask({});
      } catch (error) {
        if (i === 100 || exited || error.message.startsWith("workerd answered")) throw error;
        await new Promise((r) => setTimeout(r, 100)); // waiting for workerd to listen: no event to wait on
      }
    }
    const { requests = [], ...result } = first;
    const samples = {};
    for (const answer of [first, ...(await sequential(requests.map((params) => () => ask(params))))]) {
      for (const [label, ns] of Object.entries(answer.rows)) (samples[label] ??= []).push(ns);
    }
    // The median of one or two samples; of more, the mean of the middle ones
    // (dropping the lowest and highest): workerd's clock steps 1 ms, so a
    // single request's figure is quantised, and the mean of several is not.
    const centre = (xs) => {
      xs.sort((a, b) => a - b);
      if (xs.length < 3) return xs[xs.length >> 1];
      const mid = xs.slice(1, -1);
      return mid.reduce((a, b) => a + b, 0) / mid.length;
    };
    result.rows = Object.fromEntries(Object.entries(samples).map(([label, xs]) => [label, centre(xs)]));
    const version = JSON.parse(readFileSync(join(root, "node_modules/workerd/package.json"), "utf8")).version;
    return { ...result, runtime: `workerd ${version}` };
  } finally {
    child.kill();
  }
}

/** Runs `bench/<file>`'s run(lib) in headless Chromium (pkg/ served from 127.0.0.1); resolves its JSON. */
async function inChromium(file) {
  const { chromium } = await import("playwright-core");
  const { serveStatic } = await import("../scripts/static-server.mjs");
  const { mkdtempSync } = await import("node:fs");
  const { tmpdir } = await import("node:os");
  const blank = (req, res) => res.writeHead(200, { "content-type": "text/html" }).end("<!doctype html><title>bench</title>");
  const server = await serveStatic(root, { routes: { "/blank": blank } });
  const profile = mkdtempSync(join(tmpdir(), "edge-deadline-bench-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    env: { ...process.env, XDG_CONFIG_HOME: profile, XDG_CACHE_HOME: profile },
  });
  try {
    const page = await context.newPage();
    await page.goto(`${server.url}blank`);
    return await page.evaluate(async (f) => {
      const lib = await import("/pkg/index.js");
      await lib.init();
      return (await import(`/bench/${f}`)).run(lib);
    }, file);
  } finally {
    await context.close();
    await server.close();
  }
}

for (const file of readdirSync(join(root, "bench")).filter((f) => f.endsWith(".bench.mjs")).sort()) {
  const name = file.replace(".bench.mjs", "");
  if (only.length && !only.includes(name)) continue;
  const path = join(root, "bench", file);
  const results = [];
  for (const [, cmd] of runtimes) {
    if (!cmd) {
      if (/^export (async )?function run\(/m.test(readFileSync(path, "utf8"))) results.push(await inWorkerd(file));
      continue;
    }
    const [exe, args] = cmd(path);
    const out = execFileSync(exe, args, { cwd: root, env: { ...process.env, NO_COLOR: "1", DENO_NO_UPDATE_CHECK: "1" }, encoding: "utf8" });
    results.push(JSON.parse(out.trim().split("\n").pop()));
  }
  if (/^export const inChromium = true/m.test(readFileSync(path, "utf8"))) results.push(await inChromium(file));
  console.log(`\n### ${name}\n`);
  console.log(`| case | ${results.map((r) => `${r.runtime} ns/op`).join(" | ")} |`);
  console.log(`|---|${results.map(() => "---:").join("|")}|`);
  for (const label of Object.keys(results[0].rows)) {
    console.log(`| ${label} | ${results.map((r) => r.rows[label]?.toFixed(1) ?? "–").join(" | ")} |`);
  }
  const extras = Object.keys(results[0]).filter((k) => k !== "runtime" && k !== "rows");
  for (const k of extras) console.log(`\n${k}: ${results.map((r) => `${r.runtime} ${JSON.stringify(r[k])}`).join("; ")}`);
}
