import type { TableRow } from "./edge_deadline_derive.js";

/** How the aggregator windows and derives; every field is optional. */
export interface FleetOptions {
  /** The length of one window, in ms (a whole number, at least 1 000); an hour by default. */
  windowMs?: number;
  /** How many windows are kept (1 … 1 024); 24 by default. Older traffic ages out whole. */
  windows?: number;
  /** The percentile read, strictly between 0 and 1; 0.99 by default. */
  q?: number;
  /** The multiple applied to it, 1 … 100; 2 by default. */
  safety?: number;
  /** The relative error every flushed sketch must have; 0.01 by default. A flush with another is refused. */
  relativeError?: number;
}

/** What `GET …/table` answers. */
export interface TimeoutTable {
  v: 1;
  /** When it was derived (ISO 8601, UTC). */
  derivedAt: string;
  windowMs: number;
  windows: number;
  q: number;
  safety: number;
  /** One row per bucket name. */
  buckets: Record<string, TableRow>;
}

export type { TableRow };

/**
 * The fleet's aggregator as a Durable Object class: `POST …/flush` (flush bytes, 204 once stored; 400 or 413
 * with `{ code, message }` and nothing merged) and `GET …/table`. Export it from your Worker and bind it as a
 * Durable Object namespace; set options with a subclass's `static options`.
 */
export declare class TimeoutAggregator {
  static options: FleetOptions;
  constructor(ctx: { storage: unknown; blockConcurrencyWhile(f: () => Promise<unknown>): Promise<unknown> }, env: unknown);
  /** Merges one flush; resolves once it is stored. A refusal throws a RangeError with `.code`. */
  flush(bytes: Uint8Array): Promise<void>;
  /** The derived table now. */
  table(): TimeoutTable;
  /** `POST …/flush`, `GET …/table`. */
  fetch(request: Request): Promise<Response>;
}

/** The same aggregator on Deno KV. */
export interface KvAggregator {
  /** Merges one flush into the window stored in KV; resolves once it is stored. */
  flush(bytes: Uint8Array): Promise<void>;
  /** The table derived from every window in KV. */
  table(): Promise<TimeoutTable>;
  /** `POST …/flush`, `GET …/table`: a `Deno.serve` handler. */
  fetch(request: Request): Promise<Response>;
}

/**
 * The aggregator on Deno KV (`await Deno.openKv(path)`), for Deno servers. Several processes may share one
 * database: each write checks the window's versionstamp and merges again on a conflict.
 */
export declare function kvAggregator(
  kv: unknown,
  options?: FleetOptions & {
    /** The KV key prefix its windows live under; `["edge-deadline", "fleet"]` by default. */
    prefix?: unknown[];
    /** The clock, in ms since 1970 (`Date.now` by default). */
    now?: () => number;
  },
): KvAggregator;
