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
// Those APIs return an `Awaited` promise. The first `then` on it (what
// `await`, `.then`, `.catch` and `.finally` all call) takes a hold; the hold
// is released when the promise settles. While any hold is taken, one ref'd
// host interval exists (shared by every holder, so a hold costs a counter
// increment, not a host timer). A promise nobody awaits takes no hold.
// Browsers and workerd have no process to keep alive: there, nothing is armed.
//
// # Invariants
// 1. A host interval exists iff at least one awaited promise is pending.
// 2. Each awaited promise takes at most one hold, and releases it in the turn
//    it settles.
// 3. A promise that nobody awaits never takes a hold.

import { MAX_TIMER_MS } from "./timers.js";

/** Whether the host is a process that an event loop with nothing ref'd lets exit. */
const PROCESS_HOST =
  typeof globalThis.Deno?.unrefTimer === "function" ||
  (typeof globalThis.process?.versions?.node === "string" && globalThis.navigator?.userAgent !== "Cloudflare-Workers");

let holds = 0;
let interval;

function noop() {}

function take() {
  if (holds++ === 0) interval = setInterval(noop, MAX_TIMER_MS);
}

function release() {
  if (--holds === 0) {
    clearInterval(interval);
    interval = undefined;
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
