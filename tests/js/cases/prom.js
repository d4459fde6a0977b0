// parsePrometheus cases: the same file runs in Node, Deno, workerd and Chromium.
import { equal, near, ok, throws, throwsArg } from "../assert.js";
import { wasmBytes, EXPOSITION, asQueryResponse } from "../latency-data.js";

const cases = [
  {
    name: "prom: text over 16 MiB is refused with a RangeError before it reaches Wasm memory",
    run: (lib) => {
      const line = 'x_bucket{le="1"} 1\n';
      const text = line.repeat(Math.ceil((16 * 2 ** 20 + 1) / line.length));
      const before = wasmBytes();
      throwsArg(() => lib.parsePrometheus(text), RangeError, "input", "TOO_LARGE", /^'input' is \d+ characters of exposition text: at most 16777216 bytes are parsed/);
      equal(wasmBytes(), before, "Wasm memory grew for refused text");
    },
  },
  {
    name: "prom: Prometheus text parses to histograms in ms and derives the expected row",
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
    name: "prom: a prom-client exporter served over HTTP derives the known answer",
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
    name: "prom: malformed Prometheus input is a RangeError naming the line or result and the field",
    run: (lib) => {
      throws(
        () => lib.parsePrometheus('x_bucket{le="1"} 5\nx_bucket{le="2"} 3\nx_bucket{le="+Inf"} 9\n'),
        RangeError,
        /^line 2: bucket le="2" of x counts 3, fewer than the 5 of a lower bucket: buckets must be cumulative$/,
      );
      throwsArg(() => lib.parsePrometheus('x_bucket{le="1"} 5\n'), RangeError, "input", "MISSING_INF_BUCKET", /has no le="\+Inf" bucket/);
      throwsArg(() => lib.parsePrometheus('x_bucket{le="1"} five\n'), RangeError, "input", "SYNTAX", /^line 1: value: 'five' is not a number$/);
      throwsArg(() => lib.parsePrometheus('a_bucket{le="1"} 1\nb_bucket{le="1"} 1\n'), RangeError, "options.metric", "AMBIGUOUS_METRIC", /several histograms are present \(a, b\): choose one with 'metric'/);
      throwsArg(() => lib.parsePrometheus('a_bucket{le="1"} 1\n', { metric: "zzz" }), RangeError, "options.metric", "NO_HISTOGRAM", /no histogram named 'zzz'.*histograms present: a/);
      const bad = asQueryResponse(EXPOSITION);
      bad.data.result[2].value[1] = "lots";
      throwsArg(() => lib.parsePrometheus(bad), RangeError, "input.data.result[2].value", "SYNTAX", /^result 3: value: 'lots' is not a number$/);
      throwsArg(() => lib.parsePrometheus({ status: "error", error: "bad query" }), RangeError, "input.status", "QUERY_FAILED", /status "error".*bad query/);
      throwsArg(() => lib.parsePrometheus({ status: "success", data: { resultType: "matrix", result: [] } }), RangeError, "input.data.resultType", "UNKNOWN_VALUE", /'input.data.resultType' must be "vector"/);
      throwsArg(() => lib.parsePrometheus("{ not json"), RangeError, "input", "SYNTAX", /not valid JSON/);
      throwsArg(() => lib.parsePrometheus(42), TypeError, "input", "INVALID_TYPE", /exposition text or a Prometheus query response/);
      throwsArg(() => lib.parsePrometheus(EXPOSITION, { metric: 5 }), TypeError, "options.metric", "INVALID_TYPE", /'options.metric' must be a string/);
      const unnamed = asQueryResponse(EXPOSITION);
      delete unnamed.data.result[1].metric.__name__;
      throwsArg(() => lib.parsePrometheus(unnamed), RangeError, "input.data.result[1].metric", "UNNAMED_RESULT", /^result 2 has no __name__/);
      equal(lib.parsePrometheus(unnamed, { metric: "dependency_latency_seconds" }).length, 2, "named by 'metric'");
      const badLabel = asQueryResponse(EXPOSITION);
      badLabel.data.result[0].metric.route = 7;
      throwsArg(() => lib.parsePrometheus(badLabel), TypeError, "input.data.result[0].metric.route", "INVALID_TYPE", /must be a string/);
      const hists = lib.parsePrometheus(EXPOSITION);
      hists[0].cumulative[1] = 1;
      throwsArg(() => lib.deriveTimeouts(hists), RangeError, "data[0].cumulative", "NOT_CUMULATIVE", /^histogram 1: bucket le="50" of dependency_latency_seconds\{.*\} counts 1, fewer than the 100/);
      // Histograms built by hand: labels may be left out; a unit that is not one is a TypeError naming data.
      const own = { kind: "histogram", metric: "x_ms", unit: "milliseconds", boundsMs: [1, 10, Infinity], cumulative: [1, 5, 6] };
      equal(lib.deriveTimeouts([own])[0].n, 6, "a histogram without labels");
      throwsArg(() => lib.deriveTimeouts([{ ...own, unit: "weeks" }]), TypeError, "data", "INVALID_TYPE", /^'data' does not have the expected shape: unknown variant `weeks`/);
      throwsArg(() => lib.deriveTimeouts([{ ...own, cumulative: [1] }]), TypeError, "data[0].cumulative", "INVALID_TYPE", /as long as 'boundsMs'/);
    },
  },
  {
    name: "prom: hand-built histograms and query results are read in Wasm without trusting them: what JS allows is accepted, a getter or proxy that throws is a TypeError naming the argument and the instance keeps working",
    run: (lib) => {
      const own = () => ({ kind: "histogram", metric: "x_ms", unit: "milliseconds", boundsMs: [1, 10, Infinity], cumulative: [1, 5, 6] });
      const rowOf = (h, by = []) => lib.deriveTimeouts([h], { by })[0];
      // What is accepted: null or undefined for the optional sum and count, labels as an object,
      // a Map, or left undefined; the tag is not checked; unknown fields, cycles included, are ignored.
      equal(rowOf({ ...own(), sumMs: null, count: undefined }).n, 6, "null and undefined optionals");
      equal(rowOf({ ...own(), labels: undefined }).n, 6, "labels: undefined is as if left out");
      equal(JSON.stringify(rowOf({ ...own(), labels: { route: "/a" } }, ["route"]).bucket), '{"route":"/a"}');
      equal(JSON.stringify(rowOf({ ...own(), labels: new Map([["route", "/m"]]) }, ["route"]).bucket), '{"route":"/m"}', "a Map of labels");
      const cyclic = own();
      cyclic.self = cyclic;
      equal(rowOf(cyclic).n, 6, "a cyclic object");
      // Wrong shapes: a TypeError naming the argument; the detail says where, what was expected and what was found.
      throwsArg(() => rowOf({ ...own(), metric: 1.5 }), TypeError, "data", "INVALID_TYPE", /^'data' does not have the expected shape: expected a string, found a number \(in data\[0\]\.metric\)$/);
      throwsArg(() => rowOf({ ...own(), sumMs: 10n }), TypeError, "data", "INVALID_TYPE", /found a BigInt \(in data\[0\]\.sumMs\)$/);
      throwsArg(() => rowOf({ ...own(), metric: Symbol("m") }), TypeError, "data", "INVALID_TYPE", /found a symbol \(in data\[0\]\.metric\)$/);
      throwsArg(() => rowOf({ ...own(), unit: undefined }), TypeError, "data", "INVALID_TYPE", /missing field `unit` \(in data\[0\]\)$/);
      throwsArg(() => rowOf({ ...own(), unit: 3 }), TypeError, "data", "INVALID_TYPE", /expected one of `seconds`, `milliseconds`, `unknown`, found a number \(in data\[0\]\.unit\)$/);
      throwsArg(() => rowOf({ ...own(), labels: { route: 7 } }), TypeError, "data", "INVALID_TYPE", /expected a string, found a number/);
      throwsArg(() => rowOf({ ...own(), boundsMs: [1, "10", Infinity] }), TypeError, "data", "INVALID_TYPE", /\(in data\[0\]\.boundsMs\[1\]\)$/);
      const huge = [];
      huge.length = 2 ** 32 - 1;
      throwsArg(() => rowOf({ ...own(), boundsMs: huge, cumulative: huge }), TypeError, "data", "INVALID_TYPE", /boundsMs/);
      // Throwing reads, where only Wasm reads: a getter, a proxy's traps, labels whose keys cannot be listed.
      const getter = own();
      Object.defineProperty(getter, "metric", { enumerable: true, get() { throw new Error("no metric today"); } });
      throwsArg(() => rowOf(getter), TypeError, "data", "INVALID_TYPE", /reading it threw \(in data\[0\]\.metric\)$/);
      const trap = new Proxy(own(), { get: (t, k) => (k === "unit" ? (() => { throw new Error("trap"); })() : t[k]) });
      throwsArg(() => rowOf(trap), TypeError, "data", "INVALID_TYPE", /\(in data\[0\]\.unit\)$/);
      const keys = { ...own(), labels: new Proxy({}, { ownKeys() { throw new Error("no keys"); } }) };
      throwsArg(() => rowOf(keys), TypeError, "data", "INVALID_TYPE", /\(in data\[0\]\.labels\)$/);
      const { proxy, revoke } = Proxy.revocable({}, {});
      revoke();
      throwsArg(() => rowOf({ ...own(), labels: proxy }), TypeError, "data", "INVALID_TYPE", /\(in data\[0\]\.labels\)$/);
      // A query result whose label getter answers JS's check and throws when Wasm reads it.
      const response = asQueryResponse(EXPOSITION);
      let reads = 0;
      Object.defineProperty(response.data.result[0].metric, "route", { enumerable: true, get() { if (++reads > 1) throw new Error("second read"); return "/a"; } });
      throwsArg(() => lib.parsePrometheus(response), TypeError, "input.data.result", "INVALID_TYPE", /reading it threw/);
      // The instance is intact.
      equal(rowOf(own()).n, 6, "the instance still works");
      equal(lib.parsePrometheus(EXPOSITION).length, 2);
    },
  },
];

export default cases;
