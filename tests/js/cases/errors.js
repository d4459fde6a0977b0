// isTimeout across the package's own errors and the wrappers SDKs put around
// them. The same file runs in Node, Deno, workerd and Chromium.
import { equal } from "../assert.js";

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

export default cases;
