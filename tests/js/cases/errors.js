// isTimeout across the package's own errors and the wrappers SDKs put around
// them. The same file runs in Node, Deno, workerd and Chromium.
import { equal, ok, rejects, throws } from "../assert.js";
import { installFakeTime } from "../fake-time.js";
// compile is internal: the bundle unit every entry shares exports it (scripts/bundle.mjs).
import { compile } from "../../../pkg/shared.js";

/** An SDK-style wrapper: its own class, our error as `cause`. */
class ConnectionError extends Error {
  constructor(cause) {
    super("Connection error.");
    this.name = "APIConnectionError";
    this.cause = cause;
  }
}

const cases = [
  {
    name: "isTimeout: true for every time-based error of the package, directly or anywhere in a cause chain",
    run: async (lib) => {
      const d = lib.Deadline.in(0);
      const signal = d.signal();
      if (!signal.aborted) await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
      const exceeded = signal.reason;
      d.dispose();
      const stalled = new lib.StreamStalled("stall", 100, 1, 1);
      const timeouts = {
        DeadlineExceeded: exceeded,
        StepTimeout: new lib.StepTimeout("generate", 100),
        AttemptTimeout: new lib.AttemptTimeout(1, 100),
        StreamStalled: stalled,
        "DOMException TimeoutError": new DOMException("signal timed out", "TimeoutError"),
        "RetryFailed whose last attempt timed out": new lib.RetryFailed("exhausted", "m", [], { cause: new lib.AttemptTimeout(3, 10) }),
      };
      for (const [name, e] of Object.entries(timeouts)) {
        equal(lib.isTimeout(e), true, name);
        equal(lib.isTimeout(new ConnectionError(e)), true, `${name} wrapped once`);
        equal(lib.isTimeout(new Error("outer", { cause: new ConnectionError(e) })), true, `${name} wrapped twice`);
      }
      // A copy of the error (another package copy, workerd's clone) keeps the brand.
      equal(lib.isTimeout({ ...exceeded, name: "DeadlineExceeded" }), true, "a branded copy");
    },
  },
  {
    name: "isTimeout: false for shortages, aborts and other failures; a cycle in the cause chain ends the walk",
    run: async (lib) => {
      const cyclic = new Error("a");
      cyclic.cause = new Error("b", { cause: cyclic });
      const others = [
        undefined, null, "timeout", 42, {},
        new Error("timed out"), // words are not a brand
        new lib.InsufficientBudget(10, 100),
        new lib.InvalidHeader("grpc-timeout", "bad"),
        new DOMException("aborted", "AbortError"),
        new ConnectionError(new TypeError("fetch failed")),
        new lib.RetryFailed("permanent", "m", [], { cause: new Error("400") }),
        cyclic,
      ];
      others.forEach((e, i) => equal(lib.isTimeout(e), false, `value ${i}`));
    },
  },
  {
    name: "isTimeout never throws: a Proxy whose traps throw, throwing getters and a revoked Proxy answer false; a timeout before them still answers true",
    run: (lib) => {
      const boom = () => {
        throw new Error("trap");
      };
      const trapping = new Proxy({}, { get: boom, getPrototypeOf: boom, has: boom });
      const { proxy: revoked, revoke } = Proxy.revocable({}, {});
      revoke();
      const getters = Object.defineProperties({}, { name: { get: boom }, cause: { get: boom } });
      const causeThrows = Object.defineProperty(new Error("outer"), "cause", { get: boom });
      const signalThrows = Object.defineProperties({}, { aborted: { get: boom }, reason: { get: boom } });
      const reasonThrows = Object.defineProperties({}, { aborted: { value: true }, reason: { get: boom } });
      const values = [trapping, revoked, getters, causeThrows, new Error("wrapper", { cause: revoked }), new Error("wrapper", { cause: trapping })];
      values.forEach((v, i) => equal(lib.isTimeout(v), false, `value ${i}`));
      equal(lib.isTimeout(new Error("x"), signalThrows), false, "a signal whose getters throw");
      equal(lib.isTimeout(new Error("x"), reasonThrows), false, "a signal whose reason throws");
      equal(lib.isTimeout(new Error("x"), revoked), false, "a revoked Proxy as the signal");
      const exceeded = new lib.DeadlineExceeded(1, 2);
      equal(lib.isTimeout(new Error("wrapper", { cause: Object.defineProperty(exceeded, "cause", { get: boom }) })), true, "a timeout found before the throwing link");
    },
  },
  {
    name: "isTimeout(e, signal): an SDK error that drops the cause still answers from the signal's reason",
    run: async (lib) => {
      const userAbort = Object.assign(new Error("Request was aborted."), { name: "APIUserAbortError" });
      const d = lib.Deadline.in(0);
      const signal = d.signal();
      await new Promise((resolve) => (signal.aborted ? resolve() : signal.addEventListener("abort", resolve, { once: true })));
      equal(lib.isTimeout(userAbort), false, "alone, nothing says it was time");
      equal(lib.isTimeout(userAbort, signal), true, "the signal aborted with DeadlineExceeded");
      const left = new AbortController();
      left.abort(new Error("the client left"));
      equal(lib.isTimeout(userAbort, left.signal), false, "a client that left is not a timeout");
      equal(lib.isTimeout(userAbort, new AbortController().signal), false, "a signal that did not abort");
      d.dispose();
    },
  },
];

// ---- one wording per message -----------------------------------------------------------------

cases.push(
  {
    name: "errors: the core's messages are filled in JS from its templates, numbers as JavaScript prints them",
    run: (lib) => {
      const max = Number.MAX_SAFE_INTEGER;
      const cases = [
        [() => lib.Deadline.in(Infinity), `'ms' must be a finite number of milliseconds between 0 and ${max}: current value is Infinity`],
        [() => lib.Deadline.in(1e300), `'ms' must be between 0 and ${max} milliseconds (2^53 - 1): current value is 1e+300`],
        [() => lib.Deadline.in(-1.5), `'ms' must be between 0 and ${max} milliseconds: current value is -1.5`],
      ];
      for (const [call, message] of cases) {
        const e = throws(call, RangeError);
        equal(e.message, message);
        ok(!/[{}]/.test(e.message), "no hole is left unfilled");
      }
    },
  },
  {
    name: "errors: DeadlineExceeded and InsufficientBudget raised by the core read exactly as the ones made in JS with the same numbers",
    run: async (lib) => {
      const clock = installFakeTime();
      try {
        const t = clock.now();
        // Late by a whole, a fractional, an exact-tie (x.25) and no amount at all.
        for (const late of [3, 2.625, 0.25, 12.75, 0]) {
          const e = throws(() => lib.Deadline.at(t - late).budget(10), lib.DeadlineExceeded);
          equal(e.lateByMs, late, "lateByMs");
          equal(e.message, new lib.DeadlineExceeded(e.at, e.lateByMs).message, `late by ${late}`);
          ok(e.message.startsWith("deadline exceeded: "), e.message);
        }
        // Raised by the core (step's admission) and by the JS API's own timer path.
        for (const [left, min] of [[12.25, 100], [43.125, 50], [7, 7.5]]) {
          const e = await rejects(lib.Deadline.in(left).step(min, () => "ran"), lib.InsufficientBudget);
          equal(e.remainingMs, left);
          equal(e.message, new lib.InsufficientBudget(left, min).message, `${left} of ${min}`);
          ok(e.message.startsWith("insufficient budget: "), e.message);
        }
        const d = lib.Deadline.in(5);
        const signal = d.signal();
        await clock.advance(5);
        equal(signal.reason.message, "deadline exceeded: no time is left", "the timer's own DeadlineExceeded");
      } finally {
        clock.restore();
      }
    },
  },
  {
    name: "errors: every bad argument the deadline and stall APIs reject carries .param and .code as own enumerable fields",
    run: (lib) => {
      const e = throws(() => lib.Deadline.in(-1), RangeError);
      ok(Object.keys(e).includes("param") && Object.keys(e).includes("code"), `own keys: ${Object.keys(e)}`);
      // A structured clone (a worker's postMessage, workerd's abort reasons) keeps them.
      const copy = { ...e };
      equal(copy.param, "ms");
      equal(copy.code, "NEGATIVE");
    },
  },
  {
    name: "brand: a Deadline from a second copy of the module is accepted where a Deadline goes; a look-alike is not",
    run: async (lib, ctx) => {
      // A second copy: the package's main module imported under another URL (where the
      // runtime allows it), with a Wasm instance of its own, as when two versions of
      // the package are installed; and a Deadline of another version, which shares only
      // the brand and the public methods.
      let copy;
      try {
        copy = await import(new URL(`../../../pkg/main.js?copy=${Date.now()}`, import.meta.url).href);
      } catch {
        copy = undefined; // workerd at older compatibility dates serves only the modules its config names
      }
      // Bun keys a module by its path, not its URL: the query string gives back this copy, so there
      // is no second copy to make this way (the look-alike below is still checked).
      if (copy?.Deadline === lib.Deadline) copy = undefined;
      const foreign = [];
      if (copy) {
        // Workers are handed the compiled module (they compile nothing at run time);
        // Node and Deno read the file: URL (their fetch does not); browsers fetch it.
        const wasm = ctx.wasmModule ?? new URL("../../../pkg/edge_deadline_bg.wasm", import.meta.url);
        await copy.initFrom(wasm, (source) => compile(source, async (file) => (await import("node:fs/promises")).readFile(file)));
        ok(copy.Deadline !== lib.Deadline, "the query string gave a second copy of the class");
        foreign.push(copy.Deadline.in(10_000));
      }
      const controller = new AbortController();
      foreign.push({ [Symbol.for("edge-deadline.Deadline")]: true, at: performance.now() + 10_000, signal: () => controller.signal, remaining: () => 10_000 });
      for (const d of foreign) {
        ok(!(d instanceof lib.Deadline), "not an instance of this copy's class");
        const earliest = lib.Deadline.min(lib.Deadline.in(60_000), d);
        equal(earliest.at, d.at, "Deadline.min took the other copy's instant");
        const body = lib.withStallTimeout(new ReadableStream(), { firstChunkMs: 1_000, stallMs: 1_000, deadline: d });
        const reader = body.getReader();
        const read = reader.read().catch((e) => e);
        d.signal().addEventListener("abort", () => {}, { once: true });
        earliest.dispose();
        await reader.cancel("done");
        equal((await read).done, true);
      }
      // The other version's signal is followed: its abort reaches a deadline derived here.
      const linked = lib.Deadline.min(lib.Deadline.in(60_000), foreign.at(-1));
      controller.abort(new Error("the other copy's client left"));
      equal(linked.signal().reason.message, "the other copy's client left");
      linked.dispose();
      const lookAlike = { at: 1, signal: () => new AbortController().signal };
      throws(() => lib.withStallTimeout(new ReadableStream(), { firstChunkMs: 1, stallMs: 1, deadline: lookAlike }), TypeError, /'options.deadline' must be a Deadline/);
    },
  },
  {
    name: "brand: RetryFailed, AttemptTimeout and Overloaded keep their brand in a copy and a structured clone of it",
    run: async (lib) => {
      const attempt = new lib.AttemptTimeout(2, 12.5);
      const errors = [
        [new lib.RetryFailed("exhausted", "retry stopped after 1 attempt: all failed", [], { cause: attempt }), lib.isRetryFailed, "RetryFailed"],
        [attempt, (e) => lib.isTimeout(e), "AttemptTimeout"],
        [new lib.Overloaded(2, 2), lib.isOverloaded, "Overloaded"],
      ];
      equal(attempt.message, "attempt 2 timed out after 12.5 ms");
      for (const [e, guard, name] of errors) {
        equal(e.name, name);
        ok(guard(e), `${name}: the original`);
        // workerd hands an abort reason back as a copy of its own enumerable
        // fields; a worker's postMessage clones that copy again.
        const copy = { ...e };
        ok(guard(copy), `${name}: a copy of its own fields`);
        ok(guard(structuredClone(copy)), `${name}: a structured clone of the copy`);
        ok(!guard(Object.assign(new Error(e.message), { name })), `${name}: a look-alike without the brand is not one`);
      }
    },
  },
);

cases.push({
  name: "errors: numbers in the core's messages print as this runtime prints them: a value as String(v), milliseconds whole or as toFixed(1)",
  run: (lib) => {
    // Random doubles over the whole range (tiny, fractional, huge), the
    // extremes, and exact ties of toFixed(1) (x.25, x.75).
    const values = [NaN, Infinity, -Infinity, -0, 5e-324, 1e-7, 1e21, 2.25, -2.75, 0.05, 1.005, 9007199254740993, 1.7976931348623157e308];
    for (let i = 0; i < 2000; i++) values.push((Math.random() - 0.5) * 10 ** Math.floor(Math.random() * 60 - 20));
    for (let i = 0; i < 200; i++) values.push(Math.floor(Math.random() * 1e6) / 4);
    const ms = (/** @type {number} */ v) => (Number.isInteger(v) ? String(v) : v.toFixed(1));
    for (const v of values) {
      // `{remainingMs:ms}`: a duration measured by a clock.
      equal(new lib.InsufficientBudget(v, 7).message, `insufficient budget: ${ms(v)} ms left, the step needs at least 7 ms, so it was not started`, `remainingMs ${v}`);
      // `{value}`: a rejected input, exactly.
      if (!(v >= 0)) {
        const error = throws(() => lib.Deadline.in(v), RangeError);
        ok(error.message.endsWith(`: current value is ${String(v)}`), `${v}: ${error.message}`);
      }
    }
  },
});

export default cases;
