// Keeping a Node or Deno process alive exactly while someone awaits a result.
//
// # Why
// Every timer this package arms is unref'd: a deadline nobody waits for must
// never hold a process open (a CLI would hang until its 30 s deadline). But
// when a caller awaits `hedge`, `d.step`, `p.run` or `retry` whose work ends
// only when the deadline aborts it, nothing else may be pending: Node would
// then exit (code 13, "unsettled top-level await") before the deadline fires,
// and the caller's `catch` or fallback never runs.
//
// # How
// Those APIs return an `Awaited` promise when their work is still pending (a
// promise that is already settled needs nothing). The first `then` on it
// (what `await`, `.then`, `.catch` and `.finally` all call) takes a hold; the
// hold is released when the promise settles. One host interval, created at
// the first hold, is ref'd while any hold is taken and unref'd when the last
// is released: a hold costs a counter and, at 0 ↔ 1, a ref toggle, never a
// new host timer. A promise nobody awaits takes no hold. Browsers and workerd
// have no process to keep alive: there, plain promises and nothing armed.
//
// # Invariants
// 1. The host interval is ref'd iff at least one awaited promise is pending.
// 2. Each awaited promise takes at most one hold, and releases it in the turn
//    it settles.
// 3. A promise that nobody awaits never takes a hold.
// 4. Other holders (a stream wrapper waiting on its source: js/stall.js) call
//    `hold()` and `releaseHold()` in pairs.

import { IS_WORKERD, MAX_TIMER_MS } from "./timers.js";

export const DENO = typeof globalThis.Deno?.unrefTimer === "function" && typeof globalThis.Deno?.refTimer === "function";
/**
 * Whether the host is a process that an event loop with nothing ref'd lets
 * exit. workerd can define `process` (nodejs_compat), but its timers belong
 * to a request: never arm one there.
 */
export const PROCESS_HOST = DENO || (typeof globalThis.process?.versions?.node === "string" && !IS_WORKERD);

let holds = 0;
let interval;

function noop() {}

function take() {
  if (holds++ > 0) return;
  if (interval === undefined) interval = setInterval(noop, MAX_TIMER_MS); // ref'd when made
  else setRef(true);
}

function release() {
  if (--holds === 0) setRef(false);
}

function setRef(on) {
  if (typeof interval === "object" && typeof interval.ref === "function") {
    if (on) interval.ref();
    else interval.unref();
  } else if (DENO) {
    if (on) globalThis.Deno.refTimer(interval);
    else globalThis.Deno.unrefTimer(interval);
  }
}

class Awaited extends Promise {
  #held = false;

  // Promises derived with `then` are plain: only the API's own promise holds.
  static get [Symbol.species]() {
    return Promise;
  }

  then(onFulfilled, onRejected) {
    if (!this.#held) {
      this.#held = true;
      take();
      super.then(release, release);
    }
    return super.then(onFulfilled, onRejected);
  }
}

/** `promise`, as one that keeps the process alive while someone awaits it (see the module doc). */
export const awaited = PROCESS_HOST ? (promise) => Awaited.resolve(promise) : (promise) => promise;

/** `new Promise(executor)`, as one that keeps the process alive while someone awaits it. */
export const pending = PROCESS_HOST ? (executor) => new Awaited(executor) : (executor) => new Promise(executor);

/** Takes a hold: the process stays alive until the matching `releaseHold()` (a no-op outside Node and Deno). */
export const hold = PROCESS_HOST ? take : noop;

/** Releases a hold taken with `hold()`. */
export const releaseHold = PROCESS_HOST ? release : noop;
