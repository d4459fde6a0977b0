// Types for js/little.js. The options types are generated from the Rust
// ones (src/core/little.rs) into edge_deadline_derive.d.ts.
import type { ConcurrencyBoundOptions, LimiterOptions, MaxTimeoutOptions } from "./edge_deadline_derive.js";

/** Worst-case calls in flight: `ratePerSec × timeoutMs / 1000` (Little's law). */
export function concurrencyBound(options: ConcurrencyBoundOptions): number;

/** The longest timeout (ms) keeping `ratePerSec × timeout` within `limit`. */
export function maxTimeoutFor(options: MaxTimeoutOptions): number;

/** All slots of a `ConcurrencyLimiter` were taken: the call was shed, not queued. */
export class Overloaded extends Error {
  constructor(limit: number, inFlight: number, options?: ErrorOptions);
  readonly name: "Overloaded";
  readonly limit: number;
  readonly inFlight: number;
}

/** Brand check that works across two copies of the package. */
export function isOverloaded(e: unknown): e is Overloaded;

/** Bounds calls in flight; sheds (rejects in the same turn) instead of queueing. No timers, no Wasm memory. */
export class ConcurrencyLimiter {
  /** @throws {TypeError} | {RangeError} `limit` not a whole number 1 … 2^32 − 1 */
  constructor(options: LimiterOptions);
  readonly limit: number;
  readonly inFlight: number;
  readonly available: number;
  /** Calls rejected with `Overloaded` so far. */
  readonly shed: number;
  /**
   * Runs `fn()` holding a slot until its result settles; when full, rejects
   * with `Overloaded` in the same turn without calling `fn` (after the microtasks already queued,
   * so a call that settled in this turn, e.g. from its own `.then`, has released its slot).
   */
  run<T>(fn: () => T | PromiseLike<T>): Promise<T>;
}
