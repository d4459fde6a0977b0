// ConcurrencyLimiter's adaptive limits and its queue: the same file runs in Node, Deno, workerd and
// Chromium. The fixed limit's shedding is in little.js. Timing is the subject here, so the clock is
// fake: installFakeTime(), moved by hand for round trips.
import { equal, ok, rejects, throwsArg } from "../assert.js";
import { installFakeTime } from "../fake-time.js";

/**
 * The package's clock, faked and moved by hand: `set(v)` puts it at `v` ms
 * after the start, then lets a microtask checkpoint pass (the limiter reads
 * the clock once per checkpoint). `restore()` when done.
 */
async function manualClock() {
  const fake = installFakeTime();
  await null;
  const base = fake.now();
  return {
    now: () => fake.now() - base,
    set: async (v) => {
      fake.jump(base + v - fake.now());
      await new Promise((resolve) => resolve()).then(() => {});
    },
    restore: () => fake.restore(),
  };
}

/** A signal whose listeners are counted (a real AbortSignal, its add/remove spied on). */
function countedSignal() {
  const c = new AbortController();
  const s = c.signal;
  let listeners = 0;
  const add = s.addEventListener.bind(s);
  const remove = s.removeEventListener.bind(s);
  s.addEventListener = (type, fn, o) => {
    listeners++;
    add(type, fn, o);
  };
  s.removeEventListener = (type, fn, o) => {
    listeners--;
    remove(type, fn, o);
  };
  return { controller: c, signal: s, listeners: () => listeners };
}

const cases = [
  {
    name: "limiter: adaptive options default to Netflix's values and bad ones name the option",
    run: (lib) => {
      const a = new lib.ConcurrencyLimiter({ limit: "aimd" });
      equal(a.algorithm, "aimd");
      equal(a.limit, 20, "initialLimit 20");
      equal(a.available, 20);
      equal(a.rttMs, undefined);
      const g = new lib.ConcurrencyLimiter({ limit: "gradient2" });
      equal(g.algorithm, "gradient2");
      equal(g.limit, 4, "a gradient limiter starts probing at minLimit (4, its own default)");
      equal(new lib.ConcurrencyLimiter({ limit: 3 }).algorithm, "fixed");
      throwsArg(() => new lib.ConcurrencyLimiter({ limit: "aimd", minLimit: 0 }), RangeError, "options.minLimit", "OUT_OF_RANGE", /^'minLimit' must be a whole number between 1 and 4294967295: current value is 0/);
      throwsArg(() => new lib.ConcurrencyLimiter({ limit: "aimd", minLimit: 50, maxLimit: 10 }), RangeError, "options.minLimit", "OUT_OF_RANGE", /^'minLimit' must be between minLimit \(50\) and maxLimit \(10\)/);
      throwsArg(() => new lib.ConcurrencyLimiter({ limit: "aimd", initialLimit: 5 }), RangeError, "options.initialLimit", "OUT_OF_RANGE", /'initialLimit' must be between minLimit \(20\) and maxLimit \(200\): current value is 5/);
      throwsArg(() => new lib.ConcurrencyLimiter({ limit: "aimd", backoffRatio: 1 }), RangeError, "options.backoffRatio", "OUT_OF_RANGE", /'backoffRatio' must be at least 0.5 and below 1/);
      throwsArg(() => new lib.ConcurrencyLimiter({ limit: "gradient2", tolerance: 0.5 }), RangeError, "options.tolerance", "OUT_OF_RANGE", /'tolerance' must be between 1 and 100/);
      throwsArg(() => new lib.ConcurrencyLimiter({ limit: "gradient2", smoothing: NaN }), RangeError, "options.smoothing", "NOT_FINITE", /'smoothing'/);
      throwsArg(() => new lib.ConcurrencyLimiter({ limit: "gradient2", probeSamples: 1.5 }), RangeError, "options.probeSamples", "NOT_WHOLE", /'probeSamples' must be a whole number/);
      throwsArg(() => new lib.ConcurrencyLimiter({ limit: 2, maxQueue: -1 }), RangeError, "options.maxQueue", "OUT_OF_RANGE", /'maxQueue'/);
      throwsArg(() => new lib.ConcurrencyLimiter({ limit: "vegas" }), TypeError, "options.limit", "INVALID_TYPE", /'options.limit' must be a whole number of slots, "aimd" or "gradient2": current value is "vegas"/);
      throwsArg(() => new lib.ConcurrencyLimiter({ limit: "aimd", timeoutMs: "5" }), TypeError, "options.timeoutMs", "INVALID_TYPE", /'options.timeoutMs' must be a number/);
    },
  },
  {
    name: "limiter: AIMD grows by one per busy window and backs off on a late or dropped one, within minLimit and maxLimit",
    run: async (lib) => {
      const clock = await manualClock();
      try {
        const limiter = new lib.ConcurrencyLimiter({ limit: "aimd", initialLimit: 4, minLimit: 3, maxLimit: 5, timeoutMs: 100, windowSize: 3,  });
        // One window: three calls started at `start`, back after `rtt` (windows last 1 000 ms).
        const window = async (start, rtt, how = "release") => {
          await clock.set(start);
          const held = [limiter.tryAcquire(), limiter.tryAcquire(), limiter.tryAcquire()];
          await clock.set(start + rtt);
          for (const p of held) p[how]();
        };
        equal(limiter.limit, 4);
        await window(1_000, 10);
        equal(limiter.limit, 5, "a busy window on time: +1");
        equal(limiter.rttMs, 10);
        await window(3_000, 10);
        equal(limiter.limit, 5, "never above maxLimit");
        await window(5_000, 150);
        equal(limiter.limit, 4, "late: 5 × 0.9, rounded down");
        await window(7_000, 10, "drop");
        equal(limiter.limit, 3, "a dropped call backs off whatever its latency");
        await window(9_000, 500);
        equal(limiter.limit, 3, "never below minLimit");
        await window(11_000, 10, "ignore");
        equal(limiter.limit, 3, "ignored calls are no samples");
        await window(13_000, 10);
        equal(limiter.limit, 4);
        // A permit gives its slot back once.
        const p = limiter.tryAcquire();
        equal(limiter.inFlight, 1);
        p.release();
        p.release();
        p.drop();
        equal(limiter.inFlight, 0, "released exactly once");
        // run() measures its own round trips: a rejection that is a timeout is a drop.
        await clock.set(15_000);
        const slow = () => Promise.reject(new lib.DeadlineExceeded(15_000, 0));
        const settled = await Promise.allSettled([limiter.run(slow), limiter.run(slow), limiter.run(slow)]);
        equal(settled.map((r) => r.status).join(), "rejected,rejected,rejected");
        equal(limiter.limit, 3, "the timeouts' window backed off");
        equal(await limiter.run(async () => "ok"), "ok");
        equal(limiter.inFlight, 0);
      } finally {
        clock.restore();
      }
    },
  },
  {
    name: "limiter: gradient2 pins the limit to minLimit while it probes its baseline, then follows the gradient",
    run: async (lib) => {
      const clock = await manualClock();
      try {
        const limiter = new lib.ConcurrencyLimiter({ limit: "gradient2", minLimit: 2, initialLimit: 10, maxLimit: 50, probeSamples: 4, windowSize: 1, smoothing: 1,  });
        equal(limiter.limit, 2, "probing");
        for (let i = 0; i < 2; i++) {
          const [a, b] = [limiter.tryAcquire(), limiter.tryAcquire()];
          equal(limiter.tryAcquire(), undefined, "only minLimit calls while probing");
          await clock.set(clock.now() + 20);
          a.release();
          b.release();
        }
        equal(limiter.limit, 10, "the estimate is back after the probe");
        // At the baseline (20 ms) the gradient is 1: 10 × 1 + queueSize (4), smoothing 1.
        await clock.set(1_020);
        const p = Array.from({ length: 8 }, () => limiter.tryAcquire());
        await clock.set(1_040);
        p[7].release();
        equal(limiter.limit, 14);
        // Fifty times the baseline: the gradient is clamped to 0.5: 14 × 0.5 + 4.
        await clock.set(2_040);
        p[6].release();
        equal(limiter.limit, 11);
        for (const x of p.slice(0, 6)) x.ignore();
        equal(limiter.inFlight, 0);
      } finally {
        clock.restore();
      }
    },
  },
  {
    name: "limiter: with maxQueue, a caller waits in order for a slot; a full queue or a short budget is shed at once",
    run: async (lib) => {
      const clock = await manualClock();
      try {
        const limiter = new lib.ConcurrencyLimiter({ limit: 1, maxQueue: 2,  });
        equal(limiter.estimatedWaitMs(), 0, "nothing measured yet");
        // One round trip of 100 ms measured: the next in line waits about 1 × 100 / 1.
        await clock.set(10);
        await limiter.run(() => clock.set(110));
        equal(limiter.estimatedWaitMs(), 100);
        let release;
        const order = [];
        const first = limiter.run(() => new Promise((r) => (release = r)));
        const second = limiter.run(() => order.push("second"), { remainingMs: 150 });
        // Position 2 waits about 200 ms: 150 does not cover it.
        let called = false;
        await rejects(limiter.run(() => (called = true), { remainingMs: 150 }), lib.Overloaded, /slots are in use/);
        equal(called, false, "shed at once, never started");
        const third = limiter.run(() => order.push("third"));
        await rejects(limiter.run(() => (called = true)), lib.Overloaded, /slots are in use/, "the queue is full");
        equal(limiter.queued, 2);
        equal(limiter.shed, 2);
        equal(limiter.tryAcquire(), undefined, "waiting callers go first");
        ok(String(limiter).includes("2 queued"), String(limiter));
        release("first");
        equal(await first, "first");
        await Promise.all([second, third]);
        equal(order.join(), "second,third", "in order");
        equal(limiter.queued, 0);
        equal(limiter.inFlight, 0);
        // Without maxQueue nothing waits, whatever the budget.
        const plain = new lib.ConcurrencyLimiter({ limit: "aimd", minLimit: 1, initialLimit: 1 });
        const held = plain.run(() => new Promise((r) => (release = r)));
        await rejects(plain.run(() => 1, { remainingMs: 1e9 }), lib.Overloaded);
        release();
        await held;
        // Bad run options name the option.
        const e = await rejects(limiter.run(() => 1, { signal: "x" }), TypeError, /'opts.signal' must be an AbortSignal/);
        equal(e.param, "opts.signal");
        await rejects(limiter.run(() => 1, { deadline: {} }), TypeError, /'opts.deadline' must be a Deadline/);
        await rejects(limiter.run(() => 1, { remainingMs: "5" }), TypeError, /'opts.remainingMs' must be a number/);
        await rejects(limiter.run(() => 1, 5), TypeError, /'opts' must be an object/);
      } finally {
        clock.restore();
      }
    },
  },
  {
    name: "limiter: a queued caller whose remainingMs ran out before its turn is shed, its function never called",
    run: async (lib) => {
      const clock = await manualClock();
      try {
        const limiter = new lib.ConcurrencyLimiter({ limit: 1, maxQueue: 2 });
        await clock.set(10);
        await limiter.run(() => clock.set(110)); // a round trip of 100 ms: the next in line waits about 100
        let release;
        const first = limiter.run(() => new Promise((r) => (release = r)));
        let called = false;
        const late = limiter.run(() => (called = true), { remainingMs: 150 });
        const patient = limiter.run(() => "patient", { remainingMs: 1_000 });
        for (let i = 0; i < 3; i++) await null; // admitted one microtask later
        equal(limiter.queued, 2, "both budgets covered the estimated wait");
        await clock.set(110 + 400); // the first call holds its slot for 400 ms
        release("first");
        equal(await first, "first");
        await rejects(late, lib.Overloaded, /slots are in use/);
        equal(called, false, "its budget was spent waiting: never started");
        equal(await patient, "patient", "a budget that still covers the call takes the slot");
        equal(limiter.shed, 1);
        equal(limiter.queued, 0);
        equal(limiter.inFlight, 0);
      } finally {
        clock.restore();
      }
    },
  },
  {
    name: "limiter: a queued caller whose signal aborts or whose deadline passes leaves the queue; no listener stays",
    run: async (lib) => {
      const time = installFakeTime();
      try {
        const limiter = new lib.ConcurrencyLimiter({ limit: 1, maxQueue: 3, now: time.now });
        let release;
        const held = limiter.run(() => new Promise((r) => (release = r)));
        const a = countedSignal();
        const b = countedSignal();
        const started = [];
        const byA = limiter.run(() => started.push("a"), { signal: a.signal });
        const byDeadline = limiter.run(() => started.push("deadline"), { deadline: lib.Deadline.in(50) });
        const byB = limiter.run(() => started.push("b"), { signal: b.signal });
        await time.advance(0);
        equal(limiter.queued, 3);
        equal(a.listeners(), 1);
        const reason = new Error("caller gave up");
        a.controller.abort(reason);
        equal(await rejects(byA, Error, /caller gave up/), reason, "rejected with the signal's reason");
        equal(a.listeners(), 0, "its listener is gone");
        equal(limiter.queued, 2);
        await time.advance(50);
        await rejects(byDeadline, lib.DeadlineExceeded);
        equal(limiter.queued, 1, "the deadline's caller left at its instant");
        release("done");
        await held;
        await byB;
        equal(started.join(), "b", "only the caller still waiting ran");
        equal(b.listeners(), 0, "a caller that started leaves no listener");
        equal(limiter.inFlight, 0);
        // An already aborted signal never waits nor runs.
        const c = countedSignal();
        c.controller.abort(new Error("already"));
        await rejects(limiter.run(() => started.push("c"), { signal: c.signal }), Error, /already/);
        equal(c.listeners(), 0);
        equal(started.join(), "b");
      } finally {
        time.restore();
      }
    },
  },
];

export default cases;
