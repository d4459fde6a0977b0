// tailShape and falseTimeoutRate cases: the same file runs in Node, Deno, workerd and Chromium.
import { equal, near, ok, throwsArg } from "../assert.js";
import { seed003, exact } from "../latency-data.js";

const cases = [
  {
    name: "tail: tail shape finds seed 003's gap; false-timeout rates of the candidates",
    run: (lib) => {
      const xs = seed003(100_000, 9);
      const t = lib.tailShape(xs);
      ok(t, "a gap is found");
      ok(t.bodyEdgeMs > 120 && t.bodyEdgeMs < 215, JSON.stringify(t));
      ok(t.tailStartMs >= 297 && t.tailStartMs < 330, JSON.stringify(t));
      near(t.tailShare, 0.005, 0.0015);
      ok(t.bodyEdgeMs < t.recommendedMs && t.recommendedMs < t.tailStartMs);
      equal(lib.tailShape(Float64Array.from({ length: 5000 }, (_, i) => 40 + (i % 50))), null, "unimodal: no gap");
      const sorted = xs.slice().sort();
      const p99 = exact(sorted, 0.99);
      near(lib.falseTimeoutRate(xs, p99), 0.01, 0.0001);
      equal(lib.falseTimeoutRate(xs, 1e9), 0);
      near(lib.falseTimeoutRate(xs, 2 * p99), 0.005, 0.0015);
      equal(lib.falseTimeoutRate([], 10), undefined);
      equal(lib.falseTimeoutRate([1, 2, 3, 4], 2), 0.5);
      const s = new lib.LatencySketch();
      try {
        s.addAll(xs);
        near(lib.falseTimeoutRate(s, p99), 0.01, 0.002, "from a sketch, within a bucket");
        ok(lib.tailShape(s), "a sketch has the same gap");
      } finally {
        s.free();
      }
      const [row] = lib.deriveTimeouts(xs);
      ok(row.tail && row.candidates.some((c) => c.name === "above body"), JSON.stringify(row.candidates));
      throwsArg(() => lib.falseTimeoutRate([1, NaN], 1), RangeError, "samples[1]", "NOT_FINITE", /^'samples\[1\]' must be a finite number/);
      throwsArg(() => lib.tailShape([1, "x"]), TypeError, "samples[1]", "INVALID_TYPE", /must be a number/);
      throwsArg(() => lib.falseTimeoutRate([1], -1), RangeError, "timeoutMs", "NEGATIVE", /'timeoutMs'/);
    },
  },
];

export default cases;
