// Retry budgets: one retry allowance shared by every call to a dependency.
// The accounting (a sliding window of buckets), the limits and the defaults
// are the Wasm core's (src/core/retry_budget.rs: see its module doc for why a
// budget and not only a maximum number of attempts); `retry` asks it through
// js/retry.js. This file owns the JS object and when its Wasm memory is freed.
//
// # Invariants
// 1. A budget holds a little Wasm memory from `new RetryBudget()` until
//    `dispose()`; a retry using a disposed budget throws, never reads freed
//    memory.
// 2. Nothing here holds a timer or a listener.

import * as core from "./edge_deadline.js";
import { isReady, notReady } from "./load.js";
import { now } from "./timers.js";
import * as check from "./validate.js";


/** The core object behind a budget, for js/retry.js; throws once it is disposed. */
export let retryBudgetCore;

/**
 * A retry allowance shared across calls (Finagle / Envoy style): in any
 * `windowMs`, retries are allowed while `retries ≤ ratio × requests +
 * minPerSecond × windowMs / 1000`. Holds a little Wasm memory: `dispose()`
 * frees it (a budget normally lives as long as the service).
 */
export class RetryBudget {
  #core;

  static {
    retryBudgetCore = (b) => {
      if (!b.#core) throw new Error("this RetryBudget was disposed; create a new one");
      return b.#core;
    };
  }

  /** @param {{ ratio?: number, minPerSecond?: number, windowMs?: number }} [options] the core's defaults: 0.2, 10, 10 000 (Finagle's) */
  constructor(options) {
    if (!isReady()) notReady("new RetryBudget");
    const o = check.obj("options", options, "an object like { ratio, minPerSecond, windowMs }", true);
    check.optNumber("options.ratio", o.ratio, "a number between 0 and 1");
    check.optNumber("options.minPerSecond", o.minPerSecond, "a number of retries per second");
    check.optNumber("options.windowMs", o.windowMs);
    this.#core = new core.RetryBudgetCore(options);
  }

  /** `{ requests, retries, floor }` in the window ending now. */
  counts() {
    return retryBudgetCore(this).counts(now());
  }

  /** Frees the budget's Wasm memory. Retries using it afterwards throw. */
  dispose() {
    this.#core?.free();
    this.#core = undefined;
  }
}

if (typeof Symbol.dispose === "symbol") {
  RetryBudget.prototype[Symbol.dispose] = RetryBudget.prototype.dispose;
}
