// TimeoutBook: recording, flushing to an aggregator, serving the fleet's table. The same file runs in
// Node, Deno, workerd and Chromium. The aggregator here is a small in-test one (an object with
// fetch(request), as a Durable Object stub is): it keeps what was POSTed and answers a table the case
// sets. Timing is the subject of the flush and refresh cases, so the clock is fake.
import { equal, ok, rejects, throwsArg } from "../assert.js";
import { installFakeTime } from "../fake-time.js";
import { FleetAggregatorCore } from "../latency-data.js";
import { onFakeTime } from "../pipeline-support.js";

/** An aggregator stand-in: `flushes` it took (bytes), `status` it answers them with, `table` it serves. */
function aggregator() {
  const a = {
    flushes: [],
    tableReads: 0,
    status: 204,
    tableStatus: 200,
    buckets: {},
    urls: [],
    async fetch(request) {
      a.urls.push(`${request.method} ${new URL(request.url).pathname}`);
      if (request.method === "POST") {
        const bytes = new Uint8Array(await request.arrayBuffer());
        if (a.status === 204 || a.refused) a.flushes.push(bytes);
        if (a.refused) return Response.json({ refused: a.refused });
        return new Response(a.status === 204 ? null : "{}", { status: a.status });
      }
      a.tableReads++;
      if (a.tableStatus !== 200) return new Response("down", { status: a.tableStatus });
      const body = { v: 1, derivedAt: new Date(0).toISOString(), windowMs: 3_600_000, windows: 24, q: 0.99, safety: 1.5, buckets: a.buckets };
      return Response.json(body);
    },
  };
  return a;
}

/** Lets a background refresh finish (real time: the fake clock moves only the package's). */
const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

/** A table row of the contract's shape. */
function row(timeoutMs, floorMs = null, n = 5000) {
  return { n, timeouts: 0, errors: 0, timeoutMs, p50: null, p99: null, floorMs, falseTimeoutRate: null, warnings: [] };
}

const cases = [
  {
    name: "book: only successes are sketched, timeouts and errors are counted, and a take empties the book",
    run: (lib) => {
      const book = new lib.TimeoutBook({ onWarning: () => {} });
      for (const ms of [10, 20, 30]) book.record("GET /a", ms);
      book.record("GET /a", 40, "ok");
      book.record("GET /a", 5000, "timeout");
      book.record("GET /a", 3, "error");
      book.record("db", 900, "timeout");
      equal(book.size, 2);
      const [bytes, more] = book.takeFlush();
      equal(more, undefined, "one flush");
      equal(book.size, 0, "emptied");
      const got = lib.readFlush(bytes);
      equal(got.length, 2);
      const a = got.find((b) => b.name === "GET /a");
      equal(a.successes.count, 4, "only the four successes");
      equal(a.successes.max, 40);
      equal(a.timeouts, 1);
      equal(a.errors, 1);
      equal(a.inForceMs, 5000, "the in-force timeout a timed-out call waited");
      const db = got.find((b) => b.name === "db");
      equal(db.successes.count, 0);
      equal(db.timeouts, 1);
      equal(book.takeFlush().length, 1, "an empty flush");
      equal(lib.readFlush(book.takeFlush()[0]).length, 0, "nothing counted twice");
    },
  },
  {
    name: "book: bad input names its parameter; readFlush refuses bytes that are not a flush",
    run: (lib) => {
      const book = new lib.TimeoutBook({ onWarning: () => {} });
      throwsArg(() => book.record(5, 1), TypeError, "bucket", "INVALID_TYPE");
      throwsArg(() => book.record("", 1), RangeError, "bucket", "OUT_OF_RANGE", /'bucket' must be a name of 1 … 256 bytes of UTF-8: current value is 0 bytes long/);
      throwsArg(() => book.record("a", NaN), RangeError, "ms", "NOT_FINITE");
      throwsArg(() => book.record("a", -1, "timeout"), RangeError, "ms", "NEGATIVE");
      throwsArg(() => book.record("a", "5", "error"), TypeError, "ms", "INVALID_TYPE");
      throwsArg(() => book.record("a", 5, "slow"), TypeError, "outcome", "INVALID_TYPE");
      throwsArg(() => book.timeout("a"), TypeError, "options", "INVALID_TYPE");
      throwsArg(() => book.timeout("a", { fallbackMs: 0 }), RangeError, "options.fallbackMs", "OUT_OF_RANGE");
      throwsArg(() => book.timeout(1, { fallbackMs: 5 }), TypeError, "bucket", "INVALID_TYPE");
      throwsArg(() => new lib.TimeoutBook({ maxStepFactor: 0.5 }), RangeError, "options.maxStepFactor", "OUT_OF_RANGE", /between 1 and 1000: current value is 0.5/);
      throwsArg(() => new lib.TimeoutBook({ flushEveryMs: 0 }), RangeError, "options.flushEveryMs", "OUT_OF_RANGE");
      throwsArg(() => new lib.TimeoutBook({ maxBuckets: 2000 }), RangeError, "options.maxBuckets", "OUT_OF_RANGE");
      throwsArg(() => new lib.TimeoutBook({ aggregator: 5 }), TypeError, "options.aggregator", "INVALID_TYPE");
      throwsArg(() => new lib.TimeoutBook({ relativeError: 2 }), RangeError, "options.relativeError", "OUT_OF_RANGE");
      throwsArg(() => lib.readFlush(new Uint8Array([1, 2, 3])), RangeError, "bytes", "FOREIGN_BYTES", /is not a valid timeout book flush/);
      book.record("a", 1);
      const [bytes] = book.takeFlush();
      throwsArg(() => lib.readFlush(bytes.subarray(0, bytes.length - 1)), RangeError, "bytes", "TRUNCATED_BYTES");
      equal(book.size, 0, "a refused record adds no bucket");
    },
  },
  {
    name: "book: maxBuckets bounds the book; records into more are dropped with one warning",
    run: (lib) => {
      const warnings = [];
      const book = new lib.TimeoutBook({ maxBuckets: 2, onWarning: (w) => warnings.push(w) });
      book.record("a", 1);
      book.record("b", 1);
      book.record("c", 1);
      book.record("c", 2);
      book.record("d", 1);
      equal(book.size, 2);
      equal(warnings.map((w) => `${w.code} ${w.bucket}`).join(), "BUCKETS_FULL c,BUCKETS_FULL d");
      ok(/the book holds 'maxBuckets' \(2\) buckets/.test(warnings[0].message), warnings[0].message);
      book.takeFlush();
      book.record("c", 1);
      equal(book.size, 1, "room again after a flush");
    },
  },
  {
    name: "book: timeout() takes the names record() takes, and what it holds per name is bounded by maxBuckets (the table's too)",
    run: async (lib) => {
      const fake = installFakeTime();
      try {
        const agg = aggregator();
        const warnings = [];
        const book = new lib.TimeoutBook({ aggregator: agg, maxBuckets: 3, onWarning: (w) => warnings.push(w) });
        throwsArg(() => book.timeout("x".repeat(2 * 1024 * 1024), { fallbackMs: 5 }), RangeError, "bucket", "OUT_OF_RANGE", /'bucket' must be a name of 1 … 256 bytes of UTF-8: current value is 2097152 bytes long/);
        throwsArg(() => book.timeout("", { fallbackMs: 5 }), RangeError, "bucket", "OUT_OF_RANGE");
        equal(warnings.length, 0, "a refused name is not told as a fallback");
        // Names past the bound are answered, not held: a warning told for a name no longer held is told again.
        equal(book.timeout("a", { fallbackMs: 5 }), 5);
        for (let i = 0; i < 100; i++) equal(book.timeout(`n${i}`, { fallbackMs: 5 }), 5);
        equal(book.timeout("a", { fallbackMs: 5 }), 5);
        equal(warnings.filter((w) => w.bucket === "a").length, 2, "told again: the book did not keep 101 names");
        await settle();
        // A table of 10 served rows (and one whose name record() refuses): at most maxBuckets are served.
        agg.buckets = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`b${i}`, row(400)]));
        agg.buckets["y".repeat(300)] = row(400);
        await book.refresh();
        // A fallback of 300: a first value within maxStepFactor (2) of it is the row's 400 itself.
        const served = Array.from({ length: 10 }, (_, i) => book.timeout(`b${i}`, { fallbackMs: 300 })).filter((v) => v === 400);
        equal(served.length, 3);
      } finally {
        fake.restore();
      }
    },
  },
  {
    name: "book: a bucket named __proto__ (or constructor) is a row of the aggregator's table like any other",
    run: (lib) => {
      // The book loads the derive core (lazily, as the aggregator does) before its class is used.
      const book = new lib.TimeoutBook({ onWarning: () => {} });
      const Core = FleetAggregatorCore();
      const agg = new Core(undefined);
      try {
        for (const name of ["__proto__", "constructor", "GET /a"]) book.record(name, 5);
        for (const bytes of book.takeFlush()) agg.merge(bytes, 1_000);
        const table = agg.table(2_000);
        equal(Object.getPrototypeOf(table.buckets), Object.prototype, "the table's prototype is untouched");
        equal(JSON.stringify(Object.keys(table.buckets)), JSON.stringify(["GET /a", "__proto__", "constructor"]));
        const read = JSON.parse(JSON.stringify(table));
        ok(Object.hasOwn(read.buckets, "__proto__"), "served in the JSON");
        equal(Object.getOwnPropertyDescriptor(read.buckets, "__proto__").value.n, 1);
      } finally {
        agg.free();
      }
    },
  },
  {
    name: "book: flush sends at most once per flushEveryMs, a failed flush keeps its data, a refused one is dropped",
    run: async (lib) => {
      const fake = installFakeTime();
      try {
        const agg = aggregator();
        const warnings = [];
        const book = new lib.TimeoutBook({ aggregator: agg, flushEveryMs: 10_000, refreshEveryMs: 3_600_000, onWarning: (w) => warnings.push(w) });
        book.record("a", 10);
        book.record("a", 11, "timeout");
        let r = await book.flush();
        equal(`${r.sent} ${r.kept} ${r.dropped}`, "1 0 0");
        equal(agg.flushes.length, 1);
        equal(agg.urls.join(), "GET /table,POST /flush", "the first flush reads the table too");
        book.record("a", 20);
        fake.jump(9_999);
        r = await book.flush();
        equal(r.sent, 0, "too soon: nothing sent");
        equal(book.size, 1, "and nothing lost");
        fake.jump(1);
        agg.status = 503;
        r = await book.flush();
        equal(`${r.sent} ${r.kept}`, "0 1", "unreachable: kept");
        const failed = warnings.filter((w) => w.code === "FLUSH_FAILED");
        equal(failed.length, 1, "a flush that could not be delivered is said, not only kept");
        equal(failed[0].message, "a flush could not be delivered (status 503); its data is kept for the next flush, in 'flushEveryMs' (10000 ms)");
        book.record("a", 30);
        book.record("b", 5, "error");
        agg.status = 204;
        fake.jump(10_000);
        r = await book.flush();
        equal(r.sent, 2);
        const [a, b] = lib.readFlush(agg.flushes[1]).sort((x, y) => (x.name < y.name ? -1 : 1));
        equal(a.successes.count, 2, "the kept 20 and the new 30, once each");
        equal(a.successes.min, 20);
        equal(a.timeouts, 0, "the first flush's timeout is not sent again");
        equal(b.errors, 1);
        book.record("a", 1);
        agg.status = 400;
        fake.jump(10_000);
        r = await book.flush();
        equal(`${r.sent} ${r.dropped}`, "0 1", "refused: dropped");
        equal(book.size, 0);
        equal(warnings.filter((w) => w.code === "FLUSH_REFUSED").length, 1);
        fake.jump(10_000);
        r = await book.flush();
        equal(r.sent + r.kept + r.dropped, 0, "nothing to send");
      } finally {
        fake.restore();
      }
    },
  },
  {
    name: "book: timeout() serves the fallback until the table, then the fleet's value within maxStepFactor and above the floor",
    run: async (lib) => {
      const fake = installFakeTime();
      try {
        const agg = aggregator();
        const warnings = [];
        const book = new lib.TimeoutBook({ aggregator: agg, refreshEveryMs: 60_000, maxStaleMs: 300_000, maxStepFactor: 2, onWarning: (w) => warnings.push(w) });
        equal(book.timeout("GET /a", { fallbackMs: 5000 }), 5000, "no table yet");
        equal(book.timeout("GET /a", { fallbackMs: 5000 }), 5000);
        equal(warnings.length, 1, "one warning");
        equal(warnings[0].code, "NO_TABLE");
        ok(warnings[0].message.includes("serving the fallback 5000 ms"), warnings[0].message);
        await settle();
        equal(agg.tableReads, 1, "the first timeout() started a refresh in the background");
        agg.buckets = { "GET /a": row(400), "GET /b": row(null), "GET /c": row(300, null, 999) };
        await book.refresh();
        equal(book.timeout("GET /a", { fallbackMs: 500 }), 400, "a first value within maxStepFactor of the fallback: as derived");
        equal(book.timeout("GET /b", { fallbackMs: 700 }), 700, "no value");
        equal(warnings.at(-1).code, "FEW_SAMPLES");
        equal(book.timeout("GET /c", { fallbackMs: 600 }), 600, "a value from 999 successes, below the 1 000 a p99 needs");
        equal(warnings.at(-1).code, "FEW_SAMPLES");
        ok(warnings.at(-1).message.includes("'GET /c'"), warnings.at(-1).message);
        // The fleet's value collapses: at most halved per refresh, never below the floor.
        agg.buckets = { "GET /a": row(20) };
        fake.jump(60_000);
        book.timeout("GET /a", { fallbackMs: 5000 }); // due: refreshes in the background
        await settle();
        equal(agg.tableReads, 3);
        await book.refresh();
        equal(book.timeout("GET /a", { fallbackMs: 5000 }), 100, "400 → 200 → 100: two refreshes, each ÷2");
        agg.buckets = { "GET /a": row(20, 80) };
        await book.refresh();
        equal(book.timeout("GET /a", { fallbackMs: 5000 }), 80, "the floor");
        // The aggregator goes away: the value is served until maxStaleMs, then the fallback.
        agg.tableStatus = 503;
        fake.jump(299_999);
        equal(book.timeout("GET /a", { fallbackMs: 5000 }), 80);
        fake.jump(1);
        equal(book.timeout("GET /a", { fallbackMs: 5000 }), 5000, "stale");
        await settle();
        ok(warnings.some((w) => w.code === "STALE"), "said why");
        ok(warnings.some((w) => w.code === "REFRESH_FAILED"), "and that the table could not be read");
      } finally {
        fake.restore();
      }
    },
  },
  {
    name: "book: one table cannot lift or collapse a value: a first value is at most maxStepFactor from the fallback, a floor is bounded by the step, a served value is whole ms",
    run: async (lib) => {
      const fake = installFakeTime();
      try {
        const agg = aggregator();
        const book = new lib.TimeoutBook({ aggregator: agg, refreshEveryMs: 60_000, maxStaleMs: 300_000, onWarning: () => {} });
        // A forged table: a floor at a day (timeouts "in force" at 86 400 000 ms) and a collapse to 0.1 ms.
        agg.buckets = { lift: row(300, 86_400_000), collapse: row(0.1), odd: row(1234.5) };
        await book.refresh();
        equal(book.timeout("lift", { fallbackMs: 1500 }), 3000, "a first value: at most ×2 the fallback, floor or not");
        equal(book.timeout("collapse", { fallbackMs: 1500 }), 750, "at most ÷2");
        equal(book.timeout("odd", { fallbackMs: 1000 }), 1235, "rounded up to a whole ms");
        equal(book.timeout("lift", { fallbackMs: 10 }), 3000, "anchored by its first caller");
        await book.refresh();
        equal(book.timeout("lift", { fallbackMs: 1500 }), 6000, "then ×2 per refresh, the floor included");
        equal(book.timeout("collapse", { fallbackMs: 1500 }), 375);
        for (const b of ["lift", "collapse", "odd"]) AbortSignal.timeout(book.timeout(b, { fallbackMs: 1 }));
      } finally {
        fake.restore();
      }
    },
  },
  {
    name: "book: a flush answered with some buckets refused drops those only, with a warning each; the rest counts as sent",
    run: async (lib) => {
      const fake = installFakeTime();
      try {
        const agg = aggregator();
        const warnings = [];
        const book = new lib.TimeoutBook({ aggregator: agg, refreshEveryMs: 1e9, onWarning: (w) => warnings.push(w) });
        agg.tableStatus = 503;
        agg.refused = [{ bucket: "junk-new", code: "TOO_MANY_BUCKETS", message: "a window holds at most 1024 buckets" }, { bucket: "not-ours", code: "TOO_MANY_BUCKETS" }];
        book.record("api", 10);
        book.record("junk-new", 10);
        const r = await book.flush();
        equal(`${r.sent} ${r.kept} ${r.dropped}`, "1 0 1", "the honest bucket is sent, only the refused one dropped");
        equal(book.size, 0);
        const refused = warnings.filter((w) => w.code === "FLUSH_REFUSED");
        equal(refused.length, 1);
        ok(refused[0].message.includes("junk-new") && refused[0].message.includes("TOO_MANY_BUCKETS"), refused[0].message);
        // A 200 whose body is not the contract's: every bucket was merged.
        agg.refused = undefined;
        agg.status = 200;
        book.record("api", 10);
        fake.jump(10_000);
        const s = await book.flush();
        equal(`${s.sent} ${s.kept} ${s.dropped}`, "1 0 0");
      } finally {
        fake.restore();
      }
    },
  },
  {
    name: "book: a URL aggregator is reached with the global fetch; a book without one records and serves its fallbacks",
    run: async (lib) => {
      const book = new lib.TimeoutBook({ onWarning: () => {} });
      book.record("a", 1);
      const r = await book.flush();
      equal(r.sent + r.kept + r.dropped, 0, "no aggregator: nothing sent");
      equal(book.size, 1, "and nothing lost");
      equal(book.timeout("a", { fallbackMs: 9 }), 9);
      await book.refresh();
      const original = globalThis.fetch;
      const seen = [];
      globalThis.fetch = async (request) => {
        seen.push(request.url);
        return new Response(null, { status: 204 });
      };
      try {
        const b = new lib.TimeoutBook({ aggregator: "https://agg.example/timeouts/", onWarning: () => {} });
        b.record("x", 1);
        await b.flush();
      } finally {
        globalThis.fetch = original;
      }
      ok(seen.includes("https://agg.example/timeouts/flush"), seen.join());
      ok(seen.includes("https://agg.example/timeouts/table"), seen.join());
    },
  },
  {
    name: "book: plan steps, retries and relays record into a book with `record: book` (a step's bucket is its name)",
    run: (lib) =>
      onFakeTime(async (clock) => {
        const book = new lib.TimeoutBook({ onWarning: () => {} });
        const d = lib.Deadline.in(10_000);
        const p = lib.plan(d, [
          { name: "fast", minMs: 1, preferredMs: 500, kind: "optional" },
          { name: "slow", minMs: 1, preferredMs: 100, kind: "optional" },
          { name: "broken", minMs: 1, preferredMs: 100, kind: "optional" },
          { name: "respond", minMs: 10, kind: "fallback" },
        ]);
        let done;
        const fast = p.run("fast", () => new Promise((resolve) => (done = resolve)), { record: book });
        await clock.advance(40);
        done("x");
        equal(await fast, "x");
        const hang = (signal) => new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason), { once: true }));
        const slow = p.run("slow", hang, { record: book, bucket: "GET /slow" });
        await clock.advance(100);
        await rejects(slow, lib.StepTimeout);
        await rejects(p.run("broken", () => Promise.reject(new Error("boom")), { record: book }), Error);
        await rejects(p.run("respond", () => 1, { record: {} }), TypeError);
        // A retry: the first attempt is cut at 50 ms, the second takes 10.
        let n = 0;
        const r = lib.retry(
          (signal) => (++n === 1 ? hang(signal) : new Promise((resolve) => (done = resolve))),
          { deadline: d, idempotent: true, attemptTimeoutMs: 50, attemptMinMs: 1, backoff: { baseMs: 5, maxMs: 5, jitter: 0 }, record: book, bucket: "upstream" },
        );
        await clock.advance(55);
        await clock.advance(10);
        done("ok");
        equal(await r, "ok");
        await rejects(lib.retry(() => 1, { deadline: d, record: book }), TypeError, /options\.bucket/);
        // A relay: the time to the first event.
        const res = await lib.relay(new Response("data: hi\n\n", { headers: { "content-type": "text/event-stream" } }), { record: book, bucket: "llm" });
        await res.text();
        const got = Object.fromEntries(lib.readFlush(book.takeFlush()[0]).map((b) => [b.name, b]));
        equal(Object.keys(got).sort().join(), "GET /slow,broken,fast,llm,upstream");
        equal(`${got.fast.successes.count} ${got.fast.successes.max}`, "1 40", "the step's latency");
        equal(`${got["GET /slow"].timeouts} ${got["GET /slow"].successes.count}`, "1 0", "a cut step is a timeout");
        equal(got.broken.errors, 1);
        equal(`${got.upstream.timeouts} ${got.upstream.successes.count}`, "1 1", "each attempt");
        equal(got.upstream.inForceMs, 50);
        equal(got.llm.successes.count, 1);
        return [d];
      }),
  },
  {
    name: "book: autoFlush flushes every flushEveryMs; stop() sends what is left at once and leaves no timer or listener",
    run: async (lib) => {
      const clock = installFakeTime();
      const listeners = () => (typeof globalThis.process?.listenerCount === "function" ? globalThis.process.listenerCount("SIGTERM") : 0);
      const before = listeners();
      try {
        const agg = aggregator();
        const book = new lib.TimeoutBook({ aggregator: agg, flushEveryMs: 1_000, refreshEveryMs: 1e9, onWarning: () => {} });
        const stop = book.autoFlush();
        book.record("GET /a", 10);
        await clock.advance(999);
        await settle();
        equal(agg.flushes.length, 0, "nothing before flushEveryMs");
        await clock.advance(1);
        await settle();
        equal(agg.flushes.length, 1, "a flush on the interval");
        book.record("GET /a", 20);
        book.record("GET /a", 30, "timeout");
        await clock.advance(500);
        const result = await stop();
        equal(result.sent, 1, "stop() sent the bucket");
        equal(agg.flushes.length, 2, "stop() flushed at once, within flushEveryMs");
        const [a] = lib.readFlush(agg.flushes[1]);
        equal(a.successes.count + a.timeouts, 2, "the two calls since the interval's flush");
        equal(clock.pending(), 0, "no host timer left armed");
        equal(listeners(), before, "no signal listener left");
        equal((await stop()).sent, 0, "a second stop() sends nothing");
        throwsArg(() => book.autoFlush({ signals: "SIGTERM" }), TypeError, "options.signals", "INVALID_TYPE");
      } finally {
        clock.restore();
      }
    },
  },
  {
    name: "book: a server's SIGTERM with autoFlush: every call recorded reaches the aggregator before the process ends",
    needs: ["spawnPackageScript"],
    run: async (lib, ctx) => {
      // A real SIGTERM to a real process; the aggregator is in the process and prints what it took.
      const { code, stdout } = await ctx.spawnPackageScript(
        `const { TimeoutBook, readFlush } = await import(deriveUrl);
        let calls = 0;
        const aggregator = {
          async fetch(request) {
            if (request.method !== "POST") return Response.json({ v: 1, q: 0.99, buckets: {} });
            for (const b of readFlush(new Uint8Array(await request.arrayBuffer()))) calls += b.successes.count + b.timeouts + b.errors;
            console.log("calls", calls);
            return new Response(null, { status: 204 });
          },
        };
        const book = new TimeoutBook({ aggregator, flushEveryMs: 60_000, onWarning: () => {} });
        book.autoFlush();
        for (let i = 0; i < 1000; i++) book.record(i % 2 ? "GET /a" : "GET /b", 1 + (i % 50), i % 10 ? "ok" : "timeout");
        setInterval(() => {}, 1_000); // a server's socket keeps the process up
        setTimeout(() => process.kill(process.pid, "SIGTERM"), 10);`,
      );
      ok(code !== 0, "the process ended by the signal");
      equal(stdout.trim().split("\n").at(-1), "calls 1000", stdout);
    },
  },
  {
    name: "book: a refresh that never reports (a Worker's request ended without waitUntil) is started again within REFRESH_LEASE, with a warning; timeout(bucket, { ctx }) hands the refresh to ctx.waitUntil",
    run: async (lib) => {
      const clock = installFakeTime();
      try {
        const agg = aggregator();
        agg.buckets = { "GET /a": row(1_000) };
        let hang = true; // workerd drops a promise its request did not hand to waitUntil: it never settles
        const answer = agg.fetch;
        agg.fetch = (request) => (hang && request.method === "GET" ? (agg.tableReads++, new Promise(() => {})) : answer(request));
        const warnings = [];
        const book = new lib.TimeoutBook({ aggregator: agg, refreshEveryMs: 60_000, onWarning: (w) => warnings.push(w.code) });
        equal(book.timeout("GET /a", { fallbackMs: 1_500 }), 1_500, "the fallback before any table");
        equal(agg.tableReads, 1, "a refresh started");
        await clock.advance(9_999);
        book.timeout("GET /a", { fallbackMs: 1_500 });
        equal(agg.tableReads, 1, "none again while the first may still answer");
        await clock.advance(1);
        hang = false;
        const waited = [];
        const ctx = { waitUntil: (p) => waited.push(p) };
        equal(book.timeout("GET /a", { fallbackMs: 1_500, ctx }), 1_500);
        equal(agg.tableReads, 2, "the lost refresh was started again after 10 s, not after refreshEveryMs");
        ok(warnings.includes("REFRESH_LOST"), `a warning said the refresh was lost: ${warnings}`);
        equal(waited.length, 1, "the refresh was handed to ctx.waitUntil");
        await waited[0];
        equal(book.timeout("GET /a", { fallbackMs: 1_500, ctx }), 1_000, "the fleet's value once the awaited refresh is done");
        equal(waited.length, 1, "no refresh was due, nothing handed over");
        throwsArg(() => book.timeout("GET /a", { fallbackMs: 1_500, ctx: {} }), TypeError, "options.ctx", "INVALID_TYPE");
      } finally {
        clock.restore();
      }
    },
  },
];

export default cases;
