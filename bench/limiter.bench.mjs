// ConcurrencyLimiter benchmarks. Prints one JSON line:
//   { runtime, rows: { label: ns per call } }
//   node bench/limiter.bench.mjs      deno run -A bench/limiter.bench.mjs      node bench/run.mjs limiter (also workerd)
//
// The per-call cost of holding a slot: `tryAcquire()` + `release()` (target:
// at most 200 ns for the adaptive limits in Node, Deno and workerd). A
// release of an adaptive limiter reads the clock twice and crosses into
// Wasm once with the round trip; a fixed limiter that never queues holds no
// machine and only counts. `run(fn)` adds the promises (awaited one at a
// time, so the row includes a microtask turn); the fixed limiter's `run` is
// the path that existed before adaptive limits.
import { loadPackage, nsPerOpAsync, nsPerOpInterleaved, runtimeName } from "./harness.mjs";

const isWorkerd = typeof globalThis.WebSocketPair === "function";

export async function run(lib) {
  const make = (options) => {
    try {
      return new lib.ConcurrencyLimiter(options);
    } catch {
      return undefined; // a build without adaptive limits (bench/run.mjs --before)
    }
  };
  const limiters = {
    fixed: make({ limit: 1_000 }),
    "fixed, maxQueue 10": make({ limit: 1_000, maxQueue: 10 }),
    aimd: make({ limit: "aimd" }),
    // Past its first probe (50 calls), as in a long-running isolate.
    gradient2: make({ limit: "gradient2", minLimit: 1 }),
  };
  const cases = {};
  for (const [label, l] of Object.entries(limiters)) {
    if (typeof l?.tryAcquire !== "function") continue;
    if (label === "gradient2") for (let i = 0; i < 100; i++) l.tryAcquire().release();
    cases[`${label}: tryAcquire() + release()`] = [() => l.tryAcquire().release(), 1_000_000];
  }
  const rows = nsPerOpInterleaved(cases);
  const value = () => 1;
  for (const label of ["fixed", "aimd", "gradient2"]) {
    const l = limiters[label];
    if (l !== undefined) rows[`${label}: await run(() => 1)`] = await nsPerOpAsync(() => l.run(value), { n: 100_000 });
  }
  rows["design: performance.now()"] = nsPerOpInterleaved({ now: [() => performance.now(), 1_000_000] }).now;
  return { runtime: runtimeName(), rows };
}

async function main() {
  const lib = await loadPackage();
  console.log(JSON.stringify(await run(lib)));
}
if (!isWorkerd) main();
