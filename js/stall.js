// Stall detection: a ReadableStream wrapper that errors the stream *and aborts
// the upstream request* when the source goes quiet, and a fetch helper built on
// it. Which limit applies, when to wake, what a hold, a burst or a late wake
// change and whether the stream has stalled is the core's stall watcher
// (src/core/stall.rs `StallWatcher`, one per stream through src/wasm/stall.rs;
// its module doc lists the machine's invariants: held time is not silence,
// bursts are sampled, late wakes yield). This file owns what only the host can
// do: the stream plumbing, one timer, keepalive, settling once, and the notes
// the watcher reads.
//
// # The hot path
// The wrapper is a pull source reading the source's reader directly: measured
// cheaper than `pipeThrough(new TransformStream())`, and than a
// TransformStream doing the same bookkeeping, in Node, Deno and workerd
// (bench/stream.bench.mjs). Per chunk it only notes what happened (the core's
// `Notes`, written here as local variables): counts, a `desiredSize` read and,
// for progress chunks, one `performance.now()` and the burst counter; a chunk
// that has to wait for the consumer costs one clock read more when it arrives
// and one when it is taken. Nothing else: no Wasm call, no timer, no promise
// beyond the read. The watcher is asked when the stream is wrapped, when its
// one wake-up comes, when a burst starts, and when a hold ends after the
// wake-up came during it (parked): a hold that ends otherwise only adds to
// `heldMs`. The wake-up (a js/timers.js `child` of the deadline, so on the
// deadline's queue: no host timer of its own) is armed for the watcher's
// instant and re-armed only when the watcher says so; a chunk never touches
// it (the core's invariant 3: the wake is never later than any expiry
// progress could cause).
//
// The clock read is most of what the wrapper adds per chunk (BENCHMARKS.md,
// "Deadlines": `design: performance.now()`, against "Stall detection": the
// bare reader), and it is
// only wasted in bursts, where thousands of chunks arrive within one
// millisecond. So a burst (the core's BURST_RUN progress chunks less than
// BURST_GAP_MS apart, read from the core once) switches the watcher to
// sampling: progress is counted, not timed, until it thins out.
//
// # Invariants (the host's; the machine's are in src/core/stall.rs)
// 1. One `child` per wrapped stream: its wake-up is the stream's one timer,
//    its parents are the signals it follows. It is disposed, and the stream's
//    watcher freed, the moment the stream settles: closes, errors or is
//    cancelled.
// 2. The wrapper settles once. On a stall or the deadline it errors with
//    `StreamStalled` or `DeadlineExceeded`; when `isProgress` throws, with that
//    error; when a followed signal aborts (the deadline's, which carries its
//    parents, e.g. a client that left, or `controller`'s), with its reason;
//    when the source errors, with the source's error, unless a followed
//    signal has aborted: then with that signal's reason (some runtimes error
//    an aborted body with an unbranded copy). In every one of these cases the
//    upstream `controller` is aborted with the same reason and the source is
//    cancelled with it: the request is released, not abandoned. A consumer's
//    `cancel(reason)` reaches the source and the controller. A normal close
//    aborts nothing. Listeners on followed signals go when the stream settles.
// 3. The wrapper reads one chunk ahead of its consumer, and keeps it itself:
//    the stream has no queue of its own (highWaterMark 0), so it is pulled
//    only when a read waits, and a pull means exactly that. One read on the
//    source is in flight from the start, or one chunk it brought is held:
//    no read asked for it yet, and nothing waits on the source until one
//    does. The hold is noted exactly (from `heldSince` until the pull that
//    takes the chunk); the watcher decides what that time means. A source
//    that ends or errors is seen at once, with or without a reader: the
//    wrapper closes, or errors and discards the held chunk, as a native
//    stream discards its queue.
// 4. The wrapper keeps Node and Deno alive (a js/keepalive.js hold, since
//    queue timers are unref'd) while a read waits on the source and a
//    wake-up is pending: someone awaits a verdict that will come. The hold is
//    taken when a read starts waiting and looked at again when a chunk is
//    held, at a wake-up and when the stream settles, not when a chunk
//    answers a read: a consumer reading in a loop would toggle the host
//    timer's ref per chunk (measured costly in Deno). So a consumer that stops
//    reading lets go at the next chunk or wake-up, and a wrapper nobody
//    reads holds nothing, as a native stream holds nothing.
// 5. On a `text/event-stream` body only events are progress by default
//    (`sseProgress`): keep-alive comments are silence. `fetchWithDeadline`
//    reads the response's content type; `withStallTimeout` is told it with
//    `contentType`. An `isProgress` given decides instead.
// 6. With tracing on (js/otel.js), a wrapped stream has one span, from the
//    start of the wait it bounds (`fetchWithDeadline`: the request; `relay`:
//    the call) to the
//    moment it settles; a `StreamStalled` verdict is its `deadline.stall`
//    event. Off, it reads the hook once per stream and nothing per chunk.

import * as core from "./edge_deadline.js";
import { DeadlineExceeded, StreamStalled, isDeadlineExceeded, isInsufficientBudget, isRetryFailed, isStepTimeout, isStreamStalled } from "./errors.js";
import { isReady, notReady } from "./load.js";
import { tracing } from "./otel.js";
import { crossOriginInBrowser, propagateFormats, withBudgetHeaders } from "./headers.js";
import { createSseProgress, sseProgress } from "./sse.js";
import { child, now } from "./timers.js";
import { hold, releaseHold } from "./keepalive.js";
import { deadline as checkDeadline, isAbortSignal, number, typeError } from "./validate.js";

export { createSseProgress, sseProgress, StreamStalled, isStreamStalled };

const noop = () => {};

/** The core's burst rule (src/core/stall.rs BURST_GAP_MS, BURST_RUN), read once the core is loaded. */
let BURST_GAP_MS = 0;
let BURST_RUN = 0;
let NO_STALL_LIMIT = 0; // the core's stallMs when it is left out

/**
 * What a public client is told about `reason` (the core's `fallbackAnswer`):
 * `{ status, code, reason }`, our own words and a code. The message of one of
 * our own errors (a stall, the deadline, a retry's stop) is kept; any other
 * error's text (the upstream's: URLs, hosts, keys) never is. `step`: the
 * words of a plan's streamed step, else of relay's upstream; `unsent`: the
 * upstream request was never made.
 */
export function publicReason(reason, step, unsent) {
  const cause = isStreamStalled(reason)
    ? "stalled"
    : isDeadlineExceeded(reason)
      ? "deadline"
      : isInsufficientBudget(reason)
        ? "insufficient"
        : isStepTimeout(reason)
          ? "step-timeout"
          : isRetryFailed(reason)
            ? "retry"
            : "failed";
  const [status, code, words] = core.fallbackAnswer(
    cause,
    cause === "retry" ? String(reason.reason) : undefined,
    step,
    cause === "stalled" ? String(reason.phase) : undefined,
    unsent,
    cause === "failed" ? undefined : String(reason.message),
  );
  return { status, code, reason: words };
}

/**
 * `error` as a trace may carry it off the machine: the credentials of the
 * URLs in its message and stack redacted (the core's `redactText`); the
 * error itself when there were none.
 */
export function redacted(error) {
  if (typeof error === "string") return core.redactText(error);
  if (!(error instanceof Error)) return error;
  const message = core.redactText(String(error.message));
  const stack = typeof error.stack === "string" ? core.redactText(error.stack) : error.stack;
  if (message === error.message && stack === error.stack) return error;
  const copy = new Error(message);
  Object.defineProperty(copy, "name", { value: error.name, configurable: true, writable: true });
  copy.stack = stack;
  return copy;
}

/** Whether a `content-type` is Server-Sent Events (src/core/sse.rs `is_event_stream`). */
export function isEventStream(type) {
  return typeof type === "string" && core.isEventStream(type);
}

// ---- input checks (types here; ranges in the core) -----------------------------------------
// Every check names the parameter as the caller wrote it (`options.stallMs`)
// in `.param`, with `.code` (js/validate.js); the core's range errors name
// the same parameters (src/wasm/stall.rs).

function isReadableStream(s) {
  return s != null && typeof s === "object" && typeof s.getReader === "function" && typeof s.cancel === "function";
}

function isAbortController(c) {
  return (
    c != null &&
    typeof c === "object" &&
    typeof c.abort === "function" &&
    c.signal != null &&
    typeof c.signal === "object" &&
    typeof c.signal.aborted === "boolean"
  );
}

export function options(value, where, shape) {
  if (value === null || typeof value !== "object") throw typeError("options", `an object like ${shape}`, value, where);
  return value;
}

export function limit(param, value, fallback, where) {
  return value === undefined ? fallback : number(param, value, undefined, where);
}

export function deadlineAt(deadline, where, required) {
  if (deadline === undefined && !required) return undefined;
  return checkDeadline("options.deadline", deadline, where).at;
}

export function predicate(isProgress, where) {
  if (isProgress === undefined) return undefined;
  if (typeof isProgress !== "function") throw typeError("options.isProgress", "a function (chunk) => boolean", isProgress, where);
  // The ready SSE predicate needs line state per stream: give this stream its own.
  return isProgress === sseProgress ? createSseProgress() : isProgress;
}

/** The progress predicate for a body: the caller's, else SSE events on an event stream (invariant 7). */
export function progressFor(isProgress, contentType) {
  if (isProgress !== undefined) return isProgress;
  return isEventStream(contentType) ? createSseProgress() : undefined;
}

// ---- the wrapper ---------------------------------------------------------------------------

/**
 * Wraps `source`: the returned stream carries the same chunks and errors with
 * `StreamStalled` when the source goes quiet for too long (aborting the
 * upstream request), or with `DeadlineExceeded` at the deadline.
 *
 * @param {ReadableStream} stream the source; it is locked to the wrapper
 * @param {{ firstChunkMs: number, stallMs: number, deadline?: import("./deadline.js").Deadline,
 *   controller?: AbortController, isProgress?: (chunk: any) => boolean }} opts
 * @returns {ReadableStream}
 * @throws {TypeError} non-stream source, locked source, non-number limits, a
 *   `deadline` that is not a Deadline, a `controller` that is not an
 *   AbortController, an `isProgress` that is not a function
 * @throws {RangeError} limits that are NaN, ±Infinity, ≤ 0 or past 2^53 − 1
 * @example
 * const controller = new AbortController();
 * const res = await fetch(url, { signal: controller.signal });
 * const body = withStallTimeout(res.body, { firstChunkMs: 5_000, stallMs: 9_000, controller, isProgress: sseProgress });
 */
export function withStallTimeout(stream, opts) {
  return guard(stream, opts, undefined, true).stream;
}

/**
 * `withStallTimeout` for the package's own callers (js/relay.js): the
 * wrapped stream and `progress()`, how many progress chunks it has passed on
 * so far. `startedAt` (default: now) is where the first-chunk limit counts
 * from, for a caller whose wait began before it had a body. Unless
 * `required` (withStallTimeout's), `firstChunkMs` may be left out: the
 * core's default wait (`firstChunkWait`) from `startedAt` to the deadline.
 * @returns {{ stream: ReadableStream, progress: () => number }}
 */
export function guard(stream, opts, startedAt, required = false) {
  if (!isReady()) notReady("withStallTimeout");
  const where = "withStallTimeout";
  if (!isReadableStream(stream)) throw typeError("stream", "a ReadableStream", stream, where);
  if (stream.locked) throw typeError("stream", "a ReadableStream that is not locked to a reader", stream, where);
  const o = options(opts, where, "{ firstChunkMs, stallMs }");
  const firstChunkMs = required ? number("options.firstChunkMs", o.firstChunkMs, undefined, where) : limit("options.firstChunkMs", o.firstChunkMs, undefined, where);
  const stallMs = number("options.stallMs", o.stallMs, undefined, where);
  const at = deadlineAt(o.deadline, where, false);
  const { controller } = o;
  if (controller !== undefined && !isAbortController(controller)) {
    throw typeError("options.controller", "an AbortController", controller, where);
  }
  if (o.contentType !== undefined && o.contentType !== null && typeof o.contentType !== "string") {
    throw typeError("options.contentType", "a string (the body's content-type) or null", o.contentType, where);
  }
  const isProgress = progressFor(predicate(o.isProgress, where), o.contentType);
  // The deadline carries its parents (a client that left): follow it.
  const parents = [at === undefined ? undefined : followable(o.deadline), controller?.signal];
  // For the span only (the package's callers): the attempt's wait for headers and its number, or
  // the span the caller started (js/relay.js: from the call).
  const traced = required ? {} : { firstByteMs: o.firstByteMs, attempt: o.attempt, span: o.span };
  return wrap(stream, { firstChunkMs, stallMs, at, controller, parents, isProgress, startedAt, t: tracing(o.otel), ...traced });
}

/** The deadline to follow, or undefined for a disposed one (its instant still applies). */
function followable(deadline) {
  try {
    deadline.signal();
    return deadline;
  } catch {
    return undefined;
  }
}

/**
 * The wrapper itself, on checked arguments: `parents` are what it follows
 * (js/timers.js `child`), `controller` (anything with `abort(reason)` and
 * `signal`) is the upstream it aborts. `onSettle` runs once, when the stream
 * closes, errors or is cancelled. With tracing (`t`), the stream's span is
 * `span` (started by the caller) or one started here once the limits passed.
 */
export function wrap(source, { firstChunkMs, stallMs, at, controller, parents, isProgress, startedAt, t, span, firstByteMs, attempt }, onSettle = noop) {
  // The watcher's first step validates the limits (a RangeError naming the
  // parameter) before the source is locked. The watcher object is made at the
  // stream's first event from the same inputs, so in the same state: a
  // stream that settles before its first wake never pays for a Wasm object
  // (src/wasm/stall.rs).
  const t0 = now();
  const since = startedAt ?? t0;
  // Not given: the core's default wait for first content, from where the wait starts.
  const defaultWait = firstChunkMs === undefined;
  if (BURST_RUN === 0) {
    BURST_GAP_MS = core.StallWatcher.burstGapMs();
    BURST_RUN = core.StallWatcher.burstRun();
    NO_STALL_LIMIT = core.StallWatcher.noLimit();
  }
  // The watcher's calls take numbers only (src/wasm/stall.rs, "Numbers in,
  // one number out"): NaN for no deadline, a limit left out as the core's default.
  const atOrNaN = at ?? NaN;
  firstChunkMs ??= core.firstChunkWait(atOrNaN, since);
  const stallLimit = stallMs ?? NO_STALL_LIMIT;
  const first = core.stallStart(firstChunkMs, stallLimit, atOrNaN, since, t0);
  if (t != null) {
    if (span === undefined) span = streamSpan(t, firstChunkMs, stallMs, at, t0, firstByteMs, attempt);
    // A span started before the headers (fetchWithDeadline's, relay's) learns the default wait now.
    else if (defaultWait && applies(firstChunkMs)) span.setAttribute("deadline.stall.first_chunk_ms", firstChunkMs);
  }
  /** @type {core.StallWatcher | undefined} */
  let w;
  const watcher = () => (w ??= new core.StallWatcher(firstChunkMs, stallLimit, atOrNaN, since, t0));
  // The notes (src/core/stall.rs `Notes`): what happened, written per chunk without asking the watcher.
  let chunks = 0;
  let bytes = 0;
  let progress = 0; // progress chunks
  let lastProgressAt = NaN; // the latest timed progress chunk; NaN until the first
  let heldMs = 0; // time in holds that ended since lastProgressAt (since the start before it)
  let heldSince = NaN; // when the chunk read ahead began to wait for a read; NaN: none waits (invariant 3)
  let burst = 0; // timed progress chunks in a row less than BURST_GAP_MS apart (held time not counted)
  let sampling = false; // the watcher's: progress is counted, not timed
  let woke = false; // the wake-up came during the current hold: ask the watcher when it ends
  let node; // the child: the one wake-up and the followed parents (invariant 1)
  let holding = false; // a keepalive hold is taken (invariant 4)
  let settled = false;
  let out; // the wrapper's controller
  // The read ahead (invariant 3): one read on the source is in flight from
  // the start, or one chunk it brought waits for a read (held, since heldSince).
  let aheadChunk;
  let waiting = false; // a consumer's read waits for the source: pull() came with no chunk ahead

  const reader = source.getReader();
  // A source error ends the wrapper at once, as it ends a native stream: with
  // a chunk read ahead and nobody reading, the next read would not come.
  reader.closed.then(undefined, (error) => onReadError(error));

  /** Invariant 4: hold the process while a read waits on the source and a wake-up is pending. */
  function keep() {
    const on = waiting && !settled && node.at < Infinity;
    if (on === holding) return;
    holding = on;
    if (on) hold();
    else releaseHold();
  }

  /** The watcher's answer: the instant to wake at (Infinity: none), or NaN: the stream ends. */
  function step(wakeAt) {
    if (wakeAt !== wakeAt) return fail(verdict());
    node.rearm(wakeAt);
    keep();
  }

  /** Why the stream ends: the watcher's verdict as the package's error (or the RangeError of a bad note). */
  function verdict() {
    let v;
    try {
      v = watcher().verdict();
    } catch (error) {
      return error;
    }
    return v.kind === "deadlineExceeded" ? new DeadlineExceeded(at, v.lateByMs) : new StreamStalled(v.phase, v.afterMs, v.chunks, v.bytes);
  }

  /** The one wake-up came. */
  function onTimer() {
    if (settled) return;
    if (heldSince === heldSince) woke = true;
    const next = watcher().wake(now(), chunks, bytes, progress, lastProgressAt, heldMs, heldSince);
    if (sampling) sampling = w.sampling;
    step(next);
  }

  /** A chunk now waits for the consumer: nobody waits on the source until the consumer reads. */
  function held(chunk) {
    aheadChunk = chunk;
    heldSince = now();
    keep();
  }

  /** The consumer reads again after a hold: noted; the watcher is asked only if the wake-up came meanwhile. */
  function resume() {
    const t = now();
    const time = t - heldSince;
    heldSince = NaN;
    if (time > 0) heldMs += time;
    if (!woke) return;
    woke = false;
    step(watcher().resume(t, chunks, bytes, progress, lastProgressAt, heldMs));
  }

  /** How many progress chunks have been passed on (for js/relay.js: commit on the first). */
  const progressSoFar = () => progress;

  /** `outcome` and `reason` are for the stream's span: "closed", "cancelled" or `fail`'s. */
  function settle(outcome, reason) {
    settled = true;
    aheadChunk = undefined;
    if (span !== undefined) streamEnded(t, span, outcome, reason, chunks, bytes, attempt);
    node?.dispose();
    w?.free();
    if (holding) keep();
    onSettle();
  }

  /** Errors the wrapper, aborts the upstream and cancels the source, all with `reason`. */
  function fail(reason) {
    if (settled) return;
    settle(span === undefined ? undefined : failure(reason, node), reason);
    out.error(reason);
    if (controller && !controller.signal.aborted) controller.abort(reason);
    reader.cancel(reason).catch(noop);
  }

  /** Reads the next chunk ahead. */
  function readAhead() {
    reader.read().then(onRead, onReadError);
  }

  function onRead(result) {
    if (settled) return;
    if (result.done) {
      settle("closed");
      out.close();
      return;
    }
    const chunk = result.value;
    chunks++;
    const size = chunk == null ? 0 : typeof chunk === "string" ? chunk.length : chunk.byteLength;
    if (size !== undefined) bytes += size;
    let counts;
    if (isProgress === undefined) counts = size !== 0;
    else {
      try {
        counts = isProgress(chunk);
      } catch (error) {
        return fail(error);
      }
    }
    if (counts) {
      progress++;
      if (!sampling) {
        const t = now();
        const close = t - lastProgressAt - heldMs < BURST_GAP_MS;
        lastProgressAt = t;
        heldMs = 0;
        if (!close) burst = 0;
        else if (++burst === BURST_RUN) {
          // A burst: stop reading the clock per chunk; the watcher keeps a wake within sampleMs.
          burst = 0;
          sampling = true;
          const next = watcher().burst(t, progress);
          if (next === next) node.rearm(next);
        }
      }
    }
    // No read waits for the chunk: it is held until the consumer asks.
    if (!waiting) return held(chunk);
    // The hold stays until the next chunk or wake-up looks again (invariant 4).
    waiting = false;
    out.enqueue(chunk);
    readAhead();
  }

  /**
   * The source errored. When a signal we follow has aborted, its reason is
   * the cause: some runtimes error an aborted body with an unbranded copy.
   */
  function onReadError(error) {
    fail(node.aborted ? node.reason : error);
  }

  const stream = new ReadableStream({
    start(c) {
      out = c;
      // A parent (a client that left, the caller's signal) may have aborted
      // already: then `child` calls onAbort before it returns.
      node = child(parents, Infinity, { onTime: onTimer, onAbort: fail });
      if (settled) return;
      step(first);
      if (!settled) readAhead();
    },
    // With no queue of its own (highWaterMark 0), the wrapper is pulled only
    // when a read waits: a consumer's, a pipe's or a tee's (invariant 4).
    pull() {
      if (heldSince !== heldSince) {
        waiting = true;
        keep();
        return;
      }
      const chunk = aheadChunk;
      aheadChunk = undefined;
      resume();
      if (settled) return;
      out.enqueue(chunk);
      readAhead();
    },
    cancel(reason) {
      if (settled) return;
      settle("cancelled");
      // Cancel first: aborting first would error the source, and its cancel would then reject.
      const cancelled = reader.cancel(reason);
      if (controller && !controller.signal.aborted) controller.abort(reason);
      return cancelled;
    },
  }, { highWaterMark: 0 });
  return { stream, progress: progressSoFar };
}

// ---- tracing (js/otel.js) -----------------------------------------------------------------

/** Whether `ms` is a limit that applies: given (or the default wait), not the "no limit" of an option left out. */
const applies = (ms) => ms !== undefined && ms < Number.MAX_SAFE_INTEGER;

/**
 * A wrapped stream's span, from the start of the wait it bounds to the
 * stream's end: the limits that apply and, for an attempt of a resumable
 * read (js/resume.js), its number.
 */
export function streamSpan(t, firstChunkMs, stallMs, at, t0, firstByteMs, attempt) {
  const attributes = {};
  if (attempt !== undefined) attributes["deadline.attempt"] = attempt;
  if (applies(firstByteMs)) attributes["deadline.stall.first_byte_ms"] = firstByteMs;
  if (applies(firstChunkMs)) attributes["deadline.stall.first_chunk_ms"] = firstChunkMs;
  if (applies(stallMs)) attributes["deadline.stall.stall_ms"] = stallMs;
  return t.start("deadline.stream", undefined, at, t0, attributes);
}

/** How a stream that failed with `reason` ended, as a span's outcome. */
export function failure(reason, node) {
  if (isStreamStalled(reason)) return "stalled";
  if (isDeadlineExceeded(reason)) return "deadline";
  return node?.aborted && node.reason === reason ? "aborted" : "error";
}

/** Ends a stream's span; a stall verdict is its event `deadline.stall` (with the attempt's number, if any). */
export function streamEnded(t, span, outcome, reason, chunks, bytes, attempt) {
  const at = now();
  if (outcome === "stalled") {
    const verdict = { "deadline.stall.phase": reason.phase, "deadline.stall.after_ms": reason.afterMs, "deadline.stall.chunks": reason.chunks, "deadline.stall.bytes": reason.bytes };
    if (attempt !== undefined) verdict["deadline.attempt"] = attempt;
    t.event(span, "deadline.stall", verdict, at);
  }
  t.end(span, outcome, at, redacted(reason), { "deadline.stream.chunks": chunks, "deadline.stream.bytes": bytes });
}
