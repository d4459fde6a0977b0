// Types of js/resume.js: the `retry` and `resume` options of `relay` and `fetchWithDeadline`.
import type { Failure, RetryOptions as RetryPolicyOptions } from "./edge_deadline.js";
import type { RetryBudget } from "./retry_budget.js";

/**
 * A stream's retries: the core's policy (`attemptMinMs`, `backoff`, `maxAttempts`, `idempotent`,
 * `maxRetryAfterMs`) without `attemptTimeoutMs` (a stream's attempts are bounded by its
 * first-byte, first-chunk and stall limits and the deadline). `idempotent` defaults to `true` here:
 * a read that delivered nothing can be made again.
 */
export interface StreamRetryOptions extends Omit<RetryPolicyOptions, "attemptTimeoutMs"> {
  attemptTimeoutMs?: never;
  budget?: RetryBudget;
  /**
   * How a failure before content failed. Default: a non-ok answer (an error with `.response` and `.status`)
   * 429 or 503 "not-applied", 408 or another 5xx "ambiguous", another 4xx "permanent" (handed back as it is);
   * any other error "ambiguous". Stalls are "ambiguous".
   */
  classify?: (error: unknown) => Failure;
  /** Seeds the backoff's jitter. */
  seed?: number | bigint;
}

/** What the reader got before a failure, handed to `resume`. */
export interface Delivered {
  /** The chunks that reached the reader, in order (an event stream's cut on event boundaries; an event longer than the default event cap, with raised caps, in the pieces it was read in). */
  chunks: Uint8Array[];
  /** How many bytes they hold. */
  bytes: number;
  /** The last event id the reader got (an event stream's `id:`), if any. */
  lastEventId: string | undefined;
  /** The number of the attempt the continuation will be (from 1). */
  attempt: number;
  /** The attempt's signal: pass it to `fetch`. */
  signal: AbortSignal;
  /**
   * What is left of the deadline as the hook is called, in the propagation headers (`edge-deadline-remaining-ms`,
   * or the formats `fetchWithDeadline`'s `propagate` names): send them with the continuation.
   */
  headers: Record<string, string>;
}

/**
 * Gives the continuation of a stream after content reached the reader: a Response (or a promise of one) whose body
 * is appended to the stream, or `undefined`/`null` to end the stream with the failure.
 */
export type ResumeHook = (delivered: Delivered) => Response | Promise<Response> | null | undefined;

/** What a relay's upstream function is told about the attempt. */
export interface UpstreamInfo {
  /** From 1. */
  attempt: number;
  /** Set when the attempt resumes an event stream: send it as `Last-Event-ID` (`headers` has it). */
  lastEventId: string | undefined;
  /**
   * Headers to send with the attempt: `last-event-id` when resuming by id (the id's UTF-8 bytes, one character
   * per byte, as EventSource sends it: pass it to `fetch` as it is), else none.
   */
  headers: Record<string, string>;
}

/** The options `relay` and `fetchWithDeadline` share for streams that recover. */
export interface ResumeOptions {
  /**
   * Retry a failure before content reached the reader (invisibly), inside the deadline and the retry budget;
   * after content, resume an event stream with `Last-Event-ID`, or through `resume`. `true`: the defaults.
   */
  retry?: boolean | StreamRetryOptions;
  /** The continuation after content, when the stream cannot resume by event id. Implies `retry: true`. */
  resume?: ResumeHook;
  /**
   * With `retry` or `resume` on an event stream (whose events are held whole until their blank line): the longest
   * event, in bytes, counting its line ends (default 16 MiB, at most 2^30). A longer one ends the stream at once with
   * `StreamTooLarge` (`.code` "EVENT_TOO_LARGE"), never retried.
   */
  maxEventBytes?: number;
  /**
   * With `retry` or `resume` on an event stream: the longest line, in bytes, its end not counted (default 8 MiB, at
   * most 2^30). A longer one ends the stream at once with `StreamTooLarge` (`.code` "LINE_TOO_LONG").
   */
  maxLineBytes?: number;
}
