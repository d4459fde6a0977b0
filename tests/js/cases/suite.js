// The suite's own runner (tests/js/case-runner.js), in every runtime: a hang
// fails by name and the run goes on.
import { equal, ok } from "../assert.js";
import { runCases } from "../case-runner.js";

export default [
  {
    name: "suite: a case that never settles fails by its name once its bound passes, the cases after it still run, and a skipped one says why",
    run: async (lib, ctx) => {
      const list = [
        { name: "hangs", run: () => new Promise(() => {}) },
        { name: "throws", run: () => { throw new RangeError("thrown"); } },
        { name: "needs what no runner has", needs: ["noSuchCapability"], run: () => { throw new Error("ran"); } },
        { name: "passes", run: async () => { await null; } },
      ];
      const report = await runCases(list, lib, { ...ctx, runtime: "inner" }, 20);
      equal(report.runtime, "inner");
      equal(report.passed, 1, "the case after the hung one ran");
      equal(report.failed, 2);
      equal(report.skipped, 1);
      equal(report.failures[0].name, "hangs");
      ok(report.failures[0].error.includes('"hangs" did not settle within 20 ms'), report.failures[0].error);
      equal(report.failures[1].name, "throws");
      ok(report.failures[1].error.startsWith("RangeError: thrown"), report.failures[1].error);
      equal(report.skips[0].reason, "this runtime's runner has no noSuchCapability");
    },
  },
];
