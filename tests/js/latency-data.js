// Data shared by the sketch, derive, prom, tail and simulate cases: seeded
// generators (every runtime sees the same samples), exact sorted quantiles
// as oracles, seed 000's exposition and seed 003's scenario.
// The memory cases read the derive core's Wasm memory size (`memoryBytes`).
// Sketches and parses live in edge-deadline/derive's own .wasm, whose code
// (and glue) every derive entry imports from pkg/derive-main.js.
import { FleetAggregatorCore as Fleet, glue } from "../../pkg/derive-main.js";
import { memoryBytes } from "./pipeline-support.js";

export const wasmBytes = () => memoryBytes(glue);

/** The aggregator's core (js/durable.js's), for cases about the table it serves. */
export const FleetAggregatorCore = () => Fleet;

/** splitmix32-style generator: deterministic floats in (0, 1). */
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

export function normal(u) {
  return Math.sqrt(-2 * Math.log(u())) * Math.cos(2 * Math.PI * u());
}

/** Seed 003's shape: lognormal body (median 40 ms) + 0.5% uniform 0.3–1.5 s tail. */
export function seed003(n, seed = 1) {
  const u = rng(seed);
  const xs = new Float64Array(n);
  for (let i = 0; i < n; i++) xs[i] = u() < 0.005 ? 300 + 1200 * u() : 40 * Math.exp(0.35 * normal(u));
  return xs;
}

export const generators = {
  constant: () => 42,
  uniform: (u) => 1 + 999 * u(),
  lognormal: (u) => 40 * Math.exp(0.35 * normal(u)),
  bimodal: (u) => (u() < 0.05 ? 300 + 1200 * u() : 40 * Math.exp(0.35 * normal(u))),
  "with zeros": (u) => (u() < 0.2 ? 0 : 5 * u()),
};

/** Exact rank-⌊q·(n−1)⌋ quantile (the sketch's definition). */
export function exact(sorted, q) {
  return sorted[Math.floor(q * (sorted.length - 1) + 1e-9)];
}

export const QS = [0, 0.01, 0.1, 0.5, 0.9, 0.99, 0.999, 1];

// Seed 000's example exposition (src/core/derive.rs tests): 1 000 successes,
// 7 timeouts in their own series.
export const EXPOSITION = `# HELP dependency_latency_seconds Latency of calls to dependencies
# TYPE dependency_latency_seconds histogram
dependency_latency_seconds_bucket{dependency="search",operation="query",outcome="ok",le="0.025"} 100
dependency_latency_seconds_bucket{dependency="search",operation="query",outcome="ok",le="0.05"} 600
dependency_latency_seconds_bucket{dependency="search",operation="query",outcome="ok",le="0.1"} 990
dependency_latency_seconds_bucket{dependency="search",operation="query",outcome="ok",le="+Inf"} 1000
dependency_latency_seconds_sum{dependency="search",operation="query",outcome="ok"} 50.5
dependency_latency_seconds_count{dependency="search",operation="query",outcome="ok"} 1000
dependency_latency_seconds_bucket{dependency="search",operation="query",outcome="timeout",le="0.025"} 0
dependency_latency_seconds_bucket{dependency="search",operation="query",outcome="timeout",le="0.05"} 0
dependency_latency_seconds_bucket{dependency="search",operation="query",outcome="timeout",le="0.1"} 0
dependency_latency_seconds_bucket{dependency="search",operation="query",outcome="timeout",le="+Inf"} 7
`;

/** The same exposition as an `/api/v1/query?query=dependency_latency_seconds_bucket` response. */
export function asQueryResponse(text) {
  const result = [];
  for (const line of text.split("\n")) {
    const m = /^(\w+)\{(.*)\} (\S+)$/.exec(line);
    if (!m || !m[1].endsWith("_bucket")) continue;
    const metric = { __name__: m[1] };
    for (const [, k, v] of m[2].matchAll(/(\w+)="([^"]*)"/g)) metric[k] = v;
    result.push({ metric, value: [1700000000.123, m[3]] });
  }
  return { status: "success", data: { resultType: "vector", result } };
}

export const SEED_003 = { body: { medianMs: 40, sigma: 0.348 }, tail: { share: 0.005, loMs: 300, hiMs: 1500 }, n: 200_000, seed: 1 };

