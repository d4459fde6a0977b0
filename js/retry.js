// Retries inside one deadline. Whether to attempt, each attempt's timeout,
// the backoff delay (seeded jitter), the idempotency rule, the defaults, how
// each attempt ended, why the loop stopped and the sentence that says so are
// the Wasm core's (src/core/retry.rs `RetryRun`: see its module doc), and so is the
// retry budget's accounting (src/core/retry_budget.rs, js/retry_budget.js); this file
// owns the attempts' signals and timers and the abortable backoff sleep, each
// one cancellation node (js/timers.js `child`) hanging from the deadline and
// `options.signal`. Hedging is js/hedge.js.
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
// 3. When `retry` settles, every timer it armed is cleared and
//    every listener it added is removed; the core's retry loop (Wasm memory)
//    is freed in a `finally`.
// 4. A failure carries every attempt's outcome (`RetryFailed.attempts`).
// 5. Attempt and backoff timers are unref'd, like every timer of the
//    package; awaiting `retry` keeps a Node or Deno process alive
//    until it settles (js/keepalive.js), and nobody awaiting keeps nothing
//    alive.
// 6. What `classify` returns is checked in JS before it reaches the core,
//    against the core's own list of failure kinds: a TypeError naming the
//    callback, never a trap of the Wasm instance.
// 7. With `circuit` (a CircuitBreaker's `for(key)`, edge-deadline/derive), no
//    attempt goes into a breaker that refuses it: the core waits for the
//    breaker when the deadline leaves an attempt's minimum after it, and
//    otherwise stops with reason "circuit-open" (its cause the CircuitOpen).
//    Every attempt that went through tells the breaker how it ended: a
//    success, a failure, a timeout (its own or the deadline's), or cancelled
//    when the caller's signal ended it.
// 8. With tracing on (js/otel.js), the retry's span ends when `retry`
//    settles, each attempt's (its child) when the attempt ends, before the
//    backoff, which is an event of the retry's span.
// 9. A failed attempt whose error carries a `response` (a Response, or any
//    object with `headers.get`), or that threw a Response itself, hands its `Retry-After`, `RateLimit-Reset`
//    and `X-RateLimit-Reset` values to the core, which reads them and
//    decides (src/core/retry/after.rs): the wall clock (`Date.now()`) is
//    read only when the core says a value is a date or an epoch. The wait is
//    slept only when an attempt still fits after it; otherwise `retry`
//    rejects at once with reason "retry-after".
//
// # Per-attempt timeouts
// An attempt cut at its own timeout aborts its signal with `AttemptTimeout`
// (the per-attempt counterpart of a plan step's `StepTimeout`): the attempt
// ended, the deadline did not. It is recorded as outcome "timeout", counts as
// an ambiguous failure, and the loop carries on; `retry` (and `hedge`) reject
// only with `RetryFailed`, whose `reason` is "deadline" only when the
// deadline itself ended the loop.

import * as core from "./edge_deadline.js";
import { argumentError, AttemptTimeout, CODES, isCircuitOpen, isDeadlineExceeded, RetryFailed } from "./errors.js";
import { recorder } from "./record.js";
import { retryBudgetCore, RetryBudget } from "./retry_budget.js";
import { awaited } from "./keepalive.js";
import { isReady, notReady } from "./load.js";
import { tracing } from "./otel.js";
import { child, now } from "./timers.js";
import * as check from "./validate.js";

export { AttemptTimeout, isRetryFailed, RetryFailed } from "./errors.js";

function randomSeed() {
  return crypto.getRandomValues(new BigUint64Array(1))[0];
}

/** A seed for the core's u64: JS numbers and BigInts are checked here, since a u64 argument cannot refuse by name. */
function seedFrom(param, seed) {
  if (seed === undefined) return randomSeed();
  if (typeof seed === "bigint") {
    if (seed < 0n || seed >= 1n << 64n) throw argumentError("range", "SEED_OUT_OF_RANGE", param, `'${param}' must be between 0 and 2^64 − 1: current value is ${seed}`);
    return seed;
  }
  check.number(param, seed, "a number or a BigInt");
  if (!Number.isSafeInteger(seed) || seed < 0) {
    throw argumentError("range", "SEED_OUT_OF_RANGE", param, `'${param}' must be a whole number between 0 and 2^53 − 1: current value is ${seed}`);
  }
  return BigInt(seed);
}

/**
 * The first `retries` backoff delays for `seed` (the same on every runtime).
 * @param {{ baseMs: number, maxMs: number, jitter: number | "full" | "equal" | "decorrelated" }} backoff
 */
export function backoffSchedule(backoff, retries, seed) {
  if (!isReady()) notReady("backoffSchedule");
  const b = checkBackoff("backoff", backoff);
  const named = typeof b.jitter === "string";
  return Array.from(core.backoffSchedule(b.baseMs, b.maxMs, named ? undefined : b.jitter, named ? b.jitter : undefined, check.count("retries", retries), seedFrom("seed", seed)));
}

function checkBackoff(param, backoff) {
  const b = check.obj(param, backoff, "an object like { baseMs, maxMs, jitter }");
  check.number(`${param}.baseMs`, b.baseMs);
  check.number(`${param}.maxMs`, b.maxMs);
  // A name is checked by the core (a RangeError naming it); here its type.
  if (typeof b.jitter !== "string") check.number(`${param}.jitter`, b.jitter, "a number between 0 and 1, or \"full\", \"equal\" or \"decorrelated\"");
  return b;
}

// ---- one attempt ------------------------------------------------------------------

/**
 * Runs `fn(signal, info)` with a signal aborted after `timeoutMs`, or when
 * the deadline or `parent` aborts: one cancellation node (js/timers.js
 * `child`) hanging from both. Resolves `{ ok: true, value }` or
 * `{ ok: false, error, ended }` with `ended` = "error" | "timeout" |
 * "deadline" | "aborted".
 */
function attempt(fn, info, timeoutMs, deadline, parent, t, span) {
  const at = deadline.at;
  return new Promise((resolve) => {
    let settled = false;
    let node;
    const finish = (result) => {
      if (settled) return;
      settled = true;
      node?.dispose();
      resolve(result);
    };
    node = child([deadline, parent], now() + timeoutMs, {
      onTime: (c) => {
        const reason = new AttemptTimeout(info.attempt, timeoutMs);
        c.abort(reason);
        finish({ ok: false, error: reason, ended: "timeout" });
      },
      onAbort: (reason, by) => {
        const own = by === deadline && isDeadlineExceeded(reason) && reason.at === at;
        finish({ ok: false, error: reason, ended: own ? "deadline" : "aborted" });
      },
    });
    if (settled) return;
    let result;
    try {
      result = span === undefined ? fn(node.signal, info) : t.within(span, fn, node.signal, info);
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
/**
 * Resolves `undefined` after `ms`, or, when the deadline or `parent` aborts
 * first, the signal that did (the deadline's or `parent`): one node hanging
 * from both, woken on the deadline's queue.
 */
function sleep(ms, deadline, parent) {
  return new Promise((resolve) => {
    child([deadline, parent], now() + ms, {
      onTime: (c) => {
        c.dispose();
        resolve(undefined);
      },
      onAbort: (_reason, by) => resolve(by === deadline ? deadline.signal() : by),
    });
  });
}

/** The core's failure kinds (`Failure` in src/core/retry.rs), read once. */
let failures;
function isFailure(f) {
  failures ??= new Set(core.failureKinds());
  return failures.has(f);
}

/**
 * The wait in ms a failed attempt's response asked for, or `undefined`: the
 * core reads the headers; the wall clock only when it asks for it (NaN).
 */
export function serverWait(error) {
  // The error's `response`, or the error itself when an attempt threw the
  // Response (`if (!res.ok) throw res`).
  const headers = (error?.response ?? (typeof Response === "function" && error instanceof Response ? error : undefined))?.headers;
  if (typeof headers?.get !== "function") return undefined;
  const value = (name) => {
    const v = headers.get(name);
    return typeof v === "string" ? v : undefined;
  };
  const ra = value("retry-after");
  const rl = value("ratelimit-reset");
  const xrl = value("x-ratelimit-reset");
  if (ra === undefined && rl === undefined && xrl === undefined) return undefined;
  const wait = core.serverWait(ra, rl, xrl, NaN);
  return Number.isNaN(wait) ? core.serverWait(ra, rl, xrl, Date.now()) : wait;
}

/**
 * How a failure is classified when no `classify` was given: the error's own
 * `failure` word; else, for a thrown Response or an error whose `response`
 * has an HTTP status, the core's status rule (src/core/retry.rs
 * `response_failure`); else "ambiguous".
 */
export function defaultClassify(error) {
  const f = error?.failure;
  if (isFailure(f)) return f;
  const response = typeof Response === "function" && error instanceof Response ? error : error?.response;
  const status = response?.status;
  return (typeof status === "number" && core.responseFailure(status)) || "ambiguous";
}

/** `classify(error)`, checked: only one of the core's words reaches it. */
export function classified(classify, error) {
  const f = classify(error);
  if (isFailure(f)) return f;
  failures ??= new Set(core.failureKinds());
  const quoted = [...failures].map((w) => `"${w}"`);
  const words = `${quoted.slice(0, -1).join(", ")} or ${quoted[quoted.length - 1]}`;
  throw argumentError("type", CODES.INVALID_RETURN, "options.classify", `'options.classify' must return ${words} (synchronously): it returned ${check.describe(f)}`);
}

/**
 * The core's retry loop for the options `o` (named `p` in errors:
 * "options", or "options.retry" for a stream's), with the checked `classify`
 * and `budget`. Types are checked here; every range and default is the
 * core's (RetryOptions in src/core/retry.rs). `idempotent` is the default
 * when `o.idempotent` is not given (the core's own default when undefined).
 */
export function newRun(p, o, at, idempotent) {
  check.optNumber(`${p}.attemptMinMs`, o.attemptMinMs);
  check.optNumber(`${p}.attemptTimeoutMs`, o.attemptTimeoutMs);
  if (o.backoff !== undefined) checkBackoff(`${p}.backoff`, o.backoff);
  if (o.maxAttempts !== undefined) check.count(`${p}.maxAttempts`, o.maxAttempts);
  if (o.idempotent !== undefined) check.bool(`${p}.idempotent`, o.idempotent);
  check.optNumber(`${p}.maxRetryAfterMs`, o.maxRetryAfterMs);
  if (o.operationKey !== undefined && (typeof o.operationKey !== "string" || o.operationKey === "")) {
    throw check.typeError(`${p}.operationKey`, "a non-empty string", o.operationKey);
  }
  const budget = o.budget;
  if (budget !== undefined && !(budget instanceof RetryBudget)) throw check.typeError(`${p}.budget`, "a RetryBudget", budget);
  const classify = o.classify === undefined ? defaultClassify : check.fn(`${p}.classify`, o.classify, 'a function (error) => "ambiguous" | "not-applied" | "permanent"');
  const seed = seedFrom(`${p}.seed`, o.seed);
  // The options cross as their fields (scalars): through serde, reading an
  // options object measured slower per call (src/wasm/retry.rs).
  const b = o.backoff;
  const named = typeof b?.jitter === "string";
  // The core names an option under `options`, or under `options.retry` for relay's and fetchWithDeadline's.
  const run = new core.RetryRun(at, o.attemptMinMs, o.attemptTimeoutMs, b?.baseMs, b?.maxMs, named ? undefined : b?.jitter, named ? b.jitter : undefined, o.maxAttempts, o.idempotent ?? idempotent, o.maxRetryAfterMs, o.operationKey !== undefined, seed, p === "options.retry");
  return { run, classify, budget };
}

// ---- retry ------------------------------------------------------------------------

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
  const { run, classify, budget } = newRun("options", o, deadline.at);
  const onAttempt = o.onAttempt === undefined ? undefined : check.fn("options.onAttempt", o.onAttempt, "a function (record) => void");
  const parent = check.optSignal("options.signal", o.signal);
  const circuit = o.circuit;
  if (circuit !== undefined && typeof circuit?.acquire !== "function") {
    throw check.typeError("options.circuit", "a circuit from CircuitBreaker.for(key) (edge-deadline/derive)", circuit);
  }
  const rec = recorder(o, undefined);
  const t = tracing(o.otel);
  const at = deadline.at;
  const deadlineSignal = deadline.signal();
  const errors = [];
  // Tracing (js/otel.js): the retry's span, each attempt's a child of it.
  let span; // undefined once ended
  let open; // the attempt's span, until it ends
  if (t !== null) {
    const t0 = now();
    span = t.start("deadline.retry", undefined, at, t0);
  }
  // The core's records (attempt, startedAtMs, timeoutMs, elapsedMs, outcome,
  // failure?) with each attempt's error.
  const attempts = () => run.records().map((r, i) => ({ ...r, failure: r.failure, error: errors[i] }));
  // The core's stop: its word and its whole sentence (src/core/retry.rs
  // `Stopped`); the cause is the signal's reason, or the last attempt's error.
  const stopped = (cause) => {
    const { reason, message, retryAfterMs, remainingMs } = run.stop();
    const list = attempts();
    const last = list[list.length - 1];
    if (span !== undefined) {
      t.end(span, reason, now(), message, { "deadline.attempts": list.length });
      span = undefined;
    }
    const e = new RetryFailed(reason, message, list, cause !== undefined ? { cause } : last ? { cause: last.error } : undefined);
    if (retryAfterMs !== undefined) Object.assign(e, { retryAfterMs, remainingMs });
    return e;
  };
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
  /** A signal ended the loop: the core records it and words the stop. */
  const signalEnded = (signal) => {
    const reason = signal.reason;
    run.aborted(now(), signal === deadlineSignal && isDeadlineExceeded(reason) && reason.at === at);
    return stopped(reason);
  };
  try {
    for (let number = 1; ; number++) {
      if (parent?.aborted) throw signalEnded(parent);
      if (deadlineSignal.aborted) throw signalEnded(deadlineSignal);
      const t0 = now();
      const timeoutMs = budget ? run.startBudgeted(t0, retryBudgetCore(budget)) : run.start(t0);
      if (timeoutMs === undefined) throw stopped();
      let permit;
      if (circuit !== undefined) {
        try {
          permit = circuit.acquire();
        } catch (error) {
          if (!isCircuitOpen(error)) throw error;
          const wait = run.refused(now(), error.retryAt);
          if (wait === undefined) throw stopped(error);
          number--;
          const woke = await sleep(wait, deadline, parent);
          if (woke) throw signalEnded(woke);
          continue;
        }
      }
      const info = { attempt: number, timeoutMs, operationKey: o.operationKey };
      const attemptSpan = (open = span === undefined ? undefined : t.start("deadline.attempt", span, at, t0, { "deadline.attempt": number, "deadline.cap_ms": timeoutMs }));
      const result = await attempt(fn, info, timeoutMs, deadline, parent, t, attemptSpan);
      const t1 = now();
      rec?.(result.ok ? "ok" : result.ended, t1 - t0);
      if (permit !== undefined) {
        if (result.ok) permit.success();
        else if (result.ended === "error") permit.failure(result.error);
        else if (result.ended === "aborted") permit.cancel();
        else permit.timeout();
      }
      if (result.ok) {
        run.succeeded(t1);
        if (span !== undefined) {
          t.end(attemptSpan, "ok", t1);
          open = undefined;
          t.end(span, "ok", t1, undefined, { "deadline.attempts": number });
          span = undefined;
        }
        ended();
        return result.value;
      }
      errors.push(result.error);
      if (result.ended === "aborted" || result.ended === "deadline") {
        if (attemptSpan !== undefined) {
          t.end(attemptSpan, result.ended, t1, result.error);
          open = undefined;
        }
        // The loop ends here; the core records the attempt (ambiguous: it
        // may have been applied) without asking the budget for a retry.
        const e = signalEnded(result.ended === "aborted" && parent?.aborted ? parent : deadlineSignal);
        ended();
        throw e;
      }
      // A timeout is the core's ambiguous failure; an error is classified here.
      let delay;
      let failure = "ambiguous";
      if (result.ended === "timeout") {
        delay = budget ? run.timedOutBudgeted(t1, retryBudgetCore(budget)) : run.timedOut(t1);
      } else {
        failure = classified(classify, result.error);
        const wait = serverWait(result.error);
        delay = budget ? run.failedBudgeted(t1, failure, retryBudgetCore(budget), wait) : run.failed(t1, failure, wait);
      }
      if (attemptSpan !== undefined) {
        t.end(attemptSpan, result.ended, t1, result.error, { "deadline.failure": failure });
        open = undefined;
        if (delay !== undefined) t.event(span, "deadline.backoff", { "deadline.attempt": number, "deadline.backoff_ms": delay }, t1);
      }
      ended();
      if (delay === undefined) throw stopped();
      const woke = await sleep(delay, deadline, parent);
      if (woke) throw signalEnded(woke);
    }
  } catch (error) {
    // Not a stop of the core's (`classify` broke its contract): the spans end with it.
    if (span !== undefined) {
      if (open !== undefined) t.end(open, "error", now(), error);
      t.end(span, "error", now(), error);
    }
    throw error;
  } finally {
    run.free();
  }
}
