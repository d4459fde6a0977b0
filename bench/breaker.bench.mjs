// Circuit breaker benchmarks: the per-call cost of a breaker that lets calls
// through, which every guarded call pays. Prints one JSON line:
//   { runtime, rows: { label: ns per call } }
//   node bench/breaker.bench.mjs     deno run -A bench/breaker.bench.mjs
// and runs in workerd through bench/run.mjs (`node bench/run.mjs breaker`).
//
// Rows (a closed key; a new key's name crosses into the core once, then its
// slot is cached):
// - "acquire (closed): the check": the admission a guarded call waits for
//   (one clock read, no Wasm call once the key is known closed): the target
//   is ≤ 100 ns.
// - "acquire + success (closed)": with the outcome recorded (a second clock
//   read and one Wasm call, which updates the window).
// - "acquire + failure (closed, opens never)": a failing call counted in the
//   window (consecutiveFailures off, failureRate 1, so it stays closed).
// - "refused (open)": a call refused at once; it builds a CircuitOpen (an Error, with its stack).
// - "cockatiel circuitBreaker.execute (closed, sync fn)": the peer's closed path, for scale.
// - "importState, 50 000 open keys: …" (ms per import, not ns): the bytes of
//   another breaker holding 50 000 open keys, taken in by an empty breaker
//   (maxKeys 50 000), by the same breaker again (every key found, open
//   already), and by a breaker at its default maxKeys (1 000 keys held, most
//   of the import finds no room). The work is linear in the keys held and
//   imported, up to a sort of each.
import { loadPackage, nsPerOp, runtimeName } from "./harness.mjs";

const isWorkerd = typeof globalThis.WebSocketPair === "function";

export async function run(lib, { peers } = {}) {
  const rows = {};
  const b = new lib.CircuitBreaker();
  b.acquire("upstream").success();
  rows["acquire (closed): the check"] = nsPerOp(() => b.acquire("upstream"), { n: 200_000 });
  rows["acquire + success (closed)"] = nsPerOp(() => b.acquire("upstream").success(), { n: 200_000 });
  const f = new lib.CircuitBreaker({ consecutiveFailures: 0, failureRate: 1, minimumCalls: 1_000_000_000 });
  rows["acquire + failure (closed, opens never)"] = nsPerOp(() => f.acquire("upstream").failure(), { n: 200_000 });
  const o = new lib.CircuitBreaker({ consecutiveFailures: 1, openMs: 86_400_000 });
  o.acquire("down").failure();
  rows["refused (open)"] = nsPerOp(() => {
    try {
      o.acquire("down");
    } catch {
      /* CircuitOpen */
    }
  }, { n: 20_000 });
  if (peers?.cockatiel) {
    const { circuitBreaker, handleAll, ConsecutiveBreaker } = peers.cockatiel;
    const c = circuitBreaker(handleAll, { halfOpenAfter: 10_000, breaker: new ConsecutiveBreaker(5) });
    // cockatiel's execute is async: awaiting it per call is what its users pay.
    const n = 50_000;
    const t0 = performance.now();
    for (let i = 0; i < n; i++) await c.execute(() => 1);
    rows["cockatiel circuitBreaker.execute (closed, sync fn, awaited)"] = ((performance.now() - t0) * 1e6) / n;
    const t1 = performance.now();
    for (let i = 0; i < n; i++) await b.run("upstream", () => 1);
    rows["CircuitBreaker.run (closed, sync fn, awaited)"] = ((performance.now() - t1) * 1e6) / n;
  }
  const bytes = openKeys(50_000);
  const msPer = (fn, n = 5) => {
    fn();
    const t0 = performance.now();
    for (let i = 0; i < n; i++) fn();
    return (performance.now() - t0) / n;
  };
  rows["importState, 50 000 open keys: into an empty breaker (ms)"] = msPer(() => {
    const e = new lib.CircuitBreaker({ maxKeys: 50_000 });
    e.importState(bytes);
    e.dispose();
  });
  const full = new lib.CircuitBreaker({ maxKeys: 50_000 });
  full.importState(bytes);
  rows["importState, 50 000 open keys: again, every key held and open (ms)"] = msPer(() => full.importState(bytes));
  full.dispose();
  const small = new lib.CircuitBreaker();
  rows["importState, 50 000 open keys: into a default breaker, 1 000 held (ms)"] = msPer(() => small.importState(bytes));
  small.dispose();
  b.dispose();
  f.dispose();
  o.dispose();
  return { runtime: runtimeName(), rows };
}

/** Exported bytes (the core's format) of a breaker holding `n` keys open for an hour. */
function openKeys(n) {
  const names = Array.from({ length: n }, (_, i) => new TextEncoder().encode(`route-${i}`));
  const size = 17 + names.reduce((s, k) => s + 15 + k.length, 0);
  const out = new Uint8Array(size);
  const v = new DataView(out.buffer);
  out.set([69, 68, 67, 66, 1]); // "EDCB", version 1
  v.setFloat64(5, Date.now(), true);
  v.setUint32(13, n, true);
  let at = 17;
  for (const k of names) {
    v.setUint16(at, k.length, true);
    out.set(k, at + 2);
    at += 2 + k.length;
    out[at] = 1; // open
    v.setUint32(at + 1, 1, true);
    v.setFloat64(at + 5, 3_600_000, true);
    at += 13;
  }
  return out;
}

async function main() {
  const lib = await loadPackage();
  const cockatiel = await import("cockatiel");
  console.log(JSON.stringify(await run(lib, { peers: { cockatiel } })));
}
if (!isWorkerd) main();
