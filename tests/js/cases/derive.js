// Derive cases: the same file runs in Node, Deno, workerd and Chromium.
// Data comes from a seeded generator, so every runtime sees the same samples;
// oracles are exact sorted quantiles computed here.
import { equal, near, ok, rejects, throws } from "../assert.js";
// The glue's `initSync()` returns the instance's exports once loaded: the
// memory cases read Wasm memory's size from it (the API has no reason to).
// Sketches and parses live in edge-deadline/derive's own .wasm.
import { initSync } from "../../../pkg/edge_deadline_derive.js";

const wasmBytes = () => initSync().memory.buffer.byteLength;

/** splitmix32-style generator: deterministic floats in (0, 1). */
function rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x21f0aaad);
    z = Math.imul(z ^ (z >>> 15), 0x735a2d97);
    z ^= z >>> 15;
    return ((z >>> 0) + 0.5) / 4294967296;
  };
}

function normal(u) {
  return Math.sqrt(-2 * Math.log(u())) * Math.cos(2 * Math.PI * u());
}

/** Seed 003's shape: lognormal body (median 40 ms) + 0.5% uniform 0.3–1.5 s tail. */
function seed003(n, seed = 1) {
  const u = rng(seed);
  const xs = new Float64Array(n);
  for (let i = 0; i < n; i++) xs[i] = u() < 0.005 ? 300 + 1200 * u() : 40 * Math.exp(0.35 * normal(u));
  return xs;
}

const generators = {
  constant: () => 42,
  uniform: (u) => 1 + 999 * u(),
  lognormal: (u) => 40 * Math.exp(0.35 * normal(u)),
  bimodal: (u) => (u() < 0.05 ? 300 + 1200 * u() : 40 * Math.exp(0.35 * normal(u))),
  "with zeros": (u) => (u() < 0.2 ? 0 : 5 * u()),
};

/** Exact rank-⌊q·(n−1)⌋ quantile (the sketch's definition). */
function exact(sorted, q) {
  return sorted[Math.floor(q * (sorted.length - 1) + 1e-9)];
}

const QS = [0, 0.01, 0.1, 0.5, 0.9, 0.99, 0.999, 1];

// Seed 000's example exposition (src/core/derive.rs tests): 1 000 successes,
// 7 timeouts in their own series.
const EXPOSITION = `# HELP dependency_latency_seconds Latency of calls to dependencies
# TYPE dependency_latency_seconds histogram
dependency_latency_seconds_bucket{dependency="search",operation="query",outcome="ok",le="0.025"} 100
dependency_latency_seconds_bucket{dependency="search",operation="query",outcome="ok",le="0.05"} 600
dependency_latency_seconds_bucket{dependency="search",operation="query",outcome="ok",le="0.1"} 990
dependency_latency_seconds_bucket{dependency="search",operation="query",outcome="ok",le="+Inf"} 1000
dependency_latency_seconds_sum{dependency="search",operation="query",outcome="ok"} 50.5
dependency_latency_seconds_count{dependency="search",operation="query",outcome="ok"} 1000
dependency_latency_seconds_bucket{dependency="search",operation="query",outcome="timeout",le="0.025"} 0
dependency_latency_seconds_bucket{dependency="search",operation="query",outcome="timeout",le="0.05"} 0
dependency_latency_seconds_bucket{dependency="search",operation="query",outcome="timeout",le="0.1"} 0
dependency_latency_seconds_bucket{dependency="search",operation="query",outcome="timeout",le="+Inf"} 7
`;

/** The same exposition as an `/api/v1/query?query=dependency_latency_seconds_bucket` response. */
function asQueryResponse(text) {
  const result = [];
  for (const line of text.split("\n")) {
    const m = /^(\w+)\{(.*)\} (\S+)$/.exec(line);
    if (!m || !m[1].endsWith("_bucket")) continue;
    const metric = { __name__: m[1] };
    for (const [, k, v] of m[2].matchAll(/(\w+)="([^"]*)"/g)) metric[k] = v;
    result.push({ metric, value: [1700000000.123, m[3]] });
  }
  return { status: "success", data: { resultType: "vector", result } };
}

const SEED_003 = { body: { medianMs: 40, sigma: 0.348 }, tail: { share: 0.005, loMs: 300, hiMs: 1500 }, n: 200_000, seed: 1 };

const cases = [
  {
    name: "derive: sketch quantiles match exact sorted quantiles across generators (exact below 257 samples)",
    run: (lib) => {
      for (const [name, gen] of Object.entries(generators)) {
        for (const n of [1, 100, 256, 257, 5_000, 50_000]) {
          const u = rng(n * 31 + name.length);
          const xs = new Float64Array(n);
          for (let i = 0; i < n; i++) xs[i] = gen(u);
          const s = new lib.LatencySketch();
          try {
            s.addAll(xs);
            equal(s.count, n, `${name} n=${n}: count`);
            const sorted = xs.slice().sort();
            for (const q of QS) {
              const want = exact(sorted, q);
              const got = s.quantile(q);
              if (n <= 256) equal(got, want, `${name} n=${n} q=${q}: small n is exact`);
              else near(got, want, 0.01 * want * (1 + 1e-9) + 1e-6, `${name} n=${n} q=${q}`);
            }
            equal(s.min, sorted[0], "min is exact");
            equal(s.max, sorted[n - 1], "max is exact");
          } finally {
            s.free();
          }
        }
      }
    },
  },
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
    name: "prometheus: text over 16 MiB is refused with a RangeError before it reaches Wasm memory",
    run: (lib) => {
      const line = 'x_bucket{le="1"} 1\n';
      const text = line.repeat(Math.ceil((16 * 2 ** 20 + 1) / line.length));
      const before = wasmBytes();
      throws(() => lib.parsePrometheus(text), RangeError, /^'input' is \d+ characters of exposition text: at most 16777216 bytes are parsed/);
      equal(wasmBytes(), before, "Wasm memory grew for refused text");
    },
  },
  {
    name: "sketch: 10 000 forgotten sketches (never freed, one synchronous loop) hold at most 16 MiB of Wasm memory",
    run: (lib) => {
      const before = wasmBytes();
      for (let i = 0; i < 10_000; i++) {
        const s = new lib.LatencySketch();
        // 1 ms … 5 s: about 3.5 KB of counters each.
        for (let k = 0; k < 300; k++) s.add(1 + ((k * 7919 + i) % 5_000));
      }
      const grown = wasmBytes() - before;
      ok(grown <= 16 * 2 ** 20 + 2 ** 20, `Wasm memory grew by ${(grown / 2 ** 20).toFixed(1)} MiB`);
    },
  },
  {
    name: "sketch: sketches parked in JS memory and restored answer exactly as before, in add, merge and derive",
    run: (lib) => {
      const n = 2_500; // more than stay resident at once
      const data = (i) => Float64Array.from({ length: 40 + (i % 300) }, (_, k) => 1 + ((k * 104_729 + i * 13) % 9_000) / 3);
      const kept = [];
      for (let i = 0; i < n; i++) kept.push(new lib.LatencySketch().addAll(data(i)));
      try {
        for (let i = 0; i < n; i += 97) {
          const fresh = new lib.LatencySketch().addAll(data(i));
          try {
            const s = kept[i];
            equal(s.count, fresh.count, `count of sketch ${i}`);
            for (const q of [0, 0.5, 0.99, 1]) equal(s.quantile(q), fresh.quantile(q), `q=${q} of sketch ${i}`);
            equal(s.sum, fresh.sum);
            s.add(7);
            fresh.add(7);
            s.merge(kept[(i + 1_250) % n]);
            fresh.merge(new lib.LatencySketch().addAll(data((i + 1_250) % n)));
            equal(s.quantile(0.9), fresh.quantile(0.9), `after add and merge, sketch ${i}`);
            equal(lib.deriveTimeouts(s)[0].p99, lib.deriveTimeouts(fresh)[0].p99, `derived p99 of sketch ${i}`);
          } finally {
            fresh.free();
          }
        }
        kept[3].free();
        throws(() => kept[3].count, Error, /freed/);
        equal(String(kept[3]), "LatencySketch(freed)");
      } finally {
        for (const s of kept) s.free();
      }
    },
  },
  {
    name: "derive: relativeError is honoured (0.1%, 5%) and add() agrees with addAll()",
    run: (lib) => {
      const xs = seed003(20_000, 7);
      const sorted = xs.slice().sort();
      for (const relativeError of [0.001, 0.05]) {
        const bulk = new lib.LatencySketch({ relativeError });
        const one = new lib.LatencySketch({ relativeError });
        try {
          bulk.addAll(xs);
          for (const x of xs) one.add(x);
          equal(bulk.relativeError, relativeError);
          // At 0.1% the 1 536 counters span only 21×: the lowest buckets
          // collapse, and below that bound only [min, max] is promised.
          const collapsed = bulk.collapsedBelowMs ?? 0;
          equal(collapsed > 0, relativeError === 0.001, "collapsedBelowMs");
          for (const q of QS) {
            const want = exact(sorted, q);
            if (want <= collapsed) ok(bulk.quantile(q) >= want, `α=${relativeError} q=${q}: never below in the collapsed range`);
            else near(bulk.quantile(q), want, relativeError * want * (1 + 1e-9) + 1e-6, `α=${relativeError} q=${q}`);
            equal(one.quantile(q), bulk.quantile(q), `add vs addAll at q=${q}`);
          }
        } finally {
          bulk.free();
          one.free();
        }
      }
    },
  },
  {
    name: "derive: merge equals a single pass; different accuracies and self-merge are refused",
    run: (lib) => {
      const xs = seed003(30_000, 3);
      const a = new lib.LatencySketch();
      const b = new lib.LatencySketch();
      const one = new lib.LatencySketch();
      const other = new lib.LatencySketch({ relativeError: 0.02 });
      try {
        a.addAll(xs.subarray(0, 10_000));
        b.addAll(xs.subarray(10_000));
        one.addAll(xs);
        equal(a.merge(b), a, "merge returns the sketch");
        equal(a.count, one.count);
        equal(b.count, 20_000, "the merged-in sketch is unchanged");
        for (const q of QS) equal(a.quantile(q), one.quantile(q), `q=${q}`);
        other.add(1);
        throws(() => a.merge(other), RangeError, /relative error 0\.02 into one with relative error 0\.01/);
        throws(() => a.merge(a), TypeError, /into itself/);
        throws(() => a.merge({}), TypeError, /'other' of merge must be a LatencySketch: current value is an object/);
        equal(a.count, one.count, "refused merges change nothing");
      } finally {
        for (const s of [a, b, one, other]) s.free();
      }
    },
  },
  {
    name: "derive: addAll is all or nothing, also across chunks, and names the bad index",
    run: (lib) => {
      const s = new lib.LatencySketch();
      try {
        s.addAll([1, 2, 3]);
        const big = seed003(200_000, 5);
        big[150_001] = NaN;
        throws(() => s.addAll(big), RangeError, /^sample 150001: 'ms' must be a finite number/);
        equal(s.count, 3, "nothing of the batch was added");
        equal(s.quantile(1), 3);
        throws(() => s.addAll([1, -2]), RangeError, /^sample 1: 'ms' must be between 0 and 9007199254740991 milliseconds: current value is -2/);
        throws(() => s.addAll([1, "2"]), TypeError, /element 1 is "2" \(a string\)/);
        throws(() => s.addAll(new Float32Array(2)), TypeError, /a Float64Array or an array of numbers/);
        for (const bad of [NaN, Infinity, -1, 2 ** 53]) throws(() => s.add(bad), RangeError, /'ms'/);
        throws(() => s.add("5"), TypeError, /'ms' must be a number of milliseconds: current value is "5"/);
        equal(s.count, 3);
        big[150_001] = 10;
        s.addAll(big);
        equal(s.count, 200_003);
      } finally {
        s.free();
      }
    },
  },
  {
    name: "derive: an empty sketch answers undefined; bad q and relativeError are errors; free is explicit",
    run: (lib) => {
      const s = new lib.LatencySketch();
      equal(s.quantile(0.99), undefined, "empty is undefined, not 0");
      equal(s.min, undefined);
      equal(s.fractionAbove(10), undefined);
      equal(String(s), "LatencySketch(empty)");
      for (const q of [NaN, -0.01, 1.01]) throws(() => s.quantile(q), RangeError, /^'q' must be between 0 and 1: current value is/);
      throws(() => s.quantile("0.5"), TypeError, /'q' must be a number/);
      throws(() => new lib.LatencySketch({ relativeError: 0 }), RangeError, /'relativeError' must be between 0.001 and 0.5: current value is 0/);
      throws(() => new lib.LatencySketch({ relativeError: "1%" }), TypeError, /'relativeError'/);
      throws(() => new lib.LatencySketch(0.01), TypeError, /'options' of LatencySketch must be an object/);
      s.add(0);
      equal(s.quantile(0.5), 0, "zero is a duration");
      equal(typeof s[Symbol.dispose] === "function" || typeof Symbol.dispose !== "symbol", true, "disposable where supported");
      s.free();
      s.free();
      throws(() => s.add(1), Error, /was freed/);
      throws(() => s.count, Error, /was freed/);
      equal(String(s), "LatencySketch(freed)");
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
    name: "derive: Prometheus text parses to histograms in ms and derives the expected row",
    run: (lib) => {
      const hists = lib.parsePrometheus(EXPOSITION);
      equal(hists.length, 2);
      const okSeries = hists.find((h) => h.labels.outcome === "ok");
      equal(okSeries.metric, "dependency_latency_seconds");
      equal(okSeries.unit, "seconds");
      equal(JSON.stringify(okSeries.boundsMs.slice(0, 3)), "[25,50,100]");
      equal(okSeries.boundsMs[3], Infinity);
      equal(JSON.stringify(okSeries.cumulative), "[100,600,990,1000]");
      equal(okSeries.sumMs, 50_500);
      equal(okSeries.count, 1000);
      const [row] = lib.deriveTimeouts(hists, { by: ["dependency"] });
      equal(JSON.stringify(row.bucket), '{"dependency":"search"}');
      equal(row.n, 1000);
      equal(row.excluded.timeouts, 7);
      equal(row.p99, 100, "rank 990 is the top of the 50–100 ms bucket");
      equal(row.p50, 45, "25 + 25 × 400/500");
      equal(row.timeoutMs, 200);
      ok(row.warnings.some((w) => w.code === "resolution" && w.message === "p99 lies in the bucket 50 ms..100 ms: the interpolated value may be off by up to 50 ms; add bucket bounds around it"), JSON.stringify(row.warnings));
      // The query API's JSON (text or parsed) gives the same row.
      for (const input of [asQueryResponse(EXPOSITION), JSON.stringify(asQueryResponse(EXPOSITION))]) {
        const [fromApi] = lib.deriveTimeouts(lib.parsePrometheus(input), { by: ["dependency"] });
        equal(JSON.stringify({ ...fromApi, derivedAt: 0 }), JSON.stringify({ ...row, derivedAt: 0 }));
      }
    },
  },
  {
    name: "derive: a prom-client exporter served over HTTP derives the known answer",
    run: async (lib, ctx) => {
      const text = await (await fetch(`${ctx.fixtureUrl}/derive/metrics`)).text();
      const rows = lib.deriveTimeouts(lib.parsePrometheus(text, { metric: "edge_demo_latency_seconds" }), { by: ["route"] });
      equal(rows.length, 2);
      const [a, b] = rows;
      equal(a.bucket.route, "/a");
      equal(a.n, 1000);
      equal(a.excluded.timeouts, 10);
      near(a.p50, 50, 1e-9);
      near(a.p90, 90, 1e-9);
      near(a.p99, 99, 1e-9);
      near(a.timeoutMs, 198, 1e-9);
      near(b.p99, 250 + (250 * 365) / 375, 1e-9);
    },
  },
  {
    name: "derive: malformed Prometheus input is a RangeError naming the line or result and the field",
    run: (lib) => {
      throws(
        () => lib.parsePrometheus('x_bucket{le="1"} 5\nx_bucket{le="2"} 3\nx_bucket{le="+Inf"} 9\n'),
        RangeError,
        /^line 2: bucket le="2" of x counts 3, fewer than the 5 of a lower bucket: buckets must be cumulative$/,
      );
      throws(() => lib.parsePrometheus('x_bucket{le="1"} 5\n'), RangeError, /has no le="\+Inf" bucket/);
      throws(() => lib.parsePrometheus('x_bucket{le="1"} five\n'), RangeError, /^line 1: value: 'five' is not a number$/);
      throws(() => lib.parsePrometheus('a_bucket{le="1"} 1\nb_bucket{le="1"} 1\n'), RangeError, /several histograms are present \(a, b\): choose one with 'metric'/);
      throws(() => lib.parsePrometheus('a_bucket{le="1"} 1\n', { metric: "zzz" }), RangeError, /no histogram named 'zzz'.*histograms present: a/);
      const bad = asQueryResponse(EXPOSITION);
      bad.data.result[2].value[1] = "lots";
      throws(() => lib.parsePrometheus(bad), RangeError, /^result 3: value: 'lots' is not a number$/);
      throws(() => lib.parsePrometheus({ status: "error", error: "bad query" }), RangeError, /status "error".*bad query/);
      throws(() => lib.parsePrometheus({ status: "success", data: { resultType: "matrix", result: [] } }), RangeError, /'input.data.resultType' must be "vector"/);
      throws(() => lib.parsePrometheus("{ not json"), RangeError, /not valid JSON/);
      throws(() => lib.parsePrometheus(42), TypeError, /exposition text or a Prometheus query response/);
      const hists = lib.parsePrometheus(EXPOSITION);
      hists[0].cumulative[1] = 1;
      throws(() => lib.deriveTimeouts(hists), RangeError, /^histogram 1: bucket le="50" of dependency_latency_seconds\{.*\} counts 1, fewer than the 100/);
    },
  },
  {
    name: "derive: simulate reproduces the seed 003 table (200 000 calls)",
    run: (lib) => {
      const started = performance.now();
      const own = lib.simulate(SEED_003).scenario;
      near(own.p50Ms, 40, 0.5, "p50");
      near(own.p90Ms, 63, 1, "p90");
      near(own.p99Ms, 98, 1.5, "p99");
      near(own.p999Ms, 1262, 45, "p99.9");
      const [atP99, at2xP99, atP999] = lib.simulate(SEED_003, [{ timeoutMs: 98 }, { timeoutMs: 196 }, { timeoutMs: 1262 }]).policies;
      near(atP99.failureRate, 0.01, 0.0008, "false timeouts at p99");
      near(at2xP99.failureRate, 0.005, 0.0004, "false timeouts at 2 × p99: the slow tail");
      near(atP999.failureRate, 0.001, 0.0002, "false timeouts at p99.9");
      const [retry, wait] = lib.simulate(SEED_003, [
        { timeoutMs: own.p99Ms, retries: 1 },
        { timeoutMs: own.p999Ms, retries: 0 },
      ]).policies;
      near(retry.p99Ms, 97, 2, "retry: e2e p99");
      near(retry.p999Ms, 160, 6, "retry: e2e p99.9");
      near(retry.failureRate, 0.00007, 0.0001, "retry: failures");
      near(retry.extraLoad, 0.01, 0.0005, "retry: extra load");
      near(wait.p99Ms, 98, 1.5, "wait: e2e p99");
      near(wait.failureRate, 0.00095, 0.0002, "wait: failures");
      // The seed's 1 188 ms is not reproducible (src/core/simulate.rs): failed
      // calls count at the timeout, so p99.9 sits just below it.
      ok(wait.p999Ms > 1188 && wait.p999Ms <= own.p999Ms, `wait p99.9 ${wait.p999Ms}`);
      ok(wait.p999Ms > 7 * retry.p999Ms, "retrying beats waiting at p99.9");
      const again = lib.simulate(SEED_003, [{ timeoutMs: own.p99Ms, retries: 1 }]).policies[0];
      equal(JSON.stringify(again), JSON.stringify(retry), "deterministic per seed");
      ok(performance.now() - started < 20_000, "fast enough for every runtime");
    },
  },
  {
    name: "derive: tail shape finds seed 003's gap; false-timeout rates of the candidates",
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
      throws(() => lib.falseTimeoutRate([1, NaN], 1), RangeError, /^sample 1: 'ms'/);
      throws(() => lib.falseTimeoutRate([1], -1), RangeError, /'timeoutMs'/);
    },
  },
  {
    name: "derive: Little's law (seed 000's table)",
    run: (lib) => {
      equal(lib.concurrencyBound({ ratePerSec: 50, timeoutMs: 2_000 }), 100);
      equal(lib.concurrencyBound({ ratePerSec: 50, timeoutMs: 30_000 }), 1_500);
      equal(lib.concurrencyBound({ ratePerSec: 50, timeoutMs: 120_000 }), 6_000);
      equal(lib.maxTimeoutFor({ ratePerSec: 50, limit: 100 }), 2_000);
      throws(() => lib.maxTimeoutFor({ ratePerSec: 0, limit: 10 }), RangeError, /^'ratePerSec' must be greater than 0/);
      throws(() => lib.concurrencyBound({ ratePerSec: 1, timeoutMs: -1 }), RangeError, /'timeoutMs'/);
      throws(() => lib.concurrencyBound({ ratePerSec: "50", timeoutMs: 1 }), TypeError, /'ratePerSec' must be a number/);
      throws(() => lib.maxTimeoutFor(), TypeError, /'options' must be an object like \{ ratePerSec, limit \}/);
    },
  },
  {
    name: "derive: ConcurrencyLimiter sheds at once when full and releases its slot on every path",
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
      await rejects(limiter.run("nope"), TypeError, /'fn' of run must be a function/);
      for (const limit of [0, 1.5, -1, NaN, 2 ** 32]) throws(() => new lib.ConcurrencyLimiter({ limit }), RangeError, /^'limit' must be a whole number between 1 and 4294967295/);
      throws(() => new lib.ConcurrencyLimiter({ limit: "2" }), TypeError, /'limit' must be a whole number of slots/);
      throws(() => new lib.ConcurrencyLimiter(), TypeError, /'options' of ConcurrencyLimiter/);
    },
  },
  {
    name: "derive: bad options and rows are TypeErrors or RangeErrors naming the parameter and row",
    run: (lib) => {
      const xs = Float64Array.of(1, 2, 3);
      throws(() => lib.deriveTimeouts(xs, { q: 1 }), RangeError, /^'q' must be greater than 0 and less than 1 \(0\.99 for p99\): current value is 1$/);
      throws(() => lib.deriveTimeouts(xs, { q: NaN }), RangeError, /^'q'/);
      throws(() => lib.deriveTimeouts(xs, { safety: 0.5 }), RangeError, /^'safety' must be between 1 and 100: current value is 0.5$/);
      throws(() => lib.deriveTimeouts(xs, { configuredMs: -5 }), RangeError, /^'configuredMs'/);
      throws(() => lib.deriveTimeouts(xs, { q: "0.99" }), TypeError, /'q' must be a number/);
      throws(() => lib.deriveTimeouts(xs, { by: "model" }), TypeError, /'by' must be an array of label names/);
      throws(() => lib.deriveTimeouts(xs, { by: ["a", "a"] }), RangeError, /'by' must not name a label twice/);
      throws(() => lib.deriveTimeouts(xs, 5), TypeError, /'options' of deriveTimeouts must be an object/);
      throws(() => lib.deriveTimeouts("1,2,3"), TypeError, /'data' must be a LatencySketch, a Float64Array/);
      throws(() => lib.deriveTimeouts(Float64Array.of(1, NaN)), RangeError, /^sample 1: 'ms'/);
      throws(() => lib.deriveTimeouts([{ ms: 1 }, { ms: 2, outcome: "maybe" }]), RangeError, /^row 1: 'outcome' must be one of success, ok/);
      throws(() => lib.deriveTimeouts([{ ms: 1 }, { outcome: "ok" }]), TypeError, /^row 1: 'ms' must be a number of milliseconds for a successful call: current value is undefined$/);
      throws(() => lib.deriveTimeouts([{ ms: 1 }, { ms: "2" }]), TypeError, /^row 1: 'ms' must be a number/);
      throws(() => lib.deriveTimeouts([{ ms: 1 }, { ms: -2 }]), RangeError, /^row 1: 'ms' must be between 0/);
      throws(() => lib.deriveTimeouts([{ ms: 1 }, null]), TypeError, /^row 1 must be an object/);
      throws(() => lib.deriveTimeouts([{ ms: 1, model: {} }], { by: ["model"] }), TypeError, /^row 0: label 'model' must be a string or a number/);
      throws(() => lib.simulate({ body: { medianMs: 0, sigma: 0.3 } }), RangeError, /^'medianMs' must be greater than 0/);
      throws(() => lib.simulate({ ...SEED_003, n: 1.5 }), RangeError, /^'n' must be a whole number between 1 and 2000000: current value is 1.5$/);
      throws(() => lib.simulate(SEED_003, [{ timeoutMs: 10, retries: 11 }]), RangeError, /^policy 0: 'retries' must be a whole number between 0 and 10/);
      throws(() => lib.simulate(SEED_003, [{ timeoutMs: -1 }]), RangeError, /^policy 0: 'timeoutMs'/);
      throws(() => lib.simulate(SEED_003, [{ retries: 1 }]), TypeError, /'policies\[0\]\.timeoutMs' must be a number/);
      throws(() => lib.simulate({ body: { medianMs: 40 } }), TypeError, /'sigma' must be a number/);
      throws(() => lib.simulate(), TypeError, /'scenario' must be an object/);
    },
  },
  {
    name: "derive: toBytes/fromBytes carry a sketch between isolates; merged copies equal merged originals",
    run: (lib) => {
      const xs = seed003(30_000, 9);
      const a = new lib.LatencySketch();
      const b = new lib.LatencySketch();
      const small = new lib.LatencySketch({ relativeError: 0.02 });
      const made = [a, b, small];
      try {
        a.addAll(xs.subarray(0, 12_000));
        b.addAll(xs.subarray(12_000));
        small.addAll([0, 3.25, 3.25, 41]);
        for (const s of [a, small, new lib.LatencySketch()]) {
          made.push(s);
          const bytes = s.toBytes();
          ok(bytes instanceof Uint8Array, "toBytes gives a Uint8Array");
          // Every view of the same bytes reads back (a Node Buffer is a Uint8Array).
          for (const view of [bytes, bytes.slice().buffer, new DataView(bytes.slice().buffer)]) {
            const back = lib.LatencySketch.fromBytes(view);
            made.push(back);
            ok(back instanceof lib.LatencySketch);
            for (const k of ["count", "sum", "min", "max", "relativeError", "collapsedBelowMs"]) equal(back[k], s[k], k);
            for (const q of QS) equal(back.quantile(q), s.quantile(q), `q=${q}`);
          }
        }
        ok(a.toBytes().length < 2048, `compact: ${a.toBytes().length} bytes for 12 000 samples`);
        // Two isolates send their bytes; one place merges them.
        const merged = lib.LatencySketch.fromBytes(a.toBytes()).merge(lib.LatencySketch.fromBytes(b.toBytes()));
        made.push(merged);
        const direct = new lib.LatencySketch().merge(a).merge(b);
        made.push(direct);
        equal(merged.count, 30_000);
        for (const q of QS) equal(merged.quantile(q), direct.quantile(q), `merged q=${q}`);
      } finally {
        for (const s of made) s.free();
      }
    },
  },
  {
    name: "derive: fromBytes refuses corrupt, truncated and foreign buffers with a RangeError, never a trap",
    run: (lib) => {
      const s = new lib.LatencySketch();
      try {
        s.addAll(seed003(5_000, 4));
        const good = s.toBytes();
        throws(() => lib.LatencySketch.fromBytes(good.subarray(0, good.length - 3)), RangeError, /^'bytes' is not a valid LatencySketch: it ends inside 'counters'/);
        throws(() => lib.LatencySketch.fromBytes(new TextEncoder().encode('{"count":3}')), RangeError, /magic bytes \(pass what toBytes\(\) returned\)/);
        const newer = good.slice();
        newer[4] = 2;
        throws(() => lib.LatencySketch.fromBytes(newer), RangeError, /format version 2 is newer than this package reads \(1\)/);
        throws(() => lib.LatencySketch.fromBytes(new Uint8Array(0)), RangeError, /magic/);
        throws(() => lib.LatencySketch.fromBytes([1, 2]), TypeError, /'bytes' of fromBytes must be a Uint8Array, an ArrayBuffer or the base64 string of toJSON\(\): current value is an array/);
        throws(() => lib.LatencySketch.fromBytes("not base64!"), RangeError, /'bytes' is not valid base64/);
        // Random damage: each buffer decodes or is a RangeError, and the
        // instance keeps working afterwards (nothing trapped).
        const u = rng(17);
        let refused = 0;
        for (let i = 0; i < 3_000; i++) {
          const v = good.slice(0, 6 + Math.floor(u() * (good.length - 6)));
          for (let k = 0; k < 3; k++) v[Math.floor(u() * v.length)] = Math.floor(u() * 256);
          try {
            lib.LatencySketch.fromBytes(v).free();
          } catch (e) {
            ok(e instanceof RangeError, `a refusal is a RangeError: ${e}`);
            refused++;
          }
        }
        ok(refused > 2_900, `refused ${refused} of 3000 damaged buffers`);
        s.add(1);
        equal(s.count, 5_001, "the instance still works");
      } finally {
        s.free();
      }
    },
  },
  {
    name: "derive: JSON.stringify(sketch) gives a summary and base64 bytes that fromBytes reads back",
    run: (lib) => {
      const s = new lib.LatencySketch();
      const empty = new lib.LatencySketch();
      try {
        s.addAll(seed003(2_000, 6));
        const json = JSON.parse(JSON.stringify({ sketch: s })).sketch;
        equal(json.type, "LatencySketch");
        equal(json.version, 1);
        equal(json.count, 2_000);
        equal(json.relativeError, 0.01);
        equal(json.min, s.min);
        equal(json.max, s.max);
        equal(json.p50, s.quantile(0.5));
        equal(json.p99, s.quantile(0.99));
        equal(json.p999, s.quantile(0.999));
        equal(typeof json.bytes, "string");
        const back = lib.LatencySketch.fromBytes(json.bytes);
        try {
          for (const q of QS) equal(back.quantile(q), s.quantile(q), `q=${q}`);
        } finally {
          back.free();
        }
        const e = JSON.parse(JSON.stringify(empty));
        equal(e.count, 0);
        equal("p50" in e, false, "an empty sketch has no quantiles, not 0");
        const again = lib.LatencySketch.fromBytes(e.bytes);
        equal(again.count, 0);
        again.free();
        empty.free();
        throws(() => JSON.stringify(empty), Error, /was freed/);
      } finally {
        s.free();
        empty.free();
      }
    },
  },
];

export default cases;
