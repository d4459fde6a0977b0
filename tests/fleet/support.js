// What the fleet tests share (workerd workers, the Deno KV test, the Node
// driver): the seeded latency mixture, the flush encoder of simulated
// isolates, exact quantiles, and a tiny case runner. Plain ES modules: no
// runtime's own APIs.

/** splitmix32-style generator: deterministic floats in (0, 1) (as tests/js/latency-data.js). */
export function rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x21f0aaad);
    z = Math.imul(z ^ (z >>> 15), 0x735a2d97);
    z ^= z >>> 15;
    return ((z >>> 0) + 0.5) / 4294967296;
  };
}

const normal = (u) => Math.sqrt(-2 * Math.log(u())) * Math.cos(2 * Math.PI * u());

/**
 * The latency mixture per bucket: "chat" is the seeds' shape (lognormal body,
 * median 40 ms, σ 0.35, and 0.5% uniform 0.3–1.5 s tail); "search" a wider
 * lognormal (median 120 ms, σ 0.5). `scale` multiplies every value (a shift).
 */
export const BUCKETS = {
  chat: (u, scale = 1) => scale * (u() < 0.005 ? 300 + 1200 * u() : 40 * Math.exp(0.35 * normal(u))),
  search: (u, scale = 1) => scale * 120 * Math.exp(0.5 * normal(u)),
};

/** The `q`-quantile of sorted samples by rank (the core's definition). */
export function exact(sorted, q) {
  return sorted[Math.floor(q * (sorted.length - 1))];
}

/**
 * Flush bytes (the fleet's wire format) from `{ name, inForceMs?, timeouts, errors, sketch? }`
 * buckets, `sketch` a LatencySketch of edge-deadline/derive.
 */
export function encodeFlush(relativeError, buckets) {
  const enc = new TextEncoder();
  const parts = buckets.map((b) => ({ ...b, nameBytes: enc.encode(b.name), sk: b.sketch && b.sketch.count > 0 ? b.sketch.toBytes() : new Uint8Array(0) }));
  const size = 4 + 1 + 8 + 4 + parts.reduce((n, p) => n + 2 + p.nameBytes.length + 8 + 8 + 8 + 4 + p.sk.length, 0);
  const out = new Uint8Array(size);
  const v = new DataView(out.buffer);
  out.set([0x45, 0x44, 0x54, 0x42], 0); // "EDTB"
  let at = 4;
  v.setUint8(at, 1), (at += 1);
  v.setFloat64(at, relativeError, true), (at += 8);
  v.setUint32(at, parts.length, true), (at += 4);
  for (const p of parts) {
    v.setUint16(at, p.nameBytes.length, true), (at += 2);
    out.set(p.nameBytes, at), (at += p.nameBytes.length);
    v.setFloat64(at, p.inForceMs ?? NaN, true), (at += 8);
    v.setBigUint64(at, BigInt(p.timeouts ?? 0), true), (at += 8);
    v.setBigUint64(at, BigInt(p.errors ?? 0), true), (at += 8);
    v.setUint32(at, p.sk.length, true), (at += 4);
    out.set(p.sk, at), (at += p.sk.length);
  }
  return out;
}

/**
 * `isolates` simulated isolates, each serving `requests` requests (a bucket
 * each, 1% errors) and flushing every `every` requests through `post(bytes)`.
 * Answers every success per bucket, sorted, and the error counts.
 */
export async function simulate({ LatencySketch, isolates, requests, every = 500, seed = 1, scale = 1, post }) {
  const all = { chat: [], search: [] };
  const errors = { chat: 0, search: 0 };
  const flushes = [];
  for (let i = 0; i < isolates; i++) {
    const u = rng(seed * 1000 + i);
    let book = null;
    const flush = () => {
      if (!book) return;
      const bytes = encodeFlush(0.01, Object.entries(book).map(([name, b]) => ({ name, timeouts: 0, errors: b.errors, sketch: b.sketch })));
      for (const b of Object.values(book)) b.sketch.free();
      book = null;
      flushes.push(post(bytes));
    };
    for (let r = 0; r < requests; r++) {
      book ??= { chat: { sketch: new LatencySketch(), errors: 0 }, search: { sketch: new LatencySketch(), errors: 0 } };
      const name = u() < 0.6 ? "chat" : "search";
      const ms = BUCKETS[name](u, scale);
      if (u() < 0.01) {
        book[name].errors++;
        errors[name]++;
      } else {
        book[name].sketch.add(ms);
        all[name].push(ms);
      }
      if ((r + 1) % every === 0) flush();
    }
    flush();
  }
  const statuses = await Promise.all(flushes);
  for (const k of Object.keys(all)) all[k].sort((a, b) => a - b);
  return { all, errors, statuses };
}

/** Hostile flushes: truncated, random, huge counts, NaN, another relative error, trailing, too big. */
export function hostileFlushes(LatencySketch) {
  const s = new LatencySketch();
  for (let i = 1; i <= 300; i++) s.add(i);
  const good = encodeFlush(0.01, [{ name: "chat", timeouts: 1, errors: 2, sketch: s }]);
  const out = [];
  for (const cut of [0, 3, 4, 5, 12, 16, 20, 30, good.length - 1]) out.push(["truncated at " + cut, good.subarray(0, cut)]);
  const u = rng(99);
  for (let i = 0; i < 20; i++) out.push(["random " + i, Uint8Array.from({ length: 1 + Math.floor(u() * 400) }, () => Math.floor(u() * 256))]);
  const huge = good.slice();
  new DataView(huge.buffer).setBigUint64(4 + 1 + 8 + 4 + 2 + 4 + 8, 1n << 60n, true);
  out.push(["huge timeout count", huge]);
  const nanErr = good.slice();
  new DataView(nanErr.buffer).setFloat64(5, NaN, true);
  out.push(["NaN relative error", nanErr]);
  const nanForce = good.slice();
  new DataView(nanForce.buffer).setFloat64(4 + 1 + 8 + 4 + 2 + 4, Infinity, true);
  out.push(["infinite in-force timeout", nanForce]);
  const other = new LatencySketch({ relativeError: 0.02 });
  other.add(5);
  out.push(["another relative error", encodeFlush(0.02, [{ name: "chat", timeouts: 0, errors: 0, sketch: other }])]);
  const trailing = new Uint8Array(good.length + 1);
  trailing.set(good);
  out.push(["trailing byte", trailing]);
  out.push(["too big", new Uint8Array(300 * 1024)]);
  out.push(["empty name", encodeFlush(0.01, [{ name: "", timeouts: 0, errors: 0 }])]);
  return out;
}

/** The table without its date, for comparing two reads. */
export const sansDate = (t) => JSON.stringify({ ...t, derivedAt: undefined });

/** A minimal case runner: `await check(name, fn)`, then `report(runtime)`. */
export function runner() {
  const results = { passed: 0, failed: 0, skipped: 0, failures: [] };
  return {
    async check(name, fn) {
      try {
        await fn();
        results.passed++;
      } catch (e) {
        results.failed++;
        results.failures.push({ name, error: String(e?.stack ?? e) });
      }
    },
    report: (runtime) => ({ runtime, ...results }),
  };
}

export function assert(cond, message) {
  if (!cond) throw new Error(message);
}

/** A flush of `buckets` buckets of `samples` successes each (the benches' flush). */
export function benchFlush(LatencySketch, buckets, samples, tag = "route") {
  const u = rng(42);
  const list = [];
  for (let b = 0; b < buckets; b++) {
    const sketch = new LatencySketch();
    for (let i = 0; i < samples; i++) sketch.add(BUCKETS[b % 2 ? "search" : "chat"](u));
    list.push({ name: `${tag}-${b}`, inForceMs: 1000, timeouts: 1, errors: 2, sketch });
  }
  return encodeFlush(0.01, list);
}

/** Values a hostile flush puts where a number goes (as the core's fuzz: src/core/fleet/tests.rs). */
const F64_EDGES = [1e300, Number.MAX_VALUE, 2.2250738585072014e-308, 5e-324, -0, 0, -1, Infinity, NaN, 2 ** 53 - 1, 2 ** 53, 86_400_000, 0.05, 1e-7];
const U64_EDGES = [0n, 1n, 2n ** 53n - 1n, 2n ** 53n, 2n ** 64n - 1n, 300_000n];

/**
 * `count` seeded hostile flushes, the core fuzz's two kinds (src/core/fleet/tests.rs): an honest flush
 * with 1 to 3 mutations (a byte flipped, a float or a count written over any offset, the bytes cut), and
 * buckets built field by field from hostile values (edge floats, edge counts, short random names, edge
 * latencies); the first three are one flush whose sketch's sum is the largest float. The same seed gives the
 * same bytes in every runtime.
 */
export function* mutatedFlushes(LatencySketch, seed, count) {
  const u = rng(seed);
  const int = (n) => Math.floor(u() * n);
  const sketchOf = (xs) => {
    const s = new LatencySketch();
    for (const x of xs) {
      try {
        s.add(x);
      } catch {
        // an edge value a sketch refuses: the writer writes what it holds
      }
    }
    return s;
  };
  const honest = encodeFlush(0.01, [
    { name: "api", inForceMs: 500, timeouts: 3, errors: 0, sketch: sketchOf(Array.from({ length: 400 }, (_, i) => (i + 1) * 0.7)) },
    { name: "db", timeouts: 0, errors: 2 },
    { name: "llm", inForceMs: 8000, timeouts: 1, errors: 0, sketch: sketchOf([1200, 900, 3000]) },
  ]);
  const f64 = (x) => new Uint8Array(Float64Array.of(x).buffer);
  const u64 = (x) => {
    const b = new Uint8Array(8);
    new DataView(b.buffer).setBigUint64(0, x, true);
    return b;
  };
  const letters = "abcdefghijklmnopqrstuvwxyz";
  // First, three times, a flush whose sketch's sum is the largest float (it reads: finite): merged, the
  // sums pass it, and a window holding an infinite sum did not read back (the run of 100 000 found it).
  const forged = sketchOf([900, 1200, 3000]);
  const sketchBytes = forged.toBytes();
  const at = sketchBytes.findIndex((_, k) => k + 8 <= sketchBytes.length && new DataView(sketchBytes.buffer, sketchBytes.byteOffset + k, 8).getFloat64(0, true) === 5100);
  sketchBytes.set(f64(Number.MAX_VALUE), at);
  const forgedFlush = encodeFlush(0.01, [{ name: "llm", timeouts: 0, errors: 0, sketch: { count: 3, toBytes: () => sketchBytes } }]);
  for (let i = 0; i < Math.min(3, count); i++) yield forgedFlush;
  for (let i = 3; i < count; i++) {
    if (u() < 0.75) {
      let v = honest.slice();
      for (let m = 1 + int(3); m > 0 && v.length > 0; m--) {
        const at = int(v.length);
        const kind = int(4);
        if (kind === 0) v[at] ^= 1 + int(255);
        else if (kind === 3) v = v.slice(0, at + 1);
        else {
          const b = kind === 1 ? f64(F64_EDGES[int(F64_EDGES.length)]) : u64(U64_EDGES[int(U64_EDGES.length)]);
          for (let k = 0; k < 8 && at + k < v.length; k++) v[at + k] = b[k];
        }
      }
      yield v;
    } else {
      const names = new Set();
      const buckets = [];
      for (let b = 1 + int(3); b > 0; b--) {
        const name = u() < 0.3 ? "api" : Array.from({ length: 1 + int(3) }, () => letters[int(26)]).join("");
        if (names.has(name)) continue;
        names.add(name);
        const edge = () => (u() < 0.5 ? U64_EDGES[int(U64_EDGES.length)] : BigInt(int(1000)));
        const xs = Array.from({ length: int(6) }, () => (u() < 0.5 ? u() * 1e7 : F64_EDGES[int(F64_EDGES.length)]));
        buckets.push({ name, inForceMs: u() < 0.5 ? F64_EDGES[int(F64_EDGES.length)] : u() * 1e5, timeouts: edge(), errors: edge(), sketch: sketchOf(xs) });
      }
      yield encodeFlush(0.01, buckets);
    }
  }
}

/** The largest duration a table may hold, in ms (the core's MAX_MS: 2^53 − 1). */
const MAX_MS = 2 ** 53 - 1;

/** Why `table` (a GET /table's JSON) is not a table every reader can use, or "" when it is. */
export function tableProblem(table) {
  if (table?.v !== 1 || typeof table.buckets !== "object" || table.buckets === null) return `not a table: ${JSON.stringify(table).slice(0, 200)}`;
  for (const [name, row] of Object.entries(table.buckets)) {
    for (const k of ["n", "timeouts", "errors"]) if (!Number.isSafeInteger(row[k]) || row[k] < 0) return `${name}: ${k} ${row[k]}`;
    for (const k of ["timeoutMs", "p50", "p99", "floorMs"]) {
      const v = row[k];
      if (v !== null && !(typeof v === "number" && v >= 0 && v <= MAX_MS)) return `${name}: ${k} ${v}`;
    }
    if (row.falseTimeoutRate !== null && !(row.falseTimeoutRate >= 0 && row.falseTimeoutRate <= 1)) return `${name}: falseTimeoutRate ${row.falseTimeoutRate}`;
    if (!Array.isArray(row.warnings) || row.warnings.some((w) => typeof w?.code !== "string")) return `${name}: warnings ${JSON.stringify(row.warnings)}`;
  }
  return "";
}

/**
 * The HTTP fuzz of an aggregator's endpoint: `count` seeded mutated flushes POSTed by `post(bytes)`
 * (answering `{ status, body }`), `inFlight` at a time. Every answer must be 204, 200 (some buckets
 * refused, named), 400 or 413 (refused whole, with a code) or 429 (the window's budget); never a 5xx,
 * never the storage's or the core's internals. Every `checkEvery` flushes, `table()` (a GET /table's
 * JSON) must be a table every reader can use (and `progress(sent, statuses)` is called). Answers the count of
 * each status.
 */
export async function fuzzEndpoint({ LatencySketch, seed, count, inFlight = 8, checkEvery = 1000, post, table, progress }) {
  const statuses = {};
  const flushes = mutatedFlushes(LatencySketch, seed, count);
  let sent = 0;
  const worker = async () => {
    for (let next = flushes.next(); !next.done; next = flushes.next()) {
      const bytes = next.value;
      const { status, body } = await post(bytes);
      statuses[status] = (statuses[status] ?? 0) + 1;
      if (![204, 200, 400, 413, 429].includes(status)) throw new Error(`flush ${sent}: status ${status} ${body.slice(0, 300)} for bytes ${[...bytes.slice(0, 64)]}`);
      if (status !== 204) {
        const b = JSON.parse(body);
        const coded = status === 200 ? Array.isArray(b.refused) && b.refused.every((r) => typeof r.code === "string" && typeof r.bucket === "string") : typeof b.code === "string" && typeof b.message === "string";
        if (!coded) throw new Error(`flush ${sent}: ${status} without codes: ${body.slice(0, 300)}`);
      }
      if (++sent % checkEvery === 0) {
        progress?.(sent, statuses);
        const problem = tableProblem(await table());
        if (problem) throw new Error(`after ${sent} flushes the table breaks: ${problem}`);
      }
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  const problem = tableProblem(await table());
  if (problem) throw new Error(`after the run the table breaks: ${problem}`);
  return statuses;
}
