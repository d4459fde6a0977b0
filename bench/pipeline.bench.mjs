// Pipeline benchmarks, side by side in one process. Prints one JSON line.
//   node bench/pipeline.bench.mjs        deno run -A bench/pipeline.bench.mjs
//   workerd: `node bench/run.mjs pipeline` runs `run(lib)` inside a fetch handler.
//
// What the issue asks: the cost of p.run's bookkeeping per step against a bare
// await (target ≤ 1 µs in Node), and header encode/parse against a plain
// parseInt-based JS parse. A step's own AbortSignal + timer + parent listener
// is a host cost every per-step signal pays, so it is measured on its own
// ("signal floor") and subtracted: what is left is the plan's bookkeeping
// (name lookup, clock, one Wasm decision, the trace record).
import { loadPackage, nsPerOp, nsPerOpAsync, runtimeName } from "./harness.mjs";

const isWorkerd = typeof globalThis.WebSocketPair === "function";
const noop = () => {};
const sync = () => 1;
const RUNS_PER_PLAN = 1_000;

// ---- plans ------------------------------------------------------------------

/**
 * Async ns/op of `a` and `b` measured in alternating rounds (a, b, a, b …) so
 * load from other processes hits both alike; medians of each and of the
 * per-round differences b − a.
 */
async function paired(a, b, { n = 20_000, rounds = 21 } = {}) {
  const ta = [];
  const tb = [];
  const time = async (fn) => {
    const t0 = performance.now();
    for (let i = 0; i < n; i++) await fn();
    return ((performance.now() - t0) * 1e6) / n;
  };
  for (let r = -1; r < rounds; r++) {
    const x = await time(a);
    const y = await time(b);
    if (r >= 0) ta.push(x), tb.push(y);
  }
  const median = (v) => v.slice().sort((p, q) => p - q)[v.length >> 1];
  return { a: median(ta), b: median(tb), diff: median(tb.map((y, i) => y - ta[i])) };
}

export async function run(lib) {
  const core = lib.__core;
  const { Deadline, plan } = lib;
  const rows = {};
  const deadline = Deadline.in(1e9);
  const parent = deadline.signal();

  // What any step with its own capped, linked signal costs the host: a fresh
  // AbortController and its signal, one timer armed and cleared, one listener
  // added to and removed from the deadline's signal, one promise.
  const floor = () =>
    new Promise((resolve) => {
      const c = new AbortController();
      const s = c.signal;
      const t = setTimeout(noop, 1e6);
      parent.addEventListener("abort", noop);
      Promise.resolve(sync(s)).then((v) => {
        clearTimeout(t);
        parent.removeEventListener("abort", noop);
        resolve(v);
      });
    });

  const steps = [
    { name: "retrieve", minMs: 10, preferredMs: 2_000, kind: "optional" },
    { name: "generate", minMs: 100, kind: "mandatory", reserveMs: 200 },
    { name: "respond", minMs: 50, kind: "fallback" },
  ];
  let p;
  let runs = RUNS_PER_PLAN;
  const fresh = () => {
    if (runs === RUNS_PER_PLAN) (p = plan(deadline, steps)), (runs = 0);
    runs++;
    return p;
  };
  // What p.run itself arms for a step's signal (js/plan.js): a fresh
  // AbortController, a cap timer that the deadline's abort also reaches
  // (`watch`: in workerd on the root's queue, elsewhere a host timer), one
  // promise. The bookkeeping row subtracts this from p.run.
  const { watch, unwatch } = lib.__watch ?? {};
  const stepFloor = () =>
    new Promise((resolve) => {
      const c = new AbortController();
      const s = c.signal;
      const w = watch(deadline, performance.now() + 1e6, noop, noop);
      Promise.resolve(sync(s)).then((v) => {
        unwatch(w);
        resolve(v);
      });
    });

  const bare = await paired(() => sync(), floor);
  rows["bare await of a sync fn"] = bare.a;
  const naive = await paired(floor, () => fresh().run("retrieve", sync));
  rows["signal floor: AbortController + .signal + setTimeout/clearTimeout + add/removeEventListener + Promise"] = naive.a;
  rows["p.run(step, sync fn): one whole step"] = naive.b;
  rows["p.run − signal floor (paired rounds)"] = naive.diff;
  if (watch) {
    const step = await paired(stepFloor, () => fresh().run("retrieve", sync));
    rows["step signal floor: AbortController + .signal + watch/unwatch + Promise"] = step.a;
    rows["p.run bookkeeping (p.run − step signal floor, paired rounds)"] = step.diff;
  }
  rows["p.run − bare await (paired rounds)"] = (await paired(() => sync(), () => fresh().run("retrieve", sync))).diff;
  let log = 0;
  let hp;
  let hruns = RUNS_PER_PLAN;
  const withHook = () => {
    if (hruns === RUNS_PER_PLAN) (hp = plan(deadline, steps, { onStep: (r) => (log += r.capMs) })), (hruns = 0);
    hruns++;
    return hp;
  };
  rows["onStep hook (p.run with − without, paired rounds)"] = (await paired(() => fresh().run("retrieve", sync), () => withHook().run("retrieve", sync))).diff;
  const tight = Deadline.in(100_000);
  const skipping = [
    { name: "enrich", minMs: 200_000, kind: "optional" },
    { name: "respond", minMs: 10, kind: "fallback" },
  ];
  let sp;
  let sruns = RUNS_PER_PLAN;
  rows["p.run of a skipped optional step (no signal, reason from the core)"] = await nsPerOpAsync(() => {
    if (sruns === RUNS_PER_PLAN) (sp = plan(tight, skipping)), (sruns = 0);
    sruns++;
    return sp.run("enrich", sync);
  });
  // What awaiting p.run, d.step, retry or hedge costs for keeping Node or Deno
  // alive while the work is pending (js/keepalive.js): a Promise subclass whose
  // first `then` refs one shared interval, against a plain promise.
  const pending = lib.__pending;
  if (pending) rows["design: await of a keep-alive promise − a plain one (paired rounds)"] = (await paired(() => new Promise((r) => r(1)), () => pending((r) => r(1)))).diff;
  rows["plan(deadline, 3 steps) (validation in Wasm)"] = nsPerOp(() => plan(deadline, steps), { n: 20_000 });
  const traced = plan(deadline, steps);
  for (let i = 0; i < 3; i++) await traced.run(steps[i].name, sync);
  rows["p.trace() of 3 records (JSON.stringify of the records)"] = nsPerOp(() => traced.trace(), { n: 20_000 });

  // The boundary decision (src/wasm/plan.rs): one scalar Wasm call per
  // decision vs an answer built as an object through serde (what `p.run` would pay per
  // step if the hot path took structured data: the rare planRefusal does).
  const at = deadline.at;
  // Raw exports of the build being measured: rows left out where it has none of that name.
  const has = (...names) => names.every((n) => typeof core?.[n] === "function");
  if (has("planNew", "planCap", "planRefusal")) {
    const info = core.planNew(at, 1_000, steps, undefined).steps[0];
    rows["design: core.planCap (scalar in, scalar out)"] = nsPerOp(() => core.planCap(false, 10, 2_000, 205, at, 1_000), { n: 1_000_000 });
    rows["design: core.planRefusal (scalars in, a Refusal out through serde)"] = nsPerOp(
      () => core.planRefusal(info.kind, info.minMs, info.preferredMs, info.heldAfterMs, at, at),
      { n: 100_000 },
    );
  }
  if (has("planDecide")) rows["design: core.planDecide (scalar in, scalar out)"] = nsPerOp(() => core.planDecide(1, 10, 2_000, 205, at, 1_000), { n: 1_000_000 });
  if (has("stallDecide")) {
    rows["design: a Wasm call answering a Float64Array(4) (core.stallDecide)"] = nsPerOp(() => core.stallDecide(1_000, 1_000, at, 0, undefined, 0, 0, 1_000), { n: 1_000_000 });
  }
  rows["design: performance.now()"] = nsPerOp(() => performance.now(), { n: 1_000_000 });

  // ---- headers --------------------------------------------------------------------

  const GRPC_UNIT_MS = { H: 3_600_000, M: 60_000, S: 1_000, m: 1, u: 1e-3, n: 1e-6 };
  /** The plain JS parse most code carries: lenient (accepts "1e3S" as 1 s, "12abcS"…). */
  const jsParseGrpc = (v) => parseInt(v.slice(0, -1), 10) * GRPC_UNIT_MS[v[v.length - 1]];
  const jsParseMs = (v) => parseInt(v, 10);
  const values = ["100m", "30000000u", "2S", "99999999n"];
  let sink = 0;
  rows["parseHeader('grpc-timeout', …) (strict, Wasm)"] = nsPerOp((i) => (sink += lib.parseHeader("grpc-timeout", values[i & 3])), { n: 200_000 });
  rows["plain JS parseInt grpc-timeout parse"] = nsPerOp((i) => (sink += jsParseGrpc(values[i & 3])), { n: 1_000_000 });
  rows["parseHeader('connect-timeout-ms', '5000') (strict, Wasm)"] = nsPerOp(() => (sink += lib.parseHeader("connect-timeout-ms", "5000")), { n: 200_000 });
  rows["plain JS parseInt('5000', 10)"] = nsPerOp(() => (sink += jsParseMs("5000")), { n: 1_000_000 });
  const remainings = [29_999.99, 1.5, 100, 2_147_483_647];
  rows["encodeHeader('grpc-timeout', …) (Wasm, rounds down exactly)"] = nsPerOp((i) => lib.encodeHeader("grpc-timeout", remainings[i & 3]), { n: 200_000 });
  rows["plain JS grpc-timeout encode (Math.floor, ms unit)"] = nsPerOp((i) => `${Math.floor(remainings[i & 3])}m`, { n: 1_000_000 });
  rows["encodeHeader('connect-timeout-ms', …) (Wasm)"] = nsPerOp((i) => lib.encodeHeader("connect-timeout-ms", remainings[i & 3]), { n: 200_000 });
  rows["toHeaders(deadline) (default header)"] = nsPerOp(() => lib.toHeaders(deadline), { n: 200_000 });
  const incoming = { "content-type": "application/grpc", "grpc-timeout": "100m", "user-agent": "x" };
  rows["Deadline.fromHeaders(plain object, 3 headers)"] = nsPerOp(() => Deadline.fromHeaders(incoming, { maxMs: 5_000 }), { n: 100_000 });
  const h = new Headers(incoming);
  rows["Deadline.fromHeaders(Headers, 3 headers)"] = nsPerOp(() => Deadline.fromHeaders(h, { maxMs: 5_000 }), { n: 100_000 });

  if (!Number.isFinite(sink + log)) throw new Error("bench sink");
  deadline.dispose();
  return { runtime: runtimeName(), rows };
}

// Node and Deno run the bench as a script; workerd imports run() (bench/run.mjs),
// and refuses modules with a top-level await, hence no await at this level.
async function main() {
  console.log(JSON.stringify(await run(await loadPackage())));
}
if (!isWorkerd) main();
