// GET /table of a TimeoutAggregator holding 24 full windows (each with 1 000 buckets, near the bucket
// cap, of the widest sketches: 800 latencies from 1 ms to over 2 h per bucket, one per bin; a window
// is then about 1.7 MB, near its default maxWindowBytes of 2 MiB), in Node, on an in-memory
// storage with the clock set per hourly window. What is measured: a flush of 20 of the buckets, stored; the
// first `table()` and the first GET /table (through the HTTP endpoint, with its read token) after it, which
// derive again the rows of the flush's buckets only; `table()` as served from the table kept since the write;
// a GET /table then; the first `table()` in the next window (every span moved: every row derived again).
// Prints one JSON line:
//   node bench/fleet-table.mjs
import { loadPackage, runtimeName } from "./harness.mjs";
import { encodeFlush } from "../tests/fleet/support.js";

await loadPackage();
const { LatencySketch } = await import(new URL("../pkg/derive-main.js", import.meta.url).href);
const { TimeoutAggregator } = await import(new URL("../pkg/durable.js", import.meta.url).href);

const map = new Map();
const storage = {
  list: async () => new Map(map),
  put: async (o) => Object.entries(o).forEach(([k, v]) => map.set(k, v)),
  delete: async (ks) => ks.forEach((k) => map.delete(k)),
  sync: async () => {},
};
const realNow = Date.now;
const hour = 3_600_000;
const start = Math.floor(realNow() / hour) * hour - 23 * hour;
let clock = start;
Date.now = () => clock;
const agg = new TimeoutAggregator({ storage, blockConcurrencyWhile: (f) => f() }, { TIMEOUTS_READ_TOKEN: "bench" });
await new Promise((r) => setTimeout(r, 10));

/** A flush of 20 buckets `g<g>-<b>`, each sketch holding latencies from 1 ms to 1 h, one per bin. */
const wide = (g) =>
  encodeFlush(
    0.01,
    Array.from({ length: 20 }, (_, b) => {
      const sketch = new LatencySketch();
      for (let k = 0; k < 800; k++) sketch.add(1.02 ** (k + (b % 2) / 2));
      return { name: `g${g}-${b}`, inForceMs: 1000, timeouts: 1, errors: 1, sketch };
    }),
  );
// 50 groups of 20 names: 1 000 buckets per window.
const groups = Array.from({ length: 50 }, (_, g) => wide(g));
let flushes = 0;
for (let w = 0; w < 24; w++) {
  clock = start + w * hour + 1;
  for (let i = 0; i < groups.length; i++) {
    try {
      await agg.flush(groups[i % groups.length]);
      flushes++;
    } catch (e) {
      if (e.code !== "WINDOW_FULL") throw e;
      break;
    }
  }
}
clock = start + 23 * hour + hour / 2;
let stored = 0;
for (const [k, v] of map) if (/^w:-?\d+:\d+$/.test(k)) stored += v.byteLength;

const median = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const time = async (f, n) => {
  const xs = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await f();
    xs.push(performance.now() - t0);
  }
  return median(xs);
};
const request = () => new Request("http://agg/table", { headers: { authorization: "Bearer bench" } });
/** Median of `n` rounds of: one flush of 20 of the buckets stored, then `read()` timed alone. */
const flushMs = [];
const afterWrite = async (read, n) => {
  const xs = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await agg.flush(groups[i % 3]);
    flushMs.push(performance.now() - t0);
    const t1 = performance.now();
    await read();
    xs.push(performance.now() - t1);
  }
  return median(xs);
};
// The first read after a write: the rows of the flush's buckets are derived again, the rest kept.
const tableAfterWrite = await afterWrite(() => agg.table(), 9);
const getAfterWrite = await afterWrite(async () => (await agg.fetch(request())).text(), 9);
agg.table();
const served = await time(() => agg.table(), 200);
const get = await time(async () => (await agg.fetch(request())).text(), 200);
// A read in the next window: every span moved, every row is derived again.
clock += hour;
const t2 = performance.now();
agg.table();
const nextWindow = performance.now() - t2;
const buckets = Object.keys(agg.table().buckets).length;
Date.now = realNow;
console.log(JSON.stringify({
  runtime: runtimeName(),
  windows: 24,
  flushes,
  storedBytes: stored,
  buckets,
  flushBytes: groups[0].byteLength,
  ms: {
    "flush() stored (20 buckets: merge, window bytes, write, window loaded back)": median(flushMs),
    "table() the first after a write (the flush's rows derived again)": tableAfterWrite,
    "GET /table through fetch, the first after a write": getAfterWrite,
    "table() served (kept since the write)": served,
    "GET /table through fetch (token, JSON)": get,
    "table() the first in the next window (every row derived again)": nextWindow,
  },
}));
