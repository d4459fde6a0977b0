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
// reported as the mean of its samples less the lowest and the highest. Its
// first answer may carry `ratioOf: { label: [rowA, rowB] }`: the result then
// has `ratios` (rowA ÷ rowB of those reported rows). One that exports
// `workerdCold = N` is also run in N fresh workerd processes, each asked
// `run(lib, { cold: i })` first (a cold isolate: the user's way) and then
// `run(lib, { cold: i, again: true })`; their rows and ratios are reported as
// the median over the N processes. One that also exports `inChromium = true` runs
// in headless Chromium too (pkg/ served locally), as `run(lib)`.
//
// Before and after, in one run: `node bench/run.mjs --before DIR [bench…]`
// measures the package built in DIR (an older commit's `node scripts/build.mjs`
// output, copied out of the repository) and pkg/ (or `--after DIR`) with every
// bench, in every runtime, one after the other, and prints their columns side
// by side with the change, plus both packages' sizes. `--repeat N` runs each
// side N times, alternating which goes first, and reports each row's median
// (of two: the mean). Benches import only the package's entry point (see
// loadPackage in bench/harness.mjs), so they run against either layout.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { gzipSync } from "node:zlib";
import { workerdConfig } from "../scripts/workerd-config.mjs";
import { entryFiles } from "./harness.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const deno = join(root, "node_modules/@deno/linux-x64-glibc/deno");
const { values: flags, positionals: only } = parseArgs({
  allowPositionals: true,
  options: { before: { type: "string" }, after: { type: "string" }, repeat: { type: "string", default: "1" } },
});
// The packages measured: [label, directory]; one unlabelled without --before.
const packages = flags.before
  ? [["before", resolve(flags.before)], ["after", resolve(flags.after ?? join(root, "pkg"))]]
  : [["", resolve(flags.after ?? join(root, "pkg"))]];
for (const [label, dir] of packages) {
  if (!existsSync(join(dir, "edge_deadline_bg.wasm"))) throw new Error(`${label || "pkg"}: no package in ${dir} (build one with \`node scripts/build.mjs\`)`);
}
const repeat = Number(flags.repeat);
const runtimes = [
  ["node", (file) => [process.execPath, [file]]],
  // Node 24 (LTS) and Bun, real binaries from the npm registry (package.json), beside the machine's Node.
  ["node24", (file) => [join(root, "node_modules/node24/bin/node"), [file]]],
  ["bun", (file) => [join(root, "node_modules/@oven/bun-linux-x64/bin/bun"), [file]]],
  ["deno", (file) => [deno, ["run", "-A", file]]],
  ["workerd", null],
].filter(([name]) => !process.env.BENCH_RUNTIMES || process.env.BENCH_RUNTIMES.split(",").includes(name)); // e.g. BENCH_RUNTIMES=workerd (chromium: the benches that run there)

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

/** Serves `bench/<file>`'s run(lib) from a workerd with the package in `pkgDir` embedded (as pkg/); resolves its JSON. */
async function inWorkerd(file, pkgDir) {
  const out = join(root, "test-output", "bench-workerd");
  mkdirSync(out, { recursive: true });
  const entry = join(out, "entry.mjs");
  const files = readdirSync(pkgDir).filter((f) => /\.(js|wasm)$/.test(f));
  const entries = entryFiles(JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8")), "workerd");
  // The internals the "design:" rows use, where this package has them (bench/harness.mjs, withInternals):
  // pkg/main.js's, or in a module-per-file build, its modules'.
  const internal = (f, as) => (files.includes(f) ? `import * as ${as} from "../pkg/${f}";` : `const ${as} = {};`);
  const internals = files.includes("main.js")
    ? `import * as keepalive from "../pkg/main.js";\nconst core = keepalive.glue;\nconst deadline = {};`
    : [internal("edge_deadline.js", "core"), internal("deadline.js", "deadline"), internal("keepalive.js", "keepalive")].join("\n");
  writeFileSync(
    entry,
    `${entries.map((f, i) => `import * as entry${i} from "../pkg/${f}";`).join("\n")}
${internals}
import { merged, withInternals } from "./harness.mjs";
import { run } from "./${file}";
const lib = merged([${entries.map((_, i) => `entry${i}`).join(", ")}]);
export default {
  async fetch(request) {
    await lib.init();
    const params = JSON.parse(new URL(request.url).searchParams.get("p") ?? "{}");
    return Response.json(await run(withInternals(lib, core, deadline, keepalive), params));
  },
};
`,
  );
  const modules = [
    ["bench/__entry.mjs", entry],
    ...["bench/harness.mjs", `bench/${file}`].map((f) => [f, join(root, f)]),
    ...files.map((f) => [`pkg/${f}`, join(pkgDir, f)]),
  ].map(([name, path]) => ({ name, path: relative(out, path) }));
  /** A fresh workerd serving the entry; `first(params)` asks until it listens, `ask(params)` once. */
  const start = async () => {
    const port = await freePort();
    const config = join(out, "workerd.capnp");
    writeFileSync(config, workerdConfig({ port, modules, compatibilityDate: "2026-11-24" }));
    const child = spawn(join(root, "node_modules/@cloudflare/workerd-linux-64/bin/workerd"), ["serve", config], { stdio: ["ignore", "inherit", "inherit"] });
    let exited = false;
    child.on("exit", () => (exited = true));
    const ask = async (params) => {
      const res = await fetch(`http://127.0.0.1:${port}/?p=${encodeURIComponent(JSON.stringify(params))}`);
      if (!res.ok) throw new Error(`workerd answered ${res.status}: ${await res.text()}`);
      return res.json();
    };
    const first = async (params) => {
      for (let i = 0; ; i++) {
        try {
          return await ask(params);
        } catch (error) {
          if (i === 100 || exited || error.message.startsWith("workerd answered")) throw error;
          await new Promise((r) => setTimeout(r, 100)); // waiting for workerd to listen: no event to wait on
        }
      }
    };
    return { ask, first, kill: () => child.kill() };
  };
  const medians = (maps) => {
    const labels = [...new Set(maps.flatMap((m) => Object.keys(m ?? {})))];
    return Object.fromEntries(labels.map((l) => [l, median(maps.map((m) => m?.[l]))]));
  };
  // The user's way first, each in a cold isolate of its own (its requests never overlap the others').
  const coldRuns = Number(/^export const workerdCold = (\d+)/m.exec(readFileSync(join(root, "bench", file), "utf8"))?.[1] ?? 0);
  const cold = [];
  for (let i = 0; i < coldRuns; i++) {
    const w = await start();
    try {
      cold.push(await w.first({ cold: i }), await w.ask({ cold: i, again: true }));
    } finally {
      w.kill();
    }
  }
  const { ask, first: firstAsk, kill } = await start();
  try {
    const first = await firstAsk({});
    const { requests = [], ratioOf, ...result } = first;
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
    if (ratioOf) {
      result.ratios = {};
      for (const [label, [a, b]] of Object.entries(ratioOf)) if (result.rows[a] > 0 && result.rows[b] > 0) result.ratios[label] = result.rows[a] / result.rows[b];
    }
    if (cold.length) {
      Object.assign(result.rows, medians(cold.map((c) => c.rows)));
      result.ratios = { ...result.ratios, ...medians(cold.map((c) => c.ratios)) };
    }
    const version = JSON.parse(readFileSync(join(root, "node_modules/workerd/package.json"), "utf8")).version;
    return { ...result, runtime: `workerd ${version}` };
  } finally {
    kill();
  }
}

/** Runs `bench/<file>`'s run(lib) in headless Chromium (the package in `pkgDir` served as /pkg/ from 127.0.0.1); resolves its JSON. */
async function inChromium(file, pkgDir) {
  const { serveStatic } = await import("../scripts/static-server.mjs");
  const { openChromium } = await import("../tests/chromium.mjs");
  const blank = (req, res) => res.writeHead(200, { "content-type": "text/html" }).end("<!doctype html><title>bench</title>");
  const server = await serveStatic(root, { routes: { "/blank": blank }, mounts: { "/pkg/": pkgDir } });
  const context = await openChromium();
  try {
    const page = await context.newPage();
    await page.goto(`${server.url}blank`);
    const entries = entryFiles(JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8")), "browser");
    return await page.evaluate(
      async ([f, entries]) => {
        const { merged } = await import("/bench/harness.mjs");
        const lib = merged(await Promise.all(entries.map((e) => import(`/pkg/${e}`))));
        await lib.init();
        return (await import(`/bench/${f}`)).run(lib);
      },
      [file, entries],
    );
  } finally {
    await context.close();
    await server.close();
  }
}

/** gzip -9 size of `file` in `dir`. */
const gz = (dir, file) => gzipSync(readFileSync(join(dir, file)), { level: 9 }).length;

/** The package's own modules that `entry` loads: the closure of its static relative imports. */
function loaded(dir, entry) {
  const seen = new Set();
  const visit = (f) => {
    if (seen.has(f) || !existsSync(join(dir, f))) return;
    seen.add(f);
    const text = readFileSync(join(dir, f), "utf8");
    for (const m of text.matchAll(/^\s*(?:import|export)\b[^;'"]*?from\s*["']\.\/([^"']+\.js)["']|^\s*import\s*["']\.\/([^"']+\.js)["']/gm)) visit(m[1] ?? m[2]);
  };
  visit(entry);
  return [...seen];
}

/** Sizes in bytes: each .wasm (raw, gzip -9), and the JS (gzip -9) each Node entry point loads, and all of it. */
function sizes(dir) {
  const files = readdirSync(dir);
  const sum = (list) => list.reduce((n, f) => n + gz(dir, f), 0);
  const out = {};
  for (const f of files.filter((f) => f.endsWith(".wasm"))) {
    out[`${f} (bytes)`] = readFileSync(join(dir, f)).length;
    out[`${f} (gzip -9)`] = gz(dir, f);
  }
  const entries = entryFiles(JSON.parse(readFileSync(join(dir, "package.json"), "utf8")), "node");
  for (const e of entries) out[`JS that ${e} loads (it and its imports, gzip -9)`] = sum(loaded(dir, e));
  out["all JS in the package (gzip -9)"] = sum(files.filter((f) => f.endsWith(".js")));
  return out;
}

/** One bench in one runtime against one package: its JSON, or null where the bench does not run there. */
async function once(file, path, runtime, pkgDir, label) {
  const [name, cmd] = runtime;
  if (name === "chromium") return inChromium(file, pkgDir);
  if (!cmd) return /^export (async )?function run\(/m.test(readFileSync(path, "utf8")) ? inWorkerd(file, pkgDir) : null;
  const [exe, args] = cmd(path);
  // The CLI (derive bench) is not in the package: measured once, with the current build.
  const env = { ...process.env, NO_COLOR: "1", DENO_NO_UPDATE_CHECK: "1", BENCH_PKG: pkgDir, ...(label === "before" ? { BENCH_SKIP_CLI: "1" } : {}) };
  const out = execFileSync(exe, args, { cwd: root, env, encoding: "utf8" });
  return JSON.parse(out.trim().split("\n").pop());
}

/** The median of `xs` (of an even count, the mean of the middle two); undefined for none. */
function median(xs) {
  const s = xs.filter((x) => typeof x === "number").sort((a, b) => a - b);
  if (!s.length) return undefined;
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

/**
 * The samples of one bench, runtime and package as one: each row's median, and
 * so for every other figure made only of numbers (ratios, lateness, first
 * calls; nested ones flattened); anything else from the first sample.
 */
function merge(samples) {
  const out = { ...samples[0] };
  for (const key of Object.keys(out)) {
    if (key === "runtime") continue;
    const maps = samples.map((r) => numbers(r[key]));
    if (maps.some((m) => m === null)) continue;
    const labels = new Set(maps.flatMap((m) => Object.keys(m)));
    out[key] = Object.fromEntries([...labels].map((label) => [label, median(maps.map((m) => m[label]))]).filter(([, v]) => v !== undefined));
  }
  return out;
}

const fmt = (x, digits = 1) => (typeof x === "number" ? x.toFixed(digits) : "–");
const change = (b, a) => (typeof a === "number" && typeof b === "number" && b > 0 ? `${a >= b ? "+" : "−"}${Math.abs(((a - b) / b) * 100).toFixed(0)} %` : "–");

/** `{ a: 1, b: { c: 2 } }` → `{ a: 1, "b c": 2 }`; null unless every leaf is a number. */
function numbers(value, prefix = "", out = {}) {
  if (!value || typeof value !== "object") return null;
  for (const [k, v] of Object.entries(value)) {
    if (typeof v === "number") out[prefix + k] = v;
    else if (!numbers(v, `${prefix}${k} `, out)) return null;
  }
  return out;
}

/** A Markdown table of `rows` per column (one runtime: its result per package), before/after/change with --before. */
function table(unit, columns) {
  const labels = new Set(columns.flatMap((c) => c.flatMap((r) => Object.keys(r.rows))));
  if (!labels.size) return;
  const heads = columns.flatMap((c) => (flags.before ? [`${c[0].runtime} before`, "after", "change"] : [`${c[0].runtime} ${unit}`]));
  console.log(`\n| case${flags.before ? ` (${unit})` : unit === "ns/op" ? "" : ` (${unit})`} | ${heads.join(" | ")} |`);
  console.log(`|---|${heads.map(() => "---:").join("|")}|`);
  for (const label of labels) {
    const d = unit === "ratios" ? 2 : 1;
    const cells = columns.flatMap(([b, a]) => (a ? [fmt(b.rows[label], d), fmt(a.rows[label], d), change(b.rows[label], a.rows[label])] : [fmt(b.rows[label], d)]));
    console.log(`| ${label} | ${cells.join(" | ")} |`);
  }
}

if (flags.before) {
  const [[, beforeDir], [, afterDir]] = packages;
  const [b, a] = [sizes(beforeDir), sizes(afterDir)];
  console.log(`\n### package size\n\nbefore: ${beforeDir}\nafter: ${afterDir}\n`);
  console.log("| | before | after | change |\n|---|---:|---:|---:|");
  for (const k of new Set([...Object.keys(b), ...Object.keys(a)])) {
    const diff = k in a && k in b ? `${a[k] - b[k] >= 0 ? "+" : "−"}${Math.abs(a[k] - b[k])} B (${change(b[k], a[k])})` : "–";
    console.log(`| ${k} | ${b[k] ?? "–"} | ${a[k] ?? "–"} | ${diff} |`);
  }
}

for (const file of readdirSync(join(root, "bench")).filter((f) => f.endsWith(".bench.mjs")).sort()) {
  const name = file.replace(".bench.mjs", "");
  if (only.length && !only.includes(name)) continue;
  const path = join(root, "bench", file);
  const targets = [...runtimes];
  const chromium = !process.env.BENCH_RUNTIMES || process.env.BENCH_RUNTIMES.split(",").includes("chromium");
  if (chromium && /^export const inChromium = true/m.test(readFileSync(path, "utf8"))) targets.push(["chromium", null]);
  // columns[i] = one runtime's merged result per package (in `packages` order).
  const columns = [];
  for (const runtime of targets) {
    const samples = packages.map(() => []);
    for (let r = 0; r < repeat; r++) {
      // Alternate which package goes first, so drift over the run hits both alike.
      const order = packages.map((_, i) => i);
      if (r % 2) order.reverse();
      for (const i of order) {
        const result = await once(file, path, runtime, packages[i][1], packages[i][0]);
        if (result) samples[i].push(result);
      }
    }
    if (samples[0].length) columns.push(samples.map(merge));
  }
  if (!columns.length) continue;
  console.log(`\n### ${name}`);
  table("ns/op", columns);
  const extras = [...new Set(columns.flatMap((c) => c.flatMap((r) => Object.keys(r))))].filter((k) => k !== "runtime" && k !== "rows");
  for (const k of extras) {
    const present = columns.filter((c) => c.some((r) => r[k] !== undefined));
    const values = new Set(present.flatMap((c) => c.map((r) => JSON.stringify(r[k]))));
    if (values.size === 1 && (present.length > 1 || packages.length > 1)) {
      console.log(`\n${k}: ${[...values][0]} (the same in every column)`);
      continue;
    }
    // Numbers by label (ratios, timesMs, firstCallUs; nested as lateness is) get a table like the rows'.
    if (present.every((c) => c.every((r) => numbers(r[k])))) {
      table(k, present.map((c) => c.map((r) => ({ runtime: r.runtime, rows: numbers(r[k]) }))));
      continue;
    }
    const parts = present.flatMap((c) => c.map((r, i) => `${r.runtime}${packages[i][0] ? ` ${packages[i][0]}` : ""} ${JSON.stringify(r[k])}`));
    console.log(`\n${k}: ${parts.join("; ")}`);
  }
}
