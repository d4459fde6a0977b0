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
  /** The most bytes one window may hold in storage (64 KiB … 16 MiB); 2 MiB by default. A flush past it is refused, 429 WINDOW_FULL. */
  maxWindowBytes?: number;
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
 * The fleet's aggregator as a Durable Object class: `POST …/flush` (flush bytes, 204 once stored; 200 with
 * `{ refused }` when some buckets were refused on their own and the rest stored; 400 or 413 with
 * `{ code, message }` and nothing merged) and `GET …/table`. Export it from your Worker and bind it as a
 * Durable Object namespace; set options with a subclass's `static options`.
 */
export declare class TimeoutAggregator {
  static options: FleetOptions;
  /** The names of the Worker secrets holding the HTTP endpoint's bearer tokens: `TIMEOUTS_READ_TOKEN`, `TIMEOUTS_WRITE_TOKEN`. */
  static secrets: { read: string; write: string };
  constructor(ctx: { storage: unknown; blockConcurrencyWhile(f: () => Promise<unknown>): Promise<unknown> }, env: unknown);
  /** Merges one flush; resolves `{ refused }` (the buckets refused on their own) once the rest is stored. A whole refusal throws a RangeError with `.code`; a failed write rejects with `.code` "STORE_FAILED" and counts nothing. */
  flush(bytes: Uint8Array): Promise<{ refused: RefusedBucket[] }>;
  /** The derived table of what is stored. */
  table(): TimeoutTable;
  /** The HTTP endpoint: `POST …/flush` with the write token, `GET …/table` with the read token (`Authorization: Bearer …`); 401 otherwise. */
  fetch(request: Request): Promise<Response>;
}

/** A bucket of a flush refused on its own (`TOO_MANY_BUCKETS`, `TOO_MANY_CALLS`, `COUNT_OVERFLOW`) while the rest was merged. */
export interface RefusedBucket {
  bucket: string;
  code: string;
  message: string;
}

/** The same aggregator on Deno KV. */
export interface KvAggregator {
  /** Merges one flush into the window stored in KV; resolves `{ refused }` (the buckets refused on their own) once the rest is stored. */
  flush(bytes: Uint8Array): Promise<{ refused: RefusedBucket[] }>;
  /** The table derived from every window in KV. */
  table(): Promise<TimeoutTable>;
  /** The HTTP endpoint: `POST …/flush` with `writeToken`, `GET …/table` with `readToken` (bearer tokens); 401 otherwise. */
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
    /** The bearer token `fetch` asks for on `GET …/table`; without it, that route answers 401 to everyone. */
    readToken?: string;
    /** The bearer token `fetch` asks for on `POST …/flush`; without it, that route answers 401 to everyone. */
    writeToken?: string;
  },
): KvAggregator;

/** What `aggregatorBinding` reaches: a `kvAggregator`, or a Durable Object stub of `TimeoutAggregator` (RPC). */
export interface AggregatorTarget {
  flush(bytes: Uint8Array): Promise<{ refused: RefusedBucket[] } | void>;
  table(): TimeoutTable | Promise<TimeoutTable>;
}

/**
 * The in-Worker (or in-process) way to the aggregator, for `TimeoutBook`'s `aggregator` option: `fetch(request)`
 * hands `POST …/flush` and `GET …/table` to `target.flush` and `target.table`, with no token. `target` is a
 * `kvAggregator` or a function answering the Durable Object's stub (called per request).
 */
export declare function aggregatorBinding(target: AggregatorTarget | (() => AggregatorTarget)): { fetch(request: Request): Promise<Response> };

/** TimeoutAggregator made on `Base` (the workerd entry makes it on `DurableObject`); internal to the package's entries. */
export declare function aggregatorClass(Base: new (ctx: any, env: any) => object): typeof TimeoutAggregator;
