// Circuit breaker cases: the same file runs in Node, Deno, workerd and Chromium.
// Time is fake where it is the subject (the breaker reads the package's clock).
import { glue } from "../../../pkg/derive-main.js";
import { equal, ok, rejects, throws, throwsArg } from "../assert.js";
import { installFakeTime } from "../fake-time.js";

const fail = () => Promise.reject(new Error("upstream 503"));

const cases = [
  {
    name: "breaker: what crosses is named: an outcome is a core.CallOutcome, what an error shows a core.Found flag, a key's slot a plain slot with evicted() saying whether it replaced a key",
    run: (lib) => {
      new lib.CircuitBreaker().dispose(); // loads the derive module where it loads on first use
      const { CallOutcome, Found } = glue;
      ok(CallOutcome !== undefined && Found !== undefined, "core.CallOutcome, core.Found");
      equal(glue.breakerErrorOutcome(Found.Timeout | Found.Shed), CallOutcome.Timeout, "a timeout, whatever else");
      for (const flag of ["Shed", "CircuitOpen", "CallerLeft", "NotStarted"]) {
        equal(glue.breakerErrorOutcome(Found[flag]), CallOutcome.Cancelled, `${flag}: not the dependency's outcome`);
      }
      equal(glue.breakerErrorOutcome(0), CallOutcome.Failure, "anything else");
      const b = new glue.BreakerCore({ consecutiveFailures: 1, maxKeys: 2 });
      try {
        equal(b.key("a", 0), 0);
        equal(b.evicted(), false);
        equal(b.key("b", 1), 1);
        equal(b.evicted(), false);
        equal(b.key("c", 2), 0, "the least recently used slot, as a slot");
        equal(b.evicted(), true);
        equal(b.key("c", 3), 0);
        equal(b.evicted(), false, "found, not made");
        b.check(1, 4);
        ok(b.record(1, 5, false, CallOutcome.Failure, 1, NaN) !== undefined, "a failure opens the key");
      } finally {
        b.free();
      }
    },
  },
  {
    name: "breaker: opens after failures in a row, refuses with CircuitOpen until openMs, then one probe closes it",
    run: async (lib) => {
      const clock = installFakeTime();
      const events = [];
      const b = new lib.CircuitBreaker({ consecutiveFailures: 3, openMs: 1_000, onStateChange: (e) => events.push(e) });
      try {
        for (let i = 0; i < 3; i++) await rejects(b.run("llm", fail), Error, /upstream 503/);
        equal(b.state("llm"), "open");
        equal(events.length, 1);
        equal(JSON.stringify(events[0]), JSON.stringify({ key: "llm", from: "closed", to: "open", reason: "consecutive-failures", at: clock.now() }));
        let called = false;
        await clock.advance(400);
        const e = await rejects(b.run("llm", () => (called = true)), lib.CircuitOpen, /^circuit 'llm' is open: calls fail at once until it lets a probe through in 600 ms$/);
        equal(called, false, "a refused call is never made");
        ok(lib.isCircuitOpen(e));
        equal(lib.isTimeout(e), false, "an open breaker is not a timeout");
        equal(e.key, "llm");
        equal(e.state, "open");
        equal(e.retryInMs, 600);
        equal(e.retryAt, clock.now() + 600);
        equal(b.state("other"), "closed", "keys are independent");
        equal(await b.run("other", () => "fine"), "fine");
        await clock.advance(600);
        equal(b.state("llm"), "half-open", "past its instant, a call would be a probe");
        const probe = b.run("llm", () => clock.sleep(50).then(() => "back"));
        equal(events[1].to, "half-open");
        const second = await rejects(b.run("llm", () => "no"), lib.CircuitOpen);
        equal(second.state, "half-open");
        equal(second.retryInMs, 1_000, "a probe is out: the next may go once it is overdue");
        await clock.advance(50);
        equal(await probe, "back");
        equal(b.state("llm"), "closed");
        equal(events.map((x) => `${x.from}>${x.to}`).join(" "), "closed>open open>half-open half-open>closed");
      } finally {
        b.dispose();
        clock.restore();
      }
    },
  },
  {
    name: "breaker: a failed or slow probe reopens it; slow calls over their step's timeout open it by rate",
    run: async (lib) => {
      const clock = installFakeTime();
      const events = [];
      const b = new lib.CircuitBreaker({ consecutiveFailures: 0, minimumCalls: 4, windowSize: 4, slowCallRate: 0.5, openMs: 100, onStateChange: (e) => events.push(e) });
      try {
        const took = (ms) => () => clock.sleep(ms).then(() => ms);
        for (const ms of [10, 300, 10]) {
          const p = b.run("db", took(ms), { slowMs: 200 });
          await clock.advance(ms);
          equal(await p, ms);
        }
        equal(b.stats("db").slowCalls, 1);
        const p = b.run("db", took(250), { slowMs: 200 });
        await clock.advance(250);
        equal(await p, 250, "a slow call still answers");
        equal(events.at(-1).reason, "slow-call-rate");
        await clock.advance(100);
        const probe = b.run("db", took(201), { slowMs: 200 });
        await clock.advance(201);
        await probe;
        equal(events.at(-1).reason, "probe-failed", "a slow probe reopens");
        equal(b.state("db"), "open");
      } finally {
        b.dispose();
        clock.restore();
      }
    },
  },
  {
    name: "breaker: the failure rate counts over a time window once minimumCalls are in",
    run: async (lib) => {
      const clock = installFakeTime();
      const b = new lib.CircuitBreaker({ consecutiveFailures: 0, windowMs: 1_000, minimumCalls: 4, failureRate: 0.5 });
      try {
        await rejects(b.run("k", fail), Error);
        await rejects(b.run("k", fail), Error);
        await clock.advance(1_500);
        equal(b.stats("k").calls, 0, "the window forgot them");
        await b.run("k", () => 1);
        await b.run("k", () => 1);
        await rejects(b.run("k", fail), Error);
        equal(b.state("k"), "closed", "3 calls are below minimumCalls");
        await rejects(b.run("k", fail), Error);
        equal(b.state("k"), "open", "2 of 4 failed");
      } finally {
        b.dispose();
        clock.restore();
      }
    },
  },
  {
    name: "breaker: permits record once; run records a synchronous throw; isFailure decides and is checked",
    run: async (lib) => {
      const b = new lib.CircuitBreaker({ consecutiveFailures: 2, isFailure: (e) => (e.message === "bad" ? "yes" : e.message !== "404") });
      try {
        const permit = b.acquire("a");
        equal(permit.probe, false);
        permit.failure();
        permit.failure();
        permit.success();
        equal(b.stats("a").consecutiveFailures, 1, "a permit records once");
        await rejects(
          b.run("a", () => {
            throw new Error("404");
          }),
          Error,
          /404/,
        );
        equal(b.stats("a").consecutiveFailures, 0, "isFailure said a 404 is not the upstream's failure");
        const e = await rejects(b.run("a", () => Promise.reject(new Error("bad"))), TypeError, /'options.isFailure' must return true or false: it returned "yes"/);
        equal(e.param, "options.isFailure");
        equal(e.cause.message, "bad");
        equal(b.stats("a").consecutiveFailures, 1, "a bad verdict counts as a failure");
      } finally {
        b.dispose();
      }
    },
  },
  {
    name: "breaker: a permit's timeout is a slow failure; cancel counts nothing and frees a probe; for(key) is one key",
    run: async (lib) => {
      const clock = installFakeTime();
      const b = new lib.CircuitBreaker({ consecutiveFailures: 2, openMs: 100 });
      try {
        const llm = b.for("llm");
        equal(llm.key, "llm");
        equal(llm.breaker, b);
        llm.acquire().cancel();
        equal(llm.stats().calls, 0, "a cancelled call is not counted");
        llm.acquire().timeout();
        equal(JSON.stringify([llm.stats().failures, llm.stats().slowCalls]), "[1,1]");
        llm.acquire().failure();
        equal(llm.state(), "open");
        await clock.advance(100);
        const probe = llm.acquire();
        ok(probe.probe);
        await rejects(b.run("llm", () => 1), lib.CircuitOpen, /open/);
        probe.cancel();
        const again = llm.acquire();
        ok(again.probe, "the cancelled probe's permit is free again");
        again.success();
        equal(llm.state(), "closed");
        throwsArg(() => b.for(1), TypeError, "key", "INVALID_TYPE");
        throwsArg(() => b.acquire("llm", { slowMs: "5" }), TypeError, "options.slowMs", "INVALID_TYPE");
      } finally {
        b.dispose();
        clock.restore();
      }
    },
  },
  {
    name: "breaker + plan: requests whose deadline is too short for a mandatory step (InsufficientBudget: the call never started) keep a healthy key closed",
    run: async (lib) => {
      const clock = installFakeTime();
      const b = new lib.CircuitBreaker({ consecutiveFailures: 3, openMs: 1_000 });
      let reached = 0;
      try {
        for (let i = 0; i < 6; i++) {
          const d = lib.Deadline.in(50); // a caller with little time left
          const p = lib.plan(d, [{ name: "generate", minMs: 200, kind: "mandatory" }]);
          await rejects(b.run("model", () => p.run("generate", () => reached++)), lib.InsufficientBudget);
          d.dispose();
        }
        equal(reached, 0, "no call reached the dependency");
        equal(b.state("model"), "closed", "short deadlines are not the dependency's failures");
        equal(b.stats("model").calls, 0, "nothing was counted");
        for (let i = 0; i < 3; i++) await b.run("model", fail).catch(() => {});
        equal(b.state("model"), "open", "real failures still open it");
      } finally {
        b.dispose();
        clock.restore();
      }
    },
  },
  {
    name: "breaker + limiter: breaker.run(() => limiter.run(call)) with a saturated limiter stays closed; shed calls, an inner CircuitOpen and callers that left count nothing",
    run: async (lib) => {
      const clock = installFakeTime();
      const b = new lib.CircuitBreaker({ consecutiveFailures: 5, openMs: 1_000 });
      const inner = new lib.CircuitBreaker({ consecutiveFailures: 1, openMs: 60_000 });
      const limiter = new lib.ConcurrencyLimiter({ limit: 1 });
      let release;
      const held = limiter.run(() => new Promise((resolve) => (release = resolve)));
      try {
        // The reproduction: every call shed by a full limiter.
        for (let i = 0; i < 10; i++) await rejects(b.run("dep", () => limiter.run(() => "never")), lib.Overloaded);
        equal(b.state("dep"), "closed", "shed calls never reached the dependency");
        equal(JSON.stringify([b.stats("dep").consecutiveFailures, b.stats("dep").calls]), "[0,0]");
        // An inner breaker's refusal is another key's evidence, not this key's.
        await inner.run("x", fail).catch(() => {});
        for (let i = 0; i < 5; i++) await rejects(b.run("dep", () => inner.run("x", () => "no")), lib.CircuitOpen);
        equal(b.state("dep"), "closed", "an inner CircuitOpen is not a failure");
        // Five clients leave: the fetch rejects with their abort (an AbortError).
        for (let i = 0; i < 5; i++) {
          const client = new AbortController();
          client.abort();
          await rejects(b.run("dep", () => Promise.reject(client.signal.reason)), Error, /abort/i);
        }
        equal(b.state("dep"), "closed", "five departures keep a healthy key closed");
        // A reason of the caller's own making is told by the signal passed to run.
        for (let i = 0; i < 5; i++) {
          const client = new AbortController();
          client.abort(new Error("client went away"));
          await rejects(b.run("dep", () => Promise.reject(client.signal.reason), { signal: client.signal }), Error, /went away/);
        }
        equal(b.stats("dep").calls, 0, "nothing was counted");
        // Our own deadline passing is a timeout: the dependency was too slow.
        const d = lib.Deadline.in(10);
        await clock.advance(10);
        await rejects(b.run("dep", () => Promise.reject(d.signal().reason), { signal: d.signal() }), lib.DeadlineExceeded);
        equal(JSON.stringify([b.stats("dep").failures, b.stats("dep").slowCalls]), "[1,1]", "a timeout is a slow failure");
        d.dispose();
        for (let i = 0; i < 4; i++) await b.run("dep", fail).catch(() => {});
        equal(b.state("dep"), "open", "real failures still open it");
        // Half-open: a shed probe neither closes nor reopens the key, and frees its permit.
        await clock.advance(1_000);
        await rejects(b.run("dep", () => limiter.run(() => "never")), lib.Overloaded);
        equal(b.state("dep"), "half-open", "a shed probe is no success");
        const probe = b.acquire("dep");
        ok(probe.probe, "the shed probe's permit is free again");
        probe.failure(new DOMException("The operation was aborted.", "AbortError"));
        ok(b.acquire("dep").probe, "a probe whose caller left frees its permit too");
      } finally {
        release("done");
        await held;
        b.dispose();
        inner.dispose();
        clock.restore();
      }
    },
  },
  {
    name: "breaker + retry: no attempt goes into an open breaker; the retry waits for a probe when the deadline allows, else fails at once with circuit-open",
    run: async (lib) => {
      const clock = installFakeTime();
      const b = new lib.CircuitBreaker({ consecutiveFailures: 2, openMs: 1_000 });
      const deadlines = [];
      try {
        const llm = b.for("llm");
        let calls = 0;
        const down = () => (calls++, Promise.reject(Object.assign(new Error("503"), { failure: "not-applied" })));
        const d1 = lib.Deadline.in(500);
        deadlines.push(d1);
        const first = lib.retry(down, { deadline: d1, circuit: llm, attemptMinMs: 50, backoff: { baseMs: 10, maxMs: 10, jitter: 0 }, maxAttempts: 5 });
        await clock.advance(50);
        const e1 = await rejects(first, lib.RetryFailed);
        equal(calls, 2, "the breaker opened after two failures; no third attempt went into it");
        equal(e1.reason, "circuit-open");
        ok(lib.isCircuitOpen(e1), "the stop's cause is the breaker's refusal");
        equal(lib.isTimeout(e1), false);
        equal(e1.attempts.length, 2);
        // A short deadline fails at once, without waiting.
        const d2 = lib.Deadline.in(300);
        deadlines.push(d2);
        const t0 = clock.now();
        const e2 = await rejects(lib.retry(down, { deadline: d2, circuit: llm, attemptMinMs: 50 }), lib.RetryFailed);
        equal(clock.now(), t0, "no wait");
        equal(e2.reason, "circuit-open");
        equal(e2.attempts.length, 0);
        ok(/the circuit breaker lets no call through for \d+ ms/.test(e2.message), e2.message);
        equal(calls, 2);
        // A deadline past the half-open instant waits for the probe, which answers.
        const d3 = lib.Deadline.in(5_000);
        deadlines.push(d3);
        const waited = lib.retry(() => (calls++, Promise.resolve("up")), { deadline: d3, circuit: llm, attemptMinMs: 50 });
        await clock.advance(1_000);
        equal(await waited, "up");
        equal(calls, 3);
        equal(llm.state(), "closed", "the probe's success closed it");
        // An attempt cut at its timeout is a slow failure for the breaker.
        const d4 = lib.Deadline.in(5_000);
        deadlines.push(d4);
        const hang = lib.retry(() => new Promise(() => {}), { deadline: d4, circuit: llm, attemptTimeoutMs: 100, maxAttempts: 1 });
        await clock.advance(100);
        await rejects(hang, lib.RetryFailed);
        equal(JSON.stringify([llm.stats().failures, llm.stats().slowCalls]), "[1,1]");
        await rejects(lib.retry(down, { deadline: d4, circuit: {} }), TypeError, /'options.circuit'/);
      } finally {
        for (const d of deadlines) d.dispose();
        b.dispose();
        clock.restore();
      }
    },
  },
  {
    name: "breaker + plan: a refused optional step is skipped and a mandatory one rejects with CircuitOpen, the fallback still runs; a step cut at its cap is a slow failure",
    run: async (lib) => {
      const clock = installFakeTime();
      const b = new lib.CircuitBreaker({ consecutiveFailures: 1, openMs: 10_000 });
      const d = lib.Deadline.in(2_000);
      try {
        const p = lib.plan(d, [
          { name: "search", minMs: 10, preferredMs: 100, kind: "optional" },
          { name: "generate", minMs: 10, preferredMs: 200, kind: "mandatory" },
          { name: "fallback", minMs: 10, kind: "fallback" },
        ]);
        const search = b.for("search");
        const generate = b.for("generate");
        // A search that hangs is cut at its cap: a timeout for the breaker, which opens.
        const first = p.run("search", () => new Promise(() => {}), { circuit: search });
        await clock.advance(100);
        await rejects(first, lib.StepTimeout);
        equal(search.state(), "open");
        let ran = false;
        const skipped = await p.run("search", () => (ran = true), { circuit: search });
        ok(lib.isSkipped(skipped), "a refused optional step is skipped");
        equal(skipped.reason, "its circuit breaker is open (its dependency is failing) and lets a probe through in 10000 ms");
        equal(ran, false);
        await rejects(p.run("generate", () => Promise.reject(new Error("500")), { circuit: generate }), Error, /500/);
        const e = await rejects(p.run("generate", () => (ran = true), { circuit: generate }), lib.CircuitOpen);
        equal(e.step, "generate");
        equal(ran, false);
        equal(await p.run("fallback", () => "sorry"), "sorry", "the fallback runs");
        await rejects(p.run("fallback", () => "x", { circuit: search }), TypeError, /'options.circuit' cannot guard the fallback step 'fallback'/);
        await rejects(p.run("search", () => 1, { circuit: 5 }), TypeError, /'options.circuit'/);
        equal(p.records.map((r) => r.outcome).join(), "timeout,skipped,error,error,ok");
      } finally {
        d.dispose();
        b.dispose();
        clock.restore();
      }
    },
  },
  {
    name: "breaker: onStateChange that throws is reported and changes nothing",
    run: async (lib) => {
      const seen = [];
      const original = console.error;
      console.error = (...args) => seen.push(args);
      const b = new lib.CircuitBreaker({
        consecutiveFailures: 1,
        onStateChange: () => {
          throw new Error("listener broke");
        },
      });
      try {
        await rejects(b.run("x", fail), Error, /upstream 503/);
        equal(b.state("x"), "open");
        equal(seen.length, 1);
        equal(seen[0][1].message, "listener broke");
      } finally {
        console.error = original;
        b.dispose();
      }
    },
  },
  {
    name: "breaker: maxKeys bounds the keys; the least recently used is forgotten",
    run: async (lib) => {
      const clock = installFakeTime();
      const b = new lib.CircuitBreaker({ consecutiveFailures: 1, maxKeys: 2 });
      try {
        await rejects(b.run("a", fail), Error);
        await clock.advance(1);
        await b.run("b", () => 1);
        await clock.advance(1);
        await b.run("c", () => 1);
        equal(b.keys().sort().join(","), "b,c", "a was least recently used");
        equal(b.state("a"), "closed", "a new key starts closed");
        equal(b.keys().sort().join(","), "a,c");
      } finally {
        b.dispose();
        clock.restore();
      }
    },
  },
  {
    name: "breaker: exportState/importState share open keys through storage; foreign bytes are refused and change nothing",
    run: async (lib) => {
      const clock = installFakeTime();
      const a = new lib.CircuitBreaker({ consecutiveFailures: 1, openMs: 5_000 });
      const events = [];
      const b = new lib.CircuitBreaker({ openMs: 5_000, onStateChange: (e) => events.push(e) });
      try {
        await rejects(a.run("llm", fail), Error);
        await a.run("kv", () => 1);
        await clock.advance(1_000);
        const bytes = a.exportState();
        ok(bytes instanceof Uint8Array);
        b.importState(bytes);
        equal(b.state("llm"), "open");
        equal(b.state("kv"), "closed");
        equal(JSON.stringify(events.map((e) => [e.key, e.to, e.reason])), JSON.stringify([["llm", "open", "imported"]]));
        const e = await rejects(b.run("llm", () => 1), lib.CircuitOpen);
        ok(Math.abs(e.retryInMs - 4_000) <= 50, `about 4 000 ms left, not ${e.retryInMs}`);
        const before = JSON.stringify([b.keys(), b.stats("llm")]);
        for (const bad of [new Uint8Array(0), bytes.subarray(0, bytes.length - 1), new Uint8Array([...bytes, 0]), new TextEncoder().encode("EDCB garbage")]) {
          throwsArg(() => b.importState(bad), RangeError, "bytes", "BAD_STATE", /^'bytes' is not a circuit breaker's exported state/);
        }
        throwsArg(() => b.importState("EDCB"), TypeError, "bytes", "INVALID_TYPE");
        equal(JSON.stringify([b.keys(), b.stats("llm")]), before);
      } finally {
        a.dispose();
        b.dispose();
        clock.restore();
      }
    },
  },
  {
    name: "breaker: an import of 1 000 open keys never evicts, closes or shortens a key open here; an import past 16 MiB is refused and changes nothing",
    run: async (lib) => {
      const clock = installFakeTime();
      const a = new lib.CircuitBreaker({ consecutiveFailures: 1, openMs: 60_000 });
      const b = new lib.CircuitBreaker({ consecutiveFailures: 1, openMs: 60_000 });
      try {
        await rejects(b.run("llm", fail), Error);
        await b.run("kv", () => 1);
        await clock.advance(10);
        for (let i = 0; i < 1_000; i++) await rejects(a.run(`k${i}`, fail), Error);
        b.importState(a.exportState());
        const e = await rejects(b.run("llm", () => "reached the failing dependency"), lib.CircuitOpen);
        ok(e.retryInMs > 59_000, `llm keeps its own time left, not ${e.retryInMs}`);
        equal(b.keys().length, 1_000);
        ok(!b.keys().includes("kv"), "a closed key made room");
        equal(b.state("k5"), "open");
        const before = JSON.stringify([b.keys(), b.stats("llm")]);
        const huge = new Uint8Array(16 * 1024 * 1024 + 1);
        huge.set(a.exportState().subarray(0, 17));
        throwsArg(() => b.importState(huge), RangeError, "bytes", "BAD_STATE", /larger than 16 MiB/);
        equal(JSON.stringify([b.keys(), b.stats("llm")]), before);
      } finally {
        a.dispose();
        b.dispose();
        clock.restore();
      }
    },
  },
  {
    name: "breaker: bad options and arguments are TypeErrors or RangeErrors naming them; a disposed breaker throws",
    run: async (lib) => {
      throwsArg(() => new lib.CircuitBreaker({ failureRate: 2 }), RangeError, "options.failureRate", "OUT_OF_RANGE", /'failureRate' must be greater than 0 and at most 1/);
      throwsArg(() => new lib.CircuitBreaker({ consecutiveFailures: 1.5 }), RangeError, "options.consecutiveFailures", "NOT_WHOLE");
      throwsArg(() => new lib.CircuitBreaker({ windowSize: 10, windowMs: 1_000 }), RangeError, "options.windowMs", "CONFLICT");
      throwsArg(() => new lib.CircuitBreaker({ openMs: "10s" }), TypeError, "options.openMs", "INVALID_TYPE");
      throwsArg(() => new lib.CircuitBreaker({ onStateChange: 1 }), TypeError, "options.onStateChange", "INVALID_TYPE");
      throwsArg(() => new lib.CircuitBreaker(5), TypeError, "options", "INVALID_TYPE");
      const b = new lib.CircuitBreaker();
      // A call still running at dispose() keeps its result.
      let answer;
      const running = b.run("k", () => new Promise((resolve) => (answer = resolve)));
      b.dispose();
      answer("value");
      equal(await running, "value");
      const b2 = new lib.CircuitBreaker();
      b2.dispose();
      throws(() => b2.acquire("k"), Error, /disposed/);
      throwsArg(() => new lib.CircuitBreaker().acquire(42), TypeError, "key", "INVALID_TYPE");
      await rejects(b.run("k", "not a function"), TypeError, /'fn'/);
      await rejects(b.run("k", () => 1, { slowMs: "1" }), TypeError, /'options.slowMs'/);
      b.dispose();
      b.dispose();
      throws(() => b.acquire("k"), Error, /disposed/);
    },
  },
];

export default cases;
