// The deadline of a request, and of the work after its response. Which limit
// wins (budget, platform cap, caller's header, a client already gone) and the
// wire form are the Wasm core's (src/core/request.rs); this file gathers the
// inputs (the clock, the request's headers and signal) and watches a
// response's body to tell when it has been sent. It never builds a Deadline
// (js/deadline.js does), so the two do not import each other.
//
// # Invariants
// 1. The request's signal is a parent of the deadline only where the runtime
//    gives requests one, and only unless `requestSignal: false`.
// 2. A malformed header never fails the request (it is skipped and reported);
//    only the server's own bad options throw (TypeError/RangeError).
// 3. Nothing here holds a timer or a listener, except `whenSent`'s body
//    watcher, which ends with the body (read to the end, errored or cancelled).

import * as core from "./edge_deadline.js";
import { argumentError, CODES } from "./errors.js";
import { isReady, notReady } from "./load.js";
import { now } from "./timers.js";
import * as check from "./validate.js";
// @ts-expect-error internal: not in the public caps.d.ts
import { readPlatformCaps } from "./caps.js";
// @ts-expect-error internal: not in the public headers.d.ts
import { readDeadlineHeaders } from "./headers.js";

/**
 * The limits' names, as the core's `Limit` enum names them (src/wasm/request.rs): a limit crosses the
 * `.wasm` boundary as a `core.Limit` number, `core.Limit[n]` its name. The request case checks every name.
 */
export const LIMITS = Object.keys(core.Limit).filter((name) => typeof core.Limit[name] === "number");

/**
 * The instant of `Deadline.forRequest` and what set it:
 * `{ at, limitAt, limit, signal, source, rejected }` (`source`: the header name or `null`).
 */
export function readRequest(request, options) {
  if (!isReady()) notReady("Deadline.forRequest");
  const req = check.obj("request", request, "a Request");
  const o = check.obj("options", options, "an object like { budgetMs }");
  const link = o.requestSignal === undefined ? true : check.bool("options.requestSignal", o.requestSignal);
  const signal = link && check.isAbortSignal(req.signal) ? req.signal : undefined;
  const budgetMs = o.budgetMs === undefined ? undefined : check.duration("options.budgetMs", o.budgetMs);
  const platform = o.platform ?? "custom";
  if (budgetMs === undefined && platform === "custom" && o.caps === undefined) {
    throw argumentError("type", CODES.MISSING_OPTION, "options", `'options' ${check.NO_BOUND}`);
  }
  // The local bound (the budget or the platform's caps), then the caller's headers clamped to it, then
  // which limit wins (src/core/request.rs `for_request` composes the same three steps).
  const local = readPlatformCaps({ platform, plan: o.plan, caps: o.caps, productMs: budgetMs ?? 2 ** 52, fallbackReserveMs: 0 });
  const { at: callerAt, source, rejected } = readDeadlineHeaders(req.headers, { maxMs: local.at - now(), transitMs: o.transitMs, formats: o.formats });
  const t = now();
  const reserveMs = o.fallbackReserveMs ?? 0;
  // The headers were read at an earlier clock reading: a spent caller's instant may be a tick before `t` (0 left, not −1).
  const callerMs = source === null ? undefined : callerAt > t ? callerAt - t : 0;
  const [at, limitAt, code] = core.requestFold(t, local.at, local.bound === "product" && budgetMs !== undefined, callerMs, 0, core.Limit.caller, signal?.aborted === true, reserveMs);
  return { at, limitAt, reserveMs, limit: core.Limit[code], signal, source, rejected };
}

/**
 * `body` with `sent()` called once when it has been read to its end, errored
 * or been cancelled (the client left): when the response is over.
 */
export function whenSent(body, sent) {
  const reader = body.getReader();
  return new ReadableStream({
    async pull(controller) {
      let next;
      try {
        next = await reader.read();
      } catch (error) {
        sent();
        throw error;
      }
      if (next.done) {
        controller.close();
        sent();
      } else controller.enqueue(next.value);
    },
    cancel(reason) {
      sent();
      return reader.cancel(reason);
    },
  });
}
