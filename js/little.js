// Little's law (src/core/little.rs, bound in src/wasm/little.rs):
// `concurrencyBound` and `maxTimeoutFor` compute it; `ConcurrencyLimiter`
// bounds occupancy directly, shedding instead of queueing. The options
// objects cross as they are (types generated from the Rust structs); every
// range check is the core's, this file checks JS types.
//
// # Why shed and not queue
// Little's law: in flight = arrival rate × time each call stays. When a
// dependency slows down, callers keep arriving and occupancy climbs to
// whatever the timeout permits (50 req/s × 30 s = 1 500 sockets). A queue in
// front of a slow dependency only moves that occupancy into memory and adds
// its wait to every call; a limiter that rejects at once keeps latency and
// memory bounded and tells the caller now, while it can still fall back.
// `maxTimeoutFor({ ratePerSec, limit })` says which timeout a limit allows;
// the class enforces the limit itself.
//
// # Invariants
// 1. At most `limit` calls of `fn` are running (started and not settled).
// 2. When full, `run(fn)` rejects with `Overloaded` without calling `fn`;
//    nothing is queued and no timer is created.
// 3. A slot is released exactly once per started call, on every path: `fn`
//    returns a value, resolves, rejects, throws synchronously, or returns a
//    thenable whose `then` throws.
// 4. `.param` of a bad argument names it as the caller wrote it
//    (`options.ratePerSec`, `options.limit`, `fn`).
// 5. A call that settled is not counted against a `run` made after it settled,
//    even from the call's own `.then` (which runs before the reaction that
//    releases its slot): when full, the verdict waits for the microtasks
//    already queued (no timer, nothing queued of the call itself).

import * as core from "./edge_deadline_derive.js";
import { Overloaded } from "./errors.js";
import { isReady, notReady } from "./derive-load.js";
import { number, obj, typeError } from "./validate.js";

export { isOverloaded, Overloaded } from "./errors.js";

export class ConcurrencyLimiter {
  #limit;
  #inFlight = 0;
  #shed = 0;
  #release = () => {
    this.#inFlight--;
  };

  /** @param {{ limit: number }} options whole number of slots, 1 … 2^32 − 1 */
  constructor(options) {
    if (!isReady()) notReady("ConcurrencyLimiter");
    const o = obj("options", options, "an object like { limit }");
    this.#limit = core.checkSlots({ limit: number("options.limit", o.limit, "a whole number of slots") });
  }

  /** The number of slots. */
  get limit() {
    return this.#limit;
  }

  /** Calls running now. */
  get inFlight() {
    return this.#inFlight;
  }

  /** Free slots now. */
  get available() {
    return this.#limit - this.#inFlight;
  }

  /** Calls rejected with `Overloaded` so far. */
  get shed() {
    return this.#shed;
  }

  /**
   * Runs `fn()` if a slot is free, holding the slot until its result settles;
   * otherwise rejects with `Overloaded` in the same turn and never calls `fn`.
   * When all slots are taken, the verdict comes after the microtasks already
   * queued, so a call that settled in this turn (its own `.then` included)
   * has released its slot first; `fn` then runs one microtask later.
   * @template T
   * @param {() => T | PromiseLike<T>} fn
   * @returns {Promise<T>}
   */
  run(fn) {
    if (typeof fn !== "function") {
      return Promise.reject(typeError("fn", "a function", fn));
    }
    if (this.#inFlight >= this.#limit) {
      // A call whose result settled in this turn has its slot released by a
      // reaction queued behind its own `.then`s (invariant 5): one microtask
      // later, that slot is free, and a follow-up made from such a `.then` runs.
      return Promise.resolve(fn).then(this.#admitLate);
    }
    return this.#start(fn);
  }

  #admitLate = (fn) => {
    if (this.#inFlight >= this.#limit) {
      this.#shed++;
      throw new Overloaded(this.#limit, this.#inFlight);
    }
    return this.#start(fn);
  };

  #start(fn) {
    this.#inFlight++;
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

  toString() {
    return `ConcurrencyLimiter(${this.#inFlight}/${this.#limit} in flight, ${this.#shed} shed)`;
  }
}

/** Worst-case calls in flight: `ratePerSec × timeoutMs / 1000`. */
export function concurrencyBound(options) {
  if (!isReady()) notReady("concurrencyBound");
  const o = obj("options", options, "an object like { ratePerSec, timeoutMs }");
  return core.concurrencyBound({
    ratePerSec: number("options.ratePerSec", o.ratePerSec, "a number of requests per second"),
    timeoutMs: number("options.timeoutMs", o.timeoutMs, "a number of milliseconds"),
  });
}

/** The longest timeout (ms) that keeps `ratePerSec × timeout` within `limit`. */
export function maxTimeoutFor(options) {
  if (!isReady()) notReady("maxTimeoutFor");
  const o = obj("options", options, "an object like { ratePerSec, limit }");
  return core.maxTimeoutFor({
    ratePerSec: number("options.ratePerSec", o.ratePerSec, "a number of requests per second"),
    limit: number("options.limit", o.limit, "a number of slots"),
  });
}
