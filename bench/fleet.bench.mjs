// The fleet aggregator's core work per flush, in Node and Deno: one flush of
// 20 buckets (100 successes each from the seeds' mixture, an in-force value,
// timeouts and errors), its size on the wire, the time to merge it (decode,
// validate, merge into the current window) and the time to serve the table
// of those 20 buckets (derive each over its span: with one such flush per
// hourly window, a span of 10 windows). Prints one JSON line:
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
// A quiet fleet: one such flush per hourly window for a day, so each bucket's span reaches back
// until it holds 1 000 successes (10 windows of 100).
const quiet = new FleetAggregatorCore();
for (let k = 23; k >= 0; k--) quiet.merge(bytes, now - k * 3_600_000);
const rows = {
  "merge one flush of 20 buckets": nsPerOp(() => agg.merge(bytes, now), { n: 2_000, rounds: 5 }),
  "table of 20 buckets": nsPerOp(() => agg.table(now), { n: 200, rounds: 5 }),
  "table of 20 buckets, 100 successes per window (span of 10 windows)": nsPerOp(() => quiet.table(now), { n: 200, rounds: 5 }),
  "window bytes of 20 buckets (for storage)": nsPerOp(() => agg.windowBytes(Math.floor(now / 3_600_000)), { n: 2_000, rounds: 5 }),
};
const windowBytes = agg.windowBytes(Math.floor(now / 3_600_000)).byteLength;
const quietWindowBytes = quiet.windowBytes(Math.floor(now / 3_600_000)).byteLength;
console.log(JSON.stringify({ runtime: runtimeName(), rows, flushBytes: bytes.byteLength, windowBytes, quietWindowBytes }));
