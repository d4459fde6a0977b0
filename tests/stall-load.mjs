// Load test for withStallTimeout (Node only; run by `node tests/run.mjs stallLoad`):
// 10 000 wrapped in-memory streams read concurrently in one process, 1 000 of
// them stalling at a random chunk (0 = before the first chunk). Checks that
// exactly the stalled ones error (with the right phase and counts, upstream
// aborted, source cancelled), none of the healthy ones do, and that no timer is
// left pending afterwards. Prints a report line like the other runners:
// { runtime, passed, failed, skipped, failures, stats }.
import * as lib from "../pkg/node.js";

const STREAMS = 10_000;
const STALLING = 1_000;
const LIMIT_MS = 1_000; // firstChunkMs and stallMs: far above the event-loop lag of 10 000 streams
const TICK_MS = 20; // every source gets its next chunk each tick
const CHUNK = new TextEncoder().encode("0123456789abcdef");

await lib.init();

// A seeded xorshift, so a failure can be replayed with the same seed.
const seed = Number(process.env.STALL_LOAD_SEED ?? ((Date.now() & 0x7fffffff) | 1));
let x = seed;
const random = () => {
  x ^= x << 13;
  x ^= x >>> 17;
  x ^= x << 5;
  return (x >>> 0) / 2 ** 32;
};

const streams = [];
const stalling = new Set();
while (stalling.size < STALLING) stalling.add(Math.floor(random() * STREAMS));

for (let i = 0; i < STREAMS; i++) {
  const total = 5 + Math.floor(random() * 11); // 5..15 chunks
  const stallAt = stalling.has(i) ? Math.floor(random() * total) : -1; // chunks sent before the silence
  const s = { i, total, stallAt, sent: 0, ctrl: null, cancelReason: undefined, cancelled: false };
  const source = new ReadableStream({
    start(c) {
      s.ctrl = c;
    },
    cancel(reason) {
      s.cancelled = true;
      s.cancelReason = reason;
    },
  });
  s.controller = new AbortController();
  s.wrapped = lib.withStallTimeout(source, { firstChunkMs: LIMIT_MS, stallMs: LIMIT_MS, controller: s.controller });
  streams.push(s);
}

// The sources: one interval drives them all, so the test adds one timer, not 10 000.
const active = new Set(streams);
const driver = setInterval(() => {
  for (const s of active) {
    if (s.sent === s.stallAt) {
      active.delete(s); // silence from here on, connection "open"
      continue;
    }
    if (s.sent === s.total) {
      s.ctrl.close();
      active.delete(s);
      continue;
    }
    s.ctrl.enqueue(CHUNK);
    s.sent++;
  }
}, TICK_MS);

// The consumers: 10 000 concurrent read loops.
const t0 = performance.now();
const outcomes = await Promise.all(
  streams.map(async (s) => {
    const reader = s.wrapped.getReader();
    let chunks = 0;
    try {
      for (;;) {
        const { done } = await reader.read();
        if (done) return { s, chunks };
        chunks++;
      }
    } catch (error) {
      return { s, chunks, error };
    }
  }),
);
const elapsedMs = performance.now() - t0;
clearInterval(driver);

const failures = [];
let passed = 0;
function check(name, condition, detail) {
  if (condition) passed++;
  else failures.push({ name, error: detail ?? "failed" });
}

const errored = outcomes.filter((o) => o.error);
const wrongHealthy = outcomes.filter((o) => o.s.stallAt < 0 && (o.error || o.chunks !== o.s.total || o.s.controller.signal.aborted));
const wrongStalled = outcomes.filter((o) => {
  if (o.s.stallAt < 0) return false;
  const e = o.error;
  return (
    !lib.isStreamStalled(e) ||
    e.phase !== (o.s.stallAt === 0 ? "first-chunk" : "stall") ||
    e.chunks !== o.s.stallAt ||
    e.bytes !== 16 * o.s.stallAt ||
    o.chunks !== o.s.stallAt ||
    !(e.afterMs >= LIMIT_MS) ||
    o.s.controller.signal.reason !== e ||
    o.s.cancelReason !== e
  );
});
const show = (list) => list.slice(0, 3).map((o) => JSON.stringify({ i: o.s.i, total: o.s.total, stallAt: o.s.stallAt, chunks: o.chunks, error: o.error && `${o.error.name}: ${o.error.message}` }));

check(`exactly the ${STALLING} stalled streams error`, errored.length === STALLING, `${errored.length} errored`);
check("no healthy stream errors, loses a chunk or is aborted", wrongHealthy.length === 0, `${wrongHealthy.length} wrong: ${show(wrongHealthy)}`);
check(
  "every stalled stream: StreamStalled, right phase, counts, afterMs ≥ limit, upstream aborted and source cancelled with it",
  wrongStalled.length === 0,
  `${wrongStalled.length} wrong: ${show(wrongStalled)}`,
);
const timers = process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;
check("no timer left pending afterwards", timers === 0, `${timers} Timeout resources still active`);

const late = errored.map((o) => o.error.afterMs - LIMIT_MS).sort((a, b) => a - b);
const q = (p) => (late.length ? +late[Math.min(late.length - 1, Math.floor(p * late.length))].toFixed(1) : null);
const stats = {
  seed,
  streams: STREAMS,
  stalled: STALLING,
  firstChunkStalls: errored.filter((o) => o.error.phase === "first-chunk").length,
  elapsedMs: +elapsedMs.toFixed(0),
  verdictLatenessMs: { p50: q(0.5), p99: q(0.99), max: q(1) },
  rssMiB: +(process.memoryUsage().rss / 2 ** 20).toFixed(0),
};
console.log(`stall load: ${JSON.stringify(stats)}`);
for (const f of failures) console.error(`✗ ${f.name}\n  ${f.error}`);
console.log(JSON.stringify({ runtime: `stall load (node ${process.version})`, passed, failed: failures.length, skipped: 0, failures, stats }));
process.exit(failures.length ? 1 : 0);
