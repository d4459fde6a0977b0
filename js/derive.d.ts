// Types for js/derive.js. Every duration is in milliseconds; Prometheus
// `_seconds` histograms are converted. The data types are generated from the
// Rust ones (src/core/derive.rs) into edge_deadline_derive.d.ts.
import type { BucketResult, DeriveOptions as CoreDeriveOptions, Histogram } from "./edge_deadline_derive.js";
import type { LatencySketch } from "./sketch.js";

export type { Candidate as TimeoutCandidate, DerivedWarning, Excluded, WarningCode } from "./edge_deadline_derive.js";

/** One bucket's derived timeout. `null` where there is no data (no successes). */
export type DerivedTimeout = BucketResult & {
  /** ISO 8601, from the JS clock. */
  derivedAt: string;
};

/** One call: a duration, an outcome, and any labels to group by. */
export interface DurationRow {
  /** Required for successes; ignored for timeouts and errors. */
  ms?: number | null;
  /**
   * Success by default. Accepted: success, ok, true; timeout, timed_out,
   * deadline_exceeded; error, err, fail, failed, false, cancelled; or an HTTP
   * status, as a number or a numeric string (2xx success, 408 and 504
   * timeout, other 4xx and 5xx error).
   */
  outcome?: string | number | boolean | null;
  [label: string]: unknown;
}

/**
 * What to derive; every field is optional, and the defaults are the core's
 * (`deriveDefaults` in src/wasm/derive.rs; documented on each field).
 */
export interface DeriveOptions extends Partial<CoreDeriveOptions> {
  /** Labels (row fields or histogram labels) to derive one timeout per bucket of. */
  by?: readonly string[];
  /**
   * The field (or histogram label) holding the outcome; only successes count.
   * @default "outcome"
   */
  outcome?: string;
}

/**
 * `timeout = quantile(successful durations, q) × safety`, one row per bucket.
 * @throws {TypeError} data or options of the wrong type; {RangeError} bad values, naming the row or sample
 * @example
 * deriveTimeouts(rows, { by: ["model", "promptBucket"], q: 0.99, safety: 2 })
 */
export function deriveTimeouts(
  data: LatencySketch | Float64Array | readonly number[] | readonly DurationRow[] | readonly Histogram[],
  options?: DeriveOptions,
): DerivedTimeout[];

