// Hand-off lateness: how long after a plan step's cap the next step can
// start, the time the plan's `marginMs` is held for (src/core/plan.rs, "The
// hand-off margin"). A step that ignores its signal is cut at its cap; the
// lateness is the moment `p.run` has rejected and the caller's code runs
// again, minus the cap instant. Measured on an idle event loop and on one kept
// busy by back-to-back CPU tasks of 1 ms and 5 ms (a server handling other
// requests), in Node, Deno, workerd (bench/run.mjs) and Chromium
// (`node bench/run.mjs lateness` runs all four). Figures: BENCHMARKS.md.
import { loadPackage, runtimeName } from "./harness.mjs";

const isWorkerd = globalThis.navigator?.userAgent === "Cloudflare-Workers";
export const inChromium = true;

const SAMPLES = 200;
const CAP_MS = 10;

function spin(iterations) {
  let x = 0;
  for (let i = 0; i < iterations; i++) x = (x + i * 2654435761) % 1_000_003;
  return x;
}

/** Iterations of `spin` taking about `ms`, measured here. */
function calibrate(ms) {
  for (let n = 100_000; n < 1e9; n *= 4) {
    const t0 = performance.now();
    spin(n);
    const took = performance.now() - t0;
    if (took >= 5) return Math.max(1, Math.round((n * ms) / took));
  }
  throw new Error("the clock does not move during CPU work here: lateness cannot be measured");
}

/** p50 / p99 / max of the samples, in ms to 0.01. */
function summary(samples) {
  const s = [...samples].sort((a, b) => a - b);
  const at = (q) => s[Math.min(s.length - 1, Math.floor(q * s.length))];
  const r = (v) => Math.round(v * 100) / 100;
  return { p50: r(at(0.5)), p99: r(at(0.99)), max: r(s[s.length - 1]) };
}

async function handOffs(lib, taskMs) {
  let busy = taskMs > 0;
  const iterations = busy ? calibrate(taskMs) : 0;
  // Each task queues the next without a timer clamp where the host has a
  // way that still lets timers run (Node: setImmediate; browsers and Deno: a
  // MessageChannel), else setTimeout(0): the loop never idles.
  const immediate = typeof globalThis.setImmediate === "function" && !isWorkerd;
  const channel = !immediate && typeof MessageChannel === "function" && !isWorkerd ? new MessageChannel() : null;
  const next = immediate ? () => setImmediate(hog) : channel ? () => channel.port2.postMessage(0) : () => setTimeout(hog, 0);
  function hog() {
    if (!busy) return;
    spin(iterations);
    next();
  }
  if (channel) channel.port1.onmessage = hog;
  if (busy) next();
  const late = [];
  try {
    for (let i = 0; i < SAMPLES; i++) {
      const d = lib.Deadline.in(10_000);
      const p = lib.plan(d, [{ name: "work", minMs: 1, preferredMs: CAP_MS, kind: "optional" }, { name: "respond", minMs: 1, kind: "fallback" }], { marginMs: 0 });
      let capAt = 0;
      await p.run("work", (signal, budgetMs) => {
        capAt = performance.now() + budgetMs;
        return new Promise(() => {});
      }).catch(() => undefined);
      late.push(performance.now() - capAt);
      d.dispose();
    }
  } finally {
    busy = false;
    channel?.port1.close();
  }
  return summary(late);
}

export async function run(lib) {
  const lateness = {};
  for (const taskMs of [0, 1, 5]) lateness[taskMs ? `busy, ${taskMs} ms tasks` : "idle"] = await handOffs(lib, taskMs);
  const runtime = isWorkerd ? "workerd" : typeof window !== "undefined" ? navigator.userAgent.match(/HeadlessChrome\/[\d.]+/)?.[0] ?? "chromium" : runtimeName();
  return { runtime, rows: {}, lateness };
}

// Node and Deno run the bench as a script; workerd and Chromium import run()
// (bench/run.mjs), and workerd refuses a top-level await.
async function main() {
  console.log(JSON.stringify(await run(await loadPackage())));
}
if (!isWorkerd && typeof window === "undefined") main();
