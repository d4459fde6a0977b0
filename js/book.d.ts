// Types for js/book.js.
import type { LatencySketch } from "./sketch.js";

/** Where a book flushes and reads the table: a URL, or anything with `fetch(request)` (a Durable Object stub, a service binding). */
export type Aggregator = string | { fetch(request: Request): Promise<Response> };

/** What a book tells `onWarning`, once per code and bucket. */
export interface BookWarning {
  /** `NO_TABLE`, `FEW_SAMPLES`, `STALE` (a fallback was served), `BUCKETS_FULL`, `REFRESH_FAILED`, `REFRESH_LOST` (a refresh never finished: in a Worker, pass `ctx`), `FLUSH_REFUSED` (dropped), `FLUSH_FAILED` (kept for the next flush). */
  code: "NO_TABLE" | "FEW_SAMPLES" | "STALE" | "BUCKETS_FULL" | "REFRESH_FAILED" | "REFRESH_LOST" | "FLUSH_REFUSED" | "FLUSH_FAILED";
  /** The bucket (or a detail, for the codes that have none). */
  bucket?: string;
  message: string;
}

export interface TimeoutBookOptions {
  /** Where flushes go (POST <base>/flush) and the table comes from (GET <base>/table). Without one, the book records and `takeFlush()` hands you the bytes. */
  aggregator?: Aggregator;
  /** The aggregator's URL when `aggregator` is a binding. Default "https://timeout-aggregator". */
  base?: string;
  /** At most one flush per this long, ms. Default 10 000. */
  flushEveryMs?: number;
  /** How often the table is read, ms. Default 60 000. */
  refreshEveryMs?: number;
  /** How long a table is served after it arrived, ms; later, callers get their fallback. Default 600 000. */
  maxStaleMs?: number;
  /** How far one refresh may move a served value (× or ÷), 1 … 1000. Default 2. */
  maxStepFactor?: number;
  /** Buckets held between flushes, 1 … 1024; records into more are dropped (with a warning). Default 256. */
  maxBuckets?: number;
  /** The sketches' relative error, 0.001 … 0.5. Default 0.01. */
  relativeError?: number;
  /** Told once per code and bucket. Default: `console.warn(message)`. */
  onWarning?: (warning: BookWarning) => void;
}

/** A call's outcome: only "ok" is a latency; timeouts and errors are counted apart. */
export type Outcome = "ok" | "timeout" | "error";

/**
 * Latencies recorded where the work happens, flushed to one aggregator, and
 * the fleet's derived timeouts served back.
 */
export class TimeoutBook {
  constructor(options?: TimeoutBookOptions);
  /** Records one call of `bucket` (1 … 256 bytes of UTF-8): `ms` it took and its outcome (default "ok"). */
  record(bucket: string, ms: number, outcome?: Outcome): void;
  /**
   * The fleet's derived timeout for `bucket` (moved by at most `maxStepFactor` per refresh, its censoring floor
   * included; a first value at most that far from `fallbackMs`; whole ms, 1 … 2^31 − 1), or `fallbackMs` until the fleet has one from enough samples (`10 / (1 − q)` successes,
   * 1 000 for p99) or while the table is stale. Synchronous;
   * starts a due refresh in the background, handed to `ctx.waitUntil` when `ctx` is given: in a Worker a
   * refresh outside it is dropped when the request ends (a refresh that never finishes is started again
   * after 10 s at most, with a `REFRESH_LOST` warning).
   */
  timeout(bucket: string, options: { fallbackMs: number; ctx?: { waitUntil(promise: Promise<unknown>): void } }): number;
  /**
   * Sends what was recorded since the last flush (at most once per `flushEveryMs`) and refreshes the table
   * when due: for `ctx.waitUntil(book.flush())`. Never rejects. `sent`, `kept` (for the next flush: the
   * aggregator was unreachable) and `dropped` (refused, or past `maxBuckets`) count buckets.
   */
  flush(): Promise<{ sent: number; kept: number; dropped: number }>;
  /**
   * For a long-lived server (Node, Deno, Bun): flushes every `flushEveryMs`, and when the process is told to
   * stop (`signals`, default SIGTERM and SIGINT) sends what is left before it ends (the signal is raised again
   * after the flush unless another listener handles it). Returns `stop()`: ends both and sends what is left
   * at once. In a Worker, use `ctx.waitUntil(book.flush())` instead.
   */
  autoFlush(options?: { signals?: string[] }): () => Promise<{ sent: number; kept: number; dropped: number }>;
  /** Reads the table now; never rejects (a failure keeps what is served, with a warning). */
  refresh(): Promise<void>;
  /** Everything recorded since the last flush as flush bytes (each at most 256 KiB); the book is emptied. */
  takeFlush(): Uint8Array[];
  /** Buckets recorded since the last flush. */
  readonly size: number;
}

/** One bucket of a flush, as `readFlush` reads it. */
export interface FlushedBucket {
  name: string;
  inForceMs: number | undefined;
  timeouts: number;
  errors: number;
  successes: LatencySketch;
}

/** Reads flush bytes; a RangeError (`.code` FOREIGN_BYTES, TRUNCATED_BYTES, CORRUPT_BYTES, TOO_LARGE, …) when they are not a flush. */
export function readFlush(bytes: Uint8Array): FlushedBucket[];
