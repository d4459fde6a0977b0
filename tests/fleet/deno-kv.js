// The fleet aggregator on Deno KV, with a real Deno.openKv on a temporary
// file (run by tests/fleet/run.mjs: `deno run --unstable-kv tests/fleet/deno-kv.js DIR`).
import { aggregatorBinding, kvAggregator } from "../../pkg/durable-deno.js";
import { LatencySketch, TimeoutBook } from "../../pkg/derive-deno.js";
import { assert, benchFlush, encodeFlush, exact, fuzzEndpoint, hostileFlushes, runner, sansDate, simulate, tableProblem } from "./support.js";

const dir = Deno.args[0];
/** The HTTP fuzz's size and seed (tests/fleet/run.mjs passes FLEET_FUZZ_COUNT and FLEET_FUZZ_SEED). */
const FUZZ = { count: Number(Deno.args[1] ?? 3000), seed: Number(Deno.args[2] ?? 1) };
const path = `${dir}/fleet.kv`;
const t = runner();

// In process, as the recipe's book reaches it: through aggregatorBinding (no token).
const flushVia = (agg) => async (bytes) => (await aggregatorBinding(agg).fetch(new Request("http://agg/flush", { method: "POST", body: bytes }))).status;
const tableOf = async (agg) => (await aggregatorBinding(agg).fetch(new Request("http://agg/table"))).json();

function tableMatches(table, expected) {
  for (const [name, e] of Object.entries(expected)) {
    const row = table.buckets[name];
    assert(row, `no row for ${name}`);
    assert(row.n === e.n, `${name}: n ${row.n}, expected ${e.n}`);
    assert(row.errors === e.errors, `${name}: errors ${row.errors}, expected ${e.errors}`);
    const want = e.p99 * table.safety;
    assert(Math.abs(row.timeoutMs - want) <= 0.01 * want, `${name}: timeoutMs ${row.timeoutMs}, exact p99 × safety ${want}`);
    assert(row.floorMs === null, `${name}: floorMs ${row.floorMs}`);
  }
}

let kv = await Deno.openKv(path);
let agg = kvAggregator(kv);
let expected;

await t.check("50 isolates × 2 000 requests; the table matches all samples in one place", async () => {
  const { all, errors, statuses } = await simulate({ LatencySketch, isolates: 50, requests: 2000, post: flushVia(agg) });
  assert(statuses.length === 200 && statuses.every((s) => s === 204), `statuses ${[...new Set(statuses)]}`);
  expected = Object.fromEntries(Object.entries(all).map(([k, xs]) => [k, { n: xs.length, errors: errors[k], p99: exact(xs, 0.99) }]));
  tableMatches(await tableOf(agg), expected);
});

await t.check("hostile bytes are refused (400/413 with a code) and nothing merged changes", async () => {
  const before = sansDate(await tableOf(agg));
  for (const [what, bytes] of hostileFlushes(LatencySketch)) {
    const r = await aggregatorBinding(agg).fetch(new Request("http://agg/flush", { method: "POST", body: bytes }));
    const body = await r.json();
    assert(r.status === 400 || r.status === 413, `${what}: status ${r.status}`);
    assert(typeof body.code === "string" && typeof body.message === "string", `${what}: ${JSON.stringify(body)}`);
  }
  assert(sansDate(await tableOf(agg)) === before, "the table changed");
});

await t.check("its HTTP endpoint: without tokens configured it refuses everyone; with them, each token opens only its own route; a refusal changes nothing", async () => {
  const before = sansDate(await tableOf(agg));
  const flush = encodeFlush(0.01, [{ name: "outsider", timeouts: 50_000 }]);
  const post = (a, headers) => a.fetch(new Request("http://agg/flush", { method: "POST", headers, body: flush }));
  const get = (a, headers) => a.fetch(new Request("http://agg/table", { headers }));
  const bearer = (token) => ({ authorization: `Bearer ${token}` });
  for (const headers of [{}, bearer("anything")]) {
    assert((await post(agg, headers)).status === 401, "a flush to an endpoint with no write token");
    const r = await get(agg, headers);
    assert(r.status === 401 && !(await r.text()).includes("chat"), "the table of an endpoint with no read token");
  }
  const secured = kvAggregator(kv, { readToken: "read-secret", writeToken: "write-secret" });
  for (const [what, headers] of [["no token", {}], ["a wrong token", bearer("write-secre")], ["the read token", bearer("read-secret")]]) {
    const r = await post(secured, headers);
    assert(r.status === 401 && (await r.json()).code === "UNAUTHORIZED", `a flush with ${what}: ${r.status}`);
  }
  for (const [what, headers] of [["no token", {}], ["the write token", bearer("write-secret")]]) {
    const r = await get(secured, headers);
    assert(r.status === 401 && !(await r.text()).includes("chat"), `the table with ${what}: ${r.status}`);
  }
  assert(sansDate(await tableOf(agg)) === before, "the table changed");
  const ok = await secured.fetch(new Request("http://agg/flush", { method: "POST", headers: bearer("write-secret"), body: encodeFlush(0.01, [{ name: "with-token", timeouts: 1 }]) }));
  assert(ok.status === 204, `a flush with the write token: ${ok.status}`);
  const read = await get(secured, bearer("read-secret"));
  assert(read.status === 200 && (await read.json()).buckets["with-token"]?.timeouts === 1, `the table with the read token: ${read.status}`);
  for (const bad of [{ readToken: "" }, { writeToken: 42 }]) {
    let e;
    try {
      kvAggregator(kv, bad);
    } catch (err) {
      e = err;
    }
    assert(e instanceof TypeError && /^options\.(read|write)Token$/.test(e.param), `kvAggregator(kv, ${JSON.stringify(bad)}): ${e}`);
  }
});

await t.check("reopening the database (a restart) loses nothing that was flushed", async () => {
  const before = sansDate(await tableOf(agg));
  kv.close();
  kv = await Deno.openKv(path);
  agg = kvAggregator(kv);
  const after = await tableOf(agg);
  assert(sansDate(after) === before, "the table differs after reopening");
  tableMatches(after, expected);
});

await t.check("two processes' aggregators on one database lose no flush (versionstamp checks)", async () => {
  const kv2 = await Deno.openKv(path);
  try {
    const prefix = ["two-writers"];
    const a = kvAggregator(kv, { prefix });
    const b = kvAggregator(kv2, { prefix });
    let i = 0;
    const post = (bytes) => flushVia(i++ % 2 ? a : b)(bytes);
    const { all, statuses } = await simulate({ LatencySketch, isolates: 20, requests: 400, every: 100, seed: 5, post });
    assert(statuses.every((s) => s === 204), `statuses ${[...new Set(statuses)]}`);
    const table = await tableOf(a);
    for (const [k, xs] of Object.entries(all)) assert(table.buckets[k].n === xs.length, `${k}: n ${table.buckets[k].n}, expected ${xs.length}`);
  } finally {
    kv2.close();
  }
});

/** A flush of `buckets` new buckets named `${tag}-…`, 100 successes each (about 900 bytes a bucket). */
const wide = (tag, buckets) => benchFlush(LatencySketch, buckets, 100, tag);

await t.check("a window past Deno KV's 800 KiB atomic limit is stored in pieces: every flush is taken and reads back after reopening", async () => {
  const prefix = ["wide"];
  const big = kvAggregator(kv, { prefix, maxWindowBytes: 4 * 1024 * 1024 });
  const statuses = [];
  for (let f = 0; f < 48; f++) statuses.push(await flushVia(big)(wide(`f${f}`, 20)));
  assert(statuses.every((s) => s === 204), `statuses ${[...new Set(statuses)]}`);
  const table = await tableOf(big);
  const rows = Object.keys(table.buckets).length;
  assert(rows === 960, `${rows} rows, 960 buckets flushed`);
  let stored = 0;
  for await (const e of kv.list({ prefix: [...prefix, "w"] })) stored += e.value?.size ?? 0;
  assert(stored > 800 * 1024, `the window is ${stored} bytes: not past the atomic limit, the check proves nothing`);
  const kv2 = await Deno.openKv(path);
  try {
    const again = await tableOf(kvAggregator(kv2, { prefix, maxWindowBytes: 4 * 1024 * 1024 }));
    assert(sansDate(again) === sansDate(table), "the window read back differs");
  } finally {
    kv2.close();
  }
});

await t.check("a window at its byte budget refuses further flushes with 429 WINDOW_FULL (never a 5xx) and changes nothing; the flush alone too big is refused the same", async () => {
  const prefix = ["budget"];
  const small = kvAggregator(kv, { prefix, maxWindowBytes: 64 * 1024 });
  const answers = [];
  for (let f = 0; f < 12; f++) {
    const r = await aggregatorBinding(small).fetch(new Request("http://agg/flush", { method: "POST", body: wide(`b${f}`, 20) }));
    answers.push([r.status, r.status === 204 ? null : await r.json(), r.headers.get("retry-after")]);
  }
  const taken = answers.filter(([s]) => s === 204).length;
  const refused = answers.filter(([s]) => s !== 204);
  assert(taken >= 2 && refused.length >= 1, `taken ${taken}, refused ${refused.length}`);
  for (const [s, body, retryAfter] of refused) assert(s === 429 && body.code === "WINDOW_FULL" && Number(retryAfter) >= 1, `refused: ${s} ${JSON.stringify(body)} retry-after ${retryAfter}`);
  const table = await tableOf(small);
  assert(Object.keys(table.buckets).length === taken * 20, `${Object.keys(table.buckets).length} rows for ${taken} flushes taken`);
  let e;
  try {
    kvAggregator(kv, { maxWindowBytes: 1024 });
  } catch (err) {
    e = err;
  }
  assert(e instanceof RangeError && e.param === "options.maxWindowBytes", `maxWindowBytes 1024: ${e}`);
});

await t.check("a stored window that does not read back is never erased: a flush to its hour starts afresh, the damaged chunks are kept aside with their head, and the table serves the new flush", async () => {
  const prefix = ["damaged"];
  const a = kvAggregator(kv, { prefix });
  const flush = (name) => {
    const sketch = new LatencySketch();
    for (let i = 1; i <= 40; i++) sketch.add(i * 5);
    return flushVia(a)(encodeFlush(0.01, [{ name, sketch }]));
  };
  assert((await flush("before")) === 204, "the first flush");
  const heads = [];
  for await (const e of kv.list({ prefix: [...prefix, "w"] })) heads.push(e);
  assert(heads.length === 1, `${heads.length} windows`);
  const index = heads[0].key[2];
  const { g, n } = heads[0].value;
  // The storage damages the window: its first chunk is no longer a window's bytes.
  await kv.set([...prefix, "c", index, g, 0], new Uint8Array([0x45, 0x44, 0x54, 0x42, 9, 9, 9]));
  const chunksOf = async (gen, count) => (await kv.getMany(Array.from({ length: count }, (_, i) => [...prefix, "c", index, gen, i]))).map((e) => e.value && [...e.value].join());
  const damaged = await chunksOf(g, n);
  assert((await flush("after")) === 204, "a flush to the damaged window's hour is taken");
  const kept = [];
  for await (const e of kv.list({ prefix: [...prefix, "q", index] })) kept.push(e.value);
  assert(kept.length === 1 && kept[0].g === g && kept[0].n === n, `the damaged window's head is kept aside: ${JSON.stringify(kept)}`);
  assert(JSON.stringify(await chunksOf(g, n)) === JSON.stringify(damaged), "the damaged chunks are still there, unchanged");
  const table = await tableOf(a);
  assert(table.buckets.after?.n === 40 && !table.buckets.before, `the table: ${JSON.stringify(Object.keys(table.buckets))}`);
});

await t.check("a latency shift (the median doubles) shows in the table and in a book's served timeout within two windows, each refresh moving it by at most maxStepFactor", async () => {
  let now = 1_800_000_000_000;
  const windowMs = 60_000;
  const shifted = kvAggregator(kv, { prefix: ["shift"], windowMs, now: () => now });
  const run = async (scale, windows, seed) => {
    for (let w = 0; w < windows; w++) {
      for (let f = 0; f < 4; f++) {
        await simulate({ LatencySketch, isolates: 1, requests: 1000, every: 1000, seed: seed * 100 + w * 4 + f, scale, post: flushVia(shifted) });
        now += windowMs / 4;
      }
    }
  };
  // What an isolate serves: a TimeoutBook reading this aggregator's table, refreshed once a
  // window, its served value moved by at most maxStepFactor (the default, 2) per refresh, from
  // the fallback for the first (1 000 ms: within ×2 of this traffic's), in whole ms (rounded up).
  const warnings = [];
  const book = new TimeoutBook({ aggregator: aggregatorBinding(shifted), onWarning: (w) => warnings.push(w.code) });
  const served = async () => {
    await book.refresh();
    return book.timeout("search", { fallbackMs: 1_000 });
  };
  await run(1, 5, 1);
  const table0 = await tableOf(shifted);
  const before = table0.buckets.search.p50;
  assert(Math.abs(before - 120) < 12, `p50 before ${before}`);
  const s0 = await served();
  assert(s0 === Math.ceil(table0.buckets.search.timeoutMs), `served ${s0}, the table's ${table0.buckets.search.timeoutMs} (warnings ${warnings})`);
  await run(2, 1, 2);
  now -= 1;
  const one = (await tableOf(shifted)).buckets.search.p50;
  const s1 = await served();
  now += 1;
  await run(2, 1, 3);
  now -= 1;
  const table2 = await tableOf(shifted);
  const two = table2.buckets.search.p50;
  const s2 = await served();
  assert(one > before * 1.3, `after one window p50 ${one} (before ${before})`);
  assert(Math.abs(two - 240) < 24, `after two windows p50 ${two}, expected about 240`);
  // The served timeout follows: up after one window, each refresh by at most the factor, and
  // after two windows it is the new traffic's p99 × safety (within the sketch's 1%).
  assert(s1 > s0 * 1.3 && s1 <= s0 * 2, `served after one window ${s1} (before ${s0}, step at most ×2)`);
  assert(s2 >= s1 && s2 <= s1 * 2, `served after two windows ${s2} (after one ${s1}, step at most ×2)`);
  assert(s2 === Math.ceil(table2.buckets.search.timeoutMs), `served after two windows ${s2}, the table's ${table2.buckets.search.timeoutMs}`);
  assert(Math.abs(s2 / s0 - 2) < 0.2, `the served timeout went ${s0} → ${s2}: the latency doubled`);
});

await t.check("table() reads again only the windows whose heads changed since its last read (none when nothing was written), sees another process's write, and answers the table derived from scratch", async () => {
  let now = 1_800_000_000_000;
  const windowMs = 60_000;
  const options = { prefix: ["kept"], windowMs, now: () => now };
  /** The window indexes of the chunks read through `counted` since the last reset. */
  const read = [];
  const counted = new Proxy(kv, {
    get(target, key) {
      if (key === "getMany") return (keys, ...rest) => (keys.forEach((k) => read.push(k[k.length - 3])), target.getMany(keys, ...rest));
      const v = target[key];
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
  const a = kvAggregator(counted, options);
  for (let w = 0; w < 3; w++) {
    assert((await flushVia(a)(wide(`w${w}`, 20))) === 204, "a flush");
    now += windowMs;
  }
  now -= 1;
  const newest = Math.floor(now / windowMs);
  await a.table();
  read.length = 0;
  await a.table();
  assert(read.length === 0, `nothing was written, yet the read read chunks of windows ${[...new Set(read)]}`);
  const kv2 = await Deno.openKv(path);
  try {
    assert((await flushVia(kvAggregator(kv2, options))(wide("other", 3))) === 204, "another process's flush");
  } finally {
    kv2.close();
  }
  const table = await a.table();
  assert(read.length > 0 && read.every((index) => index === newest), `after a write to window ${newest}, the read read windows ${[...new Set(read)]}`);
  assert(table.buckets["other-0"]?.n === 100, `the other process's bucket: ${JSON.stringify(table.buckets["other-0"])}`);
  assert(Object.keys(table.buckets).length === 63, `${Object.keys(table.buckets).length} rows`);
  assert(sansDate(table) === sansDate(await kvAggregator(kv, options).table()), "the table differs from the one derived from scratch");
});

/**
 * The HTTP fuzz: kvAggregator behind Deno.serve on 127.0.0.1, a database of its own, reached as an outsider with
 * the write token; then the database is reopened (a restart) under a new server and reads back the same table.
 */
async function fuzzKv() {
  const fuzzPath = `${dir}/fuzz.kv`;
  const tokens = { readToken: "fuzz-read-0123", writeToken: "fuzz-write-3210" };
  const serve = (db) => {
    const agg = kvAggregator(db, tokens);
    return Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (r) => agg.fetch(r));
  };
  const bearer = (token) => ({ authorization: `Bearer ${token}` });
  const readAt = async (server) => (await fetch(`http://127.0.0.1:${server.addr.port}/table`, { headers: bearer(tokens.readToken) })).json();
  let db = await Deno.openKv(fuzzPath);
  let server = serve(db);
  let table;
  await t.check(`${FUZZ.count} seeded mutated flushes (seed ${FUZZ.seed}) POSTed through HTTP with the write token: each answered 204, 200, 400, 413 or 429 with a code, never a 5xx, and the table reads after every 1 000`, async () => {
    const url = `http://127.0.0.1:${server.addr.port}`;
    const t0 = Date.now();
    const statuses = await fuzzEndpoint({
      LatencySketch,
      seed: FUZZ.seed,
      count: FUZZ.count,
      post: async (body) => {
        const r = await fetch(`${url}/flush`, { method: "POST", headers: bearer(tokens.writeToken), body });
        return { status: r.status, body: await r.text() };
      },
      table: () => readAt(server),
    });
    table = await readAt(server);
    console.error(`fleet fuzz (Deno KV): ${FUZZ.count} flushes in ${Date.now() - t0} ms, statuses ${JSON.stringify(statuses)}, ${Object.keys(table.buckets).length} rows`);
  });
  await t.check("after the HTTP fuzz, the database reopened under a new server (a restart) reads back the same table, one every reader can use", async () => {
    assert(table, "the fuzz did not finish");
    await server.shutdown();
    db.close();
    db = await Deno.openKv(fuzzPath);
    server = serve(db);
    const after = await readAt(server);
    assert(sansDate(after) === sansDate(table), "the table differs after reopening");
    assert(tableProblem(after) === "", tableProblem(after));
  });
  await server.shutdown();
  db.close();
}

await fuzzKv();

kv.close();
console.log(JSON.stringify(t.report(`fleet: deno ${Deno.version.deno} (Deno KV)`)));
