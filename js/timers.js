// Host-timer facts shared by every module that arms a timer (deadline.js,
// stall.js, plan.js, retry.js). The deadline arithmetic itself is the core's;
// these are properties of `setTimeout` in the four runtimes.

/** 2^31 − 1 ms: browsers, Node, Deno and workerd fire a longer `setTimeout` at once (src/core/deadline.rs, MAX_TIMER_MS). */
export const MAX_TIMER_MS = 2_147_483_647;

/**
 * The delay to arm for `ms` (≥ 0): rounded up, so a timer never fires before
 * its instant, and clamped to the host limit; callers re-arm past it.
 */
export function timerMs(ms) {
  return ms < MAX_TIMER_MS ? Math.ceil(ms) : MAX_TIMER_MS;
}

/**
 * Lets the event loop exit while the timer is pending: Node's timers have
 * `unref()`, Deno's are numbers unref'd through `Deno.unrefTimer`; browsers
 * and workerd have nothing to unref.
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
// A host `setTimeout` + `clearTimeout` costs about 1.1 µs in Deno and in
// workerd, most of a fresh deadline's cost there, yet deadlines are made per
// request and mostly disposed long before they fire. Pending instants live in
// a binary heap with one host timer armed for the earliest, so arming and
// disarming a wake-up is O(log n) JS work and usually no host call at all
// (measured in bench/deadline.bench.mjs; see BENCHMARKS.md).
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
// attempts, stall timers) joins that same queue, so a request that derives
// 20 000 wake-ups from one deadline holds one host timer of its 10 000.
//
// # Invariants
// 1. An entry is in at most one heap, at most once; `entry.index` is its
//    position, -1 when it is not queued.
// 2. When a heap is not empty, its host timer is armed for an instant no
//    later than the earliest entry's. When the heap empties it may stay armed
//    (lazily): it then fires once, finds nothing due, and stops.
// 3. An entry fires only once `performance.now() >= entry.at`; a host timer
//    that wakes early (Node's can, by 1 ms) re-arms instead.
// 4. The shared queue's host timer is unref'd: pending deadlines never keep a
//    process alive.
// 5. workerd: a queue's host timer that is overdue when an entry is queued
//    (its request ended and took the timer with it) is armed again, by the
//    request queueing, unless it was armed in this very turn (then it is alive,
//    only kept from firing by the code running now); a turn queue is never
//    handed to a later turn.

/**
 * True in workerd (Cloudflare Workers, wrangler, miniflare). Detected by
 * `WebSocketPair`, a Workers global at every compatibility date and flag;
 * `navigator` is absent before 2022-03-21 and with `no_global_navigator`.
 */
export const IS_WORKERD = typeof globalThis.WebSocketPair === "function";

/**
 * A pending call of `fire()` at or after `at` (ms on the `performance.now()`
 * timeline). Subclasses define `fire()`: a method, not a closure per wake-up.
 */
export class Wakeup {
  constructor(at) {
    this.at = at;
    this.index = -1;
    this.queue = null;
  }
}

/** A binary heap of wake-ups behind one host timer. */
export class WakeQueue {
  constructor(unrefHost) {
    this.heap = [];
    this.host = undefined;
    this.hostAt = Infinity;
    this.hostTurn = null; // workerd: the turn that armed the host timer
    this.unrefHost = unrefHost;
    this.wake = () => this.#wake();
  }

  /** Queues `entry` to have `entry.fire()` called at or after `entry.at`. */
  schedule(entry) {
    const heap = this.heap;
    entry.queue = this;
    entry.index = heap.length;
    heap.push(entry);
    this.#up(entry.index);
    if (entry.at < this.hostAt) this.#arm(entry.at);
    else if (IS_WORKERD && this.hostAt < performance.now() - 1 && this.hostTurn !== currentTurn()) this.#arm(heap[0].at); // invariant 5
  }

  /** Takes `entry` out of this queue (a no-op when it is not queued). */
  cancel(entry) {
    const i = entry.index;
    if (i < 0) return;
    entry.index = -1;
    const heap = this.heap;
    const last = heap.pop();
    if (last === entry) return;
    heap[i] = last;
    last.index = i;
    this.#down(i);
    this.#up(last.index);
  }

  #arm(at) {
    if (this.host !== undefined) clearTimeout(this.host);
    this.hostAt = at;
    this.host = setTimeout(this.wake, timerMs(Math.max(0, at - performance.now())));
    if (this.unrefHost) unref(this.host);
    else this.hostTurn = currentTurn();
  }

  #wake() {
    this.host = undefined;
    this.hostAt = Infinity;
    const heap = this.heap;
    const t = performance.now();
    while (heap.length && heap[0].at <= t) {
      const entry = heap[0];
      this.cancel(entry);
      entry.fire();
    }
    if (heap.length && heap[0].at < this.hostAt) this.#arm(heap[0].at);
  }

  #up(i) {
    const heap = this.heap;
    const e = heap[i];
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (heap[p].at <= e.at) break;
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
      if (c + 1 < n && heap[c + 1].at < heap[c].at) c++;
      if (heap[c].at >= e.at) break;
      heap[i] = heap[c];
      heap[i].index = i;
      i = c;
    }
    heap[i] = e;
    e.index = i;
  }
}

/** The one queue of Node, Deno and browsers (unused in workerd). */
export const sharedQueue = new WakeQueue(true);

/** The current turn (one task and its microtasks), made by its first caller; workerd only. */
class Turn {
  queue = null;
}

let turn = null;
const endTurn = () => (turn = null);

function currentTurn() {
  if (turn === null) {
    turn = new Turn();
    queueMicrotask(endTurn);
  }
  return turn;
}

/**
 * The queue for a deadline arming now: the shared one, or in workerd the
 * current turn's (invariant 5), created by the turn's first caller.
 */
export function turnQueue() {
  if (!IS_WORKERD) return sharedQueue;
  const t = currentTurn();
  return t.queue ?? (t.queue = new WakeQueue(false));
}
