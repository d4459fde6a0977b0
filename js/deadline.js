// Deadline: one absolute instant on the monotonic clock, set once at the edge
// and passed down. Validation and the deadline arithmetic are the Wasm
// core's (src/core/deadline.rs); this file owns what only the host can do:
// reading the clock, timers (and their rounding, a hot path kept in JS; see
// the README's Design), AbortControllers and listeners on parent signals.
//
// # Roots and the wake-ups derived from them
// `Deadline.in`/`at` (and the header and platform constructors) make a root;
// `reserve` and `min` derive from one. A deadline's signal is the signal of
// its child (js/timers.js `child`), and everything that hangs from a deadline
// (plan steps, retry and hedge attempts, stall timers: `child([deadline], …)`)
// joins that child's list and the root's wake-up queue: in workerd that queue
// has one host timer of the request that armed it first, which is the only
// timer the whole family holds.
//
// # Invariants
// 1. `at` never changes; derived deadlines (`reserve`, `min`) are new objects
//    sharing their root's queue and parents.
// 2. A deadline owns at most one child (one AbortController, at most one
//    pending wake-up in its root's queue), created lazily by the first
//    `signal()`; every later `signal()` returns the same AbortSignal.
// 3. The signal never aborts for time before `now() >= at` (js/timers.js
//    `clock`): the queue's invariant 3.
// 4. When a parent signal aborts, the deadline's signal aborts with the
//    parent's `reason`, in the same turn, then its children: the child's
//    invariants 3 and 4 (one listener per parent signal, shared).
// 5. After `dispose()` nothing of the deadline is pending: no wake-up, no
//    link, no child told (and, by the end of the turn, no listener on a
//    parent no other child links to). The deadline holds no Wasm memory at
//    any time (it is two numbers and some JS objects).
// 6. Timers never keep a Node or Deno process alive (whoever awaits the work
//    they bound keeps it alive: js/keepalive.js).
// 7. workerd: a signal asked for after its instant has passed is aborted by
//    then, even if the timer that should have fired died with an earlier
//    request (a deadline kept across requests: see README "Timers").

import * as core from "./edge_deadline.js";
import { CODES, DEADLINE_BRAND, DeadlineExceeded, argumentError } from "./errors.js";
import { awaited } from "./keepalive.js";
import { isReady, notReady } from "./load.js";
import { Child, IS_WORKERD, NODE, now, sharedQueue, turnQueue } from "./timers.js";
import * as check from "./validate.js";

/** The key of a Deadline's internal dispose hook (`deadline[ON_DISPOSE](f)`). */
export const ON_DISPOSE = Symbol("edge-deadline.onDispose");
import { deadline as checkDeadline, fn, isAbortSignal, number, typeError } from "./validate.js";
// @ts-expect-error internal: not in the public caps.d.ts
import { readLambdaCaps, readPlatformCaps } from "./caps.js";
// @ts-expect-error internal: not in the public headers.d.ts
import { readDeadlineHeaders } from "./headers.js";
// @ts-expect-error internal: not in the public request.d.ts
import { LIMITS, readRequest, whenSent } from "./request.js";

// `Deadline.in(ms, request.signal)` is what people write first: an AbortSignal
// in the options' place is the parent, never an object whose missing `signal`
// would silently leave the deadline unlinked.
function parentsFrom(options, where) {
  if (options === undefined) return EMPTY;
  if (isAbortSignal(options)) return [options];
  if (options === null || typeof options !== "object") {
    throw typeError("options", "an object like { signal } or an AbortSignal", options, where);
  }
  const { signal } = options;
  if (signal === undefined) return EMPTY;
  if (!isAbortSignal(signal)) throw typeError("options.signal", "an AbortSignal", signal, where);
  return [signal];
}

/** @type {readonly AbortSignal[]} */
const EMPTY = Object.freeze([]);
const TOKEN = Symbol("Deadline constructor");

/**
 * A deadline's child reached the instant: it aborts with `DeadlineExceeded` (no closure per deadline),
 * which names the limit when it is not the plain budget (`limit` of the child, set by `[NODE]()`).
 */
function expire(node) {
  node.abort(withLimit(new DeadlineExceeded(node.at, now() - node.at), node.limit));
}

/** `error` with `limit` set, unless the limit is the plain "budget". */
function withLimit(error, limit) {
  if (limit !== undefined && limit !== "budget") error.limit = limit;
  return error;
}

export class Deadline {
  #at;
  #parents;
  /** @type {Deadline} */
  #root;
  #queue = null; // the root's only: the wake-up queue of the whole family
  /** @type {import("./timers.js").Child | null} */
  #node = null; // the deadline's child (js/timers.js), made by the first signal()
  #disposed = false;
  /** Internal: what to call once when disposed (`[ON_DISPOSE]`), or null. @type {(() => void)[] | null} */
  #onDispose = null;
  #reserveMs = 0; // what `reserve` held back from the parent (0 for any other deadline)
  #parentAt = 0; // the parent's instant, for a deadline made by `reserve`
  #limit = "budget"; // what set the instant (src/core/request.rs `Limit`)

  /** Internal (the token refuses other callers): use `Deadline.in`, `Deadline.at` or a derivation. */
  constructor(token, at, parents, root, limit, reserveMs, parentAt) {
    if (token !== TOKEN) {
      throw argumentError("type", CODES.NOT_CONSTRUCTIBLE, undefined, "use Deadline.in(ms) or Deadline.at(instantMs) to create a deadline");
    }
    this.#at = at;
    this.#parents = parents;
    this.#root = root ?? this;
    if (limit !== undefined) this.#limit = limit;
    if (reserveMs > 0) (this.#reserveMs = reserveMs), (this.#parentAt = parentAt);
  }

  /** A deadline `ms` from now on the `performance.now()` timeline. */
  static in(ms, options) {
    if (!isReady()) notReady("Deadline.in");
    number("ms", ms);
    return new Deadline(TOKEN, core.deadlineIn(now(), ms), parentsFrom(options, "Deadline.in"));
  }

  /** A deadline at the absolute `instantMs` on the `performance.now()` timeline. */
  static at(instantMs, options) {
    if (!isReady()) notReady("Deadline.at");
    number("instantMs", instantMs);
    return new Deadline(TOKEN, core.checkInstant(instantMs), parentsFrom(options, "Deadline.at"));
  }

  /**
   * The deadline a request's propagation headers ask for (`grpc-timeout`,
   * `connect-timeout-ms`, `x-envoy-expected-rq-timeout-ms`,
   * `edge-deadline-remaining-ms`), less `transitMs`, never later than `maxMs`
   * from now. See `deadlineFromHeaders` and js/headers.js.
   */
  static fromHeaders(headers, options) {
    return deadlineFromHeaders(headers, options).deadline;
  }

  /**
   * `now + min(every cap in front: the platform's, the product's) − fallbackReserveMs`.
   * See `platformDeadline`, js/caps.js and src/core/caps.rs.
   */
  static forPlatform(options) {
    return platformDeadline(options).deadline;
  }

  /**
   * The deadline of one AWS Lambda invocation: `now + min(context.getRemainingTimeInMillis(), productMs) −
   * fallbackReserveMs` (`productMs` optional); `limit` is "platform" when the invocation's time bound it.
   * Spent or below the reserve: an expired deadline, not an error. Run the handler inside
   * `runWithDeadline(deadline, …)`: each invocation keeps its own, also when many share a process.
   */
  static forLambda(context, options) {
    const { at, signal, bound } = readLambdaCaps(context, options);
    return new Deadline(TOKEN, at, signal ? [signal] : EMPTY, undefined, bound === "product" ? "budget" : "platform");
  }

  /**
   * The deadline of an incoming request: the earliest of the budget, the platform's caps, the caller's
   * propagation headers (clamped: a caller shortens, never extends) and the client (`request.signal`,
   * where the runtime has one), less `fallbackReserveMs`; `limit` says which. `ctx`: the handler's
   * context, or undefined; Deno's `info` (with `completed`) disposes the deadline when the response is done.
   */
  static forRequest(request, ctx, options) {
    return requestDeadline(request, ctx, options).deadline;
  }


  /**
   * A deadline sent by `toWire()` (over Workers RPC, a queue, JSON), capped like an incoming header:
   * never later than `maxMs` from now, less `transitMs`. A spent one is expired, not an error.
   */
  static fromWire(wire, options) {
    if (!isReady()) notReady("Deadline.fromWire");
    const o = check.obj("options", options, "an object like { maxMs }");
    const maxMs = check.duration("options.maxMs", o.maxMs);
    const transitMs = o.transitMs === undefined ? 0 : check.duration("options.transitMs", o.transitMs);
    const parents = parentsFrom(o.signal === undefined ? undefined : { signal: o.signal }, "Deadline.fromWire");
    const w = check.obj("wire", wire, "the object toWire() returns");
    check.duration("wire.remainingMs", w.remainingMs);
    check.duration("wire.reserveMs", w.reserveMs);
    const caller = typeof w.limit === "string" && LIMITS.includes(w.limit) ? core.Limit[/** @type {keyof typeof core.Limit} */ (w.limit)] : undefined;
    if (caller === undefined) throw argumentError("range", CODES.UNKNOWN_VALUE, "wire.limit", `'wire.limit' must be one of ${LIMITS}: current value is ${check.describe(w.limit)}`);
    // The receiver's own cap is the local bound; the wire is the caller's, with its own limit (src/core/request.rs).
    const t = now();
    const [at, , limit] = core.requestFold(t, core.deadlineIn(t, maxMs), true, w.remainingMs, transitMs, caller, false, 0);
    return new Deadline(TOKEN, at, parents, undefined, core.Limit[limit], w.reserveMs, at);
  }

  /**
   * The earliest of the given deadlines; the result links every parent signal.
   * A Deadline of another copy of the package counts too: its signal is then
   * the parent (its family's queue is that copy's).
   */
  static min(...deadlines) {
    if (deadlines.length === 0) {
      throw argumentError("type", CODES.INVALID_TYPE, "deadlines", "Deadline.min needs at least one Deadline");
    }
    /** @type {any} */
    let best;
    let bestAt = Infinity;
    const parents = new Set();
    deadlines.forEach((d, i) => {
      checkDeadline(`deadlines[${i}]`, d, "Deadline.min");
      const own = #at in d;
      const at = own ? d.#at : d.at;
      if (best === undefined || at < bestAt) (best = d), (bestAt = at);
      if (own) for (const p of d.#parents) parents.add(p);
      else parents.add(d.signal());
    });
    const root = #at in best ? best.#root : undefined;
    return new Deadline(TOKEN, bestAt, parents.size ? [...parents] : EMPTY, root, best.limit);
  }

  /** The earlier of this deadline and `other`. */
  min(other) {
    return Deadline.min(this, checkDeadline("other", other, "min"));
  }

  /** The instant, in ms on the `performance.now()` timeline. */
  get at() {
    return this.#at;
  }

  /**
   * What set the instant: "budget", "platform", "caller", "background"; "client" once a signal it
   * follows has aborted (for `forRequest`, the request's: the client left).
   */
  get limit() {
    for (const parent of this.#parents) if (parent.aborted) return "client";
    return this.#limit;
  }

  /** The deadline as plain data for another Worker (`Deadline.fromWire`): `{ remainingMs, reserveMs, limit }`. */
  toWire() {
    const limit = this.limit;
    // Rounded down, like a header: rounding never extends it (src/core/request.rs `to_wire`).
    return { remainingMs: Math.floor(this.remaining()), reserveMs: this.#reserveMs, limit };
  }

  /** Milliseconds left, never negative. */
  remaining() {
    const left = this.#at - now();
    return left > 0 ? left : 0;
  }

  /** True once the instant has passed (parent aborts do not count: see `signal().aborted`). */
  expired() {
    return now() >= this.#at;
  }

  /**
   * Throws `DeadlineExceeded` (the error the signal aborts with) once the instant has passed, else
   * returns: the check for CPU-bound loops, where no timer can fire and the signal never aborts.
   * Reads the clock and compares, nothing more (bench/deadline.bench.mjs). Parent aborts do not
   * count, as for `expired()`.
   */
  checkpoint() {
    if (now() >= this.#at) throw this.#passedReason();
  }

  /** A new deadline `ms` earlier, keeping this one's parents: time held back for later work. */
  reserve(ms) {
    number("ms", ms);
    return new Deadline(TOKEN, core.reserve(this.#at, ms), this.#parents, this.#root, this.#limit, ms, this.#at);
  }

  /**
   * `min(preferredMs, remaining())`; throws `DeadlineExceeded` when nothing is
   * left, and a departed parent's reason once a parent signal has aborted.
   */
  budget(preferredMs) {
    number("preferredMs", preferredMs);
    this.#throwIfParentAborted();
    return core.budget(this.#at, now(), preferredMs);
  }

  /**
   * Runs `run(signal, budgetMs)` if at least `minMs` is left; otherwise rejects
   * with `InsufficientBudget` and never calls `run`. Once a parent signal has
   * aborted (the client left), rejects with its reason and never calls `run`.
   * Awaiting it keeps a Node or Deno process alive until it settles (js/keepalive.js).
   */
  step(minMs, run) {
    return awaited(this.#step(minMs, run));
  }

  async #step(minMs, run) {
    number("minMs", minMs);
    fn("run", run, "a function (signal, budgetMs) => Promise");
    this.#throwIfParentAborted();
    const budgetMs = core.admit(this.#at, now(), minMs);
    return run(this.signal(), budgetMs);
  }

  // The client left: no budget, no new work, whatever the clock says.
  #throwIfParentAborted() {
    for (const parent of this.#parents) if (parent.aborted) throw parent.reason;
  }

  /** The deadline's AbortSignal: one per deadline, one wake-up behind it. */
  signal() {
    const node = this.#node;
    if (node !== null) {
      // Invariant 7: a wake-up still pending after its instant may have died with another request.
      if (IS_WORKERD && node.index >= 0 && this.#at <= now()) expire(node);
      return node.signal;
    }
    if (this.#disposed) throw new Error("this deadline was disposed; create a new one (or call signal() before dispose)");
    return this[NODE]().signal;
  }

  /** Internal: the deadline's child (js/timers.js `child`): what derived work hangs from. */
  [NODE]() {
    let node = this.#node;
    if (node !== null) return node;
    // Timer arithmetic stays in JS: this runs on every fresh signal(), where a
    // Wasm call costs more than the arithmetic (BENCHMARKS.md, "Deadlines", the "design:" rows).
    const at = this.#at;
    const passed = at <= now();
    node = this.#node = new Child(passed ? Infinity : at, expire, undefined);
    /** @type {any} */ (node).limit = this.#limit; // read by `expire`
    node.start(this.#parents, this.#queueOf());
    if (passed) node.abort(this.#passedReason());
    return node;
  }

  /**
   * Why a signal asked for after the instant is aborted. A reserved deadline
   * says what was left of its parent, below the reserve: a caller whose budget
   * (50 ms) is below the fallback's reserve (300 ms) learns that, not that a
   * request "passed 250 ms ago" that was never made.
   */
  #passedReason() {
    const t = now();
    const reserveMs = this.#reserveMs;
    if (reserveMs === 0) return withLimit(new DeadlineExceeded(this.#at, t - this.#at), this.#limit);
    const left = this.#parentAt - t; // not at + reserveMs: an instant is clamped at 0
    return withLimit(new DeadlineExceeded(this.#at, t - this.#at, { budgetMs: left > 0 ? left : 0, reserveMs }), this.#limit);
  }

  /** The root's queue, chosen when the family first arms (js/timers.js `turnQueue`). */
  #queueOf() {
    if (!IS_WORKERD) return sharedQueue;
    const root = this.#root;
    return root.#queue ?? (root.#queue = turnQueue());
  }

  /** Clears the wake-up and parent links. The signal, if any, stays as it is. */
  dispose() {
    this.#disposed = true;
    if (this.#node !== null) this.#node.dispose();
    const hooks = this.#onDispose;
    if (hooks !== null) {
      this.#onDispose = null;
      for (const f of hooks) f();
    }
  }

  /**
   * Internal (js/plan.js: a plan's span ends when its deadline is disposed):
   * calls `f()` once, when the deadline is disposed.
   * @param {() => void} f
   */
  [ON_DISPOSE](f) {
    (this.#onDispose ??= []).push(f);
  }

  /** Readable in logs: `Deadline(in 812.3 ms)`. */
  toString() {
    const left = this.#at - now();
    return left > 0 ? `Deadline(in ${left.toFixed(1)} ms)` : `Deadline(passed ${(-left).toFixed(1)} ms ago)`;
  }
}

// The brand: "is this a Deadline" across copies of the package (js/errors.js `isDeadline`).
Object.defineProperty(Deadline.prototype, DEADLINE_BRAND, { value: true });

if (typeof Symbol.dispose === "symbol") {
  Deadline.prototype[Symbol.dispose] = Deadline.prototype.dispose;
}

/**
 * The deadline of `Deadline.fromHeaders`, with what set it:
 * `{ deadline, source, rejected }` (js/headers.js `readDeadlineHeaders`).
 * @param {Headers | Record<string, string | string[] | undefined>} headers
 * @param {{ maxMs: number, transitMs?: number, formats?: string | string[], invalid?: "throw" | "ignore", signal?: AbortSignal }} options
 */
export function deadlineFromHeaders(headers, options) {
  const { at, signal, ...found } = readDeadlineHeaders(headers, options);
  return { deadline: new Deadline(TOKEN, at, signal ? [signal] : EMPTY, undefined, found.source === null ? "budget" : "caller"), ...found };
}

/**
 * The deadline of `Deadline.forRequest`, with what set it: `{ deadline, limit, source, rejected }`
 * (js/request.js `readRequest`; `source`: the header that set it, or null).
 */
export function requestDeadline(request, ctx, options) {
  const { at, limitAt, reserveMs, limit, signal, ...found } = readRequest(request, options);
  const deadline = new Deadline(TOKEN, at, signal ? [signal] : EMPTY, undefined, limit, reserveMs, limitAt);
  // Bun.serve hands its handler the server as the second argument: its idle cap (10 s without a byte)
  // would cut a longer deadline, so it is raised for this request (src/core/caps.rs, serve_idle_seconds).
  if (typeof ctx?.timeout === "function" && typeof ctx?.requestIP === "function") {
    const seconds = core.serveIdleSeconds(at - now());
    if (seconds !== undefined) ctx.timeout(request, seconds);
  }
  const done = ctx?.completed;
  if (typeof done?.then === "function") done.then(() => deadline.dispose(), () => deadline.dispose());
  return { deadline, limit, ...found };
}

/**
 * The deadline of `Deadline.forPlatform`, with the cap that bound it:
 * `{ deadline, bound, cpuMs, sources }` (js/caps.js `readPlatformCaps`).
 */
export function platformDeadline(options) {
  const { at, signal, ...found } = readPlatformCaps(options);
  return { deadline: new Deadline(TOKEN, at, signal ? [signal] : EMPTY, undefined, found.bound === "product" ? "budget" : "platform"), ...found };
}

/** The launch-boundary arithmetic: `max(0, deadlineMs − nowMs − reserveMs)`. */
export function generationBudget(deadlineMs, nowMs, reserveMs) {
  if (!isReady()) notReady("generationBudget");
  number("deadlineMs", deadlineMs);
  number("nowMs", nowMs);
  number("reserveMs", reserveMs);
  return core.generationBudget(deadlineMs, nowMs, reserveMs);
}

/**
 * Runs `work(deadline)` after `response` has been sent (its body read to the end, or cancelled when the
 * client left; at once for a response without a body), inside `ctx.waitUntil`, under a deadline that ends
 * `marginMs` (default 1000) before the platform's cap on work after the response (Workers: 30 s), so the
 * work is cut by its signal, with a `DeadlineExceeded` whose `limit` is "background", rather than killed.
 * Returns the response to answer with. `options`: `{ platform, plan, caps, marginMs, budgetMs }`.
 */
export function afterResponse(ctx, response, work, options) {
  if (!isReady()) notReady("afterResponse");
  const c = check.obj("ctx", ctx, "the handler's context, with waitUntil");
  fn("ctx.waitUntil", c.waitUntil, "a function (Workers' ctx.waitUntil)");
  if (!(response instanceof Response)) throw typeError("response", "a Response", response, "afterResponse");
  fn("work", work, "a function (deadline) => Promise");
  const o = check.obj("options", options, "an object like { marginMs }", true);
  const platform = o.platform ?? "cloudflare-workers";
  const request = {
    platform,
    ...(platform !== "custom" && { trigger: "wait-until" }),
    ...(o.plan !== undefined && { plan: o.plan }),
    ...(o.caps !== undefined && { caps: o.caps }),
    productMs: o.budgetMs === undefined ? 2 ** 52 : check.duration("options.budgetMs", o.budgetMs),
    fallbackReserveMs: o.marginMs === undefined ? 1_000 : check.duration("options.marginMs", o.marginMs),
  };
  readPlatformCaps(request); // bad options throw now, not after the response
  /** @type {(value?: any) => void} */
  let sent = () => {};
  const started = new Promise((resolve) => (sent = resolve));
  const done = started.then(() => {
    const d = new Deadline(TOKEN, readPlatformCaps(request).at, EMPTY, undefined, "background");
    const signal = d.signal();
    const cut = new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
    return Promise.race([Promise.resolve().then(() => work(d)), cut]).then(
      () => d.dispose(),
      (error) => {
        d.dispose();
        if (error !== signal.reason) throw error;
      },
    );
  });
  c.waitUntil(done);
  if (response.body === null) {
    sent();
    return response;
  }
  return new Response(whenSent(response.body, sent), response);
}
