// The Rust API (`web` feature) against the JavaScript API, side by side in
// one process: a fresh deadline's signal() + drop/dispose, and the cost per
// chunk of the stall guard and of fetchWithDeadline with and without retry
// (the resumable read). Prints one JSON line: { runtime, rows, ratios }.
//   node bench/web.bench.mjs        deno run -A bench/web.bench.mjs
//   node bench/run.mjs web          Node, Deno and headless Chromium
// Needs pkg/ (`node scripts/build.mjs`); the Node run builds bench/web/lib.rs
// (the Rust side, profile `wasm` like the npm package) into
// test-output/web-bench/, which Deno and Chromium then load.
import { nsPerOp, runtimeName } from "./harness.mjs";

export const inChromium = true;

const OUT = "test-output/web-bench";

/**
 * In Chromium (bench/run.mjs serves the repository and hands over the
 * package): the Rust side as the Node run built it. A const, not a function
 * declaration: bench/run.mjs runs a bench's `function run` in workerd too,
 * where this one cannot load its module.
 */
export const run = async (/** @type {any} */ lib) => {
  const rust = await import(`/${OUT}/web_bench.js`);
  await rust.default({ module_or_path: `/${OUT}/web_bench_bg.wasm` });
  return measure(rust, lib);
};

/** Every row, the JS API's and the Rust API's, in this runtime. */
async function measure(/** @type {any} */ rust, /** @type {any} */ lib) {
const { Deadline, withStallTimeout } = lib;
  const MS = 10_000;
  const rows = {};
  const parent = new AbortController().signal;

  // ---- deadlines ---------------------------------------------------------------
  const BATCH = 100_000;
  /** ns per op of `batch(n)`, which does n ops in one call: median of 7 rounds after a warm-up. */
  function nsPerOpBatched(batch, n = BATCH, rounds = 7) {
    const times = [];
    for (let r = -1; r < rounds; r++) {
      const t0 = performance.now();
      batch(n);
      const dt = performance.now() - t0;
      if (r >= 0) times.push((dt * 1e6) / n);
    }
    times.sort((a, b) => a - b);
    return times[times.length >> 1];
  }

  rows["JS: Deadline.in(10_000).signal() + dispose"] = nsPerOp(() => {
    const d = Deadline.in(MS);
    d.signal();
    d.dispose();
  });
  rows["Rust: Deadline::in_ms(10_000).signal() + drop (loop in Wasm)"] = nsPerOpBatched(rust.signalDrop);
  rows["Rust: the same, one Wasm call per deadline"] = nsPerOp(() => rust.signalDrop(1));
  rows["JS: linked to a parent, signal() + dispose"] = nsPerOp(() => {
    const d = Deadline.in(MS, { signal: parent });
    d.signal();
    d.dispose();
  });
  rows["Rust: linked to a parent, signal() + drop (loop in Wasm)"] = nsPerOpBatched((n) => rust.signalDropLinked(n, parent));

  // ---- stall guard, per chunk (the source of bench/stream.bench.mjs) -----------
  const N = 200_000;
  const CHUNK = new TextEncoder().encode("data: 01234567\n\n");
  const BUFFER = new Uint8Array(N * CHUNK.byteLength);
  for (let i = 0; i < N; i++) BUFFER.set(CHUNK, i * CHUNK.byteLength);
  function filledSource() {
    let i = 0;
    const size = CHUNK.byteLength;
    return new ReadableStream({
      pull(c) {
        if (i === N) return c.close();
        c.enqueue(BUFFER.subarray(i * size, (i + 1) * size));
        i++;
      },
    });
  }
  async function drain(stream) {
    const reader = stream.getReader();
    let n = 0;
    for (;;) {
      const { done } = await reader.read();
      if (done) return n;
      n++;
    }
  }
  // fetchWithDeadline's rows: `fetch` answers at once with the same source as an event stream
  // (each chunk one whole event), so the rows time the read, not a network.
  const realFetch = globalThis.fetch;
  globalThis.fetch = async () => new Response(filledSource(), { headers: { "content-type": "text/event-stream" } });
  const URL_ = "http://127.0.0.1:9/events";
  const limits = { firstChunkMs: 60_000, stallMs: 60_000 };
  const streams = {
    "bare reader (floor)": () => filledSource(),
    "JS: withStallTimeout": () => withStallTimeout(filledSource(), { firstChunkMs: 60_000, stallMs: 60_000 }),
    "Rust: with_stall_timeout": () => rust.withStall(filledSource()),
    "JS: fetchWithDeadline": async () => (await lib.fetchWithDeadline(URL_, undefined, { deadline: lib.Deadline.in(200_000), ...limits })).body,
    "Rust: fetch_with_deadline": () => rust.fetchBody(URL_, false),
    "JS: fetchWithDeadline + retry": async () =>
      (await lib.fetchWithDeadline(URL_, undefined, { deadline: lib.Deadline.in(200_000), ...limits, retry: { attemptMinMs: 100 } })).body,
    "Rust: fetch_with_deadline + retry": () => rust.fetchBody(URL_, true),
  };
  const times = Object.fromEntries(Object.keys(streams).map((k) => [k, []]));
  for (let round = -1; round < 5; round++) {
    // Interleaved rounds: drift and GC hit every row alike.
    for (const [label, make] of Object.entries(streams)) {
      const t0 = performance.now();
      const n = await drain(await make());
      const dt = performance.now() - t0;
      if (n !== N) throw new Error(`${label}: ${n} chunks instead of ${N}`);
      if (round >= 0) times[label].push((dt * 1e6) / N);
    }
  }
  globalThis.fetch = realFetch;
  for (const [label, list] of Object.entries(times)) {
    list.sort((a, b) => a - b);
    rows[`per chunk: ${label}`] = list[list.length >> 1];
  }

const ratio = (a, b) => Number((rows[a] / rows[b]).toFixed(2));
return {
    runtime: runtimeName(),
    rows,
    ratios: {
      "signal()+drop, Rust loop ÷ JS": ratio("Rust: Deadline::in_ms(10_000).signal() + drop (loop in Wasm)", "JS: Deadline.in(10_000).signal() + dispose"),
      "signal()+drop, Rust per call ÷ JS": ratio("Rust: the same, one Wasm call per deadline", "JS: Deadline.in(10_000).signal() + dispose"),
      "linked, Rust ÷ JS": ratio("Rust: linked to a parent, signal() + drop (loop in Wasm)", "JS: linked to a parent, signal() + dispose"),
      "stall guard per chunk, Rust ÷ JS": ratio("per chunk: Rust: with_stall_timeout", "per chunk: JS: withStallTimeout"),
      "fetch per chunk, Rust ÷ JS": ratio("per chunk: Rust: fetch_with_deadline", "per chunk: JS: fetchWithDeadline"),
      "fetch + retry per chunk, Rust ÷ JS": ratio("per chunk: Rust: fetch_with_deadline + retry", "per chunk: JS: fetchWithDeadline + retry"),
    },
  };
}

// Node and Deno run this file as a script.
if (typeof globalThis.process !== "undefined" || typeof globalThis.Deno !== "undefined") {
  const { existsSync, readFileSync } = await import("node:fs");
  const { dirname, join } = await import("node:path");
  const { fileURLToPath } = await import("node:url");
  const { loadPackage } = await import("./harness.mjs");
  const root = join(dirname(fileURLToPath(import.meta.url)), "..");
  const out = join(root, OUT);
  if (typeof globalThis.Deno === "undefined" || !existsSync(join(out, "web_bench_bg.wasm"))) {
    const { execFileSync } = await import("node:child_process");
    const run = (/** @type {string} */ cmd, /** @type {string[]} */ args) => execFileSync(cmd, args, { cwd: root, stdio: ["ignore", "ignore", "inherit"] });
    run("cargo", ["build", "--example", "web-bench", "--profile", "wasm", "--target", "wasm32-unknown-unknown", "--features", "web"]);
    run(join(root, ".tools/bin/wasm-bindgen"), ["--target", "web", "--out-dir", out, "--out-name", "web_bench", "--no-typescript", join(root, "target/wasm32-unknown-unknown/wasm/examples/web_bench.wasm")]);
  }
  const rust = await import(join(out, "web_bench.js"));
  rust.initSync({ module: readFileSync(join(out, "web_bench_bg.wasm")) });
  console.log(JSON.stringify(await measure(rust, await loadPackage())));
}
