// Deadline benchmarks, side by side in one process. Prints one JSON line.
//   node bench/deadline.bench.mjs        deno run -A bench/deadline.bench.mjs
import { anySignal } from "any-signal";
import { TimeoutStrategy, timeout as cockatielTimeout } from "cockatiel";
import pTimeout from "p-timeout";
import { nsPerOp, nsPerOpAsync, runtimeName } from "./harness.mjs";

const isDeno = typeof Deno !== "undefined";
const lib = await import(isDeno ? "../pkg/index.js" : "../pkg/node.js");
const core = await import("../pkg/edge_deadline.js");

const t0 = performance.now();
await lib.init();
const instantiateMs = performance.now() - t0;

const { Deadline } = lib;
const noop = () => {};
const MS = 10_000;
const parent = new AbortController().signal;
const never = new Promise(noop);
const rows = {};

rows["floor: new AbortController + setTimeout + clearTimeout"] = nsPerOp(() => {
  const c = new AbortController();
  clearTimeout(setTimeout(noop, MS));
  return c;
});
rows["floor with the signal: new AbortController + .signal + setTimeout + clearTimeout"] = nsPerOp(() => {
  const c = new AbortController();
  clearTimeout(setTimeout(noop, MS));
  return c.signal;
});
rows["Deadline.in(10_000).signal() + dispose"] = nsPerOp(() => {
  const d = Deadline.in(MS);
  d.signal();
  d.dispose();
});
const shared = Deadline.in(MS);
shared.signal();
rows["second signal() on the same deadline"] = nsPerOp(() => shared.signal(), { n: 1_000_000 });
shared.dispose();
rows["Deadline.in(10_000, { signal: parent }).signal() + dispose (linked)"] = nsPerOp(() => {
  const d = Deadline.in(MS, { signal: parent });
  d.signal();
  d.dispose();
});
rows["AbortSignal.timeout(10_000)"] = nsPerOp(() => AbortSignal.timeout(MS), { n: 20_000 });
rows["AbortSignal.any([parent, AbortSignal.timeout(10_000)])"] = nsPerOp(() => AbortSignal.any([parent, AbortSignal.timeout(MS)]), { n: 20_000 });
rows["any-signal([parent, AbortSignal.timeout(10_000)]) + clear"] = nsPerOp(() => anySignal([parent, AbortSignal.timeout(MS)]).clear(), { n: 20_000 });
rows["p-timeout(pending, 10_000) + clear"] = nsPerOp(() => {
  const p = pTimeout(never, { milliseconds: MS });
  p.catch(noop);
  p.clear();
});
const policy = cockatielTimeout(MS, TimeoutStrategy.Cooperative);
rows["cockatiel timeout(10_000).execute(sync fn) (async)"] = await nsPerOpAsync(() => policy.execute(noop));
rows["await of a resolved promise (async floor)"] = await nsPerOpAsync(() => undefined);

// The boundary measurement behind the design decision (README, "Design"):
// one Wasm call with a Result return vs the same arithmetic inline in JS.
let at = performance.now() + MS;
rows["design: remaining() inline in JS"] = nsPerOp(() => {
  const left = at - performance.now();
  return left > 0 ? left : 0;
}, { n: 1_000_000 });
rows["design: budget(at, now, pref) through Wasm"] = nsPerOp(() => core.budget(at, performance.now(), 5_000), { n: 1_000_000 });
rows["design: Deadline.in(10_000) (validation through Wasm)"] = nsPerOp(() => Deadline.in(MS), { n: 1_000_000 });
rows["design: performance.now()"] = nsPerOp(() => performance.now(), { n: 1_000_000 });

const { readFile } = await import("node:fs/promises");
const { gzipSync } = await import("node:zlib");
const pkg = new URL("../pkg/", import.meta.url);
const gz = async (f) => gzipSync(await readFile(new URL(f, pkg)), { level: 9 }).length;
const jsFiles = ["api.js", "deadline.js", "edge_deadline.js", "errors.js", "load.js", "node.js"];
const sizes = { wasmGzipBytes: await gz("edge_deadline_bg.wasm"), jsGzipBytes: (await Promise.all(jsFiles.map(gz))).reduce((a, b) => a + b, 0) };
console.log(JSON.stringify({ runtime: runtimeName(), instantiateMs: +instantiateMs.toFixed(2), sizes, rows }));
