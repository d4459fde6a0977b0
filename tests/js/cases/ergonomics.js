// Ergonomics cases: the shortest calls users write first (retry with only a
// deadline, an AbortSignal where the options go, a skipped step's guard, a
// readable trace). The same file runs in Node, Deno, workerd and Chromium.
import { equal, ok, rejects, throws } from "../assert.js";

const SLACK_MS = 150;

/** Resolves `value` after `ms`, or rejects with the signal's reason. */
function after(signal, ms, value) {
  return new Promise((resolve, reject) => {
    const onAbort = () => (clearTimeout(timer), reject(signal.reason));
    const timer = setTimeout(() => (signal.removeEventListener("abort", onAbort), resolve(value)), ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

const cases = [
  {
    name: "Deadline.in(ms, signal): an AbortSignal where the options go is the parent, not ignored",
    run: async (lib) => {
      const parent = new AbortController();
      const d = lib.Deadline.in(10_000, parent.signal);
      const at = lib.Deadline.at(d.at, parent.signal);
      const reserved = d.reserve(100);
      const reason = new Error("the client left");
      parent.abort(reason);
      equal(d.signal().aborted, true, "Deadline.in's signal followed the parent");
      equal(d.signal().reason, reason);
      equal(at.signal().reason, reason, "Deadline.at's signal followed the parent");
      equal(reserved.signal().reason, reason, "a derived deadline keeps the parent");
      await rejects(d.step(1, () => "ran"), undefined, /the client left/);
      for (const x of [d, at, reserved]) x.dispose();
      // Anything else in that place is still a TypeError naming the parameter.
      const e = throws(() => lib.Deadline.in(10, 5), TypeError, /^Deadline\.in: 'options' must be an object like \{ signal \} or an AbortSignal/);
      equal(e.param, "options");
      throws(() => lib.Deadline.in(10, { signal: {} }), TypeError, /'options\.signal'/);
    },
  },
  {
    name: "retry with only { deadline }: retries a not-applied failure with the default backoff, and returns",
    run: async (lib) => {
      const d = lib.Deadline.in(3_000);
      let calls = 0;
      const starts = [];
      const value = await lib.retry(() => {
        starts.push(performance.now());
        if (++calls < 3) return Promise.reject(Object.assign(new Error("503"), { failure: "not-applied" }));
        return "third time";
      }, { deadline: d });
      equal(value, "third time");
      equal(calls, 3, "attempts (default maxAttempts is 3)");
      // Default backoff: full jitter under 100 ms, then under 200 ms.
      ok(starts[1] - starts[0] <= 100 + SLACK_MS, `first backoff ${starts[1] - starts[0]} ms`);
      ok(starts[2] - starts[1] <= 200 + SLACK_MS, `second backoff ${starts[2] - starts[1]} ms`);
      d.dispose();
    },
  },
  {
    name: "retry with only { deadline }: not idempotent by default, so an ambiguous failure is not repeated",
    run: async (lib) => {
      const d = lib.Deadline.in(3_000);
      let calls = 0;
      const e = await rejects(lib.retry(() => (calls++, Promise.reject(new Error("connection reset"))), { deadline: d }), lib.RetryFailed);
      equal(e.reason, "not-idempotent");
      equal(calls, 1);
      const again = await lib.retry(() => (++calls === 2 ? Promise.reject(new Error("reset")) : "ok"), { deadline: d, idempotent: true });
      equal(again, "ok");
      d.dispose();
    },
  },
  {
    name: "retry: onAttempt gets each attempt's record as it ends; what it throws never changes the result",
    run: async (lib) => {
      const d = lib.Deadline.in(3_000);
      const seen = [];
      let calls = 0;
      const value = await lib.retry(
        (signal) => (++calls === 1 ? after(signal, 5_000) : "second"),
        { deadline: d, idempotent: true, attemptTimeoutMs: 30, backoff: { baseMs: 1, maxMs: 1, jitter: 0 }, onAttempt: (r) => seen.push(r) },
      );
      equal(value, "second");
      equal(seen.map((r) => `${r.attempt}:${r.outcome}`).join(), "1:timeout,2:ok");
      ok(seen[0].error?.name === "AttemptTimeout" && seen[0].failure === "ambiguous", JSON.stringify(seen[0]));
      ok(seen.every((r) => typeof r.elapsedMs === "number" && typeof r.startedAtMs === "number" && r.timeoutMs <= 30));
      // A throwing hook is reported, not propagated.
      const logged = [];
      const original = console.error;
      console.error = (...args) => logged.push(args);
      try {
        equal(await lib.retry(() => "fine", { deadline: d, onAttempt: () => { throw new Error("hook bug"); } }), "fine");
      } finally {
        console.error = original;
      }
      equal(logged.length, 1, "the hook's error was reported once");
      ok(logged[0].some((a) => a?.message === "hook bug"));
      const bad = await rejects(lib.retry(() => "x", { deadline: d, onAttempt: 5 }), TypeError, /'options\.onAttempt' must be a function/);
      equal(bad.param, "options.onAttempt");
      equal(bad.code, "INVALID_TYPE");
      d.dispose();
    },
  },
  {
    name: "plan: isSkipped tells a skipped optional step from a value",
    run: async (lib) => {
      const d = lib.Deadline.in(1_000);
      const p = lib.plan(d, [
        { name: "extra", minMs: 5_000, kind: "optional" },
        { name: "main", minMs: 1, kind: "mandatory" },
      ], { marginMs: 0 });
      const extra = await p.run("extra", () => "never");
      equal(lib.isSkipped(extra), true);
      const main = await p.run("main", () => ({ skipped: false }));
      equal(lib.isSkipped(main), false);
      for (const v of [undefined, null, "skipped", 0, { skipped: "yes" }, { skipped: true }]) equal(lib.isSkipped(v), false, `isSkipped(${JSON.stringify(v)})`);
      d.dispose();
    },
  },
  {
    name: "plan: trace() rounds every duration to 0.1 ms; records keep the exact values",
    run: async (lib) => {
      const d = lib.Deadline.in(1_000);
      const p = lib.plan(d, [
        { name: "a", minMs: 1, preferredMs: 333.333, kind: "optional" },
        { name: "b", minMs: 1, kind: "mandatory" },
      ], { marginMs: 0.05 });
      await p.run("a", (signal) => after(signal, 3, 1));
      await p.run("b", () => 2);
      const traced = JSON.parse(p.trace());
      equal(traced.length, 2);
      const round = (x) => Math.round(x * 10) / 10;
      p.records.forEach((r, i) => {
        for (const key of ["remainingAtStartMs", "capMs", "elapsedMs"]) {
          equal(traced[i][key], round(r[key]), `${r.step}.${key} (exact ${r[key]})`);
        }
        equal(traced[i].step, r.step);
        equal(traced[i].outcome, r.outcome);
      });
      equal(traced[0].capMs, 333.3);
      d.dispose();
    },
  },
];

export default cases;
