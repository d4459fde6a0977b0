// deriveTimeouts cases: the same file runs in Node, Deno, workerd and Chromium.
import { equal, near, ok, throws, throwsArg } from "../assert.js";
import { rng, normal, seed003, exact } from "../latency-data.js";

const cases = [
  {
    name: "derive: with relativeError 0.001 every reported percentile is within it of the exact value, or the collapsed warning names it",
    run: (lib) => {
      const xs = seed003(20_000, 7);
      const sorted = xs.slice().sort();
      const [row] = lib.deriveTimeouts(xs, { relativeError: 0.001 });
      const collapsed = row.warnings.find((w) => w.code === "collapsed");
      const named = /^(p[\d.]+(?:, p[\d.]+)*) lies? at or below/.exec(collapsed?.message ?? "")?.[1].split(", ") ?? [];
      let wrong = 0;
      for (const [q, key, name] of [[0.5, "p50", "p50"], [0.9, "p90", "p90"], [0.99, "p99", "p99"], [0.999, "p999", "p99.9"]]) {
        const want = exact(sorted, q);
        if (Math.abs(row[key] - want) > 0.001 * want + 1e-6) {
          wrong++;
          ok(named.includes(name), `${name} is ${row[key]} for an exact ${want} with no warning naming it: ${JSON.stringify(row.warnings)}`);
        }
      }
      ok(wrong > 0, "the data no longer makes the sketch collapse");
      ok(/use a larger 'relativeError'/.test(collapsed.message), collapsed.message);
    },
  },
  {
    name: "derive: deriveTimeouts from samples has the known answer (p99 × safety) and stamps the row",
    run: (lib) => {
      const before = Date.now();
      const xs = Float64Array.from({ length: 100 }, (_, i) => i + 1);
      const [row] = lib.deriveTimeouts(xs);
      equal(row.n, 100);
      equal(row.p50, 50);
      equal(row.p99, 99);
      equal(row.timeoutMs, 198);
      equal(row.q, 0.99);
      equal(row.safety, 2);
      ok(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/.test(row.derivedAt), row.derivedAt);
      ok(Date.parse(row.derivedAt) >= before - 1000 && Date.parse(row.derivedAt) <= Date.now() + 1000, "derivedAt is now");
      ok(row.warnings.some((w) => w.code === "small-sample" && /p99 needs at least 1000/.test(w.message)), JSON.stringify(row.warnings));
      // Background work: p99.9 × 1.5 over 1..10 000 ms, within 1%.
      const big = Float64Array.from({ length: 10_000 }, (_, i) => i + 1);
      const [bg] = lib.deriveTimeouts(Array.from(big), { q: 0.999, safety: 1.5 });
      near(bg.quantileMs, 9990, 99.9);
      equal(bg.timeoutMs, bg.quantileMs * 1.5);
      equal(bg.warnings.length, 0, JSON.stringify(bg.warnings));
      // A sketch is data too.
      const s = new lib.LatencySketch();
      try {
        s.addAll(big);
        const [fromSketch] = lib.deriveTimeouts(s, { q: 0.999, safety: 1.5 });
        equal(fromSketch.timeoutMs, bg.timeoutMs);
      } finally {
        s.free();
      }
      // No data: a row with nulls and a warning, never a zero timeout.
      const [none] = lib.deriveTimeouts([]);
      equal(none.n, 0);
      equal(none.timeoutMs, null);
      equal(none.p99, null);
      ok(none.warnings.some((w) => w.code === "no-successes"));
    },
  },
  {
    name: "derive: rows are grouped by labels, and only successes count",
    run: (lib) => {
      const u = rng(11);
      const rows = [];
      const short = [];
      for (let i = 0; i < 4000; i++) {
        const ms = 40 * Math.exp(0.35 * normal(u));
        short.push(ms);
        rows.push({ ms, outcome: "ok", model: "m1", prompt: "short" });
        if (i % 100 === 0) rows.push({ ms: ms / 10, outcome: "error", model: "m1", prompt: "short" });
        rows.push({ ms: 3 * ms, outcome: true, model: "m1", prompt: 30_000 });
      }
      for (let i = 0; i < 20; i++) rows.push({ outcome: "timeout", model: "m1", prompt: 30_000 });
      const byLabels = lib.deriveTimeouts(rows, { by: ["model", "prompt"] });
      equal(byLabels.length, 2);
      // Ordered by label values: "30000" < "short".
      const [long, shortRow] = byLabels;
      equal(JSON.stringify(long.bucket), '{"model":"m1","prompt":"30000"}');
      equal(shortRow.excluded.errors, 40);
      equal(long.excluded.timeouts, 20);
      equal(long.n, 4000);
      const [alone] = lib.deriveTimeouts(Float64Array.from(short));
      equal(shortRow.p99, alone.p99, "grouping is exact: the bucket alone gives the same answer");
      equal(shortRow.timeoutMs, alone.timeoutMs);
      // A different outcome field.
      const renamed = rows.map(({ outcome, ...r }) => ({ ...r, status: outcome }));
      equal(lib.deriveTimeouts(renamed, { by: ["prompt"], outcome: "status" })[0].excluded.timeouts, 20);
    },
  },
  {
    name: "derive: HTTP status codes are outcomes, as numbers and as numeric strings (2xx success, 408/504 timeout, other 4xx/5xx error)",
    run: (lib) => {
      const rows = [];
      for (let i = 0; i < 200; i++) rows.push({ ms: 10 + (i % 7), outcome: i % 2 ? 200 : "204" });
      for (const status of [408, "504", 404, "500", 503, 429]) rows.push({ ms: 5, outcome: status });
      const [row] = lib.deriveTimeouts(rows);
      equal(row.n, 200);
      equal(row.excluded.timeouts, 2);
      equal(row.excluded.errors, 4);
      const [named] = lib.deriveTimeouts(rows.map(({ outcome, ...r }) => ({ ...r, status: outcome })), { outcome: "status" });
      equal(named.n, 200);
      throwsArg(() => lib.deriveTimeouts([{ ms: 1, outcome: 302 }]), RangeError, "data[0].outcome", "UNKNOWN_OUTCOME");
      throwsArg(() => lib.deriveTimeouts([{ ms: 1, outcome: 200.5 }]), RangeError, "data[0].outcome", "UNKNOWN_OUTCOME");
      throwsArg(() => lib.deriveTimeouts([{ ms: 1, outcome: {} }]), TypeError, "data[0].outcome", "INVALID_TYPE");
    },
  },
  {
    name: "derive: censoring, pile-up and drift warnings",
    run: (lib) => {
      const u = rng(21);
      // Many labelled timeouts: the successes are cut off at the timeout.
      const rows = [];
      for (let i = 0; i < 2000; i++) rows.push({ ms: Math.min(100, 40 * Math.exp(0.35 * normal(u))) });
      for (let i = 0; i < 60; i++) rows.push({ ms: 100, outcome: "timeout" });
      const [censored] = lib.deriveTimeouts(rows);
      const w = censored.warnings.find((x) => x.code === "censored");
      ok(w && w.message.startsWith("60 calls (2.913%) timed out, more than the 1% beyond p99"), JSON.stringify(censored.warnings));
      // Unlabelled timeouts logged as successes pile up at the configured timeout.
      const xs = new Float64Array(10_000);
      for (let i = 0; i < xs.length; i++) xs[i] = i < 300 ? 250 : 40 * Math.exp(0.35 * normal(u));
      const [piled] = lib.deriveTimeouts(xs, { configuredMs: 250 });
      ok(piled.warnings.some((x) => x.code === "pile-up" && /pile up at 250 ms, the configured timeout/.test(x.message)), JSON.stringify(piled.warnings));
      // Drift: a configured 30 s against a ~100 ms p99.
      const [drift] = lib.deriveTimeouts(seed003(20_000), { configuredMs: 30_000 });
      ok(drift.warnings.some((x) => x.code === "drift" && /^the configured 30000 ms is \d+\.\dx the measured p99/.test(x.message)), JSON.stringify(drift.warnings));
      equal(drift.candidates.find((c) => c.name === "configured").falseTimeoutRate, 0);
      const [fine] = lib.deriveTimeouts(seed003(20_000), { configuredMs: 150 });
      ok(!fine.warnings.some((x) => x.code === "drift"), JSON.stringify(fine.warnings));
    },
  },
  {
    name: "derive: bad options and rows are TypeErrors or RangeErrors with .param and .code",
    run: (lib) => {
      const xs = Float64Array.of(1, 2, 3);
      throwsArg(() => lib.deriveTimeouts(xs, { q: 1 }), RangeError, "options.q", "OUT_OF_RANGE", /^'q' must be greater than 0 and less than 1 \(0\.99 for p99\): current value is 1$/);
      throwsArg(() => lib.deriveTimeouts(xs, { q: NaN }), RangeError, "options.q", "OUT_OF_RANGE", /^'q'/);
      throwsArg(() => lib.deriveTimeouts(xs, { safety: 0.5 }), RangeError, "options.safety", "OUT_OF_RANGE", /^'safety' must be between 1 and 100: current value is 0.5$/);
      throwsArg(() => lib.deriveTimeouts(xs, { configuredMs: -5 }), RangeError, "options.configuredMs", "NEGATIVE", /^'configuredMs'/);
      throwsArg(() => lib.deriveTimeouts(xs, { q: "0.99" }), TypeError, "options.q", "INVALID_TYPE", /'options.q' must be a number/);
      throwsArg(() => lib.deriveTimeouts(xs, { by: "model" }), TypeError, "options.by", "INVALID_TYPE", /'options.by' must be an array of label names/);
      throwsArg(() => lib.deriveTimeouts(xs, { by: ["a", "a"] }), RangeError, "options.by", "DUPLICATE_LABEL", /'options.by' must not name a label twice/);
      throwsArg(() => lib.deriveTimeouts(xs, { by: ["a", 1] }), TypeError, "options.by[1]", "INVALID_TYPE", /a label name/);
      throwsArg(() => lib.deriveTimeouts(xs, 5), TypeError, "options", "INVALID_TYPE", /'options' must be an object/);
      throwsArg(() => lib.deriveTimeouts("1,2,3"), TypeError, "data", "INVALID_TYPE", /'data' must be a LatencySketch, a Float64Array/);
      throwsArg(() => lib.deriveTimeouts(Float64Array.of(1, NaN)), RangeError, "data[1]", "NOT_FINITE", /^'data\[1\]' must be a finite number of milliseconds/);
      throwsArg(() => lib.deriveTimeouts([1, "2"]), TypeError, "data[1]", "INVALID_TYPE", /^'data\[1\]' must be a number/);
      throwsArg(() => lib.deriveTimeouts([{ ms: 1 }, { ms: 2, outcome: "maybe" }]), RangeError, "data[1].outcome", "UNKNOWN_OUTCOME", /^row 1: 'outcome' must be one of success, ok/);
      throwsArg(() => lib.deriveTimeouts([{ ms: 1 }, { ms: 2, result: "maybe" }], { outcome: "result" }), RangeError, "data[1].result", "UNKNOWN_OUTCOME", /^row 1: 'result' must be one of/);
      throwsArg(() => lib.deriveTimeouts([{ ms: 1 }, { ms: 2, outcome: 3 }]), RangeError, "data[1].outcome", "UNKNOWN_OUTCOME");
      throwsArg(() => lib.deriveTimeouts([{ ms: 1 }, { ms: 2, outcome: [3] }]), TypeError, "data[1].outcome", "INVALID_TYPE", /a string, a number \(an HTTP status\) or a boolean/);
      throwsArg(() => lib.deriveTimeouts([{ ms: 1 }, { outcome: "ok" }]), TypeError, "data[1].ms", "INVALID_TYPE", /^'data\[1\]\.ms' must be a number of milliseconds for a successful call: current value is undefined$/);
      throwsArg(() => lib.deriveTimeouts([{ ms: 1 }, { ms: "2" }]), TypeError, "data[1].ms", "INVALID_TYPE", /^'data\[1\]\.ms' must be a number/);
      throwsArg(() => lib.deriveTimeouts([{ ms: 1 }, { ms: -2 }]), RangeError, "data[1].ms", "NEGATIVE", /^row 1: 'ms' must be between 0/);
      throwsArg(() => lib.deriveTimeouts([{ ms: 1 }, { ms: NaN, outcome: "timeout" }]), RangeError, "data[1].ms", "NOT_FINITE", /^row 1: 'ms'/);
      throwsArg(() => lib.deriveTimeouts([{ ms: 1 }, null]), TypeError, "data[1]", "INVALID_TYPE", /^'data\[1\]' must be an object/);
      throwsArg(() => lib.deriveTimeouts([{ ms: 1, model: {} }], { by: ["model"] }), TypeError, "data[0].model", "INVALID_TYPE", /^'data\[0\]\.model' must be a string or a number/);
    },
  },
  {
    name: "derive: the derive core's messages are filled in JS from its templates, numbers as JavaScript prints them",
    run: (lib) => {
      const max = Number.MAX_SAFE_INTEGER;
      const sketch = () => new lib.LatencySketch();
      const bytes = (edit) => {
        const s = sketch();
        for (let i = 1; i <= 400; i++) s.add(i);
        const b = s.toBytes();
        edit(b, new DataView(b.buffer, b.byteOffset, b.byteLength));
        return b;
      };
      const not = "'bytes' is not a valid LatencySketch: ";
      const cases = [
        [() => lib.simulate({ body: { medianMs: 40, sigma: Infinity } }), "'sigma' must be between 0 and 4: current value is Infinity"],
        [() => lib.simulate({ body: { medianMs: 40, sigma: 0.3 }, tail: { share: 0.1, loMs: 2.5, hiMs: 1.25 } }), "'loMs' must not exceed 'hiMs': current values are 2.5 and 1.25"],
        [() => lib.simulate({ body: { medianMs: 40, sigma: 0.3 } }, [{ timeoutMs: 10 }, { timeoutMs: 10, retries: 0.5 }]), "policy 1: 'retries' must be a whole number between 0 and 10: current value is 0.5"],
        [() => lib.simulate({ body: { medianMs: 40, sigma: 0.3 } }, [{ timeoutMs: 10 }, { timeoutMs: Infinity }]), `policy 1: 'timeoutMs' must be a finite number of milliseconds between 0 and ${max}: current value is Infinity`],
        [() => lib.maxTimeoutFor({ ratePerSec: Infinity, limit: 1 }), "'ratePerSec' must be greater than 0 and at most 1000000000 requests per second: current value is Infinity"],
        [() => lib.concurrencyBound({ ratePerSec: 1, timeoutMs: -Infinity }), `'timeoutMs' must be a finite number of milliseconds between 0 and ${max}: current value is -Infinity`],
        [() => lib.deriveTimeouts(Float64Array.of(1), { q: 1e21 }), "'q' must be greater than 0 and less than 1 (0.99 for p99): current value is 1e+21"],
        [() => lib.deriveTimeouts(Float64Array.of(1), { safety: 1e-7 }), "'safety' must be between 1 and 100: current value is 1e-7"],
        [() => lib.deriveTimeouts([{ ms: 1 }, { ms: Infinity }]), `row 1: 'ms' must be a finite number of milliseconds between 0 and ${max}: current value is Infinity`],
        [() => sketch().quantile(Infinity), "'q' must be between 0 and 1: current value is Infinity"],
        [() => sketch().merge(new lib.LatencySketch({ relativeError: 0.025 })), "cannot merge a sketch with relative error 0.025 into one with relative error 0.01: create both with the same 'relativeError'"],
        [() => lib.LatencySketch.fromBytes(bytes((b) => (b[4] = 9))), `${not}format version 9 is newer than this package reads (1); upgrade edge-deadline where the sketches are merged`],
        [() => lib.LatencySketch.fromBytes(bytes((b) => (b[5] = 4))), `${not}'flags' has unknown bits 0x04 (corrupted?)`],
        [() => lib.LatencySketch.fromBytes(bytes((b, v) => v.setFloat64(6, -Infinity, true))), `${not}'relativeError' is -Infinity, outside 0.001 … 0.5 (corrupted?)`],
        [() => lib.LatencySketch.fromBytes(bytes((b) => (b[b.length - 1] += 1))), `${not}'counters' add up to 401, not the count 400 (corrupted?)`],
        [() => lib.parsePrometheus('x_seconds_bucket{le="0.25"} 2.5\nx_seconds_bucket{le="0.5"} 1\nx_seconds_bucket{le="+Inf"} 3\n'), 'line 2: bucket le="0.5" of x_seconds counts 1, fewer than the 2.5 of a lower bucket: buckets must be cumulative'],
        [() => lib.parsePrometheus('x_seconds_bucket{le="0.25\\q"} 2\n'), "line 1: label value: invalid escape '\\q' in 'le' (use \\\\, \\\" or \\n)"],
        [() => lib.parsePrometheus('x_seconds_bucket{le="1" a="2"} 2\n'), "line 1: label value: expected ',' or '}' after the value of 'le'"],
        [() => lib.parsePrometheus("x_bucket{a=\"1\"} 2\nx_bucket{le=\"1\"} 1\nx_bucket{le=\"+Inf\"} 1\ny_bucket{le=\"1\"} 1\ny_bucket{le=\"+Inf\"} 1\n"), "several histograms are present (x, y): choose one with 'metric'"],
      ];
      for (const [call, message] of cases) {
        const e = throws(call, RangeError);
        equal(e.message, message);
      }
      // Warnings are data: their messages cross as templates too and read the same.
      const text = (rows) => rows.flatMap((r) => r.warnings.map((w) => `${w.code}: ${w.message}`)).join("\n");
      const wide = (n) => Array.from({ length: 20_000 }, (_, i) => (i < n ? 0.001 * (i + 1) : 1e5 + i * 1.5));
      equal(text(lib.deriveTimeouts(wide(19_000), { relativeError: 0.001, q: 0.5 })), [
        "pile-up: 1000 successful calls (5%) pile up at 129999 ms, the largest value, which looks like a timeout in force: timed-out calls may be logged as successes, which censors the data; record the outcome and exclude them",
        "collapsed: p50, p90 lie at or below 6218 ms, where the sketch merged its lowest buckets to bound memory: each is only an upper bound, not within 'relativeError'; use a larger 'relativeError' (the default 0.01 spans about 10^13×)",
      ].join("\n"));
      const rows = Array.from({ length: 2000 }, (_, i) => ({ ms: 40 + (i % 50) }));
      for (let i = 0; i < 61; i++) rows.push({ ms: 100, outcome: "timeout" });
      equal(text(lib.deriveTimeouts(rows)), [
        "censored: 61 calls (2.96%) timed out, more than the 1% beyond p99: the successes are cut off at the timeout in force, so this value is too small and re-deriving would ratchet it down; raise the timeout, measure again, then derive",
      ].join("\n"));
      equal(text(lib.deriveTimeouts([{ ms: 1 }], { q: 0.95 })), "small-sample: only 1 successful call: p95 needs at least 200 (10 beyond the percentile) for a stable estimate");
      const drift = Array.from({ length: 2000 }, (_, i) => 40 + (i % 97) * 0.37);
      equal(text(lib.deriveTimeouts(drift, { configuredMs: 10.5, relativeError: 0.001 })), "drift: the configured 10.5 ms is 0.14x the measured p99 (75.22 ms): it fails healthy calls");
      const hist = lib.parsePrometheus('x_bucket{le="0.5"} 10\nx_bucket{le="2.25"} 1000\nx_bucket{le="+Inf"} 1000\n');
      equal(text(lib.deriveTimeouts(hist)), [
        "unit-assumed: 'x' has no unit suffix (_seconds, _milliseconds): its values were read as milliseconds",
        "resolution: p99 lies in the bucket 0.5 ms..2.25 ms: the interpolated value may be off by up to 1.75 ms; add bucket bounds around it",
      ].join("\n"));
    },
  },
];

export default cases;
