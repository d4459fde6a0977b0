// Deadline: one absolute instant on the monotonic clock, set once at the edge
// and passed down. Validation and the deadline arithmetic are the Wasm
// core's (src/core/deadline.rs); this file owns what only the host can do:
// reading the clock, timers (and their rounding, a hot path kept in JS; see
// the README's Design), AbortControllers and listeners on parent signals.
//
// # Invariants
// 1. `at` never changes; derived deadlines (`reserve`, `min`) are new objects.
// 2. A deadline owns at most one AbortController and at most one pending
//    wake-up (an entry in the shared queue of js/timers.js, or in workerd a
//    timer of its own), created lazily by the first `signal()`; every later
//    `signal()` returns the same AbortSignal.
// 3. The signal never aborts for time before `performance.now() >= at`:
//    host timers are armed rounded up (js/timers.js `timerMs`), and a wake
//    before the instant re-arms instead of firing. Deadlines past the
//    2^31−1 ms host-timer limit are re-armed in slices, never truncated.
// 4. When a parent signal aborts, the deadline's signal aborts with the
//    parent's `reason`. Whichever fires first, the timer is cleared and every
//    parent listener is removed in the same turn.
// 5. After `dispose()` nothing of the deadline is pending: no queue entry or
//    timer, no listener on any parent. The deadline holds no Wasm memory at
//    any time (it is two numbers and some JS objects).
// 6. Timers never keep a Node or Deno process alive.

import * as core from "./edge_deadline.js";
import { DeadlineExceeded } from "./errors.js";
import { awaited } from "./keepalive.js";
import { isReady, notReady } from "./load.js";
import { SHARED_WAKEUPS, cancel, schedule, timerMs } from "./timers.js";
import { describe, isAbortSignal, number } from "./validate.js";
import * as propagation from "./propagation.js";

const now = () => performance.now();

function parentsFrom(options, where) {
  if (options === undefined) return EMPTY;
  if (options === null || typeof options !== "object") {
    throw new TypeError(`'options' of ${where} must be an object like { signal }: current value is ${describe(options)}`);
  }
  const { signal } = options;
  if (signal === undefined) return EMPTY;
  if (!isAbortSignal(signal)) {
    throw new TypeError(`'options.signal' of ${where} must be an AbortSignal: current value is ${describe(signal)}`);
  }
  return [signal];
}

const EMPTY = Object.freeze([]);
const TOKEN = Symbol("Deadline constructor");

export class Deadline {
  #at;
  #parents;
  #controller = null;
  #timer = undefined;
  #wakeup = null;
  #onParentAbort = null;
  #disposed = false;

  /** @private Use `Deadline.in`, `Deadline.at` or a derivation. */
  constructor(token, at, parents) {
    if (token !== TOKEN) throw new TypeError("use Deadline.in(ms) or Deadline.at(instantMs) to create a deadline");
    this.#at = at;
    this.#parents = parents;
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
   * from now. See js/propagation.js.
   */
  static fromHeaders(headers, options) {
    return propagation.fromHeaders(headers, options);
  }

  /**
   * `now + min(every cap in front: the platform's, the product's) − fallbackReserveMs`.
   * See js/propagation.js and src/core/caps.rs.
   */
  static forPlatform(options) {
    return propagation.forPlatform(options);
  }

  /** The earliest of the given deadlines; the result links every parent signal. */
  static min(...deadlines) {
    if (deadlines.length === 0) throw new TypeError("Deadline.min needs at least one Deadline");
    let best = deadlines[0];
    deadlines.forEach((d, i) => {
      if (!(d instanceof Deadline)) {
        throw new TypeError(`argument ${i} of Deadline.min must be a Deadline: current value is ${describe(d)}`);
      }
      if (d.#at < best.#at) best = d;
    });
    const parents = [...new Set(deadlines.flatMap((d) => d.#parents))];
    return new Deadline(TOKEN, best.#at, parents.length ? parents : EMPTY);
  }

  /** The earlier of this deadline and `other`. */
  min(other) {
    return Deadline.min(this, other);
  }

  /** The instant, in ms on the `performance.now()` timeline. */
  get at() {
    return this.#at;
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

  /** A new deadline `ms` earlier, keeping this one's parents: time held back for later work. */
  reserve(ms) {
    number("ms", ms);
    return new Deadline(TOKEN, core.reserve(this.#at, ms), this.#parents);
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
    if (typeof run !== "function") {
      throw new TypeError(`'run' of step must be a function (signal, budgetMs) => Promise: current value is ${describe(run)}`);
    }
    this.#throwIfParentAborted();
    const budgetMs = core.admit(this.#at, now(), minMs);
    return run(this.signal(), budgetMs);
  }

  // The client left: no budget, no new work, whatever the clock says.
  #throwIfParentAborted() {
    for (const parent of this.#parents) if (parent.aborted) throw parent.reason;
  }

  /** The deadline's AbortSignal: one per deadline, one timer behind it. */
  signal() {
    if (this.#controller) return this.#controller.signal;
    if (this.#disposed) throw new Error("this deadline was disposed; create a new one (or call signal() before dispose)");
    const controller = (this.#controller = new AbortController());
    for (const parent of this.#parents) {
      if (parent.aborted) {
        controller.abort(parent.reason);
        return controller.signal;
      }
    }
    if (this.#parents.length) {
      this.#onParentAbort = (event) => this.#settle(event.target.reason);
      for (const parent of this.#parents) parent.addEventListener("abort", this.#onParentAbort);
    }
    this.#arm();
    return controller.signal;
  }

  // Timer arithmetic stays in JS: this runs on every fresh signal(), where a
  // Wasm call costs more than the arithmetic (BENCHMARKS.md, "Design").
  #arm() {
    const left = this.#at - now();
    if (left <= 0) {
      this.#settle(new DeadlineExceeded(this.#at, -left));
      return;
    }
    if (SHARED_WAKEUPS) {
      this.#wakeup = { at: this.#at, index: -1, fire: () => this.#settle(new DeadlineExceeded(this.#at, now() - this.#at)) };
      schedule(this.#wakeup);
      return;
    }
    // workerd: a timer of our own, rounded up so it never fires before the
    // instant; past the host limit, a maximal slice re-armed when it fires.
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#arm();
    }, timerMs(left));
  }

  /** Aborts the signal (once) and releases the timer and parent listeners. */
  #settle(reason) {
    this.#release();
    if (!this.#controller.signal.aborted) this.#controller.abort(reason);
  }

  #release() {
    if (this.#wakeup) {
      cancel(this.#wakeup);
      this.#wakeup = null;
    }
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    if (this.#onParentAbort) {
      for (const parent of this.#parents) parent.removeEventListener("abort", this.#onParentAbort);
      this.#onParentAbort = null;
    }
  }

  /** Clears the timer and parent listeners. The signal, if any, stays as it is. */
  dispose() {
    this.#disposed = true;
    this.#release();
  }

  /** Readable in logs: `Deadline(in 812.3 ms)`. */
  toString() {
    const left = this.#at - now();
    return left > 0 ? `Deadline(in ${left.toFixed(1)} ms)` : `Deadline(passed ${(-left).toFixed(1)} ms ago)`;
  }
}

if (typeof Symbol.dispose === "symbol") {
  Deadline.prototype[Symbol.dispose] = Deadline.prototype.dispose;
}

/** Seed 002's launch-boundary arithmetic: `max(0, deadlineMs − nowMs − reserveMs)`. */
export function generationBudget(deadlineMs, nowMs, reserveMs) {
  if (!isReady()) notReady("generationBudget");
  number("deadlineMs", deadlineMs);
  number("nowMs", nowMs);
  number("reserveMs", reserveMs);
  return core.generationBudget(deadlineMs, nowMs, reserveMs);
}
