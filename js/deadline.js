// Deadline: one absolute instant on the monotonic clock, set once at the edge
// and passed down. Validation and the deadline arithmetic are the Wasm
// core's (src/core/deadline.rs); this file owns what only the host can do:
// reading the clock, timers (and their rounding, a hot path kept in JS; see
// the README's Design), AbortControllers and listeners on parent signals.
//
// # Roots and the wake-ups derived from them
// `Deadline.in`/`at` (and the header and platform constructors) make a root;
// `reserve` and `min` derive from one. Every deadline derived from a root, and
// every timer that `watch` arms for a root or a derivation (plan steps, retry
// and hedge attempts, stall timers), waits in the root's wake-up queue
// (js/timers.js): in workerd that queue has one host timer of the request
// that armed it first, which is the only timer the whole family holds.
//
// # Invariants
// 1. `at` never changes; derived deadlines (`reserve`, `min`) are new objects
//    sharing their root's queue and parents.
// 2. A deadline owns at most one AbortController and at most one pending
//    wake-up in its root's queue, created lazily by the first `signal()`;
//    every later `signal()` returns the same AbortSignal.
// 3. The signal never aborts for time before `performance.now() >= at`:
//    host timers are armed rounded up (js/timers.js `timerMs`), and a wake
//    before the instant re-arms instead of firing. Deadlines past the
//    2^31−1 ms host-timer limit are re-armed in slices, never truncated.
// 4. When a parent signal aborts, the deadline's signal aborts with the
//    parent's `reason`. Whichever fires first, the wake-up is cancelled and
//    the deadline leaves its parents' links in the same turn. A parent signal
//    has one listener however many deadlines link to it (`ParentLink`),
//    removed by the end of the turn in which its last deadline left.
// 5. After `dispose()` nothing of the deadline is pending: no wake-up, no
//    link membership, no watcher (and, by the end of the turn, no listener
//    on a parent no other deadline links to). The deadline holds no Wasm
//    memory at any time (it is two numbers and some JS objects).
// 6. Timers never keep a Node or Deno process alive, `watch` timers included
//    (whoever awaits the work they bound keeps it alive: js/keepalive.js).
// 7. workerd: a signal asked for after its instant has passed is aborted by
//    then, even if the timer that should have fired died with an earlier
//    request (a deadline kept across requests: see README "Timers").

import * as core from "./edge_deadline.js";
import { DeadlineExceeded } from "./errors.js";
import { awaited } from "./keepalive.js";
import { isReady, notReady } from "./load.js";
import { IS_WORKERD, Wakeup, sharedQueue, turnQueue } from "./timers.js";
import { describe, isAbortSignal, number } from "./validate.js";
import * as propagation from "./propagation.js";

const now = () => performance.now();

// `Deadline.in(ms, request.signal)` is what people write first: an AbortSignal
// in the options' place is the parent, never an object whose missing `signal`
// would silently leave the deadline unlinked.
function parentsFrom(options, where) {
  if (options === undefined) return EMPTY;
  if (isAbortSignal(options)) return [options];
  if (options === null || typeof options !== "object") {
    throw new TypeError(`'options' of ${where} must be an object like { signal } or an AbortSignal: current value is ${describe(options)}`);
  }
  const { signal } = options;
  if (signal === undefined) return EMPTY;
  if (!isAbortSignal(signal)) {
    throw new TypeError(`'options.signal' of ${where} must be an AbortSignal: current value is ${describe(signal)}`);
  }
  return [signal];
}

/** @type {readonly AbortSignal[]} */
const EMPTY = Object.freeze([]);
const TOKEN = Symbol("Deadline constructor");
const PARENT_ABORTED = Symbol("parent aborted");
const WATCH = Symbol("watch");
const WAKE = Symbol("wake");

/**
 * The one "abort" listener on a parent signal, shared by every deadline
 * linked to it. Removal is deferred to the end of the turn, so a deadline
 * made and disposed per call in a loop adds one listener per turn, not one
 * per deadline.
 */
class ParentLink {
  constructor(signal) {
    this.signal = signal;
    this.members = new Set();
    this.listening = false;
    this.sweeping = false;
    this.onAbort = () => {
      const members = [...this.members];
      this.members.clear();
      this.unlisten();
      for (const d of members) d[PARENT_ABORTED](signal.reason);
    };
    this.sweep = () => {
      this.sweeping = false;
      if (this.members.size === 0) this.unlisten();
    };
  }

  static join(signal, d) {
    let link = links.get(signal);
    if (link === undefined) links.set(signal, (link = new ParentLink(signal)));
    link.members.add(d);
    if (!link.listening) {
      link.listening = true;
      signal.addEventListener("abort", link.onAbort);
    }
  }

  static leave(signal, d) {
    const link = links.get(signal);
    if (link === undefined || !link.members.delete(d) || link.members.size || link.sweeping) return;
    link.sweeping = true;
    queueMicrotask(link.sweep);
  }

  unlisten() {
    if (!this.listening) return;
    this.listening = false;
    this.signal.removeEventListener("abort", this.onAbort);
    links.delete(this.signal);
  }
}

/** AbortSignal → its ParentLink; weak, so a parent nobody holds is collected with its link. */
const links = new WeakMap();

export class Deadline {
  #at;
  #parents;
  /** @type {Deadline} */
  #root;
  #queue = null; // the root's only: the wake-up queue of the whole family
  /** @type {AbortController | null} */
  #controller = null;
  /** @type {DeadlineWakeup | null} */
  #wakeup = null;
  /** @type {Watch | null} */
  #watchers = null; // the first Watch of a doubly-linked list: told when the signal aborts
  #linked = false;
  #aborted = false; // the signal has aborted (read without the AbortSignal accessor)
  #disposed = false;

  /** @private Use `Deadline.in`, `Deadline.at` or a derivation. */
  constructor(token, at, parents, root) {
    if (token !== TOKEN) throw new TypeError("use Deadline.in(ms) or Deadline.at(instantMs) to create a deadline");
    this.#at = at;
    this.#parents = parents;
    this.#root = root ?? this;
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
    return new Deadline(TOKEN, best.#at, parents.length ? parents : EMPTY, best.#root);
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
    return new Deadline(TOKEN, core.reserve(this.#at, ms), this.#parents, this.#root);
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

  /** The deadline's AbortSignal: one per deadline, one wake-up behind it. */
  signal() {
    const controller = this.#controller;
    if (controller !== null) {
      // Invariant 7: a wake-up still pending after its instant may have died with another request.
      if (IS_WORKERD && this.#wakeup !== null && this.#at <= now()) this.#expire();
      return controller.signal;
    }
    if (this.#disposed) throw new Error("this deadline was disposed; create a new one (or call signal() before dispose)");
    this.#controller = new AbortController();
    const parents = this.#parents;
    for (let i = 0; i < parents.length; i++) {
      if (parents[i].aborted) {
        this.#aborted = true;
        this.#controller.abort(parents[i].reason);
        return this.#controller.signal;
      }
    }
    if (parents.length) {
      this.#linked = true;
      for (let i = 0; i < parents.length; i++) ParentLink.join(parents[i], this);
    }
    this.#arm();
    return this.#controller.signal;
  }

  /** The root's queue, chosen when the family first arms (js/timers.js `turnQueue`). */
  #queueOf() {
    if (!IS_WORKERD) return sharedQueue;
    const root = this.#root;
    return root.#queue ?? (root.#queue = turnQueue());
  }

  // Timer arithmetic stays in JS: this runs on every fresh signal(), where a
  // Wasm call costs more than the arithmetic (BENCHMARKS.md, "Design").
  #arm() {
    if (this.#at <= now()) return this.#expire();
    this.#queueOf().schedule((this.#wakeup = new DeadlineWakeup(this.#at, this)));
  }

  [WAKE]() {
    this.#wakeup = null;
    this.#expire();
  }

  #expire() {
    this.#settle(new DeadlineExceeded(this.#at, now() - this.#at));
  }

  [PARENT_ABORTED](reason) {
    this.#settle(reason);
  }

  /** Aborts the signal (once), releases the wake-up and links, then tells the watchers. */
  #settle(reason) {
    this.#release();
    if (this.#aborted) return;
    this.#aborted = true;
    /** @type {AbortController} */ (this.#controller).abort(reason); // only an armed deadline settles
    let w = this.#dropWatchers();
    while (w !== null) {
      const next = w.next;
      w.next = null;
      unwatch(w);
      w.onAbort();
      w = next;
    }
  }

  /** Empties the watcher list; returns its head, every member already ownerless. */
  #dropWatchers() {
    const head = this.#watchers;
    this.#watchers = null;
    for (let w = head; w !== null; w = w.next) w.owner = w.prev = null;
    return head;
  }

  #release() {
    const wakeup = this.#wakeup;
    if (wakeup !== null) {
      wakeup.queue?.cancel(wakeup);
      this.#wakeup = null;
    }
    if (this.#linked) {
      this.#linked = false;
      const parents = this.#parents;
      for (let i = 0; i < parents.length; i++) ParentLink.leave(parents[i], this);
    }
  }

  /** @private See `watch`. */
  [WATCH](at, onTime, onAbort) {
    const w = new Watch(at, onTime, onAbort);
    if (onAbort !== undefined && (this.#controller !== null || this.signal()) && !this.#aborted) {
      const head = this.#watchers;
      w.owner = this;
      w.next = head;
      if (head !== null) head.prev = w;
      this.#watchers = w;
    }
    this.#queueOf().schedule(w);
    return w;
  }

  /** Internal (Watch#fire, unwatch): takes `w` off its owner's watcher list. */
  static unwatch(w) {
    const owner = w.owner;
    if (owner === null) return;
    w.owner = null;
    if (w.prev !== null) w.prev.next = w.next;
    else owner.#watchers = w.next;
    if (w.next !== null) w.next.prev = w.prev;
    w.prev = w.next = null;
  }

  /** Clears the wake-up and parent links. The signal, if any, stays as it is. */
  dispose() {
    this.#disposed = true;
    for (let w = this.#dropWatchers(), next; w !== null; w = next) (next = w.next), (w.next = null);
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

/** A deadline's own wake-up in its root's queue. */
class DeadlineWakeup extends Wakeup {
  constructor(at, deadline) {
    super(at);
    this.deadline = deadline;
  }

  fire() {
    this.deadline[WAKE]();
  }
}

/** A timer armed by `watch`: an entry of the root's queue (the process's shared one outside workerd). */
class Watch extends Wakeup {
  constructor(at, onTime, onAbort) {
    super(at);
    this.onTime = onTime;
    this.onAbort = onAbort;
    this.owner = null; // the deadline whose watcher list holds it
    this.prev = null;
    this.next = null;
  }

  fire() {
    Deadline.unwatch(this);
    this.onTime();
  }
}

/**
 * For the modules that arm timers for a deadline (plan steps, retry and hedge
 * attempts, stall timers): calls `onTime()` once `performance.now() >= at`,
 * or `onAbort()` when `deadline`'s signal aborts, whichever comes first, and
 * never both. The timer is an entry of the root's queue: in workerd that
 * queue's one host timer is all a request holds however many it arms from
 * one deadline; elsewhere it is the process's shared, unref'd timer.
 * Returns a handle for `unwatch`. `deadline.signal()` must have been called.
 * @param {Deadline} deadline
 * @param {number} at instant on the `performance.now()` timeline
 * @param {() => void} onTime
 * @param {() => void} [onAbort]
 */
export function watch(deadline, at, onTime, onAbort) {
  return deadline[WATCH](at, onTime, onAbort);
}

/**
 * A one-shot timer calling `fn` after `delayMs`, for code that may or may not
 * have a deadline (stall detection): in workerd, with a deadline, on that
 * deadline's root queue (so it holds no timeout of its own); otherwise a host
 * `setTimeout`, as callers had. Cancel with `clearWake`.
 */
export function setWake(deadline, delayMs, fn) {
  return IS_WORKERD && deadline !== undefined ? watch(deadline, now() + delayMs, fn) : setTimeout(fn, delayMs);
}

/** Cancels a `setWake` timer (a no-op once it fired or was cancelled). */
export function clearWake(handle) {
  if (handle instanceof Watch) unwatch(handle);
  else clearTimeout(handle);
}

/** Cancels a `watch` (a no-op once it fired or was cancelled). */
export function unwatch(w) {
  if (w === undefined) return;
  Deadline.unwatch(w);
  if (w.queue !== null) w.queue.cancel(w);
}

/** The launch-boundary arithmetic: `max(0, deadlineMs − nowMs − reserveMs)`. */
export function generationBudget(deadlineMs, nowMs, reserveMs) {
  if (!isReady()) notReady("generationBudget");
  number("deadlineMs", deadlineMs);
  number("nowMs", nowMs);
  number("reserveMs", reserveMs);
  return core.generationBudget(deadlineMs, nowMs, reserveMs);
}
