// Retry cases: attempts, backoff and the decision to try again inside one
// deadline. The same file runs in Node, Deno, workerd and Chromium.
import { equal, ok, rejects, throws } from "../assert.js";
import { SLACK_MS, BRAND, stub, countedParent, spawnWithLib, untilAborted, badInputCases, onFakeTime } from "../pipeline-support.js";

const cases = [
  {
    name: "retry on fake time: each backoff is slept exactly, the next attempt starts at its instant, nothing is left armed",
    run: (lib) =>
      onFakeTime(async (clock) => {
        const d = lib.Deadline.in(10_000);
        const t0 = clock.now();
        const starts = [];
        const refused = () => Promise.reject(Object.assign(new Error("refused"), { failure: "not-applied" }));
        const run = lib.retry(
          () => (starts.push(clock.now() - t0), refused()),
          { deadline: d, backoff: { baseMs: 100, maxMs: 1_000, jitter: 0 }, maxAttempts: 5 },
        );
        await clock.advance(2_000);
        const e = await rejects(run, lib.RetryFailed);
        equal(e.reason, "exhausted");
        equal(starts.join(), "0,100,300,700,1500", "attempts at the exact backoff instants (100, 200, 400, 800)");
        // A seeded full-jitter schedule is slept as drawn (each delay rounded up to the host's whole ms).
        const schedule = lib.backoffSchedule({ baseMs: 100, maxMs: 2_000, jitter: 1 }, 2, 42); // the default backoff
        const jittered = [];
        const t1 = clock.now();
        const again = lib.retry(() => (jittered.push(clock.now() - t1), refused()), { deadline: d, maxAttempts: 3, seed: 42 });
        await clock.advance(3_000);
        await rejects(again, lib.RetryFailed);
        equal(jittered.length, 3);
        equal(jittered[1], Math.ceil(schedule[0]), "the first backoff is the seed's first delay");
        equal(jittered[2] - jittered[1], Math.ceil(schedule[1]), "the second backoff is the seed's second delay");
        return [d];
      }),
  },
  {
    name: "retry on fake time: an attempt is cut at exactly its timeout; a backoff that would pass the deadline is not slept",
    run: (lib) =>
      onFakeTime(async (clock) => {
        const d = lib.Deadline.in(1_000);
        const t0 = clock.now();
        const ends = [];
        const run = lib.retry(
          (signal) =>
            new Promise((_, reject) =>
              signal.addEventListener("abort", () => (ends.push(clock.now() - t0), reject(signal.reason)), { once: true }),
            ),
          { deadline: d, attemptMinMs: 150, attemptTimeoutMs: 200, backoff: { baseMs: 500, maxMs: 500, jitter: 0 }, maxAttempts: 5, idempotent: true },
        );
        await clock.advance(1_000);
        const e = await rejects(run, lib.RetryFailed);
        // 0–200 (timeout), sleep 500, 700–900 (timeout); then 100 ms are left: a 500 ms backoff is not slept.
        equal(ends.join(), "200,900");
        equal(e.attempts.map((a) => `${a.startedAtMs - t0}+${a.elapsedMs}:${a.outcome}`).join(), "0+200:timeout,700+200:timeout");
        equal(e.reason, "backoff-past-deadline");
        return [d];
      }),
  },

  // ---- retries ------------------------------------------------------------------
  {
    name: "retry: a backoff that would pass the deadline is not slept and the next attempt is not made",
    run: async (lib) => {
      const d = lib.Deadline.in(150);
      let calls = 0;
      const t0 = performance.now();
      const e = await rejects(
        lib.retry(
          () => {
            calls++;
            return Promise.reject(Object.assign(new Error("503"), { failure: "not-applied" }));
          },
          { deadline: d, attemptMinMs: 20, backoff: { baseMs: 200, maxMs: 400, jitter: 0 }, idempotent: true },
        ),
        lib.RetryFailed,
      );
      const took = performance.now() - t0;
      equal(calls, 1, "attempts made");
      equal(e.reason, "backoff-past-deadline");
      ok(/a 200 ms backoff would leave less than the 20 ms an attempt needs/.test(e.message), e.message);
      ok(took < 100, `gave up after ${took} ms instead of at once`);
      equal(e.attempts.length, 1);
      equal(e.attempts[0].failure, "not-applied");
      equal(e.attempts[0].outcome, "error");
      equal(e.cause, e.attempts[0].error);
      ok(lib.isRetryFailed(e) && e[BRAND] === "RetryFailed");
      d.dispose();
    },
  },
  {
    name: "retry: every attempt gets its own signal from min(attemptTimeoutMs, remaining); errors carry every attempt",
    run: async (lib, ctx) => {
      const timersBefore = ctx.pendingTimers?.();
      const d = lib.Deadline.in(2_000);
      const signals = [];
      const e = await rejects(
        lib.retry(
          (signal, info) => {
            signals.push(signal);
            equal(info.attempt, signals.length);
            ok(info.timeoutMs === 40, `attempt timeout ${info.timeoutMs}`);
            return stub(signal);
          },
          { deadline: d, attemptMinMs: 10, attemptTimeoutMs: 40, backoff: { baseMs: 5, maxMs: 10, jitter: 0.5 }, maxAttempts: 3, idempotent: true, seed: 7 },
        ),
        lib.RetryFailed,
        /retry stopped after 3 attempts: all 3 attempts failed/,
      );
      equal(e.reason, "exhausted");
      equal(new Set(signals).size, 3, "each attempt has its own signal");
      ok(signals.every((s) => s.aborted && s.reason.name === "AttemptTimeout"), "each attempt was aborted at its timeout");
      equal(e.attempts.map((a) => `${a.attempt}:${a.outcome}:${a.failure}`).join(), "1:timeout:ambiguous,2:timeout:ambiguous,3:timeout:ambiguous");
      for (const a of e.attempts) ok(a.elapsedMs >= 40 - 1 && a.timeoutMs === 40, JSON.stringify(a));
      // The last attempt of a short deadline is cut to what remains.
      const short = lib.Deadline.in(300);
      const cut = await rejects(
        lib.retry((signal, info) => stub(signal), { deadline: short, attemptMinMs: 5, attemptTimeoutMs: 200, backoff: { baseMs: 1, maxMs: 1, jitter: 0 }, idempotent: true }),
        lib.RetryFailed,
      );
      ok(cut.attempts.length === 2, `attempts ${cut.attempts.length}`);
      ok(cut.attempts[1].timeoutMs <= 100, `second attempt timeout ${cut.attempts[1].timeoutMs}`);
      // The second attempt's timeout is the time left: its timer or the deadline's ends it.
      ok(["insufficient", "backoff-past-deadline", "deadline"].includes(cut.reason), cut.reason);
      d.dispose();
      short.dispose();
      if (ctx.pendingTimers) equal(ctx.pendingTimers(), timersBefore, "host timers pending after retry");
    },
  },
  {
    name: "retry: a non-idempotent operation is not retried after a timeout unless an operation key makes it safe",
    run: async (lib) => {
      const d = lib.Deadline.in(2_000);
      const opts = { deadline: d, attemptMinMs: 5, attemptTimeoutMs: 20, backoff: { baseMs: 1, maxMs: 2, jitter: 0 }, idempotent: false };
      let calls = 0;
      const e = await rejects(lib.retry((signal) => (calls++, stub(signal)), opts), lib.RetryFailed);
      equal(e.reason, "not-idempotent");
      equal(calls, 1);
      ok(/pass an operation key if a repeat is safe/.test(e.message), e.message);
      const keys = [];
      const value = await lib.retry(
        (signal, info) => {
          keys.push(info.operationKey);
          return info.attempt === 1 ? stub(signal) : "created once";
        },
        { ...opts, operationKey: "order-42" },
      );
      equal(value, "created once");
      equal(keys.join(), "order-42,order-42");
      // A failure that proves nothing ran is always safe; a permanent one never is.
      let n = 0;
      equal(await lib.retry(() => (++n < 2 ? Promise.reject(Object.assign(new Error("429"), { failure: "not-applied" })) : "ok"), opts), "ok");
      const p = await rejects(lib.retry(() => Promise.reject(new Error("400")), { ...opts, idempotent: true, classify: () => "permanent" }), lib.RetryFailed);
      equal(p.reason, "permanent");
      d.dispose();
    },
  },
  {
    name: "retry: the backoff sleep is aborted by the parent signal and by the deadline",
    run: async (lib) => {
      const parent = countedParent();
      const d = lib.Deadline.in(5_000);
      const failNow = () => Promise.reject(Object.assign(new Error("503"), { failure: "not-applied" }));
      const t0 = performance.now();
      const pending = lib.retry(failNow, { deadline: d, attemptMinMs: 5, backoff: { baseMs: 2_000, maxMs: 2_000, jitter: 0 }, idempotent: true, signal: parent.signal });
      setTimeout(() => parent.controller.abort("user cancelled"), 20);
      const e = await rejects(pending, lib.RetryFailed, /aborted during the backoff/);
      equal(e.reason, "aborted");
      equal(e.cause, "user cancelled");
      ok(performance.now() - t0 < 1_000, "the 2 s backoff was slept through");
      equal(parent.counts.removed, parent.counts.added, "listeners left on the parent");
      // The deadline's parent aborting works the same way.
      const client = new AbortController();
      const linked = lib.Deadline.in(5_000, { signal: client.signal });
      const p2 = lib.retry(failNow, { deadline: linked, attemptMinMs: 5, backoff: { baseMs: 2_000, maxMs: 2_000, jitter: 0 }, idempotent: true });
      setTimeout(() => client.abort(new Error("client left")), 20);
      const e2 = await rejects(p2, lib.RetryFailed);
      equal(e2.reason, "aborted");
      d.dispose();
      linked.dispose();
    },
  },
  {
    name: "retry: the decision is recomputed after the backoff (a sleep that overran leaves too little: no attempt)",
    run: async (lib, ctx) => {
      if (ctx.runtime === "workerd") return; // a busy loop does not advance workerd's clock (see the Workers clock case)
      const d = lib.Deadline.in(300);
      let calls = 0;
      // The backoff (60 ms) leaves 300 − 60 ≥ 200 for an attempt when decided;
      // a busy loop blocks the event loop past the deadline's last 200 ms, so
      // the decision after the sleep must refuse.
      setTimeout(() => {
        const until = performance.now() + 150;
        while (performance.now() < until);
      }, 10);
      const e = await rejects(
        lib.retry(() => (calls++, Promise.reject(Object.assign(new Error("503"), { failure: "not-applied" }))), {
          deadline: d,
          attemptMinMs: 200,
          backoff: { baseMs: 60, maxMs: 60, jitter: 0 },
          idempotent: true,
        }),
        lib.RetryFailed,
      );
      equal(calls, 1);
      equal(e.reason, "insufficient");
      ok(/but an attempt needs at least 200 ms, so none was started/.test(e.message), e.message);
      d.dispose();
    },
  },
  {
    name: "backoff schedules are deterministic for a seed, identical in every runtime",
    run: (lib) => {
      const b = { baseMs: 100, maxMs: 1_000, jitter: 0.5 };
      const a = lib.backoffSchedule(b, 5, 42);
      equal(JSON.stringify(a), JSON.stringify(lib.backoffSchedule(b, 5, 42n)));
      // Values from the core (SplitMix64, seed 42); ceilings 100, 200, 400, 800, 1000.
      [100, 200, 400, 800, 1_000].forEach((c, i) => ok(a[i] >= c / 2 && a[i] <= c, `delay ${i + 1}: ${a[i]}`));
      equal(JSON.stringify(lib.backoffSchedule({ baseMs: 10, maxMs: 40, jitter: 0 }, 4, 1)), "[10,20,40,40]");
      ok(JSON.stringify(lib.backoffSchedule(b, 5, 43)) !== JSON.stringify(a), "another seed, another schedule");
    },
  },

  // ---- the seed 004 example, scaled down -------------------------------------------
  {
    name: "seed 004 scaled: 4 steps × 100 ms timeouts × 2 attempts behind a 300 ms caller end by ~300 ms, never 800 ms",
    run: async (lib, ctx) => {
      const timersBefore = ctx.pendingTimers?.();
      const t0 = performance.now();
      const caller = lib.Deadline.in(300);
      const p = lib.plan(caller, [
        { name: "classify", minMs: 20, preferredMs: 200, kind: "optional" },
        { name: "retrieve", minMs: 20, preferredMs: 200, kind: "optional" },
        { name: "generate", minMs: 20, preferredMs: 200, kind: "optional" },
        { name: "check", minMs: 30, kind: "mandatory" },
      ]);
      const attemptSignals = [];
      let lastAttemptStart = 0;
      // Every step: a retry loop of 2 attempts × 100 ms against a service that
      // hangs, inside the step's own cap.
      const step = (signal, budgetMs) => {
        const d = lib.Deadline.in(budgetMs, { signal });
        return lib
          .retry(
            (s) => {
              attemptSignals.push(s);
              lastAttemptStart = performance.now();
              return stub(s);
            },
            { deadline: d, signal, attemptMinMs: 20, attemptTimeoutMs: 100, maxAttempts: 2, backoff: { baseMs: 1, maxMs: 1, jitter: 0 }, idempotent: true },
          )
          .finally(() => d.dispose());
      };
      const outcome = [];
      for (const name of ["classify", "retrieve", "generate", "check"]) {
        try {
          await p.run(name, step);
          outcome.push(`${name}:ok`);
        } catch (e) {
          outcome.push(`${name}:${e.name}`);
        }
      }
      const took = performance.now() - t0;
      caller.dispose();
      ok(took <= 300 + SLACK_MS, `the pipeline took ${took} ms behind a 300 ms caller (${outcome})`);
      ok(lastAttemptStart - t0 < 300, "an attempt started after the caller gave up");
      ok(attemptSignals.length <= 8, `${attemptSignals.length} attempts`);
      ok(attemptSignals.every((s) => s.aborted), "an attempt's signal was still live: something keeps running");
      equal(p.records.length, 4);
      // The last step's retry was aborted with it and settles in the next
      // turns; until then `p.run` (its awaiter) keeps the process alive.
      await new Promise((resolve) => setTimeout(resolve, 0));
      if (ctx.pendingTimers) equal(ctx.pendingTimers(), timersBefore, "host timers pending after the pipeline");
    },
  },
  ...[
    ["hedge", "lib.hedge((signal) => untilAborted(signal), { deadline: d, delayMs: 10 })"],
    ["d.step", "d.step(1, (signal) => untilAborted(signal))"],
    ["p.run", "lib.plan(d, [{ name: 'respond', minMs: 1, kind: 'fallback' }]).run('respond', (signal) => untilAborted(signal))"],
    ["retry", "lib.retry((signal) => untilAborted(signal), { deadline: d, attemptMinMs: 1, backoff: { baseMs: 1, maxMs: 1, jitter: 0 }, idempotent: true })"],
  ].map(([api, call]) => ({
    name: `reliability: awaiting ${api} whose work ends only at the deadline keeps the process alive until it settles`,
    needs: ["spawnPackageScript"],
    run: async (lib, ctx) => {
      const prelude = "const untilAborted = (signal) => new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }));";
      const awaited = await spawnWithLib(ctx, `${prelude}
const d = lib.Deadline.in(200);
try { await ${call}; console.log("resolved"); } catch (e) { console.log("settled", e.name); }`);
      equal(awaited.code, 0, `child exit code (stdout ${JSON.stringify(awaited.stdout)})`);
      ok(/^settled /.test(awaited.stdout.trim()), `the catch never ran: ${JSON.stringify(awaited.stdout)}`);
      // Nobody awaiting: nothing keeps the process alive (a 10 s deadline).
      const ignored = await spawnWithLib(ctx, `${prelude}
const d = lib.Deadline.in(10_000);
${call};
console.log("left");`);
      equal(ignored.code, 0, "child exit code");
      ok(ignored.ms < 5_000, `an unawaited ${api} kept the process alive ${ignored.ms} ms`);
    },
  })),
  {
    name: "reliability: classify's answer is validated before it reaches Wasm: a TypeError naming the callback",
    run: async (lib) => {
      const d = lib.Deadline.in(5_000);
      for (const [label, answer] of [["a number", 5], ["an object", { failure: "ambiguous" }], ["a Promise", Promise.resolve("ambiguous")], ["undefined", undefined], ["a wrong word", "maybe"]]) {
        const e = await rejects(
          lib.retry(() => Promise.reject(new Error("503")), { deadline: d, attemptMinMs: 1, backoff: { baseMs: 1, maxMs: 1, jitter: 0 }, idempotent: true, classify: () => answer }),
          TypeError,
          /'options.classify' must return "ambiguous", "not-applied" or "permanent"/,
          label,
        );
        ok(!/memory access|unreachable/.test(e.message), e.message);
      }
      // The API still works: the Wasm instance was not trapped.
      equal(await lib.retry(() => "fine", { deadline: d, attemptMinMs: 1, backoff: { baseMs: 1, maxMs: 1, jitter: 0 }, idempotent: true }), "fine");
      d.dispose();
    },
  },
  ...badInputs(),
];

/** Bad input: the error class, the message, `.param` as the user wrote it and `.code`. */
function badInputs() {
  const D = (lib, ms = 10_000) => lib.Deadline.in(ms);
  const retryOpts = (lib, over) => ({ deadline: D(lib), attemptMinMs: 1, backoff: { baseMs: 1, maxMs: 10, jitter: 0 }, idempotent: true, ...over });
  return badInputCases([
    ["retry: jitter 2", (lib) => lib.retry(() => 1, retryOpts(lib, { backoff: { baseMs: 1, maxMs: 2, jitter: 2 } })), RangeError, /'jitter' must be between 0 and 1: current value is 2/, "options.backoff.jitter", "JITTER_OUT_OF_RANGE"],
    ["retry: maxMs below baseMs", (lib) => lib.retry(() => 1, retryOpts(lib, { backoff: { baseMs: 10, maxMs: 2, jitter: 0 } })), RangeError, /'maxMs' must be at least 'baseMs' \(10\)/, "options.backoff.maxMs", "MAX_BELOW_BASE"],
    ["retry: maxAttempts 0", (lib) => lib.retry(() => 1, retryOpts(lib, { maxAttempts: 0 })), RangeError, /'maxAttempts' must be between 1 and 100: current value is 0/, "options.maxAttempts", "MAX_ATTEMPTS_OUT_OF_RANGE"],
    ["retry: maxAttempts 2.5", (lib) => lib.retry(() => 1, retryOpts(lib, { maxAttempts: 2.5 })), RangeError, /'options.maxAttempts' must be a whole number: current value is 2.5/, "options.maxAttempts", "NOT_WHOLE"],
    ["retry: attemptMinMs NaN", (lib) => lib.retry(() => 1, retryOpts(lib, { attemptMinMs: NaN })), RangeError, /'attemptMinMs' must be a finite number/, "options.attemptMinMs", "NOT_FINITE"],
    ["retry: idempotent not a boolean", (lib) => lib.retry(() => 1, retryOpts(lib, { idempotent: "yes" })), TypeError, /'options.idempotent' must be true or false/, "options.idempotent", "INVALID_TYPE"],
    ["retry: no deadline", (lib) => lib.retry(() => 1, retryOpts(lib, { deadline: undefined })), TypeError, /'options.deadline' must be a Deadline/, "options.deadline", "INVALID_TYPE"],
    ["retry: budget not a RetryBudget", (lib) => lib.retry(() => 1, retryOpts(lib, { budget: {} })), TypeError, /'options.budget' must be a RetryBudget/, "options.budget", "INVALID_TYPE"],
    ["retry: operationKey empty", (lib) => lib.retry(() => 1, retryOpts(lib, { operationKey: "" })), TypeError, /'options.operationKey' must be a non-empty string/, "options.operationKey", "INVALID_TYPE"],
    ["retry: classify answers nonsense", (lib) => lib.retry(() => Promise.reject(new Error("x")), retryOpts(lib, { classify: () => "maybe" })), TypeError, /'options.classify' must return "ambiguous", "not-applied" or "permanent" \(synchronously\): it returned "maybe"/, "options.classify", "INVALID_RETURN"],
    ["retry: seed negative", (lib) => lib.retry(() => 1, retryOpts(lib, { seed: -1 })), RangeError, /'options.seed'/, "options.seed", "SEED_OUT_OF_RANGE"],
  ]);
}

// ---- messages: the core's templates, filled in JS ----------------------------------------------
cases.push({
  name: "retry: the core's messages read in full, numbers as JavaScript prints them (Infinity, 1e-7), a stop's reason to 0.1 ms",
  run: (lib) =>
    onFakeTime(async (clock) => {
      const max = Number.MAX_SAFE_INTEGER;
      const d = lib.Deadline.in(1_000.25);
      for (const [options, message] of [
        [{ backoff: { baseMs: 1, maxMs: 2, jitter: Infinity } }, "'jitter' must be between 0 and 1: current value is Infinity"],
        [{ backoff: { baseMs: 2.5, maxMs: 1e-7, jitter: 0.5 } }, "'maxMs' must be at least 'baseMs' (2.5): current value is 1e-7"],
        [{ backoff: { baseMs: 1e300, maxMs: 1e300, jitter: 0 } }, `'baseMs' must be between 0 and ${max} milliseconds (2^53 - 1): current value is 1e+300`],
        [{ attemptMinMs: -Infinity }, `'attemptMinMs' must be a finite number of milliseconds between 0 and ${max}: current value is -Infinity`],
        [{ maxAttempts: 101 }, "'maxAttempts' must be between 1 and 100: current value is 101"],
      ]) {
        const e = await rejects(() => lib.retry(() => "ok", { deadline: d, ...options }), RangeError);
        equal(e.message, message);
      }
      equal(throws(() => lib.backoffSchedule({ baseMs: 1, maxMs: 2, jitter: 1.5 }, 2, 1), RangeError).message, "'jitter' must be between 0 and 1: current value is 1.5");
      equal(throws(() => lib.backoffSchedule({ baseMs: 1, maxMs: 2, jitter: 0 }, 101, 1), RangeError).message, "'retries' must be between 0 and 100: current value is 101");
      // A stop: its sentence is the core's, its numbers to 0.1 ms.
      const stop = await rejects(() => lib.retry(() => "ok", { deadline: d, attemptMinMs: 1_060.5 }), lib.RetryFailed);
      equal(stop.reason, "insufficient");
      equal(stop.message, "retry stopped after 0 attempts: only 1000.3 ms remain but an attempt needs at least 1060.5 ms, so none was started");
      const failing = () => Promise.reject(new Error("down"));
      const retried = rejects(() => lib.retry(failing, { deadline: d, maxAttempts: 2, backoff: { baseMs: 1, maxMs: 1, jitter: 0 }, classify: () => "not-applied" }), lib.RetryFailed);
      await clock.advance(5);
      const all = await retried;
      equal(all.message, "retry stopped after 2 attempts: all 2 attempts failed");
      const permanent = await rejects(() => lib.retry(failing, { deadline: d, classify: () => "permanent" }), lib.RetryFailed);
      equal(permanent.message, "retry stopped after 1 attempt: the failure is permanent, so it was not retried");
      return [d];
    }),
});

// ---- Retry-After and the rate-limit resets: a 429 from the fixture server, on fake time ----------
/** Fetches the fixture's 429 with header `h: v`, and throws what an HTTP client would: an error carrying the response. */
function busy(ctx, h, v) {
  return async (signal) => {
    const response = await fetch(`${ctx.fixtureUrl}/pipeline/busy?h=${encodeURIComponent(h)}&v=${encodeURIComponent(v)}`, { signal });
    await response.text();
    throw Object.assign(new Error(`HTTP ${response.status}`), { response, failure: "not-applied" });
  };
}

/** Waits on real time (the fetch is real I/O; the package's clock is fake) until `seen()` holds. */
async function until(seen, what) {
  for (let i = 0; i < 600 && !seen(); i++) await new Promise((resolve) => globalThis.setTimeout(resolve, 5));
  ok(seen(), `timed out waiting for ${what}`);
}

for (const [form, h, value] of [
  ["Retry-After: 30 (seconds)", "retry-after", () => "30"],
  ["Retry-After as an HTTP date 30 s ahead", "retry-after", () => new Date(Date.now() + 31_000).toUTCString()],
  ["RateLimit-Reset: 30", "ratelimit-reset", () => "30"],
  ["X-RateLimit-Reset: 30 (seconds)", "x-ratelimit-reset", () => "30"],
  ["X-RateLimit-Reset as a Unix epoch 30 s ahead", "x-ratelimit-reset", () => String(Math.ceil(Date.now() / 1000) + 31)],
]) {
  cases.push({
    name: `retry-after: a 429 with ${form} against a 2 s budget fails at once with reason "retry-after", retryAfterMs and remainingMs, sleeping nothing`,
    needs: ["fixtureUrl"],
    run: (lib, ctx) =>
      onFakeTime(async (clock) => {
        const d = lib.Deadline.in(2_000);
        let calls = 0;
        const fetchBusy = busy(ctx, h, value());
        const e = await rejects(() => lib.retry((signal) => (calls++, fetchBusy(signal)), { deadline: d, attemptMinMs: 100 }), lib.RetryFailed);
        equal(e.reason, "retry-after", e.message);
        equal(calls, 1, "no second attempt");
        ok(e.retryAfterMs >= 29_000 && e.retryAfterMs <= 32_000, `retryAfterMs ${e.retryAfterMs}`);
        equal(e.remainingMs, 2_000, "the fake clock did not move: nothing was slept");
        ok(e.cause?.response?.status === 429, "the cause is the attempt's error, its response attached");
        ok(/^retry stopped after 1 attempt: the server asked for a \d+ ms wait, which would leave less than the 100 ms an attempt needs out of the 2000 ms remaining$/.test(e.message), e.message);
        equal(e.attempts.length, 1);
        return [d];
      }),
  });
}

cases.push(
  {
    name: "retry-after: an attempt that throws the 429 Response itself is read the same way",
    needs: ["fixtureUrl"],
    run: (lib, ctx) =>
      onFakeTime(async () => {
        const d = lib.Deadline.in(2_000);
        const attempt = async (signal) => {
          const response = await fetch(`${ctx.fixtureUrl}/pipeline/busy?h=retry-after&v=30`, { signal });
          if (!response.ok) throw response;
          return response.text();
        };
        const e = await rejects(() => lib.retry(attempt, { deadline: d, attemptMinMs: 100, idempotent: true }), lib.RetryFailed);
        equal(e.reason, "retry-after", e.message);
        equal(e.retryAfterMs, 30_000);
        equal(e.remainingMs, 2_000);
        ok(e.cause instanceof Response && e.cause.status === 429, "the cause is the Response the attempt threw");
        return [d];
      }),
  },
  {
    name: "retry-after: a wait that fits is slept exactly (at least the server's, jitter never shortens it), then the next attempt runs",
    needs: ["fixtureUrl"],
    run: (lib, ctx) =>
      onFakeTime(async (clock) => {
        const d = lib.Deadline.in(2_000);
        const starts = [];
        const fetchBusy = busy(ctx, "retry-after", "1");
        let ended = 0;
        const run = lib.retry((signal) => (starts.push(clock.now()), starts.length === 1 ? fetchBusy(signal) : "ok"), {
          deadline: d,
          attemptMinMs: 100,
          backoff: { baseMs: 10, maxMs: 20, jitter: "full" },
          onAttempt: () => ended++,
        });
        await until(() => ended === 1, "the first attempt's failure");
        await clock.advance(0);
        await clock.advance(999);
        equal(starts.length, 1, "not before the server's second");
        await clock.advance(1);
        equal(await run, "ok");
        equal(starts[1] - starts[0], 1_000, "slept the server's 1 000 ms, not the 10–20 ms backoff");
        return [d];
      }),
  },
  {
    name: "retry-after: maxRetryAfterMs refuses a longer wait at once even with time to spare; junk headers fall back to the backoff",
    needs: ["fixtureUrl"],
    run: (lib, ctx) =>
      onFakeTime(async (clock) => {
        const d = lib.Deadline.in(10_000);
        const e = await rejects(() => lib.retry(busy(ctx, "retry-after", "5"), { deadline: d, maxRetryAfterMs: 1_000 }), lib.RetryFailed);
        equal(e.reason, "retry-after");
        equal(e.retryAfterMs, 5_000);
        equal(e.remainingMs, 10_000);
        equal(e.message, "retry stopped after 1 attempt: the server asked for a 5000 ms wait, over maxRetryAfterMs (1000 ms)");
        // Junk (a negative, a word): no server wait; the backoff (10 ms, no jitter) is slept.
        for (const junk of ["-5", "soon"]) {
          const starts = [];
          let ended = 0;
          const fetchBusy = busy(ctx, "retry-after", junk);
          const run = lib.retry((signal) => (starts.push(clock.now()), starts.length === 1 ? fetchBusy(signal) : "ok"), {
            deadline: d,
            backoff: { baseMs: 10, maxMs: 10, jitter: 0 },
            onAttempt: () => ended++,
          });
          await until(() => ended === 1, "the first attempt's failure");
          await clock.advance(0);
          equal(starts.length, 1, `${junk}: the backoff is slept first`);
          await clock.advance(10);
          equal(await run, "ok");
          equal(starts[1] - starts[0], 10, `${junk}: the backoff`);
        }
        return [d];
      }),
  },
  {
    name: "retry: jitter by name (AWS's schemes): full and equal are the fractions 1 and 0.5, decorrelated follows the previous delay; bad values name options.backoff.jitter and options.maxRetryAfterMs",
    run: async (lib) => {
      const s = (jitter) => lib.backoffSchedule({ baseMs: 100, maxMs: 5_000, jitter }, 8, 7);
      equal(s("full").join(), s(1).join());
      equal(s("equal").join(), s(0.5).join());
      const dec = s("decorrelated");
      equal(dec.join(), s("decorrelated").join(), "deterministic for a seed");
      let previous = 100;
      for (const x of dec) {
        ok(x >= 100 && x <= Math.min(5_000, 3 * previous), `${x} after ${previous}`);
        previous = x;
      }
      const d = lib.Deadline.in(1_000);
      const jitter = await rejects(() => lib.retry(() => 1, { deadline: d, backoff: { baseMs: 1, maxMs: 2, jitter: "half" } }), RangeError);
      equal(jitter.param, "options.backoff.jitter");
      equal(jitter.code, "UNKNOWN_JITTER");
      equal(jitter.message, "'jitter' must be a number between 0 and 1 or one of full, equal, decorrelated: current value is 'half'");
      const typed = await rejects(() => lib.retry(() => 1, { deadline: d, backoff: { baseMs: 1, maxMs: 2, jitter: true } }), TypeError);
      equal(typed.param, "options.backoff.jitter");
      const cap = await rejects(() => lib.retry(() => 1, { deadline: d, maxRetryAfterMs: -1 }), RangeError);
      equal(cap.param, "options.maxRetryAfterMs");
      const capType = await rejects(() => lib.retry(() => 1, { deadline: d, maxRetryAfterMs: "1s" }), TypeError);
      equal(capType.param, "options.maxRetryAfterMs");
      equal(throws(() => lib.backoffSchedule({ baseMs: 1, maxMs: 2, jitter: "Full" }, 2, 1), RangeError).param, "backoff.jitter");
      d.dispose();
    },
  },
);

export default cases;
