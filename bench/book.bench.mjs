// TimeoutBook benchmarks: what recording costs a request, and what one flush
// weighs. Prints one JSON line:
//   { runtime, rows: { label: ns per call }, flush: { … } }
//   node bench/book.bench.mjs     deno run -A bench/book.bench.mjs
// and runs in workerd through bench/run.mjs (`node bench/run.mjs book`).
//
// Rows (the target for record is ≤ 100 ns per call):
// - "record(bucket, ms) (ok, one bucket)": a Map lookup and one scalar Wasm call (the sketch's add);
// - "record(bucket, ms) (ok, 20 buckets in turn)": the same over 20 buckets' sketches;
// - "record(bucket, ms, \"timeout\")": counted in JS, no Wasm call;
// - "timeout(bucket, { fallbackMs }) (served)": two number compares and a Map read once a table is served.
// `flush`: one flush of 20 buckets of 2 000 samples each (a lognormal of
// median 40 ms): its bytes on the wire and the time to write them (takeFlush).
import { loadPackage, nsPerOp, runtimeName } from "./harness.mjs";

const isWorkerd = typeof globalThis.WebSocketPair === "function";

/** Samples of a lognormal (median 40 ms), from a fixed seed. */
function samples(n) {
  let s = 42;
  const u = () => ((s = (s * 1103515245 + 12345) % 2147483648) + 1) / 2147483649;
  return Array.from({ length: n }, () => Math.exp(Math.log(40) + 0.6 * Math.sqrt(-2 * Math.log(u())) * Math.cos(2 * Math.PI * u())));
}

export async function run(lib) {
  const rows = {};
  const xs = samples(4096);
  const names = Array.from({ length: 20 }, (_, i) => `GET /route/${i}`);
  const table = { v: 1, derivedAt: new Date(0).toISOString(), windowMs: 3_600_000, windows: 24, q: 0.99, safety: 1.5, buckets: Object.fromEntries(names.map((n) => [n, { n: 5000, timeoutMs: 250, floorMs: null }])) };
  const aggregator = { fetch: async (request) => (request.method === "GET" ? Response.json(table) : new Response(null, { status: 204 })) };
  const book = new lib.TimeoutBook({ aggregator, onWarning: () => {} });
  await book.refresh();
  let i = 0;
  rows["record(bucket, ms) (ok, one bucket)"] = nsPerOp(() => book.record("GET /route/0", xs[i++ & 4095]), { n: 500_000 });
  let j = 0;
  rows["record(bucket, ms) (ok, 20 buckets in turn)"] = nsPerOp(() => {
    book.record(names[j % 20], xs[j & 4095]);
    j++;
  }, { n: 500_000 });
  rows['record(bucket, ms, "timeout")'] = nsPerOp(() => book.record("GET /route/1", 250, "timeout"), { n: 500_000 });
  const options = { fallbackMs: 1000 };
  rows["timeout(bucket, { fallbackMs }) (served)"] = nsPerOp(() => book.timeout("GET /route/2", options), { n: 500_000 });
  book.takeFlush();
  // One flush of 20 buckets × 2 000 samples.
  for (const n of names) for (let k = 0; k < 2000; k++) book.record(n, xs[k]);
  const t0 = performance.now();
  const [bytes] = book.takeFlush();
  const writeUs = (performance.now() - t0) * 1000;
  return { runtime: runtimeName(), rows, flush: { buckets: 20, samplesPerBucket: 2000, bytes: bytes.length, writeUs: Math.round(writeUs) } };
}

async function main() {
  const lib = await loadPackage();
  console.log(JSON.stringify(await run(lib)));
}
if (!isWorkerd) main();
