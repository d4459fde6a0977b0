// Deadline benchmarks, side by side in one process. Prints one JSON line.
//   node bench/deadline.bench.mjs        deno run -A bench/deadline.bench.mjs
//   workerd: `node bench/run.mjs deadline` runs `run(lib, params)` inside fetch
//   handlers, one request per entry of `requests` (see bench/run.mjs).
//
// workerd allows a request 10 000 active timeouts, and a native
// `AbortSignal.timeout(10_000)` holds one for 10 s whatever happens to its
// signal; so there the native rows are measured in requests of their own,
// 9 000 signals after a 900-signal warm-up, and each request is repeated
// three times (bench/run.mjs takes the median).
import { nsPerOp, nsPerOpAsync, nsPerOpOnce, runtimeName } from "./harness.mjs";

const isWorkerd = typeof globalThis.WebSocketPair === "function";
const noop = () => {};
const MS = 10_000;

/** The rows that create native timeout signals, each a workerd request of its own. */
const NATIVE = {
  "AbortSignal.timeout(10_000)": (parent) => () => AbortSignal.timeout(MS),
  "AbortSignal.any([parent, AbortSignal.timeout(10_000)])": (parent) => () => AbortSignal.any([parent, AbortSignal.timeout(MS)]),
};

export async function run(lib, { native, peers } = {}) {
  const { Deadline } = lib;
  const parent = new AbortController().signal;
  const rows = {};
  if (native) {
    rows[native] = nsPerOpOnce(NATIVE[native](parent), { n: 9_000, warm: 900 });
    return { runtime: runtimeName(), rows };
  }

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
  rows["derived: root.reserve(100).signal() + dispose"] = nsPerOp(() => {
    const d = shared.reserve(100);
    d.signal();
    d.dispose();
  });
  // What p.run arms for a step (js/plan.js): its own controller and a cap
  // timer on the root's queue, told when the deadline aborts.
  if (typeof lib.__watch?.watch === "function") {
    const { watch, unwatch } = lib.__watch;
    rows["plan step's signal: new AbortController + .signal + watch(deadline, cap) + unwatch"] = nsPerOp(() => {
      const c = new AbortController();
      const w = watch(shared, performance.now() + 2_000, noop, noop);
      unwatch(w);
      return c.signal;
    });
  }
  rows["Deadline.in(10_000, { signal: parent }).signal() + dispose (linked)"] = nsPerOp(() => {
    const d = Deadline.in(MS, { signal: parent });
    d.signal();
    d.dispose();
  });
  const linkedRoot = Deadline.in(MS, { signal: parent });
  linkedRoot.signal();
  rows["derived from a linked root: reserve(100).signal() + dispose"] = nsPerOp(() => {
    const d = linkedRoot.reserve(100);
    d.signal();
    d.dispose();
  });
  linkedRoot.dispose();
  shared.dispose();
  if (!isWorkerd) {
    for (const [label, make] of Object.entries(NATIVE)) rows[label] = nsPerOp(make(parent), { n: 20_000 });
  }
  if (peers) {
    const { anySignal, pTimeout, cockatielTimeout, TimeoutStrategy } = peers;
    const never = new Promise(noop);
    rows["any-signal([parent, AbortSignal.timeout(10_000)]) + clear"] = nsPerOp(() => anySignal([parent, AbortSignal.timeout(MS)]).clear(), { n: 20_000 });
    rows["p-timeout(pending, 10_000) + clear"] = nsPerOp(() => {
      const p = pTimeout(never, { milliseconds: MS });
      p.catch(noop);
      p.clear();
    });
    const policy = cockatielTimeout(MS, TimeoutStrategy.Cooperative);
    rows["cockatiel timeout(10_000).execute(sync fn) (async)"] = await nsPerOpAsync(() => policy.execute(noop));
  }
  rows["await of a resolved promise (async floor)"] = await nsPerOpAsync(() => undefined);

  // The boundary measurement behind the design decision (README, "Design"):
  // one Wasm call with a Result return vs the same arithmetic inline in JS.
  const core = lib.__core;
  const at = performance.now() + MS;
  rows["design: remaining() inline in JS"] = nsPerOp(() => {
    const left = at - performance.now();
    return left > 0 ? left : 0;
  }, { n: 1_000_000 });
  if (core) rows["design: budget(at, now, pref) through Wasm"] = nsPerOp(() => core.budget(at, performance.now(), 5_000), { n: 1_000_000 });
  rows["design: Deadline.in(10_000) (validation through Wasm)"] = nsPerOp(() => Deadline.in(MS), { n: 1_000_000 });
  rows["design: new AbortController() + .signal"] = nsPerOp(() => new AbortController().signal);
  rows["design: setTimeout + clearTimeout"] = nsPerOp(() => clearTimeout(setTimeout(noop, MS)));
  rows["design: parent add + removeEventListener"] = nsPerOp(() => {
    parent.addEventListener("abort", noop);
    parent.removeEventListener("abort", noop);
  });
  rows["design: performance.now()"] = nsPerOp(() => performance.now(), { n: 1_000_000 });
  const result = { runtime: runtimeName(), rows };
  if (isWorkerd) {
    const again = [{}, {}];
    const natives = Object.keys(NATIVE).flatMap((native) => [{ native }, { native }, { native }]);
    result.requests = [...again, ...natives];
  }
  return result;
}

// Node and Deno run the bench as a script; workerd imports run() (bench/run.mjs),
// and refuses modules with a top-level await, hence no await at this level.
async function main() {
  const isDeno = typeof Deno !== "undefined";
  const lib = await import(isDeno ? "../pkg/index.js" : "../pkg/node.js");
  const core = await import("../pkg/edge_deadline.js");
  const { watch, unwatch } = await import("../pkg/deadline.js");
  const t0 = performance.now();
  await lib.init();
  const instantiateMs = performance.now() - t0;
  const { anySignal } = await import("any-signal");
  const { TimeoutStrategy, timeout: cockatielTimeout } = await import("cockatiel");
  const { default: pTimeout } = await import("p-timeout");
  const result = await run({ ...lib, __core: core, __watch: { watch, unwatch } }, { peers: { anySignal, pTimeout, cockatielTimeout, TimeoutStrategy } });

  const { readFile } = await import("node:fs/promises");
  const { gzipSync } = await import("node:zlib");
  const pkg = new URL("../pkg/", import.meta.url);
  const gz = async (f) => gzipSync(await readFile(new URL(f, pkg)), { level: 9 }).length;
  const jsFiles = ["api.js", "deadline.js", "edge_deadline.js", "errors.js", "load.js", "node.js"];
  const sizes = { wasmGzipBytes: await gz("edge_deadline_bg.wasm"), jsGzipBytes: (await Promise.all(jsFiles.map(gz))).reduce((a, b) => a + b, 0) };
  console.log(JSON.stringify({ ...result, instantiateMs: +instantiateMs.toFixed(2), sizes }));
}
if (!isWorkerd) main();
