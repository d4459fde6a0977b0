// Pipeline cases (plans, retries, budgets, hedging, propagation, platform
// caps): the same file runs in Node, Deno, workerd and Chromium.
//
// Timing: stub services have controlled delays; the cases wait on promises
// and abort events, never on sleeps. Budgets are a few hundred ms so the
// suite stays fast; SLACK_MS bounds how late a host timer may fire on a
// loaded 2-core machine. "Never before" checks are exact.
import { aborted, equal, near, ok, rejects, throws } from "../assert.js";

const SLACK_MS = 150;
const BRAND = "edgeDeadlineError";

/**
 * An in-process stub service: resolves `value` after `ms` (never when `ms` is
 * undefined), rejects with the signal's reason when aborted first. `log`
 * records what it saw.
 */
function stub(signal, { ms, value = "ok", fail } = {}) {
  const log = { started: performance.now(), abortedAt: undefined, reason: undefined };
  const done = new Promise((resolve, reject) => {
    let timer;
    const onAbort = () => {
      clearTimeout(timer);
      log.abortedAt = performance.now();
      log.reason = signal.reason;
      reject(signal.reason);
    };
    if (signal.aborted) return onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
    if (ms !== undefined) {
      timer = setTimeout(() => {
        signal.removeEventListener("abort", onAbort);
        if (fail) reject(fail);
        else resolve(value);
      }, ms);
    }
  });
  return Object.assign(done, { log });
}

/** A stub that ignores its signal entirely and never settles. */
const deaf = () => new Promise(() => {});

/** Counts add/removeEventListener calls on one signal instance (a deadline's signal is one object). */
function countListeners(signal) {
  const counts = { added: 0, removed: 0 };
  const add = signal.addEventListener.bind(signal);
  const remove = signal.removeEventListener.bind(signal);
  signal.addEventListener = (...args) => (counts.added++, add(...args));
  signal.removeEventListener = (...args) => (counts.removed++, remove(...args));
  return counts;
}

function countedParent() {
  const controller = new AbortController();
  return { controller, signal: controller.signal, counts: countListeners(controller.signal) };
}

let ids = 0;
const uid = (prefix) => `${prefix}-${Date.now().toString(36)}-${++ids}-${Math.random().toString(36).slice(2, 8)}`;

async function seen(ctx, id, until) {
  const res = await fetch(`${ctx.fixtureUrl}/pipeline/seen?id=${encodeURIComponent(id)}&until=${until}`);
  return res.json();
}

/** A CPU-bound loop of roughly `ms` on this machine, without reading any clock. */
function spin(iterations) {
  let x = 0;
  for (let i = 0; i < iterations; i++) x = (x + i * 2654435761) % 1_000_003;
  return x;
}

const seedSteps = () => [
  { name: "retrieve", minMs: 5, preferredMs: 100, kind: "optional" },
  { name: "generate", minMs: 50, kind: "optional" },
  { name: "respond", minMs: 40, kind: "fallback" },
];

const cases = [
  // ---- plans --------------------------------------------------------------------
  {
    name: "plan: fast retrieval + slow generation: generation's cap is what is left minus the fallback reserve",
    run: async (lib, ctx) => {
      const timersBefore = ctx.pendingTimers?.();
      const d = lib.Deadline.in(600);
      const counts = countListeners(d.signal());
      const seenRecords = [];
      const p = lib.plan(d, seedSteps(), { onStep: (r) => seenRecords.push(r) });
      const docs = await p.run("retrieve", (signal, budgetMs) => {
        equal(budgetMs, 100, "retrieve stops at its preferred size");
        ok(signal instanceof AbortSignal && !signal.aborted);
        return "docs";
      });
      equal(docs, "docs");
      let genSignal;
      const answer = await p.run("generate", (signal, budgetMs) => {
        genSignal = signal;
        const remaining = d.remaining(); // read after the decision: a little less
        // 40 ms held for the fallback + one 5 ms hand-off margin.
        ok(budgetMs >= remaining - 45 - 1e-6 && budgetMs < remaining - 45 + 5, `generate got ${budgetMs} of ${remaining}`);
        return stub(signal, { ms: 60, value: "answer" });
      });
      equal(answer, "answer");
      equal(genSignal.aborted, false, "a finished step's signal is never aborted afterwards");
      const final = await p.run("respond", (signal, budgetMs) => `respond with ${budgetMs > 40 ? "time" : "little time"}`);
      equal(final, "respond with time");
      const trace = JSON.parse(p.trace());
      equal(trace.length, 3);
      equal(trace.map((r) => r.outcome).join(), "ok,ok,ok");
      equal(trace.map((r) => r.step).join(), "retrieve,generate,respond");
      for (const r of trace) {
        ok(Object.keys(r).join() === "step,remainingAtStartMs,capMs,elapsedMs,outcome", Object.keys(r).join());
        ok(r.capMs <= r.remainingAtStartMs && r.elapsedMs >= 0, JSON.stringify(r));
      }
      ok(trace[1].elapsedMs >= 60 - 1, "generation took its 60 ms");
      equal(JSON.stringify(seenRecords), JSON.stringify(p.records), "onStep saw every record as it happened");
      equal(counts.removed, counts.added, "listeners left on the deadline's signal");
      d.dispose();
      if (ctx.pendingTimers) equal(ctx.pendingTimers(), timersBefore, "host timers pending after the pipeline");
    },
  },
  {
    name: "plan: slow retrieval leaves no generation budget: generation is not launched, the fallback runs in its reserve",
    run: async (lib) => {
      const d = lib.Deadline.in(400);
      const p = lib.plan(d, [
        { name: "retrieve", minMs: 5, preferredMs: 250, kind: "optional" },
        { name: "generate", minMs: 150, kind: "optional" },
        { name: "respond", minMs: 50, kind: "fallback" },
      ]);
      await p.run("retrieve", (signal) => stub(signal, { ms: 200 }));
      let launched = false;
      const skipped = await p.run("generate", () => {
        launched = true;
      });
      equal(launched, false, "generation was launched");
      equal(skipped.skipped, true);
      ok(/are available after the reserve for later steps but this step needs at least 150 ms/.test(skipped.reason), skipped.reason);
      const text = await p.run("respond", (signal, budgetMs) => {
        ok(budgetMs >= 50, `the fallback got ${budgetMs} ms, less than its 50 ms reserve`);
        return "links to the retrieved documents";
      });
      equal(text, "links to the retrieved documents");
      const trace = JSON.parse(p.trace());
      equal(trace.map((r) => r.outcome).join(), "ok,skipped,ok");
      equal(trace[1].capMs, 0);
      ok(trace[1].elapsedMs < 5, `a skip took ${trace[1].elapsedMs} ms`);
      d.dispose();
    },
  },
  {
    name: "plan: a mandatory step that cannot get its minimum throws InsufficientBudget without starting",
    run: async (lib) => {
      // An optional step below its minimum is skipped instead.
      const early = lib.plan(lib.Deadline.in(50), [{ name: "enrich", minMs: 100, kind: "optional" }, { name: "x", minMs: 0, kind: "optional" }]);
      let called = false;
      equal((await early.run("enrich", () => (called = true))).skipped, true, "an optional step below its minimum is skipped");
      const d = lib.Deadline.in(200);
      const p = lib.plan(d, [{ name: "check", minMs: 150, kind: "mandatory" }]);
      await stub(new AbortController().signal, { ms: 80 }); // time spent before the step, outside the plan
      // What was left when run() was called: exact, unlike "200 − 80" (Node's
      // timers can fire up to 1 ms early on the performance.now() clock).
      const leftAtCall = d.at - performance.now();
      const e = await rejects(p.run("check", () => (called = true)), lib.InsufficientBudget, /the step needs at least 150 ms, so it was not started/);
      equal(called, false, "a refused step was started");
      ok(lib.isInsufficientBudget(e));
      equal(e.step, "check");
      equal(e.minMs, 150);
      ok(e.remainingMs <= leftAtCall && e.remainingMs < 150, `remainingMs ${e.remainingMs} (${leftAtCall} ms were left at the call)`);
      const [record] = p.records;
      equal(record.outcome, "insufficient");
      equal(record.capMs, 0);
      d.dispose();
    },
  },
  {
    name: "plan: scheduling margin: a step aborted at its cap leaves the next mandatory step its reserve",
    run: async (lib) => {
      // marginMs 50 covers timer lateness on a loaded 2-core CI machine; the
      // default (5 ms) is sized for an idle event loop (src/core/plan.rs).
      const d = lib.Deadline.in(400);
      const p = lib.plan(d, [
        { name: "work", minMs: 10, kind: "optional" },
        { name: "check", minMs: 60, kind: "mandatory" },
      ], { marginMs: 50 });
      let workSignal;
      const e = await rejects(
        p.run("work", (signal, budgetMs) => {
          workSignal = signal;
          near(budgetMs, d.remaining() - 60 - 50, 2, "work's cap holds the check's reserve and one margin");
          return deaf(); // ignores its signal: p.run still settles at the cap
        }),
        lib.StepTimeout,
      );
      ok(workSignal.aborted, "the step's signal was aborted at its cap");
      equal(workSignal.reason, e, "the step's signal and p.run carry the same reason");
      const [work] = p.records;
      equal(work.outcome, "timeout");
      ok(work.elapsedMs >= work.capMs - 1, `aborted ${work.capMs - work.elapsedMs} ms before its cap`);
      let checkBudget;
      await p.run("check", (signal, budgetMs) => {
        checkBudget = budgetMs;
        return "policy ok";
      });
      ok(checkBudget >= 60, `the mandatory check got ${checkBudget} ms (< its 60 ms reserve); work ended ${work.elapsedMs - work.capMs} ms late`);
      equal(p.records[1].outcome, "ok");
      d.dispose();
    },
  },
  {
    name: "plan: a cancelled client stops the pipeline; the stub services saw the abort and nothing keeps running",
    needs: ["fixtureUrl"],
    run: async (lib, ctx) => {
      const client = countedParent();
      const d = lib.Deadline.in(5_000, { signal: client.signal });
      const p = lib.plan(d, seedSteps());
      const id = uid("cancelled");
      let local;
      const running = p.run("retrieve", async (signal) => {
        local = stub(signal);
        const [res] = await Promise.all([fetch(`${ctx.fixtureUrl}/pipeline/stub?id=${id}`, { signal }), local]);
        return res.json();
      });
      equal((await seen(ctx, id, "started")).state, "started", "the stub service received the request");
      client.controller.abort("client went away");
      const reason = await rejects(running);
      equal(reason, "client went away", "p.run rejects with the client's reason");
      ok(local.log.abortedAt !== undefined, "the in-process stub saw its abort");
      const server = await seen(ctx, id, "aborted");
      equal(server.state, "aborted", "the stub service saw the request aborted");
      let launched = false;
      equal(await rejects(p.run("generate", () => (launched = true))), "client went away");
      equal(launched, false, "a step was launched after the client left");
      equal(p.records.map((r) => r.outcome).join(), "aborted,aborted");
      equal(client.counts.removed, client.counts.added, "listeners left on the client's signal");
      d.dispose();
    },
  },
  {
    name: "plan: a step that throws is recorded as error; a step's error does not stop the plan",
    run: async (lib) => {
      const d = lib.Deadline.in(1_000);
      const p = lib.plan(d, seedSteps());
      const boom = new Error("index unavailable");
      equal(await rejects(p.run("retrieve", () => Promise.reject(boom))), boom);
      equal(await rejects(p.run("generate", () => {
        throw boom;
      })), boom);
      equal(await p.run("respond", () => "fallback"), "fallback");
      equal(p.records.map((r) => r.outcome).join(), "error,error,ok");
      d.dispose();
    },
  },
  {
    name: "plan: onStep receives each record as it happens; a throwing hook does not change the run's result",
    run: async (lib) => {
      const d = lib.Deadline.in(1_000);
      const lines = [];
      const hookErrors = [];
      const p = lib.plan(d, seedSteps(), {
        onStep: (r) => {
          lines.push(`${r.step} ${r.outcome} remaining=${r.remainingAtStartMs.toFixed(0)}`);
          if (r.step === "generate") throw new Error("logger down");
        },
        onStepError: (e) => hookErrors.push(e.message),
      });
      await p.run("retrieve", () => {
        equal(lines.length, 0, "the hook ran before the step ended");
        return 1;
      });
      equal(lines.length, 1);
      equal(await p.run("generate", () => 2), 2);
      equal(hookErrors.join(), "logger down");
      ok(/^retrieve ok remaining=\d+$/.test(lines[0]), lines[0]);
      d.dispose();
    },
  },
  {
    name: "plan: the deadline itself ends a step whose cap reaches it (the fallback's), recorded as deadline",
    run: async (lib) => {
      const d = lib.Deadline.in(60);
      const p = lib.plan(d, [{ name: "respond", minMs: 10, kind: "fallback" }], { marginMs: 0 });
      const e = await rejects(p.run("respond", (signal) => stub(signal)), lib.DeadlineExceeded);
      ok(performance.now() >= d.at, "ended before the deadline");
      equal(p.records[0].outcome, "deadline");
      ok(e.lateByMs >= 0);
      d.dispose();
    },
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
    name: "retry budget: retries are shared across calls and stop when the budget is spent",
    run: async (lib) => {
      const budget = new lib.RetryBudget({ ratio: 0.5, minPerSecond: 0, windowMs: 10_000 });
      const d = lib.Deadline.in(5_000);
      const opts = { deadline: d, attemptMinMs: 1, backoff: { baseMs: 1, maxMs: 1, jitter: 0 }, idempotent: true, budget, maxAttempts: 2 };
      const flaky = () => {
        let n = 0;
        return () => (++n === 1 ? Promise.reject(Object.assign(new Error("503"), { failure: "not-applied" })) : "ok");
      };
      // 2 requests allow 1 retry (0.5 × 2): the first call's retry is refused
      // (0.5 × 1 < 1), the second's is allowed, the third's refused again.
      const e = await rejects(lib.retry(flaky(), opts), lib.RetryFailed);
      equal(e.reason, "budget-exhausted");
      equal(await lib.retry(flaky(), opts), "ok");
      equal((await rejects(lib.retry(flaky(), opts), lib.RetryFailed)).reason, "budget-exhausted");
      const c = budget.counts();
      equal(c.requests, 3);
      equal(c.retries, 1);
      equal(c.floor, 0);
      budget.dispose();
      budget.dispose(); // twice is fine
      throws(() => budget.counts(), Error, /disposed/);
      await rejects(lib.retry(flaky(), opts), Error, /disposed/);
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

  // ---- propagation ------------------------------------------------------------------
  {
    name: "toHeaders sends the remaining duration (rounded down) in every format; fromHeaders reads it back",
    run: (lib) => {
      const d = lib.Deadline.in(30_000);
      const h = lib.toHeaders(d, { format: lib.deadlineHeaders });
      equal(Object.keys(h).join(), "grpc-timeout,connect-timeout-ms,x-envoy-expected-rq-timeout-ms,edge-deadline-remaining-ms");
      ok(/^\d{1,8}[HMSmun]$/.test(h["grpc-timeout"]), h["grpc-timeout"]);
      for (const name of lib.deadlineHeaders) {
        const ms = lib.parseHeader(name, h[name]);
        ok(ms <= 30_000 && ms > 29_000, `${name}: ${h[name]} → ${ms}`);
      }
      equal(Object.keys(lib.toHeaders(d)).join(), "edge-deadline-remaining-ms", "the default header");
      equal(lib.encodeHeader("grpc-timeout", 1.5), "1500000n");
      equal(lib.encodeHeader("grpc-timeout", 2 ** 40), "2147483S", "clamped below 2^31 ms");
      equal(lib.encodeHeader("connect-timeout-ms", 99.9), "99", "rounded down");
      equal(lib.encodeHeader("GRPC-Timeout", 0), "0n", "names are case-insensitive");
      equal(lib.parseHeader("grpc-timeout", "2S"), 2_000);
      equal(lib.parseHeader("grpc-timeout", " 100m\t"), 100, "optional whitespace around the value");
      // A caller shortens our deadline, never extends it; transit is subtracted.
      const back = lib.deadlineFromHeaders(new Headers({ "grpc-timeout": "500m", "connect-timeout-ms": "800" }), { maxMs: 10_000, transitMs: 20 });
      equal(back.source, "grpc-timeout");
      near(back.deadline.remaining(), 480, 15);
      const capped = lib.Deadline.fromHeaders({ "Grpc-Timeout": "99999999H" }, { maxMs: 1_000 });
      ok(capped.remaining() <= 1_000 && capped.remaining() > 950, `99999999H gives ${capped.remaining()}`);
      const none = lib.deadlineFromHeaders({ "content-type": "text/plain" }, { maxMs: 700 });
      equal(none.source, null);
      ok(none.deadline.remaining() <= 700);
      const arr = lib.deadlineFromHeaders({ "connect-timeout-ms": ["250"] }, { maxMs: 1_000 });
      ok(arr.deadline.remaining() <= 250 && arr.source === "connect-timeout-ms");
      const only = lib.deadlineFromHeaders({ "grpc-timeout": "10m", "connect-timeout-ms": "900" }, { maxMs: 1_000, formats: ["connect-timeout-ms"] });
      equal(only.source, "connect-timeout-ms");
      const parent = new AbortController();
      const linked = lib.Deadline.fromHeaders({}, { maxMs: 1_000, signal: parent.signal });
      parent.abort("gone");
      equal(linked.signal().reason, "gone");
      d.dispose();
    },
  },
  {
    name: "propagation over a real fetch: the callee reads what we sent, less transit",
    needs: ["fixtureUrl"],
    run: async (lib, ctx) => {
      const d = lib.Deadline.in(2_000);
      for (const format of ["grpc-timeout", "connect-timeout-ms", "edge-deadline-remaining-ms"]) {
        const sentAt = performance.now();
        const ours = d.at - sentAt; // at least what the header states
        const res = await fetch(`${ctx.fixtureUrl}/pipeline/echo-headers`, { headers: lib.toHeaders(d, { format }) });
        const received = await res.json();
        const readBefore = performance.now();
        const theirs = lib.deadlineFromHeaders(received, { maxMs: 60_000, transitMs: 5 });
        const readAfter = performance.now();
        equal(theirs.source, format);
        // What the callee has = what we had when sending, rounded down, less transit.
        const most = theirs.deadline.at - readAfter;
        const least = theirs.deadline.at - readBefore;
        ok(most <= ours - 5 + 1e-6, `${format}: the callee got ${most} ms, more than the ${ours} ms we had less 5 ms transit`);
        ok(least >= ours - 5 - 1 - (readBefore - sentAt), `${format}: the callee lost more than rounding and the trip: ${least} of ${ours}`);
      }
      d.dispose();
    },
  },
  ...badHeaderCases(),

  // ---- platform caps --------------------------------------------------------------
  {
    name: "platform caps ship as data with their source and date; forPlatform folds wall-clock caps, never the CPU cap",
    run: (lib) => {
      const caps = lib.platformCaps();
      ok(caps.length >= 9);
      for (const c of caps) {
        ok(c.source.startsWith("https://") && /^\d{4}-\d{2}-\d{2}$/.test(c.retrieved), JSON.stringify(c));
        ok(c.ms === null || (c.ms > 0 && Number.isFinite(c.ms)));
      }
      const cpu = caps.filter((c) => c.platform === "cloudflare-workers" && c.kind === "cpu").map((c) => `${c.plan}:${c.ms}:${c.configurableMaxMs}`);
      equal(cpu.join(), "free:10:null,paid:30000:300000");
      const waitUntil = caps.find((c) => c.platform === "cloudflare-workers" && c.trigger === "wait-until");
      equal(waitUntil.ms, 30_000);
      equal(caps.find((c) => c.trigger === "cron").ms, 900_000);

      const free = lib.platformDeadline({ platform: "cloudflare-workers", plan: "free", productMs: 8_000, fallbackReserveMs: 500 });
      equal(free.bound, "product");
      equal(free.cpuMs, 10, "the CPU cap is reported");
      near(free.deadline.remaining(), 7_500, 50, "and not folded into the deadline");
      ok(free.sources.every((s) => s.startsWith("https://")));
      const after = lib.Deadline.forPlatform({ platform: "cloudflare-workers", trigger: "wait-until", productMs: 60_000, fallbackReserveMs: 1_000 });
      near(after.remaining(), 29_000, 50);
      const vercel = lib.platformDeadline({ platform: "vercel-edge", productMs: 60_000, fallbackReserveMs: 2_000 });
      equal(vercel.bound, "first-byte");
      near(vercel.deadline.remaining(), 23_000, 50);
      const over = lib.platformDeadline({ platform: "cloudflare-workers", productMs: 60_000, fallbackReserveMs: 100, caps: { wallMs: 5_000, cpuMs: 50 } });
      equal(over.bound, "wall");
      equal(over.cpuMs, 50);
      near(over.deadline.remaining(), 4_900, 50);
      const custom = lib.platformDeadline({ platform: "custom", productMs: 9_000, fallbackReserveMs: 0, caps: { firstByteMs: 3_000 } });
      equal(custom.bound, "first-byte");
      equal(custom.cpuMs, null);
      const deno = lib.platformDeadline({ platform: "deno-deploy", productMs: 4_000, fallbackReserveMs: 250 });
      equal(deno.bound, "product");
      near(deno.deadline.remaining(), 3_750, 50);
    },
  },
  {
    name: "Workers clock: the real host clock across a CPU busy loop and across I/O; remaining() follows it exactly",
    needs: ["fixtureUrl"],
    run: async (lib, ctx) => {
      // Production Workers freeze Date.now()/performance.now() while JavaScript
      // runs (they move only across I/O). The workerd here (1.20261117.1) does
      // not: its WorkerTimerChannel reads the precise calendar clock, so time
      // advances during CPU work. Either way remaining() must be exactly
      // `at − performance.now()`: the package keeps no clock of its own.
      const d = lib.Deadline.in(10_000);
      await fetch(`${ctx.fixtureUrl}/ping`).then((r) => r.text());
      const t0 = performance.now();
      const r0 = d.remaining();
      let t1 = t0;
      for (let i = 0; i < 200 && t1 - t0 < 30; i++) spin(1_000_000), (t1 = performance.now());
      const r1 = d.remaining();
      const t1b = performance.now();
      ok(r1 <= d.at - t1 && r1 >= d.at - t1b, "remaining() is not at − performance.now()");
      if (t1 === t0) {
        // Frozen (production Workers): no progress during the loop, progress after I/O.
        equal(r1, r0, "remaining() moved while the clock did not");
        await fetch(`${ctx.fixtureUrl}/ping`).then((r) => r.text());
        ok(performance.now() > t0 && d.remaining() < r0, "time did not advance across I/O");
      } else {
        ok(t1 - t0 >= 30 && r1 <= r0 - 30, `the busy loop advanced the clock ${t1 - t0} ms and remaining() ${r0 - r1} ms`);
      }
      d.dispose();
    },
  },
  {
    name: "Workers clock, modelled: with time frozen during CPU work, a busy loop leaves remaining() unchanged and a plan step's cap cannot interrupt it",
    needs: ["fixtureUrl"],
    run: async (lib, ctx) => {
      // The production Workers clock, modelled in any runtime: performance.now()
      // returns the time of the last I/O. This shows what it means for the
      // package: remaining() does not fall during CPU work, so CPU-heavy steps
      // must be bounded by the CPU cap (platformDeadline().cpuMs), not by the
      // wall-clock deadline.
      const real = performance.now.bind(performance);
      let frozen = real();
      const io = async () => {
        await fetch(`${ctx.fixtureUrl}/ping`).then((r) => r.text());
        frozen = real();
      };
      const own = Object.getOwnPropertyDescriptor(performance, "now");
      Object.defineProperty(performance, "now", { value: () => frozen, configurable: true, writable: true });
      try {
        equal(performance.now(), frozen, "the modelled clock is in place");
        const d = lib.Deadline.in(5_000);
        const r0 = d.remaining();
        spin(3_000_000);
        equal(d.remaining(), r0, "remaining() fell during CPU work under a frozen clock");
        const p = lib.plan(d, [{ name: "cpu", minMs: 1, preferredMs: 20, kind: "optional" }, { name: "respond", minMs: 10, kind: "fallback" }]);
        let budget;
        const result = await p.run("cpu", (signal, budgetMs) => {
          budget = budgetMs;
          spin(3_000_000); // longer than 20 ms of real CPU, yet the clock says 0
          return signal.aborted ? "aborted" : "finished";
        });
        equal(result, "finished", "a synchronous step cannot be interrupted by its cap");
        equal(budget, 20);
        equal(p.records[0].elapsedMs, 0, "the trace shows no time spent: the clock did not move");
        await io();
        ok(d.remaining() < r0, "remaining() did not fall across I/O");
        d.dispose();
      } finally {
        if (own) Object.defineProperty(performance, "now", own);
        else delete performance.now;
      }
      ok(performance.now() >= frozen, "the real clock is back");
    },
  },
  ...reliabilityCases(),
  ...badInputCases(),
];

/**
 * Replaces `performance.now` with a clock that moves only when told (the
 * modelled-clock pattern above): fake time where timing is the subject.
 * Host timers stay real; the cases below never wait on one.
 */
async function withFakeClock(body) {
  const own = Object.getOwnPropertyDescriptor(performance, "now");
  // A whole millisecond, so `at − now` is exact in the assertions.
  const clock = { t: Math.ceil(performance.now()) };
  Object.defineProperty(performance, "now", { value: () => clock.t, configurable: true, writable: true });
  try {
    return await body(clock);
  } finally {
    if (own) Object.defineProperty(performance, "now", own);
    else delete performance.now;
  }
}

/** Runs `code` in a child process with `lib` (the whole API, initialised) in scope; { code, ms, stdout }. */
function spawnWithLib(ctx, code) {
  return ctx.spawnPackageScript(`await init();
const lib = await import(new URL("./api.js", wasmUrl).href);
${code}`);
}

/** Promises that must hold on a loaded host, under short budgets and hostile callbacks. */
function reliabilityCases() {
  const untilAborted = (signal) => new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason), { once: true }));
  return [
    {
      name: "reliability: the fallback runs with what is left of its reserve, however late the step before it ended",
      run: (lib) =>
        withFakeClock(async (clock) => {
          const d = lib.Deadline.in(300);
          const p = lib.plan(d, [
            { name: "work", minMs: 10, kind: "optional" },
            { name: "respond", minMs: 100, kind: "fallback" },
          ]);
          await p.run("work", (signal, budgetMs) => {
            equal(budgetMs, 300 - 100 - 5, "work holds the reserve and one margin");
            clock.t += budgetMs + 60; // ended 60 ms after its cap: far more than the margin
            return "late";
          });
          let given;
          const answer = await p.run("respond", (signal, budgetMs) => ((given = budgetMs), "fallback answer"));
          equal(answer, "fallback answer", "the fallback answered");
          equal(given, 45, "the fallback got every millisecond left (100 + 5 − 60)");
          equal(p.records.map((r) => r.outcome).join(), "ok,ok");
          // Once the deadline itself has passed there is nothing to run in.
          clock.t = d.at;
          const e = await rejects(p.run("respond", () => "too late"), lib.InsufficientBudget);
          equal(e.step, "respond");
          d.dispose();
        }),
    },
    {
      name: "reliability: short incoming deadlines degrade at run time instead of throwing",
      run: async (lib) => {
        // A propagated grpc-timeout of 50 ms, reserves worth 180 ms.
        const short = lib.Deadline.fromHeaders({ "grpc-timeout": "50m" }, { maxMs: 10_000 });
        const p = lib.plan(short, [
          { name: "retrieve", minMs: 20, preferredMs: 200, kind: "optional" },
          { name: "check", minMs: 80, kind: "mandatory" },
          { name: "respond", minMs: 100, kind: "fallback" },
        ]);
        let calls = 0;
        equal((await p.run("retrieve", () => calls++)).skipped, true, "retrieve is skipped");
        const e = await rejects(p.run("check", () => calls++), lib.InsufficientBudget);
        equal(e.step, "check");
        equal(calls, 0, "a refused step was started");
        equal(await p.run("respond", (signal, budgetMs) => (ok(budgetMs > 0 && budgetMs <= 50, `fallback got ${budgetMs}`), "fallback")), "fallback");
        // All optional with 12 ms left: three hand-off margins (15 ms) do not fit; still a plan.
        const tiny = lib.plan(lib.Deadline.in(12), [
          { name: "a", minMs: 1, kind: "optional" },
          { name: "b", minMs: 1, kind: "optional" },
          { name: "c", minMs: 1, kind: "optional" },
        ]);
        for (const name of ["a", "b", "c"]) {
          const r = await tiny.run(name, () => "ran");
          ok(r === "ran" || r.skipped === true, `${name}: ${JSON.stringify(r)}`);
        }
        // An expired deadline with a single fallback step: created; refused at run time.
        const gone = lib.plan(lib.Deadline.in(0), [{ name: "respond", minMs: 10, kind: "fallback" }]);
        await rejects(gone.run("respond", () => calls++), lib.InsufficientBudget);
        equal(calls, 0);
        // A product limit at or below the fallback reserve: an expired deadline, not a RangeError.
        const platform = lib.platformDeadline({ platform: "cloudflare-workers", productMs: 200, fallbackReserveMs: 500 });
        equal(platform.bound, "product");
        equal(platform.deadline.remaining(), 0);
        ok(platform.deadline.expired());
        equal(lib.Deadline.forPlatform({ platform: "custom", productMs: 100, fallbackReserveMs: 100 }).remaining(), 0);
        // A per-attempt timeout of 0 (or below the attempt minimum): no attempt, RetryFailed.
        for (const over of [{ attemptTimeoutMs: 0 }, { attemptMinMs: 50, attemptTimeoutMs: 10 }]) {
          const r = await rejects(
            lib.retry(() => calls++, { deadline: lib.Deadline.in(1_000), attemptMinMs: 1, backoff: { baseMs: 1, maxMs: 1, jitter: 0 }, idempotent: true, ...over }),
            lib.RetryFailed,
          );
          equal(r.reason, "insufficient", JSON.stringify(over));
          ok(/attempt/.test(r.message), r.message);
        }
        equal(calls, 0, "an attempt ran without time");
      },
    },
    {
      name: "reliability: a step cut at its cap rejects with StepTimeout (step, capMs); DeadlineExceeded is the deadline's alone",
      run: async (lib) => {
        const d = lib.Deadline.in(5_000);
        const p = lib.plan(d, [
          { name: "generate", minMs: 10, preferredMs: 30, kind: "optional" },
          { name: "respond", minMs: 50, kind: "fallback" },
        ]);
        let stepSignal;
        const e = await rejects(p.run("generate", (signal) => ((stepSignal = signal), deaf())), lib.StepTimeout, /step 'generate' timed out at its 30 ms cap/);
        ok(lib.isStepTimeout(e) && !lib.isDeadlineExceeded(e), "StepTimeout, not DeadlineExceeded");
        equal(e.name, "StepTimeout");
        equal(e[BRAND], "StepTimeout");
        equal(e.step, "generate");
        equal(e.capMs, 30);
        equal(stepSignal.reason, e, "the step's signal carries the same reason");
        ok(lib.isStepTimeout({ ...e }), "the brand survives a copy");
        equal(p.records[0].outcome, "timeout");
        equal(JSON.parse(p.trace())[0].outcome, "timeout");
        ok(d.remaining() > 4_000, "the deadline still has time");
        equal(await p.run("respond", () => "fallback"), "fallback", "and the fallback runs");
        d.dispose();
      },
    },
    {
      name: "reliability: once a parent signal has aborted, d.step does not call run and d.budget() answers no budget",
      run: async (lib) => {
        const client = new AbortController();
        const d = lib.Deadline.in(5_000, { signal: client.signal });
        equal(d.budget(100), 100);
        client.abort("client left");
        let called = false;
        equal(await rejects(d.step(1, () => (called = true))), "client left", "d.step rejects with the parent's reason");
        equal(called, false, "d.step called run after the client left");
        // p.run: the client's reason, even for a step that would have been skipped.
        const p = lib.plan(d, [{ name: "huge", minMs: 1e6, kind: "optional" }]);
        equal(await rejects(p.run("huge", () => (called = true))), "client left");
        equal(p.records[0].outcome, "aborted");
        equal(throws(() => d.budget(100)), "client left", "d.budget() answered a budget after the client left");
        // A parent already aborted when the deadline was made.
        const gone = new AbortController();
        gone.abort(new Error("already gone"));
        const late = lib.Deadline.in(5_000, { signal: gone.signal });
        equal((await rejects(late.step(1, () => (called = true)))).message, "already gone");
        equal(called, false);
        // retry and hedge: no new attempt, in-flight attempts aborted with the parent's reason.
        const c2 = new AbortController();
        const d2 = lib.Deadline.in(5_000, { signal: c2.signal });
        const seenReasons = [];
        const pending = lib.retry((signal) => untilAborted(signal).catch((r) => (seenReasons.push(r), Promise.reject(r))), { deadline: d2, attemptMinMs: 1, backoff: { baseMs: 1, maxMs: 1, jitter: 0 }, idempotent: true });
        const hedged = lib.hedge((signal) => untilAborted(signal).catch((r) => (seenReasons.push(r), Promise.reject(r))), { deadline: d2, delayMs: 1, maxAttempts: 2 });
        await new Promise((r) => setTimeout(r, 20));
        c2.abort("client left");
        equal((await rejects(pending, lib.RetryFailed)).cause, "client left");
        equal((await rejects(hedged, lib.RetryFailed)).cause, "client left");
        ok(seenReasons.length >= 2 && seenReasons.every((r) => r === "client left"), JSON.stringify(seenReasons));
        let after = 0;
        equal((await rejects(lib.retry(() => after++, { deadline: d2, attemptMinMs: 1, backoff: { baseMs: 1, maxMs: 1, jitter: 0 }, idempotent: true }), lib.RetryFailed)).cause, "client left");
        equal((await rejects(lib.hedge(() => after++, { deadline: d2, delayMs: 1 }), lib.RetryFailed)).cause, "client left");
        equal(after, 0, "new work started after the client left");
        d.dispose();
        late.dispose();
        d2.dispose();
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
    {
      name: "reliability: two spellings of one header: the earliest deadline wins, in either order",
      run: (lib) => {
        for (const headers of [{ "grpc-timeout": "50m", "Grpc-Timeout": "2S" }, { "Grpc-Timeout": "2S", "grpc-timeout": "50m" }, { "GRPC-TIMEOUT": "50m", "grpc-timeout": "2S" }]) {
          const r = lib.deadlineFromHeaders(headers, { maxMs: 10_000 });
          equal(r.source, "grpc-timeout");
          ok(r.deadline.remaining() <= 50, `${JSON.stringify(headers)} gave ${r.deadline.remaining()} ms`);
        }
        // A repeated header arrives joined by a comma: each element counts, the earliest wins.
        const h = new Headers();
        h.append("connect-timeout-ms", "2000");
        h.append("connect-timeout-ms", "40");
        ok(lib.Deadline.fromHeaders(h, { maxMs: 10_000 }).remaining() <= 40);
        ok(lib.Deadline.fromHeaders({ "connect-timeout-ms": ["2000", "40"] }, { maxMs: 10_000 }).remaining() <= 40);
      },
    },
    {
      name: "reliability: a malformed incoming header is ignored by default (cap applies, rejection reported) or a branded InvalidHeader on request",
      run: (lib) => {
        const r = lib.deadlineFromHeaders({ "grpc-timeout": "1e3S", "connect-timeout-ms": "800" }, { maxMs: 1_000 });
        equal(r.source, "connect-timeout-ms", "the valid header still counts");
        equal(r.rejected.length, 1);
        const rej = r.rejected[0].error;
        ok(lib.isInvalidHeader(rej) && !(rej instanceof RangeError), `${rej?.name}`);
        equal(rej.header, "grpc-timeout");
        ok(/'grpc-timeout' must contain only ASCII digits/.test(rej.message), rej.message);
        const capped = lib.Deadline.fromHeaders({ "grpc-timeout": "-5m" }, { maxMs: 700 });
        ok(capped.remaining() <= 700 && capped.remaining() > 600, "the local cap applies");
        const e = throws(() => lib.Deadline.fromHeaders({ "grpc-timeout": "-5m" }, { maxMs: 700, invalid: "throw" }), lib.InvalidHeader);
        equal(e.name, "InvalidHeader");
        equal(e[BRAND], "InvalidHeader");
        equal(e.header, "grpc-timeout");
        ok(!(e instanceof RangeError), "indistinguishable from the server's own bad maxMs");
        throws(() => lib.Deadline.fromHeaders({}, { maxMs: NaN }), RangeError, /'maxMs'/);
      },
    },
    {
      name: "reliability: onStep throwing after a successful step keeps the step's value; the error goes to onStepError",
      run: async (lib) => {
        const d = lib.Deadline.in(1_000);
        const hookErrors = [];
        const p = lib.plan(d, seedSteps(), {
          onStep: () => {
            throw new Error("logger down");
          },
          onStepError: (error, record) => hookErrors.push(`${record.step}:${record.outcome}:${error.message}`),
        });
        equal(await p.run("retrieve", () => "docs"), "docs", "the step's value was lost");
        const boom = new Error("index unavailable");
        equal(await rejects(p.run("generate", () => Promise.reject(boom))), boom, "the step's own error stays its result");
        equal(hookErrors.join(), "retrieve:ok:logger down,generate:error:logger down");
        d.dispose();
      },
    },
    {
      name: "reliability soak: plans with fallbacks on a busy event loop (timers firing late) answer inside the deadline every time",
      run: async (lib) => {
        // The event loop is kept busy by CPU tasks of about 15 ms (three times
        // the default margin), so every step's cap timer fires late: the step
        // before the fallback ends later than the margin allows. The reserve
        // (120 ms) leaves room for a loaded CI machine on top; the deadline
        // is still the bound: the answer must come before it.
        let busy = true;
        const iterations = calibrate(15);
        const hog = () => {
          if (!busy) return;
          spin(iterations);
          setTimeout(hog, 0);
        };
        setTimeout(hog, 0);
        const runs = 8;
        const results = [];
        try {
          for (let i = 0; i < runs; i++) {
            const d = lib.Deadline.in(300);
            const p = lib.plan(d, [
              { name: "retrieve", minMs: 5, preferredMs: 40, kind: "optional" },
              { name: "generate", minMs: 20, kind: "optional" },
              { name: "respond", minMs: 120, kind: "fallback" },
            ]);
            await p.run("retrieve", () => deaf()).catch(() => undefined);
            await p.run("generate", () => deaf()).catch(() => undefined);
            const leftForFallback = d.remaining();
            const answer = await p.run("respond", () => "fallback").catch((e) => `${e.name}: ${e.message}`);
            results.push({ answer, inside: performance.now() <= d.at, leftForFallback, outcomes: p.records.map((r) => r.outcome).join() });
            d.dispose();
          }
        } finally {
          busy = false;
        }
        const bad = results.filter((r) => r.answer !== "fallback" || !r.inside);
        equal(bad.length, 0, `runs without a fallback answer inside the deadline: ${JSON.stringify(bad)}`);
        // The load did make timers fire late: some step ended after its cap,
        // which leaves the fallback its 120 ms reserve plus the 5 ms default
        // margin. (How late varies with the machine; the exact overrun past
        // the margin is the fake-clock case above.)
        ok(results.some((r) => r.leftForFallback < 125), `no step ended late: ${JSON.stringify(results.map((r) => r.leftForFallback))}`);
      },
    },
  ];
}

/** Iterations of `spin` taking about `ms` here (measured once per call). */
function calibrate(ms) {
  let n = 100_000;
  for (;;) {
    const t0 = performance.now();
    spin(n);
    const took = performance.now() - t0;
    if (took >= 2) return Math.max(1, Math.round((n * ms) / took));
    if (n > 1e8) return 3_000_000; // a clock frozen during CPU work (production Workers): a fixed amount
    n *= 4;
  }
}

/** Malformed, overflowing, negative, unicode and oversized headers: each refused by name. */
function badHeaderCases() {
  const bad = [
    ["1e3S (an exponent)", "grpc-timeout", "1e3S", /'grpc-timeout' must contain only ASCII digits: current value has 'e' at byte 1/],
    ["-5m (a sign)", "grpc-timeout", "-5m", /'grpc-timeout' must be an unsigned number/],
    ["+5m (a sign)", "grpc-timeout", "+5m", /unsigned/],
    ["9 digits", "grpc-timeout", "123456789m", /'grpc-timeout' must have between 1 and 8 digits: current value has 9/],
    ["empty", "grpc-timeout", "", /'grpc-timeout' must not be empty/],
    ["only spaces", "connect-timeout-ms", "   ", /must not be empty/],
    ["no unit", "grpc-timeout", "100", /must end with one of the units H M S m u n: current value has none/],
    ["a bad unit", "grpc-timeout", "100s", /current value ends with 's'/],
    ["a unit and no digits", "grpc-timeout", "m", /must start with at least one digit/],
    ["unicode digits", "grpc-timeout", "١٠m", /must contain only ASCII digits: current value has a non-ASCII byte at 0/],
    ["inner whitespace", "connect-timeout-ms", "1 000", /must not contain whitespace/],
    ["a decimal point", "connect-timeout-ms", "1.5", /has '.' at byte 1/],
    ["11 digits", "connect-timeout-ms", "12345678901", /between 1 and 10 digits/],
    ["oversized (65 bytes)", "edge-deadline-remaining-ms", "1".repeat(65), /must be at most 64 bytes: current value has 65/],
    ["oversized (1 MB)", "x-envoy-expected-rq-timeout-ms", "9".repeat(1 << 20), /at most 64 bytes/],
  ];
  const out = bad.map(([label, header, value, pattern]) => ({
    name: `bad header: ${header} = ${label} → parseHeader's RangeError; fromHeaders ignores it, or throws InvalidHeader when asked`,
    run: (lib) => {
      throws(() => lib.parseHeader(header, value), RangeError, pattern);
      const strict = throws(() => lib.Deadline.fromHeaders({ [header]: value }, { maxMs: 1_000, invalid: "throw" }), lib.InvalidHeader, pattern);
      equal(strict.header, header);
      const lenient = lib.deadlineFromHeaders({ [header]: value }, { maxMs: 1_000 });
      equal(lenient.source, null, "a malformed header set the deadline");
      equal(lenient.rejected.length, 1);
      equal(lenient.rejected[0].header, header);
      ok(lib.isInvalidHeader(lenient.rejected[0].error));
      ok(pattern.test(lenient.rejected[0].error.message), lenient.rejected[0].error.message);
      ok(lenient.deadline.remaining() <= 1_000 && lenient.deadline.remaining() > 900, "ignored: the local cap stands");
    },
  }));
  out.push({
    name: "bad header: 99999999H overflows nothing: it parses exactly and clamps to the local cap",
    run: (lib) => {
      equal(lib.parseHeader("grpc-timeout", "99999999H"), 99_999_999 * 3_600_000);
      ok(lib.Deadline.fromHeaders({ "grpc-timeout": "99999999H" }, { maxMs: 50 }).remaining() <= 50);
    },
  });
  return out;
}

/** Bad input across the pipeline API: TypeErrors and RangeErrors naming the parameter. */
function badInputCases() {
  const D = (lib, ms = 10_000) => lib.Deadline.in(ms);
  const steps = (over) => [{ name: "a", minMs: 1, kind: "optional", ...over }, { name: "b", minMs: 1, kind: "mandatory" }];
  const retryOpts = (lib, over) => ({ deadline: D(lib), attemptMinMs: 1, backoff: { baseMs: 1, maxMs: 10, jitter: 0 }, idempotent: true, ...over });
  const list = [
    // plans
    ["plan: duplicate step names", (lib) => lib.plan(D(lib), [{ name: "a", minMs: 1, kind: "optional" }, { name: "a", minMs: 1, kind: "optional" }]), RangeError, /step names must be unique: 'a' is used by steps 0 and 1/],
    ["plan: unknown step name in run", (lib) => lib.plan(D(lib), steps()).run("nope", () => 1), RangeError, /'name' must be a step of this plan \(a, b\): current value is "nope"/],
    ["plan: run(name = 5)", (lib) => lib.plan(D(lib), steps()).run(5, () => 1), TypeError, /'name' of run must be a step name/],
    ["plan: run without a function", (lib) => lib.plan(D(lib), steps()).run("a"), TypeError, /'fn' of run\('a'\) must be a function/],
    ["plan: negative minMs", (lib) => lib.plan(D(lib), steps({ minMs: -1 })), RangeError, /step 'a': 'minMs' must be between 0 and/],
    ["plan: NaN minMs", (lib) => lib.plan(D(lib), steps({ minMs: NaN })), RangeError, /step 'a': 'minMs' must be a finite number/],
    ["plan: minMs as a string", (lib) => lib.plan(D(lib), steps({ minMs: "5" })), TypeError, /'steps\[0\].minMs' must be a number of milliseconds/],
    ["plan: minMs > preferredMs", (lib) => lib.plan(D(lib), steps({ minMs: 50, preferredMs: 10 })), RangeError, /step 'a': 'minMs' must not exceed 'preferredMs' \(10\): current value is 50/],
    ["plan: NaN preferredMs", (lib) => lib.plan(D(lib), steps({ preferredMs: NaN })), RangeError, /'preferredMs' must be a finite number/],
    ["plan: NaN reserveMs", (lib) => lib.plan(D(lib), steps({ reserveMs: NaN })), RangeError, /'reserveMs' must be a finite number/],
    ["plan: reserve below the minimum of a mandatory step", (lib) => lib.plan(D(lib), [{ name: "m", minMs: 80, reserveMs: 10, kind: "mandatory" }]), RangeError, /'reserveMs' must be at least 'minMs' \(80\)/],
    ["plan: unknown kind", (lib) => lib.plan(D(lib), steps({ kind: "required" })), RangeError, /'kind' must be one of mandatory, optional, fallback: current value is 'required'/],
    ["plan: a fallback with preferredMs", (lib) => lib.plan(D(lib), [{ name: "f", minMs: 1, preferredMs: 5, kind: "fallback" }]), RangeError, /a fallback step gets everything left/],
    ["plan: no steps", (lib) => lib.plan(D(lib), []), RangeError, /'steps' must contain at least one step/],
    ["plan: steps not an array", (lib) => lib.plan(D(lib), { a: 1 }), TypeError, /'steps' must be an array/],
    ["plan: a step that is null", (lib) => lib.plan(D(lib), [null]), TypeError, /'steps\[0\]' must be an object/],
    ["plan: an empty name", (lib) => lib.plan(D(lib), steps({ name: "" })), RangeError, /step 0 must have a non-empty 'name'/],
    ["plan: a name that is not a string", (lib) => lib.plan(D(lib), steps({ name: 1 })), TypeError, /'steps\[0\].name' must be a string/],
    ["plan: not a Deadline", (lib) => lib.plan(1_000, steps()), TypeError, /'deadline' must be a Deadline/],
    ["plan: marginMs negative", (lib) => lib.plan(D(lib), steps(), { marginMs: -1 }), RangeError, /'marginMs' must be between 0 and 1000/],
    ["plan: onStep not a function", (lib) => lib.plan(D(lib), steps(), { onStep: "log" }), TypeError, /'options.onStep' must be a function/],
    // retry and budgets
    ["RetryBudget: ratio -0.1", (lib) => new lib.RetryBudget({ ratio: -0.1 }), RangeError, /'ratio' must be between 0 and 1: current value is -0.1/],
    ["RetryBudget: ratio 1.5", (lib) => new lib.RetryBudget({ ratio: 1.5 }), RangeError, /'ratio' must be between 0 and 1: current value is 1.5/],
    ["RetryBudget: ratio NaN", (lib) => new lib.RetryBudget({ ratio: NaN }), RangeError, /'ratio' must be between 0 and 1: current value is NaN/],
    ["RetryBudget: ratio '0.5'", (lib) => new lib.RetryBudget({ ratio: "0.5" }), TypeError, /'options.ratio' must be a number between 0 and 1/],
    ["RetryBudget: windowMs 0", (lib) => new lib.RetryBudget({ windowMs: 0 }), RangeError, /'windowMs' must be between 1 and/],
    ["RetryBudget: minPerSecond -1", (lib) => new lib.RetryBudget({ minPerSecond: -1 }), RangeError, /'minPerSecond' must be between 0 and/],
    ["retry: jitter 2", (lib) => lib.retry(() => 1, retryOpts(lib, { backoff: { baseMs: 1, maxMs: 2, jitter: 2 } })), RangeError, /'jitter' must be between 0 and 1: current value is 2/],
    ["retry: maxMs below baseMs", (lib) => lib.retry(() => 1, retryOpts(lib, { backoff: { baseMs: 10, maxMs: 2, jitter: 0 } })), RangeError, /'maxMs' must be at least 'baseMs' \(10\)/],
    ["retry: maxAttempts 0", (lib) => lib.retry(() => 1, retryOpts(lib, { maxAttempts: 0 })), RangeError, /'maxAttempts' must be between 1 and 100: current value is 0/],
    ["retry: maxAttempts 2.5", (lib) => lib.retry(() => 1, retryOpts(lib, { maxAttempts: 2.5 })), RangeError, /'options.maxAttempts' must be a whole number: current value is 2.5/],
    ["retry: attemptMinMs NaN", (lib) => lib.retry(() => 1, retryOpts(lib, { attemptMinMs: NaN })), RangeError, /'attemptMinMs' must be a finite number/],
    ["retry: idempotent not a boolean", (lib) => lib.retry(() => 1, retryOpts(lib, { idempotent: "yes" })), TypeError, /'options.idempotent' must be true or false/],
    ["retry: no deadline", (lib) => lib.retry(() => 1, retryOpts(lib, { deadline: undefined })), TypeError, /'options.deadline' must be a Deadline/],
    ["retry: budget not a RetryBudget", (lib) => lib.retry(() => 1, retryOpts(lib, { budget: {} })), TypeError, /'options.budget' must be a RetryBudget/],
    ["retry: operationKey empty", (lib) => lib.retry(() => 1, retryOpts(lib, { operationKey: "" })), TypeError, /'options.operationKey' must be a non-empty string/],
    ["retry: classify answers nonsense", (lib) => lib.retry(() => Promise.reject(new Error("x")), retryOpts(lib, { classify: () => "maybe" })), TypeError, /'options.classify' must return "ambiguous", "not-applied" or "permanent" \(synchronously\): it returned "maybe"/],
    ["retry: seed negative", (lib) => lib.retry(() => 1, retryOpts(lib, { seed: -1 })), RangeError, /'options.seed'/],
    ["hedge: delayMs -1", (lib) => lib.hedge(() => 1, { deadline: D(lib), delayMs: -1 }), RangeError, /'delayMs' must be between 0 and/],
    ["hedge: maxAttempts 101", (lib) => lib.hedge(() => 1, { deadline: D(lib), delayMs: 1, maxAttempts: 101 }), RangeError, /'maxAttempts' must be between 1 and 100/],
    ["hedge: fn missing", (lib) => lib.hedge(undefined, { deadline: D(lib), delayMs: 1 }), TypeError, /'fn' must be a function/],
    // propagation and caps
    ["toHeaders: unknown format", (lib) => lib.toHeaders(D(lib), { format: "x-timeout" }), RangeError, /'format' must be one of grpc-timeout, connect-timeout-ms, x-envoy-expected-rq-timeout-ms, edge-deadline-remaining-ms: current value is 'x-timeout'/],
    ["toHeaders: format 5", (lib) => lib.toHeaders(D(lib), { format: 5 }), TypeError, /'options.format' must be a header name/],
    ["encodeHeader: negative remainingMs", (lib) => lib.encodeHeader("grpc-timeout", -1), RangeError, /'remainingMs' must be between 0 and/],
    ["fromHeaders: maxMs missing", (lib) => lib.Deadline.fromHeaders({}, {}), TypeError, /'options.maxMs' must be a number of milliseconds/],
    ["fromHeaders: maxMs NaN", (lib) => lib.Deadline.fromHeaders({}, { maxMs: NaN }), RangeError, /'maxMs' must be a finite number/],
    ["fromHeaders: transitMs negative", (lib) => lib.Deadline.fromHeaders({}, { maxMs: 1, transitMs: -5 }), RangeError, /'transitMs' must be between 0 and/],
    ["fromHeaders: headers null", (lib) => lib.Deadline.fromHeaders(null, { maxMs: 1 }), TypeError, /'headers' must be a Headers or a plain object/],
    ["fromHeaders: a header value that is a number", (lib) => lib.Deadline.fromHeaders({ "grpc-timeout": 5 }, { maxMs: 1 }), TypeError, /'headers\["grpc-timeout"\]' must be a string/],
    ["fromHeaders: invalid = 'warn'", (lib) => lib.Deadline.fromHeaders({}, { maxMs: 1, invalid: "warn" }), TypeError, /'options.invalid' must be "throw" or "ignore"/],
    ["plan: onStepError not a function", (lib) => lib.plan(D(lib), steps(), { onStepError: "log" }), TypeError, /'options.onStepError' must be a function/],
    ["forPlatform: unknown platform", (lib) => lib.Deadline.forPlatform({ platform: "lambda", productMs: 1_000, fallbackReserveMs: 0 }), RangeError, /'platform' must be one of cloudflare-workers, deno-deploy, vercel-edge: current value is 'lambda'/],
    ["forPlatform: unknown plan", (lib) => lib.Deadline.forPlatform({ platform: "cloudflare-workers", plan: "pro", productMs: 1_000, fallbackReserveMs: 0 }), RangeError, /'plan' must be one of free, paid/],
    ["forPlatform: a trigger the platform lacks", (lib) => lib.Deadline.forPlatform({ platform: "vercel-edge", trigger: "cron", productMs: 1_000, fallbackReserveMs: 0 }), RangeError, /'trigger' cron is not an invocation vercel-edge has/],
    ["forPlatform: a zero cap", (lib) => lib.Deadline.forPlatform({ platform: "custom", productMs: 1_000, fallbackReserveMs: 0, caps: { wallMs: 0 } }), RangeError, /'wallMs' must be above 0/],
    ["forPlatform: productMs missing", (lib) => lib.Deadline.forPlatform({ platform: "deno-deploy", fallbackReserveMs: 0 }), TypeError, /'options.productMs' must be a number/],
  ];
  return list.map(([label, call, Type, pattern]) => ({
    name: `bad input: ${label} → ${Type.name}`,
    run: async (lib) => {
      await rejects(async () => call(lib), Type, pattern);
      ok(lib.Deadline.in(5).remaining() >= 0, "the API still works afterwards");
    },
  }));
}

export default cases;
