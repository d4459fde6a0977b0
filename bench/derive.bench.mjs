// Derive benchmarks, side by side in one process. Prints one JSON line:
//   { runtime, rows: { label: ns per sample }, timesMs, maxRelativeError, … }
//   node bench/derive.bench.mjs        deno run -A bench/derive.bench.mjs
//
// 1 000 000 samples (seed 003's shape: lognormal body, median 40 ms, plus a
// 0.5% uniform 0.3–1.5 s tail; fixed seed), ingested whole by each library,
// then p50/p90/p99/p99.9 read back. Time is the median of several rounds
// (ingest + the four reads; the exact row includes the copy and the sort);
// the error is the largest |estimate − exact| / exact over the four
// percentiles, exact being the rank-⌊q·(n−1)⌋ sample.
//
// In Node only (the binary is the same for every runtime): the CLI's
// throughput on a generated 10 M-line CSV, with peak RSS from /usr/bin/time -v
// and the binary's size; the median of 5 runs (wall and CPU time). EDGE_DEADLINE_BIN overrides
// target/release/edge-deadline (built with `cargo build --release -p
// edge-deadline-cli`); EDGE_DEADLINE_BASELINE names a second binary (an older
// build) measured in the same run, runs alternating, for a before/after
// comparison under the same load. BENCH_SKIP_CLI=1 skips it.
import * as hdr from "hdr-histogram-js";
import tdigest from "tdigest";
import { loadPackage, nsPerOp, runtimeName } from "./harness.mjs";
import { seed003Samples } from "../tests/support/seed003.mjs";

const isDeno = typeof Deno !== "undefined";
const lib = await loadPackage();

const N = 1_000_000;
const QS = [0.5, 0.9, 0.99, 0.999];
const KEYS = ["p50", "p90", "p99", "p999"];

const xs = seed003Samples(N, 0x9e3779b9);
const sorted = xs.slice().sort();
const exact = QS.map((q) => sorted[Math.floor(q * (N - 1))]);

/** Median ms of `rounds` runs of `fn` (after one warm-up); `fn` returns the four estimates. */
function measure(fn, rounds) {
  let estimates;
  const times = [];
  for (let r = -1; r < rounds; r++) {
    const t0 = performance.now();
    estimates = fn();
    const dt = performance.now() - t0;
    if (r >= 0) times.push(dt);
  }
  times.sort((a, b) => a - b);
  const errors = {};
  estimates.forEach((v, i) => (errors[KEYS[i]] = +(Math.abs(v - exact[i]) / exact[i]).toExponential(2)));
  errors.max = Math.max(...Object.values(errors));
  return { ms: times[times.length >> 1], errors };
}

const results = {
  "edge-deadline LatencySketch.addAll (relativeError 1%)": measure(() => {
    const s = new lib.LatencySketch();
    try {
      s.addAll(xs);
      return QS.map((q) => s.quantile(q));
    } finally {
      s.free();
    }
  }, 9),
  "edge-deadline LatencySketch.add() in a loop": measure(() => {
    const s = new lib.LatencySketch();
    try {
      for (let i = 0; i < N; i++) s.add(xs[i]);
      return QS.map((q) => s.quantile(q));
    } finally {
      s.free();
    }
  }, 5),
  "hdr-histogram-js recordValue(µs), 2 significant digits": measure(() => {
    const h = hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 3_600_000_000, numberOfSignificantValueDigits: 2 });
    for (let i = 0; i < N; i++) h.recordValue(Math.round(xs[i] * 1000));
    return QS.map((q) => h.getValueAtPercentile(q * 100) / 1000);
  }, 5),
  "hdr-histogram-js recordValue(µs), 3 significant digits": measure(() => {
    const h = hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 3_600_000_000, numberOfSignificantValueDigits: 3 });
    for (let i = 0; i < N; i++) h.recordValue(Math.round(xs[i] * 1000));
    return QS.map((q) => h.getValueAtPercentile(q * 100) / 1000);
  }, 5),
  "tdigest push(array) + compress": measure(() => {
    const t = new tdigest.TDigest();
    t.push(Array.from(xs));
    t.compress();
    return QS.map((q) => t.percentile(q));
  }, 3),
  "exact: Float64Array copy + sort": measure(() => {
    const s = xs.slice().sort();
    return QS.map((q) => s[Math.floor(q * (N - 1))]);
  }, 5),
};

const rows = {};
const timesMs = {};
const maxRelativeError = {};
for (const [label, r] of Object.entries(results)) {
  rows[label] = (r.ms * 1e6) / N;
  timesMs[label] = +r.ms.toFixed(2);
  maxRelativeError[label] = r.errors;
}
const ours = results["edge-deadline LatencySketch.addAll (relativeError 1%)"].ms;
const speedup = {
  vsHdr2Digits: +(results["hdr-histogram-js recordValue(µs), 2 significant digits"].ms / ours).toFixed(1),
  vsHdr3Digits: +(results["hdr-histogram-js recordValue(µs), 3 significant digits"].ms / ours).toFixed(1),
  vsTdigest: +(results["tdigest push(array) + compress"].ms / ours).toFixed(1),
  vsSort: +(results["exact: Float64Array copy + sort"].ms / ours).toFixed(1),
};

// One Wasm call per add in a hot loop: ns per call once the range is covered.
const hot = new lib.LatencySketch();
hot.addAll(xs.subarray(0, 10_000));
rows["design: LatencySketch.add(ms), one call"] = nsPerOp((i) => hot.add(xs[i]), { n: 200_000, rounds: 7 });
hot.free();

// Sketches travel: the encoded size of this 1 M-sample sketch and the cost of
// each end of the trip (µs per call; not per sample, so not in `rows`).
const sent = new lib.LatencySketch();
sent.addAll(xs);
const encoded = sent.toBytes();
const travel = {
  bytes: encoded.length,
  jsonChars: JSON.stringify(sent).length,
  toBytesUs: +(nsPerOp(() => sent.toBytes(), { n: 5_000 }) / 1000).toFixed(2),
  fromBytesUs: +(nsPerOp(() => lib.LatencySketch.fromBytes(encoded).free(), { n: 5_000 }) / 1000).toFixed(2),
};
sent.free();

// Structured calls (ms per call, median of 5): derivation over labelled rows,
// Prometheus text, a simulation. What the boundary's encoding costs shows here.
const ROWS = 200_000;
const MODELS = ["a", "b", "c", "d"];
const labelled = Array.from({ length: ROWS }, (_, i) => ({
  ms: xs[i],
  outcome: i % 97 === 0 ? "timeout" : i % 89 === 0 ? "error" : "ok",
  model: MODELS[i & 3],
}));
let exposition = "# TYPE http_request_duration_seconds histogram\n";
for (const route of ["/a", "/b", "/c"]) {
  let c = 0;
  for (const le of [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]) {
    c += 100 + Math.round(le * 10);
    exposition += `http_request_duration_seconds_bucket{route="${route}",le="${le}"} ${c}\n`;
  }
  exposition += `http_request_duration_seconds_bucket{route="${route}",le="+Inf"} ${c + 3}\n`;
  exposition += `http_request_duration_seconds_sum{route="${route}"} ${c * 0.04}\nhttp_request_duration_seconds_count{route="${route}"} ${c + 3}\n`;
}
function msPerCall(fn, rounds = 5) {
  const times = [];
  for (let r = -1; r < rounds; r++) {
    const t0 = performance.now();
    fn();
    if (r >= 0) times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return +times[times.length >> 1].toFixed(3);
}
const callsMs = {
  [`deriveTimeouts(${ROWS} rows, by model)`]: msPerCall(() => lib.deriveTimeouts(labelled, { by: ["model"] })),
  [`deriveTimeouts(${ROWS} rows, no labels)`]: msPerCall(() => lib.deriveTimeouts(labelled)),
  "parsePrometheus(3 series × 12 buckets) + deriveTimeouts by route": msPerCall(
    () => lib.deriveTimeouts(lib.parsePrometheus(exposition), { by: ["route"] }),
    50,
  ),
  "simulate(n 20 000, 3 policies)": msPerCall(
    () => lib.simulate({ body: { medianMs: 40, sigma: 0.5 }, n: 20_000 }, [{ timeoutMs: 100 }, { timeoutMs: 200, retries: 1 }, { timeoutMs: 400, retries: 2 }]),
    20,
  ),
};

const extras = { samples: N, exactMs: Object.fromEntries(KEYS.map((k, i) => [k, +exact[i].toFixed(3)])), timesMs, maxRelativeError, speedup, travel, callsMs };
if (!isDeno && process.env.BENCH_SKIP_CLI !== "1") extras.cli = await cliThroughput();
console.log(JSON.stringify({ runtime: runtimeName(), unit: "ns per sample", rows, ...extras }));

/** The release CLI on a generated 10 M-line CSV (Node only). */
async function cliThroughput() {
  const { existsSync, statSync, openSync, writeSync, closeSync, renameSync } = await import("node:fs");
  const { spawnSync } = await import("node:child_process");
  const { tmpdir } = await import("node:os");
  const { join } = await import("node:path");
  const root = new URL("..", import.meta.url).pathname;
  const LINES = 10_000_000;
  // ms,outcome,model: seed 003's shape, 0.2% timeouts, four models; the
  // second file quotes the model ("a"), which takes the RFC 4180 reader.
  const generate = (quoted) => {
    const file = join(tmpdir(), `edge-deadline-bench-${LINES}${quoted ? "-quoted" : ""}.csv`);
    if (existsSync(file)) return file;
    const part = `${file}.${process.pid}`;
    const fd = openSync(part, "w");
    writeSync(fd, "ms,outcome,model\n");
    const models = (quoted ? ["a", "b", "c", "d"].map((m) => `"${m}"`) : ["a", "b", "c", "d"]);
    let chunk = [];
    for (let i = 0; i < LINES; i++) {
      const ms = xs[i % N] * (1 + (i % 4) * 0.25);
      chunk.push(i % 500 === 3 ? `5000,timeout,${models[i % 4]}` : `${ms.toFixed(3)},ok,${models[i % 4]}`);
      if (chunk.length === 100_000) {
        writeSync(fd, chunk.join("\n") + "\n");
        chunk = [];
      }
    }
    if (chunk.length) writeSync(fd, chunk.join("\n") + "\n");
    closeSync(fd);
    renameSync(part, file);
    return file;
  };
  const file = generate(false);
  const quotedFile = generate(true);
  const bin = process.env.EDGE_DEADLINE_BIN ?? join(root, "target/release/edge-deadline");
  if (!process.env.EDGE_DEADLINE_BIN) spawnSync("cargo", ["build", "--release", "-p", "edge-deadline-cli"], { cwd: root, stdio: "inherit" });
  const bins = { current: bin };
  if (process.env.EDGE_DEADLINE_BASELINE) bins.baseline = process.env.EDGE_DEADLINE_BASELINE;
  const args = (f) => ["derive", f, "--by", "model", "--json"];
  const timed = existsSync("/usr/bin/time");
  const runs = {};
  for (let round = 0; round < 5; round++) {
    for (const [input, f] of [["plain", file], ["quoted", quotedFile]]) for (const [binName, path] of Object.entries(bins)) {
      const name = `${binName}/${input}`;
      runs[name] ??= [];
      const t0 = performance.now();
      const r = timed ? spawnSync("/usr/bin/time", ["-v", path, ...args(f)], { encoding: "utf8", maxBuffer: 1 << 26 }) : spawnSync(path, args(f), { encoding: "utf8", maxBuffer: 1 << 26 });
      const seconds = (performance.now() - t0) / 1000;
      if (r.status !== 0) return { error: `${name}: exit ${r.status}: ${r.stderr.slice(-500)}` };
      const rssKb = Number(/Maximum resident set size \(kbytes\): (\d+)/.exec(r.stderr)?.[1] ?? NaN);
      const cpu = ["User", "System"].reduce((t, k) => t + Number(new RegExp(`${k} time \\(seconds\\): ([\\d.]+)`).exec(r.stderr)?.[1] ?? NaN), 0);
      runs[name].push({ seconds, cpu, rssKb, buckets: JSON.parse(r.stdout).buckets.length });
    }
  }
  const summary = (name, path) => {
    const rs = runs[name].slice().sort((a, b) => a.seconds - b.seconds);
    const median = rs[rs.length >> 1];
    const cpus = rs.map((r) => r.cpu).sort((a, b) => a - b);
    const rss = Math.max(...rs.map((r) => r.rssKb));
    return {
      binary: path.replace(root, ""),
      binaryBytes: statSync(path).size,
      seconds: +median.seconds.toFixed(2),
      secondsAll: runs[name].map((r) => +r.seconds.toFixed(2)),
      linesPerSec: Math.round(LINES / median.seconds),
      // CPU time (user + system) is steadier than wall time on a shared machine.
      cpuSeconds: +cpus[cpus.length >> 1].toFixed(2),
      linesPerCpuSec: Math.round(LINES / cpus[cpus.length >> 1]),
      peakRssMiB: Number.isFinite(rss) ? +(rss / 1024).toFixed(1) : null,
      buckets: median.buckets,
    };
  };
  return {
    command: `${timed ? "/usr/bin/time -v " : ""}BIN ${args("<10M-line CSV>").join(" ")}`,
    lines: LINES,
    bytes: { plain: statSync(file).size, quoted: statSync(quotedFile).size },
    ...Object.fromEntries(Object.keys(runs).map((name) => [name, summary(name, bins[name.split("/")[0]])])),
  };
}
