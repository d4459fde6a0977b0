// Types for js/breaker.js. The options and the counters are generated from the
// Rust core (src/core/breaker.rs) into edge_deadline_derive.d.ts.
import type { BreakerOptions, CircuitState, CircuitStats, OpenReason } from "./edge_deadline_derive.js";
import type { OtelOption } from "./otel.js";

export type { CircuitState, CircuitStats, OpenReason };

/** A key changed state (after the change). `at` is on the package's clock (ms). */
export type CircuitStateChange =
  | { key: string; from: "closed" | "half-open"; to: "open"; reason: OpenReason; at: number }
  | { key: string; from: "open"; to: "half-open"; at: number }
  | { key: string; from: "half-open"; to: "closed"; at: number };

/**
 * The core's settings (every one optional; the defaults: open after 5 failures in a row, or
 * when half of the last 100 calls failed once 20 were seen; open for 10 000 ms; 1 probe;
 * 1 000 keys), plus the JS callbacks.
 */
export type CircuitBreakerOptions = BreakerOptions & OtelOption & {
  /** Called after each change of a key's state; what it throws is reported and changes nothing. */
  onStateChange?: (event: CircuitStateChange) => void;
  /** Whether a rejection the dependency caused counts as a failure (default: every one does; a timeout, `Overloaded`, `CircuitOpen` or the caller leaving is decided before it is asked). Must return a boolean. */
  isFailure?: (error: unknown) => boolean;
};

/** A breaker refused the call: it fails at once until `retryAt`. Not a timeout. */
export class CircuitOpen extends Error {
  readonly name: "CircuitOpen";
  readonly key: string;
  readonly state: "open" | "half-open";
  /** When a probe may go at the latest, on the package's clock (ms). */
  readonly retryAt: number;
  readonly retryInMs: number;
}

/** Brand check (also through `.cause`, e.g. a `RetryFailed` that gave up on an open breaker). */
export function isCircuitOpen(e: unknown): boolean;

/** The right to make one call: say how it ended, once (later calls are ignored). */
export class CircuitPermit {
  readonly key: string;
  /** The call goes as a half-open probe. */
  readonly probe: boolean;
  /** It answered (slow when it took longer than the `slowMs` it was acquired with). */
  success(): void;
  /**
   * It failed. With `error`: a timeout counts as a slow failure; `Overloaded` (a limiter shed it),
   * `CircuitOpen` (an inner breaker) or an `AbortError` (the caller left) counts nothing and frees a
   * probe's permit; of any other error, the breaker's `isFailure` decides whether it counts.
   */
  failure(error?: unknown): void;
  /** It was cut at its timeout: a failure, and slow. */
  timeout(): void;
  /** The caller gave up (a client that left): nothing counts; a probe's permit is freed. */
  cancel(): void;
}

/** One key of a breaker (`breaker.for(key)`), for `retry(fn, { circuit })` and `p.run(name, fn, { circuit })`. */
export class Circuit {
  readonly breaker: CircuitBreaker;
  readonly key: string;
  acquire(options?: { slowMs?: number }): CircuitPermit;
  state(): CircuitState;
  stats(): CircuitStats;
}

/** A keyed circuit breaker. Holds Wasm memory until `dispose()`. No timers. */
export class CircuitBreaker implements Disposable {
  /** @throws {TypeError} | {RangeError} naming the option */
  constructor(options?: CircuitBreakerOptions);
  /**
   * A permit for one call on `key`; `slowMs`: the call's timeout (an answer later than it is slow).
   * @throws {CircuitOpen} when the breaker refuses it
   */
  acquire(key: string, options?: { slowMs?: number }): CircuitPermit;
  /** One key of this breaker, to pass as `circuit` to `retry` or a plan step. */
  for(key: string): Circuit;
  /**
   * Runs `fn` through the breaker; rejects with `CircuitOpen` without calling it when refused. A
   * rejection counts as `permit.failure(error)` says; `signal` (the caller's): a rejection after it
   * aborted for a reason that is not a timeout is the caller leaving, and counts nothing.
   */
  run<T>(key: string, fn: () => T | PromiseLike<T>, options?: { slowMs?: number; signal?: AbortSignal }): Promise<T>;
  state(key: string): CircuitState;
  stats(key: string): CircuitStats;
  /** The keys held. */
  keys(): string[];
  /** The keys' states as bytes, for `importState` elsewhere. */
  exportState(): Uint8Array;
  /** Opens the keys open in `bytes`. @throws {RangeError} `.param` "bytes" when they are not an exported state */
  importState(bytes: Uint8Array): void;
  dispose(): void;
  [Symbol.dispose](): void;
}
