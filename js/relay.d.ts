// Types of js/relay.js.
import type { OtelOption } from "./otel.js";
import type { ResumeOptions, UpstreamInfo } from "./resume.js";

/** Options of {@link relay}. With `retry` or `resume`, `deadline` is required and `controller` is not taken. */
export interface RelayOptions extends ResumeOptions, OtelOption {
  /** The request's deadline: bounds the wait and the body; disposed when the relay is over. */
  deadline?: import("./index.js").Deadline;
  /** Also aborts the upstream request (e.g. the incoming request's signal: the client left). */
  signal?: AbortSignal;
  /** The upstream request's controller, when you made the request with its signal; default: the relay's own. */
  controller?: AbortController;
  /**
   * Longest wait for the first progress chunk (ms), counted from the call: the wait for the
   * upstream's headers counts against it unless `firstByteMs` is given. Default, with a `deadline`: half of
   * what is left of it when the wait starts (per attempt with `retry`), never below 5 s; without one, none.
   */
  firstChunkMs?: number;
  /** Longest wait for the upstream's headers (ms), phase "first-byte"; then `firstChunkMs` counts from the headers. */
  firstByteMs?: number;
  /** Longest silence between chunks that count as progress (ms); default none. */
  stallMs?: number;
  /** Which chunks are progress; default `sseProgress` for `text/event-stream`, every non-empty chunk otherwise. */
  isProgress?: (chunk: any) => boolean;
  /** Headers for the relayed response, over `content-type` (the upstream's) and `cache-control: no-store`. */
  headers?: HeadersInit;
  /**
   * The response when the relay fails before the first progress chunk; default JSON `{ fallback, code, reason, elapsedMs }`
   * (our own words and a code such as `STREAM_STALLED` or `UPSTREAM_FAILED`, never the upstream's error), 504 for a stall
   * or the deadline, 502 otherwise.
   */
  fallback?: (reason: unknown, elapsedMs: number) => Response;
  /** Gets the error that ended the relay (before the first chunk or mid-stream), as it is: the client is told only a code. */
  onError?: (error: unknown) => void;
  /**
   * A `TimeoutBook` (edge-deadline/derive) the relay records into: the time to the first progress chunk
   * (what `firstChunkMs` bounds), a timeout for a stall or the deadline, an error for a failed upstream; needs `bucket`.
   */
  record?: import("./plan.js").BookLike;
  /** The book's bucket (required with `record`). */
  bucket?: string;
  /**
   * Trace this relay's upstream with this `@opentelemetry/api` module (a `deadline.stream` span from the call, one per
   * attempt with `retry`), or not at all with `null`.
   * @default the module given to `traceWith`, or none
   */
  otel?: import("./otel.js").OpenTelemetryApi | null;
}

/**
 * Relays a streaming upstream: resolves after its first progress chunk (an SSE event, not a keep-alive
 * comment) with a Response carrying the rest,
 * guarded by the stall wrapper; before that, a failure resolves to the fallback. Mid-stream, a stall
 * or the deadline ends a `text/event-stream` with `event: error` (data `{ fallback, code, reason }`) and
 * errors other bodies. Releases everything (timer, upstream request, deadline) when the body ends or
 * the client cancels. Pass `(signal) => fetch(url, { signal })` to let the relay own the request.
 * With `retry`, a failure before the first event is retried invisibly and a stream that fails after it
 * resumes (`Last-Event-ID`, sent in `info.headers`, or the `resume` hook) where it can.
 * @throws {TypeError} bad `upstream` or options (as a rejection)
 * @example
 * return relay((signal) => fetch(url, { headers: toHeaders(deadline), signal }), { deadline, firstChunkMs: 4_000, stallMs: 2_000 });
 */
export function relay(
  upstream: Response | Promise<Response> | ((signal: AbortSignal, info: UpstreamInfo) => Response | Promise<Response>),
  options?: RelayOptions,
): Promise<Response>;
