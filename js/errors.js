// Error classes of edge-deadline.
//
// Why a brand and not only `instanceof`: a Worker bundle, a test runner or a
// monorepo can load two copies of this package, and then an error thrown by
// one copy is not an instance of the other copy's class. Worse, workerd hands
// a fetch's abort reason back as a *clone* (measured: a plain Error keeping
// name, message and own enumerable fields; symbols and the prototype are lost).
// So every error carries an own enumerable string property
// `edgeDeadlineError === error.name`, and the `isX` guards check that: they
// work across copies, realms and workerd's clone.
//
// The Wasm core creates errors through the factory functions at the bottom
// (imported by the wasm-bindgen glue as `./errors.js`), so the core and the JS
// API throw instances of the very same classes.
//
// This module imports nothing: every other module (and the glue) imports it,
// so it holds all the error classes and every brand guard, the Deadline's
// included (`isDeadline`).
//
// # One wording per message
// Every message is written and filled in the core (src/core, `templates!`),
// numbers printed as JavaScript prints them; no template is filled here.
// Errors the core raises arrive with their text (`coreError`). The errors
// made here (a deadline's timer, a refused step, a stall, an attempt's
// timeout) ask the main core for theirs, through the functions ./load.js
// hands over once it has loaded (`coreTexts`). This module cannot import the
// main core itself: the derive entry shares it and never loads that core.

const BRAND = "edgeDeadlineError";

/**
 * The main core's text functions and whether it has loaded.
 * @type {{ core: any, ready: () => boolean } | undefined}
 */
let texts;

/**
 * Hands over the main core's text functions (./load.js, once).
 * @param {any} core the main core's `…Text` functions
 * @param {() => boolean} ready whether it has loaded
 */
export function coreTexts(core, ready) {
  texts = { core, ready };
}

// The text `coreError` hands the constructor it calls next: the core's own.
/** @type {string | undefined} */
let given;

/**
 * The message of an error made here: the core's text (`say(core)`), or the
 * error's name when the main core has not loaded (a browser before
 * `init()`, an application importing only `edge-deadline/derive`).
 * @param {string} name
 * @param {((core: any) => string)} say
 */
function text(name, say) {
  const handed = given;
  given = undefined;
  if (handed !== undefined) return handed;
  return texts?.ready() ? say(texts.core) : name;
}

export function brand(error, name) {
  Object.defineProperty(error, "name", { value: name, configurable: true, writable: true });
  error[BRAND] = name;
}

/** The deadline passed: the work it bounded is no longer worth finishing. */
export class DeadlineExceeded extends Error {
  /**
   * @param {number} at the deadline instant (ms on the `performance.now()` timeline)
   * @param {number} lateByMs how long after the instant this was observed (≥ 0)
   * @param {ErrorOptions & { budgetMs?: number, reserveMs?: number }} [options] `cause`; `reserveMs` and
   *   `budgetMs` for a reserved deadline that had passed before any work began (`budgetMs` was left, below the reserve)
   */
  constructor(at, lateByMs, options) {
    // A reserved deadline that had passed before any work began says why: the budget was below the reserve.
    const reserveMs = options?.reserveMs;
    const budgetMs = options?.budgetMs ?? 0;
    super(text("DeadlineExceeded", (core) => core.exceededText(lateByMs, reserveMs, budgetMs)), options);
    brand(this, "DeadlineExceeded");
    this.at = at;
    this.lateByMs = lateByMs;
    if (reserveMs !== undefined) Object.assign(this, { budgetMs, reserveMs });
  }
}

/** A step declared a minimum it needs, and less than that is left: it was not started. */
export class InsufficientBudget extends Error {
  /**
   * @param {number} remainingMs time left when the step asked
   * @param {number} minMs the step's declared minimum
   * @param {ErrorOptions} [options] `cause`
   */
  constructor(remainingMs, minMs, options) {
    super(text("InsufficientBudget", (core) => core.insufficientText(remainingMs, minMs)), options);
    brand(this, "InsufficientBudget");
    this.remainingMs = remainingMs;
    this.minMs = minMs;
  }
}

/**
 * A step of a plan reached its own cap while the deadline still had time: the
 * step was cut, the request was not. A handler runs the fallback (or tries
 * something cheaper) instead of answering 504. `DeadlineExceeded` is kept for
 * the deadline itself.
 */
export class StepTimeout extends Error {
  /**
   * @param {string} step the step's name
   * @param {number} capMs the cap it was given
   * @param {ErrorOptions} [options] `cause`
   */
  constructor(step, capMs, options) {
    super(text("StepTimeout", (core) => core.stepTimeoutText(String(step), capMs)), options);
    brand(this, "StepTimeout");
    this.step = step;
    this.capMs = capMs;
  }
}

/**
 * An incoming deadline header is malformed. Its value comes from the caller
 * (possibly hostile), so it is not a `RangeError` (those are the server's own
 * bad arguments): `Deadline.fromHeaders` ignores such a header by default and
 * reports it; with `invalid: "throw"` it throws this, naming the header.
 */
export class InvalidHeader extends Error {
  /**
   * @param {string} header the header's name, lowercase
   * @param {string} message what is wrong with its value
   * @param {ErrorOptions} [options] `cause`
   */
  constructor(header, message, options) {
    super(message, options);
    brand(this, "InvalidHeader");
    this.header = header;
  }
}

/** @returns {e is DeadlineExceeded} */
export function isDeadlineExceeded(e) {
  return e != null && e[BRAND] === "DeadlineExceeded";
}

/** @returns {e is InsufficientBudget} */
export function isInsufficientBudget(e) {
  return e != null && e[BRAND] === "InsufficientBudget";
}

/** @returns {e is StepTimeout} */
export function isStepTimeout(e) {
  return e != null && e[BRAND] === "StepTimeout";
}

/** @returns {e is InvalidHeader} */
export function isInvalidHeader(e) {
  return e != null && e[BRAND] === "InvalidHeader";
}

/** The stream went quiet: no progress chunk within the limit of its phase (js/stall.js). */
export class StreamStalled extends Error {
  /**
   * @param {"first-byte" | "first-chunk" | "stall"} phase which limit expired
   * @param {number} afterMs the silence observed (≥ the limit)
   * @param {number} chunks chunks received before the stall
   * @param {number} bytes bytes received before the stall
   */
  constructor(phase, afterMs, chunks, bytes, options) {
    super(text("StreamStalled", (core) => core.stalledText(String(phase), afterMs, chunks, bytes)), options);
    brand(this, "StreamStalled");
    this.phase = phase;
    this.afterMs = afterMs;
    this.chunks = chunks;
    this.bytes = bytes;
  }
}

/** @returns {e is StreamStalled} brand check: works across package copies and workerd's clones */
export function isStreamStalled(e) {
  return e != null && e[BRAND] === "StreamStalled";
}

// ─── Errors of retry, hedge and the concurrency limiter ─────────────────────
//
// Thrown by js/retry.js, js/hedge.js and js/little.js, which re-export them;
// they live here with the others so that every brand guard sits in one place.

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

/** One attempt reached its own timeout (the retry may go on while the deadline has time). */
export class AttemptTimeout extends Error {
  /**
   * @param {number} attempt the attempt's number, from 1
   * @param {number} timeoutMs the timeout it was given
   */
  constructor(attempt, timeoutMs, options) {
    super(text("AttemptTimeout", (core) => core.attemptTimeoutText(attempt, timeoutMs)), options);
    brand(this, "AttemptTimeout");
    this.attempt = attempt;
    this.timeoutMs = timeoutMs;
  }
}

/** Every slot of a ConcurrencyLimiter was taken, so the call was shed (not queued). */
export class Overloaded extends Error {
  /**
   * @param {number} limit the limiter's number of slots
   * @param {number} inFlight calls running when this one was shed
   */
  constructor(limit, inFlight, options) {
    super(`overloaded: all ${limit} slots are in use (${inFlight} calls in flight), so the call was shed instead of queued`, options);
    brand(this, "Overloaded");
    this.limit = limit;
    this.inFlight = inFlight;
  }
}

/**
 * A circuit breaker refused the call: its dependency failed often enough that
 * calls fail at once until a probe may go, at `retryAt` (ms on the package's
 * clock, `retryInMs` from when it was refused). Not a timeout (`isTimeout`
 * is false): a fallback can tell "the dependency is down" from "no time".
 */
export class CircuitOpen extends Error {
  /**
   * @param {string} key the breaker's key
   * @param {"open" | "half-open"} state
   * @param {number} retryAt
   * @param {number} retryInMs
   * @param {string} message the core's text
   */
  constructor(key, state, retryAt, retryInMs, message, options) {
    super(message, options);
    brand(this, "CircuitOpen");
    this.key = key;
    this.state = state;
    this.retryAt = retryAt;
    this.retryInMs = retryInMs;
  }
}

/**
 * @returns {boolean} whether `e`, or an error in its `.cause` chain (a
 * `RetryFailed` that gave up on an open breaker), is a `CircuitOpen`; works
 * across package copies and workerd's clones
 */
export function isCircuitOpen(e) {
  return inCauses(e, (x) => brandOf(x) === "CircuitOpen");
}

/** @returns {e is RetryFailed} brand check: works across package copies and workerd's clones */
export function isRetryFailed(e) {
  return e != null && e[BRAND] === "RetryFailed";
}

/** @returns {e is AttemptTimeout} brand check: works across package copies and workerd's clones */
export function isAttemptTimeout(e) {
  return e != null && e[BRAND] === "AttemptTimeout";
}

/** @returns {e is Overloaded} brand check: works across package copies and workerd's clones */
export function isOverloaded(e) {
  return e != null && e[BRAND] === "Overloaded";
}

// ─── The Deadline's brand ────────────────────────────────────────────────────
//
// Checking "is this a Deadline" with `instanceof` would refuse a deadline made
// by a second copy of the package (a bundle and a library each with their
// own), and would make every module that checks import the class. A Deadline
// carries this registered symbol on its prototype instead: the same symbol in
// every copy and realm, never enumerated, never cloned (a Deadline is not
// sent anywhere).

/** Set to `true` on `Deadline.prototype` (js/deadline.js). */
export const DEADLINE_BRAND = Symbol.for("edge-deadline.Deadline");

/**
 * Whether `value` is a Deadline of this or any other copy of the package.
 * @returns {value is import("./deadline.js").Deadline}
 */
export function isDeadline(value) {
  return value != null && typeof value === "object" && value[DEADLINE_BRAND] === true;
}

/** The package's errors that mean "time ran out" (see `isTimeout`). */
const TIMEOUTS = new Set(["DeadlineExceeded", "StepTimeout", "AttemptTimeout", "StreamStalled"]);

/**
 * Whether `error` means that time ran out, looking through `.cause` chains:
 * SDKs and frameworks wrap the abort reason they were handed (an HTTP client's
 * "connection error" whose cause is our `DeadlineExceeded`), and a handler
 * wants one branch for all of them.
 *
 * True for `DeadlineExceeded` (the deadline passed), `StepTimeout` (a plan
 * step hit its cap), `AttemptTimeout` (a retry attempt hit its own timeout),
 * `StreamStalled` (a stream went silent past its limit) and a DOMException
 * named "TimeoutError" (`AbortSignal.timeout`), at any depth: so also for a
 * `RetryFailed` whose last attempt timed out. Not for `InsufficientBudget`
 * (nothing was started: check `isInsufficientBudget`), an abort for another
 * reason (a client that left) or words in a message.
 *
 * Some SDKs replace the abort reason with an error of their own that has no
 * cause (openai's `APIUserAbortError`): pass the signal you gave the SDK as
 * `signal`, and an aborted signal whose reason is a timeout answers true too.
 * @param {unknown} error
 * @param {AbortSignal} [signal]
 */
export function isTimeout(error, signal) {
  if (inCauses(error, (e) => TIMEOUTS.has(brandOf(e)) || read(e, "name") === "TimeoutError")) return true;
  if (signal == null || (typeof signal !== "object" && typeof signal !== "function") || read(signal, "aborted") !== true) return false;
  const reason = read(signal, "reason");
  return reason !== error && isTimeout(reason);
}

/**
 * How many errors of a `.cause` chain are looked at: the core's MAX_CAUSES
 * (src/core/error.rs), pinned by the conformance rows "isTimeout: a timeout
 * 31/32 causes deep". A chain is untrusted input; the bound also ends a cycle.
 */
const MAX_CAUSES = 32;

/**
 * Whether `test(e)` holds for `error` or an error in its `.cause` chain, of
 * which at most MAX_CAUSES errors are looked at. A `cause` whose read throws
 * counts as absent, so it never throws for a value it was handed (`test`
 * must not either).
 * @param {unknown} error
 * @param {(e: object) => boolean} test
 */
export function inCauses(error, test) {
  let e = /** @type {any} */ (error);
  for (let n = 0; n < MAX_CAUSES && e != null && typeof e === "object"; n++, e = read(e, "cause")) {
    if (test(e)) return true;
  }
  return false;
}

/** The brand of `e` (e.g. "StreamStalled"), or `undefined`; never throws (see `read`). */
export function brandOf(e) {
  return read(e, BRAND);
}

/**
 * `o[key]`, or `undefined` when reading it throws (a getter, a Proxy trap, a
 * revoked Proxy): `isTimeout` answers about any value and never throws.
 */
function read(o, key) {
  try {
    return o[key];
  } catch {
    return undefined;
  }
}

// ─── Bad arguments ───────────────────────────────────────────────────────────
//
// Every TypeError/RangeError the package throws carries `.param`, the
// parameter as the caller wrote it (`"steps[0].minMs"`, `"options.classify"`),
// and `.code`, a stable UPPER_SNAKE word to branch on instead of the message.
// Codes of errors the core detects are the core's (`Described::code` in
// src/core/error.rs); codes of type checks made here are listed below.

/** Codes of the JS side's own checks (values a Wasm call cannot see: types, callbacks). */
export const CODES = Object.freeze({
  /** A value of the wrong JavaScript type (a string where a number goes, a missing function). */
  INVALID_TYPE: "INVALID_TYPE",
  /** A callback returned something it must not (a Promise from a synchronous hook, an unknown word). */
  INVALID_RETURN: "INVALID_RETURN",
  /** A number that must be whole (a count) has a fraction; the core's range codes cover the rest. */
  NOT_WHOLE: "NOT_WHOLE",
  /** A value outside its range, checked here because the core never sees it (an attempt count past 2^32 − 1). */
  TOO_LARGE: "TOO_LARGE",
  /** A negative value checked here (same reason); the core's code for the same fault is the same word. */
  NEGATIVE: "NEGATIVE",
  /** NaN or ±∞ checked here; the core's code for the same fault is the same word. */
  NOT_FINITE: "NOT_FINITE",
  /** A class the package constructs itself was called with `new` (use its factory). */
  NOT_CONSTRUCTIBLE: "NOT_CONSTRUCTIBLE",
  /** A string that is not one of the accepted words (a platform, a header name). */
  UNKNOWN_VALUE: "UNKNOWN_VALUE",
  /** An options object without a choice it needs (the middleware's bound: `budgetMs`, `platform` or `caps`). */
  MISSING_OPTION: "MISSING_OPTION",
  /** A list that must name each thing once names one twice (`deriveTimeouts`' `options.by`). */
  DUPLICATE_LABEL: "DUPLICATE_LABEL",
  /** A Prometheus query response that reports a failure (`status` other than "success"). */
  QUERY_FAILED: "QUERY_FAILED",
  /** `init()` with no argument in a bundle that keeps no module URL: there is nothing to find the .wasm beside. */
  NO_WASM_URL: "NO_WASM_URL",
});

/**
 * A `TypeError` (kind `"type"`) or `RangeError` (kind `"range"`) with `.param`
 * and `.code` as own enumerable fields, so they survive a structured clone.
 * @param {"type" | "range"} kind
 * @param {string} code
 * @param {string | undefined} param
 * @param {string} message
 */
export function argumentError(kind, code, param, message) {
  /** @type {(TypeError | RangeError) & { code?: string, param?: string }} */
  const error = kind === "type" ? new TypeError(message) : new RangeError(message);
  error.code = code;
  if (param !== undefined) error.param = param;
  return error;
}

// The factory the Wasm core calls (src/wasm/mod.rs, `to_js`), with the
// message as the core rendered it. Not re-exported by the API.
export function coreError(kind, code, param, message, fields) {
  given = kind === "deadline" || kind === "insufficient" ? message : undefined;
  if (kind === "deadline") return new DeadlineExceeded(fields.at, fields.lateByMs);
  if (kind === "insufficient") return new InsufficientBudget(fields.remainingMs, fields.minMs);
  const error = argumentError(kind, code, param ?? undefined, message);
  return Object.assign(error, fields);
}
