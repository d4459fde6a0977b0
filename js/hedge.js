// Hedging inside one deadline: another attempt after `delayMs` while the
// first may still answer. Every decision is the Wasm core's machine
// (src/core/hedge.rs `HedgeRun`: when to launch the next attempt, on the
// hedge timer or at once after a failure; the winner; the stop and its
// sentence; the records); this file drives it and owns the rest: the
// attempts' signals, the hedge timer, racing the answers.
//
// # Invariants
// 1. The first attempt to resolve wins and every other attempt in flight is
//    aborted at once; none starts after the deadline's signal has aborted.
// 2. When `hedge` settles, its node is disposed: no wake-up and no listener
//    is left (one node per hedge, one per attempt, js/timers.js `child`),
//    and the core's run (Wasm memory) is freed.
// 3. The hedge timer is unref'd, like every timer of the package; awaiting
//    `hedge` keeps a Node or Deno process alive until it settles
//    (js/keepalive.js), and nobody awaiting keeps nothing alive.
// 4. A failure is a `RetryFailed` (js/retry.js) carrying every attempt's
//    outcome; its `reason` is "deadline" only when the deadline ended it.
// 5. With tracing on (js/otel.js), each attempt's span (a child of the
//    hedge's) ends when the attempt settles, or with the hedge: "lost" when
//    another won, the hedge's stop otherwise.

import * as core from "./edge_deadline.js";
import { isDeadlineExceeded, RetryFailed } from "./errors.js";
import { pending } from "./keepalive.js";
import { isReady, notReady } from "./load.js";
import { tracing } from "./otel.js";
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
  const t = tracing(o.otel);
  // The range checks and the default number of attempts are the core's.
  const run = new core.HedgeRun(o);
  const at = deadline.at;
  // Tracing (js/otel.js): the hedge's span, and each attempt's, a child of it, while it runs.
  let span;
  let launched = 0; // attempts started (tracing only)
  const spans = t === null ? undefined : new Map(); // attempt number → its span
  if (t !== null) {
    const t0 = now();
    span = t.start("deadline.hedge", undefined, at, t0, { "deadline.hedge.delay_ms": o.delayMs });
  }
  /** Ends an attempt's span (tracing on only). */
  const traced = (number, outcome, error) => {
    const s = spans.get(number);
    spans.delete(number);
    t.end(s, outcome, now(), error);
  };
  return pending((resolve, reject) => {
    const inFlight = new Map(); // attempt number → its node (a child of the hedge's)
    const errors = []; // attempt number - 1 → its error
    let hedge; // the hedge's own node (below)
    let done = false;
    /** The hedge settled: abort every attempt in flight, release the node and the run. */
    const end = (reason, outcome, error) => {
      done = true;
      for (const node of inFlight.values()) node.abort(reason);
      if (span !== undefined) {
        // Attempts still in flight lost to a winner, or end with the hedge.
        for (const number of inFlight.keys()) traced(number, outcome === "ok" ? "lost" : outcome, outcome === "ok" ? undefined : reason);
        t.end(span, outcome, now(), error, { "deadline.attempts": launched });
      }
      inFlight.clear();
      hedge?.dispose(); // unset when the node was born aborted (then it is released already)
      run.free();
    };
    /** The core's stop (its word and whole sentence), with every record and its error. */
    const fail = (stop, cause, reason) => {
      const records = run.records().map((r, i) => ({ ...r, error: errors[i] }));
      end(reason, stop.reason, cause ?? stop.message);
      reject(new RetryFailed(stop.reason, stop.message, records, cause === undefined ? undefined : { cause }));
    };
    /** Does what the core answered (src/core/hedge.rs `HedgeStep`; "won" is the caller's). */
    const act = (step) => {
      if (step.do === "launch") launch(step.number, step.wakeAt ?? Infinity);
      else if (step.do === "sleep") hedge.rearm(step.at);
      else if (step.do === "stop") {
        const last = run.lastFailed(); // the cause: the last attempt to fail
        fail(step, last === undefined ? undefined : errors[last - 1]);
      }
    };
    const launch = (number, wakeAt) => {
      const node = child([hedge], Infinity);
      inFlight.set(number, node);
      hedge.rearm(wakeAt);
      let s;
      if (span !== undefined) {
        const t0 = now();
        launched++;
        spans.set(number, (s = t.start("deadline.attempt", span, at, t0, { "deadline.attempt": number })));
      }
      let result;
      try {
        result = s === undefined ? fn(node.signal, { attempt: number }) : t.within(s, fn, node.signal, { attempt: number });
      } catch (error) {
        result = Promise.reject(error);
      }
      Promise.resolve(result).then(
        (value) => {
          if (!inFlight.has(number)) return;
          inFlight.delete(number);
          node.dispose();
          if (span !== undefined) traced(number, "ok");
          if (run.succeeded(number, now()).do !== "won") return;
          // The core's sentence (src/core/hedge.rs `answered_first`), filled here: no Wasm call on the winning path.
          end(new DOMException(core.answeredFirstText(number), "AbortError"), "ok");
          resolve(value);
        },
        (error) => {
          if (!inFlight.has(number)) return;
          inFlight.delete(number);
          node.dispose();
          errors[number - 1] = error;
          if (span !== undefined) traced(number, "error", error);
          act(run.failed(number, now()));
        },
      );
    };
    const onAbort = (reason, by) => {
      if (done) return;
      const own = by === deadline && isDeadlineExceeded(reason) && reason.at === at;
      const stop = run.aborted(now(), own);
      for (const [number] of inFlight) errors[number - 1] = reason;
      fail(stop, reason, reason);
    };
    // The hedge's own node: aborted by the deadline or `parent` (and with it
    // every attempt's node), woken at each hedge instant on the deadline's queue.
    hedge = child([deadline, parent], Infinity, { onTime: () => act(run.wake(now())), onAbort });
    if (done) return;
    act(run.start(now()));
  });
}
