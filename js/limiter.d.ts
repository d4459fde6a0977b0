// Types for js/limiter.js. The options type is generated from the Rust one
// (src/core/limiter.rs, `LimiterOptions`) into edge_deadline_derive.d.ts.
import type { LimiterOptions } from "./edge_deadline_derive.js";

/** All slots of a `ConcurrencyLimiter` were taken (and no wait was allowed or affordable): the call was shed. */
export class Overloaded extends Error {
  constructor(limit: number, inFlight: number, options?: ErrorOptions);
  readonly name: "Overloaded";
  readonly limit: number;
  readonly inFlight: number;
}

/** Brand check that works across two copies of the package. */
export function isOverloaded(e: unknown): e is Overloaded;

/** What bounds a caller's wait for a slot (`run(fn, opts)`). */
export interface RunOptions {
  /** Leaves the queue, rejected with the signal's reason, when it aborts. */
  signal?: AbortSignal;
  /** A `Deadline` of `edge-deadline`: its remaining time must cover the estimated wait, and its signal ends the wait. */
  deadline?: { remaining(): number; signal(): AbortSignal };
  /**
   * The caller's remaining budget, ms: it must cover the estimated wait, and a caller whose budget ran out
   * before its turn is shed then (`Overloaded`, `fn` never called). It arms no timer: pass `signal` to leave the queue earlier.
   */
  remainingMs?: number;
}

/** A slot taken with `tryAcquire()`; the first of `release`, `drop`, `ignore` gives it back, later calls do nothing. */
export interface Permit {
  /** The call succeeded: its round trip is a sample. */
  release(): void;
  /** The call failed from overload (it timed out, a server shed it): the limit backs off (AIMD). */
  drop(): void;
  /** The call failed for another reason: no sample. */
  ignore(): void;
}

/**
 * Bounds calls in flight with a fixed limit or one that adapts to measured round trips
 * (`"aimd"`, `"gradient2"`); sheds with `Overloaded`, or lets up to `maxQueue` callers wait
 * when their budget covers the estimated wait. Arms no timers.
 */
export class ConcurrencyLimiter {
  /**
   * @throws {TypeError} an option of the wrong type
   * @throws {RangeError} an option out of its range (`.param` names it: `options.minLimit`…)
   */
  constructor(options: LimiterOptions & {
    /** A whole number of slots (fixed), or an adaptive algorithm. */
    limit: number | "aimd" | "gradient2";
  });
  /** The limit now (a fixed limit's number of slots). */
  readonly limit: number;
  readonly algorithm: "fixed" | "aimd" | "gradient2";
  readonly inFlight: number;
  readonly available: number;
  /** Calls rejected with `Overloaded` (and `tryAcquire()` refusals) so far. */
  readonly shed: number;
  /** Callers waiting for a slot now. */
  readonly queued: number;
  /** The last measurement window's average round trip, ms (`undefined` before one). */
  readonly rttMs: number | undefined;
  /** The estimated wait of the next caller to queue, ms: position × round trip / limit. */
  estimatedWaitMs(): number;
  /** A slot now, or `undefined` (full, or callers are waiting). */
  tryAcquire(): Permit | undefined;
  /**
   * Runs `fn()` holding a slot until its result settles; when full, waits if `maxQueue` allows
   * and `opts` covers the estimated wait, or rejects with `Overloaded` without calling `fn`
   * (after the microtasks already queued, so a call that settled in this turn, e.g. from its own
   * `.then`, has released its slot).
   */
  run<T>(fn: () => T | PromiseLike<T>, opts?: RunOptions): Promise<T>;
}
