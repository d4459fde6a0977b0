// Types for js/pipeline.js (plans, retries, retry budgets, hedging,
// propagation headers, platform caps). All durations and instants are
// milliseconds; instants are on the `performance.now()` timeline.
import type { Deadline, InvalidHeader } from "./index.js";

// ---- plans ------------------------------------------------------------------

export type StepKind = "mandatory" | "optional" | "fallback";

export interface StepSpec {
  /** Unique within the plan (1–128 bytes); names the step in `run` and the trace. */
  name: string;
  /** The least time in which the step can plausibly succeed (its p95, not its median). */
  minMs: number;
  /** The most the step should get; omitted: whatever is available. Not allowed on a fallback step. */
  preferredMs?: number;
  /**
   * `mandatory`: must run, its reserve is held while earlier steps run, `InsufficientBudget` below `minMs`.
   * `optional`: takes what is left, skipped below `minMs`.
   * `fallback`: its reserve is held like a mandatory step's; when it runs it gets everything left, and it
   *   runs whenever anything is left (even below `minMs`, however late the step before it ended).
   */
  kind: StepKind;
  /** What is held back for a mandatory or fallback step while earlier steps run (default `minMs`). */
  reserveMs?: number;
}

/** "timeout": cut at its own cap (`StepTimeout`); "deadline": the deadline itself passed; "aborted": a parent signal. */
export type StepOutcome = "ok" | "error" | "skipped" | "insufficient" | "deadline" | "aborted" | "timeout";

export interface TraceRecord {
  step: string;
  remainingAtStartMs: number;
  /** 0 for a step that did not start. */
  capMs: number;
  elapsedMs: number;
  outcome: StepOutcome;
}

export interface PlanOptions {
  /**
   * Called with each record as it happens (before that step's `run` settles). What it throws never changes
   * the step's result: it goes to `onStepError`, or to `console.error` without one.
   */
  onStep?: (record: TraceRecord) => void;
  /** Receives what `onStep` threw, with the record it was given. */
  onStepError?: (error: unknown, record: TraceRecord) => void;
  /** Held per step start for timer lateness and hand-off (default 5, measured; at most 1000). */
  marginMs?: number;
}

/** What `run` resolves to for an optional step that did not start. */
export interface Skipped {
  skipped: true;
  /** Why, in words (e.g. "only 95 ms are available after the reserve for later steps but this step needs at least 1000 ms"). */
  reason: string;
}

/**
 * Plans `steps` inside `deadline`: each step's cap is `min(preferredMs, remaining − reserves held for
 * later mandatory and fallback steps − one margin per later step)`. A plan is created whatever the time
 * left (an expired deadline included): a shortage shows when steps run (skipped, `InsufficientBudget`).
 * @throws {TypeError} wrong types; {RangeError} duplicate or empty names, NaN/negative durations,
 *   `minMs > preferredMs`, an unknown kind
 */
export function plan<const S extends readonly StepSpec[]>(deadline: Deadline, steps: S, options?: PlanOptions): Plan<S>;

/** The names of a plan's steps (literals when the steps are written inline or `as const`). */
export type StepName<S extends readonly StepSpec[]> = S[number]["name"];

/**
 * What `run` resolves to for the step `N`: only an optional step can be skipped, so a mandatory or
 * fallback step resolves to `fn`'s value alone (when the steps' kinds are known to the compiler).
 */
export type StepResult<S extends readonly StepSpec[], N extends string, T> =
  "optional" extends (string extends StepName<S> ? S[number] : Extract<S[number], { name: N }>)["kind"] ? T | Skipped : T;

/** Whether `p.run` skipped an optional step (`{ skipped: true, reason }`, checked by shape). */
export function isSkipped(value: unknown): value is Skipped;

export class Plan<S extends readonly StepSpec[] = readonly StepSpec[]> {
  private constructor();
  /**
   * Runs one step with its own signal and its cap as `budgetMs`. The signal aborts at the step's cap with
   * `StepTimeout` (with `DeadlineExceeded` when the cap is the deadline's instant), or with the deadline's
   * signal. Settles at the cap even if `fn` ignores the signal. Once a parent signal has aborted, no step
   * starts. Awaiting it keeps a Node or Deno process alive until it settles.
   * @returns `fn`'s value, or `{ skipped: true, reason }` for an optional step that did not start
   * @throws (as a rejection) `InsufficientBudget` (with `step`) for a mandatory step that cannot get its
   *   minimum or a step with nothing left, `StepTimeout` at the cap, `DeadlineExceeded` or a parent's reason
   *   from the deadline's signal, `fn`'s error, `RangeError` for an unknown name, `TypeError` when `fn` is
   *   not a function
   */
  run<N extends StepName<S>, T>(name: N, fn: (signal: AbortSignal, budgetMs: number) => T | PromiseLike<T>): Promise<StepResult<S, N, Awaited<T>>>;
  /** The trace so far as JSON: `TraceRecord[]`, durations rounded to 0.1 ms (`records` keeps them exact). */
  trace(): string;
  /**
   * The trace as a `Server-Timing` header value: one metric per step run so far, with its
   * duration (0.1 ms) and its outcome (and cap) as the description, e.g.
   * `retrieve;dur=41.2;desc="ok, cap 100 ms"`. Step names are made HTTP tokens.
   */
  serverTiming(): string;
  /** The trace records so far (a copy). */
  readonly records: TraceRecord[];
  readonly deadline: Deadline;
  /** Step names in declaration order. */
  readonly steps: string[];
}

// ---- retries ----------------------------------------------------------------------

export type Failure = "ambiguous" | "not-applied" | "permanent";

export interface BackoffOptions {
  /** The first retry's ceiling. */
  baseMs: number;
  /** No delay exceeds this (`≥ baseMs`). */
  maxMs: number;
  /** 0: plain exponential; 1: anywhere in [0, ceiling]; jitter only shortens a delay. */
  jitter: number;
}

export interface AttemptInfo {
  /** 1-based. */
  attempt: number;
  /** `min(attemptTimeoutMs, remaining)` when the attempt started. */
  timeoutMs: number;
  operationKey: string | undefined;
}

export interface RetryOptions {
  deadline: Deadline;
  /** No attempt starts with less than this left (checked again after every backoff). Default 0: whenever time is left. */
  attemptMinMs?: number;
  /** Each attempt's own timeout (default: the time left). Below `attemptMinMs` (or 0): no attempt, `RetryFailed` "insufficient". */
  attemptTimeoutMs?: number;
  /** Default `{ baseMs: 100, maxMs: 2000, jitter: 1 }`: full jitter under a ceiling doubling from 100 ms to 2 s. */
  backoff?: BackoffOptions;
  /** 1–100, default 3. */
  maxAttempts?: number;
  /** Whether repeating the operation is harmless (default false). A timeout of a non-idempotent one is not retried… */
  idempotent?: boolean;
  /** …unless this key lets the server de-duplicate (it is passed to `fn`). */
  operationKey?: string;
  budget?: RetryBudget;
  /** Aborts the attempt in flight and the backoff sleep. */
  signal?: AbortSignal;
  /**
   * How an error failed (default: its `failure` property if valid, else "ambiguous"). Timeouts are "ambiguous".
   * Must return one of the three words synchronously; anything else rejects `retry` with a `TypeError`.
   */
  classify?: (error: unknown) => Failure;
  /** Seeds the jitter (default: random) so a schedule can be replayed. */
  seed?: number | bigint;
  /** Called with each attempt's record once it ended (before the backoff); what it throws goes to `console.error`. */
  onAttempt?: (record: AttemptRecord) => void;
}

export interface AttemptRecord {
  attempt: number;
  startedAtMs: number;
  timeoutMs: number;
  elapsedMs: number;
  /** "timeout": the attempt's own timer; "deadline"/"aborted": the deadline or a parent signal; "running": still in flight (hedge). */
  outcome: "ok" | "error" | "timeout" | "deadline" | "aborted" | "running";
  failure?: Failure;
  error?: unknown;
}

export type RetryStopReason =
  | "permanent"
  | "not-idempotent"
  | "exhausted"
  | "insufficient"
  | "backoff-past-deadline"
  | "budget-exhausted"
  | "deadline"
  | "aborted";

/** No further attempt will be made; carries every attempt's outcome. */
export class RetryFailed extends Error {
  private constructor();
  readonly name: "RetryFailed";
  readonly reason: RetryStopReason;
  readonly attempts: AttemptRecord[];
  /** The last attempt's error (or the signal's reason). */
  readonly cause: unknown;
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

export interface RetryBudgetOptions {
  /** Retries allowed per request in the window, `[0, 1]` (default 0.2). */
  ratio?: number;
  /** Retries always allowed per second (default 10). */
  minPerSecond?: number;
  /** The sliding window (default 10 000). */
  windowMs?: number;
}

/** A retry allowance shared across calls. Holds Wasm memory until `dispose()`. */
export class RetryBudget implements Disposable {
  /** @throws {TypeError} | {RangeError} naming the option (e.g. ratio outside [0, 1]) */
  constructor(options?: RetryBudgetOptions);
  counts(): { requests: number; retries: number; floor: number };
  dispose(): void;
  [Symbol.dispose](): void;
}

/** The first `retries` backoff delays for `seed` (the same on every runtime). */
export function backoffSchedule(backoff: BackoffOptions, retries: number, seed?: number | bigint): number[];

export interface HedgeOptions {
  deadline: Deadline;
  /** Wait before each extra attempt while none has answered. */
  delayMs: number;
  /** 1–100, default 2. */
  maxAttempts?: number;
  signal?: AbortSignal;
}

/**
 * Starts `fn`, and another attempt every `delayMs` while none has answered; the first to resolve
 * wins and the others are aborted (`AbortError`). A parent signal that aborts stops new attempts and aborts
 * those in flight with its reason. Awaiting it keeps a Node or Deno process alive until it settles.
 * @throws {RetryFailed} (as a rejection) when every attempt failed ("exhausted") or the deadline/signal ended it
 */
export function hedge<T>(fn: (signal: AbortSignal, info: { attempt: number }) => T | PromiseLike<T>, options: HedgeOptions): Promise<Awaited<T>>;

// ---- propagation --------------------------------------------------------------------

export type DeadlineHeader = "grpc-timeout" | "connect-timeout-ms" | "x-envoy-expected-rq-timeout-ms" | "edge-deadline-remaining-ms";

/** Every header this package reads and writes, in the order `fromHeaders` consults them. */
export const deadlineHeaders: readonly DeadlineHeader[];

/** The remaining duration as a header value, rounded down. @throws {RangeError} */
export function encodeHeader(format: DeadlineHeader, remainingMs: number): string;
/** The duration a header value states; strict. @throws {RangeError} naming the header and the fault */
export function parseHeader(format: DeadlineHeader, value: string): number;

/** What is left of `deadline` as headers (default format `edge-deadline-remaining-ms`). */
export function toHeaders(deadline: Deadline, options?: { format?: DeadlineHeader | readonly DeadlineHeader[] }): Record<string, string>;

export type HeadersLike = Headers | Record<string, string | readonly string[] | undefined>;

export interface FromHeadersOptions {
  /** The local cap: the result is never later than now + maxMs. */
  maxMs: number;
  /** Subtracted from what the caller sent (default 0). */
  transitMs?: number;
  /** Which headers to read (default: all four). */
  formats?: DeadlineHeader | readonly DeadlineHeader[];
  /**
   * A malformed header (caller-controlled) is ignored and reported in `rejected` (default "ignore"), or
   * thrown as an `InvalidHeader` ("throw"). Never a `RangeError`: those are this server's own bad options.
   */
  invalid?: "throw" | "ignore";
  signal?: AbortSignal;
}

/**
 * The deadline the headers ask for, with the header that set it and those refused. Every copy of a header
 * counts (two spellings in a plain object, a repeated field): the earliest wins.
 * @throws {InvalidHeader} a malformed header, only with `invalid: "throw"`; {TypeError} | {RangeError} bad options
 */
export function deadlineFromHeaders(
  headers: HeadersLike,
  options: FromHeadersOptions,
): { deadline: Deadline; source: DeadlineHeader | null; rejected: { header: DeadlineHeader; error: InvalidHeader }[] };

// ---- platform caps ---------------------------------------------------------------------

export type Platform = "cloudflare-workers" | "deno-deploy" | "vercel-edge";

export interface PlatformCap {
  platform: Platform;
  /** null: every plan. */
  plan: "free" | "paid" | null;
  /** null: every trigger. */
  trigger: "fetch" | "wait-until" | "cron" | "queue" | null;
  kind: "wall" | "first-byte" | "cpu";
  /** null: the platform documents no such limit. */
  ms: number | null;
  configurableMaxMs: number | null;
  note: string;
  source: string;
  /** When the figure was read (YYYY-MM-DD). */
  retrieved: string;
}

/** The built-in caps, each with its source and date. */
export function platformCaps(): PlatformCap[];

export interface ForPlatformOptions {
  /** "custom": only `caps` apply. */
  platform: Platform | "custom";
  plan?: "free" | "paid";
  /** Default "fetch". */
  trigger?: "fetch" | "wait-until" | "cron" | "queue";
  /** The product's own limit (how long the user will wait). */
  productMs: number;
  /** Kept for a truthful terminal response before the platform kills the invocation. */
  fallbackReserveMs: number;
  /** Overrides of the built-in figures (e.g. `limits.cpu_ms` from wrangler.toml). */
  caps?: { wallMs?: number; firstByteMs?: number; cpuMs?: number };
  signal?: AbortSignal;
}

/**
 * `now + min(productMs, the platform's wall-clock caps) − fallbackReserveMs`, with what bound it. A reserve at
 * or above the smallest cap gives an expired deadline (never earlier than now), not an error.
 */
export function platformDeadline(options: ForPlatformOptions): {
  deadline: Deadline;
  bound: "product" | "wall" | "first-byte";
  /** The CPU budget: reported, never folded into the deadline. */
  cpuMs: number | null;
  sources: string[];
};
