// Hono middleware: one deadline per request, set at the edge, with no glue in
// the handlers. `app.use(deadline({ budgetMs: 8_000, platform: "cloudflare-workers" }))`
// and every handler finds it at `c.get("deadline")` (and, through
// `runWithDeadline`, at `currentDeadline()`).
//
// Why a middleware: the deadline belongs to the request, not to a handler. It
// must be set before any handler runs (from everything in front of us: the
// platform's cap, the caller's propagation headers, the product's budget; the
// smallest wins), follow the client (the request's abort signal) and be
// released when the response is over. "Over" is when the body has been sent,
// not when the handler returns: a streamed body outlives the handler, so the
// deadline is disposed when that body ends, errors or is cancelled.
//
// # Invariants
// 1. Per request, exactly one Deadline is created and `dispose()`d exactly
//    once: when the response body is finished or cancelled, at once for a
//    response without a body or to a HEAD request (whose body Hono drops
//    unread), and when a later handler throws.
// 2. The deadline is never later than any of: now + budgetMs − reserve, the
//    platform's caps − reserve, the incoming headers' deadline − reserve.
// 3. The deadline's signal aborts with the request signal's reason when the
//    client leaves (where the host gives requests a signal), unless
//    `requestSignal: false`. (Deno.serve prints a notice the first time a
//    request's signal is read: it also aborts it after every successful
//    response, its legacy behaviour. That abort comes after we have disposed,
//    so it is harmless here; `requestSignal: false` or Deno's
//    `--unstable-no-legacy-abort` silences it.)
// 4. A malformed incoming header never fails the request (it is skipped);
//    only the server's own bad options throw (TypeError/RangeError), and
//    they throw when the middleware is created, not per request.
// 5. `Server-Timing` (when asked) is appended, never replaces the handler's.
//
// In Workers, Deno and Node the Wasm core loads at the first request (the
// `edge-deadline/hono` entry of those runtimes imports their main entry
// first); elsewhere call `await init()` from "edge-deadline" before it.

import { runWithDeadline } from "./context.js";
import { requestDeadline } from "./deadline.js";
// @ts-expect-error internal: not in the public request.d.ts
import { whenSent } from "./request.js";
import { argumentError, CODES } from "./errors.js";
import { deadlineHeaders } from "./headers.js";
import { metric } from "./servertiming.js";
import * as check from "./validate.js";

const PLATFORMS = ["cloudflare-workers", "deno-deploy", "vercel-edge", "custom"];

/**
 * @param {{ budgetMs?: number, platform?: string, plan?: string, caps?: object, fallbackReserveMs?: number,
 *   transitMs?: number, formats?: string | string[], serverTiming?: boolean }} [options]
 * @returns {(c: any, next: () => Promise<void>) => Promise<void>} a Hono middleware
 */
export function deadline(options) {
  const o = check.obj("options", options, "an object like { budgetMs, platform, fallbackReserveMs }", true);
  const budgetMs = o.budgetMs === undefined ? undefined : check.duration("options.budgetMs", o.budgetMs);
  if (o.platform !== undefined && !PLATFORMS.includes(o.platform)) {
    const message = `'options.platform' must be one of ${PLATFORMS.map((p) => `"${p}"`).join(", ")}: current value is ${check.describe(o.platform)}`;
    // A string that is not a platform is a wrong value; anything else a wrong type.
    const [kind, code] = typeof o.platform === "string" ? ["range", CODES.UNKNOWN_VALUE] : ["type", CODES.INVALID_TYPE];
    throw argumentError(kind, code, "options.platform", message);
  }
  if (budgetMs === undefined && (o.platform === undefined || o.platform === "custom") && o.caps === undefined) {
    throw argumentError("type", CODES.MISSING_OPTION, "options", `'options' of deadline ${check.NO_BOUND}`);
  }
  const reserveMs = o.fallbackReserveMs === undefined ? 0 : check.duration("options.fallbackReserveMs", o.fallbackReserveMs);
  const transitMs = o.transitMs === undefined ? 0 : check.duration("options.transitMs", o.transitMs);
  const formats = o.formats === undefined ? deadlineHeaders : headerNames(o.formats);
  const serverTiming = o.serverTiming === undefined ? false : check.bool("options.serverTiming", o.serverTiming);
  const linkRequest = o.requestSignal === undefined ? true : check.bool("options.requestSignal", o.requestSignal);
  const requestOptions = {
    ...(budgetMs !== undefined && { budgetMs }),
    ...(o.platform !== undefined && { platform: o.platform }),
    ...(o.plan !== undefined && { plan: o.plan }),
    ...(o.caps !== undefined && { caps: o.caps }),
    fallbackReserveMs: reserveMs,
    transitMs,
    formats,
    requestSignal: linkRequest,
  };

  return async function edgeDeadline(c, next) {
    const started = performance.now();
    const request = c.req.raw;
    // The earliest of the budget, the platform's caps, the caller's headers (which can only shorten
    // ours) and the client, less the fallback's reserve (invariant 2): Deadline.forRequest's fold.
    const { deadline: d, limit, source: header } = requestDeadline(request, undefined, requestOptions);
    const budget = d.remaining();
    // No budget, no wall-clock cap and no header: nothing but the client bounds it.
    const unbounded = header === null && budgetMs === undefined && budget > NO_BOUND_MS;
    const source = header ?? (limit === "budget" ? "product" : limit);
    c.set("deadline", d);

    let disposed = false;
    const dispose = () => {
      if (disposed) return;
      disposed = true;
      d.dispose();
    };
    try {
      await runWithDeadline(d, next);
    } catch (error) {
      dispose();
      throw error;
    }

    if (serverTiming) {
      const plan = c.get("plan");
      const steps = plan && typeof plan.serverTiming === "function" ? plan.serverTiming() : "";
      const desc = unbounded ? "no time bound: no budgetMs, no header, and the platform has no wall-clock limit" : `budget ${Math.floor(budget)} ms from ${source}, ${Math.floor(d.remaining())} ms left`;
      const own = metric("edge-deadline", performance.now() - started, desc);
      c.header("Server-Timing", steps ? `${own}, ${steps}` : own, { append: true });
    }
    const res = c.res;
    // HEAD: Hono runs the GET route and drops the body unread (never read, never
    // cancelled), so the response is over now; the body is left as it is.
    if (!res || res.body === null || request.method === "HEAD") return dispose();
    c.res = undefined; // replace, not merge: the new response carries every header already
    c.res = new Response(whenSent(res.body, dispose), { status: res.status, statusText: res.statusText, headers: res.headers });
  };
}

/** Beyond any real bound: what is left when no budget, cap or header bounds the request (2^52 ms in the core). */
const NO_BOUND_MS = 2 ** 51;

/** `formats`, checked when the middleware is created: header names this package reads. */
function headerNames(value) {
  const list = typeof value === "string" ? [value] : value;
  if (!Array.isArray(list) || list.length === 0 || list.some((f) => typeof f !== "string")) {
    throw check.typeError("options.formats", `a header name or a non-empty array of them (${deadlineHeaders.join(", ")})`, value);
  }
  const i = list.findIndex((f) => !deadlineHeaders.includes(f.toLowerCase()));
  if (i !== -1) {
    const param = typeof value === "string" ? "options.formats" : `options.formats[${i}]`;
    throw argumentError("range", CODES.UNKNOWN_VALUE, param, `'options.formats' must name headers of ${deadlineHeaders.join(", ")}: '${list[i]}' is not one`);
  }
  return list.map((f) => f.toLowerCase());
}
