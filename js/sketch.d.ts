// Types for js/sketch.js. Every duration is in milliseconds.

export interface LatencySketchOptions {
  /** Relative error of every quantile, 0.001 … 0.5 (the core's default: 0.01, 1%). */
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
   * @throws {RangeError} NaN, ±Infinity, negative, or past 2^53 − 1; code `COUNT_LIMIT` when the
   *   sketch already counts 2^53 − 1 samples
   */
  add(ms: number): void;
  /**
   * Adds every duration, all or nothing.
   * @throws {RangeError} naming the index of the first bad sample (nothing is added); code
   *   `COUNT_LIMIT` past 2^53 − 1 samples in all
   */
  addAll(samples: Float64Array | readonly number[]): this;
  /**
   * Adds every sample of `other`; the result answers as if all samples had been added to one sketch.
   * @throws {RangeError} when the relative errors differ, or (code `COUNT_LIMIT`, this sketch
   *   unchanged) when the two would count more than 2^53 − 1 samples; {TypeError} when `other` is this sketch
   */
  merge(other: LatencySketch): this;
  /**
   * The sketch as compact, versioned bytes (under 2 KB for 1 ms … 1 h at 1%),
   * to send where sketches from many isolates are merged.
   */
  toBytes(): Uint8Array;
  /**
   * Reads `toBytes()` output, or the base64 `bytes` string of the JSON form.
   * @throws {RangeError} damaged, truncated or foreign bytes (also a count past 2^53 − 1, or a
   *   min, max or zero count the counters contradict), or a newer format version
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

