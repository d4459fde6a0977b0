// Retry budget cases: one allowance shared across calls. The same file runs
// in Node, Deno, workerd and Chromium.
import { equal, rejects, throws } from "../assert.js";
import { badInputCases } from "../pipeline-support.js";

const cases = [
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
  ...badInputs(),
];

/** Bad input: the error class, the message, `.param` as the user wrote it and `.code`. */
function badInputs() {
  return badInputCases([
    ["RetryBudget: ratio -0.1", (lib) => new lib.RetryBudget({ ratio: -0.1 }), RangeError, /'ratio' must be between 0 and 1: current value is -0.1/, "options.ratio", "RATIO_OUT_OF_RANGE"],
    ["RetryBudget: ratio 1.5", (lib) => new lib.RetryBudget({ ratio: 1.5 }), RangeError, /'ratio' must be between 0 and 1: current value is 1.5/, "options.ratio", "RATIO_OUT_OF_RANGE"],
    ["RetryBudget: ratio NaN", (lib) => new lib.RetryBudget({ ratio: NaN }), RangeError, /'ratio' must be between 0 and 1: current value is NaN/, "options.ratio", "RATIO_OUT_OF_RANGE"],
    ["RetryBudget: ratio '0.5'", (lib) => new lib.RetryBudget({ ratio: "0.5" }), TypeError, /'options.ratio' must be a number between 0 and 1/, "options.ratio", "INVALID_TYPE"],
    ["RetryBudget: windowMs 0", (lib) => new lib.RetryBudget({ windowMs: 0 }), RangeError, /'windowMs' must be between 1 and/, "options.windowMs", "WINDOW_OUT_OF_RANGE"],
    ["RetryBudget: minPerSecond -1", (lib) => new lib.RetryBudget({ minPerSecond: -1 }), RangeError, /'minPerSecond' must be between 0 and/, "options.minPerSecond", "MIN_PER_SECOND_OUT_OF_RANGE"],
  ]);
}

// ---- messages: the core's templates, filled in JS ----------------------------------------------
cases.push({
  name: "retry budget: the core's messages read in full, numbers as JavaScript prints them (Infinity, 1e+300)",
  run: (lib) => {
    for (const [options, message] of [
      [{ ratio: Infinity }, "'ratio' must be between 0 and 1: current value is Infinity"],
      [{ ratio: -0.5 }, "'ratio' must be between 0 and 1: current value is -0.5"],
      [{ minPerSecond: 1e300 }, "'minPerSecond' must be between 0 and 1000000: current value is 1e+300"],
      [{ windowMs: 0.5 }, "'windowMs' must be between 1 and 86400000 milliseconds: current value is 0.5"],
    ]) {
      equal(throws(() => new lib.RetryBudget(options), RangeError).message, message);
    }
  },
});

export default cases;
