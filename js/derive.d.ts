// Types for js/derive.js, js/sketch.js and js/limiter.js. Every duration is
// in milliseconds; Prometheus `_seconds` histograms are converted.

export interface LatencySketchOptions {
  /**
   * Relative error of every quantile, 0.001 … 0.5.
   * @default 0.01
   */
  relativeError?: number;
}

/**
 * A mergeable quantile sketch of durations (DDSketch-style log buckets): at
 * most 16 KB whatever the number of samples, exact below 257 samples, and
 * within `relativeError` of the exact quantile above.
 *
 * Its counters live in WebAssembly memory, but at most 1 024 sketches hold it at
 * once (≤ 16 MiB): the least recently used are parked in JS memory and restored
 * on use, so forgotten sketches are reclaimed without `free()`. `free()` (or
 * `using`) releases one at once.
 */
export class LatencySketch implements Disposable {
  /** @throws {TypeError} | {RangeError} `relativeError` outside 0.001 … 0.5 */
  constructor(options?: LatencySketchOptions);
  /**
   * Adds one duration; allocates nothing once the range is covered.
   * @throws {RangeError} NaN, ±Infinity, negative, or past 2^53 − 1
   */
  add(ms: number): void;
  /**
   * Adds every duration, all or nothing.
   * @throws {RangeError} naming the index of the first bad sample (nothing is added)
   */
  addAll(samples: Float64Array | readonly number[]): this;
  /**
   * Adds every sample of `other`; the result answers as if all samples had been added to one sketch.
   * @throws {RangeError} when the relative errors differ; {TypeError} when `other` is this sketch
   */
  merge(other: LatencySketch): this;
  /**
   * The sketch as compact, versioned bytes (under 2 KB for 1 ms … 1 h at 1%),
   * to send where sketches from many isolates are merged.
   */
  toBytes(): Uint8Array;
  /**
   * Reads `toBytes()` output, or the base64 `bytes` string of the JSON form.
   * @throws {RangeError} damaged, truncated or foreign bytes, or a newer format version
   * @throws {TypeError} `bytes` is not a Uint8Array, ArrayBuffer(View) or string
   */
  static fromBytes(bytes: Uint8Array | ArrayBuffer | ArrayBufferView | string): LatencySketch;
  /** What `JSON.stringify(sketch)` writes: a summary plus the bytes as base64. */
  toJSON(): LatencySketchJSON;
  readonly count: number;
  readonly relativeError: number;
  /** Exact; `undefined` when empty. */
  readonly min: number | undefined;
  /** Exact; `undefined` when empty. */
  readonly max: number | undefined;
  readonly sum: number;
  /**
   * Set when the sketch merged its lowest buckets to stay within 16 KB (a
   * range wider than about 10^13 at 1%, 21× at 0.1%): quantiles at or below
   * it may read high. `undefined` while the accuracy holds everywhere.
   */
  readonly collapsedBelowMs: number | undefined;
  /**
   * The `q`-quantile (0.99 for p99); `undefined` when empty, never 0.
   * @throws {RangeError} `q` outside 0 … 1 or NaN
   */
  quantile(q: number): number | undefined;
  /** Share of samples above `timeoutMs`: its false-timeout rate; `undefined` when empty. */
  fractionAbove(timeoutMs: number): number | undefined;
  /** Frees the WebAssembly memory now; later use throws. Safe to call twice. */
  free(): void;
  [Symbol.dispose](): void;
}

/** The JSON form of a {@link LatencySketch}; quantiles are absent when `count` is 0. */
export interface LatencySketchJSON {
  type: "LatencySketch";
  /** The byte format's version. */
  version: number;
  relativeError: number;
  count: number;
  min?: number;
  max?: number;
  p50?: number;
  p90?: number;
  p99?: number;
  p999?: number;
  /** Base64 of `toBytes()`: `LatencySketch.fromBytes(json.bytes)` restores the sketch. */
  bytes: string;
}

/** A candidate timeout and the share of healthy calls it would have failed. */
export interface TimeoutCandidate {
  /** `"p99"`, `"2xp99"`, `"p99.9"`, `"configured"` or `"above body"`. */
  name: string;
  timeoutMs: number;
  falseTimeoutRate: number;
}

/** A fast body, a gap, and a slow tail. */
export interface TailShape {
  /** The largest value of the fast body. */
  bodyEdgeMs: number;
  /** The smallest value of the slow tail. */
  tailStartMs: number;
  gapRatio: number;
  /** Share of samples in the tail: the false-timeout rate of a timeout in the gap. */
  tailShare: number;
  tailCount: number;
  /** Samples in the gap set aside as the body's extremes (at most 1 in 100 000). */
  stragglers: number;
  /** A timeout just above the body. */
  recommendedMs: number;
}

export type WarningCode =
  | "no-successes"
  | "small-sample"
  | "censored"
  | "pile-up"
  | "drift"
  | "resolution"
  | "above-largest-bucket"
  | "unit-assumed"
  | "collapsed";

/** One bucket's derived timeout. `null` where there is no data (no successes). */
export interface DerivedTimeout {
  /** The bucket's label values (`{}` without `by`). */
  bucket: Record<string, string>;
  /** Successful calls the percentiles come from. */
  n: number;
  p50: number | null;
  p90: number | null;
  p99: number | null;
  p999: number | null;
  /** The percentile at `q`. */
  quantileMs: number | null;
  /** `quantileMs × safety`. */
  timeoutMs: number | null;
  q: number;
  safety: number;
  /** ISO 8601, from the JS clock. */
  derivedAt: string;
  /** Calls left out of the percentiles. */
  excluded: { timeouts: number; errors: number };
  /** Raw data only: a gap between a fast body and a slow tail. */
  tail: TailShape | null;
  candidates: TimeoutCandidate[];
  warnings: { code: WarningCode; message: string }[];
}

/** One call: a duration, an outcome, and any labels to group by. */
export interface DurationRow {
  /** Required for successes; ignored for timeouts and errors. */
  ms?: number | null;
  /**
   * Success by default. Accepted: success, ok, true; timeout, timed_out,
   * deadline_exceeded; error, err, fail, failed, false, cancelled.
   */
  outcome?: string | boolean | null;
  [label: string]: unknown;
}

/** One histogram series from `parsePrometheus` (plain data, nothing to free). */
export interface PrometheusHistogram {
  kind: "histogram";
  /** The family, e.g. `http_request_duration_seconds`. */
  metric: string;
  /** The unit the family declares by its name; `"unknown"` values are taken as ms. */
  unit: "seconds" | "milliseconds" | "unknown";
  /** Labels other than `le`. */
  labels: Record<string, string>;
  /** Upper bounds in ms, increasing, the last one `Infinity`. */
  boundsMs: number[];
  /** Cumulative counts, one per bound. */
  cumulative: number[];
  sumMs: number | null;
  count: number | null;
}

export interface DeriveOptions {
  /**
   * The percentile: 0.99 for user-facing paths, 0.999 for background work.
   * @default 0.99
   */
  q?: number;
  /**
   * The multiple applied to it, 1 … 100 (1.5–2 covers drift; 5 for stall timeouts from chunk gaps).
   * @default 2
   */
  safety?: number;
  /** Labels (row fields or histogram labels) to derive one timeout per bucket of. */
  by?: readonly string[];
  /**
   * The field (or histogram label) holding the outcome; only successes count.
   * @default "outcome"
   */
  outcome?: string;
  /** The timeout in force now: checks drift (> 2× away) and pile-ups at it. */
  configuredMs?: number;
  /**
   * Sketch accuracy for raw durations.
   * @default 0.01
   */
  relativeError?: number;
}

/**
 * `timeout = quantile(successful durations, q) × safety`, one row per bucket.
 * @throws {TypeError} data or options of the wrong type; {RangeError} bad values, naming the row or sample
 * @example
 * deriveTimeouts(rows, { by: ["model", "promptBucket"], q: 0.99, safety: 2 })
 */
export function deriveTimeouts(
  data: LatencySketch | Float64Array | readonly number[] | readonly DurationRow[] | readonly PrometheusHistogram[],
  options?: DeriveOptions,
): DerivedTimeout[];

/**
 * Histogram series from Prometheus: the text exposition format, or an
 * `/api/v1/query` response (instant vector of `NAME_bucket` series), as text or parsed JSON.
 * Text is parsed as a stream in linear time; Wasm memory grows to about 5.5
 * times the text at the peak and is kept for later calls.
 * @throws {RangeError} naming the line (or result) and field; non-cumulative buckets; no `+Inf` bucket;
 *   exposition text over 16 MiB (before any work)
 */
export function parsePrometheus(input: string | object, options?: { metric?: string }): PrometheusHistogram[];

/** Share of samples above `timeoutMs`; `undefined` without samples. */
export function falseTimeoutRate(samples: Float64Array | readonly number[] | LatencySketch, timeoutMs: number): number | undefined;

/** A gap between a fast body and a slow tail, or `null` (also below 200 samples). */
export function tailShape(samples: Float64Array | readonly number[] | LatencySketch): TailShape | null;

export interface Scenario {
  /** Lognormal: median and log-standard-deviation (0 … 4). */
  body: { medianMs: number; sigma: number };
  /** With probability `share`, uniform in `loMs … hiMs`. Default: no tail. */
  tail?: { share: number; loMs: number; hiMs: number };
  /** Calls, 1 … 2 000 000. @default 200000 */
  n?: number;
  /** @default 1 */
  seed?: number;
}

export interface Policy {
  /** Per-attempt timeout. */
  timeoutMs: number;
  /** Retries after a timeout (each an independent draw), 0 … 10. @default 0 */
  retries?: number;
}

export interface PolicyResult {
  timeoutMs: number;
  retries: number;
  /** End-to-end, failed calls counted at the time spent waiting. */
  p50Ms: number;
  p99Ms: number;
  p999Ms: number;
  /** Calls whose every attempt timed out. */
  failureRate: number;
  /** Extra attempts per call. */
  extraLoad: number;
  /** The false-timeout rate of `timeoutMs` on healthy calls. */
  firstAttemptTimeoutRate: number;
}

export interface Simulation {
  /** The scenario's own latency percentiles (no timeout). */
  scenario: { p50Ms: number; p90Ms: number; p99Ms: number; p999Ms: number };
  policies: PolicyResult[];
}

/**
 * Every policy on the same simulated calls (deterministic per seed).
 * @throws {TypeError} | {RangeError} naming the parameter or `policies[i]`
 */
export function simulate(scenario: Scenario, policies?: readonly Policy[]): Simulation;

/** Worst-case calls in flight: `ratePerSec × timeoutMs / 1000` (Little's law). */
export function concurrencyBound(options: { ratePerSec: number; timeoutMs: number }): number;

/** The longest timeout (ms) keeping `ratePerSec × timeout` within `limit`. */
export function maxTimeoutFor(options: { ratePerSec: number; limit: number }): number;

/** All slots of a `ConcurrencyLimiter` were taken: the call was shed, not queued. */
export class Overloaded extends Error {
  constructor(limit: number, inFlight: number, options?: ErrorOptions);
  readonly name: "Overloaded";
  readonly limit: number;
  readonly inFlight: number;
}

/** Brand check that works across two copies of the package. */
export function isOverloaded(e: unknown): e is Overloaded;

/** Bounds calls in flight; sheds (rejects at once) instead of queueing. No timers, no Wasm memory. */
export class ConcurrencyLimiter {
  /** @throws {TypeError} | {RangeError} `limit` not a whole number 1 … 2^32 − 1 */
  constructor(options: { limit: number });
  readonly limit: number;
  readonly inFlight: number;
  readonly available: number;
  /** Calls rejected with `Overloaded` so far. */
  readonly shed: number;
  /**
   * Runs `fn()` holding a slot until its result settles; when full, rejects
   * with `Overloaded` at once without calling `fn`.
   */
  run<T>(fn: () => T | PromiseLike<T>): Promise<T>;
}
