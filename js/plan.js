// Pipeline plans: one deadline split between named steps, the tail protected.
// Every cap and admission is the Wasm core's decision (src/core/plan.rs: see
// its module doc for the arithmetic and the hand-off margin); this file owns
// what only the host can do: the clock, one cancellation node per running
// step (js/timers.js `child`: a child of the deadline, woken at the cap on the
// deadline's root queue), and the trace.
//
// # Invariants
// 1. A step that is refused (optional: skipped; mandatory: InsufficientBudget)
//    never calls its function. A fallback step is never refused: with
//    nothing left (the caller's budget was below the reserve, the deadline
//    passed, the client left) it is called at once with an aborted signal
//    and a budget of 0, and `p.run` settles with whatever it returns: it can
//    answer only from what it has.
// 2. A running step's signal aborts at its cap or when the deadline's signal
//    aborts (its own instant or a parent's reason), whichever comes first;
//    `p.run` settles in that same turn, whether or not the function honours
//    the signal. So a step ends within the host's timer lateness after its
//    cap, which is what the plan's margin is held for. A cap before the
//    deadline's instant aborts with `StepTimeout { step, capMs }` (outcome
//    "timeout": the request still has time, e.g. for the fallback); a cap at
//    the instant (a fallback's, or a step given everything left) aborts with
//    `DeadlineExceeded` (outcome "deadline").
// 3. When `p.run` settles, its wake-up is cancelled; between runs a plan
//    holds no timer, no listener and no Wasm memory (the validated steps
//    come out of the core once, as data: `StepInfo`).
// 4. Every `p.run`, started or not, appends exactly one trace record and
//    calls `onStep` with it before the returned promise settles. The promise
//    settles with the step's own result whatever `onStep` does: an error
//    thrown by the hook goes to `onStepError(error, record)`, or to
//    `console.error` when there is none (a failing logger is a logging
//    problem, never the request's).
// 5. Once the deadline's signal has aborted, no further step starts but the
//    fallback (invariant 1). When a parent aborted it (the client left),
//    each other `p.run` records `aborted` and rejects with the parent's
//    reason, even for a step that would have been refused; when the
//    deadline's own instant passed, a step is refused as time dictates
//    (optional: skipped; mandatory: InsufficientBudget).
// 7. A step that fails with `StreamStalled` (itself or as a `cause`) is
//    recorded as `stalled`, not `error`: a stall is a timeout of its own kind.
// 6. A step's timer is unref'd, like every timer of the package, and never
//    outlives the step; awaiting `p.run` keeps a Node or Deno process alive
//    until it settles (js/keepalive.js), and nobody awaiting keeps nothing
//    alive. `p.run` uses `deadline.signal()`, so the deadline's owner
//    disposes it when the request ends.
// 8. With tracing on (js/otel.js), every `p.run` makes one step span, a
//    child of the plan's, ended with its record (the same outcome and
//    times); the plan's span ends once every step has run, its last step
//    has settled, its deadline is disposed, or at `end()`.
//    Off, a run reads `#tracing` once and nothing else.

import * as core from "./edge_deadline.js";
import { argumentError, brandOf, CODES, DeadlineExceeded, InsufficientBudget, StepTimeout, StreamStalled, inCauses, isCircuitOpen, isDeadlineExceeded, isStepTimeout, isStreamStalled } from "./errors.js";
import { ON_DISPOSE } from "./deadline.js";
import { awaited, pending } from "./keepalive.js";
import { isReady, notReady } from "./load.js";
import { tracing } from "./otel.js";
import { recorder } from "./record.js";
import { metric } from "./servertiming.js";
import { guard, isEventStream, publicReason, redacted } from "./stall.js";
import { child, now } from "./timers.js";
import * as check from "./validate.js";

const TOKEN = Symbol("Plan constructor");

/**
 * Plans `steps` inside `deadline`.
 * @param {import("./deadline.js").Deadline} deadline
 * @param {Array<{ name: string, minMs: number, preferredMs?: number, kind: "mandatory" | "optional" | "fallback", reserveMs?: number }>} steps
 * @param {{ onStep?: (record: TraceRecord) => void, onStepError?: (error: unknown, record: TraceRecord) => void, marginMs?: number, otel?: object | null }} [options]
 */
export function plan(deadline, steps, options) {
  if (!isReady()) notReady("plan");
  check.deadline("deadline", deadline);
  if (!Array.isArray(steps)) throw check.typeError("steps", "an array of steps", steps);
  const { onStep, onStepError, marginMs, otel } = check.obj("options", options, "an object like { onStep, onStepError, marginMs }", true);
  if (onStep !== undefined) check.fn("options.onStep", onStep);
  if (onStepError !== undefined) check.fn("options.onStepError", onStepError);
  check.optNumber("options.marginMs", marginMs);
  const t = tracing(otel);
  // Types here (Wasm cannot see them); every range, name and kind rule is the core's.
  for (let i = 0; i < steps.length; i++) {
    const s = check.obj(`steps[${i}]`, steps[i], "an object like { name, minMs, kind }");
    check.str(`steps[${i}].name`, s.name);
    check.str(`steps[${i}].kind`, s.kind, `one of "mandatory", "optional", "fallback"`);
    check.number(`steps[${i}].minMs`, s.minMs);
    check.optNumber(`steps[${i}].preferredMs`, s.preferredMs);
    check.optNumber(`steps[${i}].reserveMs`, s.reserveMs);
  }
  const t0 = now();
  const info = core.planNew(deadline.at, t0, steps, marginMs);
  return new Plan(TOKEN, deadline, info.steps, onStep, onStepError, t, t0);
}

/**
 * @typedef {{ step: string, remainingAtStartMs: number, capMs: number, elapsedMs: number,
 *   outcome: "ok" | "error" | "skipped" | "insufficient" | "deadline" | "aborted" | "timeout" | "stalled" }} TraceRecord
 */

/** JSON replacer: every number to 0.1 ms. */
function roundMs(key, value) {
  return typeof value === "number" ? Math.round(value * 10) / 10 : value;
}

/**
 * Whether `value` is what `p.run` resolves to for an optional step that did
 * not start: `{ skipped: true, reason }` (checked by shape, so it works
 * across two copies of the package).
 * @returns {value is { skipped: true, reason: string }}
 */
export function isSkipped(value) {
  // `in`, not the reason's type: reading it would make its text.
  return value != null && typeof value === "object" && value.skipped === true && "reason" in value;
}

/**
 * What `p.run` resolves to for a skipped step: `{ skipped: true, reason }`,
 * `reason` an own enumerable property whose text the core makes when it is
 * first read (then kept as a plain value). A skip is a normal outcome on the
 * request's path and most callers never read why: making the text at once
 * cost more per skip (BENCHMARKS.md, "Pipelines"). The core makes it from the
 * step's numbers at the instant its cap was `0` (core.skipReasonText).
 * @param {{ minMs: number, preferredMs?: number, heldAfterMs: number }} step
 * @param {number} at the plan's instant
 * @param {number} t0 the instant the step was refused at
 */
function skipped(step, at, t0) {
  return {
    skipped: /** @type {const} */ (true),
    get reason() {
      const reason = core.skipReasonText(step.minMs, step.preferredMs, step.heldAfterMs, at, t0) ?? "";
      Object.defineProperty(this, "reason", { value: reason, enumerable: true, writable: true, configurable: true });
      return reason;
    },
  };
}

export class Plan {
  #deadline;
  #at;
  /** The validated steps (`StepInfo` from core.planNew), in declaration order. */
  #steps;
  /** Per step: whether it is a fallback (the one kind distinction admission makes). */
  #fallback;
  #index = new Map();
  #onStep;
  #onStepError;
  #records = [];
  /**
   * Tracing (js/otel.js), or null when it is off; the plan's span (kept once
   * ended: a later step is still its child); whether it is open; the steps
   * run so far (tracing only).
   */
  #tracing;
  #span;
  #open = false;
  #ran;

  /** @private Use `plan(deadline, steps, options)`. */
  constructor(token, deadline, steps, onStep, onStepError, t = null, t0 = 0) {
    if (token !== TOKEN) throw argumentError("type", CODES.NOT_CONSTRUCTIBLE, undefined, "use plan(deadline, steps, options) to create a plan");
    this.#deadline = deadline;
    this.#at = deadline.at;
    this.#steps = steps;
    this.#fallback = steps.map((s) => s.kind === "fallback");
    steps.forEach((s, i) => this.#index.set(s.name, i));
    this.#onStep = onStep;
    this.#onStepError = onStepError;
    this.#tracing = t;
    if (t !== null) {
      this.#ran = new Set();
      this.#open = true;
      this.#span = t.start("deadline.plan", undefined, this.#at, t0, { "deadline.steps": steps.length });
      // The plan is over when its deadline is disposed (a deadline of another copy of the package has no hook).
      deadline[ON_DISPOSE]?.(() => this.end());
    }
  }

  /**
   * Ends the plan's span (when tracing is on; it also ends by itself once
   * every step has run). Safe to call more than once, and with tracing off.
   */
  end() {
    if (!this.#open) return;
    this.#open = false;
    this.#tracing.close(this.#span, now(), { "deadline.steps_run": this.#records.length });
  }

  /**
   * Runs the step `name`: `fn(signal, budgetMs)` with the step's cap, or not
   * at all (optional: resolves `{ skipped: true, reason }`; mandatory or
   * fallback: rejects with `InsufficientBudget`). With `options.circuit` (a
   * CircuitBreaker's `for(key)`), a step the breaker refuses is not run
   * either (optional: skipped with the refusal's message as its reason;
   * mandatory: rejects with `CircuitOpen`), and a step that runs tells the
   * breaker how it ended.
   */
  run(name, fn, options) {
    try {
      return this.#run(name, fn, options);
    } catch (error) {
      // A disposed deadline, a bad clock reading: a rejection, like every other failure.
      return Promise.reject(error);
    }
  }

  #run(name, fn, options) {
    const i = this.#index.get(name);
    if (i === undefined) return Promise.reject(this.#unknown(name));
    if (typeof fn !== "function") {
      return Promise.reject(argumentError("type", CODES.INVALID_TYPE, "fn", `'fn' of run('${name}') must be a function (signal, budgetMs) => Promise: current value is ${check.describe(fn)}`));
    }
    const circuit = options === undefined ? undefined : this.#circuit(name, i, options);
    const rec = recorder(options, name);
    const at = this.#at;
    const t0 = now();
    const s = this.#steps[i];
    const cap = core.planCap(this.#fallback[i], s.minMs, s.preferredMs, s.heldAfterMs, at, t0);
    const remaining = at > t0 ? at - t0 : 0;
    const parent = this.#deadline.signal(); // throws for a disposed deadline: before any span starts
    const t = this.#tracing;
    const span = t === null ? undefined : this.#stepSpan(t, s, cap, t0);
    // A departed client wins over any refusal (invariant 5); the deadline's
    // own expiry does not: a step refused for time is skipped or insufficient.
    const departed = parent.aborted && this.#reasonOutcome(parent.reason) === "aborted";
    // The fallback always runs (invariant 1); with nothing left, at once.
    if (this.#fallback[i] && (cap === 0 || parent.aborted)) return this.#runSpent(name, fn, t0, remaining, parent, span);
    if (cap === 0 && !departed) return this.#refuse(s, t0, remaining, span);
    if (parent.aborted) {
      return this.#settle(name, remaining, 0, t0, this.#reasonOutcome(parent.reason), parent.reason, false, span);
    }
    let permit;
    if (circuit !== undefined) {
      try {
        permit = circuit.acquire();
      } catch (error) {
        if (!isCircuitOpen(error)) throw error;
        if (s.kind === "optional") {
          return this.#settle(name, remaining, 0, t0, "skipped", { skipped: true, reason: core.circuitSkipText(error.retryInMs) }, true);
        }
        error.step = name;
        return this.#settle(name, remaining, 0, t0, "error", error, false);
      }
    }
    // Only a running step is pending: awaiting it keeps Node or Deno alive (invariant 6).
    return pending((resolve, reject) => {
      const capAt = t0 + cap;
      let settled = false;
      let step;
      const finish = (outcome, value, ok) => {
        if (settled) return;
        settled = true;
        step?.dispose();
        if (permit !== undefined) {
          try {
            tell(permit, outcome, value);
          } catch (error) {
            // The breaker's isFailure returned no boolean: its TypeError is the step's result.
            [outcome, value, ok] = ["error", error, false];
          }
        }
        this.#record(name, remaining, cap, t0, outcome, span, ok ? undefined : value);
        rec?.(outcome, now() - t0);
        if (ok) resolve(value);
        else reject(value);
      };
      // One node: aborted by the deadline's abort (its own instant or a
      // parent's reason), woken at the cap on the deadline's queue.
      step = child([this.#deadline], capAt, {
        onTime: (c) => {
          const t = now(); // ≥ capAt: a child never wakes early
          // The cap at the deadline's instant (to rounding) is the deadline; an earlier one is the step's own.
          const byDeadline = core.capIsDeadline(capAt, at);
          const reason = byDeadline ? new DeadlineExceeded(at, t > at ? t - at : 0) : new StepTimeout(name, cap);
          c.abort(reason);
          finish(byDeadline ? "deadline" : "timeout", reason, false);
        },
        onAbort: (reason) => finish(this.#reasonOutcome(reason), reason, false),
      });
      if (settled) return;
      let result;
      try {
        result = span === undefined ? fn(step.signal, cap) : t.within(span, fn, step.signal, cap);
      } catch (error) {
        return finish("error", error, false);
      }
      Promise.resolve(result).then(
        (value) => finish("ok", value, true),
        (error) => finish(failed(error), error, false),
      );
    });
  }

  /**
   * Runs the step `name` as the response: `run(signal, budgetMs)` gives a
   * Response, a ReadableStream (bytes or text, sent as they are) or an
   * iterable of events (each framed as one Server-Sent Event), and the
   * returned Response streams it, guarded by the step's cap and the stall
   * limits. A failure before any content is answered by the plan's fallback
   * step; after content, an event stream ends with `event: error`. With
   * `options.trace`, an event stream ends with `event: trace` carrying
   * `trace()`. The step's outcome and next turn are the core's
   * (`planStreamVerdict`). See plan.d.ts.
   * @returns {Promise<Response>}
   */
  stream(name, run, options) {
    return awaited(this.#stream(name, run, options));
  }

  async #stream(name, run, options) {
    const i = this.#index.get(name);
    if (i === undefined) throw this.#unknown(name);
    if (typeof run !== "function") {
      throw argumentError("type", CODES.INVALID_TYPE, "run", `'run' of stream('${name}') must be a function (signal, budgetMs) => Response | ReadableStream | iterable of events: current value is ${check.describe(run)}`);
    }
    const o = check.obj("options", options, "an object like { firstChunkMs, stallMs, trace, fallback }", true);
    const firstByteMs = check.optNumber("options.firstByteMs", o.firstByteMs);
    const firstChunkMs = o.firstChunkMs === undefined ? NO_LIMIT : check.number("options.firstChunkMs", o.firstChunkMs);
    const stallMs = o.stallMs === undefined ? NO_LIMIT : check.number("options.stallMs", o.stallMs);
    if (o.isProgress !== undefined) check.fn("options.isProgress", o.isProgress, "a function (chunk) => boolean");
    if (o.fallback !== undefined) check.fn("options.fallback", o.fallback, "a function (reason, signal, budgetMs) => Response");
    const onError = o.onError === undefined ? undefined : check.fn("options.onError", o.onError, "a function (error) => void");
    const withTrace = o.trace === undefined ? false : check.bool("options.trace", o.trace);
    const extra = o.headers === undefined ? undefined : new Headers(o.headers);
    const at = this.#at;
    const t0 = now();
    // Range checks before the step starts (the core names the parameter).
    core.stallWake(firstChunkMs, stallMs, undefined, t0, undefined, 0, 0, t0);
    if (firstByteMs !== undefined) core.firstByteWake(firstByteMs, t0, t0);
    const s = this.#steps[i];
    const cap = core.planCap(this.#fallback[i], s.minMs, s.preferredMs, s.heldAfterMs, at, t0);
    const remaining = at > t0 ? at - t0 : 0;
    const parent = this.#deadline.signal();
    const t = this.#tracing;
    const span = t === null ? undefined : this.#stepSpan(t, s, cap, t0);
    const fallback = (reason) => this.#streamFallback(i, reason, o.fallback, withTrace, t0, onError);

    // Not started: the client left, the step was refused, or nothing is left.
    if (parent.aborted || cap === 0) {
      let outcome;
      let reason;
      if (parent.aborted) [outcome, reason] = [this.#reasonOutcome(parent.reason), parent.reason];
      else if (s.kind !== "fallback") {
        const refusal = core.planRefusal(s.kind, s.minMs, s.preferredMs, s.heldAfterMs, at, t0);
        [outcome, reason] = [refusal.outcome, new InsufficientBudget(refusal.availableMs, refusal.minMs)];
        reason.step = name;
      } else [outcome, reason] = ["deadline", at <= t0 ? new DeadlineExceeded(at, t0 - at) : new StepTimeout(name, 0)];
      this.#record(name, remaining, 0, t0, outcome, span, reason);
      return fallback(reason);
    }

    const capAt = t0 + cap;
    // The cap at the deadline's instant (to rounding) is the deadline: asked once, when the cap fires or the stream ends.
    let capIsDeadline;
    const byDeadline = () => (capIsDeadline ??= core.capIsDeadline(capAt, at));
    let verdict;
    let sent = false;
    let firstChunkAt;
    let cancelled = false;
    let departed = false;
    let headersWait;
    // How the step ended, once: the core names it and says what comes next.
    const end = (error) => {
      if (verdict !== undefined) return verdict;
      node.dispose();
      headersWait?.dispose();
      const how = this.#streamEnd(node, error, cancelled, departed);
      verdict = {
        outcome: core.planStreamVerdict(how, sent, byDeadline(), false),
        next: core.planStreamVerdict(how, sent, byDeadline(), true),
        reason: node.aborted ? node.reason : error,
      };
      this.#record(name, remaining, cap, t0, verdict.outcome, span, verdict.outcome === "ok" ? undefined : verdict.reason, firstChunkAt === undefined ? undefined : firstChunkAt - t0);
      // The response is the request's last work: its end releases the deadline (the fallback's answer does otherwise).
      if (verdict.next !== "fallback") this.#deadline.dispose();
      return verdict;
    };
    // The step's one node: aborted by the deadline's signal, woken at the cap;
    // it is the controller the step's request and the stall guard abort.
    const node = child([this.#deadline], capAt, {
      onTime: (c) => {
        const tt = now();
        c.abort(byDeadline() ? new DeadlineExceeded(at, tt > at ? tt - at : 0) : new StepTimeout(name, cap));
        end();
      },
      onAbort: () => {
        departed = true;
        end();
      },
    });
    // The wait for the first byte: `firstByteMs`, else what `firstChunkMs` allows (from the start).
    const headersMs = firstByteMs ?? firstChunkMs;
    headersWait =
      headersMs < NO_LIMIT
        ? child([node], t0 + headersMs, { onTime: () => node.abort(new StreamStalled(firstByteMs === undefined ? "first-chunk" : "first-byte", now() - t0, 0, 0)) })
        : undefined;
    let reader;
    let badReturn;
    const early = [];
    let done = false;
    let type = "text/event-stream";
    let status = 200;
    try {
      const given = span === undefined ? run(node.signal, cap) : t.within(span, run, node.signal, cap);
      const result = await untilAborted(given, node);
      let body;
      if (check.looksLikeResponse(result)) {
        if (!result.ok) {
          result.body?.cancel().catch(noop);
          throw new Error(`the step answered ${result.status}${result.statusText ? ` ${result.statusText}` : ""}`);
        }
        [body, type, status] = [result.body ?? emptyStream(), result.headers.get("content-type"), result.status];
      } else if (isStream(result)) body = result;
      else if (result != null && typeof result !== "string" && (typeof result[Symbol.asyncIterator] === "function" || typeof result[Symbol.iterator] === "function")) {
        body = eventStream(result, name);
      } else {
        badReturn = argumentError("type", CODES.INVALID_RETURN, "run", `'run' of stream('${name}') must give a Response, a ReadableStream or an iterable of events: it gave ${check.describe(result)}`);
        throw badReturn;
      }
      headersWait?.dispose();
      const guarded = guard(body, { firstChunkMs, stallMs, controller: node, isProgress: o.isProgress, contentType: type }, firstByteMs === undefined ? t0 : undefined);
      reader = guarded.stream.getReader();
      // Commit on the first progress chunk: what came before it (keep-alives) is held until then.
      for (;;) {
        const next = await reader.read();
        if (next.done) {
          done = true;
          break;
        }
        early.push(bytes(next.value));
        if (guarded.progress() > 0) break;
      }
    } catch (error) {
      const v = end(error);
      if (error === badReturn) {
        this.#deadline.dispose();
        throw error; // a programming error, not a shortage
      }
      return fallback(v.reason);
    }
    if (verdict !== undefined && verdict.next === "fallback") {
      // Ended in the same turn as its first chunk arrived: nothing was sent yet.
      reader.cancel(verdict.reason).catch(noop);
      return fallback(verdict.reason);
    }
    sent = true;
    if (early.length > 0) firstChunkAt = now();
    if (done) end();
    let last = early[early.length - 1];
    const sse = isEventStream(type);
    const headers = new Headers({ "cache-control": "no-store" });
    if (type !== null) headers.set("content-type", type);
    extra?.forEach((value, key) => headers.set(key, value));
    const tail = (c) => {
      const v = verdict;
      if (v.next === "error") {
        report(onError, v.reason);
        if (!sse) return c.error(v.reason);
        const { code, reason } = publicReason(v.reason, true, false);
        const lastByte = last?.byteLength ? last[last.byteLength - 1] : undefined;
        c.enqueue(encoder.encode(core.sseErrorEvent(lastByte, JSON.stringify({ step: name, outcome: v.outcome, code, reason }))));
      }
      if (withTrace && sse) c.enqueue(encoder.encode(`event: trace\ndata: ${this.trace()}\n\n`));
      c.close();
    };
    return new Response(
      new ReadableStream({
        start(c) {
          for (const value of early) c.enqueue(value);
          if (done) tail(c);
        },
        async pull(c) {
          let next;
          try {
            next = await reader.read();
          } catch (error) {
            end(error);
            return tail(c);
          }
          if (next.done) {
            end();
            return tail(c);
          }
          const value = bytes(next.value);
          if (value?.byteLength) last = value;
          c.enqueue(value);
        },
        cancel(reason) {
          cancelled = true;
          end(reason);
          return reader.cancel(reason);
        },
      }),
      { status, headers },
    );
  }

  /**
   * How a streamed step ended, in the core's words (`StreamEnd`), from what
   * the host saw: the reader's cancel, the deadline's abort (its own
   * instant: the cap; a parent's reason: the client left), the node's abort
   * (the guard's stall, the cap, the source's error), or the step's own error.
   */
  #streamEnd(node, error, cancelled, departed) {
    if (cancelled) return "cancelled";
    if (!node.aborted) {
      if (error === undefined) return "done";
      return inCauses(error, isStreamStalled) ? "stalled" : "failed";
    }
    const reason = node.reason;
    if (isStreamStalled(reason)) return "stalled";
    if (isStepTimeout(reason) || (isDeadlineExceeded(reason) && reason.at === this.#at)) return "cap";
    return departed ? "parent" : "failed";
  }

  /**
   * The answer when a streamed step sent nothing: the plan's fallback step
   * (the first declared after it) runs `fallback(reason, signal, budgetMs)`,
   * or the default answer (504 for time, 502 for a failure, saying why);
   * with no fallback step in the plan, that answers at once.
   */
  async #streamFallback(i, reason, fallback, withTrace, t0, onError) {
    report(onError, reason);
    const answer = fallback ?? ((why) => defaultFallback(this.#steps[i].name, why, now() - t0));
    let j = i + 1;
    while (j < this.#steps.length && !this.#fallback[j]) j++;
    const response = (res) => {
      if (check.looksLikeResponse(res)) return res;
      throw argumentError("type", CODES.INVALID_RETURN, "options.fallback", `'options.fallback' of stream('${this.#steps[i].name}') must give a Response: it gave ${check.describe(res)}`);
    };
    let res;
    try {
      if (j < this.#steps.length) res = await this.run(this.#steps[j].name, async (signal, budgetMs) => response(await answer(reason, signal, budgetMs)));
      else {
        const left = this.#at - now();
        res = response(await answer(reason, this.#deadline.signal(), left > 0 ? left : 0));
      }
    } finally {
      this.#deadline.dispose(); // the answer is the request's last work
    }
    if (!withTrace) return res;
    const traced = new Response(res.body, res);
    traced.headers.set("server-timing", this.serverTiming());
    return traced;
  }

  /**
   * A fallback with nothing left: `fn` gets a signal already aborted (the
   * client's reason, the deadline's, or its own cap of 0 when a later step
   * holds what is left) and a budget of 0, and its own result settles `p.run`.
   */
  #runSpent(name, fn, t0, remaining, parent, span) {
    const at = this.#at;
    const reason = parent.aborted ? parent.reason : at <= t0 ? new DeadlineExceeded(at, t0 - at) : new StepTimeout(name, 0);
    const settle = (outcome, value, ok) => this.#settle(name, remaining, 0, t0, outcome, value, ok, span);
    let result;
    try {
      const signal = AbortSignal.abort(reason);
      result = span === undefined ? fn(signal, 0) : this.#tracing.within(span, fn, signal, 0);
    } catch (error) {
      return settle(failed(error), error, false);
    }
    return Promise.resolve(result).then(
      (value) => settle("ok", value, true),
      (error) => settle(failed(error), error, false),
    );
  }

  /**
   * The trace so far as JSON: an array of `{ step, remainingAtStartMs, capMs, elapsedMs, outcome }`,
   * durations rounded to 0.1 ms (a log line, read by people; `records` keeps the exact values).
   */
  trace() {
    return JSON.stringify(this.#records, roundMs);
  }

  /**
   * The trace as a `Server-Timing` header value: one metric per step run so
   * far, in order, with its duration and its outcome (and cap) as the
   * description, e.g. `retrieve;dur=41.2;desc="ok, cap 100 ms"`.
   */
  serverTiming() {
    return this.#records
      .map((r) => metric(r.step, r.elapsedMs, r.capMs > 0 ? `${r.outcome}, cap ${Math.round(r.capMs * 10) / 10} ms` : r.outcome))
      .join(", ");
  }

  /** The trace records so far (a copy). */
  get records() {
    return this.#records.slice();
  }

  /** The plan's deadline. */
  get deadline() {
    return this.#deadline;
  }

  /** The step names, in declaration order. */
  get steps() {
    return this.#steps.map((s) => s.name);
  }

  /** `options.circuit` of `p.run`, checked: a circuit, and never on the fallback (it always runs). */
  #circuit(name, i, options) {
    const o = check.obj("options", options, "an object like { circuit }");
    const circuit = o.circuit;
    if (circuit === undefined) return undefined;
    if (typeof circuit?.acquire !== "function") throw check.typeError("options.circuit", "a circuit from CircuitBreaker.for(key) (edge-deadline/derive)", circuit);
    if (this.#fallback[i]) {
      throw argumentError("type", CODES.INVALID_TYPE, "options.circuit", `'options.circuit' cannot guard the fallback step '${name}': a fallback always runs`);
    }
    return circuit;
  }

  // A DeadlineExceeded for this plan's own instant is the deadline; any other
  // reason came from a parent signal (the client left).
  #reasonOutcome(reason) {
    return isDeadlineExceeded(reason) && reason.at === this.#at ? "deadline" : "aborted";
  }

  /**
   * A step the core refused: an optional one is skipped (the common case, on
   * the request's path: no call of its own, the core's reason text is made
   * when first read, see `skipped`); a mandatory or fallback one gets
   * InsufficientBudget with the numbers of core.planRefusal.
   */
  #refuse(step, t0, remaining, span) {
    if (step.kind === "optional") {
      return this.#settle(step.name, remaining, 0, t0, "skipped", skipped(step, this.#at, t0), true, span);
    }
    const { outcome, availableMs, minMs } = core.planRefusal(step.kind, step.minMs, step.preferredMs, step.heldAfterMs, this.#at, t0);
    const error = new InsufficientBudget(availableMs, minMs);
    error.step = step.name;
    return this.#settle(step.name, remaining, 0, t0, outcome, error, false, span);
  }

  /** Records one step and settles its promise with the step's own result. */
  #settle(step, remaining, cap, t0, outcome, value, ok, span) {
    this.#record(step, remaining, cap, t0, outcome, span, ok ? undefined : value);
    return ok ? Promise.resolve(value) : Promise.reject(value);
  }

  /** A step's span, a child of the plan's (tracing on only). */
  #stepSpan(t, s, cap, t0) {
    return t.start(`deadline.step ${s.name}`, this.#span, this.#at, t0, { "deadline.step": s.name, "deadline.step.kind": s.kind, "deadline.cap_ms": cap });
  }

  /** Ends a step's span; the plan's ends when every step has run or its last step has settled. */
  #traced(span, record, t1, error) {
    this.#tracing.end(span, record.outcome, t1, redacted(error));
    this.#ran.add(record.step);
    if (this.#ran.size === this.#steps.length || record.step === this.#steps[this.#steps.length - 1].name) this.end();
  }

  /** Appends one record and calls `onStep`; what the hook throws goes to `onStepError` (invariant 4). */
  #record(step, remaining, cap, t0, outcome, span, error, firstChunkMs) {
    const t1 = now();
    const elapsed = t1 - t0;
    const record = { step, remainingAtStartMs: remaining, capMs: cap, elapsedMs: elapsed > 0 ? elapsed : 0, outcome };
    if (firstChunkMs !== undefined) record.firstChunkMs = firstChunkMs;
    this.#records.push(record);
    if (span !== undefined) this.#traced(span, record, t1, error);
    if (!this.#onStep) return;
    try {
      this.#onStep(record);
    } catch (thrown) {
      this.#hookFailed(thrown, record);
    }
  }

  #hookFailed(thrown, record) {
    if (!this.#onStepError) return void console.error(`edge-deadline: onStep threw for step '${record.step}'; the step's result is kept`, thrown);
    try {
      this.#onStepError(thrown, record);
    } catch (again) {
      console.error(`edge-deadline: onStepError threw for step '${record.step}'; the step's result is kept`, again);
    }
  }

  #unknown(name) {
    if (typeof name !== "string") return argumentError("type", CODES.INVALID_TYPE, "name", `'name' of run must be a step name (a string): current value is ${check.describe(name)}`);
    const names = this.steps;
    const known = names.length > 8 ? `${names.slice(0, 8).join(", ")}, …` : names.join(", ");
    return argumentError("range", "UNKNOWN_STEP", "name", `'name' must be a step of this plan (${known}): current value is ${check.describe(name)}`);
  }
}

/** Tells a circuit breaker's permit how its step ended (a step cut by time is a timeout; a client that left, cancelled). */
function tell(permit, outcome, value) {
  if (outcome === "ok") permit.success();
  else if (outcome === "error") permit.failure(value);
  else if (outcome === "aborted") permit.cancel();
  else permit.timeout();
}

/** The outcome of a step that failed: `stalled` when a `StreamStalled` is the error or in its causes, else `error`. */
function failed(error) {
  return inCauses(error, (e) => brandOf(e) === "StreamStalled") ? "stalled" : "error";
}

// ---- p.stream ----------------------------------------------------------------------------

const NO_LIMIT = Number.MAX_SAFE_INTEGER;
const encoder = new TextEncoder();
const noop = () => {};


function isStream(x) {
  return x != null && typeof x === "object" && typeof x.getReader === "function";
}

function emptyStream() {
  return new ReadableStream({ start: (c) => c.close() });
}


/** A chunk as bytes: a stream of text is sent as UTF-8. */
function bytes(chunk) {
  return typeof chunk === "string" ? encoder.encode(chunk) : chunk;
}

/** `given` (a value or a promise), or the node's abort reason as a rejection, whichever comes first. */
function untilAborted(given, node) {
  if (given == null || typeof given.then !== "function") return given;
  return new Promise((resolve, reject) => {
    const signal = node.signal;
    const onAbort = () => {
      reject(signal.reason);
      // A result that comes after all is not read: release it.
      Promise.resolve(given).then((late) => (check.looksLikeResponse(late) ? late.body : isStream(late) ? late : null)?.cancel(signal.reason).catch(noop), noop);
    };
    if (signal.aborted) return onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
    Promise.resolve(given).then(
      (value) => (signal.removeEventListener("abort", onAbort), resolve(value)),
      (error) => (signal.removeEventListener("abort", onAbort), reject(error)),
    );
  });
}

/** One Server-Sent Event: a string is its data; `{ data, event?, id?, retry? }` names its fields (data other than a string as JSON). */
function frame(item, name) {
  const bad = (what) =>
    argumentError("type", CODES.INVALID_RETURN, "run", `'run' of stream('${name}') must yield events: a string or { data, event?, id?, retry? }${what}: it yielded ${check.describe(item)}`);
  let data = item;
  let head = "";
  if (typeof item !== "string") {
    if (item === null || typeof item !== "object" || !("data" in item)) throw bad("");
    const { event, id, retry } = item;
    for (const [field, value] of [["event", event], ["id", id]]) {
      if (value === undefined) continue;
      if (typeof value !== "string" || /[\r\n\0]/.test(value)) throw bad(` ('${field}' a string on one line)`);
      head += `${field}: ${value}\n`;
    }
    if (retry !== undefined) {
      if (!Number.isSafeInteger(retry) || retry < 0) throw bad(" ('retry' a whole number of milliseconds)");
      head += `retry: ${retry}\n`;
    }
    data = typeof item.data === "string" ? item.data : JSON.stringify(item.data);
    if (data === undefined) throw bad(" ('data' a string or a JSON value)");
  }
  return `${head}data: ${data.split(/\r\n|\r|\n/).join("\ndata: ")}\n\n`;
}

/** An iterable of events as an SSE byte stream; `return()` on cancel ends the producer. */
function eventStream(iterable, name) {
  const it = typeof iterable[Symbol.asyncIterator] === "function" ? iterable[Symbol.asyncIterator]() : iterable[Symbol.iterator]();
  return new ReadableStream(
    {
      async pull(c) {
        const next = await it.next();
        if (next.done) return c.close();
        c.enqueue(encoder.encode(frame(next.value, name)));
      },
      async cancel() {
        await it.return?.();
      },
    },
    { highWaterMark: 0 },
  );
}

/** Hands the step's error to `options.onError`; what the hook throws is reported and changes nothing. */
function report(onError, error) {
  if (onError === undefined) return;
  try {
    onError(error);
  } catch (thrown) {
    console.error(thrown);
  }
}

/** The default fallback: our words and a code (`publicReason`, never the step's error), 504 when time ran out, 502 for a failure. */
function defaultFallback(step, reason, elapsedMs) {
  const { status, code, reason: words } = publicReason(reason, true, false);
  return new Response(JSON.stringify({ fallback: true, step, code, reason: words, elapsedMs: Math.round(elapsedMs) }), {
    status,
    headers: { "content-type": "application/json", "cache-control": "no-store" },
  });
}
