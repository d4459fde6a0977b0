// Types for js/retry.js. All durations and instants are milliseconds;
// instants are on the `performance.now()` timeline. The policy, a failure,
// an attempt's record and the stop words are generated from the Rust core
// (src/core/retry.rs) into edge_deadline.d.ts, defaults included in their docs.
import type {
  AttemptRecord as CoreAttemptRecord,
  BackoffOptions,
  Failure,
  RetryOptions as RetryPolicyOptions,
  StopCode,
} from "./edge_deadline.js";
import type { RetryBudget } from "./retry_budget.js";
import type { Deadline } from "./index.js";
import type { OtelOption } from "./otel.js";

export type { BackoffOptions, Failure };

export interface AttemptInfo {
  /** 1-based. */
  attempt: number;
  /** `min(attemptTimeoutMs, remaining)` when the attempt started. */
  timeoutMs: number;
  operationKey: string | undefined;
}

/**
 * `retry`'s options: the core's policy (`attemptMinMs`, `attemptTimeoutMs`, `backoff` with `jitter` as a
 * fraction or `"full"` / `"equal"` / `"decorrelated"`, `maxAttempts`, `idempotent`, `maxRetryAfterMs`)
 * and what the host owns.
 */
export interface RetryOptions extends RetryPolicyOptions, OtelOption {
  deadline: Deadline;
  /** …unless this key lets the server de-duplicate (it is passed to `fn`). */
  operationKey?: string;
  budget?: RetryBudget;
  /** Aborts the attempt in flight and the backoff sleep. */
  signal?: AbortSignal;
  /**
   * How an error failed (default: its `failure` property if valid; else, for a thrown Response or an
   * error whose `response` has an HTTP status, 429/503 "not-applied", 408/other 5xx "ambiguous", any
   * other "permanent"; else "ambiguous"). Timeouts are "ambiguous".
   * Must return one of the three words synchronously; anything else rejects `retry` with a `TypeError`.
   */
  classify?: (error: unknown) => Failure;
  /** Seeds the jitter (default: random) so a schedule can be replayed. */
  seed?: number | bigint;
  /** Called with each attempt's record once it ended (before the backoff); what it throws goes to `console.error`. */
  onAttempt?: (record: AttemptRecord) => void;
  /**
   * A circuit breaker's key (`breaker.for(key)`, edge-deadline/derive): no attempt goes into it while it refuses.
   * The retry waits for it when the deadline leaves `attemptMinMs` after that, else stops with reason "circuit-open".
   */
  circuit?: RetryCircuit;
  /** A `TimeoutBook` (edge-deadline/derive) every attempt records into (latency, timeout or error); needs `bucket`. */
  record?: import("./plan.js").BookLike;
  /** The book's bucket (required with `record`). */
  bucket?: string;
}

/** What `retry` needs of a circuit: `CircuitBreaker.for(key)` from edge-deadline/derive. */
export interface RetryCircuit {
  acquire(): { success(): void; failure(error?: unknown): void; timeout(): void; cancel(): void };
}

/** One attempt: the core's record (`attempt`, `startedAtMs`, `timeoutMs`, `elapsedMs`, `failure`) and how it ended here. */
export interface AttemptRecord extends CoreAttemptRecord {
  /** "timeout": the attempt's own timer; "deadline"/"aborted": the deadline or a parent signal; "running": still in flight (hedge). */
  outcome: "ok" | "error" | "timeout" | "deadline" | "aborted" | "running";
  error?: unknown;
}

/** The core's stop words, and "deadline"/"aborted" when a signal ended the loop. */
export type RetryStopReason = StopCode | "deadline" | "aborted" | "not-resumable";

/** No further attempt will be made; carries every attempt's outcome. */
export class RetryFailed extends Error {
  private constructor();
  readonly name: "RetryFailed";
  readonly reason: RetryStopReason;
  readonly attempts: AttemptRecord[];
  /** The last attempt's error (or the signal's reason). */
  readonly cause: unknown;
  /**
   * With reason "retry-after": the wait the failed attempt's response asked for (`Retry-After`,
   * `RateLimit-Reset`, `X-RateLimit-Reset`, read from the error's `response`), in ms.
   */
  readonly retryAfterMs?: number;
  /** With reason "retry-after": what was left of the deadline when the wait was refused, in ms. */
  readonly remainingMs?: number;
  /**
   * On the body of `relay` or `fetchWithDeadline` with `retry`: how many bytes reached the reader before the read
   * ended.
   */
  readonly deliveredBytes?: number;
}

/**
 * An attempt's own timeout fired (the attempt signal's abort reason): the per-attempt counterpart of a
 * plan step's `StepTimeout`. Recorded as outcome "timeout"; `retry` and `hedge` themselves reject only
 * with `RetryFailed`.
 */
export class AttemptTimeout extends Error {
  private constructor();
  readonly name: "AttemptTimeout";
  readonly attempt: number;
  readonly timeoutMs: number;
}

/** Brand check that works across two copies of the package. */
export function isRetryFailed(e: unknown): e is RetryFailed;

/**
 * Calls `fn` until it resolves or the core says stop (see RetryOptions). A parent signal that aborts
 * stops new attempts and aborts the one in flight with its reason. Awaiting it keeps a Node or Deno
 * process alive until it settles.
 * @throws {TypeError} | {RangeError} bad options (synchronously inside the returned promise)
 * @throws {RetryFailed} (as a rejection) when it stops
 */
export function retry<T>(fn: (signal: AbortSignal, info: AttemptInfo) => T | PromiseLike<T>, options: RetryOptions): Promise<Awaited<T>>;

/** The first `retries` backoff delays for `seed` (the same on every runtime). */
export function backoffSchedule(backoff: BackoffOptions, retries: number, seed?: number | bigint): number[];
