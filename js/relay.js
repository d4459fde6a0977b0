// A stream relay: the proxy glue every edge function that forwards a
// streaming upstream (an LLM's Server-Sent Events, a long download) writes,
// done once.
//
// Why each part:
// - Headers go out only after the upstream's first progress chunk (on an SSE
//   body an event: a keep-alive comment is not progress). Until then nothing
//   is committed, so a silent, slow or only-pinging upstream still gets an
//   honest fallback (504 + the reason) instead of a 200 the client cannot
//   tell from a short answer. Chunks before it (keep-alives) are held and
//   sent first once it comes.
// - The wait for the upstream's headers is bounded too: by `firstByteMs`
//   when given (phase "first-byte"), else it counts against `firstChunkMs`
//   (phase "first-chunk"), which then runs from the call. An upstream that
//   never answers gets the fallback at that limit.
// - The body is guarded by the stall wrapper (js/stall.js): a stall, the
//   deadline or the client's cancel aborts the upstream request (released,
//   not abandoned).
// - Once bytes are flowing the status cannot change, so a `text/event-stream`
//   ends with an `event: error` giving the reason's code: a client can tell an
//   interrupted answer from a complete one whatever the HTTP layers in
//   between do with a broken stream. Other bodies error (the connection
//   breaks), which is all HTTP/1.1 and HTTP/2 can say mid-body.
//
// # Invariants
// 1. The returned promise resolves (never rejects for a runtime shortage,
//    stall or upstream failure): to the relayed response after the first
//    progress chunk (or the end of a body that had none), to the upstream's
//    own response when it is not ok or has no body, or to the fallback.
// 2. Everything is released exactly once, when the relayed body ends, errors
//    or is cancelled, or at once when no body is relayed: the headers timer,
//    the stall timer, the upstream request (aborted unless it completed), the signal links, and
//    `options.deadline` (disposed: the relay is the request's last work).
// 3. Awaiting `relay` keeps a Node or Deno process alive until it settles
//    (the deadline's own timer never does).
// 4. The SSE error event starts on a fresh line: a half-sent event becomes
//    part of the error event instead of passing as a message.
// 5. The client is told our own words and a code (the core's
//    `fallbackAnswer`), never the upstream's error: its text holds URLs with
//    credentials, internal hosts, API keys. That error goes to
//    `options.onError` (as it is) and to OpenTelemetry (URL credentials
//    redacted).

import * as core from "./edge_deadline.js";
import { argumentError, CODES, isDeadlineExceeded, isRetryFailed, StreamStalled } from "./errors.js";
import { awaited } from "./keepalive.js";
import { isReady, notReady } from "./load.js";
import { tracing } from "./otel.js";
import { recorder } from "./record.js";
import { resumable, resumeOptions } from "./resume.js";
import { failure, guard, isEventStream, isStreamStalled, publicReason, streamEnded, streamSpan } from "./stall.js";
import { child, now } from "./timers.js";
import * as check from "./validate.js";

const NO_LIMIT = Number.MAX_SAFE_INTEGER;
const encoder = new TextEncoder();
const noop = () => {};

/**
 * Relays `upstream` (a Response, a promise of one, or `(signal) => fetch(…)`
 * so the relay owns the request's signal) as a new Response; see the module
 * doc.
 * @param {Response | Promise<Response> | ((signal: AbortSignal) => Promise<Response>)} upstream
 * @param {{ deadline?: import("./deadline.js").Deadline, signal?: AbortSignal, controller?: AbortController,
 *   firstByteMs?: number, firstChunkMs?: number, stallMs?: number, isProgress?: (chunk: any) => boolean,
 *   headers?: HeadersInit, fallback?: (reason: unknown, elapsedMs: number) => Response, otel?: object | null }} [options]
 * @returns {Promise<Response>} awaiting it keeps a Node or Deno process alive until it settles
 *   (js/keepalive.js): the wait may end only when the deadline aborts the request
 */
export function relay(upstream, options) {
  return awaited(start(upstream, options));
}

async function start(upstream, options) {
  if (!isReady()) notReady("relay");
  const o = check.obj("options", options, "an object like { deadline, firstChunkMs, stallMs }", true);
  const deadline = o.deadline === undefined ? undefined : check.deadline("options.deadline", o.deadline);
  const userSignal = check.optSignal("options.signal", o.signal);
  const firstByteMs = o.firstByteMs === undefined ? undefined : check.number("options.firstByteMs", o.firstByteMs);
  const firstChunkGiven = o.firstChunkMs === undefined ? undefined : check.number("options.firstChunkMs", o.firstChunkMs);
  const stallMs = o.stallMs === undefined ? NO_LIMIT : check.number("options.stallMs", o.stallMs);
  if (o.isProgress !== undefined) check.fn("options.isProgress", o.isProgress, "a function (chunk) => boolean");
  if (o.fallback !== undefined) check.fn("options.fallback", o.fallback, "a function (reason, elapsedMs) => Response");
  const onError = o.onError === undefined ? noop : check.fn("options.onError", o.onError, "a function (error) => void");
  const extraHeaders = o.headers === undefined ? undefined : new Headers(o.headers);
  const rec = recorder(o, undefined);
  const t = tracing(o.otel);
  if (typeof upstream !== "function" && !isThenable(upstream) && !check.looksLikeResponse(upstream)) {
    throw check.typeError("upstream", "a Response, a promise of one or a function (signal) => fetch(…)", upstream);
  }
  const retry = resumeOptions(o, "relay");
  // Range checks before any I/O (the core names the parameter).
  const started = now();
  core.stallWake(firstChunkGiven ?? NO_LIMIT, stallMs, deadline?.at, started, undefined, 0, 0, started);
  if (firstByteMs !== undefined) core.firstByteWake(firstByteMs, started, started);
  if (retry !== undefined) {
    if (typeof upstream !== "function") throw check.typeError("upstream", "a function (signal, { attempt, lastEventId, headers }) => fetch(…) with options.retry: a retry makes the request again", upstream);
    if (o.controller !== undefined) throw check.typeError("options.controller", "left out with options.retry: each attempt has its own signal", o.controller);
    return resumableRelay(upstream, o, { deadline, signal: userSignal, firstByteMs, firstChunkMs: firstChunkGiven, stallMs: o.stallMs === undefined ? undefined : stallMs, isProgress: o.isProgress, otel: o.otel, retry }, extraHeaders, rec, started, onError);
  }

  // The upstream request's controller: the caller's, or ours when we make the request.
  const controller = o.controller ?? new AbortController();
  const links = [];
  const link = (signal) => {
    if (signal.aborted) return void controller.abort(signal.reason);
    const onAbort = () => controller.abort(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    links.push(() => signal.removeEventListener("abort", onAbort));
  };
  if (deadline) link(deadline.signal());
  if (userSignal) link(userSignal);
  // Not given: the core's default wait for first content, from where it
  // starts (the call; the headers when `firstByteMs` bounds the wait for them).
  const firstChunkMs = firstChunkGiven ?? (firstByteMs === undefined ? core.firstChunkWait(deadline?.at ?? NaN, started) : undefined);
  // The wait for headers: `firstByteMs`, else what `firstChunkMs` allows (it runs from the call).
  const headersMs = firstByteMs ?? firstChunkMs;
  // Tracing (js/otel.js): the upstream's stream span, from the call, as fetchWithDeadline's is from
  // the request; the guard ends it once it has the body, else `fail` or the hand-back does.
  let span = t === null ? undefined : streamSpan(t, firstChunkMs, stallMs, deadline?.at, started, firstByteMs);
  let waitForHeaders;
  if (headersMs < NO_LIMIT) {
    const phase = firstByteMs === undefined ? "first-chunk" : "first-byte";
    waitForHeaders = child([controller.signal], started + headersMs, {
      onTime: () => controller.abort(new StreamStalled(phase, now() - started, 0, 0)),
    });
  }
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    waitForHeaders?.dispose();
    for (const unlink of links) unlink();
    deadline?.dispose();
  };
  const fail = (error) => {
    const reason = controller.signal.aborted ? controller.signal.reason : error;
    // The span's outcome before our own abort below: an upstream's failure is an "error", not "aborted".
    const outcome = span === undefined ? undefined : failure(reason, controller.signal);
    if (!controller.signal.aborted) controller.abort(reason);
    release();
    // Cut by time: a timeout; the client gone: nothing; else an error.
    if (!unsent.has(reason)) rec?.(isStreamStalled(reason) || isDeadlineExceeded(reason) ? "timeout" : userSignal?.aborted ? "aborted" : "error", now() - started);
    if (span !== undefined) streamEnded(t, span, outcome, reason, 0, 0);
    report(onError, reason);
    return (o.fallback ?? fallbackResponse)(reason, now() - started);
  };

  // Nothing was left before the request (a caller's budget below the
  // reserve, a deadline already passed, a client already gone): it is never
  // made, and the fallback says so.
  if (controller.signal.aborted && typeof upstream === "function") {
    const reason = controller.signal.reason;
    if (reason !== null && typeof reason === "object") unsent.add(reason);
    return fail(reason);
  }

  let response;
  let onAbort = noop;
  try {
    const pending = Promise.resolve(typeof upstream === "function" ? upstream(controller.signal) : upstream);
    // The wait ends when the controller aborts (the headers limit, the deadline,
    // the caller's signal) even if the upstream promise never settles.
    const gaveUp = new Promise((_, reject) => {
      onAbort = () => {
        reject(controller.signal.reason);
        // A response that comes after all is not read: release its connection.
        pending.then((late) => check.looksLikeResponse(late) && late.body?.cancel(controller.signal.reason).catch(noop), noop);
      };
      if (controller.signal.aborted) onAbort();
      else controller.signal.addEventListener("abort", onAbort, { once: true });
    });
    response = await Promise.race([pending, gaveUp]);
    if (!check.looksLikeResponse(response)) {
      throw argumentError("type", CODES.INVALID_RETURN, "upstream", `'upstream' of relay must give a Response: it gave ${check.describe(response)}`);
    }
  } catch (error) {
    return fail(error);
  } finally {
    controller.signal.removeEventListener("abort", onAbort);
    waitForHeaders?.dispose();
  }
  if (!response.ok || response.body === null) {
    rec?.(response.ok ? "ok" : "error", now() - started);
    release();
    if (span !== undefined) streamEnded(t, span, "closed", undefined, 0, 0);
    return response; // the upstream's own answer, as it is
  }
  const type = response.headers.get("content-type");
  const sse = isEventStream(type);
  let guarded;
  try {
    // On an SSE body only events are progress unless `isProgress` says otherwise (contentType).
    // Without `firstByteMs` the first-chunk limit runs from the call: the headers' wait counted.
    guarded = guard(response.body, { firstChunkMs, stallMs, deadline, controller, isProgress: o.isProgress, contentType: type, otel: o.otel, span }, firstByteMs === undefined ? started : undefined);
  } catch (error) {
    release();
    if (span !== undefined) streamEnded(t, span, "error", error, 0, 0);
    throw error;
  }
  span = undefined; // the guard's now: it ends it with the body
  const reader = guarded.stream.getReader();
  // Commit on the first progress chunk: what came before it (keep-alives) is held until then.
  const early = [];
  let done = false;
  try {
    for (;;) {
      const next = await reader.read();
      if (next.done) {
        done = true;
        break;
      }
      early.push(next.value);
      if (guarded.progress() > 0) break;
    }
  } catch (error) {
    return fail(error);
  }
  rec?.("ok", now() - started); // the first progress chunk: what firstChunkMs bounds
  return relayed(response, extraHeaders, body(early, done, reader, sse, release, onError));
}

/** The relayed response: the upstream's status and `content-type`, `cache-control: no-store`, then `headers`. */
function relayed(response, extraHeaders, stream) {
  const type = response.headers.get("content-type");
  const headers = new Headers({ "cache-control": "no-store" });
  if (type !== null) headers.set("content-type", type);
  extraHeaders?.forEach((value, key) => headers.set(key, value));
  return new Response(stream, { status: response.status, headers });
}

/**
 * `relay` with `retry` (js/resume.js): the attempts before content are
 * invisible, and the relayed body resumes after a mid-stream failure where
 * the core says it can; otherwise the same commit, fallback and release as
 * a relay without it.
 */
async function resumableRelay(upstream, o, options, extraHeaders, rec, started, onError) {
  const r = resumable(upstream, options);
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    r.close();
    options.deadline.dispose();
  };
  const fail = (reason) => {
    release();
    if (isRetryFailed(reason) && reason.attempts.length === 0) unsent.add(reason);
    else rec?.(isStreamStalled(reason) || isDeadlineExceeded(reason) ? "timeout" : options.signal?.aborted ? "aborted" : "error", now() - started);
    report(onError, reason);
    return (o.fallback ?? fallbackResponse)(reason, now() - started);
  };
  const early = [];
  let done = false;
  let head;
  try {
    head = await r.head();
    if (head.final) {
      rec?.(head.response.ok ? "ok" : "error", now() - started);
      release();
      return head.response; // the upstream's own answer, as it is
    }
    // Commit on the first content (an event, on an event stream); what came before it is held until
    // then, with the attempt it came from: a failed attempt's keep-alives never reach the client.
    while (!r.content()) {
      const next = await r.read();
      if (next.done) {
        done = true;
        break;
      }
      early.push({ value: next.value, attempt: r.attempts() });
    }
  } catch (error) {
    return fail(error);
  }
  const committing = r.attempts();
  const kept = [];
  for (const e of early) if (e.attempt === committing) kept.push(e.value);
  rec?.("ok", now() - started);
  const reader = { read: r.read, cancel: (reason) => r.close(reason) };
  const sse = isEventStream(head.response.headers.get("content-type"));
  return relayed(head.response, extraHeaders, body(kept, done, reader, sse, release, onError));
}

/** The rest of the guarded body; a failure ends an SSE body with an `event: error`. */
function body(early, doneEarly, reader, sse, release, onError) {
  let lastByte; // the last byte forwarded: whether it left a line open (invariant 4)
  const forward = (c, done, value) => {
    if (done) {
      c.close();
      return release();
    }
    if (value?.byteLength) lastByte = value[value.byteLength - 1];
    c.enqueue(value);
  };
  return new ReadableStream({
    start(c) {
      for (const value of early) forward(c, false, value);
      if (doneEarly) forward(c, true);
    },
    async pull(c) {
      let done = false;
      let value;
      try {
        ({ done, value } = await reader.read());
      } catch (error) {
        release();
        report(onError, error);
        if (!sse) return c.error(error);
        const { code, reason } = publicReason(error, false, false);
        c.enqueue(encoder.encode(core.sseErrorEvent(lastByte, JSON.stringify({ fallback: true, code, reason }))));
        return c.close();
      }
      forward(c, done, value);
    },
    cancel(reason) {
      release();
      return reader.cancel(reason); // the client left: the upstream request is aborted too
    },
  });
}

/** Reasons that ended a relay before its upstream request was made (see `start`). */
const unsent = new WeakSet();

/** Hands the upstream's error to `options.onError`; what the hook throws is reported and changes nothing. */
function report(onError, error) {
  try {
    onError(error);
  } catch (thrown) {
    console.error(thrown);
  }
}

/** The default fallback: our words and a code (`publicReason`), 504 when time ran out, 502 for a failure. */
function fallbackResponse(reason, elapsedMs) {
  const { status, code, reason: words } = publicReason(reason, false, unsent.has(reason));
  return new Response(JSON.stringify({ fallback: true, code, reason: words, elapsedMs: Math.round(elapsedMs) }), {
    status,
    headers: { "content-type": "application/json", "cache-control": "no-store" },
  });
}

function isThenable(x) {
  return x != null && typeof x.then === "function";
}

