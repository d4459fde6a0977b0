// Calls made once per request or once per process, not per chunk or per
// step: plan() construction, p.trace(), Deadline.fromHeaders and
// parsePrometheus on a realistic scrape. Structured data crosses the Wasm
// boundary in these calls, so they are where a change of encoding shows.
// Prints one JSON line: { runtime, rows: { label: ns per call }, firstCallUs }.
//   node bench/cold.bench.mjs        deno run -A bench/cold.bench.mjs
//   workerd: `node bench/run.mjs cold` runs `run(lib)` inside a fetch handler.
//
// Two figures per call:
// - rows: ns per call once warm (the median of 7 rounds, rounds interleaved
//   across the calls so load from other processes hits all alike);
// - firstCallUs (Node and Deno): the very first call of each in a fresh
//   process right after init(), in µs: what a cold isolate pays before the
//   JIT has seen the code. One sample per process: read it as an order of
//   magnitude, or run the bench several times. workerd's clock only moves
//   across I/O, so it has no first-call figure.
import { loadPackage, nsPerOpInterleaved, runtimeName } from "./harness.mjs";

const isWorkerd = typeof globalThis.WebSocketPair === "function";

const STEPS = [
  { name: "retrieve", minMs: 10, preferredMs: 2_000, kind: "optional" },
  { name: "rerank", minMs: 20, preferredMs: 500, kind: "optional" },
  { name: "generate", minMs: 100, kind: "mandatory", reserveMs: 200 },
  { name: "respond", minMs: 50, kind: "fallback" },
];
const INCOMING = { "content-type": "application/grpc", "grpc-timeout": "2500m", "user-agent": "grpc-node/1.14", "x-request-id": "0f3c9a" };

/**
 * A scrape as a Node service exposes it with prom-client: default process
 * metrics, a counter, a gauge, and an HTTP latency histogram with prom-client's
 * default buckets over 6 routes × 2 methods × 3 status codes (36 series, 504
 * bucket lines; about 60 KB). Deterministic.
 */
export function exposition() {
  const lines = [
    "# HELP process_cpu_user_seconds_total Total user CPU time spent in seconds.",
    "# TYPE process_cpu_user_seconds_total counter",
    "process_cpu_user_seconds_total 12.345",
    "# HELP process_resident_memory_bytes Resident memory size in bytes.",
    "# TYPE process_resident_memory_bytes gauge",
    "process_resident_memory_bytes 98304000",
    "# HELP nodejs_eventloop_lag_seconds Lag of event loop in seconds.",
    "# TYPE nodejs_eventloop_lag_seconds gauge",
    "nodejs_eventloop_lag_seconds 0.004",
    "# HELP http_requests_total Requests served.",
    "# TYPE http_requests_total counter",
  ];
  const routes = ["/api/chat", "/api/search", "/api/embed", "/api/users/:id", "/health", "/metrics"];
  const methods = ["GET", "POST"];
  const statuses = ["200", "429", "504"];
  const buckets = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
  let seed = 7;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  const series = [];
  for (const route of routes) for (const method of methods) for (const status of statuses) series.push(`method="${method}",route="${route}",status_code="${status}"`);
  for (const labels of series) lines.push(`http_requests_total{${labels}} ${Math.floor(next() * 1e5)}`);
  lines.push(
    "# HELP http_request_duration_seconds Duration of HTTP requests in seconds.",
    "# TYPE http_request_duration_seconds histogram",
  );
  for (const labels of series) {
    let cumulative = 0;
    let sum = 0;
    for (const le of buckets) {
      const n = Math.floor(next() * 400);
      cumulative += n;
      sum += n * le * 0.7;
      lines.push(`http_request_duration_seconds_bucket{le="${le}",${labels}} ${cumulative}`);
    }
    cumulative += Math.floor(next() * 20);
    lines.push(`http_request_duration_seconds_bucket{le="+Inf",${labels}} ${cumulative}`);
    lines.push(`http_request_duration_seconds_sum{${labels}} ${sum.toFixed(6)}`);
    lines.push(`http_request_duration_seconds_count{${labels}} ${cumulative}`);
  }
  return lines.join("\n") + "\n";
}

const PLAN = "plan(deadline, 4 steps)";
const TRACE = "p.trace() of 3 records";
const PROM = "parsePrometheus(36 histograms, 504 bucket lines)";

/** µs that `fn` took; its result in `box.value`. */
function timedUs(fn, box) {
  const t0 = performance.now();
  box.value = fn();
  return +((performance.now() - t0) * 1000).toFixed(1);
}

export async function run(lib, { first = false } = {}) {
  const { Deadline, plan, parsePrometheus } = lib;
  const deadline = Deadline.in(1e9);
  const text = exposition();
  const headers = new Headers(INCOMING);
  const sync = () => 1;
  const result = { runtime: runtimeName(), rows: {} };
  // The first call of each, in the order a request meets them. The plan's
  // first three steps run between its construction and its first trace().
  const box = {};
  const firstCallUs = { [PLAN]: timedUs(() => plan(deadline, STEPS), box) };
  const traced = box.value;
  for (const step of STEPS.slice(0, 3)) await traced.run(step.name, sync);
  firstCallUs[TRACE] = timedUs(() => traced.trace(), box);
  firstCallUs["Deadline.fromHeaders(Headers, 4 headers)"] = timedUs(() => Deadline.fromHeaders(headers, { maxMs: 5_000 }), box);
  firstCallUs["Deadline.fromHeaders(plain object, 4 headers)"] = timedUs(() => Deadline.fromHeaders(INCOMING, { maxMs: 5_000 }), box);
  firstCallUs[PROM] = timedUs(() => parsePrometheus(text), box);
  if (box.value.length !== 36) throw new Error(`parsePrometheus found ${box.value.length} histograms, expected 36`);
  if (first) result.firstCallUs = firstCallUs;

  result.rows = nsPerOpInterleaved({
    [PLAN]: [() => plan(deadline, STEPS), 20_000],
    [TRACE]: [() => traced.trace(), 20_000],
    "Deadline.fromHeaders(Headers, 4 headers)": [() => Deadline.fromHeaders(headers, { maxMs: 5_000 }), 20_000],
    "Deadline.fromHeaders(plain object, 4 headers)": [() => Deadline.fromHeaders(INCOMING, { maxMs: 5_000 }), 20_000],
    [PROM]: [() => parsePrometheus(text), 100],
    [`${PROM}, { metric }`]: [() => parsePrometheus(text, { metric: "http_request_duration_seconds" }), 100],
  });
  result.promTextBytes = text.length;
  deadline.dispose();
  return result;
}

// Node and Deno run the bench as a script; workerd imports run() (bench/run.mjs),
// and refuses modules with a top-level await, hence no await at this level.
async function main() {
  console.log(JSON.stringify(await run(await loadPackage(), { first: true })));
}
if (!isWorkerd) main();
