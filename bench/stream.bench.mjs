// Stream benchmarks: per-chunk cost of stall detection, side by side in one
// process, what wrapping costs per stream, and how late a stall's abort comes
// compared with setTimeout itself.
// Prints one JSON line: { runtime, rows: { label: nsPerChunk }, ratios, perStream: { label: nsPerStream }, lateness }.
//   node bench/stream.bench.mjs        deno run -A bench/stream.bench.mjs
//   workerd: `node bench/run.mjs stream` runs `run(lib)` inside a fetch handler.
//
// Every row drains 200 000 chunks of 16 bytes from the same kind of in-memory
// source (filledSource), so the rows differ only in what sits between the
// source and the consumer. Rounds are interleaved across rows (so
// drift and GC hit all rows alike); each row reports its median round.
import { loadPackage, runtimeName } from "./harness.mjs";

// workerd (recent compatibility dates) has a `process` global too.
const isWorkerd = globalThis.navigator?.userAgent === "Cloudflare-Workers";

const N = 200_000;
const ROUNDS = 5;
const LIMIT = 60_000; // limits no chunk comes near: the bench measures the healthy path
// 16 bytes shaped like an SSE event, so the sseProgress row scans real lines.
const CHUNK = new TextEncoder().encode("data: 01234567\n\n");
const noop = () => {};

// The source: one chunk per pull, enqueued synchronously, like a body stream
// whose bytes are already buffered. Each chunk is a fresh 16-byte view of one
// preallocated buffer, as network bodies hand out views of what they read.
// `reuse: true` enqueues the very same object every time instead: no
// allocation at all, the leanest floor, reported as a sensitivity check.
// (Pre-filling 200 000 chunks in start() would make each runtime's queue pay
// per read for its length: quadratic, not a floor.)
const BUFFER = new Uint8Array(N * CHUNK.byteLength);
for (let i = 0; i < N; i++) BUFFER.set(CHUNK, i * CHUNK.byteLength);

function filledSource({ reuse = false } = {}) {
  let i = 0;
  const size = CHUNK.byteLength;
  return new ReadableStream({
    pull(c) {
      if (i === N) return c.close();
      c.enqueue(reuse ? CHUNK : BUFFER.subarray(i * size, (i + 1) * size));
      i++;
    },
  });
}

async function drainReader(reader) {
  let n = 0;
  for (;;) {
    const { done } = await reader.read();
    if (done) return n;
    n++;
  }
}

/**
 * The seed's way (seed 000), rewritten: over any async iterable (here the
 * source stream's own iterator), a fresh timer and a Promise.race per chunk.
 */
async function* seedWay(src, ac, { firstChunkMs, stallMs }) {
  const it = src[Symbol.asyncIterator]();
  let n = 0;
  try {
    for (;;) {
      const limit = n === 0 ? firstChunkMs : stallMs;
      let timer;
      const expiry = new Promise((_, reject) => {
        timer = setTimeout(() => {
          ac.abort();
          reject(new Error(`stream stalled for ${limit} ms after ${n} chunks`));
        }, limit);
      });
      let step;
      try {
        step = await Promise.race([it.next(), expiry]);
      } finally {
        clearTimeout(timer);
      }
      if (step.done) return;
      n++;
      yield step.value;
    }
  } finally {
    await it.return?.(undefined);
  }
}

/** Design alternatives: a bare pull wrapper (no bookkeeping) in three shapes. */
function pullWrapper(source, { highWaterMark = 1, asyncPull = false } = {}) {
  const reader = source.getReader();
  let out;
  const onRead = ({ done, value }) => (done ? out.close() : out.enqueue(value));
  return new ReadableStream(
    asyncPull
      ? {
          start: (c) => void (out = c),
          async pull() {
            onRead(await reader.read());
          },
        }
      : {
          start: (c) => void (out = c),
          pull: () => reader.read().then(onRead),
        },
    { highWaterMark },
  );
}

/** Design alternative: the same bookkeeping as withStallTimeout, in a TransformStream. */
function transformWrapper(source) {
  let chunks = 0;
  let bytes = 0;
  let last = 0;
  return source.pipeThrough(
    new TransformStream({
      transform(chunk, c) {
        chunks++;
        bytes += chunk.byteLength;
        if (chunk.byteLength !== 0) last = performance.now();
        c.enqueue(chunk);
      },
    }),
  );
}

/** p50 / p90 / max of `xs`, rounded to 0.1 ms. */
function summary(xs) {
  xs.sort((a, b) => a - b);
  const at = (p) => +xs[Math.min(xs.length - 1, Math.floor(p * xs.length))].toFixed(1);
  return { p50: at(0.5), p90: at(0.9), max: at(1), n: xs.length };
}

const until = (signal) => new Promise((resolve) => signal.addEventListener("abort", () => resolve(performance.now()), { once: true }));

/** How late the abort comes after the limit, against setTimeout's own lateness. */
async function lateness(lib, { limitMs = 20, samples = 30 } = {}) {
  const native = [];
  const firstChunk = [];
  const stall = [];
  for (let i = 0; i < samples; i++) {
    const t0 = performance.now();
    native.push((await new Promise((r) => setTimeout(() => r(performance.now()), limitMs))) - (t0 + limitMs));

    // Nothing ever arrives: one timer, one Wasm call, abort.
    let controller = new AbortController();
    const t1 = performance.now();
    let wrapped = lib.withStallTimeout(new ReadableStream(), { firstChunkMs: limitMs, stallMs: limitMs, controller });
    wrapped.getReader().read().catch(noop);
    firstChunk.push((await until(controller.signal)) - (t1 + limitMs));

    // One chunk 5 ms in, then silence: the first timer fires early (progress
    // since arming), is re-armed by the core, then aborts.
    controller = new AbortController();
    let chunkAt;
    const source = new ReadableStream({
      start(c) {
        setTimeout(() => {
          chunkAt = performance.now();
          c.enqueue(CHUNK);
        }, 5);
      },
    });
    wrapped = lib.withStallTimeout(source, { firstChunkMs: limitMs, stallMs: limitMs, controller });
    const reader = wrapped.getReader();
    reader.read().then(() => reader.read()).catch(noop);
    stall.push((await until(controller.signal)) - (chunkAt + limitMs));
  }
  return { limitMs, "setTimeout (native)": summary(native), "first-chunk stall → abort": summary(firstChunk), "stall after a chunk (re-armed) → abort": summary(stall) };
}

/**
 * What wrapping costs per stream: a one-chunk source, wrapped (the watcher is
 * made, its wake armed, then freed at the close) or read bare, drained.
 */
async function perStream(lib, { streams = 20_000, rounds = 5 } = {}) {
  const deadline = lib.Deadline.in(1e9);
  const oneChunk = () =>
    new ReadableStream({
      start(c) {
        c.enqueue(CHUNK);
        c.close();
      },
    });
  const cases = {
    "one-chunk stream, bare reader (floor)": () => drainReader(oneChunk().getReader()),
    "one-chunk stream, withStallTimeout": () => drainReader(lib.withStallTimeout(oneChunk(), { firstChunkMs: LIMIT, stallMs: LIMIT }).getReader()),
    "one-chunk stream, withStallTimeout + deadline": () =>
      drainReader(lib.withStallTimeout(oneChunk(), { firstChunkMs: LIMIT, stallMs: LIMIT, deadline }).getReader()),
    "unread stream, withStallTimeout + cancel()": () => lib.withStallTimeout(new ReadableStream(), { firstChunkMs: LIMIT, stallMs: LIMIT }).cancel(),
  };
  const times = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
  for (let round = -1; round < rounds; round++) {
    for (const [label, once] of Object.entries(cases)) {
      const t0 = performance.now();
      for (let i = 0; i < streams; i++) await once();
      if (round >= 0) times[label].push(((performance.now() - t0) * 1e6) / streams);
    }
  }
  deadline.dispose();
  return Object.fromEntries(Object.entries(times).map(([label, xs]) => [label, +xs.sort((a, b) => a - b)[xs.length >> 1].toFixed(1)]));
}

const BARE = "bare reader (floor)";
const SEED = "seed 000: setTimeout + Promise.race per chunk";
const OURS = "withStallTimeout";
const REUSE = "no-allocation source: ";

export async function run(lib, { lateness: withLateness = true } = {}) {
  const opts = { firstChunkMs: LIMIT, stallMs: LIMIT };
  const seed = async (src) => {
    let n = 0;
    for await (const _ of seedWay(src, new AbortController(), opts)) n++;
    return n;
  };
  const ours = (src) => drainReader(lib.withStallTimeout(src, opts).getReader());
  const bare = (src) => drainReader(src.getReader());
  const cases = {
    [BARE]: bare,
    "pipeThrough(new TransformStream())": (src) => drainReader(src.pipeThrough(new TransformStream()).getReader()),
    [SEED]: seed,
    [OURS]: ours,
    "withStallTimeout + sseProgress": (src) => drainReader(lib.withStallTimeout(src, { ...opts, isProgress: lib.sseProgress }).getReader()),
    "design: bare pull wrapper, pull returns read().then (HWM 1)": (src) => drainReader(pullWrapper(src).getReader()),
    "design: bare pull wrapper, async pull (HWM 1)": (src) => drainReader(pullWrapper(src, { asyncPull: true }).getReader()),
    "design: bare pull wrapper, read().then (HWM 0)": (src) => drainReader(pullWrapper(src, { highWaterMark: 0 }).getReader()),
    "design: TransformStream with withStallTimeout's bookkeeping": (src) => drainReader(transformWrapper(src).getReader()),
    [REUSE + BARE]: bare,
    [REUSE + SEED]: seed,
    [REUSE + OURS]: ours,
  };
  const times = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
  for (let round = -1; round < ROUNDS; round++) {
    for (const [label, drain] of Object.entries(cases)) {
      const src = filledSource({ reuse: label.startsWith(REUSE) });
      const t0 = performance.now();
      const n = await drain(src);
      const dt = performance.now() - t0;
      if (n !== N) throw new Error(`${label}: drained ${n} chunks, expected ${N}`);
      if (round >= 0) times[label].push((dt * 1e6) / N);
    }
  }
  const rows = {};
  for (const [label, xs] of Object.entries(times)) rows[label] = +xs.sort((a, b) => a - b)[xs.length >> 1].toFixed(1);
  const ratio = (a, b) => +(rows[a] / rows[b]).toFixed(2);
  const ratios = {
    "withStallTimeout / bare reader (target ≤ 2.4)": ratio(OURS, BARE),
    "seed / withStallTimeout (target ≥ 1.5)": ratio(SEED, OURS),
    "pipeThrough(TransformStream) / bare reader": ratio("pipeThrough(new TransformStream())", BARE),
    "withStallTimeout + sseProgress / bare reader": ratio("withStallTimeout + sseProgress", BARE),
    "no-allocation source: withStallTimeout / bare reader": ratio(REUSE + OURS, REUSE + BARE),
    "no-allocation source: seed / withStallTimeout": ratio(REUSE + SEED, REUSE + OURS),
  };
  const result = { runtime: isWorkerd ? "workerd" : runtimeName(), chunks: N, chunkBytes: CHUNK.byteLength, rows, ratios, perStream: await perStream(lib) };
  if (withLateness) result.lateness = await lateness(lib);
  return result;
}

// Node and Deno run the bench as a script; workerd imports run() (bench/run.mjs),
// and refuses modules with a top-level await, hence no await at this level.
async function main() {
  console.log(JSON.stringify(await run(await loadPackage())));
}
if (!isWorkerd) main();
