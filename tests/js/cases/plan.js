// Plan cases: one deadline split between named steps, the tail protected.
// The same file runs in Node, Deno, workerd and Chromium.
import { equal, near, ok, rejects, throws } from "../assert.js";
import { BRAND, stub, deaf, countListeners, countedParent, uid, seen, spin, seedSteps, withFakeClock, untilAborted, calibrate, badInputCases, onFakeTime } from "../pipeline-support.js";

const cases = [
  {
    name: "plan on fake time: caps are exact, a step is cut at its cap to the millisecond, the fallback gets what is left",
    run: (lib) =>
      onFakeTime(async (clock) => {
        const d = lib.Deadline.in(1_000);
        const t0 = clock.now();
        const steps = [
          { name: "retrieve", minMs: 10, preferredMs: 300, kind: "optional" },
          { name: "generate", minMs: 50, kind: "optional" },
          { name: "respond", minMs: 100, kind: "fallback" },
        ];
        const p = lib.plan(d, steps, { marginMs: 5 });
        const hang = (signal) => new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason), { once: true }));
        const caps = [];
        const retrieve = p.run("retrieve", (signal, cap) => (caps.push(cap), hang(signal)));
        await clock.advance(300);
        const cut = await rejects(retrieve, lib.StepTimeout);
        equal(cut.capMs, 300);
        // Generation: 700 left, the fallback's 100 and one 5 ms hand-off held: 595.
        const generate = p.run("generate", (signal, cap) => (caps.push(cap), hang(signal)));
        await clock.advance(595);
        await rejects(generate, lib.StepTimeout);
        // The fallback gets everything left (105) and is cut by the deadline itself.
        const respond = p.run("respond", (signal, cap) => (caps.push(cap), hang(signal)));
        await clock.advance(105);
        await rejects(respond, lib.DeadlineExceeded);
        equal(caps.join(), "300,595,105");
        equal(
          p.records.map((r) => `${r.step}:${r.capMs}/${r.elapsedMs}:${r.outcome}`).join(),
          "retrieve:300/300:timeout,generate:595/595:timeout,respond:105/105:deadline",
        );
        equal(clock.now() - t0, 1_000);
        return [d];
      }),
  },
  {
    name: "plan on fake time: a late host timer cuts the step late, and the fallback still runs with what is left",
    run: (lib) =>
      onFakeTime(async (clock) => {
        const d = lib.Deadline.in(500);
        const p = lib.plan(d, [{ name: "work", minMs: 10, kind: "optional" }, { name: "respond", minMs: 100, kind: "fallback" }], { marginMs: 5 });
        const work = p.run("work", (signal) => new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason), { once: true })));
        // The cap is 395 (500 − 100 − 5); the host wakes 60 ms late.
        clock.jump(455);
        await clock.advance(0);
        await rejects(work, lib.StepTimeout);
        equal(p.records[0].elapsedMs, 455, "cut when the late timer fired, not before");
        const answer = await p.run("respond", (signal, cap) => cap);
        equal(answer, 45, "the fallback runs with the 45 ms left, below its 100 ms minimum");
        return [d];
      }),
  },
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
    name: "plan on fake time: slow retrieval leaves no generation budget: generation is not launched, the fallback runs in its reserve",
    run: (lib) =>
      onFakeTime(async (clock) => {
        const d = lib.Deadline.in(400);
        const p = lib.plan(d, [
          { name: "retrieve", minMs: 5, preferredMs: 250, kind: "optional" },
          { name: "generate", minMs: 150, kind: "optional" },
          { name: "respond", minMs: 50, kind: "fallback" },
        ]);
        // Retrieval answers after 200 ms: 200 left, the fallback's 50 and one
        // 5 ms hand-off held, 145 for generation, below its 150 ms minimum.
        const retrieved = p.run("retrieve", (signal) => clock.sleep(200).then(() => "docs"));
        await clock.advance(200);
        equal(await retrieved, "docs");
        let launched = false;
        const skipped = await p.run("generate", () => {
          launched = true;
        });
        equal(launched, false, "generation was launched");
        equal(skipped.skipped, true);
        equal(lib.isSkipped(skipped), true);
        // The reason is an own enumerable string however it is read: JSON, a spread, twice.
        const reason = "only 145 ms are available after the reserve for later steps but this step needs at least 150 ms";
        equal(JSON.stringify(skipped), JSON.stringify({ skipped: true, reason }));
        equal({ ...skipped }.reason, reason);
        equal(skipped.reason, reason);
        equal(Object.getOwnPropertyDescriptor(skipped, "reason")?.value, reason);
        const text = await p.run("respond", (signal, budgetMs) => {
          equal(budgetMs, 200, "the fallback gets everything left");
          return "links to the retrieved documents";
        });
        equal(text, "links to the retrieved documents");
        const trace = JSON.parse(p.trace());
        equal(trace.map((r) => r.outcome).join(), "ok,skipped,ok");
        equal(trace[1].capMs, 0);
        // The skip waits for nothing: no clock time passes between the call and its record.
        equal(trace[1].elapsedMs, 0, "a skip waited");
        return [d];
      }),
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
      // The fallback is the answer of last resort: it runs, its signal aborted with the client's reason.
      equal(await p.run("respond", (signal, budgetMs) => (equal(signal.reason, "client went away"), equal(budgetMs, 0), "fallback")), "fallback");
      equal(p.records.map((r) => r.outcome).join(), "aborted,aborted,ok");
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
        // Once the deadline itself has passed the fallback still runs, with nothing.
        clock.t = d.at;
        equal(await p.run("respond", (signal, budgetMs) => (ok(signal.aborted && budgetMs === 0), "from what it has")), "from what it has");
        d.dispose();
      }),
  },
  {
    name: "reliability: the fallback is the answer of last resort: with grpc-timeout 0m it runs at once, its signal aborted, its budget 0",
    run: async (lib) => {
      const d = lib.Deadline.fromHeaders({ "grpc-timeout": "0m" }, { maxMs: 10_000 });
      const p = lib.plan(d, [
        { name: "generate", minMs: 10, kind: "optional" },
        { name: "check", minMs: 5, kind: "mandatory" },
        { name: "respond", minMs: 50, kind: "fallback" },
      ]);
      equal((await p.run("generate", () => "ran")).skipped, true);
      await rejects(p.run("check", () => "ran"), lib.InsufficientBudget);
      let seenSignal;
      const answer = await p.run("respond", async (signal, budgetMs) => {
        seenSignal = signal;
        equal(budgetMs, 0, "nothing is left");
        return "a cached answer";
      });
      equal(answer, "a cached answer", "the fallback answered");
      ok(seenSignal.aborted && lib.isDeadlineExceeded(seenSignal.reason), `its signal: ${seenSignal.aborted} ${seenSignal.reason}`);
      const last = p.records[2];
      equal(`${last.step} ${last.outcome} ${last.capMs}`, "respond ok 0");
      // Its own failure is its result, as for any step.
      const boom = new Error("no cache");
      equal(await rejects(p.run("respond", () => Promise.reject(boom))), boom);
      equal(await rejects(p.run("respond", () => {
        throw boom;
      })), boom);
      equal(p.records.map((r) => r.outcome).join(), "skipped,insufficient,ok,error,error");
      d.dispose();
    },
  },
  {
    name: "plan on fake time: margins do not eat a short budget: at 50 ms a 5 ms auth runs before four later steps, and the fallback keeps its 40 ms",
    run: (lib) =>
      withFakeClock(async (clock) => {
        const d = lib.Deadline.in(50);
        const p = lib.plan(d, [
          { name: "auth", minMs: 5, preferredMs: 5, kind: "mandatory" },
          { name: "retrieve", minMs: 5, preferredMs: 100, kind: "optional" },
          { name: "generate", minMs: 50, kind: "optional" },
          { name: "polish", minMs: 5, kind: "optional" },
          { name: "respond", minMs: 40, kind: "fallback" },
        ]);
        // Auth ends 5 ms after its cap (one margin of lateness).
        equal(await p.run("auth", (signal, budgetMs) => (equal(budgetMs, 5, "auth's cap"), (clock.t += budgetMs + 5), "user")), "user");
        for (const name of ["retrieve", "generate", "polish"]) equal((await p.run(name, () => "ran")).skipped, true, name);
        let given;
        equal(await p.run("respond", (signal, budgetMs) => ((given = budgetMs), "answer")), "answer");
        equal(given, 40, "the fallback got its whole reserve");
        equal(p.records.map((r) => r.outcome).join(), "ok,skipped,skipped,skipped,ok");
        d.dispose();
      }),
  },
  {
    name: "plan: a step that fails with StreamStalled is traced as stalled (p.trace() and Server-Timing), not error",
    run: async (lib) => {
      const d = lib.Deadline.in(5_000);
      const p = lib.plan(d, [
        { name: "generate", minMs: 10, kind: "optional" },
        { name: "summarise", minMs: 10, kind: "optional" },
        { name: "respond", minMs: 50, kind: "fallback" },
      ]);
      const silent = new ReadableStream({ pull: () => new Promise(() => {}) });
      const e = await rejects(p.run("generate", () => lib.withStallTimeout(silent, { firstChunkMs: 10, stallMs: 1_000 }).getReader().read()));
      ok(lib.isStreamStalled(e), `${e?.name}: ${e?.message}`);
      // A stall wrapped by the caller's own error still counts, through its cause.
      const wrapped = new Error("model call failed", { cause: new lib.StreamStalled("stall", 300, 4, 120) });
      equal(await rejects(p.run("summarise", () => Promise.reject(wrapped))), wrapped);
      equal(p.records.map((r) => r.outcome).join(), "stalled,stalled");
      equal(JSON.parse(p.trace()).map((r) => r.outcome).join(), "stalled,stalled");
      ok(/generate;dur=[\d.]+;desc="stalled, cap/.test(p.serverTiming()), p.serverTiming());
      d.dispose();
    },
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
      // An expired deadline with a single fallback step: created; the fallback runs, with nothing.
      const gone = lib.plan(lib.Deadline.in(0), [{ name: "respond", minMs: 10, kind: "fallback" }]);
      let fallbackCalls = 0;
      equal(await gone.run("respond", (signal, budgetMs) => (fallbackCalls++, budgetMs)), 0);
      equal(fallbackCalls, 1);
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
      // (120 ms) leaves room for that lateness; the deadline is the bound:
      // the answer must come before it. What the process cannot answer for
      // is the machine taking the CPU away (a loaded CI host, a pause of the
      // runtime): the hog notes the longest time it lost, between its tasks
      // or inside one (a task that took longer than its 15 ms of work), and
      // only a run in which the process stood still for longer than the
      // reserve may end late.
      // The hog sees a gap only when it runs next, and after the process
      // stood still the timer that came due first runs first: a step's cap
      // that came due during the hog's last task fires before the hog's next
      // task, and the run ends (the fallback answers, the record is taken)
      // in that task's microtasks, before the hog could note the gap. So the
      // time since the hog's last task is noted too when a step's signal
      // aborts, that is when the package's timer fired: while the package is
      // late and the loop turns, the hog keeps running and that time stays
      // short.
      let busy = true;
      let lastEnd = performance.now();
      let longestPause = 0;
      const iterations = calibrate(15);
      const hog = () => {
        if (!busy) return;
        const start = performance.now();
        spin(iterations);
        const end = performance.now();
        longestPause = Math.max(longestPause, start - lastEnd, end - start - 15);
        lastEnd = end;
        setTimeout(hog, 0);
      };
      const capFired = () => (longestPause = Math.max(longestPause, performance.now() - lastEnd));
      const step = (signal) => (signal.addEventListener("abort", capFired, { once: true }), deaf());
      setTimeout(hog, 0);
      const runs = 8;
      const results = [];
      try {
        for (let i = 0; i < runs; i++) {
          longestPause = 0;
          const d = lib.Deadline.in(300);
          const p = lib.plan(d, [
            { name: "retrieve", minMs: 5, preferredMs: 40, kind: "optional" },
            { name: "generate", minMs: 20, kind: "optional" },
            { name: "respond", minMs: 120, kind: "fallback" },
          ]);
          await p.run("retrieve", step).catch(() => undefined);
          await p.run("generate", step).catch(() => undefined);
          const leftForFallback = d.remaining();
          const answer = await p.run("respond", () => "fallback").catch((e) => `${e.name}: ${e.message}`);
          const lateBy = performance.now() - d.at;
          results.push({ answer, lateBy, longestPause, leftForFallback, outcomes: p.records.map((r) => r.outcome).join() });
          d.dispose();
        }
      } finally {
        busy = false;
      }
      const bad = results.filter((r) => r.answer !== "fallback" || (r.lateBy > 0 && r.longestPause < 120));
      equal(bad.length, 0, `runs without a fallback answer inside the deadline: ${JSON.stringify(bad)}`);
      ok(results.some((r) => r.lateBy <= 0 && r.answer === "fallback"), `no run answered inside the deadline: ${JSON.stringify(results)}`);
      ok(results.some((r) => r.leftForFallback < 125), `no step ended late: ${JSON.stringify(results.map((r) => r.leftForFallback))}`);
    },
  },
  ...badInputs(),
];

/** `object` with `key` as a getter answering `value` once, then throwing. */
function secondReadThrows(object, key, value) {
  let reads = 0;
  return Object.defineProperty(object, key, {
    enumerable: true,
    get() {
      if (++reads > 1) throw new Error("no second read");
      return value;
    },
  });
}

/** Bad input: the error class, the message, `.param` as the user wrote it and `.code`. */
function badInputs() {
  const D = (lib, ms = 10_000) => lib.Deadline.in(ms);
  const steps = (over) => [{ name: "a", minMs: 1, kind: "optional", ...over }, { name: "b", minMs: 1, kind: "mandatory" }];
  return badInputCases([
    ["plan: duplicate step names", (lib) => lib.plan(D(lib), [{ name: "a", minMs: 1, kind: "optional" }, { name: "a", minMs: 1, kind: "optional" }]), RangeError, /step names must be unique: 'a' is used by steps 0 and 1/, "steps[1].name", "DUPLICATE_NAME"],
    ["plan: unknown step name in run", (lib) => lib.plan(D(lib), steps()).run("nope", () => 1), RangeError, /'name' must be a step of this plan \(a, b\): current value is "nope"/, "name", "UNKNOWN_STEP"],
    ["plan: run(name = 5)", (lib) => lib.plan(D(lib), steps()).run(5, () => 1), TypeError, /'name' of run must be a step name/, "name", "INVALID_TYPE"],
    ["plan: run without a function", (lib) => lib.plan(D(lib), steps()).run("a"), TypeError, /'fn' of run\('a'\) must be a function/, "fn", "INVALID_TYPE"],
    ["plan: negative minMs", (lib) => lib.plan(D(lib), steps({ minMs: -1 })), RangeError, /step 'a': 'minMs' must be between 0 and/, "steps[0].minMs", "NEGATIVE"],
    ["plan: NaN minMs", (lib) => lib.plan(D(lib), steps({ minMs: NaN })), RangeError, /step 'a': 'minMs' must be a finite number/, "steps[0].minMs", "NOT_FINITE"],
    ["plan: minMs as a string", (lib) => lib.plan(D(lib), steps({ minMs: "5" })), TypeError, /'steps\[0\].minMs' must be a number of milliseconds/, "steps[0].minMs", "INVALID_TYPE"],
    ["plan: minMs > preferredMs", (lib) => lib.plan(D(lib), steps({ minMs: 50, preferredMs: 10 })), RangeError, /step 'a': 'minMs' must not exceed 'preferredMs' \(10\): current value is 50/, "steps[0].minMs", "MIN_ABOVE_PREFERRED"],
    ["plan: NaN preferredMs", (lib) => lib.plan(D(lib), steps({ preferredMs: NaN })), RangeError, /'preferredMs' must be a finite number/, "steps[0].preferredMs", "NOT_FINITE"],
    ["plan: NaN reserveMs", (lib) => lib.plan(D(lib), steps({ reserveMs: NaN })), RangeError, /'reserveMs' must be a finite number/, "steps[0].reserveMs", "NOT_FINITE"],
    ["plan: reserve below the minimum of a mandatory step", (lib) => lib.plan(D(lib), [{ name: "m", minMs: 80, reserveMs: 10, kind: "mandatory" }]), RangeError, /'reserveMs' must be at least 'minMs' \(80\)/, "steps[0].reserveMs", "RESERVE_BELOW_MIN"],
    ["plan: unknown kind", (lib) => lib.plan(D(lib), steps({ kind: "required" })), RangeError, /'kind' must be one of mandatory, optional, fallback: current value is 'required'/, "steps[0].kind", "UNKNOWN_KIND"],
    ["plan: a fallback with preferredMs", (lib) => lib.plan(D(lib), [{ name: "f", minMs: 1, preferredMs: 5, kind: "fallback" }]), RangeError, /a fallback step gets everything left/, "steps[0].preferredMs", "PREFERRED_ON_FALLBACK"],
    ["plan: no steps", (lib) => lib.plan(D(lib), []), RangeError, /'steps' must contain at least one step/, "steps", "NO_STEPS"],
    ["plan: steps not an array", (lib) => lib.plan(D(lib), { a: 1 }), TypeError, /'steps' must be an array/, "steps", "INVALID_TYPE"],
    ["plan: a step that is null", (lib) => lib.plan(D(lib), [null]), TypeError, /'steps\[0\]' must be an object/, "steps[0]", "INVALID_TYPE"],
    ["plan: an empty name", (lib) => lib.plan(D(lib), steps({ name: "" })), RangeError, /step 0 must have a non-empty 'name'/, "steps[0].name", "EMPTY_NAME"],
    ["plan: a name that is not a string", (lib) => lib.plan(D(lib), steps({ name: 1 })), TypeError, /'steps\[0\].name' must be a string/, "steps[0].name", "INVALID_TYPE"],
    ["plan: not a Deadline", (lib) => lib.plan(1_000, steps()), TypeError, /'deadline' must be a Deadline/, "deadline", "INVALID_TYPE"],
    ["plan: marginMs negative", (lib) => lib.plan(D(lib), steps(), { marginMs: -1 }), RangeError, /'marginMs' must be between 0 and 1000/, "options.marginMs", "MARGIN_OUT_OF_RANGE"],
    ["plan: onStep not a function", (lib) => lib.plan(D(lib), steps(), { onStep: "log" }), TypeError, /'options.onStep' must be a function/, "options.onStep", "INVALID_TYPE"],
    ["new Plan()", (lib) => new lib.Plan(), TypeError, /use plan\(deadline, steps, options\)/, undefined, "NOT_CONSTRUCTIBLE"],
    ["plan: onStepError not a function", (lib) => lib.plan(D(lib), steps(), { onStepError: "log" }), TypeError, /'options.onStepError' must be a function/, "options.onStepError", "INVALID_TYPE"],
    // A getter that answers plan.js's check and throws when Wasm reads the step: a TypeError, never an exception through Wasm.
    ["plan: a step whose getter throws on the second read", (lib) => lib.plan(D(lib), [secondReadThrows({ minMs: 1, kind: "optional" }, "name", "a")]), TypeError, /^'steps' does not have the expected shape: reading it threw \(in steps\[0\]\.name\)$/, "steps", "INVALID_TYPE"],
  ]);
}

// ---- messages: the core's templates, filled in JS ----------------------------------------------
cases.push({
  name: "plan: the core's messages read in full, numbers as JavaScript prints them (Infinity, 1e+300), a skip's reason to 0.1 ms",
  run: (lib) =>
    onFakeTime(async (clock) => {
      const max = Number.MAX_SAFE_INTEGER;
      const D = lib.Deadline.in(1_000);
      const step = (s) => ({ name: "a", kind: "optional", ...s });
      for (const [steps, options, message] of [
        [[step({ minMs: Infinity })], undefined, `step 'a': 'minMs' must be a finite number of milliseconds between 0 and ${max}: current value is Infinity`],
        [[step({ minMs: 1, reserveMs: 1e300 })], undefined, `step 'a': 'reserveMs' must be between 0 and ${max} milliseconds (2^53 - 1): current value is 1e+300`],
        [[step({ minMs: 1 })], { marginMs: Infinity }, "'marginMs' must be between 0 and 1000 milliseconds: current value is Infinity"],
        [[step({ minMs: 1 })], { marginMs: 1e300 }, "'marginMs' must be between 0 and 1000 milliseconds: current value is 1e+300"],
        [[step({ minMs: 2.5, preferredMs: 1e-7 })], undefined, "step 'a': 'minMs' must not exceed 'preferredMs' (1e-7): current value is 2.5"],
        [[step({ minMs: 2.5, reserveMs: 1.25, kind: "mandatory" })], undefined, "step 'a': 'reserveMs' must be at least 'minMs' (2.5) for mandatory and fallback steps: current value is 1.25"],
        [[step({ minMs: 1 }), step({ minMs: 2 })], undefined, "step names must be unique: 'a' is used by steps 0 and 1"],
        [[step({ minMs: 1, kind: "sometimes" })], undefined, "'kind' must be one of mandatory, optional, fallback: current value is 'sometimes'"],
      ]) {
        const e = throws(() => lib.plan(D, steps, options), RangeError, undefined, message);
        equal(e.message, message);
      }
      // A skip's reason: what is available (1000.25 − 10 held − 5 margin) to 0.1 ms.
      const d = lib.Deadline.in(1_000.25);
      const q = lib.plan(d, [step({ minMs: 995.5 }), { name: "respond", minMs: 10, kind: "fallback" }], { marginMs: 5 });
      const skipped = await q.run("a", () => "ran");
      equal(skipped.reason, "only 985.3 ms are available after the reserve for later steps but this step needs at least 995.5 ms");
      const short = lib.Deadline.in(10);
      const late = lib.plan(short, [step({ minMs: 1 })]);
      await clock.advance(20);
      equal((await late.run("a", () => "ran")).reason, "the deadline has passed");
      return [D, d, short];
    }),
});

// ---- p.stream: a step that streams to the client -------------------------------------------

const enc = new TextEncoder();
const dec = new TextDecoder();

/** A source the case feeds by hand: `push(text)`, `close()`; records a cancel. */
function source() {
  let ctl;
  const log = { cancelled: false, reason: undefined };
  const stream = new ReadableStream({
    start(c) {
      ctl = c;
    },
    cancel(reason) {
      log.cancelled = true;
      log.reason = reason;
    },
  });
  return { stream, log, push: (text) => ctl.enqueue(enc.encode(text)), close: () => ctl.close() };
}

/** Reads a body to its end (or its error), as text. */
async function readAll(res) {
  const reader = res.body.getReader();
  let text = "";
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { text };
      text += dec.decode(value, { stream: true });
    }
  } catch (error) {
    return { text, error };
  }
}

/** The events of an SSE text: `{ event, data }` each (data joined). */
function events(text) {
  return text
    .split("\n\n")
    .filter((block) => block.trim() !== "")
    .map((block) => {
      const e = { event: "message", data: [] };
      for (const line of block.split("\n")) {
        if (line.startsWith("event: ")) e.event = line.slice(7);
        else if (line.startsWith("data: ")) e.data.push(line.slice(6));
      }
      return { event: e.event, data: e.data.join("\n") };
    });
}

const STREAM_STEPS = [
  { name: "retrieve", minMs: 10, preferredMs: 100, kind: "optional" },
  { name: "generate", minMs: 50, kind: "mandatory" },
  { name: "respond", minMs: 100, kind: "fallback" },
];

cases.push(
  {
    name: "p.stream on fake time: headers at the first event, the body as sent, and a final trace event holding the step's outcome and timing",
    run: (lib) =>
      onFakeTime(async (clock) => {
        const d = lib.Deadline.in(1_000);
        const p = lib.plan(d, STREAM_STEPS, { marginMs: 5 });
        await p.run("retrieve", () => "docs");
        const src = source();
        let budget;
        let settled = false;
        const pending = p.stream("generate", (signal, budgetMs) => ((budget = budgetMs), src.stream), { trace: true, firstChunkMs: 300, stallMs: 100 }).then((r) => ((settled = true), r));
        src.push(": keep-alive\n\n");
        await clock.advance(30);
        equal(settled, false, "no headers before the first event (a comment is not one)");
        src.push("data: one\n\n");
        await clock.advance(0);
        const res = await pending;
        equal(budget, 1_000 - 100 - 5, "the cap: remaining − the fallback's reserve and margin");
        equal(res.status, 200);
        equal(res.headers.get("content-type"), "text/event-stream");
        const body = readAll(res);
        await clock.advance(40);
        src.push("data: two\n\n");
        await clock.advance(10);
        src.close();
        await clock.advance(0);
        const { text, error } = await body;
        equal(error, undefined);
        ok(text.startsWith(": keep-alive\n\ndata: one\n\ndata: two\n\nevent: trace\ndata: "), text);
        const trace = JSON.parse(events(text).at(-1).data);
        equal(trace.map((r) => `${r.step}:${r.outcome}`).join(), "retrieve:ok,generate:ok");
        equal(trace[1].capMs, 895);
        equal(trace[1].firstChunkMs, 30, "the first event went out 30 ms into the step");
        equal(trace[1].elapsedMs, 80, "the step lasted until its body ended");
        equal(p.records[1].firstChunkMs, 30);
        equal(p.records[0].firstChunkMs, undefined, "only a streamed step has firstChunkMs");
        const signal = d.signal();
        await clock.advance(1_000);
        equal(signal.aborted, false, "the body's end disposed the deadline: its signal does not fire at its instant");
        return [d];
      }),
  },
  {
    name: "p.stream on fake time: an iterable of events is framed as Server-Sent Events",
    run: (lib) =>
      onFakeTime(async () => {
        const d = lib.Deadline.in(1_000);
        const p = lib.plan(d, STREAM_STEPS);
        async function* tokens() {
          yield "plain";
          yield { event: "token", id: "7", data: { text: "two\nlines" } };
          yield { data: "a\nb", retry: 1500 };
        }
        const res = await p.stream("generate", () => tokens());
        equal(res.headers.get("content-type"), "text/event-stream");
        const { text } = await readAll(res);
        equal(text, 'data: plain\n\nevent: token\nid: 7\ndata: {"text":"two\\nlines"}\n\nretry: 1500\ndata: a\ndata: b\n\n');
        equal(p.records[0].outcome, "ok");
        // A bad event after content ends the stream with an error event naming it.
        const q = lib.plan(d, STREAM_STEPS);
        const bad = await p.stream.call(q, "generate", () => ["fine", 42]);
        const tail = events((await readAll(bad)).text);
        equal(tail.map((e) => e.event).join(), "message,error");
        const data = JSON.parse(tail[1].data);
        equal(data.step, "generate");
        equal(data.outcome, "error");
        equal(data.reason, "the step failed", "what the step yielded is not echoed to the client");
        equal(data.code, "STEP_FAILED");
        return [d];
      }),
  },
  {
    name: "p.stream on fake time: no first event within firstChunkMs: the plan's fallback step answers inside its reserve, and the trace says so",
    run: (lib) =>
      onFakeTime(async (clock) => {
        const d = lib.Deadline.in(1_000);
        const p = lib.plan(d, STREAM_STEPS, { marginMs: 5 });
        const src = source();
        let given;
        const pending = p.stream("generate", (signal) => ((given = signal), src.stream), {
          firstChunkMs: 200,
          trace: true,
          fallback: (reason, signal, budgetMs) => new Response(JSON.stringify({ cached: true, why: reason.name, budgetMs }), { status: 200 }),
        });
        await clock.advance(200);
        const res = await pending;
        equal(res.status, 200);
        const answer = await res.json();
        equal(answer.cached, true);
        equal(answer.why, "StreamStalled");
        equal(answer.budgetMs, 800, "the fallback got everything left");
        ok(given.aborted, "the step's signal aborted (its request released)");
        ok(src.log.cancelled, "the source was cancelled");
        equal(p.records.map((r) => `${r.step}:${r.outcome}:${r.elapsedMs}`).join(), "generate:stalled:200,respond:ok:0");
        equal(res.headers.get("server-timing"), p.serverTiming(), "a fallback answer carries the trace as Server-Timing");
        const signal = d.signal();
        await clock.advance(1_000);
        equal(signal.aborted, false, "the fallback's answer disposed the deadline");
        return [d];
      }),
  },
  {
    name: "p.stream on fake time: after content, a stall ends the stream with event: error naming it, then the trace",
    run: (lib) =>
      onFakeTime(async (clock) => {
        const d = lib.Deadline.in(1_000);
        const p = lib.plan(d, STREAM_STEPS);
        const src = source();
        const pending = p.stream("generate", () => src.stream, { stallMs: 50, trace: true });
        src.push("data: half of an ans");
        src.push("wer\n");
        await clock.advance(0);
        const res = await pending;
        const body = readAll(res);
        await clock.advance(50);
        const { text, error } = await body;
        equal(error, undefined, "an event stream ends cleanly, saying why");
        // The half-sent event becomes part of the error event: it never passes as a message.
        ok(text.startsWith("data: half of an answer\nevent: error\ndata: "), text);
        const [failure, trace] = events(text);
        equal(failure.event, "error");
        const data = JSON.parse(failure.data.split("\n").at(-1));
        equal(data.outcome, "stalled");
        ok(/^the step stalled \(stall\): /.test(data.reason), failure.data);
        equal(trace.event, "trace");
        equal(JSON.parse(trace.data)[0].outcome, "stalled");
        ok(src.log.cancelled, "the source was released");
        equal(p.records.length, 1, "no fallback once content was sent");
        return [d];
      }),
  },
  {
    name: "p.stream on fake time: the step's cap, min(preferredMs, remaining − reserve), ends a long stream (timeout; the deadline itself for an uncapped step)",
    run: (lib) =>
      onFakeTime(async (clock) => {
        const d = lib.Deadline.in(1_000);
        const p = lib.plan(d, [{ name: "generate", minMs: 50, preferredMs: 300, kind: "mandatory" }, { name: "respond", minMs: 100, kind: "fallback" }], { marginMs: 5 });
        const src = source();
        let budget;
        src.push("data: 0\n\n");
        const res = await p.stream("generate", (signal, budgetMs) => ((budget = budgetMs), src.stream));
        equal(budget, 300);
        const body = readAll(res);
        for (let i = 1; i <= 5; i++) {
          await clock.advance(100);
          if (!src.log.cancelled) src.push(`data: ${i}\n\n`);
        }
        const { text } = await body;
        const got = events(text);
        equal(got.map((e) => e.data).slice(0, 3).join(), "0,1,2");
        equal(got.at(-1).event, "error");
        equal(JSON.parse(got.at(-1).data).outcome, "timeout");
        equal(p.records[0].outcome, "timeout");
        equal(p.records[0].elapsedMs, 300);
        // A step given everything left is cut by the deadline itself.
        const e = lib.Deadline.in(200);
        const q = lib.plan(e, [{ name: "generate", minMs: 50, kind: "mandatory" }]);
        const src2 = source();
        src2.push("data: 0\n\n");
        const res2 = await q.stream("generate", () => src2.stream);
        const body2 = readAll(res2);
        await clock.advance(200);
        equal(JSON.parse(events((await body2).text).at(-1).data).outcome, "deadline");
        equal(q.records[0].outcome, "deadline");
        return [d, e];
      }),
  },
  {
    name: "plan on fake time: a cap that ends within rounding of the deadline (a tenth of a nanosecond short) is the deadline (DeadlineExceeded, outcome deadline), one that ends a microsecond before is the step's own",
    run: (lib) =>
      onFakeTime(async (clock) => {
        const hang = (signal) => new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason), { once: true }));
        const out = [];
        for (const short of [1e-7, 1e-3]) {
          const d = lib.Deadline.in(1_000);
          const p = lib.plan(d, [{ name: "generate", minMs: 50, preferredMs: 1_000 - short, kind: "mandatory" }]);
          const step = p.run("generate", hang);
          // The step's wake-up is due first (at its cap, before the deadline's own).
          await clock.advance(1_000);
          const e = await rejects(step, short < 1e-6 ? lib.DeadlineExceeded : lib.StepTimeout);
          out.push(`${e.name}:${p.records[0].outcome}`);
          d.dispose();
        }
        equal(out.join(), "DeadlineExceeded:deadline,StepTimeout:timeout");
        return [];
      }),
  },
  {
    name: "p.stream: the default fallback and the event: error carry our words and a code, never the step's error (URL credentials, hosts, keys); options.onError gets it",
    run: (lib) =>
      onFakeTime(async () => {
        const SECRET = "request to http://user:s3cret@10.0.3.7:8443/v1 failed: key sk-live-abc123";
        const leaks = (text) => /s3cret|10\.0\.3\.7|sk-live|user:/.test(text);
        const seen = [];
        const d = lib.Deadline.in(1_000);
        const p = lib.plan(d, STREAM_STEPS);
        const res = await p.stream("generate", () => {
          throw new Error(SECRET);
        }, { onError: (e) => seen.push(e) });
        equal(res.status, 502);
        const text = await res.text();
        ok(!leaks(text), text);
        equal(JSON.parse(text).code, "STEP_FAILED");
        equal(seen.map((e) => e.message).join(), SECRET);
        const q = lib.plan(lib.Deadline.in(1_000), STREAM_STEPS);
        async function* broken() {
          yield "a";
          throw new Error(SECRET);
        }
        const mid = await q.stream("generate", () => broken(), { onError: (e) => seen.push(e) });
        const streamed = (await readAll(mid)).text;
        ok(!leaks(streamed), streamed);
        const last = events(streamed).at(-1);
        equal(last.event, "error");
        equal(JSON.parse(last.data).code, "STEP_FAILED");
        equal(seen.length, 2, "onError saw the mid-stream failure");
        return [d, q.deadline];
      }),
  },
  {
    name: "p.stream on fake time: too little time to start: the step is not run, the default fallback answers 504 saying why; a throw or non-ok answer gets 502",
    run: (lib) =>
      onFakeTime(async () => {
        const d = lib.Deadline.in(120);
        const p = lib.plan(d, STREAM_STEPS, { marginMs: 5 });
        let called = 0;
        const res = await p.stream("generate", () => (called++, new ReadableStream()));
        equal(called, 0, "the step was run");
        equal(res.status, 504);
        const body = await res.json();
        equal(body.fallback, true);
        equal(body.step, "generate");
        ok(/^the step did not start: /.test(body.reason), body.reason);
        equal(body.code, "INSUFFICIENT_BUDGET");
        equal(p.records.map((r) => `${r.step}:${r.outcome}`).join(), "generate:insufficient,respond:ok");
        const q = lib.plan(lib.Deadline.in(1_000), STREAM_STEPS);
        const thrown = await q.stream("generate", () => {
          throw new Error("model unavailable");
        });
        equal(thrown.status, 502);
        const thrownBody = await thrown.json();
        equal(thrownBody.reason, "the step failed", "the step's own error stays out of the public answer");
        equal(thrownBody.code, "STEP_FAILED");
        const r = lib.plan(lib.Deadline.in(1_000), STREAM_STEPS);
        const refused = await r.stream("generate", async () => new Response("busy", { status: 429, statusText: "Too Many Requests" }));
        equal(refused.status, 502);
        equal((await refused.json()).reason, "the step failed");
        equal(r.records.map((x) => `${x.step}:${x.outcome}`).join(), "generate:error,respond:ok");
        return [d, q.deadline, r.deadline];
      }),
  },
  {
    name: "p.stream: bad input is a TypeError or RangeError naming the parameter",
    run: async (lib) => {
      const d = lib.Deadline.in(1_000);
      const p = lib.plan(d, STREAM_STEPS);
      const src = () => new ReadableStream();
      equal((await rejects(p.stream("nope", src), RangeError)).param, "name");
      equal((await rejects(p.stream("generate", "not a function"), TypeError)).param, "run");
      equal((await rejects(p.stream("generate", src, { stallMs: "5" }), TypeError)).param, "options.stallMs");
      equal((await rejects(p.stream("generate", src, { firstChunkMs: -1 }), RangeError)).param, "options.firstChunkMs");
      equal((await rejects(p.stream("generate", src, { trace: "yes" }), TypeError)).param, "options.trace");
      equal((await rejects(p.stream("generate", src, { fallback: 5 }), TypeError)).param, "options.fallback");
      const e = await rejects(p.stream("generate", () => 42), TypeError);
      equal(e.param, "run");
      equal(e.code, "INVALID_RETURN");
      equal(p.records.map((r) => r.outcome).join(), "error", "only the started step is recorded");
      const q = lib.plan(lib.Deadline.in(1_000), STREAM_STEPS);
      const f = await rejects(q.stream("generate", () => Promise.reject(new Error("x")), { fallback: () => "not a response" }), TypeError);
      equal(f.param, "options.fallback");
    },
  },
  {
    name: "p.stream: a reader's cancel aborts the step (outcome aborted) and releases the source; nothing is left behind",
    run: async (lib, ctx) => {
      const timersBefore = ctx.pendingTimers?.();
      const d = lib.Deadline.in(5_000);
      const p = lib.plan(d, STREAM_STEPS);
      const src = source();
      src.push("data: one\n\n");
      let signal;
      const res = await p.stream("generate", (s) => ((signal = s), src.stream), { stallMs: 1_000, trace: true });
      const reader = res.body.getReader();
      await reader.read();
      await reader.cancel(new Error("client left"));
      ok(src.log.cancelled, "the source was cancelled");
      equal(src.log.reason?.message, "client left");
      ok(signal.aborted, "the step's signal aborted");
      equal(p.records.map((r) => `${r.step}:${r.outcome}`).join(), "generate:aborted");
      if (ctx.pendingTimers) equal(ctx.pendingTimers(), timersBefore, "host timers pending after the stream");
    },
  },
  {
    name: "p.stream over a local SSE upstream: events relayed, a stall after them aborts the upstream request (the server sees it close), then error and trace events",
    needs: ["fixtureUrl"],
    run: async (lib, ctx) => {
      const d = lib.Deadline.in(5_000);
      const p = lib.plan(d, STREAM_STEPS, { marginMs: 50 });
      const id = `pstream-${Math.random().toString(36).slice(2)}`;
      const res = await p.stream("generate", (signal) => fetch(`${ctx.fixtureUrl}/stall/sse?id=${id}&events=3&gap=20&ping=30`, { signal }), {
        firstChunkMs: 2_000,
        stallMs: 300,
        trace: true,
      });
      equal(res.status, 200);
      equal(res.headers.get("content-type"), "text/event-stream");
      const { text, error } = await readAll(res);
      equal(error, undefined);
      const got = events(text);
      equal(got.filter((e) => e.event === "token").length, 2);
      equal(got.map((e) => e.event).slice(-2).join(), "error,trace");
      equal(JSON.parse(got.at(-2).data).outcome, "stalled");
      const trace = JSON.parse(got.at(-1).data);
      equal(trace[0].outcome, "stalled");
      ok(trace[0].firstChunkMs > 0 && trace[0].firstChunkMs < trace[0].elapsedMs, JSON.stringify(trace));
      const seen = await (await fetch(`${ctx.fixtureUrl}/stall/closed?id=${id}`)).json();
      ok(seen.closed, "the upstream saw the connection close");
    },
  },
);

export default cases;
