// `fetchWithDeadline`: `fetch` bounded by a deadline, above the stall guard (./stall.js) and the
// resumable read (./resume.js), neither of which imports this module, so the three form no circle.
// Its decisions are the core's: the stall guard's limits (src/core/stall.rs), the resume rules
// (src/core/resume.rs) and the runtime's own fetch cap (src/core/caps.rs, `fetch_idle_plan`).

import * as core from "./edge_deadline.js";
import { StreamStalled } from "./errors.js";
import { crossOriginInBrowser, propagateFormats, withBudgetHeaders } from "./headers.js";
import { DENO, PROCESS_HOST } from "./keepalive.js";
import { isReady, notReady } from "./load.js";
import { tracing } from "./otel.js";
import { resumable, resumeOptions } from "./resume.js";
import { deadlineAt, failure, limit, options, predicate, progressFor, streamEnded, streamSpan, wrap } from "./stall.js";
import { child, now } from "./timers.js";
import { isAbortSignal, typeError } from "./validate.js";

/** The runtime whose own fetch has a cap (src/core/caps.rs `FetchIdle`), and the cap; looked up once. */
let fetchCap;
let fetchCapWarned = false;

/**
 * What the runtime's own fetch cap changes for one request (src/core/caps.rs, `fetch_idle_plan`): Bun's
 * is raised to the deadline through its `timeout` option (unless the caller set one); Node's cannot be
 * without a dispatcher (the caller's `init.dispatcher` sets its own), so the waits for the headers and
 * between chunks are clamped to it and the request ends with our `StreamStalled` at the cap, said once.
 * @param {any} init @param {number} at @param {number | undefined} firstByteMs @param {number | undefined} stallMs
 * @returns {{ firstByteMs: number | undefined, stallMs: number | undefined, raise?: { timeout: number } }}
 */
function runtimeFetchCap(init, at, firstByteMs, stallMs) {
  if (fetchCap === undefined) {
    const name = typeof globalThis.Bun === "object" ? "bun" : PROCESS_HOST && !DENO ? "node" : "";
    fetchCap = { name, ms: name === "" ? undefined : core.runtimeFetchIdleMs(name) };
  }
  const { name, ms } = fetchCap;
  if (ms === undefined || (name === "node" && init?.dispatcher !== undefined) || (name === "bun" && init?.timeout !== undefined)) return { firstByteMs, stallMs };
  const plan = core.fetchIdlePlan(ms, name === "bun", at - now(), firstByteMs, stallMs);
  if (plan.clamped && !fetchCapWarned) {
    fetchCapWarned = true;
    console.warn(
      `edge-deadline: this runtime's fetch gives up after ${ms / 1000} s without a byte, whatever the deadline says: fetchWithDeadline clamps its waits for the headers and between chunks to that, so a longer deadline ends there with StreamStalled. To keep the deadline, pass a dispatcher of your own (undici's Agent with headersTimeout and bodyTimeout) in init.dispatcher. (FETCH_IDLE_CAP, said once)`,
    );
  }
  return { firstByteMs: plan.firstByteMs ?? undefined, stallMs: plan.stallMs ?? undefined, ...(plan.raiseMs == null ? {} : { raise: { timeout: plan.raiseMs } }) };
}

/**
 * `fetch` bounded by a deadline, with a limit on the wait for headers and
 * stall detection on the body. The request tells the upstream what is left
 * of the deadline (`propagate`: the package's own header by default, other
 * formats when named, none for `false`; a header the caller set is kept).
 * The request's signal is linked to the
 * deadline's signal (and so to its parents), to `init.signal` and to the
 * signal of a `Request` input; a stall, the deadline or a consumer's cancel
 * aborts the request.
 *
 * Limits that are not given do not apply (the deadline bounds everything);
 * `firstChunkMs` counts from the arrival of the headers. On a
 * `text/event-stream` response only events are progress unless `isProgress`
 * says otherwise: keep-alive comments are silence.
 *
 * In a browser, the default header is sent only to the page's own origin: on
 * a cross-origin request it would make the browser send a CORS preflight
 * first, which a server that allows any origin but does not answer OPTIONS
 * fails. Pass `propagate` (`true` or header names) to send it anyway.
 *
 * @param {RequestInfo | URL} input
 * @param {RequestInit} [init]
 * @param {{ deadline: import("./deadline.js").Deadline, firstByteMs?: number, firstChunkMs?: number,
 *   stallMs?: number, isProgress?: (chunk: any) => boolean, propagate?: boolean | string | string[] }} opts
 * @returns {Promise<Response>} rejects with `DeadlineExceeded`, `StreamStalled`
 *   (phase "first-byte"), `init.signal`'s reason or a network error
 */
export async function fetchWithDeadline(input, init, opts) {
  if (!isReady()) notReady("fetchWithDeadline");
  const where = "fetchWithDeadline";
  const o = options(opts, where, "{ deadline, firstByteMs, firstChunkMs, stallMs }");
  const at = deadlineAt(o.deadline, where, true);
  const askedFirstByteMs = limit("options.firstByteMs", o.firstByteMs, undefined, where);
  const firstChunkMs = limit("options.firstChunkMs", o.firstChunkMs, undefined, where);
  const askedStallMs = limit("options.stallMs", o.stallMs, undefined, where);
  const isProgress = predicate(o.isProgress, where);
  const formats = propagateFormats(o.propagate);
  if (init != null && typeof init !== "object") throw typeError("init", "a RequestInit object", init, where);
  const userSignal = init?.signal ?? undefined;
  if (userSignal !== undefined && !isAbortSignal(userSignal)) throw typeError("init.signal", "an AbortSignal", userSignal, where);
  // The runtime's own fetch cap (Node's undici, Bun): raised where a request may, else the waits clamped to it.
  const { firstByteMs, stallMs, raise } = runtimeFetchCap(init, at, askedFirstByteMs, askedStallMs);
  if (raise !== undefined) init = { ...init, ...raise };
  // Range checks before any I/O (the core names the parameter).
  const t0 = now();
  // Numbers only (src/wasm/stall.rs, "Numbers in, one number out"): a limit left out as the core's default.
  core.stallStart(firstChunkMs ?? core.firstChunkWait(at, t0), stallMs ?? core.StallWatcher.noLimit(), at, t0, t0);
  const firstByteDelay = firstByteMs === undefined ? undefined : core.firstByteWake(firstByteMs, t0, t0);
  const requestSignal = typeof Request !== "undefined" && input instanceof Request ? input.signal : undefined;
  const retry = resumeOptions(o, where);
  const t = tracing(o.otel); // checked before any I/O, with retry too
  if (retry !== undefined) return fetchResumable(input, init, o, { fromHeaders: true, otel: o.otel, deadline: o.deadline, signal: userSignal, signal2: requestSignal, firstByteMs, firstChunkMs, stallMs, isProgress, retry, formats }, formats);
  const span = t === null ? undefined : streamSpan(t, firstChunkMs, stallMs, at, t0, firstByteMs);

  // The request's own child: it follows the deadline (and so the deadline's
  // parents), the caller's signal and a Request input's signal.
  const upstream = child([o.deadline, userSignal, requestSignal], Infinity);

  // The wait for headers: a child of the request, re-armed on the first-byte limit.
  let waitForHeaders;
  const headersLate = (t) => upstream.abort(new StreamStalled("first-byte", t - t0, 0, 0));
  const onFirstByteTimer = (c) => {
    const t = now();
    let delay;
    try {
      delay = core.firstByteWake(firstByteMs, t0, t);
    } catch (error) {
      return upstream.abort(error);
    }
    if (delay !== undefined) c.rearm(t + delay);
    else headersLate(t);
  };
  if (firstByteMs !== undefined) {
    if (firstByteDelay === undefined) headersLate(t0);
    else waitForHeaders = child([upstream], t0 + firstByteDelay, { onTime: onFirstByteTimer });
  }

  let response;
  try {
    // The budget is read here, as the request leaves: the upstream is told what is left now.
    // The default header goes only where it cannot turn the request into a
    // preflighted one (a browser's cross-origin request): `propagate` given sends it anyway.
    const send = o.propagate === undefined && crossOriginInBrowser(input) ? [] : formats;
    response = await fetch(input, { ...withBudgetHeaders(input, init, o.deadline, send), signal: upstream.signal });
  } catch (error) {
    upstream.dispose();
    // Some runtimes reject with their own AbortError: report our reason.
    const reason = upstream.aborted ? upstream.reason : error;
    if (span !== undefined) streamEnded(t, span, failure(reason, upstream), reason, 0, 0);
    throw reason;
  } finally {
    waitForHeaders?.dispose();
  }
  if (response.body === null) {
    upstream.dispose();
    if (span !== undefined) streamEnded(t, span, "closed", undefined, 0, 0);
    return response;
  }
  const progress = progressFor(isProgress, response.headers.get("content-type"));
  const body = wrap(response.body, { firstChunkMs, stallMs, at, controller: upstream, parents: [upstream], isProgress: progress, t, span }, () => upstream.dispose()).stream;
  const wrapped = new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  // A constructed Response has no url; keep the fetched one's.
  for (const key of ["url", "redirected", "type"]) {
    Object.defineProperty(wrapped, key, { value: response[key], enumerable: true });
  }
  return wrapped;
}

/**
 * `fetchWithDeadline` with `retry` (js/resume.js): attempts before content
 * are invisible, and the body resumes after a mid-stream failure where the
 * core says it can (`Last-Event-ID` on an event stream, else `resume`).
 * Resolves with the first answer that is read, or a non-ok answer that is
 * not retried, as it is.
 */
async function fetchResumable(input, init, o, options, formats) {
  // A Request's body can be read once: each attempt sends a copy.
  const template = typeof Request !== "undefined" && input instanceof Request ? input.clone() : undefined;
  const send = o.propagate === undefined && crossOriginInBrowser(input) ? [] : formats;
  const connect = (signal, info) => {
    const source = template === undefined ? input : template.clone();
    const i = { ...withBudgetHeaders(source, init, o.deadline, send), signal };
    if (info.lastEventId !== undefined) {
      i.headers = new Headers(i.headers ?? (template === undefined ? undefined : source.headers));
      i.headers.set("last-event-id", info.headers["last-event-id"]); // the id's UTF-8 bytes, as EventSource sends it
    }
    return fetch(source, i);
  };
  const r = resumable(connect, options);
  let head;
  try {
    head = await r.head();
  } catch (error) {
    r.close(error);
    throw error;
  }
  if (head.final) {
    r.close();
    return head.response;
  }
  const response = head.response;
  const body = new ReadableStream(
    {
      async pull(c) {
        let next;
        try {
          next = await r.read();
        } catch (error) {
          r.close(error);
          return c.error(error);
        }
        if (!next.done) return c.enqueue(next.value);
        r.close();
        c.close();
      },
      cancel: (reason) => r.close(reason),
    },
    { highWaterMark: 0 },
  );
  const wrapped = new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  for (const key of ["url", "redirected", "type"]) {
    Object.defineProperty(wrapped, key, { value: response[key], enumerable: true });
  }
  return wrapped;
}
