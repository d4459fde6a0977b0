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

// ─── The shared wake-up queue ────────────────────────────────────────────────
//
// # Why one host timer for every deadline
// A host `setTimeout` + `clearTimeout` costs about 1.1 µs in Deno (and in
// browsers), most of a fresh deadline's cost there, yet deadlines are made per
// request and mostly disposed long before they fire. Pending instants live in
// a binary heap with one host timer armed for the earliest, so arming and
// disarming a deadline is O(log n) JS work and usually no host call at all
// (measured in bench/deadline.bench.mjs; see BENCHMARKS.md).
//
// # Invariants
// 1. An entry is in the heap at most once; `entry.index` is its position, -1
//    when it is not queued.
// 2. When the heap is not empty, the host timer is armed for an instant no
//    later than the earliest entry's. When the heap empties it may stay armed
//    (lazily): it then fires once, finds nothing due, and stops.
// 3. An entry fires only once `performance.now() >= entry.at`; a host timer
//    that wakes early (Node's can, by 1 ms) re-arms instead.
// 4. The host timer is unref'd: pending deadlines never keep a process alive.
// 5. Not in workerd: there a timer belongs to the request that created it and
//    is cancelled when that request ends, so a shared timer would let one
//    request's end silently cancel another request's deadlines. `SHARED_WAKEUPS`
//    is false there and each deadline arms its own timer.

/** Whether deadlines share the queue's host timer (everywhere but workerd). */
export const SHARED_WAKEUPS = globalThis.navigator?.userAgent !== "Cloudflare-Workers";

const heap = [];
let host;
let hostAt = Infinity;

/** Queues `entry` ({ at, fire(), index }) to have `fire()` called at or after `entry.at`. */
export function schedule(entry) {
  entry.index = heap.length;
  heap.push(entry);
  up(entry.index);
  if (entry.at < hostAt) armHost(entry.at);
}

/** Takes `entry` out of the queue (a no-op when it is not queued). */
export function cancel(entry) {
  const i = entry.index;
  if (i < 0) return;
  entry.index = -1;
  const last = heap.pop();
  if (last === entry) return;
  heap[i] = last;
  last.index = i;
  down(i);
  up(last.index);
}

function armHost(at) {
  if (host !== undefined) clearTimeout(host);
  hostAt = at;
  host = setTimeout(wake, timerMs(Math.max(0, at - performance.now())));
  unref(host);
}

function wake() {
  host = undefined;
  hostAt = Infinity;
  const t = performance.now();
  while (heap.length && heap[0].at <= t) {
    const entry = heap[0];
    cancel(entry);
    entry.fire();
  }
  if (heap.length && heap[0].at < hostAt) armHost(heap[0].at);
}

function up(i) {
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

function down(i) {
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
