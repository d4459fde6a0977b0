// Retries and hedging inside one deadline. Whether to attempt, each attempt's
// timeout, the backoff delay (seeded jitter), the idempotency rule and the
// retry budget's accounting are the Wasm core's (src/core/retry.rs: see its
// module doc); this file owns the attempts' signals and timers, the abortable
// backoff sleep, and hedging (which has no arithmetic beyond "time is left").
//
// # Invariants
// 1. Every attempt gets its own AbortSignal, aborted at the attempt's timeout
//    (min(attemptTimeoutMs, remaining), the core's), by the deadline, or by
//    `options.signal`. The attempt settles in that same turn even if `fn`
//    ignores its signal.
// 2. The backoff sleep wakes early when the deadline's signal or
//    `options.signal` aborts; after it, the core decides again from the clock
//    (the sleep may have overrun), and no attempt starts with less than
//    `attemptMinMs` left. A backoff that would leave less is not slept.
// 3. When `retry` or `hedge` settles, every timer it armed is cleared and
//    every listener it added is removed; the core's retry loop (Wasm memory)
//    is freed in a `finally`.
// 4. A failure carries every attempt's outcome (`RetryFailed.attempts`).
// 5. `hedge`: the first attempt to resolve wins and every other attempt in
//    flight is aborted at once; none starts after the deadline's signal has
//    aborted.
// 6. Attempt, backoff and hedge timers are unref'd, like every timer of the
//    package; awaiting `retry` or `hedge` keeps a Node or Deno process alive
//    until it settles (js/keepalive.js), and nobody awaiting keeps nothing
//    alive.
// 7. What `classify` returns is checked in JS before it reaches the core: a
//    TypeError naming the callback, never a trap of the Wasm instance.
//
// # Per-attempt timeouts
// An attempt cut at its own timeout aborts its signal with `AttemptTimeout`
// (the per-attempt counterpart of a plan step's `StepTimeout`): the attempt
// ended, the deadline did not. It is recorded as outcome "timeout", counts as
// an ambiguous failure, and the loop carries on; `retry` and `hedge` reject
// only with `RetryFailed`, whose `reason` is "deadline" only when the
// deadline itself ended the loop.

import * as core from "./edge_deadline.js";
import { brand, isDeadlineExceeded } from "./errors.js";
import { awaited, pending } from "./keepalive.js";
import { isReady, notReady } from "./load.js";
import { unwatch, watch } from "./deadline.js";
import * as check from "./validate.js";

const now = () => performance.now();
const BRAND = "edgeDeadlineError";
const FAILURES = ["ok", "ambiguous", "not-applied", "permanent"];

/**
 * No further attempt will be made. `reason` says why (the core's stop codes,
 * plus "deadline" and "aborted" when a signal ended the loop); `attempts`
 * holds every attempt's outcome, oldest first; `cause` is the last error.
 */
export class RetryFailed extends Error {
  constructor(reason, message, attempts, options) {
    super(message, options);
    brand(this, "RetryFailed");
    this.reason = reason;
    this.attempts = attempts;
  }
}

/** Brand check that works across two copies of the package and workerd's cloned abort reasons. */
export function isRetryFailed(e) {
  return e != null && e[BRAND] === "RetryFailed";
}

function failed(reason, message, attempts) {
  const last = attempts[attempts.length - 1];
  const n = attempts.length;
  return new RetryFailed(reason, `retry stopped after ${n} attempt${n === 1 ? "" : "s"}: ${message}`, attempts, last ? { cause: last.error } : undefined);
}

function randomSeed() {
  return crypto.getRandomValues(new BigUint64Array(1))[0];
}

function seedFrom(seed) {
  if (seed === undefined) return randomSeed();
  if (typeof seed === "bigint") {
    if (seed < 0n || seed >= 1n << 64n) throw new RangeError(`'options.seed' must be between 0 and 2^64 − 1: current value is ${seed}`);
    return seed;
  }
  check.number("options.seed", seed, "a number or a BigInt");
  if (!Number.isSafeInteger(seed) || seed < 0) {
    throw new RangeError(`'options.seed' must be a whole number between 0 and 2^53 − 1: current value is ${seed}`);
  }
  return BigInt(seed);
}

// ---- the retry budget ---------------------------------------------------------

let budgetCore;

/**
 * A retry allowance shared across calls (Finagle / Envoy style): in any
 * `windowMs`, retries are allowed while `retries ≤ ratio × requests +
 * minPerSecond × windowMs / 1000`. Holds a little Wasm memory: `dispose()`
 * frees it (a budget normally lives as long as the service).
 */
export class RetryBudget {
  /** @type {core.RetryBudgetCore | undefined} undefined once disposed */
  #core;

  static {
    budgetCore = (b) => {
      if (!b.#core) throw new Error("this RetryBudget was disposed; create a new one");
      return b.#core;
    };
  }

  /** @param {{ ratio?: number, minPerSecond?: number, windowMs?: number }} [options] defaults 0.2, 10, 10 000 (Finagle's) */
  constructor(options) {
    if (!isReady()) notReady("new RetryBudget");
    const { ratio = 0.2, minPerSecond = 10, windowMs = 10_000 } = check.obj("options", options, "an object like { ratio, minPerSecond, windowMs }", true);
    check.number("options.ratio", ratio, "a number between 0 and 1");
    check.number("options.minPerSecond", minPerSecond, "a number of retries per second");
    check.number("options.windowMs", windowMs);
    this.#core = new core.RetryBudgetCore(ratio, minPerSecond, windowMs);
  }

  /** `{ requests, retries, floor }` in the window ending now. */
  counts() {
    const [requests, retries, floor] = budgetCore(this).counts(now());
    return { requests, retries, floor };
  }

  /** Frees the budget's Wasm memory. Retries using it afterwards throw. */
  dispose() {
    this.#core?.free();
    this.#core = undefined;
  }
}

if (typeof Symbol.dispose === "symbol") {
  RetryBudget.prototype[Symbol.dispose] = RetryBudget.prototype.dispose;
}

/**
 * The first `retries` backoff delays for `seed` (the same on every runtime).
 * @param {{ baseMs: number, maxMs: number, jitter: number }} backoff
 */
export function backoffSchedule(backoff, retries, seed) {
  if (!isReady()) notReady("backoffSchedule");
  const { baseMs, maxMs, jitter } = checkBackoff("backoff", backoff);
  return Array.from(core.backoffSchedule(baseMs, maxMs, jitter, check.count("retries", retries), seedFrom(seed)));
}

function checkBackoff(param, backoff) {
  const b = check.obj(param, backoff, "an object like { baseMs, maxMs, jitter }");
  check.number(`${param}.baseMs`, b.baseMs);
  check.number(`${param}.maxMs`, b.maxMs);
  check.number(`${param}.jitter`, b.jitter, "a number between 0 and 1");
  return b;
}

// ---- one attempt ------------------------------------------------------------------

/**
 * Runs `fn(signal, info)` with a signal aborted after `timeoutMs`, or when
 * `deadlineSignal` or `parent` aborts. Resolves `{ ok: true, value }` or
 * `{ ok: false, error, ended }` with `ended` = "error" | "timeout" |
 * "deadline" | "aborted".
 */
function attempt(fn, info, timeoutMs, deadline, parent) {
  const deadlineSignal = deadline.signal();
  const at = deadline.at;
  return new Promise((resolve) => {
    const controller = new AbortController();
    const started = now();
    const endAt = started + timeoutMs;
    let settled = false;
    let timer;
    const finish = (result) => {
      if (settled) return;
      settled = true;
      unwatch(timer);
      parent?.removeEventListener("abort", onAbort);
      resolve(result);
    };
    const onAbort = (event) => {
      const reason = event.target.reason;
      controller.abort(reason);
      const own = event.target === deadlineSignal && isDeadlineExceeded(reason) && reason.at === at;
      finish({ ok: false, error: reason, ended: own ? "deadline" : "aborted" });
    };
    const onTimeout = () => {
      const reason = new AttemptTimeout(info.attempt, timeoutMs);
      controller.abort(reason);
      finish({ ok: false, error: reason, ended: "timeout" });
    };
    for (const s of [deadlineSignal, parent]) if (s?.aborted) return onAbort({ target: s });
    parent?.addEventListener("abort", onAbort);
    timer = watch(deadline, endAt, onTimeout, () => onAbort({ target: deadlineSignal }));
    let result;
    try {
      result = fn(controller.signal, info);
    } catch (error) {
      return finish({ ok: false, error, ended: "error" });
    }
    Promise.resolve(result).then(
      (value) => finish({ ok: true, value }),
      (error) => finish({ ok: false, error, ended: "error" }),
    );
  });
}

/** An attempt's own timeout fired (the attempt signal's abort reason). */
export class AttemptTimeout extends Error {
  constructor(attempt, timeoutMs) {
    super(`attempt ${attempt} timed out after ${Number.isInteger(timeoutMs) ? timeoutMs : timeoutMs.toFixed(1)} ms`);
    brand(this, "AttemptTimeout");
    this.attempt = attempt;
    this.timeoutMs = timeoutMs;
  }
}

/** Resolves `undefined` after `ms`, or the abort event's target when a signal aborts first. */
function sleep(ms, deadline, parent) {
  const deadlineSignal = deadline.signal();
  return new Promise((resolve) => {
    const wakeAt = now() + ms;
    let timer;
    const finish = (value) => {
      unwatch(timer);
      parent?.removeEventListener("abort", onAbort);
      resolve(value);
    };
    const onAbort = (event) => finish(event.target);
    const wake = () => finish(undefined);
    for (const s of [deadlineSignal, parent]) if (s?.aborted) return resolve(s);
    parent?.addEventListener("abort", onAbort);
    timer = watch(deadline, wakeAt, wake, () => onAbort({ target: deadlineSignal }));
  });
}

function defaultClassify(error) {
  const f = error?.failure;
  return isFailure(f) ? f : "ambiguous";
}

function isFailure(f) {
  return f === "ambiguous" || f === "not-applied" || f === "permanent";
}

/** `classify(error)`, checked: only one of the three words reaches the core. */
function classified(classify, error) {
  const f = classify(error);
  if (isFailure(f)) return f;
  throw new TypeError(`'options.classify' must return "ambiguous", "not-applied" or "permanent" (synchronously): it returned ${check.describe(f)}`);
}

// ---- retry ------------------------------------------------------------------------

/**
 * What `retry` uses for an option left out. `attemptMinMs` 0: an attempt
 * starts whenever any time is left (give the operation's p95 to skip hopeless
 * attempts). Backoff: full jitter ("jitter": 1) under a ceiling that doubles
 * from 100 ms up to 2 s, so synchronized clients spread out. Not idempotent:
 * an ambiguous failure (a timeout, a reset connection) is not repeated unless
 * `idempotent: true` or an `operationKey` says a repeat is safe.
 * `maxAttempts` (3) and `attemptTimeoutMs` (the time left) are the core's.
 */
const RETRY_DEFAULTS = Object.freeze({
  attemptMinMs: 0,
  backoff: Object.freeze({ baseMs: 100, maxMs: 2_000, jitter: 1 }),
  idempotent: false,
});

/**
 * Calls `fn(signal, { attempt, timeoutMs, operationKey })` until it resolves
 * or the core says stop. See the module invariants and src/core/retry.rs.
 */
export function retry(fn, options) {
  return awaited(retryLoop(fn, options));
}

async function retryLoop(fn, options) {
  if (!isReady()) notReady("retry");
  check.fn("fn", fn, "a function (signal, { attempt, timeoutMs, operationKey }) => Promise");
  const o = check.obj("options", options, "an object like { deadline, attemptMinMs, backoff, idempotent }");
  const deadline = check.deadline("options.deadline", o.deadline);
  const attemptMinMs = o.attemptMinMs ?? RETRY_DEFAULTS.attemptMinMs;
  check.number("options.attemptMinMs", attemptMinMs);
  check.optNumber("options.attemptTimeoutMs", o.attemptTimeoutMs);
  const backoff = checkBackoff("options.backoff", o.backoff ?? RETRY_DEFAULTS.backoff);
  const maxAttempts = o.maxAttempts === undefined ? undefined : check.count("options.maxAttempts", o.maxAttempts);
  const idempotent = o.idempotent ?? RETRY_DEFAULTS.idempotent;
  check.bool("options.idempotent", idempotent);
  const onAttempt = o.onAttempt === undefined ? undefined : check.fn("options.onAttempt", o.onAttempt, "a function (record) => void");
  if (o.operationKey !== undefined && (typeof o.operationKey !== "string" || o.operationKey === "")) {
    throw new TypeError(`'options.operationKey' must be a non-empty string: current value is ${check.describe(o.operationKey)}`);
  }
  const budget = o.budget;
  if (budget !== undefined && !(budget instanceof RetryBudget)) {
    throw new TypeError(`'options.budget' must be a RetryBudget: current value is ${check.describe(budget)}`);
  }
  const parent = check.optSignal("options.signal", o.signal);
  const classify = o.classify === undefined ? defaultClassify : check.fn("options.classify", o.classify, "a function (error) => \"ambiguous\" | \"not-applied\" | \"permanent\"");
  const seed = seedFrom(o.seed);
  const at = deadline.at;
  const deadlineSignal = deadline.signal();
  const run = new core.RetryRun(
    at,
    attemptMinMs,
    o.attemptTimeoutMs,
    backoff.baseMs,
    backoff.maxMs,
    backoff.jitter,
    maxAttempts,
    idempotent,
    o.operationKey !== undefined,
    seed,
  );
  const errors = [];
  const ends = [];
  const attempts = () => {
    const flat = run.recordsFlat();
    const out = [];
    for (let i = 0; i < flat.length; i += 5) {
      const outcome = FAILURES[flat[i + 4]];
      out.push({
        attempt: flat[i],
        startedAtMs: flat[i + 1],
        timeoutMs: flat[i + 2],
        elapsedMs: flat[i + 3],
        outcome: outcome === "ok" ? "ok" : ends[i / 5],
        failure: outcome === "ok" ? undefined : outcome,
        error: errors[i / 5],
      });
    }
    return out;
  };
  const stopped = () => failed(run.stopCode(), run.stopMessage(), attempts());
  // The hook sees each attempt's record once it is final; what it throws is
  // reported and never changes the retry's result (like a plan's onStep).
  const ended = () => {
    if (!onAttempt) return;
    const list = attempts();
    const record = list[list.length - 1];
    try {
      onAttempt(record);
    } catch (error) {
      console.error("edge-deadline: options.onAttempt threw; the retry carries on", error, record);
    }
  };
  const signalEnded = (signal, where) => {
    const reason = signal.reason;
    const own = signal === deadlineSignal && isDeadlineExceeded(reason) && reason.at === at;
    const code = own ? "deadline" : "aborted";
    const list = attempts();
    const e = new RetryFailed(code, `retry stopped after ${list.length} attempt${list.length === 1 ? "" : "s"}: ${own ? "the deadline passed" : "the operation was aborted"} ${where}`, list, { cause: reason });
    return e;
  };
  try {
    for (let number = 1; ; number++) {
      if (parent?.aborted) throw signalEnded(parent, "before the attempt");
      if (deadlineSignal.aborted) throw signalEnded(deadlineSignal, "before the attempt");
      const t = now();
      const timeoutMs = budget ? run.startBudgeted(t, budgetCore(budget)) : run.start(t);
      if (timeoutMs < 0) throw stopped();
      const info = { attempt: number, timeoutMs, operationKey: o.operationKey };
      const result = await attempt(fn, info, timeoutMs, deadline, parent);
      const t1 = now();
      if (result.ok) {
        run.succeeded(t1);
        ended();
        return result.value;
      }
      errors.push(result.error);
      ends.push(result.ended);
      if (result.ended === "aborted" || result.ended === "deadline") {
        // The loop ends here: record the attempt (ambiguous: it may have been
        // applied) without asking the budget for a retry.
        run.failed(t1, "ambiguous");
        ended();
        throw signalEnded(result.ended === "aborted" && parent?.aborted ? parent : deadlineSignal, "during the attempt");
      }
      const failure = result.ended === "timeout" ? "ambiguous" : classified(classify, result.error);
      const delay = budget ? run.failedBudgeted(t1, failure, budgetCore(budget)) : run.failed(t1, failure);
      ended();
      if (delay < 0) throw stopped();
      const woke = await sleep(delay, deadline, parent);
      if (woke) throw signalEnded(woke, "during the backoff");
    }
  } finally {
    run.free();
  }
}

// ---- hedging ------------------------------------------------------------------------

/**
 * Starts `fn(signal, { attempt })`, and another attempt every `delayMs` while
 * none has answered (up to `maxAttempts`, default 2); a failed attempt starts
 * the next one at once. The first to resolve wins; the others are aborted.
 */
export function hedge(fn, options) {
  try {
    return startHedge(fn, options);
  } catch (error) {
    return Promise.reject(error); // bad input rejects, as it does for retry
  }
}

function startHedge(fn, options) {
  if (!isReady()) notReady("hedge");
  check.fn("fn", fn, "a function (signal, { attempt }) => Promise");
  const o = check.obj("options", options, "an object like { deadline, delayMs, maxAttempts }");
  const deadline = check.deadline("options.deadline", o.deadline);
  check.number("options.delayMs", o.delayMs);
  const maxAttempts = o.maxAttempts === undefined ? 2 : check.count("options.maxAttempts", o.maxAttempts);
  const parent = check.optSignal("options.signal", o.signal);
  const delayMs = core.checkHedge(o.delayMs, maxAttempts);
  const at = deadline.at;
  const deadlineSignal = deadline.signal();
  return pending((resolve, reject) => {
    const inFlight = new Map(); // attempt number → AbortController
    const records = [];
    let started = 0;
    let done = false;
    let timer;
    const end = () => {
      done = true;
      unwatch(timer);
      deadlineSignal.removeEventListener("abort", onAbort);
      parent?.removeEventListener("abort", onAbort);
    };
    const abortAll = (reason) => {
      for (const [number, controller] of inFlight) {
        const record = records[number - 1];
        record.elapsedMs = now() - record.startedAtMs;
        record.outcome = "aborted";
        record.error = reason;
        controller.abort(reason);
      }
      inFlight.clear();
    };
    const onAbort = (event) => {
      if (done) return;
      const reason = event.target.reason;
      const own = event.target === deadlineSignal && isDeadlineExceeded(reason) && reason.at === at;
      end();
      abortAll(reason);
      for (const r of records) if (r.outcome === "aborted") r.outcome = own ? "deadline" : "aborted";
      reject(new RetryFailed(own ? "deadline" : "aborted", `hedge stopped after ${started} attempt${started === 1 ? "" : "s"}: ${own ? "the deadline passed" : "the operation was aborted"}`, records, { cause: reason }));
    };
    const startNext = () => {
      if (done) return;
      unwatch(timer);
      const number = ++started;
      const controller = new AbortController();
      const record = { attempt: number, startedAtMs: now(), elapsedMs: 0, outcome: "running", error: undefined };
      records.push(record);
      inFlight.set(number, controller);
      if (started < maxAttempts) timer = watch(deadline, now() + delayMs, startNext);
      let result;
      try {
        result = fn(controller.signal, { attempt: number });
      } catch (error) {
        result = Promise.reject(error);
      }
      Promise.resolve(result).then(
        (value) => {
          if (done || !inFlight.has(number)) return;
          inFlight.delete(number);
          record.elapsedMs = now() - record.startedAtMs;
          record.outcome = "ok";
          end();
          abortAll(new DOMException(`hedged attempt ${number} answered first`, "AbortError"));
          resolve(value);
        },
        (error) => {
          if (done || !inFlight.has(number)) return;
          inFlight.delete(number);
          record.elapsedMs = now() - record.startedAtMs;
          record.outcome = "error";
          record.error = error;
          if (started < maxAttempts && !deadlineSignal.aborted) return startNext();
          if (inFlight.size > 0) return; // a hedge still running may answer
          end();
          reject(failedHedge(records));
        },
      );
    };
    const failedHedge = (list) =>
      new RetryFailed("exhausted", `hedge stopped after ${list.length} attempt${list.length === 1 ? "" : "s"}: all ${list.length} attempts failed`, list, { cause: list[list.length - 1]?.error });
    for (const s of [deadlineSignal, parent]) {
      if (s?.aborted) return onAbort({ target: s });
    }
    deadlineSignal.addEventListener("abort", onAbort);
    parent?.addEventListener("abort", onAbort);
    startNext();
  });
}
