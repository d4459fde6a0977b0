// Timers for every module that arms one (deadline.js, stall.js, plan.js,
// retry.js): the clock they read, the wake-up queues behind one host timer,
// and the one cancellation primitive, `child`. The deadline arithmetic itself
// is the core's; what lives here are properties of the host's timers.
//
// # The clock
// Every module reads time and arms host timers through `clock` (`now`,
// `setTimeout`, `clearTimeout`), never through the globals, so a test swaps
// the clock (`setClock`) instead of patching `performance` and `setTimeout`
// for the whole realm. A swap starts fresh queues: a queue keeps the clock it
// was made with, so wake-ups armed before the swap stay on the clock they
// were armed on, and none of them leaks into the fake timeline.

// @ts-expect-error internal: not in the public context.d.ts
import { ambientNow, fireIn } from "./context.js";
import { argumentError, CODES } from "./errors.js";
import { isAbortSignal } from "./validate.js";

/** 2^31 − 1 ms: browsers, Node, Deno and workerd fire a longer `setTimeout` at once (src/core/deadline.rs, MAX_TIMER_MS). */
export const MAX_TIMER_MS = 2_147_483_647;

/**
 * The delay to arm for a wait of `ms`: rounded up, so a timer never fires
 * before its instant, and clamped to the host limit (a longer wait is reached
 * in slices: the queue re-arms when a wake finds nothing due); a passed, -0
 * or NaN wait is 0. The rule is the core's `timer_ms` (src/core/timers.rs,
 * with `arm_delay` and `on_wake`), written here in JS because it runs where
 * a Wasm call would cost more than the rule (bench/ab.mjs). One table pins
 * the two: the `timers.timerMs` rows of tests/conformance/cases.json, run
 * against this function by tests/js/cases/conformance.js, against the core's
 * by its own tests and by the Rust host's conformance runner.
 */
export function timerMs(ms) {
  return ms >= MAX_TIMER_MS ? MAX_TIMER_MS : ms > 0 ? Math.ceil(ms) : 0;
}

/** The host's clock: `performance.now()` and the global timers, read at call time. */
const HOST_CLOCK = Object.freeze({
  now: () => performance.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (id) => clearTimeout(id),
});

/**
 * The clock every module of the package reads: `now()` in ms on one monotonic
 * timeline (the host's is `performance.now()`), `setTimeout(fn, ms)` → id,
 * `clearTimeout(id)`. One object whose members `setClock` replaces: read as
 * `clock.now()`, a member that production never reassigns is a constant to
 * the engine, so the hot paths pay what reading `performance.now()` cost.
 * @type {{ now(): number, setTimeout(fn: () => void, ms: number): unknown, clearTimeout(id: unknown): void }}
 */
export const clock = { now: HOST_CLOCK.now, setTimeout: HOST_CLOCK.setTimeout, clearTimeout: HOST_CLOCK.clearTimeout };

/** `clock.now()`: the instant on the package's timeline. */
export const now = () => clock.now();

/**
 * Replaces the clock's members (tests: tests/js/fake-time.js) and starts
 * fresh wake-up queues on it; `setClock()` with no argument puts the host's
 * clock back. Returns the members that were in use (to pass back later).
 * @param {{ now(): number, setTimeout(fn: () => void, ms: number): unknown, clearTimeout(id: unknown): void }} [next]
 */
export function setClock(next = HOST_CLOCK) {
  if (next === null || typeof next !== "object" || ["now", "setTimeout", "clearTimeout"].some((k) => typeof next[k] !== "function")) {
    throw argumentError("type", CODES.INVALID_TYPE, "clock", "'clock' must be an object with now(), setTimeout(fn, ms) and clearTimeout(id)");
  }
  const previous = { now: clock.now, setTimeout: clock.setTimeout, clearTimeout: clock.clearTimeout };
  clock.now = next.now;
  clock.setTimeout = next.setTimeout;
  clock.clearTimeout = next.clearTimeout;
  sharedQueue = new WakeQueue(true);
  turn = null;
  return previous;
}

/** Whether `clock` is the host's (not a test's fake): only the host's timers can be unref'd. */
export const isHostClock = () => clock.setTimeout === HOST_CLOCK.setTimeout;

/**
 * Lets the event loop exit while the timer is pending: Node's timers have
 * `unref()`, Deno's are numbers unref'd through `Deno.unrefTimer`; browsers
 * and workerd have nothing to unref. Only for the host clock's timers.
 */
export const unref =
  typeof globalThis.Deno?.unrefTimer === "function"
    ? (id) => globalThis.Deno.unrefTimer(id)
    : (t) => {
        if (typeof t === "object" && typeof t.unref === "function") t.unref();
      };

// ─── Wake-up queues ──────────────────────────────────────────────────────────
//
// # Why a heap behind one host timer
// A host `setTimeout` + `clearTimeout` is most of a fresh deadline's cost in
// Deno and workerd (BENCHMARKS.md, "Deadlines": `design: setTimeout +
// clearTimeout`), yet deadlines are made per
// request and mostly disposed long before they fire. Pending instants live in
// a binary heap with one host timer armed for the earliest, so arming and
// disarming a wake-up is O(log n) JS work and usually no host call at all
// (measured in bench/deadline.bench.mjs; see BENCHMARKS.md).
//
// # The queue's rules are the core's
// The heap follows src/core/timers.rs `WakeQueue`: `schedule` arms the host
// timer when the entry is earlier than what it is armed for (`poll_arm`), or,
// in workerd, when that timer is overdue and was not armed this turn
// (`poll_arm`'s may-be-dead rule, invariant 5); `#wake` fires only entries
// with `at <= now` (`pop_due`), equal instants in the order they were queued
// (the core's `(at, seq)`), and re-arms for the earliest left. The order is
// pinned by the `timers.order` rows of tests/conformance/cases.json, which
// this heap and the Rust host's queue (the core's) both run. The heap stays in
// JS because driving the core's queue costs a Wasm call per arm and per disarm
// on the hottest paths (BENCHMARKS.md, "Deadlines": the rows of a fresh
// deadline's signal() + dispose()).
//
// # Which queue
// Outside workerd there is one queue for the whole process (`sharedQueue`),
// its host timer unref'd. In workerd a timer belongs to the request whose code
// armed it and is cancelled, silently, when that request ends; an isolate
// serves many requests, concurrently too. A queue there must therefore only
// ever hold wake-ups of one request: `turnQueue()` hands out one queue per
// synchronous turn (one task and its microtasks), since all code of one turn
// runs for one request. A deadline keeps the queue it first armed on, and
// everything derived from it (reserve, min, plan steps, retry and hedge
// attempts, stall timers: every `child` of it) joins that same queue, so a
// request that derives 20 000 wake-ups from one deadline holds one host timer
// of its 10 000.
//
// # Invariants
// 1. An entry is in at most one heap, at most once; `entry.index` is its
//    position, -1 when it is not queued.
// 2. When a heap is not empty, its host timer is armed for an instant no
//    later than the earliest entry's. When the heap empties it may stay armed
//    (lazily): it then fires once, finds nothing due, and stops. In workerd,
//    where every armed timer counts against the request's 10 000, a heap
//    that empties is looked at again when the turn ends, and a host timer
//    still armed for nothing is cleared then: a request that makes and
//    disposes deadlines in 20 000 turns holds one timer, not 20 000, and a
//    deadline made and disposed in a loop within one turn still costs no
//    clearTimeout per iteration. (The Rust API's queue clears its timer when
//    dropped, which a turn's queue is once its last entry leaves.)
// 3. An entry fires only once `clock.now() >= entry.at`; a host timer that
//    wakes early (Node's can, by 1 ms) re-arms instead, and so does one cut
//    short by the 2^31 − 1 ms host limit.
// 4. The shared queue's host timer is unref'd: pending deadlines never keep a
//    process alive.
// 5. workerd: a queue's host timer that is overdue when an entry is queued
//    (its request ended and took the timer with it) is armed again, by the
//    request queueing, unless it was armed in this very turn (then it is alive,
//    only kept from firing by the code running now); a turn queue is never
//    handed to a later turn.
// 6. A queue arms its host timer on the clock it was made with, whatever
//    `setClock` did since.
// 7. An entry fires with the ambient deadline (js/context.js) of the code
//    that last queued it, not that of whoever armed the host timer.
// 8. A callback that throws loses no other wake-up: the host timer is armed
//    again for what is left (entries already due fire on it), and the error
//    goes on to whoever ran the host timer.

/**
 * True in workerd (Cloudflare Workers, wrangler, miniflare). Detected by
 * `WebSocketPair`, a Workers global at every compatibility date and flag;
 * `navigator` is absent before 2022-03-21 and with `no_global_navigator`.
 */
export const IS_WORKERD = typeof globalThis.WebSocketPair === "function";

/**
 * A binary heap of wake-ups behind one host timer. An entry is any object
 * with `at` (ms on the clock's timeline), `index` (-1 when not queued), `seq`,
 * `queue`, `ambient` (set when queued) and a `fire()` method (a method, not a closure per wake-up): in
 * this package, a `Child`.
 */
export class WakeQueue {
  constructor(unrefHost) {
    this.heap = [];
    this.seq = 0; // the order entries were queued in: ties of `at` fire first in, first out
    // Invariant 6: the clock's members as they are now, kept.
    this.now = clock.now;
    this.setTimeout = clock.setTimeout;
    this.clearTimeout = clock.clearTimeout;
    this.host = undefined;
    this.hostAt = Infinity;
    this.hostTurn = null; // workerd: the turn that armed the host timer
    this.emptiedIn = null; // workerd: the turn at whose end an empty heap is looked at again
    this.unrefHost = unrefHost && clock.setTimeout === HOST_CLOCK.setTimeout;
    this.wake = () => this.#wake();
  }

  /** Queues `entry` to have `entry.fire()` called at or after `entry.at`. */
  schedule(entry) {
    const heap = this.heap;
    entry.ambient = ambientNow(); // invariant 7
    entry.queue = this;
    entry.seq = this.seq++;
    entry.index = heap.length;
    heap.push(entry);
    this.#up(entry.index);
    if (entry.at < this.hostAt) this.#arm(entry.at);
    // Invariant 5; the turn first: a timer armed in this turn is alive, so no clock read is needed.
    else if (IS_WORKERD && this.hostTurn !== currentTurn() && this.hostAt < this.now() - 1) this.#arm(heap[0].at);
  }

  /** Takes `entry` out of this queue (a no-op when it is not queued). */
  cancel(entry) {
    const i = entry.index;
    if (i < 0) return;
    entry.index = -1;
    const heap = this.heap;
    const last = heap.pop();
    if (last === entry) {
      if (IS_WORKERD && heap.length === 0 && this.host !== undefined) this.#emptied();
      return;
    }
    heap[i] = last;
    last.index = i;
    this.#down(i);
    this.#up(last.index);
  }

  /** workerd: the heap emptied with the host timer armed; look again when the turn ends (invariant 2). */
  #emptied() {
    const t = currentTurn();
    if (this.emptiedIn === t) return;
    this.emptiedIn = t;
    (t.emptied ??= []).push(this);
  }

  /** Internal, at the end of a turn in which the heap emptied: clears a host timer armed for nothing. */
  releaseIfEmpty() {
    this.emptiedIn = null;
    if (this.heap.length !== 0 || this.host === undefined) return;
    this.clearTimeout(this.host);
    this.host = undefined;
    this.hostAt = Infinity;
    this.hostTurn = null;
  }

  #arm(at) {
    if (this.host !== undefined) this.clearTimeout(this.host);
    this.hostAt = at;
    this.host = this.setTimeout(this.wake, timerMs(at - this.now())); // core `arm_delay`
    if (this.unrefHost) unref(this.host);
    else this.hostTurn = currentTurn();
  }

  #wake() {
    this.host = undefined;
    this.hostAt = Infinity;
    const heap = this.heap;
    const t = this.now();
    try {
      while (heap.length && heap[0].at <= t) {
        const entry = heap[0];
        this.cancel(entry);
        fireIn(entry.ambient, entry);
      }
    } finally {
      // Also when a callback threw (invariant 8): what is left, due or not, keeps a host timer.
      if (heap.length && heap[0].at < this.hostAt) this.#arm(heap[0].at);
    }
  }

  #up(i) {
    const heap = this.heap;
    const e = heap[i];
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (heap[p].at < e.at || (heap[p].at === e.at && heap[p].seq < e.seq)) break;
      heap[i] = heap[p];
      heap[i].index = i;
      i = p;
    }
    heap[i] = e;
    e.index = i;
  }

  #down(i) {
    const heap = this.heap;
    const e = heap[i];
    const n = heap.length;
    for (;;) {
      let c = 2 * i + 1;
      if (c >= n) break;
      if (c + 1 < n && (heap[c + 1].at < heap[c].at || (heap[c + 1].at === heap[c].at && heap[c + 1].seq < heap[c].seq))) c++;
      if (heap[c].at > e.at || (heap[c].at === e.at && heap[c].seq > e.seq)) break;
      heap[i] = heap[c];
      heap[i].index = i;
      i = c;
    }
    heap[i] = e;
    e.index = i;
  }
}

/** The one queue of Node, Deno and browsers (unused in workerd); replaced with the clock. */
export let sharedQueue = new WakeQueue(true);

/** The current turn (one task and its microtasks), made by its first caller; workerd only. */
class Turn {
  queue = null;
  /** Queues whose heap emptied in this turn with a host timer armed (WakeQueue invariant 2). */
  emptied = null;
}

let turn = null;
function endTurn() {
  const emptied = turn?.emptied;
  turn = null;
  if (emptied) for (const q of emptied) q.releaseIfEmpty();
}

function currentTurn() {
  if (turn === null) {
    turn = new Turn();
    queueMicrotask(endTurn);
  }
  return turn;
}

/**
 * The queue for a family of timers arming now: the shared one, or in workerd
 * the current turn's (invariant 5), created by the turn's first caller.
 */
export function turnQueue() {
  if (!IS_WORKERD) return sharedQueue;
  const t = currentTurn();
  return t.queue ?? (t.queue = new WakeQueue(false));
}

// ─── The cancellation primitive ──────────────────────────────────────────────
//
// # Why one primitive
// A deadline, a plan step, a retry attempt, a backoff sleep, a hedge's next
// start and a stall timer all need the same four things: an AbortSignal of
// their own, a wake-up at an instant (never early, re-armed past the host
// limit), the abort of whatever they hang from (the deadline, a caller's
// signal) passed down with its reason, and a clean exit that leaves no timer
// and no listener behind. `child` is that, once.
//
// # How it links
// A parent that is a `Child` (or a Deadline: `parent[NODE]()` is its child)
// tells its children directly, through an intrusive list: no listener, no
// allocation. An AbortSignal parent gets one shared "abort" listener however
// many children hang from it (`ParentLink`), removed by the end of the turn in
// which its last child left. The wake-up is the child itself, an entry of its
// home queue: the first Child/Deadline parent's (so in workerd the whole
// family shares one host timer), else `turnQueue()`.
//
// # Invariants
// 1. A child aborts at most once; its signal, once asked for, is the same
//    AbortSignal every time, and carries the child's `reason`.
// 2. `onTime(child)` is called only once `clock.now() >= child.at`, at most
//    once per `child()` or `rearm()`, never after the child aborted or was
//    disposed. The child stays linked to its parents after `onTime`: the
//    callback aborts it, re-arms it or disposes it.
// 3. When a parent aborts, the child aborts with the parent's `reason` in the
//    same turn, then its own children, then `onAbort(reason, by, child)` is
//    called (`by`: the parent as it was given). A parent already aborted when
//    the child is made aborts it during `child()` (onAbort included).
// 4. Once a child aborted or was disposed, it is in no queue, no parent's
//    list and no parent link: nothing of it is pending. Its children, when it
//    is disposed, are no longer told (they keep their own wake-ups).
// 5. A child holds no Wasm memory and no host timer of its own.

/** The method by which a Deadline hands over its child (made on first use). */
export const NODE = Symbol("edge-deadline node");

/** @type {any} a frozen [] standing for "none yet" */
const EMPTY = Object.freeze([]);

/**
 * The one "abort" listener on a parent signal, shared by every child linked
 * to it. Removal is deferred to the end of the turn, so a child made and
 * disposed per call in a loop adds one listener per turn, not one per child.
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
      // In the order they joined; one an earlier one's abort listener disposed is left alone.
      for (const c of members) if (c.live) c.parentAborted(signal.reason, c.ownerOf(signal));
    };
    this.sweep = () => {
      this.sweeping = false;
      if (this.members.size === 0) this.unlisten();
    };
  }

  static join(signal, c) {
    let link = links.get(signal);
    if (link === undefined) links.set(signal, (link = new ParentLink(signal)));
    link.members.add(c);
    if (!link.listening) {
      link.listening = true;
      signal.addEventListener("abort", link.onAbort);
    }
  }

  static leave(signal, c) {
    const link = links.get(signal);
    if (link === undefined || !link.members.delete(c) || link.members.size || link.sweeping) return;
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

/**
 * A node of the cancellation tree: see `child`. Fields other than the
 * documented getters and methods are internal.
 */
export class Child {
  /**
   * Internal: use `child()`; a Deadline makes its own with `start`. A queue
   * entry (`at`, `index`, `seq`, `queue`, `fire()`), one constructor deep:
   * children are made per step and per attempt.
   */
  constructor(at, onTime, onAbort) {
    this.at = at;
    this.index = -1;
    this.seq = 0; // its queue's count when queued: the tie-break of equal instants
    this.queue = null;
    this.ambient = undefined; // the ambient deadline when queued (WakeQueue invariant 7)
    this.onTime = onTime;
    this.onAbort = onAbort;
    this.controller = null;
    this.aborted = false;
    this.reason = undefined;
    this.live = true; // linked to its parents (until it aborts or is disposed)
    this.up = null; // the Child parent whose list holds this child
    this.upOwner = undefined; // that parent as given (a Deadline or the Child)
    this.prev = null;
    this.next = null;
    this.kids = null; // head of this child's own list of children
    this.signals = EMPTY; // AbortSignal parents joined through ParentLink
    this.owners = EMPTY; // each one's parent as given
  }

  /** The child's AbortSignal, made on first use (aborted already if the child is). */
  get signal() {
    let c = this.controller;
    if (c === null) {
      c = this.controller = new AbortController();
      if (this.aborted) c.abort(this.reason);
    }
    return c.signal;
  }

  /** Moves the wake-up to `atMs` (`Infinity`: none); a no-op once the child aborted or was disposed. */
  rearm(atMs) {
    if (!this.live) return;
    if (this.index >= 0) this.queue.cancel(this);
    this.at = atMs;
    if (atMs < Infinity) this.queue.schedule(this);
  }

  /**
   * Aborts the child with `reason` (once): releases its wake-up and links,
   * aborts its signal, then tells its children. `onAbort` is not called (it
   * is for the parents' aborts).
   */
  abort(reason) {
    if (this.aborted) return;
    this.release();
    this.aborted = true;
    this.reason = reason;
    if (this.controller !== null) this.controller.abort(reason);
    let k = this.kids;
    this.kids = null;
    for (let next; k !== null; k = next) {
      next = k.next;
      k.up = k.prev = k.next = null;
      k.parentAborted(reason, k.upOwner);
    }
  }

  /** Releases the wake-up and every link; the signal, if any, stays as it is. No callback runs. */
  dispose() {
    this.release();
    for (let k = this.kids, next; k !== null; k = next) {
      next = k.next;
      k.up = k.prev = k.next = null;
    }
    this.kids = null;
  }

  /** Internal. */
  parentAborted(reason, by) {
    if (this.aborted) return;
    this.abort(reason);
    if (this.onAbort !== undefined) this.onAbort(reason, by, this);
  }

  /** Internal: The parent as given whose signal is `signal`. */
  ownerOf(signal) {
    const i = this.signals.indexOf(signal);
    return i < 0 ? signal : this.owners[i];
  }

  /** Internal. */
  fire() {
    this.onTime(this);
  }

  /** Internal: Out of the queue, the parent's list and the parent links. */
  release() {
    if (!this.live) return;
    this.live = false;
    if (this.index >= 0) this.queue.cancel(this);
    const up = this.up;
    if (up !== null) {
      if (this.prev !== null) this.prev.next = this.next;
      else up.kids = this.next;
      if (this.next !== null) this.next.prev = this.prev;
      this.up = this.prev = this.next = null;
      this.upOwner = undefined;
    }
    const signals = this.signals;
    for (let i = 0; i < signals.length; i++) ParentLink.leave(signals[i], this);
  }

  /** Internal: Links the parents, picks the home queue (`queue`, else see `child`) and queues the wake-up. */
  start(parents, queue) {
    if (parents.length !== 0 && !this.link(parents)) return;
    // A child's `queue` is its home for good: it is only ever scheduled there.
    this.queue = queue ?? (this.up !== null ? this.up.queue : turnQueue());
    if (this.at < Infinity) this.queue.schedule(this);
  }

  /** Internal: Links the parents (see `child`); false when one had aborted (then this child has too). */
  link(parents) {
    // The common cases first: one Deadline (a step, an attempt, a stall timer)…
    const first = parents[0];
    if (parents.length === 1 && first != null && typeof first[NODE] === "function") {
      const node = first[NODE]();
      if (node.aborted) return this.bornAborted(node.reason, first);
      if (node.live) return this.joinKids(node, first);
    }
    // …and a Deadline's own parents: AbortSignals only, joined without copying the list.
    let plain = true;
    for (let i = 0; i < parents.length && plain; i++) plain = isAbortSignal(parents[i]);
    if (plain) {
      for (let i = 0; i < parents.length; i++) if (parents[i].aborted) return this.bornAborted(parents[i].reason, parents[i]);
      this.signals = this.owners = parents;
      for (let i = 0; i < parents.length; i++) ParentLink.join(parents[i], this);
      return true;
    }
    for (let i = 0; i < parents.length; i++) {
      const p = parents[i];
      if (p === undefined) continue;
      let node = null;
      let signal = null;
      if (p !== null && typeof p[NODE] === "function") node = p[NODE]();
      else if (p instanceof Child) node = p;
      else if (isAbortSignal(p)) signal = p;
      else if (p !== null && typeof p === "object" && typeof p.signal === "function") signal = p.signal(); // a Deadline of another copy
      else throw argumentError("type", CODES.INVALID_TYPE, `parents[${i}]`, `'parents[${i}]' must be an AbortSignal or a Deadline`);
      if (node !== null) {
        if (node.aborted) return this.bornAborted(node.reason, p);
        if (this.up === null && node.live) {
          this.joinKids(node, p);
          continue;
        }
        signal = node.signal;
      }
      if (signal.aborted) return this.bornAborted(signal.reason, p);
      if (this.signals === EMPTY) (this.signals = []), (this.owners = []);
      this.signals.push(signal);
      this.owners.push(p);
      ParentLink.join(signal, this);
    }
    return true;
  }

  /** Internal: Joins `node`'s list of children (the first Child/Deadline parent, given as `owner`). */
  joinKids(node, owner) {
    this.up = node;
    this.upOwner = owner;
    const head = node.kids;
    this.next = head;
    if (head !== null) head.prev = this;
    node.kids = this;
    return true;
  }

  /** Internal. */
  bornAborted(reason, by) {
    this.parentAborted(reason, by);
    return false;
  }
}

/**
 * The cancellation primitive: a node hanging from `parents` that aborts with
 * the first parent's abort reason, and wakes at `atMs`.
 *
 * ```js
 * const c = child([deadline, options.signal], now() + timeoutMs, {
 *   onTime: (c) => { c.abort(new AttemptTimeout(n, timeoutMs)); finish("timeout"); },
 *   onAbort: (reason, by) => finish(by === deadline ? "deadline" : "aborted"),
 * });
 * fn(c.signal).finally(() => c.dispose());
 * ```
 *
 * Returns a `Child`:
 * - `c.signal`: its AbortSignal (made on first use; aborted with `c.reason`).
 * - `c.aborted`, `c.reason`, `c.at` (the pending instant).
 * - `c.abort(reason)`: abort now (its signal and its own children); no callback.
 * - `c.rearm(atMs)`: wait for another instant (`Infinity`: none).
 * - `c.dispose()`: leave the parents and the queue; the signal stays as it is.
 * `c` is itself a parent for further `child` calls (and a Deadline is one).
 *
 * @param {ReadonlyArray<AbortSignal | import("./deadline.js").Deadline | Child | undefined>} parents
 *   `undefined` entries are skipped (an optional caller signal). A Deadline
 *   is joined without a listener, and its root's queue becomes this child's;
 *   a Deadline of another copy of the package is followed through its signal.
 * @param {number} atMs the instant to wake at, on the clock's timeline
 *   (`now()`); `Infinity` for none. Never fires early, whatever the host timer.
 * @param {{ onTime?: (child: Child) => void,
 *   onAbort?: (reason: unknown, by: unknown, child: Child) => void,
 *   queue?: WakeQueue }} [options]
 *   `onTime` (required for a finite `atMs`) is called once the instant came
 *   (the child is still linked: abort, re-arm or dispose it). `onAbort` is
 *   called after a parent's abort reached the child (its signal is aborted
 *   and it is released by then), also during `child()` for a parent already
 *   aborted. `queue`: where the wake-up waits (default: see "How it links").
 * @returns {Child}
 */
export function child(parents, atMs, options) {
  const onTime = options?.onTime;
  if (atMs < Infinity && typeof onTime !== "function") {
    throw argumentError("type", CODES.INVALID_TYPE, "options.onTime", "'options.onTime' must be a function (child) => void when 'atMs' is finite");
  }
  const c = new Child(atMs, onTime, options?.onAbort);
  c.start(parents, options?.queue);
  return c;
}
