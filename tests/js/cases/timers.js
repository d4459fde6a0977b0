// The timer heap and the cancellation primitive (js/timers.js), on fake time:
// every instant is exact, so "never early" and "on time" are checked to the
// millisecond, and the host timers the package asks for are counted. Runs in
// Node, Deno, workerd and Chromium like every case; a few cases at the end use
// the real clock, to prove the real host timers behave as the fake ones do.
import { aborted, equal, ok, throws } from "../assert.js";
import { installFakeTime } from "../fake-time.js";
import { MAX_TIMER_MS, child } from "../../../pkg/main.js";
import { countedParent } from "./deadline.js";
import conformance from "../conformance-table.js";
import { lcg } from "./stall.js";

/** Runs `body(clock)` on fake time, restoring the host clock whatever happens. */
async function onFakeTime(body) {
  const clock = installFakeTime();
  try {
    await body(clock);
  } finally {
    clock.restore();
  }
}

const cases = [
  {
    name: "timers (fake time): 300 wake-ups fire in instant order, each on its instant and never before, behind one host timer",
    run: () =>
      onFakeTime(async (clock) => {
        const random = lcg(7);
        const t0 = clock.now();
        const fired = [];
        const wakes = [];
        for (let i = 0; i < 300; i++) {
          const at = t0 + 1 + random() * 5_000; // fractional instants: the host timer is rounded up
          wakes.push(child([], at, { onTime: (c) => (fired.push({ at: c.at, t: clock.now() }), c.dispose()) }));
          ok(clock.pending() <= 1, `${clock.pending()} host timers pending after ${i + 1} wake-ups`);
        }
        let maxPending = 0;
        for (let step = 0; step < 60; step++) {
          await clock.advance(100);
          maxPending = Math.max(maxPending, clock.pending());
        }
        equal(fired.length, 300, "wake-ups fired");
        ok(maxPending <= 1, `${maxPending} host timers pending at once`);
        for (let i = 0; i < fired.length; i++) {
          const { at, t } = fired[i];
          ok(t >= at, `wake-up ${i} fired ${at - t} ms before its instant`);
          ok(t - at < 1, `wake-up ${i} fired ${t - at} ms after its instant (the host timer is exact here)`);
          if (i) ok(at >= fired[i - 1].at, `wake-up ${i} (at ${at}) fired after one due later (${fired[i - 1].at})`);
        }
        equal(clock.pending(), 0, "host timers left behind");
        ok(wakes.every((c) => !c.aborted), "a wake-up is not an abort");
      }),
  },
  {
    name: "timers (fake time): a disposed wake-up never fires, the others do; the host timer follows the earliest",
    run: () =>
      onFakeTime(async (clock) => {
        const t0 = clock.now();
        const fired = new Set();
        const wakes = [];
        for (let i = 0; i < 100; i++) wakes.push(child([], t0 + 10 * (i + 1), { onTime: (c) => (fired.add(i), c.dispose()) }));
        // Cancel the earliest (so the host timer now waits for a later one) and every odd one.
        for (let i = 0; i < 100; i++) if (i === 0 || i % 2) wakes[i].dispose();
        await clock.advance(1_005);
        equal(fired.size, 49, "wake-ups fired");
        for (const i of fired) ok(i % 2 === 0 && i > 0, `disposed wake-up ${i} fired`);
        // One host timer per distinct instant that had a live wake-up, and one for the first arm.
        const hostArms = clock.armed.length;
        ok(hostArms <= 51, `${hostArms} host timers armed for 49 live wake-ups`);
        equal(clock.pending(), 0, "host timers left behind");
      }),
  },
  {
    name: "timers (fake time): a wake-up whose onTime throws loses no other: those due at the same instant and later still fire",
    run: () =>
      onFakeTime(async (clock) => {
        const t0 = clock.now();
        const fired = [];
        child([], t0 + 5, {
          onTime: (c) => {
            c.dispose();
            throw new Error("boom");
          },
        });
        child([], t0 + 5, { onTime: (c) => (fired.push("same instant"), c.dispose()) });
        child([], t0 + 6, { onTime: (c) => (fired.push("later"), c.dispose()) });
        let thrown;
        try {
          await clock.advance(5);
        } catch (error) {
          thrown = error;
        }
        equal(thrown?.message, "boom", "the throw reaches whoever ran the host timer");
        await clock.advance(5);
        equal(fired.join(), "same instant,later", "wake-ups fired after the throw");
        equal(clock.pending(), 0, "host timers left behind");
      }),
  },
  {
    name: "timers (fake time): rearm moves a wake-up later or earlier; it fires once, at the new instant",
    run: () =>
      onFakeTime(async (clock) => {
        const t0 = clock.now();
        const log = [];
        const a = child([], t0 + 100, { onTime: (c) => log.push(["a", clock.now() - t0]) });
        const b = child([], t0 + 100, { onTime: (c) => log.push(["b", clock.now() - t0]) });
        a.rearm(t0 + 300);
        b.rearm(t0 + 50);
        await clock.advance(299);
        equal(JSON.stringify(log), JSON.stringify([["b", 50]]), "fired so far");
        await clock.advance(1);
        equal(JSON.stringify(log), JSON.stringify([["b", 50], ["a", 300]]), "fired");
        // After onTime the child is still linked: it may be re-armed, and fires again.
        a.rearm(clock.now() + 25);
        await clock.advance(25);
        equal(log.length, 3);
        equal(log[2][1], 325);
        a.rearm(Infinity); // no wake-up
        await clock.advance(1_000);
        equal(log.length, 3, "a child re-armed to Infinity fired");
        a.dispose();
        b.dispose();
        a.rearm(clock.now() + 1); // a no-op once disposed
        await clock.advance(10);
        equal(log.length, 3, "a disposed child was re-armed");
        equal(clock.pending(), 0, "host timers left behind");
      }),
  },
  {
    name: "timers (fake time): a host timer that wakes early fires nothing and is re-armed; the wake-up comes on its instant",
    run: () =>
      onFakeTime(async (clock) => {
        const t0 = clock.now();
        let firedAt;
        const c = child([], t0 + 40, { onTime: () => (firedAt = clock.now()) });
        ok(await clock.fireEarly(), "a host timer was armed");
        equal(firedAt, undefined, "fired before its instant");
        equal(clock.pending(), 1, "the host timer was not re-armed after an early wake");
        clock.jump(39.5); // late reads between timers do not fire anything either
        ok(await clock.fireEarly());
        equal(firedAt, undefined, "fired 0.5 ms before its instant");
        await clock.advance(1);
        equal(firedAt, t0 + 40.5, "fired at the first host wake on or after its instant");
        c.dispose();
      }),
  },
  {
    name: "timers (fake time): a wait becomes the host delay by the core's rule (the timers.timerMs rows of tests/conformance/cases.json): rounded up, clamped to 2^31−1 ms",
    run: async () => {
      // [wait in ms, the host delay]: the table's rows that a deadline can wait for (finite, not passed).
      const table = conformance.cases.filter((r) => r.op === "timers.timerMs" && typeof r.args.ms === "number" && r.args.ms >= 0).map((r) => [r.args.ms, r.expect.value]);
      ok(table.length >= 8, "the table's rows were found");
      for (const [ms, delay] of table) {
        await onFakeTime(async (clock) => {
          const c = child([], clock.now() + ms, { onTime: () => {} });
          equal(clock.armed.length, 1, `one host timer for a wait of ${ms} ms`);
          equal(clock.armed[0].ms, delay, `the host delay for a wait of ${ms} ms`);
          c.dispose();
        });
      }
    },
  },
  {
    name: "timers (fake time): an instant past the 2^31−1 ms host limit is reached in slices, never early",
    run: () =>
      onFakeTime(async (clock) => {
        const t0 = clock.now();
        const at = t0 + 3 * MAX_TIMER_MS + 5;
        let firedAt;
        const c = child([], at, { onTime: () => (firedAt = clock.now()) });
        equal(clock.armed.at(-1).ms, MAX_TIMER_MS, "the host timer is clamped to the host limit");
        await clock.advance(3 * MAX_TIMER_MS);
        equal(firedAt, undefined, "fired at the host limit, before its instant");
        await clock.advance(5);
        equal(firedAt, at);
        ok(clock.armed.every((a) => a.ms <= MAX_TIMER_MS), "a host timer was armed past the limit");
        c.dispose();
      }),
  },
  {
    name: "timers (fake time): 1 000 deadlines hold one host timer and abort at their instants, with lateByMs 0",
    run: (lib) =>
      onFakeTime(async (clock) => {
        const t0 = clock.now();
        const deadlines = Array.from({ length: 1_000 }, (_, i) => lib.Deadline.in(1 + (i % 50)));
        const abortedAt = new Map();
        for (const d of deadlines) d.signal().addEventListener("abort", () => abortedAt.set(d, clock.now()));
        equal(clock.pending(), 1, "host timers for 1 000 deadlines");
        await clock.advance(25.5);
        for (const d of deadlines) {
          const due = d.at <= clock.now();
          equal(d.signal().aborted, due, `a deadline ${d.at - t0} ms out at ${clock.now() - t0}`);
          if (due) {
            equal(abortedAt.get(d), d.at, "aborted at its instant");
            equal(d.signal().reason.lateByMs, 0, "lateByMs");
          }
        }
        for (const d of deadlines) d.dispose();
        await clock.advance(100);
        equal(deadlines.filter((d) => d.signal().aborted).length, 25 * 20, "a disposed deadline aborted");
        equal(clock.pending(), 0, "host timers left behind");
      }),
  },
  {
    name: "child: a Deadline parent's abort reaches the child and its own children in the same turn, with the reason and who aborted",
    run: (lib) =>
      onFakeTime(async (clock) => {
        const client = new AbortController();
        const d = lib.Deadline.in(1_000, client.signal);
        const log = [];
        const step = child([d], clock.now() + 500, {
          onTime: () => log.push("time"),
          onAbort: (reason, by, c) => log.push(["step", reason, by === d, c === step]),
        });
        const inner = child([step], Infinity, { onAbort: (reason, by) => log.push(["inner", reason, by === step]) });
        const reason = new Error("client left");
        client.abort(reason);
        // The inner child is told by its parent before the parent's onAbort runs.
        equal(log.length, 2, `callbacks in the turn of the abort: ${JSON.stringify(log)}`);
        equal(log[0][0], "inner");
        equal(log[0][1], reason);
        equal(log[0][2], true, "inner: by is the parent as given");
        equal(log[1][0], "step");
        equal(log[1][2], true, "step: by is the Deadline as given");
        equal(log[1][3], true, "the child is passed to onAbort");
        equal(step.signal.reason, reason);
        equal(inner.signal.reason, reason);
        equal(d.signal().reason, reason);
        await clock.advance(2_000);
        equal(log.length, 2, "onTime after an abort");
        equal(clock.pending(), 0, "host timers left behind");
      }),
  },
  {
    name: "child: a deadline's own expiry aborts its children with DeadlineExceeded; the child's own instant does not abort it",
    run: (lib) =>
      onFakeTime(async (clock) => {
        const d = lib.Deadline.in(100);
        let reasonSeen;
        const c = child([d], clock.now() + 60, {
          onTime: (c) => c.abort(new Error("cap")),
          onAbort: (reason) => (reasonSeen = reason),
        });
        const late = child([d], clock.now() + 500, { onTime: () => {}, onAbort: (reason) => (reasonSeen = reason) });
        await clock.advance(60);
        equal(c.aborted, true, "abort() from onTime");
        equal(c.signal.reason.message, "cap");
        equal(reasonSeen, undefined, "onAbort is for the parents' aborts, not abort()");
        await clock.advance(40);
        ok(lib.isDeadlineExceeded(reasonSeen), `the late child got ${reasonSeen}`);
        equal(late.signal.reason, d.signal().reason);
        equal(clock.pending(), 0, "host timers left behind");
      }),
  },
  {
    name: "child: a parent already aborted aborts the child during child(), onAbort included; undefined parents are skipped",
    run: (lib) => {
      const gone = new AbortController();
      gone.abort("gone");
      let seen;
      const c = child([undefined, gone.signal], Infinity, { onAbort: (reason, by, self) => (seen = [reason, by, self]) });
      equal(c.aborted, true);
      equal(c.signal.aborted, true, "the signal made after the abort is aborted");
      equal(c.signal.reason, "gone");
      equal(seen[0], "gone");
      equal(seen[1], gone.signal);
      equal(seen[2], c);
      const d = lib.Deadline.at(0);
      const late = child([d], Infinity, {});
      ok(lib.isDeadlineExceeded(late.signal.reason), "a passed deadline as the parent");
      const e = throws(() => child([42], Infinity), TypeError, /'parents\[0\]' must be an AbortSignal or a Deadline/);
      equal(e.param, "parents[0]");
      equal(e.code, "INVALID_TYPE");
      const f = throws(() => child([], 10), TypeError, /'options.onTime' must be a function/);
      equal(f.param, "options.onTime");
    },
  },
  {
    name: "child: 1 000 children of one signal share one listener, removed by the end of the turn they all left in",
    run: async () => {
      const parent = countedParent();
      for (let round = 0; round < 3; round++) {
        const kids = Array.from({ length: 1_000 }, () => child([parent.signal], Infinity));
        equal(parent.counts.added, round + 1, "listeners added");
        for (const k of kids) k.dispose();
        await null;
        await null;
        equal(parent.counts.removed, round + 1, "listeners removed");
      }
      const kids = Array.from({ length: 10 }, () => child([parent.signal], Infinity));
      parent.controller.abort("bye");
      ok(kids.every((k) => k.signal.reason === "bye"), "every child aborted");
      equal(parent.counts.removed, 4, "the listener goes with the abort");
    },
  },
  {
    name: "child: dispose leaves the parent's list; a disposed parent no longer tells its children",
    run: (lib) =>
      onFakeTime(async (clock) => {
        const d = lib.Deadline.in(100);
        const told = [];
        const a = child([d], Infinity, { onAbort: () => told.push("a") });
        const b = child([d], Infinity, { onAbort: () => told.push("b") });
        const grand = child([b], Infinity, { onAbort: () => told.push("grand") });
        a.dispose();
        b.dispose();
        await clock.advance(100);
        equal(d.signal().aborted, true);
        equal(told.length, 0, `told after dispose: ${told}`);
        equal(grand.aborted, false, "a disposed parent told its child");
        grand.dispose();
        equal(clock.pending(), 0, "host timers left behind");
      }),
  },
  // ---- the real host clock ------------------------------------------------------------------
  {
    name: "timers (real clock): children on the host's timers fire in order, never before their instants",
    run: async (lib) => {
      const t0 = performance.now();
      const fired = [];
      const done = new Promise((resolve) => {
        for (const ms of [30, 10, 20]) {
          child([], t0 + ms, {
            onTime: (c) => {
              fired.push([ms, performance.now() - t0]);
              c.dispose();
              if (fired.length === 3) resolve();
            },
          });
        }
      });
      // Keep a request (workerd) or a process (Node, Deno) busy until they fire.
      await Promise.race([done, aborted(lib.Deadline.in(5_000).signal())]);
      equal(fired.map(([ms]) => ms).join(","), "10,20,30", "order");
      for (const [ms, t] of fired) ok(t >= ms, `the ${ms} ms wake-up fired at ${t} ms`);
    },
  },
  {
    // workerd allows a request 10 000 armed timeouts: a queue left empty must not keep its timer.
    name: "timers (real clock): deadlines and stall wrappers made and disposed in 10 500 turns of one request leave no host timer armed behind them",
    run: async (lib, ctx) => {
      const before = ctx.pendingTimers?.();
      const TURNS = 10_500;
      for (let i = 0; i < TURNS; i++) {
        const d = lib.Deadline.in(60_000);
        d.signal();
        d.dispose();
        await null;
      }
      const chunk = new Uint8Array(4);
      for (let i = 0; i < TURNS; i++) {
        const one = new ReadableStream({
          pull(c) {
            c.enqueue(chunk);
            c.close();
          },
        });
        const reader = lib.withStallTimeout(one, { firstChunkMs: 60_000, stallMs: 60_000 }).getReader();
        while (!(await reader.read()).done);
      }
      if (before !== undefined) equal(ctx.pendingTimers(), before, "ref'd host timers after the loops");
    },
  },
];

export default cases;
