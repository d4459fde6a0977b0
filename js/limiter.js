// ConcurrencyLimiter: bounds the calls in flight to a dependency, with a
// fixed limit or one that adapts to measured round trips ("aimd",
// "gradient2"). Every decision is the core's machine (src/core/limiter.rs,
// bound in src/wasm/limiter.rs): the options' ranges, the limit after each
// finished call, the estimated wait of a queued caller. This file owns what
// only the host has: the promises, the clock readings, the waiting callers
// and their abort listeners.
//
// # Why shed, and when to wait
// Little's law: in flight = arrival rate × time each call stays. A queue in
// front of a slow dependency only moves that occupancy into memory and adds
// its wait to every call; a limiter that rejects at once (`Overloaded`)
// keeps latency and memory bounded and tells the caller now, while it can
// still fall back. So nothing waits unless `maxQueue` says so, and then only
// a caller whose budget (`deadline`, `remainingMs`) covers the wait the core
// estimates for its place in the queue; the others are shed at once.
//
// # Invariants
// 1. At most `limit` calls of `fn` are running (started and not settled);
//    an adaptive limit that shrinks below the calls running admits none
//    until enough have settled.
// 2. When full and nothing may wait, `run(fn)` rejects with `Overloaded`
//    without calling `fn`; nothing is queued and no timer is created.
// 3. A slot is released exactly once per started call, on every path: `fn`
//    returns a value, resolves, rejects, throws synchronously, or returns a
//    thenable whose `then` throws; a permit's `release`/`drop`/`ignore`
//    after the first call does nothing.
// 4. `.param` of a bad argument names it as the caller wrote it
//    (`options.minLimit`, `opts.signal`, `fn`).
// 5. A call that settled is not counted against a `run` made after it settled,
//    even from the call's own `.then` (which runs before the reaction that
//    releases its slot): when full, the verdict waits for the microtasks
//    already queued (no timer, nothing queued of the call itself).
// 6. Waiting callers are served in order, each before any new caller; one
//    whose signal aborts (or deadline passes) leaves the queue rejected with
//    the signal's reason, and no listener of a caller that left or started
//    stays on its signal. The limiter arms no timer of its own.
// 7. Round trips are measured from `fn`'s start to its settling; a rejection
//    that is a timeout (`isTimeout`) or `Overloaded` is a drop, any other
//    rejection is no sample at all.

import * as core from "./edge_deadline_derive.js";
import { CODES, isDeadline, isOverloaded, isTimeout, Overloaded } from "./errors.js";
import { isReady, notReady } from "./derive-load.js";
import { isAbortSignal, number, obj, typeError } from "./validate.js";
import { argumentError } from "./errors.js";
import { now } from "./timers.js";

export { isOverloaded, Overloaded } from "./errors.js";

const NAMES = ["aimd", "gradient2"];
const OPTIONS = [
  "initialLimit",
  "minLimit",
  "maxLimit",
  "backoffRatio",
  "timeoutMs",
  "tolerance",
  "smoothing",
  "queueSize",
  "probeIntervalMs",
  "probeSamples",
  "windowMs",
  "windowSize",
  "maxQueue",
];

// The host clock, read at most once per microtask checkpoint: a call that
// holds a slot reads the time when it starts and when it ends, and two
// `performance.now()` reads were most of the budget of acquire + release
// (BENCHMARKS.md, "Concurrency limiter"). Reads in the same synchronous
// stretch share one value, as workerd's clock does anyway (it advances only
// between I/O events). `run(fn)` ends a call in a promise reaction, after the
// checkpoint that cleared the value, so a synchronous `fn`'s own time is
// measured; a caller's own `tryAcquire()` and `release()` in one synchronous
// stretch measure 0. The clock is the package's (js/timers.js `now`), so a
// test's fake clock (`setClock`) drives it too.
// The checkpoint is a reaction to a settled promise, not queueMicrotask
// (far dearer per call in workerd: BENCHMARKS.md, "Concurrency limiter").
let tick = NaN;
const clearTick = () => {
  tick = NaN;
};
const settled = Promise.resolve();
function hostNow() {
  if (tick === tick) return tick;
  tick = now();
  settled.then(clearTick);
  return tick;
}

/** A slot held by `tryAcquire()`: give it back exactly once. */
class Permit {
  #limiter;
  #start;
  #inFlight;
  /** @internal */
  constructor(limiter, start, inFlight) {
    this.#limiter = limiter;
    this.#start = start;
    this.#inFlight = inFlight;
  }
  /** The call succeeded: its round trip is a sample. */
  release() {
    this.#end(0);
  }
  /** The call failed from overload (timed out, was shed downstream): a drop. */
  drop() {
    this.#end(1);
  }
  /** The call failed for another reason: no sample. */
  ignore() {
    this.#end(2);
  }
  #end(how) {
    const l = this.#limiter;
    if (l === undefined) return;
    this.#limiter = undefined;
    l._done(this.#start, this.#inFlight, how);
  }
}

export class ConcurrencyLimiter {
  #limit;
  #inFlight = 0;
  #shed = 0;
  /** The core machine; undefined for a fixed limit that never queues. */
  #core;
  #now = hostNow;
  #maxQueue = 0;
  /** Waiting callers, in order: { fn, resolve, reject, signals, endsAt, onAbort }. */
  #queue = [];
  #algorithm = "fixed";
  #release = () => {
    this.#inFlight--;
  };

  /**
   * @param {{ limit: number | "aimd" | "gradient2" } & Record<string, unknown>} options
   */
  constructor(options) {
    if (!isReady()) notReady("ConcurrencyLimiter");
    const o = obj("options", options, "an object like { limit }");
    const limit = o.limit;
    if (typeof limit !== "number" && !NAMES.includes(limit)) {
      throw typeError("options.limit", 'a whole number of slots, "aimd" or "gradient2"', limit);
    }
    const given = { limit };
    for (const k of OPTIONS) if (o[k] !== undefined) given[k] = number(`options.${k}`, o[k], "a number");
    const machine = new core.LimiterCore(given, this.#now());
    this.#limit = machine.limit();
    this.#maxQueue = machine.maxQueue();
    this.#algorithm = machine.algorithm();
    if (this.#algorithm === "fixed" && this.#maxQueue === 0) machine.free();
    else this.#core = machine;
  }

  /** The limit now (a fixed limit's number of slots). */
  get limit() {
    return this.#limit;
  }

  /** `"fixed"`, `"aimd"` or `"gradient2"`. */
  get algorithm() {
    return this.#algorithm;
  }

  /** Calls running now. */
  get inFlight() {
    return this.#inFlight;
  }

  /** Free slots now (0 when an adaptive limit shrank below the calls running). */
  get available() {
    const free = this.#limit - this.#inFlight;
    return free > 0 ? free : 0;
  }

  /** Calls rejected with `Overloaded` so far. */
  get shed() {
    return this.#shed;
  }

  /** Callers waiting for a slot now. */
  get queued() {
    return this.#queue.length;
  }

  /** The last measurement window's average round trip, ms (`undefined` before one closed or for a fixed limit that never queues). */
  get rttMs() {
    const r = this.#core?.rttMs();
    return r === undefined || Number.isNaN(r) ? undefined : r;
  }

  /**
   * The wait the limiter estimates for the next caller to queue, ms:
   * position × round trip / limit (0 before any round trip was measured).
   */
  estimatedWaitMs() {
    return this.#core === undefined ? 0 : this.#core.waitMs(this.#queue.length + 1);
  }

  /**
   * Takes a slot now if one is free and nobody waits, or answers `undefined`
   * (counted in `shed`). The caller gives the slot back with the permit's
   * `release()` (success: a round-trip sample), `drop()` (failed from
   * overload) or `ignore()` (no sample).
   * @returns {Permit | undefined}
   */
  tryAcquire() {
    if (this.#inFlight >= this.#limit || this.#queue.length > 0) {
      this.#shed++;
      return undefined;
    }
    const n = ++this.#inFlight;
    return new Permit(this, this.#core === undefined ? 0 : this.#now(), n);
  }

  /**
   * Runs `fn()` if a slot is free, holding the slot until its result settles;
   * otherwise, when `maxQueue` allows and the caller's budget covers the
   * estimated wait, waits for one; otherwise rejects with `Overloaded` in the
   * same turn and never calls `fn`. When all slots are taken, the verdict
   * comes after the microtasks already queued, so a call that settled in this
   * turn (its own `.then` included) has released its slot first; `fn` then
   * runs one microtask later.
   * @template T
   * @param {() => T | PromiseLike<T>} fn
   * @param {{ signal?: AbortSignal, deadline?: { remaining(): number, signal(): AbortSignal }, remainingMs?: number }} [opts]
   * @returns {Promise<T>}
   */
  run(fn, opts) {
    if (typeof fn !== "function") {
      return Promise.reject(typeError("fn", "a function", fn));
    }
    let wait;
    if (opts !== undefined) {
      try {
        wait = readOpts(opts);
      } catch (e) {
        return Promise.reject(e);
      }
      const aborted = wait.signals.find((s) => s.aborted);
      if (aborted !== undefined) return Promise.reject(aborted.reason);
    }
    if (this.#inFlight >= this.#limit || this.#queue.length > 0) {
      // A call whose result settled in this turn has its slot released by a
      // reaction queued behind its own `.then`s (invariant 5): one microtask
      // later, that slot is free, and a follow-up made from such a `.then` runs.
      return Promise.resolve(fn).then((f) => this.#admitLate(f, wait));
    }
    return this.#start(fn);
  }

  #admitLate(fn, wait) {
    if (this.#inFlight < this.#limit && this.#queue.length === 0) return this.#start(fn);
    const aborted = wait?.signals.find((s) => s.aborted);
    if (aborted !== undefined) throw aborted.reason;
    const position = this.#queue.length + 1;
    if (position > this.#maxQueue || this.#core.waitMs(position) > (wait === undefined ? Infinity : wait.remaining())) {
      this.#shed++;
      throw new Overloaded(this.#limit, this.#inFlight);
    }
    return new Promise((resolve, reject) => {
      const signals = wait === undefined ? [] : wait.signals;
      // The instant its budget ends: a turn that comes later sheds it (core.limiterMayStart).
      const endsAt = wait === undefined ? Infinity : this.#now() + wait.remaining();
      const waiter = { fn, resolve, reject, signals, endsAt, onAbort: undefined };
      if (signals.length > 0) {
        waiter.onAbort = (event) => {
          const i = this.#queue.indexOf(waiter);
          if (i < 0) return;
          this.#queue.splice(i, 1);
          unlisten(waiter);
          reject(event.target.reason);
        };
        for (const s of signals) s.addEventListener("abort", waiter.onAbort);
      }
      this.#queue.push(waiter);
    });
  }

  #start(fn) {
    const inFlight = ++this.#inFlight;
    if (this.#core === undefined) {
      let result;
      try {
        result = fn();
      } catch (error) {
        this.#release();
        return Promise.reject(error);
      }
      const settled = Promise.resolve(result);
      settled.then(this.#release, this.#release);
      return settled;
    }
    const t0 = this.#now();
    let result;
    try {
      result = fn();
    } catch (error) {
      this._done(t0, inFlight, isDrop(error) ? 1 : 2);
      return Promise.reject(error);
    }
    const settled = Promise.resolve(result);
    settled.then(
      () => this._done(t0, inFlight, 0),
      (e) => this._done(t0, inFlight, isDrop(e) ? 1 : 2),
    );
    return settled;
  }

  /** @internal A slot comes back: 0 success, 1 drop, 2 no sample. */
  _done(t0, inFlight, how) {
    this.#inFlight--;
    const c = this.#core;
    if (c === undefined) return;
    if (how !== 2) {
      const t = this.#now();
      this.#limit = c.sample(t, t - t0, inFlight, how === 1);
    }
    if (this.#queue.length > 0) this.#drain();
  }

  #drain() {
    let t;
    while (this.#queue.length > 0 && this.#inFlight < this.#limit) {
      const w = this.#queue.shift();
      unlisten(w);
      if (w.endsAt !== Infinity && !core.limiterMayStart((t ??= this.#now()), w.endsAt)) {
        // Its budget was spent waiting: nobody waits for this call any more.
        this.#shed++;
        w.reject(new Overloaded(this.#limit, this.#inFlight));
        continue;
      }
      w.resolve(this.#start(w.fn));
    }
  }

  toString() {
    const q = this.#queue.length > 0 ? `, ${this.#queue.length} queued` : "";
    return `ConcurrencyLimiter(${this.#inFlight}/${this.#limit} in flight${q}, ${this.#shed} shed)`;
  }
}

function unlisten(w) {
  for (const s of w.signals) s.removeEventListener("abort", w.onAbort);
}

function isDrop(e) {
  return isOverloaded(e) || isTimeout(e);
}

/** `run`'s options: the budget that bounds a wait and the signal that ends one. */
function readOpts(opts) {
  const o = obj("opts", opts, "an object like { deadline, signal, remainingMs }");
  const signals = [];
  let remaining = () => Infinity;
  if (o.signal !== undefined) {
    if (!isAbortSignal(o.signal)) throw typeError("opts.signal", "an AbortSignal", o.signal);
    signals.push(o.signal);
  }
  if (o.deadline !== undefined) {
    const d = o.deadline;
    if (!isDeadline(d)) throw typeError("opts.deadline", "a Deadline (from edge-deadline)", d);
    remaining = () => d.remaining();
    signals.push(d.signal());
  }
  if (o.remainingMs !== undefined) {
    const ms = number("opts.remainingMs", o.remainingMs);
    if (Number.isNaN(ms) || ms < 0) throw argumentError("range", Number.isNaN(ms) ? CODES.NOT_FINITE : CODES.NEGATIVE, "opts.remainingMs", `'opts.remainingMs' must be 0 or more ms: current value is ${ms}`);
    const before = remaining;
    remaining = () => Math.min(before(), ms);
  }
  return { signals, remaining };
}
