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
  b.dispose();
  f.dispose();
  o.dispose();
  return { runtime: runtimeName(), rows };
}

async function main() {
  const lib = await loadPackage();
  const cockatiel = await import("cockatiel");
  console.log(JSON.stringify(await run(lib, { peers: { cockatiel } })));
}
if (!isWorkerd) main();
