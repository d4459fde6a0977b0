// What the package costs before it does anything: sizes and start-up time,
// measured in one run for BENCHMARKS.md ("Size and start-up").
//
//   node bench/startup.mjs [runs=10]
//   BASELINE=/path/to/old/pkg node bench/startup.mjs   also times an older build,
//     interleaved run by run: one whose Node entry loads its .wasm itself (its
//     package.json lists ./node.js as a side effect) the same way; an older one
//     with `await init()` (Deno with --allow-read)
//
// - Sizes: each entry's .wasm plus every JS module its static import graph
//   loads, gzipped file by file (level 9) as they ship in the package; and the
//   same JS bundled and minified by esbuild (what a bundler or
//   `wrangler deploy --minify` ships).
// - Start-up, in a fresh process each time (median of `runs`), Node, Deno, Node 22/24/26 and Bun:
//   `import` of the entry → the first `Deadline.in(…).signal()` returned (the
//   first call loads the .wasm: no init()); then, in other fresh processes,
//   the .wasm alone: validate (`WebAssembly.validate`), compile (`new
//   WebAssembly.Module`; a runtime that compiles lazily takes about as long as
//   it validates) and instantiate (the glue's `initSync`).
// Build pkg/ first (node scripts/build.mjs).
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { bundledGzip, entrySize } from "../scripts/sizes.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const pkg = join(root, "pkg");
const deno = join(root, "node_modules/@deno/linux-x64-glibc/deno");
// Node 22, 24 and 26 and Bun from the npm registry (package.json), beside the Node running this script.
const binaries = {
  "node 22": join(root, "node_modules/node22/bin/node"),
  "node 24": join(root, "node_modules/node24/bin/node"),
  "node 26": join(root, "node_modules/node26/bin/node"),
  bun: join(root, "node_modules/@oven/bun-linux-x64/bin/bun"),
};
const runs = Number(process.argv[2] ?? 10);
const kb = (b) => `${(b / 1024).toFixed(1)} KB`;
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

// ---- sizes -------------------------------------------------------------------------

const sizes = [];
for (const [label, entry] of [
  ["edge-deadline (browser entry)", "index.js"],
  ["edge-deadline/derive (browser entry)", "derive-index.js"],
]) {
  const { wasm, js, files } = entrySize(pkg, entry);
  sizes.push({ label, wasm, js, files: files.length, bundled: await bundledGzip(pkg, entry) });
}

// ---- start-up ----------------------------------------------------------------------

const tmp = mkdtempSync(join(tmpdir(), "edge-deadline-startup-"));
process.on("exit", () => rmSync(tmp, { recursive: true, force: true }));

/**
 * Runs each `[runtime, source]` as a module in a fresh process, `runs` times,
 * interleaved (so they share the machine's load); the medians of the JSON each prints.
 */
function fresh(name, variants) {
  const jobs = variants.map(([runtime, source], i) => {
    const file = join(tmp, `${name}-${i}.mjs`);
    writeFileSync(file, source);
    // No permission flags: the Deno entry must need none (the old build's read its .wasm).
    const flags = source.includes("BASELINE") || source.includes("readFileSync") ? ["--allow-read"] : [];
    return { cmd: runtime === "deno" ? deno : (binaries[runtime] ?? process.execPath), args: runtime === "deno" ? ["run", ...flags, file] : [file], samples: [] };
  });
  for (let i = 0; i < runs; i++) {
    for (const job of jobs) {
      const out = execFileSync(job.cmd, job.args, { encoding: "utf8", env: { ...process.env, DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1" } });
      job.samples.push(JSON.parse(out.trim().split("\n").pop()));
    }
  }
  return jobs.map(({ samples }) => Object.fromEntries(Object.keys(samples[0]).map((k) => [k, median(samples.map((s) => s[k]))])));
}

const url = (f, dir = pkg) => pathToFileURL(join(dir, f)).href;
const baseline = process.env.BASELINE;
const selfLoading = (dir) => JSON.parse(readFileSync(join(dir, "package.json"), "utf8")).sideEffects?.includes?.("./node.js") === true;
const firstSignal = (entry, dir = pkg) => `const t0 = performance.now();
const { Deadline, init } = await import(${JSON.stringify(url(entry, dir))});
const t1 = performance.now();
${selfLoading(dir) ? "" : "await init(); // BASELINE: its entries need init()"}
const signal = Deadline.in(1_000).signal();
const t2 = performance.now();
if (signal.aborted) throw new Error("aborted already");
console.log(JSON.stringify({ importMs: t1 - t0, firstCallMs: t2 - t1, totalMs: t2 - t0 }));
`;
const wasmAlone = `import { glue } from ${JSON.stringify(url("main.js"))};
import { readFileSync } from "node:fs";
const bytes = readFileSync(new URL(${JSON.stringify(url("edge_deadline_bg.wasm"))}));
const tv = performance.now();
WebAssembly.validate(bytes);
const t0 = performance.now();
const module = new WebAssembly.Module(bytes);
const t1 = performance.now();
glue.initSync({ module });
const t2 = performance.now();
console.log(JSON.stringify({ validateMs: t0 - tv, compileMs: t1 - t0, instantiateMs: t2 - t1 }));
`;

const startup = {};
const oldDeno = baseline && selfLoading(baseline) ? "deno.js" : "index.js";
const others = Object.keys(binaries).map((runtime) => [runtime, "node.js", "node.js"]);
for (const [runtime, entry, oldEntry] of [["node", "node.js", "node.js"], ["deno", "deno.js", oldDeno], ...others]) {
  const [now, old] = fresh(`first-${runtime}`, [[runtime, firstSignal(entry)], ...(baseline ? [[runtime, firstSignal(oldEntry, baseline)]] : [])]);
  const [wasm] = fresh(`wasm-${runtime}`, [[runtime, wasmAlone]]);
  startup[runtime] = { ...now, ...wasm };
  if (old) startup[`${runtime} (baseline)`] = old;
}

// ---- report ------------------------------------------------------------------------

const version = (cmd, args) => execFileSync(cmd, args, { encoding: "utf8" }).split("\n")[0].trim();
console.log(`node ${process.version}, ${version(deno, ["--version"])}; ${runs} fresh processes per figure (median)\n`);
console.log("| entry | .wasm gzip | JS gzip, file by file (files) | total | JS bundled + minified, gzip | total bundled |");
console.log("|---|---:|---:|---:|---:|---:|");
for (const s of sizes) {
  console.log(`| ${s.label} | ${kb(s.wasm)} | ${kb(s.js)} (${s.files - 1}) | ${kb(s.wasm + s.js)} | ${kb(s.bundled)} | ${kb(s.wasm + s.bundled)} |`);
}
console.log("\n| runtime | import → first `Deadline.in(…).signal()` | of which import | first call (loads the .wasm) | validate alone | compile alone | instantiate alone |");
console.log("|---|---:|---:|---:|---:|---:|---:|");
for (const [runtime, t] of Object.entries(startup)) {
  const ms = (x) => `${x.toFixed(1)} ms`;
  const opt = (x) => (x === undefined ? "–" : ms(x));
  console.log(`| ${runtime} | ${ms(t.totalMs)} | ${ms(t.importMs)} | ${ms(t.firstCallMs)} | ${opt(t.validateMs)} | ${opt(t.compileMs)} | ${opt(t.instantiateMs)} |`);
}
console.log("\n" + JSON.stringify({ sizes, startup, wasmBytes: readFileSync(join(pkg, "edge_deadline_bg.wasm")).length }));
