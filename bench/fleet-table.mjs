// GET /table of a TimeoutAggregator holding 24 full windows (each with 1 000 buckets, near the bucket
// cap, of the widest sketches: 800 latencies from 1 ms to over 2 h per bucket, one per bin; a window
// is then about 1.7 MB, near its default maxWindowBytes of 2 MiB), in Node, on an in-memory
// storage with the clock set per hourly window. Two fleets:
// - quiet: each bucket's 800 successes per window are fewer than the 1 000 a span needs (q 0.99), so a
//   span reaches back two windows whatever the current one: at a new window no span moves. What is
//   measured: a flush of 20 of the buckets, stored; the first `table()` and the first GET /table (through
//   the HTTP endpoint, with its read token) after it, which derive again the rows of the flush's buckets
//   only; `table()` as served from the table kept since the write; a GET /table then; the first `table()`
//   in the next window (no span moved: every row kept).
// - busy: each group flushed twice per window, 1 600 successes per bucket and window: a span is the
//   current window and the one before, so at a new window every span moves. What is measured: the first
//   `table()` in the next window (every row derived again), and the first GET /table in the next window
//   of a second object on the same storage (loaded from it, its table read once before).
// Prints one JSON line:
//   node bench/fleet-table.mjs
import { loadPackage, runtimeName } from "./harness.mjs";
import { encodeFlush } from "../tests/fleet/support.js";

await loadPackage();
const { LatencySketch } = await import(new URL("../pkg/derive-main.js", import.meta.url).href);
const { TimeoutAggregator } = await import(new URL("../pkg/durable.js", import.meta.url).href);

const realNow = Date.now;
const hour = 3_600_000;
const start = Math.floor(realNow() / hour) * hour - 23 * hour;
let clock = start;
Date.now = () => clock;

/** An in-memory storage of a Durable Object. */
const memoryStorage = (map) => ({
  list: async () => new Map(map),
  put: async (o) => Object.entries(o).forEach(([k, v]) => map.set(k, v)),
  delete: async (ks) => ks.forEach((k) => map.delete(k)),
  sync: async () => {},
});
const object = async (map) => {
  const agg = new TimeoutAggregator({ storage: memoryStorage(map), blockConcurrencyWhile: (f) => f() }, { TIMEOUTS_READ_TOKEN: "bench" });
  await new Promise((r) => setTimeout(r, 10));
  return agg;
};

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

/** 24 hourly windows, each group flushed `times` times into each; the clock then halfway through the last. */
const fill = async (agg, times) => {
  let flushes = 0;
  for (let w = 0; w < 24; w++) {
    clock = start + w * hour + 1;
    for (let t = 0; t < times; t++) {
      for (const g of groups) {
        try {
          await agg.flush(g);
          flushes++;
        } catch (e) {
          if (e.code !== "WINDOW_FULL") throw e;
          break;
        }
      }
    }
  }
  clock = start + 23 * hour + hour / 2;
  return flushes;
};

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
const once = async (f) => {
  const t0 = performance.now();
  await f();
  return performance.now() - t0;
};
const request = () => new Request("http://agg/table", { headers: { authorization: "Bearer bench" } });
const get = (agg) => async () => (await agg.fetch(request())).text();

// The quiet fleet.
const map = new Map();
const agg = await object(map);
const flushes = await fill(agg, 1);
let stored = 0;
for (const [k, v] of map) if (/^w:-?\d+:\d+$/.test(k)) stored += v.byteLength;
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
const getAfterWrite = await afterWrite(get(agg), 9);
agg.table();
const served = await time(() => agg.table(), 200);
const getServed = await time(get(agg), 200);
// A read in the next window: no span moved, every row is kept.
clock += hour;
const quietNext = await once(() => agg.table());
const buckets = Object.keys(agg.table().buckets).length;

// The busy fleet, and a second object on its storage.
const busyMap = new Map();
const busy = await object(busyMap);
const busyFlushes = await fill(busy, 2);
const second = await object(busyMap);
busy.table();
await get(second)();
// A read in the next window: every span moved, every row is derived again.
clock += hour;
const busyNext = await once(() => busy.table());
const busyGetNext = await once(get(second));
Date.now = realNow;
console.log(JSON.stringify({
  runtime: runtimeName(),
  windows: 24,
  flushes,
  busyFlushes,
  storedBytes: stored,
  buckets,
  flushBytes: groups[0].byteLength,
  ms: {
    "flush() stored (20 buckets: merge, window bytes, write, window loaded back)": median(flushMs),
    "table() the first after a write (the flush's rows derived again)": tableAfterWrite,
    "GET /table through fetch, the first after a write": getAfterWrite,
    "table() served (kept since the write)": served,
    "GET /table through fetch (token, JSON)": getServed,
    "quiet: table() the first in the next window (no span moved: every row kept)": quietNext,
    "busy: table() the first in the next window (every span moved: every row derived again)": busyNext,
    "busy: GET /table through fetch, the first in the next window": busyGetNext,
  },
}));
