// Hedging inside one deadline: a second attempt after `delayMs` while the
// first may still answer. The policy's checks and default are the Wasm core's
// (src/core/hedge.rs); there is no other arithmetic, so this file owns the
// rest: the attempts' signals, the hedge timer, racing the answers.
//
// # Invariants
// 1. The first attempt to resolve wins and every other attempt in flight is
//    aborted at once; none starts after the deadline's signal has aborted.
// 2. When `hedge` settles, its node is disposed: no wake-up and no listener
//    is left (one node per hedge, one per attempt, js/timers.js `child`).
// 3. The hedge timer is unref'd, like every timer of the package; awaiting
//    `hedge` keeps a Node or Deno process alive until it settles
//    (js/keepalive.js), and nobody awaiting keeps nothing alive.
// 4. A failure is a `RetryFailed` (js/retry.js) carrying every attempt's
//    outcome; its `reason` is "deadline" only when the deadline ended it.

import * as core from "./edge_deadline.js";
import { isDeadlineExceeded, RetryFailed } from "./errors.js";
import { pending } from "./keepalive.js";
import { isReady, notReady } from "./load.js";
import { child, now } from "./timers.js";
import * as check from "./validate.js";

/**
 * Starts `fn(signal, { attempt })`, and another attempt every `delayMs` while
 * none has answered (up to `maxAttempts`, the core's default 2); a failed attempt starts
 * the next one at once. The first to resolve wins; the others are aborted.
 */
export function hedge(fn, options) {
  try {
    return startHedge(fn, options);
  } catch (error) {
    return Promise.reject(error); // bad input rejects, as it does for retry
  }
}

function startHedge(fn, options) {
  if (!isReady()) notReady("hedge");
  check.fn("fn", fn, "a function (signal, { attempt }) => Promise");
  const o = check.obj("options", options, "an object like { deadline, delayMs, maxAttempts }");
  const deadline = check.deadline("options.deadline", o.deadline);
  check.number("options.delayMs", o.delayMs);
  if (o.maxAttempts !== undefined) check.count("options.maxAttempts", o.maxAttempts);
  const parent = check.optSignal("options.signal", o.signal);
  // The range checks and the default number of attempts are the core's.
  const { delayMs, maxAttempts } = core.hedgePolicy(o);
  const at = deadline.at;
  return pending((resolve, reject) => {
    const inFlight = new Map(); // attempt number → its node (a child of the hedge's)
    const records = [];
    let started = 0;
    let done = false;
    let hedge; // the hedge's own node (below)
    const end = () => {
      done = true;
      hedge?.dispose(); // unset when the node was born aborted (then it is released already)
    };
    /** Aborts every attempt in flight with `reason`, recording each as `outcome`. */
    const abortAll = (reason, outcome) => {
      for (const [number, node] of inFlight) {
        const record = records[number - 1];
        record.elapsedMs = now() - record.startedAtMs;
        record.outcome = outcome;
        record.error = reason;
        node.abort(reason);
      }
      inFlight.clear();
    };
    const onAbort = (reason, by) => {
      if (done) return;
      const own = by === deadline && isDeadlineExceeded(reason) && reason.at === at;
      end();
      abortAll(reason, own ? "deadline" : "aborted");
      reject(new RetryFailed(own ? "deadline" : "aborted", `hedge stopped after ${started} attempt${started === 1 ? "" : "s"}: ${own ? "the deadline passed" : "the operation was aborted"}`, records, { cause: reason }));
    };
    const startNext = () => {
      if (done) return;
      const number = ++started;
      const node = child([hedge], Infinity);
      const record = { attempt: number, startedAtMs: now(), elapsedMs: 0, outcome: "running", error: undefined };
      records.push(record);
      inFlight.set(number, node);
      hedge.rearm(started < maxAttempts ? now() + delayMs : Infinity);
      let result;
      try {
        result = fn(node.signal, { attempt: number });
      } catch (error) {
        result = Promise.reject(error);
      }
      Promise.resolve(result).then(
        (value) => {
          if (done || !inFlight.has(number)) return;
          inFlight.delete(number);
          node.dispose();
          record.elapsedMs = now() - record.startedAtMs;
          record.outcome = "ok";
          end();
          abortAll(new DOMException(`hedged attempt ${number} answered first`, "AbortError"), "aborted");
          resolve(value);
        },
        (error) => {
          if (done || !inFlight.has(number)) return;
          inFlight.delete(number);
          node.dispose();
          record.elapsedMs = now() - record.startedAtMs;
          record.outcome = "error";
          record.error = error;
          if (started < maxAttempts && !hedge.aborted) return startNext();
          if (inFlight.size > 0) return; // a hedge still running may answer
          end();
          reject(failedHedge(records));
        },
      );
    };
    const failedHedge = (list) =>
      new RetryFailed("exhausted", `hedge stopped after ${list.length} attempt${list.length === 1 ? "" : "s"}: all ${list.length} attempts failed`, list, { cause: list[list.length - 1]?.error });
    // The hedge's own node: aborted by the deadline or `parent` (and with it
    // every attempt's node), woken at each hedge instant on the deadline's queue.
    hedge = child([deadline, parent], Infinity, { onTime: startNext, onAbort });
    if (done) return;
    startNext();
  });
}
