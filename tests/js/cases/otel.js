// OpenTelemetry cases. The package imports no OpenTelemetry package: the
// cases that trace need the real `@opentelemetry/api` and
// `@opentelemetry/sdk-trace-base` (tests/js/otel-support.js), which only the
// runtimes with node_modules load (Node and Deno: `needs: ["otel"]`); the
// bad-input and tracing-off cases run everywhere. Span times come from the
// package's clock, so under fake time a span lasts exactly what was advanced.
import { equal, ok, near, rejects, throwsArg } from "../assert.js";
import { installFakeTime } from "../fake-time.js";
import { tracing } from "../../../pkg/main.js";

const UNSET = 0;
const ERROR = 2;

/** A span's duration or an hrtime, in ms. */
const ms = (hr) => hr[0] * 1e3 + hr[1] / 1e6;
const id = (s) => s.spanContext().spanId;
const parentId = (s) => s.parentSpanContext?.spanId;

/**
 * The finished spans as a tree, e.g. `app[deadline.plan[deadline.step a, deadline.step b]]`:
 * children in start order, roots in start order (then by name).
 */
function tree(spans) {
  const ids = new Set(spans.map(id));
  const byStart = [...spans].sort((a, b) => ms(a.startTime) - ms(b.startTime) || (a.name < b.name ? -1 : 1));
  const show = (s) => {
    const children = byStart.filter((c) => parentId(c) === id(s));
    return children.length ? `${s.name}[${children.map(show).join(", ")}]` : s.name;
  };
  return byStart.filter((s) => !ids.has(parentId(s))).map(show).join(", ");
}

/** The one finished span named `name` (and matching `where`). */
function span(spans, name, where = () => true) {
  const found = spans.filter((s) => s.name === name && where(s));
  equal(found.length, 1, `spans named ${name}`);
  return found[0];
}

/** Asserts `attributes` are among the span's, exactly. */
function attributes(s, expected) {
  for (const [key, value] of Object.entries(expected)) equal(s.attributes[key], value, `${s.name}: ${key}`);
}

/** The span's status and, for an ERROR, its message. */
function status(s, code, message) {
  equal(s.status.code, code, `${s.name}: status`);
  if (message !== undefined) equal(s.status.message, message, `${s.name}: status message`);
}

/**
 * Runs `body` with a fresh exporter and no package-wide tracing before or after; then every span
 * that was started has ended (a span never ended is never exported: lost, with its children's parent).
 */
async function traced(lib, ctx, body) {
  ctx.otel.exporter.reset();
  ctx.otel.forgetOpen();
  lib.traceWith(null);
  const clock = installFakeTime();
  try {
    await body(clock);
  } finally {
    clock.restore();
    lib.traceWith(null);
  }
  equal(ctx.otel.open().join(", "), "", "spans started and never ended");
}

const cases = [
  {
    name: "otel: a plan's steps are children of its span, inside the application's span, with the budget as attributes (fake time)",
    needs: ["otel"],
    run: (lib, ctx) => traced(lib, ctx, async (clock) => {
      const { api, exporter } = ctx.otel;
      const tracer = api.trace.getTracer("app");
      const d = lib.Deadline.in(1_000);
      const t0 = clock.now();
      const app = tracer.startSpan("app");
      let p;
      await api.context.with(api.trace.setSpan(api.context.active(), app), async () => {
        p = lib.plan(d, [
          { name: "retrieve", minMs: 50, preferredMs: 300, kind: "optional" },
          { name: "generate", minMs: 200, kind: "mandatory" },
          { name: "answer", minMs: 20, kind: "fallback" },
        ], { otel: api });
        const args = [];
        const r = p.run("retrieve", (signal, budgetMs) => {
          args.push(signal instanceof AbortSignal, budgetMs);
          // The application's own span inside a step is the step's child.
          tracer.startSpan("fetch docs").end();
          return clock.sleep(120).then(() => "docs");
        });
        await clock.advance(120);
        equal(await r, "docs");
        equal(args.join(), "true,300", "fn gets its signal and budget as without tracing");
        const g = p.run("generate", () => clock.sleep(10).then(() => Promise.reject(new Error("model down"))));
        g.catch(() => {});
        await clock.advance(10);
        await rejects(g, Error, /model down/);
        equal(await p.run("answer", () => "sorry"), "sorry");
      });
      app.end();
      const spans = exporter.getFinishedSpans();
      equal(tree(spans), "app[deadline.plan[deadline.step retrieve[fetch docs], deadline.step generate, deadline.step answer]]");
      const plan = span(spans, "deadline.plan");
      attributes(plan, { "deadline.remaining_ms": 1_000, "deadline.steps": 3, "deadline.steps_run": 3 });
      equal(plan.instrumentationScope.name, "edge-deadline", "the per-call module's own tracer");
      near(ms(plan.startTime) - ms(span(spans, "deadline.step retrieve").startTime), 0, 1e-3, "the plan starts with its first step here");
      near(ms(plan.duration), 130, 1e-3, "the plan's span ends with its last step");
      status(plan, UNSET);
      // Each step's attributes are its trace record, its duration the record's elapsedMs.
      const records = p.records;
      equal(records.map((r) => r.outcome).join(), "ok,error,ok");
      for (const r of records) {
        const s = span(spans, `deadline.step ${r.step}`);
        equal(parentId(s), id(plan), `${r.step}: a child of the plan's span`);
        attributes(s, { "deadline.step": r.step, "deadline.remaining_ms": r.remainingAtStartMs, "deadline.cap_ms": r.capMs, "deadline.outcome": r.outcome });
        near(ms(s.duration), r.elapsedMs, 1e-3, `${r.step}: duration`);
        near(ms(s.startTime) - ms(plan.startTime), t0 + 1_000 - r.remainingAtStartMs - t0, 1e-3, `${r.step}: start`);
      }
      const retrieve = span(spans, "deadline.step retrieve");
      attributes(retrieve, { "deadline.step.kind": "optional", "deadline.remaining_ms": 1_000, "deadline.cap_ms": 300 });
      near(ms(retrieve.duration), 120, 1e-3);
      status(retrieve, UNSET);
      equal(retrieve.events.length, 0);
      const generate = span(spans, "deadline.step generate");
      attributes(generate, { "deadline.step.kind": "mandatory", "deadline.remaining_ms": 880 });
      status(generate, ERROR, "model down");
      equal(generate.events.map((e) => e.name).join(), "exception");
      equal(generate.events[0].attributes["exception.message"], "model down");
      near(ms(generate.events[0].time), ms(generate.endTime), 1e-3, "the exception is recorded when the step ends");
      const answer = span(spans, "deadline.step answer");
      attributes(answer, { "deadline.step.kind": "fallback", "deadline.remaining_ms": 870 });
      equal(ms(answer.duration), 0);
      status(answer, UNSET);
      d.dispose();
    }),
  },
  {
    name: "otel: a plan's span ends when the plan does, without end(): when its deadline is disposed, or when its last step settles (fake time)",
    needs: ["otel"],
    run: (lib, ctx) => traced(lib, ctx, async (clock) => {
      const { api, exporter } = ctx.otel;
      lib.traceWith(api);
      // The answer came from the model: the fallback never runs, and the handler disposes the deadline.
      const d = lib.Deadline.in(1_000);
      const p = lib.plan(d, [
        { name: "generate", minMs: 50, kind: "mandatory" },
        { name: "respond", minMs: 10, kind: "fallback" },
      ]);
      const g = p.run("generate", () => clock.sleep(30).then(() => "text"));
      await clock.advance(30);
      equal(await g, "text");
      await clock.advance(7);
      equal(tree(exporter.getFinishedSpans()), "deadline.step generate", "the plan is not over while its deadline lives");
      d.dispose();
      equal(tree(exporter.getFinishedSpans()), "deadline.plan[deadline.step generate]", "the plan's span ended with its deadline");
      near(ms(span(exporter.getFinishedSpans(), "deadline.plan").duration), 37, 1e-3, "at the disposal");

      // An optional step never run: the plan ends when its last step settles.
      exporter.reset();
      const e = lib.Deadline.in(1_000);
      const q = lib.plan(e, [
        { name: "enrich", minMs: 50, kind: "optional" },
        { name: "respond", minMs: 10, kind: "fallback" },
      ]);
      const r = q.run("respond", () => clock.sleep(4).then(() => "ok"));
      await clock.advance(4);
      equal(await r, "ok");
      equal(tree(exporter.getFinishedSpans()), "deadline.plan[deadline.step respond]", "ended by its last step");
      e.dispose();
      equal(exporter.getFinishedSpans().length, 2, "ended once");
    }),
  },
  {
    name: "otel: a skipped step is a success, a refused one an error; end() ends the plan's span once, later steps stay its children",
    needs: ["otel"],
    run: (lib, ctx) => traced(lib, ctx, async (clock) => {
      const { api, exporter } = ctx.otel;
      lib.traceWith(api);
      const d = lib.Deadline.in(100);
      const p = lib.plan(d, [
        { name: "retrieve", minMs: 500, kind: "optional" },
        { name: "generate", minMs: 500, kind: "mandatory" },
        { name: "answer", minMs: 10, kind: "fallback" },
      ]);
      ok(lib.isSkipped(await p.run("retrieve", () => "never")));
      await clock.advance(5);
      p.end();
      p.end();
      await rejects(p.run("generate", () => "never"), lib.InsufficientBudget);
      const spans = exporter.getFinishedSpans();
      equal(tree(spans), "deadline.plan[deadline.step retrieve, deadline.step generate]");
      const plan = span(spans, "deadline.plan");
      attributes(plan, { "deadline.steps_run": 1 });
      near(ms(plan.duration), 5, 1e-3, "ended by end(), once");
      const retrieve = span(spans, "deadline.step retrieve");
      attributes(retrieve, { "deadline.outcome": "skipped", "deadline.cap_ms": 0, "deadline.remaining_ms": 100 });
      status(retrieve, UNSET);
      const generate = span(spans, "deadline.step generate");
      attributes(generate, { "deadline.outcome": "insufficient", "deadline.cap_ms": 0, "deadline.remaining_ms": 95 });
      status(generate, ERROR);
      ok(/at least 500 ms/.test(generate.status.message), generate.status.message);
      equal(generate.events[0].attributes["exception.type"], "InsufficientBudget");
      d.dispose();

      // Bad input once tracing is on: a step of a disposed deadline, bad limits for a stream. The
      // error is the caller's; no span is left open (traced() checks).
      exporter.reset();
      const gone = lib.Deadline.in(1_000);
      const q = lib.plan(gone, [{ name: "x", minMs: 1, kind: "mandatory" }]);
      gone.dispose();
      await rejects(q.run("x", () => "never"), Error, /disposed/);
      q.end();
      throwsArg(() => lib.withStallTimeout(new ReadableStream(), { firstChunkMs: -1, stallMs: 1 }), RangeError, "options.firstChunkMs", "NEGATIVE");
      equal(tree(exporter.getFinishedSpans()), "deadline.plan", "the plan's span, and no step's");
    }),
  },
  {
    name: "otel: a retry's attempts are children of its span: each with its cap, outcome and failure, the backoff as an event (fake time)",
    needs: ["otel"],
    run: (lib, ctx) => traced(lib, ctx, async (clock) => {
      const { api, exporter, provider } = ctx.otel;
      lib.traceWith(api, { tracer: provider.getTracer("mine") });
      const d = lib.Deadline.in(1_000);
      const backoff = { baseMs: 20, maxMs: 20, jitter: 0.5 };
      const [delay] = lib.backoffSchedule(backoff, 1, 7);
      // Attempt 1 never answers (cut at its 100 ms), attempt 2 answers 30 ms after it starts,
      // after the backoff (on a host timer of whole milliseconds).
      const records = [];
      const r = lib.retry((signal, { attempt }) => {
        api.trace.getTracer("app").startSpan(`call ${attempt}`).end();
        return attempt === 1 ? new Promise(() => {}) : clock.sleep(30).then(() => "answer");
      }, { deadline: d, attemptTimeoutMs: 100, backoff, seed: 7, idempotent: true, onAttempt: (record) => records.push(record) });
      const slept = Math.ceil(delay);
      await clock.advance(100 + slept);
      await clock.advance(30);
      equal(await r, "answer");
      const spans = exporter.getFinishedSpans();
      equal(tree(spans), "deadline.retry[deadline.attempt[call 1], deadline.attempt[call 2]]");
      const retry = span(spans, "deadline.retry");
      equal(retry.instrumentationScope.name, "mine", "traceWith's tracer");
      attributes(retry, { "deadline.remaining_ms": 1_000, "deadline.attempts": 2, "deadline.outcome": "ok" });
      near(ms(retry.duration), 100 + slept + 30, 1e-3);
      status(retry, UNSET);
      equal(retry.events.map((e) => e.name).join(), "deadline.backoff");
      attributes(retry.events[0], { "deadline.attempt": 1, "deadline.backoff_ms": Math.round(delay * 10) / 10 });
      near(ms(retry.events[0].time) - ms(retry.startTime), 100, 1e-3, "the backoff starts when attempt 1 ends");
      const first = span(spans, "deadline.attempt", (s) => s.attributes["deadline.attempt"] === 1);
      attributes(first, { "deadline.remaining_ms": 1_000, "deadline.cap_ms": 100, "deadline.outcome": "timeout", "deadline.failure": "ambiguous" });
      near(ms(first.duration), 100, 1e-3);
      status(first, ERROR);
      equal(first.events[0].attributes["exception.type"], "AttemptTimeout");
      const second = span(spans, "deadline.attempt", (s) => s.attributes["deadline.attempt"] === 2);
      attributes(second, { "deadline.remaining_ms": 1_000 - 100 - slept, "deadline.cap_ms": 100, "deadline.outcome": "ok" });
      equal(records.length, 2);
      for (const [s, record] of [[first, records[0]], [second, records[1]]]) {
        equal(s.attributes["deadline.remaining_ms"], d.at - record.startedAtMs, "as the attempt's record says");
        equal(s.attributes["deadline.cap_ms"], record.timeoutMs);
        equal(s.attributes["deadline.outcome"], record.outcome);
        near(ms(s.duration), record.elapsedMs, 1e-3);
      }
      equal(second.attributes["deadline.failure"], undefined, "no failure on success");
      near(ms(second.duration), 30, 1e-3);
      status(second, UNSET);
      d.dispose();

      // A retry the deadline ends: the retry's span says why, in the core's words.
      exporter.reset();
      const short = lib.Deadline.in(50);
      const failed = lib.retry(() => new Promise(() => {}), { deadline: short });
      failed.catch(() => {});
      await clock.advance(50);
      const e = await rejects(failed, lib.RetryFailed);
      const after = exporter.getFinishedSpans();
      equal(tree(after), "deadline.retry[deadline.attempt]");
      const stopped = span(after, "deadline.retry");
      attributes(stopped, { "deadline.outcome": "deadline", "deadline.attempts": 1, "deadline.remaining_ms": 50 });
      status(stopped, ERROR, e.message);
      near(ms(stopped.duration), 50, 1e-3);
      const cut = span(after, "deadline.attempt");
      attributes(cut, { "deadline.outcome": "deadline", "deadline.cap_ms": 50 });
      equal(cut.events[0].attributes["exception.type"], "DeadlineExceeded");

      // A classify that breaks its contract rejects retry with a TypeError: both spans end with it.
      exporter.reset();
      const other = lib.Deadline.in(1_000);
      const broken = await rejects(lib.retry(() => Promise.reject(new Error("x")), { deadline: other, classify: () => "maybe" }), TypeError, /'options.classify'/);
      const spans2 = exporter.getFinishedSpans();
      equal(tree(spans2), "deadline.retry[deadline.attempt]");
      attributes(span(spans2, "deadline.retry"), { "deadline.outcome": "error" });
      status(span(spans2, "deadline.retry"), ERROR, broken.message);
      other.dispose();
    }),
  },
  {
    name: "otel: a hedge's attempts are children of its span; the loser ends as lost, not as an error (fake time)",
    needs: ["otel"],
    run: (lib, ctx) => traced(lib, ctx, async (clock) => {
      const { api, exporter } = ctx.otel;
      lib.traceWith(api);
      const d = lib.Deadline.in(1_000);
      // Attempt 1 would answer at 200 ms; the hedge at 50 ms answers at 80 ms and wins.
      const h = lib.hedge((signal, { attempt }) => {
        api.trace.getTracer("app").startSpan(`call ${attempt}`).end();
        return clock.sleep(attempt === 1 ? 200 : 30).then(() => `attempt ${attempt}`);
      }, { deadline: d, delayMs: 50 });
      await clock.advance(200);
      equal(await h, "attempt 2");
      const spans = exporter.getFinishedSpans();
      equal(tree(spans), "deadline.hedge[deadline.attempt[call 1], deadline.attempt[call 2]]");
      const hedge = span(spans, "deadline.hedge");
      equal(hedge.instrumentationScope.name, "edge-deadline", "the module's tracer by default");
      attributes(hedge, { "deadline.remaining_ms": 1_000, "deadline.hedge.delay_ms": 50, "deadline.attempts": 2, "deadline.outcome": "ok" });
      near(ms(hedge.duration), 80, 1e-3);
      status(hedge, UNSET);
      const first = span(spans, "deadline.attempt", (s) => s.attributes["deadline.attempt"] === 1);
      attributes(first, { "deadline.remaining_ms": 1_000, "deadline.outcome": "lost" });
      near(ms(first.duration), 80, 1e-3, "ended when the other answered");
      status(first, UNSET);
      const second = span(spans, "deadline.attempt", (s) => s.attributes["deadline.attempt"] === 2);
      attributes(second, { "deadline.remaining_ms": 950, "deadline.outcome": "ok" });
      near(ms(second.duration), 30, 1e-3);
      d.dispose();
    }),
  },
  {
    name: "otel: a stall verdict is an event on the stream's span, a child of the step that read it (fake time)",
    needs: ["otel"],
    run: (lib, ctx) => traced(lib, ctx, async (clock) => {
      const { api, exporter } = ctx.otel;
      lib.traceWith(api);
      const d = lib.Deadline.in(1_000);
      const p = lib.plan(d, [{ name: "read", minMs: 10, kind: "mandatory" }]);
      const step = p.run("read", async (signal) => {
        const source = new ReadableStream({ start: (c) => c.enqueue(new Uint8Array(3)) });
        const reader = lib.withStallTimeout(source, { firstChunkMs: 100, stallMs: 50, deadline: d }).getReader();
        await reader.read();
        await reader.read(); // nothing more comes: stalls 50 ms after the chunk
      });
      step.catch(() => {});
      await clock.advance(60);
      const e = await rejects(step, lib.StreamStalled);
      const spans = exporter.getFinishedSpans();
      equal(tree(spans), "deadline.plan[deadline.step read[deadline.stream]]");
      attributes(span(spans, "deadline.step read"), { "deadline.outcome": "stalled" });
      const stream = span(spans, "deadline.stream");
      attributes(stream, {
        "deadline.remaining_ms": 1_000,
        "deadline.stall.first_chunk_ms": 100,
        "deadline.stall.stall_ms": 50,
        "deadline.stream.chunks": 1,
        "deadline.stream.bytes": 3,
        "deadline.outcome": "stalled",
      });
      equal(stream.attributes["deadline.stall.first_byte_ms"], undefined, "no limit that was not given");
      status(stream, ERROR, e.message);
      near(ms(stream.duration), 50, 1e-3);
      equal(stream.events.map((ev) => ev.name).join(), "deadline.stall,exception");
      attributes(stream.events[0], { "deadline.stall.phase": "stall", "deadline.stall.after_ms": e.afterMs, "deadline.stall.chunks": 1, "deadline.stall.bytes": 3 });
      near(e.afterMs, 50, 1e-3);
      near(ms(stream.events[0].time), ms(stream.endTime), 1e-3, "the verdict's instant");

      // A stream that closes ends its span as a success.
      exporter.reset();
      const body = lib.withStallTimeout(new ReadableStream({ start: (c) => (c.enqueue(new Uint8Array([97, 98])), c.close()) }), { firstChunkMs: 100, stallMs: 50 });
      equal(await new Response(body).text(), "ab");
      const closed = span(exporter.getFinishedSpans(), "deadline.stream");
      attributes(closed, { "deadline.outcome": "closed", "deadline.stream.chunks": 1, "deadline.stream.bytes": 2 });
      equal(closed.attributes["deadline.remaining_ms"], undefined, "no deadline, no remaining time");
      status(closed, UNSET);
      equal(closed.events.length, 0);
      d.dispose();
    }),
  },
  {
    name: "otel fixture: fetchWithDeadline's span covers the request: a first-byte stall is its event; a whole body ends it as closed",
    needs: ["otel", "fixtureUrl"],
    run: async (lib, ctx) => {
      const { api, exporter } = ctx.otel;
      exporter.reset();
      ctx.otel.forgetOpen();
      const id = () => `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`;
      const d = lib.Deadline.in(10_000);
      const e = await rejects(lib.fetchWithDeadline(`${ctx.fixtureUrl}/stall/no-headers?id=${id()}`, undefined, { deadline: d, firstByteMs: 50, otel: api }), lib.StreamStalled);
      equal(e.phase, "first-byte");
      const stalled = span(exporter.getFinishedSpans(), "deadline.stream");
      attributes(stalled, { "deadline.stall.first_byte_ms": 50, "deadline.outcome": "stalled", "deadline.stream.chunks": 0, "deadline.stream.bytes": 0 });
      const remaining = stalled.attributes["deadline.remaining_ms"];
      ok(remaining > 9_000 && remaining <= 10_000, `remaining_ms ${remaining}`);
      status(stalled, ERROR, e.message);
      equal(stalled.events.map((ev) => ev.name).join(), "deadline.stall,exception");
      attributes(stalled.events[0], { "deadline.stall.phase": "first-byte", "deadline.stall.after_ms": Math.round(e.afterMs * 10) / 10, "deadline.stall.chunks": 0 });
      ok(ms(stalled.duration) >= 50, `the span covers the wait for headers: ${ms(stalled.duration)} ms`);

      exporter.reset();
      const res = await lib.fetchWithDeadline(`${ctx.fixtureUrl}/stall/steady?id=${id()}&n=3&gap=5`, undefined, { deadline: d, stallMs: 1_000, otel: api });
      const body = new Uint8Array(await res.arrayBuffer());
      const closed = span(exporter.getFinishedSpans(), "deadline.stream");
      attributes(closed, { "deadline.outcome": "closed", "deadline.stall.stall_ms": 1_000, "deadline.stream.bytes": body.length });
      ok(closed.attributes["deadline.stream.chunks"] >= 1, "chunks counted");
      status(closed, UNSET);
      d.dispose();
      equal(ctx.otel.open().join(", "), "", "spans started and never ended");
    },
  },
  {
    name: "otel fixture: a resumable fetchWithDeadline traces each attempt's body: a first-chunk stall that was retried, then the body that closed",
    needs: ["otel", "fixtureUrl"],
    run: async (lib, ctx) => {
      const { api, exporter } = ctx.otel;
      exporter.reset();
      ctx.otel.forgetOpen();
      const key = `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`;
      const d = lib.Deadline.in(10_000);
      const res = await lib.fetchWithDeadline(`${ctx.fixtureUrl}/resume/sse?key=${key}&fail=silent&events=3`, undefined, { deadline: d, firstChunkMs: 100, retry: true, otel: api });
      ok((await res.text()).includes("id: 3"), "the body of the second attempt");
      const streams = exporter.getFinishedSpans().filter((s) => s.name === "deadline.stream");
      equal(streams.map((s) => s.attributes["deadline.outcome"]).join(), "stalled,closed");
      equal(streams[0].events[0]?.name, "deadline.stall");
      attributes(streams[0].events[0], { "deadline.stall.phase": "first-chunk" });
      d.dispose();
      equal(ctx.otel.open().join(", "), "", "spans started and never ended");
    },
  },
  {
    name: "otel: with retry, each attempt's stream span is numbered and keeps first_byte_ms; a limit not given is never 2^53 − 1; after_ms is rounded to 0.1 ms (fake time)",
    needs: ["otel"],
    run: (lib, ctx) => traced(lib, ctx, async (clock) => {
      const { api, exporter } = ctx.otel;
      const d = lib.Deadline.in(20_000);
      const sse = { "content-type": "text/event-stream" };
      const upstream = (signal, { attempt }) =>
        attempt > 1
          ? new Response("data: hi\n\n", { headers: sse })
          : new Response(new ReadableStream({ start: (c) => c.enqueue(new TextEncoder().encode(": ping\n\n")) }), { headers: sse });
      let res;
      lib.traceWith(api);
      lib.relay(upstream, { deadline: d, firstByteMs: 1_000, retry: { attemptMinMs: 1_000, maxAttempts: 3 } }).then((r) => (res = r));
      // Only a keep-alive: the default wait for first content (half of the 20 s) runs out at 10 s; the wake comes 0.3 ms late.
      await clock.advance(9_999);
      clock.jump(1.3);
      await clock.advance(0);
      for (let i = 0; i < 10 && res === undefined; i++) await clock.advance(500);
      equal(res?.status, 200, "the retry's answer");
      equal(await res.text(), "data: hi\n\n");
      const streams = exporter.getFinishedSpans().filter((s) => s.name === "deadline.stream");
      equal(streams.map((s) => s.attributes["deadline.outcome"]).join(), "stalled,closed");
      attributes(streams[0], { "deadline.attempt": 1, "deadline.stall.first_byte_ms": 1_000, "deadline.stall.first_chunk_ms": 10_000 });
      attributes(streams[1], { "deadline.attempt": 2, "deadline.stall.first_byte_ms": 1_000 });
      for (const s of streams) {
        equal(s.attributes["deadline.stall.stall_ms"], undefined, "stallMs was not given");
        ok(Object.values(s.attributes).every((v) => v !== Number.MAX_SAFE_INTEGER), `no 2^53 − 1 among ${JSON.stringify(s.attributes)}`);
      }
      equal(streams[0].events[0]?.name, "deadline.stall");
      attributes(streams[0].events[0], { "deadline.stall.phase": "first-chunk", "deadline.stall.after_ms": 10_000.3, "deadline.attempt": 1 });
      d.dispose();
    }),
  },
  {
    name: "otel: relay's otel option traces its upstream as fetchWithDeadline's does (from the call, a first-byte stall, numbered attempts with retry); otel: null wins over traceWith (fake time)",
    needs: ["otel"],
    run: (lib, ctx) => traced(lib, ctx, async (clock) => {
      const { api, exporter } = ctx.otel;
      const enc = new TextEncoder();
      const sse = { "content-type": "text/event-stream" };
      const events = (n) => new Response(new ReadableStream({ start(c) { for (let i = 1; i <= n; i++) c.enqueue(enc.encode(`data: ${i}\n\n`)); c.close(); } }), { headers: sse });
      const streams = () => exporter.getFinishedSpans().filter((s) => s.name === "deadline.stream");

      // Per call, no traceWith: one span from the call (the wait for headers counted) to the body's end.
      let d = lib.Deadline.in(20_000);
      let pending = lib.relay(() => clock.sleep(30).then(() => events(2)), { deadline: d, firstByteMs: 1_000, stallMs: 500, otel: api });
      await clock.advance(30);
      let res = await pending;
      equal(await res.text(), "data: 1\n\ndata: 2\n\n");
      const [closed] = streams();
      ok(closed !== undefined, "relay's upstream is a deadline.stream span");
      // first_chunk_ms: the default wait, counted from the headers (half of the 19 970 ms left then).
      attributes(closed, { "deadline.outcome": "closed", "deadline.remaining_ms": 20_000, "deadline.stall.first_byte_ms": 1_000, "deadline.stall.first_chunk_ms": 9_985, "deadline.stall.stall_ms": 500, "deadline.stream.chunks": 2, "deadline.stream.bytes": 18 });
      equal(closed.attributes["deadline.attempt"], undefined, "no retry: no attempt number");
      equal(ms(closed.duration), 30, "from the call: the wait for headers is in it");
      status(closed, UNSET);

      // An upstream that never answers: the fallback, and the span ends stalled with the verdict.
      exporter.reset();
      d = lib.Deadline.in(20_000);
      pending = lib.relay(() => new Promise(() => {}), { deadline: d, firstByteMs: 50, otel: api });
      await clock.advance(50);
      res = await pending;
      equal(res.status, 504);
      await res.body?.cancel();
      const [stalled] = streams();
      ok(stalled !== undefined, "a relay that never got headers is traced too");
      attributes(stalled, { "deadline.outcome": "stalled", "deadline.stall.first_byte_ms": 50, "deadline.stream.chunks": 0, "deadline.stream.bytes": 0 });
      equal(ms(stalled.duration), 50);
      status(stalled, ERROR);
      equal(stalled.events[0]?.name, "deadline.stall");
      attributes(stalled.events[0], { "deadline.stall.phase": "first-byte", "deadline.stall.after_ms": 50 });

      // With retry: each attempt's body is numbered, as fetchWithDeadline's are.
      exporter.reset();
      const pingThenEvent = (signal, { attempt }) =>
        attempt > 1 ? events(1) : new Response(new ReadableStream({ start: (c) => c.enqueue(enc.encode(": ping\n\n")) }), { headers: sse });
      d = lib.Deadline.in(20_000);
      pending = lib.relay(pingThenEvent, { deadline: d, firstChunkMs: 100, retry: { attemptMinMs: 100, maxAttempts: 2 }, otel: api });
      for (let i = 0; i < 10 && streams().length < 1; i++) await clock.advance(100);
      for (let i = 0; i < 10; i++) await clock.advance(100);
      res = await pending;
      equal(await res.text(), "data: 1\n\n");
      equal(streams().map((s) => `${s.attributes["deadline.attempt"]} ${s.attributes["deadline.outcome"]}`).join(), "1 stalled,2 closed");

      // otel: null: untraced though traceWith is on, with retry or without.
      exporter.reset();
      lib.traceWith(api);
      d = lib.Deadline.in(20_000);
      equal(await (await lib.relay(() => events(1), { deadline: d, otel: null })).text(), "data: 1\n\n");
      d = lib.Deadline.in(20_000);
      equal(await (await lib.relay(() => events(1), { deadline: d, retry: true, otel: null })).text(), "data: 1\n\n");
      equal(exporter.getFinishedSpans().length, 0, "otel: null wins over traceWith");
      d = lib.Deadline.in(20_000);
      equal(await (await lib.relay(() => events(1), { deadline: d })).text(), "data: 1\n\n");
      equal(streams().length, 1, "left out: traceWith's");
    }),
  },
  {
    name: "otel: the hook's mark (what a circuit breaker reports): an event on the active span, or a span of no duration without one",
    needs: ["otel"],
    run: (lib, ctx) => traced(lib, ctx, async (clock) => {
      const { api, exporter } = ctx.otel;
      equal(tracing(undefined), null, "off: the caller keeps null");
      equal(tracing(null), null);
      const t = tracing(api);
      equal(tracing(api), t, "one Tracing per module");
      lib.traceWith(api);
      ok(tracing(undefined) !== null, "traceWith's");
      const app = api.trace.getTracer("app").startSpan("app");
      const t0 = clock.now();
      api.context.with(api.trace.setSpan(api.context.active(), app), () => t.mark("deadline.breaker", { "deadline.breaker.state": "open" }, t0 + 5));
      app.end();
      t.mark("deadline.breaker", { "deadline.breaker.state": "closed" }, t0 + 7);
      const spans = exporter.getFinishedSpans();
      equal(tree(spans), "app, deadline.breaker");
      const [event] = span(spans, "app").events;
      equal(event.name, "deadline.breaker");
      attributes(event, { "deadline.breaker.state": "open" });
      const alone = span(spans, "deadline.breaker");
      attributes(alone, { "deadline.breaker.state": "closed" });
      equal(ms(alone.duration), 0);
      near(ms(alone.startTime) - ms(event.time), 2, 1e-3, "both on the package's clock");
      status(alone, UNSET);
    }),
  },
  {
    name: "otel: a circuit breaker's changes are deadline.breaker events on the attempt's span; a refused retry's span says circuit-open (fake time)",
    needs: ["otel"],
    run: (lib, ctx) => traced(lib, ctx, async (clock) => {
      const { api, exporter } = ctx.otel;
      const b = new lib.CircuitBreaker({ consecutiveFailures: 1, openMs: 5_000, otel: api });
      const d = lib.Deadline.in(1_000);
      try {
        const down = () => Promise.reject(Object.assign(new Error("503"), { failure: "not-applied" }));
        const r = lib.retry(down, { deadline: d, circuit: b.for("llm"), otel: api, backoff: { baseMs: 1, maxMs: 1, jitter: 0 } });
        await clock.advance(5);
        const e = await rejects(r, lib.RetryFailed);
        equal(e.reason, "circuit-open");
        const spans = exporter.getFinishedSpans();
        // The attempt's outcome reaches the breaker once the attempt has ended, outside its span,
        // so the opening is a deadline.breaker span of its own.
        equal(tree(spans), "deadline.breaker, deadline.retry[deadline.attempt]");
        attributes(span(spans, "deadline.breaker"), { "deadline.breaker.key": "llm", "deadline.breaker.from": "closed", "deadline.breaker.to": "open", "deadline.breaker.reason": "consecutive-failures" });
        // Inside a span of the application's, it is an event on that span.
        exporter.reset();
        const app = api.trace.getTracer("app").startSpan("app");
        await clock.advance(5_000);
        api.context.with(api.trace.setSpan(api.context.active(), app), () => b.acquire("llm").failure());
        app.end();
        const [event] = span(exporter.getFinishedSpans(), "app").events.filter((x) => x.name === "deadline.breaker" && x.attributes["deadline.breaker.to"] === "open");
        attributes(event, { "deadline.breaker.from": "half-open", "deadline.breaker.reason": "probe-failed" });
        exporter.reset();
        const refused = spans;
        attributes(span(refused, "deadline.retry"), { "deadline.outcome": "circuit-open", "deadline.attempts": 1 });
        status(span(refused, "deadline.retry"), ERROR);
        // A change with no span active: a deadline.breaker span of its own.
        exporter.reset();
        await clock.advance(5_000);
        b.acquire("llm").success();
        const alone = exporter.getFinishedSpans();
        equal(alone.map((x) => `${x.name} ${x.attributes["deadline.breaker.to"]}`).join(", "), "deadline.breaker half-open, deadline.breaker closed");
        throwsArg(() => new lib.CircuitBreaker({ otel: {} }), TypeError, "options.otel", "INVALID_TYPE");
      } finally {
        d.dispose();
        b.dispose();
      }
    }),
  },
  {
    name: "otel: with tracing off (no traceWith, or otel: null) nothing is traced though a provider is registered",
    needs: ["otel"],
    run: (lib, ctx) => traced(lib, ctx, async (clock) => {
      const { api, exporter } = ctx.otel;
      const steps = [{ name: "a", minMs: 1, kind: "mandatory" }];
      const work = async (extra) => {
        const d = lib.Deadline.in(1_000);
        const p = lib.plan(d, steps, extra);
        equal(await p.run("a", () => 1), 1);
        p.end();
        equal(await lib.retry(() => 2, { deadline: d, ...extra }), 2);
        equal(await lib.hedge(() => 3, { deadline: d, delayMs: 10, ...extra }), 3);
        const body = lib.withStallTimeout(new ReadableStream({ start: (c) => c.close() }), { firstChunkMs: 1, stallMs: 1, ...extra });
        equal(await new Response(body).text(), "");
        d.dispose();
      };
      await work(undefined);
      equal(exporter.getFinishedSpans().length, 0, "off by default");
      lib.traceWith(api);
      await work({ otel: null });
      equal(exporter.getFinishedSpans().length, 0, "otel: null wins over traceWith");
      await work(undefined);
      equal(tree(exporter.getFinishedSpans()), "deadline.hedge[deadline.attempt], deadline.plan[deadline.step a], deadline.retry[deadline.attempt], deadline.stream");
      lib.traceWith(null);
      exporter.reset();
      await work(undefined);
      equal(exporter.getFinishedSpans().length, 0, "traceWith(null) turns it off");
      void clock;
    }),
  },
  {
    name: "otel: traceWith and the otel option take the API module or null, and name what is wrong",
    run: async (lib) => {
      throwsArg(() => lib.traceWith({}), TypeError, "api", "INVALID_TYPE", /^'api' must be the @opentelemetry\/api module .*: current value is an object$/);
      throwsArg(() => lib.traceWith(undefined), TypeError, "api", "INVALID_TYPE", /current value is undefined/);
      const apiLike = { trace: { setSpan: () => ({}), getTracer: () => ({ startSpan: () => ({}) }) }, context: { active: () => ({}), with: (c, fn, t, ...a) => fn(...a) } };
      throwsArg(() => lib.traceWith(apiLike, { tracer: {} }), TypeError, "options.tracer", "INVALID_TYPE", /'options.tracer' must be a Tracer/);
      throwsArg(() => lib.traceWith(null, 5), TypeError, "options", "INVALID_TYPE", /'options' must be an object like \{ tracer \}/);
      lib.traceWith(null);
      const d = lib.Deadline.in(1_000);
      throwsArg(() => lib.plan(d, [], { otel: "api" }), TypeError, "options.otel", "INVALID_TYPE", /'options.otel' must be the @opentelemetry\/api module/);
      const e = await rejects(lib.retry(() => 1, { deadline: d, otel: 5 }), TypeError, /'options.otel'/);
      equal(e.param, "options.otel");
      await rejects(lib.hedge(() => 1, { deadline: d, delayMs: 1, otel: {} }), TypeError, /'options.otel'/);
      throwsArg(() => lib.withStallTimeout(new ReadableStream(), { firstChunkMs: 1, stallMs: 1, otel: [] }), TypeError, "options.otel", "INVALID_TYPE", /'options.otel'/);
      for (const retry of [undefined, true]) {
        const bad = await rejects(lib.relay(() => new Response("x"), { deadline: lib.Deadline.in(1_000), retry, otel: {} }), TypeError, /'options.otel' must be the @opentelemetry\/api module/);
        equal(bad.param, "options.otel");
        equal(bad.code, "INVALID_TYPE");
      }
      // fetchWithDeadline, with and without retry: refused before any request is sent.
      const realFetch = globalThis.fetch;
      let sent = 0;
      globalThis.fetch = async () => (sent++, new Response("x"));
      try {
        for (const retry of [undefined, true]) {
          const bad = await rejects(lib.fetchWithDeadline("http://127.0.0.1:9/", {}, { deadline: d, retry, otel: {} }), TypeError, /'options.otel' must be the @opentelemetry\/api module/);
          equal(bad.param, "options.otel");
        }
      } finally {
        globalThis.fetch = realFetch;
      }
      equal(sent, 0, "a request was sent before the bad otel option was refused");
      const p = lib.plan(d, [{ name: "a", minMs: 1, kind: "mandatory" }]);
      p.end(); // tracing off: nothing to end, no throw
      equal(await p.run("a", () => "still runs"), "still runs");
      d.dispose();
    },
  },
];

export default cases;
