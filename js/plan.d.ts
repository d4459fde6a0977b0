// Types for js/plan.js. All durations and instants are milliseconds;
// instants are on the `performance.now()` timeline. The data types (a step,
// its kind, a trace record and its outcome) are generated from the Rust core
// (src/core/plan.rs) into edge_deadline.d.ts.
import type { Outcome, StepKind, StepSpec, TraceRecord } from "./edge_deadline.js";
import type { Deadline } from "./index.js";
import type { RetryCircuit } from "./retry.js";
import type { OtelOption } from "./otel.js";

export type { StepKind, StepSpec, TraceRecord };

/**
 * "timeout": cut at its own cap (`StepTimeout`); "deadline": the deadline itself passed; "aborted": a parent signal;
 * "stalled": it failed with `StreamStalled` (a stream it read went silent past its limit).
 */
export type StepOutcome = Outcome;

export interface PlanOptions extends OtelOption {
  /**
   * Called with each record as it happens (before that step's `run` settles). What it throws never changes
   * the step's result: it goes to `onStepError`, or to `console.error` without one.
   */
  onStep?: (record: TraceRecord) => void;
  /** Receives what `onStep` threw, with the record it was given. */
  onStepError?: (error: unknown, record: TraceRecord) => void;
  /** Held once in front of each mandatory or fallback step for timer lateness and hand-off (default 5, measured; at most 1000). */
  marginMs?: number;
}

/** One Server-Sent Event for `stream`: a string is its data; `data` other than a string is sent as JSON. */
export type StreamEvent = string | { data: unknown; event?: string; id?: string; retry?: number };

/** What a streamed step gives: a Response, a ReadableStream of bytes or text, or events. */
export type StreamSource =
  | Response
  | ReadableStream<Uint8Array | string>
  | AsyncIterable<StreamEvent>
  | Iterable<StreamEvent>;

export interface StreamStepOptions {
  /** Most ms from the step's start to the Response from `run` (default: counted in `firstChunkMs`). */
  firstByteMs?: number;
  /** Most ms to the first progress chunk (from the step's start unless `firstByteMs` is set); default: the step's cap bounds it (no default wait, unlike `relay`: the cap already keeps the fallback's reserve). */
  firstChunkMs?: number;
  /** Most ms between progress chunks. */
  stallMs?: number;
  /** Which chunks are progress (default: on an event stream, events; keep-alive comments are not). */
  isProgress?: (chunk: any) => boolean;
  /** Headers added to the streamed response. */
  headers?: HeadersInit;
  /** End an event stream with `event: trace` carrying `trace()` (a fallback answer gets `Server-Timing`). */
  trace?: boolean;
  /** The answer when nothing was sent, run as the plan's fallback step. */
  fallback?: (reason: unknown, signal: AbortSignal, budgetMs: number) => Response | PromiseLike<Response>;
  /** Gets the error that ended the step (before content or mid-stream), as it is: the client is told only a code. */
  onError?: (error: unknown) => void;
}

/** What `run` resolves to for an optional step that did not start. */
export interface Skipped {
  skipped: true;
  /** Why, in words (e.g. "only 95 ms are available after the reserve for later steps but this step needs at least 1000 ms"). */
  reason: string;
}

/**
 * Plans `steps` inside `deadline`: each step's cap is `min(preferredMs, remaining − Σ (reserve + margin)
 * over later mandatory and fallback steps)`. A plan is created whatever the time left (an expired deadline
 * included): a shortage shows when steps run (skipped, `InsufficientBudget`; a fallback always runs, with
 * an aborted signal and a budget of 0 when nothing is left).
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
   *   not a function or `options.circuit` is not a circuit or guards the fallback, `CircuitOpen` (with `step`)
   *   for a mandatory step the circuit refused (an optional one is skipped)
   */
  run<N extends StepName<S>, T>(
    name: N,
    fn: (signal: AbortSignal, budgetMs: number) => T | PromiseLike<T>,
    options?: {
      circuit?: RetryCircuit;
      /** A `TimeoutBook` (edge-deadline/derive) the step records into: its latency when it succeeds, a timeout when cut by time, an error when it fails. */
      record?: BookLike;
      /** The book's bucket. Default: the step's name. */
      bucket?: string;
    },
  ): Promise<StepResult<S, N, Awaited<T>>>;
  /**
   * Runs the step `name` as the response to the client. `run(signal, budgetMs)` gets the step's signal and
   * cap (`min(preferredMs, remaining − the later steps' reserves)`, as `run`) and gives what to stream: a
   * `Response` (its body relayed, its status and content-type kept), a `ReadableStream` of bytes or text
   * (sent as they are, as `text/event-stream`), or an iterable or async iterable of events (each framed as
   * one Server-Sent Event). Headers go out with the first progress chunk (on an event stream, the first
   * event); the body is guarded by the step's cap and `firstByteMs`/`firstChunkMs`/`stallMs`, as `relay`.
   *
   * If the step fails before any content was sent (it throws, answers non-ok, stalls, reaches its cap, the
   * client left, or the plan has too little time to start it), the plan's fallback answers instead: the
   * first fallback step declared after `name` runs `options.fallback(reason, signal, budgetMs)` (default: a
   * 504 for time, 502 for a failure, with `{ fallback: true, step, code, reason, elapsedMs }`: our own words
   * and a code, never the step's error, which goes to `options.onError`). After content, an event stream
   * ends with `event: error` (`data: { step, outcome, code, reason }`); another body errors.
   * With `trace: true`, an event stream ends with `event: trace` whose data is `trace()`, which then holds
   * the streamed step's record (with `firstChunkMs`); a fallback answer carries `Server-Timing` instead.
   * The step is recorded once, when its body ends. The response is the request's last work: when its body
   * ends (or is cancelled), or once the fallback answered, the plan's deadline is disposed, as `relay` does
   * with its `deadline`. Awaiting it keeps a Node or Deno process alive.
   * @throws (as a rejection) `RangeError` for an unknown name or a limit out of range, `TypeError` when
   *   `run` is not a function, gives something that is not a stream, or an option has the wrong type;
   *   `options.fallback`'s own error. A shortage never rejects: it is the fallback's to answer.
   */
  stream<N extends StepName<S>>(
    name: N,
    run: (signal: AbortSignal, budgetMs: number) => StreamSource | PromiseLike<StreamSource>,
    options?: StreamStepOptions,
  ): Promise<Response>;
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
  /**
   * Ends the plan's span (with tracing on: `otel` or `traceWith`); it also ends by itself once every
   * step has run. Safe to call more than once, and with tracing off.
   */
  end(): void;
}

/** What `record` takes: a `TimeoutBook` of edge-deadline/derive (anything with its `record`). */
export interface BookLike {
  record(bucket: string, ms: number, outcome?: "ok" | "timeout" | "error"): void;
}
