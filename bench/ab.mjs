// Two builds of the package in one process, timed in alternating rounds, for
// the per-call paths a boundary change can slow down: a deadline's signal
// (alone, reserved from a root, linked to a parent), `remaining()`, a stall
// guard per chunk, a skipped plan step, `retry()` whose first attempt
// succeeds, `plan()` itself, a relay with `retry` (per stream, and per event),
// and a circuit breaker's guarded call (a known key; a new key each call, each
// one replacing the least recently used). Public API only, so any two builds compare.
//   node bench/ab.mjs BEFORE_DIR [AFTER_DIR]     deno run -A bench/ab.mjs BEFORE_DIR [AFTER_DIR]
// AFTER_DIR defaults to pkg/. Copy a build aside first (`cp -a pkg /tmp/pkg-before`).
// Why alternating rounds: on a shared machine a plain run moves by 2–3×
// between runs; load hits both builds alike when their rounds interleave.
// Prints the median ns/op of each build per case, and the median of the
// per-round differences (after − before).
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";

const [beforeDir, afterDir = "pkg"] = typeof Deno !== "undefined" ? Deno.args : process.argv.slice(2);
if (!beforeDir) throw new Error("usage: bench/ab.mjs BEFORE_DIR [AFTER_DIR]");
const entry = typeof Deno !== "undefined" ? "index.js" : "node.js";
const deriveEntry = typeof Deno !== "undefined" ? "derive-deno.js" : "derive-node.js";

async function load(dir) {
  const lib = await import(pathToFileURL(resolve(dir, entry)).href);
  await lib.init();
  const derive = await import(pathToFileURL(resolve(dir, deriveEntry)).href);
  await derive.init();
  return { ...lib, ...derive };
}

/** A response of `n` events, made by a pull source (no timer). */
function events(n, chunk) {
  let i = 0;
  const stream = new ReadableStream({
    pull(c) {
      if (i === n) return c.close();
      c.enqueue(chunk.subarray(0));
      i++;
    },
  });
  return new Response(stream, { headers: { "content-type": "text/event-stream" } });
}

async function drain(res) {
  const reader = res.body.getReader();
  while (!(await reader.read()).done);
}

const sync = () => 1;
const RUNS_PER_PLAN = 1_000;

/** The cases of one build: each an async function of `n` iterations. */
function cases(lib) {
  const tight = lib.Deadline.in(1e9);
  const skipping = [
    { name: "enrich", minMs: 2e9, kind: "optional" },
    { name: "respond", minMs: 10, kind: "fallback" },
  ];
  const steps = [
    { name: "retrieve", minMs: 10, preferredMs: 2_000, kind: "mandatory" },
    { name: "rerank", minMs: 30, preferredMs: 500, kind: "optional" },
    { name: "respond", minMs: 200, kind: "fallback" },
  ];
  const deadline = lib.Deadline.in(1e9);
  const root = lib.Deadline.in(1e9);
  root.signal();
  const parent = new AbortController().signal;
  const chunk = new TextEncoder().encode("data: 01234567\n\n");
  const breaker = new lib.CircuitBreaker();
  const evicting = new lib.CircuitBreaker({ maxKeys: 100 });
  const keys = Array.from({ length: 101 }, (_, i) => `key-${i}`);
  return {
    "Deadline.in(10_000).signal() + dispose()": async (n) => {
      for (let i = 0; i < n; i++) {
        const d = lib.Deadline.in(10_000);
        d.signal();
        d.dispose();
      }
    },
    "root.reserve(100).signal() + dispose()": async (n) => {
      for (let i = 0; i < n; i++) {
        const d = root.reserve(100);
        d.signal();
        d.dispose();
      }
    },
    "Deadline.in(10_000, { signal: parent }).signal() + dispose()": async (n) => {
      for (let i = 0; i < n; i++) {
        const d = lib.Deadline.in(10_000, { signal: parent });
        d.signal();
        d.dispose();
      }
    },
    "remaining()": async (n) => {
      let s = 0;
      for (let i = 0; i < n; i++) s += root.remaining();
      return s;
    },
    "withStallTimeout, per chunk": async (n) => {
      let i = 0;
      const source = new ReadableStream({
        pull(c) {
          if (i === n) return c.close();
          c.enqueue(chunk.subarray(0));
          i++;
        },
      });
      const reader = lib.withStallTimeout(source, { firstChunkMs: 60_000, stallMs: 60_000 }).getReader();
      while (!(await reader.read()).done);
    },
    "p.run of a skipped optional step": async (n) => {
      let p;
      for (let i = 0; i < n; i++) {
        if (i % RUNS_PER_PLAN === 0) p = lib.plan(tight, skipping);
        await p.run("enrich", sync);
      }
    },
    "retry(fn resolving at once, { deadline })": async (n) => {
      for (let i = 0; i < n; i++) await lib.retry(sync, { deadline, seed: 1 });
    },
    "plan(deadline, 3 steps)": async (n) => {
      for (let i = 0; i < n; i++) lib.plan(deadline, steps);
    },
    "relay + retry of a 1-event stream, per stream": async (n) => {
      for (let i = 0; i < n / 10; i++) await drain(await lib.relay(() => events(1, chunk), { deadline, stallMs: 60_000, retry: true }));
      return { ops: n / 10 };
    },
    "relay + retry, per event": async (n) => {
      await drain(await lib.relay(() => events(n, chunk), { deadline, stallMs: 60_000, retry: true }));
    },
    "CircuitBreaker: acquire + success, a known key": async (n) => {
      for (let i = 0; i < n; i++) breaker.acquire("upstream").success();
    },
    "CircuitBreaker: acquire + success, a new key each call (evicts)": async (n) => {
      for (let i = 0; i < n; i++) evicting.acquire(keys[i % keys.length]).success();
    },
  };
}

const median = (v) => v.slice().sort((p, q) => p - q)[v.length >> 1];

/** ns per op; a case that makes fewer ops than `n` answers `{ ops }`. */
async function time(fn, n) {
  const t0 = performance.now();
  const out = await fn(n);
  return ((performance.now() - t0) * 1e6) / (out?.ops ?? n);
}

const a = cases(await load(beforeDir));
const b = cases(await load(afterDir));
const ROUNDS = 15;
const N = 20_000;
const rows = [];
for (const name of Object.keys(a)) {
  const ta = [];
  const tb = [];
  for (let r = -1; r < ROUNDS; r++) {
    const x = await time(a[name], N);
    const y = await time(b[name], N);
    if (r >= 0) ta.push(x), tb.push(y);
  }
  rows.push([name, median(ta), median(tb), median(tb.map((y, i) => y - ta[i]))]);
}
const runtime = typeof Deno !== "undefined" ? "deno" : "node";
console.log(`| case (ns/op, ${runtime}, medians of ${ROUNDS} alternating rounds) | before | after | after − before |`);
console.log("|---|---:|---:|---:|");
for (const [name, x, y, d] of rows) console.log(`| ${name} | ${x.toFixed(0)} | ${y.toFixed(0)} | ${d.toFixed(0)} |`);
