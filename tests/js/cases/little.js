// Little's law and ConcurrencyLimiter cases: the same file runs in Node, Deno, workerd and Chromium.
import { equal, ok, rejects, throwsArg } from "../assert.js";

const cases = [
  {
    name: "little: Little's law (seed 000's table)",
    run: (lib) => {
      equal(lib.concurrencyBound({ ratePerSec: 50, timeoutMs: 2_000 }), 100);
      equal(lib.concurrencyBound({ ratePerSec: 50, timeoutMs: 30_000 }), 1_500);
      equal(lib.concurrencyBound({ ratePerSec: 50, timeoutMs: 120_000 }), 6_000);
      equal(lib.maxTimeoutFor({ ratePerSec: 50, limit: 100 }), 2_000);
      throwsArg(() => lib.maxTimeoutFor({ ratePerSec: 0, limit: 10 }), RangeError, "options.ratePerSec", "OUT_OF_RANGE", /^'ratePerSec' must be greater than 0/);
      throwsArg(() => lib.concurrencyBound({ ratePerSec: 1, timeoutMs: -1 }), RangeError, "options.timeoutMs", "NEGATIVE", /'timeoutMs'/);
      throwsArg(() => lib.maxTimeoutFor({ ratePerSec: 1, limit: -1 }), RangeError, "options.limit", "OUT_OF_RANGE", /'limit' must be between 0/);
      throwsArg(() => lib.concurrencyBound({ ratePerSec: "50", timeoutMs: 1 }), TypeError, "options.ratePerSec", "INVALID_TYPE", /'options.ratePerSec' must be a number/);
      throwsArg(() => lib.maxTimeoutFor(), TypeError, "options", "INVALID_TYPE", /'options' must be an object like \{ ratePerSec, limit \}/);
    },
  },
  {
    name: "little: ConcurrencyLimiter sheds at once when full and releases its slot on every path",
    run: async (lib) => {
      const limiter = new lib.ConcurrencyLimiter({ limit: 2 });
      let release;
      const gate = new Promise((r) => (release = r));
      const a = limiter.run(() => gate.then(() => "a"));
      const b = limiter.run(async () => {
        await gate;
        throw new Error("b failed");
      });
      equal(limiter.inFlight, 2);
      equal(limiter.available, 0);
      let called = false;
      const e = await rejects(limiter.run(() => (called = true)), lib.Overloaded, /all 2 slots are in use/);
      equal(called, false, "a shed call is never started");
      ok(lib.isOverloaded(e), "brand guard");
      equal(e.edgeDeadlineError, "Overloaded");
      equal(e.name, "Overloaded");
      equal(e.limit, 2);
      ok(lib.isOverloaded({ ...e }), "the brand survives a structured clone");
      equal(lib.isOverloaded(new Error("x")), false);
      equal(limiter.shed, 1);
      release();
      equal(await a, "a");
      await rejects(b, Error, /b failed/);
      equal(limiter.inFlight, 0, "released after resolve and reject");
      await rejects(limiter.run(() => {
        throw new TypeError("sync");
      }), TypeError, /sync/);
      equal(await limiter.run(() => 5), 5, "plain values too");
      await rejects(limiter.run(() => ({ then() {
        throw new Error("bad thenable");
      } })), Error, /bad thenable/);
      await Promise.resolve();
      equal(limiter.inFlight, 0, "released after a sync throw, a value and a broken thenable");
      const notFn = await rejects(limiter.run("nope"), TypeError, /'fn' must be a function/);
      equal(`${notFn.param} ${notFn.code}`, "fn INVALID_TYPE", "param and code");
      for (const [limit, code] of [[0, "OUT_OF_RANGE"], [1.5, "NOT_WHOLE"], [-1, "OUT_OF_RANGE"], [NaN, "NOT_FINITE"], [2 ** 32, "OUT_OF_RANGE"]]) {
        throwsArg(() => new lib.ConcurrencyLimiter({ limit }), RangeError, "options.limit", code, /^'limit' must be a whole number between 1 and 4294967295/);
      }
      throwsArg(() => new lib.ConcurrencyLimiter({ limit: "2" }), TypeError, "options.limit", "INVALID_TYPE", /'options.limit' must be a whole number of slots/);
      throwsArg(() => new lib.ConcurrencyLimiter(), TypeError, "options", "INVALID_TYPE", /'options' must be an object like \{ limit \}/);
    },
  },
  {
    name: "little: a follow-up call started from fn's own .then (after its result settled) gets the released slot, not Overloaded",
    run: async (lib) => {
      const limiter = new lib.ConcurrencyLimiter({ limit: 1 });
      let followUp;
      const first = await limiter.run(() => {
        const p = Promise.resolve("first");
        followUp = p.then(() => limiter.run(() => "follow-up"));
        return p;
      });
      equal(first, "first");
      equal(await followUp, "follow-up", "the slot of a settled call is free");
      equal(limiter.shed, 0);
      equal(limiter.inFlight, 0);
      // Still shed when the slot really is taken, and fn is never called.
      let release;
      const held = limiter.run(() => new Promise((r) => (release = r)));
      let called = false;
      await rejects(limiter.run(() => (called = true)), lib.Overloaded, /all 1 slots are in use|slot/);
      equal(called, false);
      equal(limiter.shed, 1);
      release("done");
      equal(await held, "done");
      equal(limiter.inFlight, 0);
    },
  },
];

export default cases;
