// Hedging cases: a second attempt after a delay, the first answer wins. The
// same file runs in Node, Deno, workerd and Chromium.
import { equal, ok, rejects } from "../assert.js";
import { stub, uid, seen, badInputCases } from "../pipeline-support.js";
import { installFakeTime } from "../fake-time.js";

const cases = [

  // ---- hedging ------------------------------------------------------------------------
  {
    name: "hedge: a second attempt starts after delayMs, the first answer wins and the loser is aborted",
    run: async (lib) => {
      const d = lib.Deadline.in(2_000);
      const logs = [];
      const t0 = performance.now();
      const value = await lib.hedge(
        (signal, { attempt }) => {
          const s = stub(signal, attempt === 1 ? {} : { ms: 5, value: `attempt ${attempt}` });
          logs.push(s.log);
          return s;
        },
        { deadline: d, delayMs: 30, maxAttempts: 3 },
      );
      equal(value, "attempt 2");
      ok(logs[1].started - t0 >= 30 - 1, `the hedge started after ${logs[1].started - t0} ms`);
      equal(logs.length, 2, "a third attempt started after the answer");
      ok(logs[0].abortedAt !== undefined, "the loser was not aborted");
      equal(logs[0].reason.name, "AbortError");
      ok(/hedged attempt 2 answered first/.test(logs[0].reason.message), logs[0].reason.message);
      d.dispose();
    },
  },
  {
    name: "hedge: the losing request's server sees the abort",
    needs: ["fixtureUrl"],
    run: async (lib, ctx) => {
      const d = lib.Deadline.in(5_000);
      const slow = uid("hedge-slow");
      const fast = uid("hedge-fast");
      const body = await lib.hedge(
        async (signal, { attempt }) => {
          const url = attempt === 1 ? `${ctx.fixtureUrl}/pipeline/stub?id=${slow}` : `${ctx.fixtureUrl}/pipeline/stub?id=${fast}&ms=0`;
          if (attempt === 2) equal((await seen(ctx, slow, "started")).state, "started");
          return (await fetch(url, { signal })).json();
        },
        { deadline: d, delayMs: 10 },
      );
      equal(body.id, fast);
      equal((await seen(ctx, slow, "aborted")).state, "aborted", "the loser's request was not cancelled");
      d.dispose();
    },
  },
  {
    name: "hedge: all attempts failing rejects with every outcome; the deadline aborts every attempt in flight",
    run: async (lib) => {
      const d = lib.Deadline.in(2_000);
      const e = await rejects(lib.hedge((signal, { attempt }) => Promise.reject(new Error(`fail ${attempt}`)), { deadline: d, delayMs: 1_000, maxAttempts: 3 }), lib.RetryFailed);
      equal(e.reason, "exhausted");
      equal(e.attempts.map((a) => `${a.attempt}:${a.outcome}:${a.error.message}`).join(), "1:error:fail 1,2:error:fail 2,3:error:fail 3");
      const short = lib.Deadline.in(60);
      const logs = [];
      const e2 = await rejects(lib.hedge((signal) => {
        const s = stub(signal);
        logs.push(s.log);
        return s;
      }, { deadline: short, delayMs: 20, maxAttempts: 2 }), lib.RetryFailed);
      equal(e2.reason, "deadline");
      equal(logs.length, 2);
      ok(logs.every((l) => l.abortedAt !== undefined && lib.isDeadlineExceeded(l.reason)), "an attempt kept running past the deadline");
      equal(e2.attempts.map((a) => a.outcome).join(), "deadline,deadline");
      d.dispose();
      short.dispose();
    },
  },
  ...badInputs(),
];

/** Bad input: the error class, the message, `.param` as the user wrote it and `.code`. */
function badInputs() {
  const D = (lib, ms = 10_000) => lib.Deadline.in(ms);
  return badInputCases([
    ["hedge: delayMs -1", (lib) => lib.hedge(() => 1, { deadline: D(lib), delayMs: -1 }), RangeError, /'delayMs' must be between 0 and/, "options.delayMs", "NEGATIVE"],
    ["hedge: maxAttempts 101", (lib) => lib.hedge(() => 1, { deadline: D(lib), delayMs: 1, maxAttempts: 101 }), RangeError, /'maxAttempts' must be between 1 and 100/, "options.maxAttempts", "MAX_ATTEMPTS_OUT_OF_RANGE"],
    ["hedge: fn missing", (lib) => lib.hedge(undefined, { deadline: D(lib), delayMs: 1 }), TypeError, /'fn' must be a function/, "fn", "INVALID_TYPE"],
  ]);
}

// ---- messages: the core's templates, filled in JS ----------------------------------------------
cases.push({
  name: "hedge: the core's messages read in full, numbers as JavaScript prints them (Infinity)",
  run: async (lib) => {
    const max = Number.MAX_SAFE_INTEGER;
    const d = lib.Deadline.in(1_000);
    try {
      const e = await rejects(() => lib.hedge(() => "ok", { deadline: d, delayMs: Infinity }), RangeError);
      equal(e.message, `'delayMs' must be a finite number of milliseconds between 0 and ${max}: current value is Infinity`);
      const n = await rejects(() => lib.hedge(() => "ok", { deadline: d, delayMs: 1, maxAttempts: 0 }), RangeError);
      equal(n.message, "'maxAttempts' must be between 1 and 100: current value is 0");
    } finally {
      d.dispose();
    }
  },
});

// ---- the core's machine, on fake time ----------------------------------------------------------
cases.push({
  name: "hedge (fake time): the hedge timer launches on its instant, a failure launches at once, and the cause is the last attempt to fail (as in the Rust API)",
  run: async (lib) => {
    const clock = installFakeTime();
    try {
      const d = lib.Deadline.in(10_000);
      const t0 = clock.now();
      const started = [];
      // Attempt 1 fails at 50 ms; attempt 2 (the hedge at 30 ms) fails first,
      // at 40 ms, which launches attempt 3 at once (not at 60 ms); it fails at 45 ms.
      const failAfter = { 1: 50, 2: 10, 3: 5 };
      const p = lib.hedge(
        (signal, { attempt }) => {
          started.push(clock.now() - t0);
          return clock.sleep(failAfter[attempt]).then(() => Promise.reject(new Error(`fail ${attempt}`)));
        },
        { deadline: d, delayMs: 30, maxAttempts: 3 },
      );
      p.catch(() => {});
      await clock.advance(100);
      const e = await rejects(p, lib.RetryFailed);
      equal(started.join(), "0,30,40", "launch instants");
      equal(e.message, "hedge stopped after 3 attempts: all 3 attempts failed");
      equal(e.cause?.message, "fail 1", "the cause is the last attempt to fail");
      equal(e.attempts.map((a) => `${a.attempt}:${a.outcome}:${a.startedAtMs - t0}:${a.elapsedMs}:${a.error.message}`).join(), "1:error:0:50:fail 1,2:error:30:10:fail 2,3:error:40:5:fail 3");
      await clock.advance(100);
      equal(started.length, 3, "an attempt started after the hedge failed");
      d.dispose();
    } finally {
      clock.restore();
    }
  },
});

export default cases;
