// Types for js/stall.js and js/sse.js: stall detection on streams and fetch.
import type { DeadlineHeader } from "./headers.js";
import type { Deadline } from "./index.js";
import type { OtelOption } from "./otel.js";
import type { ResumeOptions } from "./resume.js";

/** Which limit expired: headers (fetchWithDeadline only), first progress chunk, or a gap between progress chunks. */
export type StallPhase = "first-byte" | "first-chunk" | "stall";

/** The stream went quiet for longer than the limit of its phase; the upstream was aborted with this error. */
export class StreamStalled extends Error {
  constructor(phase: StallPhase, afterMs: number, chunks: number, bytes: number, options?: ErrorOptions);
  readonly name: "StreamStalled";
  readonly phase: StallPhase;
  /** The silence observed when the stall was declared, in ms (≥ the limit; includes timer lateness). */
  readonly afterMs: number;
  /** Chunks received before the stall (progress or not). */
  readonly chunks: number;
  /** Bytes received before the stall: `byteLength` of byte chunks, `length` of string chunks. */
  readonly bytes: number;
  /** On the body of `relay` or `fetchWithDeadline` with `retry`: how many bytes reached the reader (every attempt's). */
  readonly deliveredBytes?: number;
}

/** Brand check that works across two copies of the package and on workerd's clones of abort reasons. */
export function isStreamStalled(e: unknown): e is StreamStalled;

export interface StallOptions<T> extends OtelOption {
  /** Limit before the first progress chunk, ms (it legitimately holds queueing and prefill); 0: no time left, the stream stalls at once. */
  firstChunkMs: number;
  /** Limit on the gap between progress chunks after the first, ms (greater than 0). */
  stallMs: number;
  /**
   * Bounds the whole stream: at its instant the stream errors with `DeadlineExceeded`.
   * When a parent signal aborts it (a client that left), the stream errors with that reason.
   */
  deadline?: Deadline;
  /**
   * The upstream request's controller: aborted with the stall/deadline error, a parent's reason,
   * a consumer's cancel reason, a source error or an `isProgress` error. Aborting it yourself
   * errors the stream with your reason.
   */
  controller?: AbortController;
  /**
   * Which chunks count as progress. @default `sseProgress` when `contentType` is
   * `text/event-stream` (keep-alive comments are silence), every non-empty chunk otherwise.
   * If it throws, the stream errors with that error and the upstream is aborted.
   */
  isProgress?: (chunk: T) => boolean;
  /**
   * The body's `content-type` (e.g. `res.headers.get("content-type")`): on `text/event-stream`
   * only events are progress unless `isProgress` is given.
   */
  contentType?: string | null;
}

/**
 * A stream carrying the same chunks as `stream`, which errors with `StreamStalled`
 * (phase "first-chunk" or "stall") when the source goes quiet and with `DeadlineExceeded`
 * at the deadline, aborting `controller` either way. Only time spent waiting on the
 * source counts: a consumer that reads slowly is not a stall, and an unread stream keeps
 * no timer alive in Node or Deno.
 * @throws {TypeError} a non-stream or locked source, non-number limits, a bad `deadline`, `controller` or `isProgress`
 * @throws {RangeError} limits that are NaN, ±Infinity, negative or past 2^53 − 1, and `stallMs` 0
 */
export function withStallTimeout<T>(stream: ReadableStream<T>, options: StallOptions<T>): ReadableStream<T>;

export interface FetchDeadlineOptions extends OtelOption, ResumeOptions {
  /** Bounds the request, the headers and the whole body. */
  deadline: Deadline;
  /** Limit on the wait for response headers, ms; rejects with `StreamStalled` phase "first-byte" (at once for 0). */
  firstByteMs?: number;
  /**
   * Limit from the headers to the first progress chunk of the body, ms (0: the body stalls at once).
   * @default half of what is left of the deadline when the headers arrive, never below 5 s
   */
  firstChunkMs?: number;
  /** Limit on the gap between progress chunks of the body, ms (greater than 0). @default no limit */
  stallMs?: number;
  /**
   * Which body chunks count as progress.
   * @default `sseProgress` on a `text/event-stream` response (keep-alive comments are silence), every non-empty chunk otherwise
   */
  isProgress?: (chunk: Uint8Array) => boolean;
  /**
   * Tell the upstream what is left of the deadline, read as the request leaves: the package's own
   * `edge-deadline-remaining-ms` (`true`, the default), the named formats of `deadlineHeaders`, or
   * nothing (`false`). A header the caller set in the request is kept. Not given, in a browser the
   * header goes only to the page's own origin: on a cross-origin request it would cause a CORS
   * preflight (pass `true` or names to send it there, when the server answers preflights).
   * @default true (in browsers: same origin only)
   */
  propagate?: boolean | DeadlineHeader | readonly DeadlineHeader[];
}


/**
 * The progress predicate for Server-Sent Events bodies (bytes or text): chunks holding only
 * comment (`:`) lines, blank lines or `retry:` lines (an event that only sets the reconnection
 * time) are not progress. As `isProgress` each stream gets its
 * own line state, so an event split across chunks still counts; called directly it judges
 * one chunk as if it started a line.
 * @throws {TypeError} for chunks that are neither bytes nor text
 */
export function sseProgress(chunk: Uint8Array | ArrayBuffer | ArrayBufferView | string): boolean;

/** A fresh `sseProgress` with its own line state, for one stream read by your own code. */
export function createSseProgress(): (chunk: Uint8Array | ArrayBuffer | ArrayBufferView | string) => boolean;
