// Circuit breakers (`edge-deadline/derive`). Every decision is the Wasm
// core's (src/core/breaker.rs: when a key opens, when it lets a probe
// through, what a window holds, what an import may change; see its module
// doc); this file owns the JS objects: the key → slot cache, the clock
// reads, the permits, the state-change events and when the Wasm memory is
// freed.
//
// # Invariants
// 1. The closed path crosses into Wasm with numbers only: a key's name
//    crosses once, the first time this object meets it (or after the core
//    replaced it as least recently used: the cache entry is dropped then).
// 2. A permit records its outcome at most once; `run` records on every path
//    (`fn` returns, resolves, rejects or throws synchronously).
// 3. What `isFailure` returns is checked: a TypeError naming
//    `options.isFailure` (the call still counts as failed, so a probe is
//    never left out); never a value handed to the core unchecked.
// 4. `onStateChange` is called after the change, once per change; what it
//    throws goes to `console.error` and changes nothing (like
//    retry's `onAttempt`).
// 5. `#closed[slot]` is true only while the core's key is closed: set from
//    the core's own answers (a check that admitted as closed, a StateChange
//    of a record), cleared by an import. Only then is `check` skipped.
// 6. With tracing on (js/otel.js), each change is also a `deadline.breaker`
//    event on the span active then (or a span of its own).
// 7. No timer and no listener: an open key half-opens when a call arrives
//    after `openMs` (the core compares instants).
// 8. Whether an error is the dependency's is the core's decision
//    (`error_outcome`): this file only reports what it finds in the error's
//    `.cause` chain (at most MAX_CAUSES errors, reads that throw count as
//    absent) and in the caller's signal. `isFailure` is asked only about an
//    error the core calls the dependency's failure.

import * as core from "./edge_deadline_derive.js";
import { argumentError, brandOf, CircuitOpen, CODES, inCauses, isTimeout } from "./errors.js";
import { isReady, notReady } from "./derive-load.js";
import { tracing } from "./otel.js";
import { now } from "./timers.js";
import * as check from "./validate.js";

export { CircuitOpen, isCircuitOpen } from "./errors.js";

const Change = core.StateChange;
/** An opening's reason, by the core's `StateChange` it came as (src/wasm/breaker.rs). */
const REASONS = {
  [Change.OpenedConsecutiveFailures]: "consecutive-failures",
  [Change.OpenedFailureRate]: "failure-rate",
  [Change.OpenedSlowCallRate]: "slow-call-rate",
  [Change.OpenedProbeFailed]: "probe-failed",
  [Change.OpenedImported]: "imported",
};

/**
 * A change of the core (`core.StateChange`) as an event.
 * @param {string} key @param {core.StateChange} kind @param {number} at
 */
function change(key, kind, at) {
  if (kind === Change.HalfOpened) return { key, from: "open", to: "half-open", at };
  if (kind === Change.Closed) return { key, from: "half-open", to: "closed", at };
  return { key, from: kind === Change.OpenedProbeFailed ? "half-open" : "closed", to: "open", reason: REASONS[kind], at };
}

function report(error) {
  console.error("edge-deadline: options.onStateChange threw; the breaker carries on", error);
}

// A call's outcomes, named by the core (src/wasm/breaker.rs `CallOutcome`).
const { Success: SUCCESS, Failure: FAILURE, Timeout: TIMEOUT, Cancelled: CANCELLED } = core.CallOutcome;

// What an error shows, as flags the core names (src/wasm/breaker.rs `Found`).
const {
  Timeout: FOUND_TIMEOUT,
  Shed: FOUND_SHED,
  CircuitOpen: FOUND_CIRCUIT_OPEN,
  CallerLeft: FOUND_CALLER_LEFT,
  NotStarted: FOUND_NOT_STARTED,
} = core.Found;

/** `e.name`, or `undefined` when reading it throws. */
function nameOf(e) {
  try {
    return e.name;
  } catch {
    return undefined;
  }
}

/**
 * What `error` (and its causes) and the caller's `signal` show, for the
 * core's `breakerErrorOutcome`: a timeout, a shed call, an inner breaker's
 * refusal, a call refused for time (`InsufficientBudget`), a caller that left (an AbortError, or the signal aborted for a
 * reason that is not a timeout).
 * @param {unknown} error
 * @param {AbortSignal | undefined} signal
 */
function found(error, signal) {
  let flags = isTimeout(error, signal) ? FOUND_TIMEOUT : 0;
  inCauses(error, (e) => {
    const b = brandOf(e);
    if (b === "Overloaded") flags |= FOUND_SHED;
    else if (b === "CircuitOpen") flags |= FOUND_CIRCUIT_OPEN;
    else if (b === "InsufficientBudget") flags |= FOUND_NOT_STARTED;
    else if (b === undefined && nameOf(e) === "AbortError") flags |= FOUND_CALLER_LEFT;
    return false;
  });
  if (signal?.aborted && !isTimeout(signal.reason)) flags |= FOUND_CALLER_LEFT;
  return flags;
}

/**
 * The right to make one call through a breaker: say how it ended, once, with
 * `success()`, `failure(error?)`, `timeout()` or `cancel()`.
 */
export class CircuitPermit {
  #breaker;
  #slot;
  #probe;
  #key;
  #start;
  #slowMs;

  /** @internal */
  constructor(breaker, key, slot, probe, start, slowMs) {
    this.#breaker = breaker;
    this.#key = key;
    this.#slot = slot;
    this.#probe = probe;
    this.#start = start;
    this.#slowMs = slowMs;
  }

  /** The key the permit is for. */
  get key() {
    return this.#key;
  }

  /** Whether the call goes as a half-open probe. */
  get probe() {
    return this.#probe;
  }

  /** The call answered (slow if it took longer than its `slowMs`). */
  success() {
    this.#done(SUCCESS);
  }

  /**
   * The call failed. With `error`, the core first asks whether it is the
   * dependency's outcome at all: a timeout counts as one (slow), a shed call
   * (`Overloaded`), an inner breaker's `CircuitOpen`, an `InsufficientBudget`
   * (refused for time before it started) or an `AbortError` (the caller left)
   * counts nothing; of any other error, the breaker's
   * `isFailure` decides whether it counts as a failure (false: a success,
   * e.g. a 404).
   * @param {unknown} [error]
   */
  failure(error) {
    if (arguments.length === 0) return this.#done(FAILURE);
    this.#failed(error, undefined);
  }

  #failed(error, signal) {
    const b = this.#breaker;
    if (b === undefined) return;
    const outcome = core.breakerErrorOutcome(found(error, signal));
    if (outcome !== FAILURE) return this.#done(outcome);
    let verdict;
    try {
      verdict = classifyFailure(b, error);
    } catch (thrown) {
      this.#done(FAILURE);
      throw thrown;
    }
    this.#done(verdict ? FAILURE : SUCCESS);
  }

  static {
    failWith = (permit, error, signal) => permit.#failed(error, signal);
  }

  /** The call was cut at its timeout: a failure, and slow. */
  timeout() {
    this.#done(TIMEOUT);
  }

  /**
   * The caller gave up on the call (a client that left): nothing is counted,
   * and a probe's permit is free again.
   */
  cancel() {
    this.#done(CANCELLED);
  }

  #done(outcome) {
    const b = this.#breaker;
    if (b === undefined) return;
    this.#breaker = undefined;
    recordOutcome(b, this.#key, this.#slot, this.#probe, outcome, this.#start, this.#slowMs);
  }
}

/**
 * One key of a breaker, to hand to `retry` or a plan step (`{ circuit }`):
 * `breaker.for(key)`.
 */
export class Circuit {
  #breaker;
  #key;

  /** @internal */
  constructor(breaker, key) {
    this.#breaker = breaker;
    this.#key = key;
  }

  /** The breaker. */
  get breaker() {
    return this.#breaker;
  }

  /** The key. */
  get key() {
    return this.#key;
  }

  /** `breaker.acquire(key, options)`. @param {{ slowMs?: number }} [options] */
  acquire(options) {
    return this.#breaker.acquire(this.#key, options);
  }

  /** `breaker.state(key)`. */
  state() {
    return this.#breaker.state(this.#key);
  }

  /** `breaker.stats(key)`. */
  stats() {
    return this.#breaker.stats(this.#key);
  }
}

/** @type {(b: CircuitBreaker, key: string, slot: number, probe: boolean, outcome: core.CallOutcome, start: number, slowMs: number) => void} */
let recordOutcome;
/** @type {(permit: CircuitPermit, error: unknown, signal: AbortSignal | undefined) => void} */
let failWith;
/** @type {(b: CircuitBreaker, error: unknown) => boolean} */
let classifyFailure;

/**
 * A keyed circuit breaker: one object guards many upstreams (a key each).
 * Holds a little Wasm memory: `dispose()` frees it (a breaker normally lives
 * as long as the isolate).
 */
export class CircuitBreaker {
  #core;
  /** @type {Map<string, number>} */
  #slots = new Map();
  /**
   * By slot: whether the core's key is closed, as its answers said (only a
   * record or an import opens or closes a key, and both pass here). A closed
   * key's call then needs no `check` (the closed path's cost, BENCHMARKS.md).
   * @type {boolean[]}
   */
  #closed = [];
  #onStateChange;
  #isFailure;
  /** Whether every call is timed (`slowCallMs`); otherwise only one given `slowMs`. */
  #timed = false;
  /** The `otel` option as given (resolved at each change, so a later `traceWith` counts). */
  #otel;

  static {
    recordOutcome = (b, key, slot, probe, outcome, start, slowMs) => {
      // A call that ends after dispose() keeps its own result: its outcome has nowhere to go.
      if (b.#core === undefined) return;
      const t = now();
      const changed = b.#core.record(slot, t, probe, outcome, t - start, slowMs);
      if (changed !== undefined) {
        b.#closed[slot] = changed === Change.Closed;
        b.#emit(key, changed, t);
      }
    };
    classifyFailure = (b, error) => {
      const classify = b.#isFailure;
      if (!classify) return true;
      const verdict = classify(error);
      if (typeof verdict !== "boolean") {
        const e = argumentError("type", CODES.INVALID_RETURN, "options.isFailure", `'options.isFailure' must return true or false: it returned ${check.describe(verdict)}`);
        e.cause = error;
        throw e;
      }
      return verdict;
    };
  }

  /**
   * @param {import("./breaker.d.ts").CircuitBreakerOptions} [options]
   */
  constructor(options) {
    if (!isReady()) notReady("new CircuitBreaker");
    const o = check.obj("options", options, "an object like { consecutiveFailures, failureRate, openMs }", true);
    for (const name of ["consecutiveFailures", "failureRate", "slowCallRate", "slowCallMs", "windowSize", "windowMs", "minimumCalls", "openMs", "probes", "maxKeys"]) {
      check.optNumber(`options.${name}`, o[name], name.endsWith("Ms") ? undefined : "a number");
    }
    this.#onStateChange = o.onStateChange === undefined ? undefined : check.fn("options.onStateChange", o.onStateChange, "a function (event) => void");
    this.#isFailure = o.isFailure === undefined ? undefined : check.fn("options.isFailure", o.isFailure, "a function (error) => boolean");
    tracing(o.otel); // checks it: a TypeError naming options.otel
    this.#otel = o.otel;
    const { onStateChange: _a, isFailure: _b, otel: _c, ...numbers } = o;
    this.#core = new core.BreakerCore(numbers);
    this.#timed = o.slowCallMs !== undefined;
  }

  #live() {
    if (!this.#core) throw new Error("this CircuitBreaker was disposed; create a new one");
    return this.#core;
  }

  #slot(key, t) {
    const known = this.#slots.get(key);
    if (known !== undefined) return known;
    if (typeof key !== "string") throw check.typeError("key", "a string", key);
    const live = this.#live();
    const slot = live.key(key, t);
    if (live.evicted()) {
      // The core replaced the least recently used key: forget its slot.
      for (const [k, s] of this.#slots) {
        if (s === slot) {
          this.#slots.delete(k);
          break;
        }
      }
    }
    this.#slots.set(key, slot);
    this.#closed[slot] = false;
    return slot;
  }

  #emit(key, kind, at) {
    const listener = this.#onStateChange;
    const t = tracing(this.#otel);
    if (!listener && t === null) return;
    const event = change(key, kind, at);
    // Tracing (js/otel.js): an event on the span active now (a plan step's,
    // a retry's attempt's), or a span of its own when none is.
    if (t !== null) {
      const attributes = { "deadline.breaker.key": key, "deadline.breaker.from": event.from, "deadline.breaker.to": event.to };
      if (event.reason !== undefined) attributes["deadline.breaker.reason"] = event.reason;
      t.mark("deadline.breaker", attributes, at);
    }
    if (!listener) return;
    try {
      listener(event);
    } catch (error) {
      report(error);
    }
  }

  /**
   * A permit for one call on `key`, or a thrown `CircuitOpen` when the
   * breaker refuses it. Say how the call ended on the permit. `slowMs`: the
   * call's timeout; one that answers later than that is slow.
   * @param {string} key
   * @param {{ slowMs?: number }} [options]
   * @returns {CircuitPermit}
   */
  acquire(key, options) {
    let slowMs = NaN;
    if (options !== undefined) {
      const o = check.obj("options", options, "an object like { slowMs }");
      if (o.slowMs !== undefined) slowMs = check.number("options.slowMs", o.slowMs);
    }
    // The clock is read only where the answer needs it: a call that may be
    // slow is timed, and a key not known to be closed is checked at an instant.
    const known = this.#slots.get(key);
    const timed = this.#timed || slowMs === slowMs;
    if (known !== undefined && this.#closed[known] === true) {
      return new CircuitPermit(this, key, known, false, timed ? now() : NaN, slowMs);
    }
    const t = now();
    const slot = known ?? this.#slot(key, t);
    const live = this.#live();
    const admission = live.check(slot, t);
    if (admission === core.Admission.Closed) {
      this.#closed[slot] = true;
      return new CircuitPermit(this, key, slot, false, timed ? t : NaN, slowMs);
    }
    if (admission === core.Admission.Probe || admission === core.Admission.HalfOpened) {
      if (admission === core.Admission.HalfOpened) this.#emit(key, Change.HalfOpened, t);
      return new CircuitPermit(this, key, slot, true, timed ? t : NaN, slowMs);
    }
    const state = admission === core.Admission.HalfOpenFull ? "half-open" : "open";
    const until = live.refusedUntil();
    throw new CircuitOpen(key, state, until, until - t, core.circuitOpenText(key, until - t));
  }

  /**
   * One key of this breaker, for `retry(fn, { circuit })` and a plan step's
   * `p.run(name, fn, { circuit })`.
   * @param {string} key
   * @returns {Circuit}
   */
  for(key) {
    if (typeof key !== "string") throw check.typeError("key", "a string", key);
    return new Circuit(this, key);
  }

  /**
   * Runs `fn()` through the breaker on `key`: rejects with `CircuitOpen`
   * without calling it when refused; otherwise records how it went (as
   * `permit.failure(error)` says, a timeout a slow failure, a shed call, an
   * inner `CircuitOpen` or a caller that left nothing; a call longer than
   * `slowMs`, its step's timeout, is slow). `signal`: the caller's (a
   * request's, a deadline's); a rejection after it aborted for a reason that
   * is not a timeout is the caller leaving, not the dependency failing.
   * @template T
   * @param {string} key
   * @param {() => T | PromiseLike<T>} fn
   * @param {{ slowMs?: number, signal?: AbortSignal }} [options]
   * @returns {Promise<T>}
   */
  run(key, fn, options) {
    try {
      check.fn("fn", fn, "a function () => Promise");
      const signal = options === undefined ? undefined : check.optSignal("options.signal", check.obj("options", options, "an object like { slowMs, signal }").signal);
      const permit = this.acquire(key, options);
      let result;
      try {
        result = fn();
      } catch (error) {
        failWith(permit, error, signal);
        throw error;
      }
      return Promise.resolve(result).then(
        (value) => {
          permit.success();
          return value;
        },
        (error) => {
          failWith(permit, error, signal);
          throw error;
        },
      );
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * The state a call on `key` would meet now: "closed", "open" or
   * "half-open" (an open key past its instant reads half-open).
   * @param {string} key
   */
  state(key) {
    return this.stats(key).state;
  }

  /**
   * `{ state, retryAt, consecutiveFailures, calls, failures, slowCalls }`
   * of `key` now.
   * @param {string} key
   */
  stats(key) {
    const t = now();
    return this.#live().stats(this.#slot(key, t), t);
  }

  /** The keys held, least recently made first. */
  keys() {
    return this.#live().names();
  }

  /**
   * The keys' states as bytes, for `importState` in another isolate (through
   * storage): each key's state and, when open, the time left.
   * @returns {Uint8Array}
   */
  exportState() {
    return this.#live().exportState(now(), Date.now());
  }

  /**
   * Takes in `exportState()` bytes: a key open there (with time left, less
   * the time since the export by the wall clocks) opens here, and
   * `onStateChange` says so (reason "imported"). A key closed there changes
   * nothing here. Bytes that are not an exported state throw a RangeError
   * (`.param` "bytes") and change nothing.
   * @param {Uint8Array} bytes
   */
  importState(bytes) {
    if (!(bytes instanceof Uint8Array)) throw check.typeError("bytes", "a Uint8Array from exportState()", bytes);
    const t = now();
    const opened = this.#live().importState(bytes, t, Date.now());
    const names = this.#live().names();
    this.#slots.clear();
    this.#closed = [];
    for (let i = 0; i < names.length; i++) this.#slots.set(names[i], i);
    for (const slot of opened) this.#emit(names[slot], Change.OpenedImported, t);
  }

  /** Frees the breaker's Wasm memory; using it afterwards throws. */
  dispose() {
    this.#core?.free();
    this.#core = undefined;
    // The closed check reads only these: with them gone, every use throws.
    this.#slots.clear();
    this.#closed = [];
  }
}

if (typeof Symbol.dispose === "symbol") {
  CircuitBreaker.prototype[Symbol.dispose] = CircuitBreaker.prototype.dispose;
}
