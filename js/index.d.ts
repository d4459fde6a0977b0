// Types for edge-deadline (hand-written; every entry point shares them).
// All durations and instants are milliseconds; instants are on the
// `performance.now()` timeline of the current runtime.
//
// Data types that cross into the WebAssembly core are declared once, in Rust,
// and their TypeScript is generated into edge_deadline.d.ts; the modules below
// import them from there.
import type {} from "./edge_deadline.js";

// `Disposable` and `Symbol.dispose` (TypeScript's lib "esnext.disposable"), declared here too so the
// types load in a project with `lib: ["es2022", "dom"]` and no `@types/node` (a browser or a Worker).
// Identical declarations merge with TypeScript's lib and with @types/node.
declare global {
  interface SymbolConstructor {
    readonly dispose: unique symbol;
  }
  interface Disposable {
    [Symbol.dispose](): void;
  }
}

/**
 * Loads the WebAssembly core. Optional in Workers, Deno and Node: there the
 * first API call loads the `.wasm` that ships with the package, synchronously.
 * Browsers and bundled pages call it once before anything else (every other
 * API throws until it has resolved). Safe to call more than once; concurrent
 * calls share one instantiation.
 *
 * - Browsers: `await init()` fetches the `.wasm` next to the module (or pass its URL, a Response or bytes).
 * - Workers: the `workerd` entry imports the `.wasm` as a module; `init(wasm)` takes another one.
 * - Node: the `node` entry reads the file next to the module; Deno: the `deno` entry imports it (no `--allow-read`).
 *
 * @throws {TypeError} when `source` is none of the accepted kinds
 */
export function init(source?: WebAssembly.Module | BufferSource | Response | Promise<Response> | URL | string): Promise<void>;

export interface DeadlineOptions {
  /** A parent signal: when it aborts, this deadline's signal aborts with the parent's reason. */
  signal?: AbortSignal;
}

/** One absolute instant, set once at the edge and passed down. */
export class Deadline implements Disposable {
  private constructor();
  /**
   * A deadline `ms` from now. `options` may be the parent signal itself: `Deadline.in(8_000, request.signal)`.
   * @throws {TypeError} `ms` is not a number; {RangeError} NaN, ±Infinity, negative, or past 2^53 − 1
   */
  static in(ms: number, options?: DeadlineOptions | AbortSignal): Deadline;
  /**
   * A deadline at an absolute instant on the `performance.now()` timeline.
   * @throws {TypeError} | {RangeError} like `Deadline.in`
   */
  static at(instantMs: number, options?: DeadlineOptions | AbortSignal): Deadline;
  /**
   * The deadline a request's propagation headers ask for (`grpc-timeout`, `connect-timeout-ms`,
   * `x-envoy-expected-rq-timeout-ms`, `edge-deadline-remaining-ms`), less `transitMs`, never later
   * than `maxMs` from now: a caller can shorten our deadline, never extend it. A malformed header is
   * ignored (the other headers or `maxMs` apply) unless `invalid: "throw"`.
   * @throws {TypeError} | {RangeError} bad options; {InvalidHeader} a malformed header with `invalid: "throw"`
   */
  static fromHeaders(headers: import("./headers.js").HeadersLike, options: import("./headers.js").FromHeadersOptions): Deadline;
  /**
   * `now + min(every cap in front: the platform's wall-clock caps, productMs) − fallbackReserveMs`.
   * CPU caps are not deadlines (see `platformDeadline`'s `cpuMs`). A reserve at or above the smallest cap
   * gives an expired deadline: work is refused at run time and the fallback answers.
   * @throws {TypeError} | {RangeError} unknown platform/plan/trigger, a cap of 0, NaN or negative figures
   */
  static forPlatform(options: import("./caps.js").ForPlatformOptions): Deadline;
  /**
   * The deadline of one AWS Lambda invocation: `now + min(context.getRemainingTimeInMillis(), productMs) −
   * fallbackReserveMs`; `limit` is "platform" when the invocation's time bound it. Spent or below the
   * reserve: an expired deadline, not an error.
   * @throws {TypeError} a context without getRemainingTimeInMillis, non-number options
   * @throws {RangeError} NaN or negative options, a remaining time that is NaN
   */
  static forLambda(context: import("./caps.js").LambdaContext, options: import("./caps.js").ForLambdaOptions): Deadline;
  /**
   * The deadline of an incoming request: the earliest of `budgetMs`, the platform's wall-clock caps, the
   * caller's propagation headers (clamped: a caller shortens, never extends) and the client
   * (`request.signal`, where the runtime gives requests one: its signal aborts with the client's reason),
   * less `fallbackReserveMs`. `limit` says which limit set it. A malformed header is ignored; a client
   * already gone gives an expired deadline, not an error.
   * @throws {TypeError} | {RangeError} bad options (no bound at all, unknown platform, NaN, negatives)
   */
  static forRequest(
    request: Request | { headers: import("./headers.js").HeadersLike; signal?: AbortSignal },
    ctx: import("./request.js").RequestContext,
    options: import("./request.js").ForRequestOptions,
  ): Deadline;
  /**
   * A deadline sent by `toWire()`, capped like an incoming header: never later than `maxMs` from now,
   * less `transitMs`. A spent one (or one whose client left) is expired, not an error.
   * @throws {TypeError} `wire` is not `{ remainingMs, reserveMs, limit }`; {RangeError} NaN or negative figures
   */
  static fromWire(wire: import("./request.js").Wire, options: import("./request.js").FromWireOptions): Deadline;
  /** What set the instant; "client" once a signal it follows has aborted (the client left). */
  readonly limit: import("./request.js").LimitKind;
  /** The deadline as plain data for another Worker (`Deadline.fromWire`): remaining ms (rounded down), the reserve, the limit. */
  toWire(): import("./request.js").Wire;
  /** The earliest of the deadlines; its signal links every parent of every argument. */
  static min(...deadlines: [Deadline, ...Deadline[]]): Deadline;
  /** The earlier of this and `other`. */
  min(other: Deadline): Deadline;
  /** The instant (ms on the `performance.now()` timeline). */
  readonly at: number;
  /** Milliseconds left, never negative. */
  remaining(): number;
  /** `true` once the instant has passed. */
  expired(): boolean;
  /**
   * Returns when time is left; throws once the instant has passed. For CPU-bound loops, where no
   * timer can fire and the signal cannot abort: call it every so many iterations. A clock read and
   * a comparison; a parent signal's abort does not count (as for `expired()`).
   * @throws {DeadlineExceeded} once the instant has passed (the reason the signal aborts with)
   * @example
   * const d = Deadline.in(50);
   * let sum = 0;
   * for (let i = 0; i < 1e9; i++) {
   *   if ((i & 0xffff) === 0) d.checkpoint();
   *   sum += i;
   * }
   */
  checkpoint(): void;
  /** A deadline `ms` earlier (same parents): time held back for work after this step. */
  reserve(ms: number): Deadline;
  /**
   * `min(preferredMs, remaining())`.
   * @throws {DeadlineExceeded} when nothing is left; a parent signal's reason once it has aborted
   */
  budget(preferredMs: number): number;
  /**
   * Calls `run(signal, budgetMs)` only if at least `minMs` is left and no parent signal has aborted.
   * Awaiting it keeps a Node or Deno process alive until it settles.
   * @throws {InsufficientBudget} (as a rejection) without calling `run`; a parent signal's reason (as a
   *   rejection) once it has aborted, without calling `run`
   */
  step<T>(minMs: number, run: (signal: AbortSignal, budgetMs: number) => T | PromiseLike<T>): Promise<T>;
  /**
   * The deadline's AbortSignal (the same one on every call; one timer behind it).
   * Aborts at the instant with `DeadlineExceeded`, or with a parent's reason.
   * @throws {Error} when the deadline was disposed before its first `signal()`
   */
  signal(): AbortSignal;
  /** Clears the timer and parent listeners; nothing of the deadline stays pending. */
  dispose(): void;
  [Symbol.dispose](): void;
}

/** The deadline passed. */
export class DeadlineExceeded extends Error {
  constructor(at: number, lateByMs: number, options?: ErrorOptions & { budgetMs?: number; reserveMs?: number });
  readonly name: "DeadlineExceeded";
  /** The deadline instant. */
  readonly at: number;
  /** How long after the instant it was observed (≥ 0). */
  readonly lateByMs: number;
  /**
   * Set when a deadline made by `reserve(reserveMs)` had passed before any work asked for its signal:
   * only `budgetMs` was left of its parent, below the reserve (e.g. a caller's budget below the fallback's).
   */
  readonly reserveMs?: number;
  /** What was left of the parent when the reserved deadline's signal was first asked for (see `reserveMs`). */
  readonly budgetMs?: number;
  /**
   * What set the deadline, when it was not the plain budget: "platform", "caller", "client", or
   * "background" for work after the response (`afterResponse`), cut before the platform's cap.
   */
  readonly limit?: import("./request.js").LimitKind;
}

/** A step needed more time than was left, so it was not started. */
export class InsufficientBudget extends Error {
  constructor(remainingMs: number, minMs: number, options?: ErrorOptions);
  readonly name: "InsufficientBudget";
  readonly remainingMs: number;
  readonly minMs: number;
  /** The step's name, when a plan's step was refused. */
  readonly step?: string;
}

/**
 * A plan step was cut at its own cap while the deadline still had time: run the fallback, not a 504.
 * `DeadlineExceeded` means the deadline itself.
 */
export class StepTimeout extends Error {
  constructor(step: string, capMs: number, options?: ErrorOptions);
  readonly name: "StepTimeout";
  /** The step's name. */
  readonly step: string;
  /** The cap it was given. */
  readonly capMs: number;
}

/** An incoming deadline header is malformed (its value is the caller's, not this server's mistake). */
export class InvalidHeader extends Error {
  constructor(header: string, message: string, options?: ErrorOptions);
  readonly name: "InvalidHeader";
  /** The header's name, lowercase. */
  readonly header: string;
}

/** Brand check that works across two copies of the package. */
export function isDeadlineExceeded(e: unknown): e is DeadlineExceeded;
/** Brand check that works across two copies of the package. */
export function isStepTimeout(e: unknown): e is StepTimeout;
/** Brand check that works across two copies of the package. */
export function isInvalidHeader(e: unknown): e is InvalidHeader;
/** Brand check that works across two copies of the package. */
export function isInsufficientBudget(e: unknown): e is InsufficientBudget;
/**
 * Whether time ran out, looking through `.cause` chains (SDKs wrap the abort reason they were given):
 * `DeadlineExceeded`, `StepTimeout`, `AttemptTimeout`, `StreamStalled` or an error named "TimeoutError"
 * at any depth. Not `InsufficientBudget` (nothing started) nor an abort for another reason.
 * With `signal` (the one handed to an SDK that drops the cause, like openai's `APIUserAbortError`),
 * also true when that signal aborted with a timeout. Never throws: a property that cannot be read
 * (a throwing getter or Proxy trap, a revoked Proxy) counts as absent.
 */
export function isTimeout(error: unknown, signal?: AbortSignal): boolean;

/**
 * `max(0, deadlineMs − nowMs − reserveMs)`: what is left for generation once the response's reserve is held back.
 * `deadlineMs` and `nowMs` are readings of one monotonic clock (any finite value).
 * @throws {TypeError} non-numbers; {RangeError} non-finite values, |value| past 2^53 − 1, or a negative reserve
 */
export function generationBudget(deadlineMs: number, nowMs: number, reserveMs: number): number;

export * from "./context.js";
export * from "./relay.js";
export type { Delivered, ResumeHook, ResumeOptions, StreamRetryOptions, UpstreamInfo } from "./resume.js";
export * from "./stall.js";
export * from "./fetch.js";
export * from "./plan.js";
export * from "./retry.js";
export * from "./retry_budget.js";
export * from "./hedge.js";
export * from "./otel.js";
export * from "./headers.js";
export * from "./caps.js";
export * from "./request.js";
