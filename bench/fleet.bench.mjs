// The fleet aggregator's core work per flush, in Node and Deno: one flush of
// 20 buckets (100 successes each from the seeds' mixture, an in-force value,
// timeouts and errors), its size on the wire, the time to merge it (decode,
// validate, merge into the current window) and the time to serve the table
// of those 20 buckets (derive each over its span). Prints one JSON line:
//   node bench/fleet.bench.mjs        deno run -A bench/fleet.bench.mjs
import { loadPackage, nsPerOp, runtimeName } from "./harness.mjs";
import { benchFlush } from "../tests/fleet/support.js";

const base = new URL("../pkg/", import.meta.url);
await loadPackage();
const { FleetAggregatorCore, isReady, notReady, LatencySketch } = await import(new URL("derive-main.js", base).href);
if (!isReady()) notReady("bench");

const bytes = benchFlush(LatencySketch, 20, 100);
const agg = new FleetAggregatorCore();
const now = Date.now();
const rows = {
  "merge one flush of 20 buckets": nsPerOp(() => agg.merge(bytes, now), { n: 2_000, rounds: 5 }),
  "table of 20 buckets": nsPerOp(() => agg.table(now), { n: 200, rounds: 5 }),
  "window bytes of 20 buckets (for storage)": nsPerOp(() => agg.windowBytes(Math.floor(now / 3_600_000)), { n: 2_000, rounds: 5 }),
};
console.log(JSON.stringify({ runtime: runtimeName(), rows, flushBytes: bytes.byteLength, windowBytes: agg.windowBytes(Math.floor(now / 3_600_000)).byteLength }));
