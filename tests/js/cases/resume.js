// Streams that recover: `relay` and `fetchWithDeadline` with `retry` and
// `resume`, against the fixture server's resumable upstreams
// (tests/fixtures/resume.mjs), over real connections, in Node, Deno, workerd
// and Chromium. Each case uses its own fixture key, and asks the fixture what
// it saw (how many connections, the `Last-Event-ID` each carried).
//
// Events are checked one by one: the reader must get every event exactly
// once, whole, in order.
import { glue } from "../../../pkg/main.js";
import { equal, ok, rejects } from "../assert.js";
import { installFakeTime } from "../fake-time.js";
import { source } from "./stall.js";

const dec = new TextDecoder();
const uid = () => `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;

async function readAll(res) {
  const reader = res.body.getReader();
  let text = "";
  const chunks = [];
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { text, chunks };
      chunks.push(value);
      text += dec.decode(value, { stream: true });
    }
  } catch (error) {
    return { text, chunks, error };
  }
}

const enc = new TextEncoder();

/** An in-process SSE body: `text` (bytes or a string), then an error after 5 ms, or the end with `close`. */
function sseBody(text, { close = false } = {}) {
  let sent = false;
  const body = new ReadableStream({
    pull: (c) => {
      if (!sent) {
        sent = true;
        return c.enqueue(typeof text === "string" ? enc.encode(text) : text);
      }
      if (close) return c.close();
      return new Promise((r) => setTimeout(r, 5)).then(() => c.error(new Error("connection reset")));
    },
  });
  return new Response(body, { headers: { "content-type": "text/event-stream" } });
}

/** The events of an SSE text: `{ id, event, data }` per block with a field. */
function events(text) {
  const out = [];
  for (const block of text.split(/\r\n\r\n|\n\n|\r\r/)) {
    const e = {};
    let fields = false;
    for (const line of block.split(/\r\n|\n|\r/)) {
      if (line === "" || line.startsWith(":")) continue;
      fields = true;
      const at = line.indexOf(":");
      const name = at < 0 ? line : line.slice(0, at);
      const value = at < 0 ? "" : line.slice(at + 1).replace(/^ /, "");
      e[name] = e[name] === undefined ? value : `${e[name]}\n${value}`;
    }
    if (fields) out.push(e);
  }
  return out;
}

/** Checks that `got` holds the fixture's events `from`…`to`, each once, whole and in order. */
function checkEvents(got, from, to, what) {
  const tokens = got.filter((e) => e.event === "token");
  equal(tokens.length, to - from + 1, `${what}: events delivered (${tokens.map((e) => e.id).join(",")})`);
  tokens.forEach((e, k) => {
    const i = from + k;
    equal(e.id, String(i), `${what}: event ${k + 1}'s id`);
    equal(e.data, `{"i":${i}}`, `${what}: event ${i}'s data, whole`);
  });
}

async function seen(ctx, key) {
  return (await fetch(`${ctx.fixtureUrl}/resume/seen?key=${key}`)).json();
}

/** The relay's upstream for a fixture path: the attempt's headers (Last-Event-ID) go with it. */
const via = (url) => (signal, info) => fetch(url, { signal, headers: info.headers });

export default [
  {
    name: "resume: the machine's answers cross named by the core (core.ReadAction, ReadFlag, ReadHow, ReadEnding), not as numbers JS keeps a table of",
    run: () => {
      const { ReadAction: A, ReadFlag: F, ReadHow, ReadEnding } = glue;
      for (const e of [A, F, ReadHow, ReadEnding]) ok(e !== undefined && Object.values(e).some((v) => typeof v === "number"), "an enum of the core");
      const run = new glue.RetryRun(1e12, undefined, undefined, 10, 10, 0, undefined, 1, true, undefined, false, 7n);
      const m = new glue.ReadMachine(run, 1e12, undefined, 1e9, 1e9, false, false, 1000, 1000);
      try {
        m.start(0);
        equal(m.poll(), A.Connect);
        equal(m.how(), ReadHow.AsItWas);
        m.head(0, 200, true, undefined, true, undefined, undefined);
        let kinds = [];
        for (let k = m.poll(); k !== A.Nothing; k = m.poll()) kinds.push(A[k]);
        ok(kinds.length > 0 && kinds.every((k) => k === "Wake"), kinds.join());
        const first = m.chunk(1, new TextEncoder().encode("data: a\n\n"), undefined, NaN, NaN);
        equal(A[first & F.Kind], "DeliverChunk");
        equal(first & ~(F.Kind | F.More | F.Sampling), 0, "only the kind and the flags");
        m.end(2);
        kinds = [];
        for (let k = m.poll(); k !== A.Nothing; k = m.poll()) kinds.push(A[k]);
        ok(kinds.includes("End"), kinds.join());
        equal(typeof ReadEnding[m.ending()], "string", "a core.ReadEnding");
      } finally {
        m.free();
      }
    },
  },
  {
    name: "resume: a relay whose upstream fails before the first byte retries, and the reader never sees it",
    needs: ["fixtureUrl"],
    run: async (lib, ctx) => {
      const key = uid();
      const infos = [];
      const res = await lib.relay(
        (signal, info) => {
          infos.push({ ...info });
          return fetch(`${ctx.fixtureUrl}/resume/sse?key=${key}&fail=close&events=5`, { signal, headers: info.headers });
        },
        { deadline: lib.Deadline.in(10_000), retry: { attemptMinMs: 50, backoff: { baseMs: 1, maxMs: 5, jitter: 0 } }, stallMs: 2_000 },
      );
      equal(res.status, 200);
      const { text, error } = await readAll(res);
      equal(error, undefined);
      ok(!text.includes("event: error"), text);
      checkEvents(events(text), 1, 5, "after a failed connection");
      equal((await seen(ctx, key)).connections.length, 2, "connections");
      equal(infos.map((i) => i.attempt).join(","), "1,2");
      equal(infos[1].lastEventId, undefined, "a retry before content is made as it was");
      equal(Object.keys(infos[1].headers).length, 0);
    },
  },
  {
    name: "resume: a 503 with Retry-After before content is retried after the server's wait, inside the deadline",
    needs: ["fixtureUrl"],
    run: async (lib, ctx) => {
      const key = uid();
      const t0 = performance.now();
      const res = await lib.relay(via(`${ctx.fixtureUrl}/resume/sse?key=${key}&fail=503&retryAfter=1&events=3`), {
        deadline: lib.Deadline.in(10_000),
        retry: { attemptMinMs: 50 },
      });
      const took = performance.now() - t0;
      equal(res.status, 200);
      checkEvents(events((await readAll(res)).text), 1, 3, "after a 503");
      ok(took >= 1_000, `the retry came after ${took} ms, before the server's 1 s`);
      equal((await seen(ctx, key)).connections.map((c) => c.status).join(","), "503,200");
    },
  },
  {
    name: "resume: a first-chunk stall (headers, a comment, then silence) is retried, and the reader never sees it",
    needs: ["fixtureUrl"],
    run: async (lib, ctx) => {
      const key = uid();
      const res = await lib.relay(via(`${ctx.fixtureUrl}/resume/sse?key=${key}&fail=silent&events=4`), {
        deadline: lib.Deadline.in(10_000),
        firstChunkMs: 200,
        retry: { attemptMinMs: 50 },
      });
      equal(res.status, 200);
      const { text, error } = await readAll(res);
      equal(error, undefined);
      checkEvents(events(text), 1, 4, "after a first-chunk stall");
      equal((await seen(ctx, key)).connections.length, 2);
    },
  },
  {
    name: "resume (fake time): without firstChunkMs, an upstream that only sends keep-alives is cut at the default wait (half of what is left) and retried inside the deadline",
    run: async (lib) => {
      const clock = installFakeTime();
      try {
        const d = lib.Deadline.in(20_000);
        const t0 = clock.now();
        const made = [];
        let pings;
        const upstream = (signal, { attempt }) => {
          made.push({ at: clock.now() - t0, signal });
          if (attempt > 1) return sseBody("data: hi\n\n", { close: true });
          const body = new ReadableStream({ start: (c) => void (pings = c) });
          return new Response(body, { headers: { "content-type": "text/event-stream" } });
        };
        const pending = lib.relay(upstream, { deadline: d, stallMs: 2_000, retry: { attemptMinMs: 1_000, maxAttempts: 3 } });
        let res;
        pending.then((r) => (res = r));
        // A gateway that queues: a keep-alive comment every second, never an event.
        for (let i = 0; i < 21 && res === undefined; i++) {
          try {
            pings?.enqueue(enc.encode(": ping\n\n"));
          } catch {
            // the attempt was cut: its body is closed
          }
          await clock.advance(1_000);
        }
        ok(res !== undefined, "the relay answered within the deadline");
        equal(res.status, 200, "the retry's answer, not the deadline's fallback");
        equal((await readAll(res)).text, "data: hi\n\n");
        equal(made.length, 2, "the keep-alive-only attempt, then one retry");
        ok(made[0].signal.aborted, "the first attempt was aborted");
        // Half of the 20 s left at the call: cut at 10 s, the retry inside the other half.
        ok(made[1].at >= 10_000 && made[1].at < 12_000, `retried at ${made[1].at} ms`);
      } finally {
        clock.restore();
      }
    },
  },
  {
    name: "resume (fake time): a reader slower than stallMs is not a stall: the time it keeps a piece is not the upstream's silence; an upstream silent while the reader waits still is",
    run: async (lib) => {
      const clock = installFakeTime();
      try {
        const d = lib.Deadline.in(60_000);
        let made = 0;
        let silentAfter = Infinity; // the upstream goes silent after this many events
        const upstream = () => {
          made++;
          let i = 0;
          const body = new ReadableStream(
            {
              pull(c) {
                if (i === 5) return c.close();
                if (i >= silentAfter) return new Promise(() => {});
                i++;
                c.enqueue(enc.encode(`id: ${i}\ndata: ${i}\n\n`));
              },
            },
            { highWaterMark: 0 },
          );
          return new Response(body, { headers: { "content-type": "text/event-stream" } });
        };
        const options = { deadline: d, firstChunkMs: 1_000, stallMs: 500, retry: { maxAttempts: 1 } };
        let res = await lib.relay(upstream, options);
        let reader = res.body.getReader();
        let text = "";
        for (;;) {
          // The reader takes 2 s over each event: four times stallMs.
          await clock.advance(2_000);
          const { done, value } = await reader.read();
          if (done) break;
          text += dec.decode(value);
        }
        equal(events(text).map((e) => e.data).join(), "1,2,3,4,5", "every event, the reader's slowness not a stall");
        equal(made, 1, "one attempt");

        // The same slow reader, but the upstream goes silent after two events while the reader waits on it.
        made = 0;
        silentAfter = 2;
        res = await lib.relay(upstream, { ...options, deadline: lib.Deadline.in(60_000) });
        reader = res.body.getReader();
        text = "";
        let error;
        for (let k = 0; k < 10; k++) {
          await clock.advance(2_000);
          const next = reader.read();
          await clock.advance(600);
          try {
            const { done, value } = await next;
            if (done) break;
            text += dec.decode(value);
          } catch (e) {
            error = e;
            break;
          }
        }
        const got = events(text);
        equal(got.filter((e) => e.event === undefined).map((e) => e.data).join(), "1,2", "the events before the silence");
        equal(error, undefined);
        equal(got[got.length - 1]?.event, "error", "the relay ends the stream with an error event");
        equal(JSON.parse(got[got.length - 1].data).code, "STREAM_STALLED", "a stall, not the deadline");
      } finally {
        clock.restore();
      }
    },
  },
  {
    name: "resume (fake time): while a burst is sampled a chunk is not timed again; the stall after it is never early and at most sampleMs late, and exact again once a wake ends the burst",
    run: async (lib) => {
      const clock = installFakeTime();
      try {
        const stallMs = 100;
        const sampleMs = 16; // ⌊stallMs / 4⌋ within 1 ..= 16
        // [ms between the events after the burst, how many, exact]: once a wake ends the sampling, each
        // event is timed again, so a stall after 40 events 10 ms apart is declared at its instant.
        for (const [gap, count, exact] of [[5, 3, false], [60, 3, true], [10, 40, true]]) {
          const src = source();
          const push = (text) => src.enqueue(enc.encode(text));
          const upstream = () => new Response(src.stream, { headers: { "content-type": "text/event-stream" } });
          // A burst: 100 events at one instant.
          for (let i = 1; i <= 100; i++) push(`id: ${i}\ndata: x\n\n`);
          const deadline = lib.Deadline.in(60_000);
          const res = await lib.relay(upstream, { deadline, firstChunkMs: 1_000, stallMs, retry: { maxAttempts: 1 } });
          const reader = res.body.getReader();
          let text = "";
          let endedAt;
          const reading = (async () => {
            for (;;) {
              const { done, value } = await reader.read();
              if (done) return;
              text += dec.decode(value);
              if (text.includes("event: error") && endedAt === undefined) endedAt = clock.now();
            }
          })();
          for (let i = 0; i < 300 && !text.includes("id: 100\n"); i++) await clock.advance(0);
          ok(text.includes("id: 100\n"), "the burst was read");
          // Then `count` events `gap` ms apart (the reader waits on the upstream meanwhile), then silence.
          for (let k = 1; k <= count; k++) {
            await clock.advance(gap);
            push(`id: b${k}\ndata: y\n\n`);
            for (let i = 0; i < 20; i++) await clock.advance(0);
          }
          const lastAt = clock.now();
          ok(text.includes(`id: b${count}\n`), `the events after the burst were read (gap ${gap})`);
          await clock.advance(stallMs - 1);
          equal(endedAt, undefined, `stalled ${clock.now() - lastAt} ms after the last event (gap ${gap}, limit ${stallMs})`);
          for (let i = 0; i <= sampleMs + 1 && endedAt === undefined; i++) await clock.advance(1);
          await reading;
          ok(endedAt !== undefined, `no stall within sampleMs of the limit (gap ${gap})`);
          const late = endedAt - lastAt - stallMs;
          ok(late >= 0 && late <= (exact ? 0 : sampleMs), `declared ${late} ms after the limit (gap ${gap}, sampleMs ${sampleMs})`);
          const last = events(text).at(-1);
          equal(last.event, "error");
          equal(JSON.parse(last.data).code, "STREAM_STALLED", `a stall (gap ${gap})`);
          deadline.dispose();
        }
        // The shared queue's host timer may stay armed once its heap empties (js/timers.js, invariant 2): it fires once.
        await clock.advance(60_000);
        equal(clock.pending(), 0, "timers left behind");
      } finally {
        clock.restore();
      }
    },
  },
  {
    name: "resume: a retry budget disposed during a read ends the read with its error when the next attempt would use it (a stall's wake-up, a failure), as a retry using it throws",
    run: async (lib) => {
      for (const how of ["stall", "error"]) {
        const budget = new lib.RetryBudget();
        let reported;
        const upstream = () =>
          how === "error"
            ? sseBody("id: 1\ndata: a\n\n")
            : new Response(new ReadableStream({ start: (c) => c.enqueue(enc.encode("id: 1\ndata: a\n\n")) }), { headers: { "content-type": "text/event-stream" } });
        const res = await lib.relay(upstream, { deadline: lib.Deadline.in(5_000), stallMs: 100, retry: { budget }, onError: (e) => (reported = e) });
        const reader = res.body.getReader();
        equal(dec.decode((await reader.read()).value), "id: 1\ndata: a\n\n", `${how}: the first event`);
        budget.dispose();
        let text = "";
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          text += dec.decode(value);
        }
        ok(/event: error/.test(text), `${how}: the stream ends with an error event: ${text}`);
        ok(/disposed/.test(String(reported?.message)), `${how}: the read's error is the budget's: ${reported}`);
      }
    },
  },
  {
    name: "resume: retries come out of the retry budget: an empty one leaves the first failure to the fallback",
    needs: ["fixtureUrl"],
    run: async (lib, ctx) => {
      const key = uid();
      const budget = new lib.RetryBudget({ ratio: 0, minPerSecond: 0 });
      try {
        const res = await lib.relay(via(`${ctx.fixtureUrl}/resume/sse?key=${key}&fail=close&events=3`), {
          deadline: lib.Deadline.in(10_000),
          retry: { attemptMinMs: 50, budget },
        });
        equal(res.status, 502);
        equal((await res.json()).fallback, true);
        equal((await seen(ctx, key)).connections.length, 1, "no retry without budget");
        equal(budget.counts().requests, 1, "the relay's first attempt counted as a request");
      } finally {
        budget.dispose();
      }
    },
  },
  {
    name: "resume: a relay that stalls after 20 events, mid-event, resumes with Last-Event-ID: every event once, none split",
    needs: ["fixtureUrl"],
    run: async (lib, ctx) => {
      const key = uid();
      const res = await lib.relay(via(`${ctx.fixtureUrl}/resume/sse?key=${key}&events=40&stallAfter=20`), {
        deadline: lib.Deadline.in(10_000),
        retry: { attemptMinMs: 50 },
        stallMs: 200,
      });
      equal(res.status, 200);
      const { text, error } = await readAll(res);
      equal(error, undefined);
      ok(!text.includes("event: error"), "the stream ended with an error event");
      checkEvents(events(text), 1, 40, "resumed");
      // The half event the upstream sent before it stalled never reached the reader.
      equal(text.split("\n\n").filter((b) => b.includes('{"i":21}')).length, 1);
      const view = await seen(ctx, key);
      equal(view.connections.map((c) => c.lastEventId).join(","), ",20", "the Last-Event-ID of each connection");
    },
  },
  {
    name: "resume: fetchWithDeadline fails before the first byte, then stalls mid-stream: retried, then resumed; each event once",
    needs: ["fixtureUrl"],
    run: async (lib, ctx) => {
      const key = uid();
      const url = `${ctx.fixtureUrl}/resume/sse?key=${key}&fail=close&events=40&stallAfter=20`;
      const res = await lib.fetchWithDeadline(url, { headers: { accept: "text/event-stream" } }, { deadline: lib.Deadline.in(10_000), retry: { attemptMinMs: 50 }, stallMs: 200 });
      equal(res.status, 200);
      equal(res.url, url);
      const { text, error } = await readAll(res);
      equal(error, undefined);
      checkEvents(events(text), 1, 40, "fetchWithDeadline");
      equal((await seen(ctx, key)).connections.map((c) => c.lastEventId).join(","), ",,20");
    },
  },
  {
    name: "resume: an event past maxEventBytes ends the stream at once with EVENT_TOO_LARGE: the events before it are delivered, nothing past the cap is held, never retried",
    needs: ["fixtureUrl"],
    run: async (lib, ctx) => {
      const key = uid();
      const total = 32 * 1024 * 1024;
      const res = await lib.fetchWithDeadline(`${ctx.fixtureUrl}/resume/sse?key=${key}&events=3&endless=${total}`, undefined, {
        deadline: lib.Deadline.in(20_000),
        retry: { attemptMinMs: 50 },
        stallMs: 5_000,
        maxEventBytes: 1024 * 1024,
      });
      const { text, error } = await readAll(res);
      checkEvents(events(text), 1, 3, "before the endless event");
      ok(!text.includes("xxxx"), "no byte of the refused event reached the reader");
      equal(error?.name, "StreamTooLarge", `the reader's error: ${error}`);
      equal(error.code, "EVENT_TOO_LARGE");
      equal(error.maxBytes, 1024 * 1024);
      ok(/longer than 1048576 bytes/.test(error.message), error.message);
      let view = await seen(ctx, key);
      for (let i = 0; i < 100 && !view.connections[0].closed; i++) {
        await new Promise((r) => setTimeout(r, 20));
        view = await seen(ctx, key);
      }
      equal(view.connections.length, 1, "never retried");
      ok(view.connections[0].closed, "the upstream request was released");
      ok(view.connections[0].wrote < total / 2, `the upstream was not read on: it wrote ${view.connections[0].wrote} bytes`);
    },
  },
  {
    name: "resume: an event held whole past raised caps reaches the reader once and intact; a broken attempt's half of it never does",
    run: async (lib) => {
      // Longer than the default event cap (16 MiB): the bytes are kept where they were read and handed on as read.
      const big = 17 * 1024 * 1024 + 5;
      const piece = enc.encode("x".repeat(64 * 1024));
      const xs = (n) => [...Array(Math.floor(n / piece.length)).fill(piece), piece.subarray(0, n % piece.length)];
      const body = (parts, close) =>
        new Response(
          new ReadableStream({
            pull(c) {
              const p = parts.shift();
              if (p !== undefined) return c.enqueue(typeof p === "string" ? enc.encode(p) : p);
              if (close) return c.close();
              c.error(new Error("connection reset"));
            },
          }),
          { headers: { "content-type": "text/event-stream" } },
        );
      const asked = [];
      const res = await lib.relay(
        (signal, info) => {
          asked.push(info.headers["last-event-id"]);
          // The first attempt breaks 6 MiB into the second event; the resumed one sends it whole.
          if (info.attempt === 1) return body(["id: 1\ndata: a\n\n", "id: 2\ndata: ", ...xs(6 * 1024 * 1024)], false);
          return body(["id: 2\ndata: ", ...xs(big), "\n\nid: 3\ndata: c\n\n"], true);
        },
        { deadline: lib.Deadline.in(20_000), retry: { backoff: { baseMs: 1, maxMs: 1, jitter: 0 } }, maxEventBytes: 32 * 1024 * 1024, maxLineBytes: 32 * 1024 * 1024 },
      );
      const { text, error } = await readAll(res);
      equal(error, undefined);
      equal(asked.join(), ",1", "resumed once, by id");
      const head = "id: 1\ndata: a\n\nid: 2\ndata: ";
      const tail = "\n\nid: 3\ndata: c\n\n";
      equal(text.length, head.length + big + tail.length, "every byte once, none of the broken attempt's half event");
      equal(text.slice(0, head.length), head);
      equal(text.slice(-tail.length), tail);
      ok(/^x*$/.test(text.slice(head.length, -tail.length)), "the held event is intact");
    },
  },
  {
    name: "resume: a line past maxLineBytes ends a relayed stream with LINE_TOO_LONG; the caps are checked as options",
    run: async (lib) => {
      const reasons = [];
      const res = await lib.relay(() => sseBody(`id: 1\ndata: a\n\n: ${"c".repeat(300)}\n\nid: 2\ndata: b\n\n`, { close: true }), {
        deadline: lib.Deadline.in(10_000),
        retry: true,
        maxLineBytes: 256,
        onError: (e) => reasons.push(e),
      });
      const { text } = await readAll(res);
      const got = events(text);
      equal(got[0].id, "1");
      equal(got[0].data, "a");
      equal(got[got.length - 1].event, "error", "the stream ends with an error event");
      ok(!text.includes("ccc") && !text.includes('"b"'), text);
      equal(reasons.length, 1);
      equal(reasons[0].code, "LINE_TOO_LONG");
      equal(reasons[0].maxBytes, 256);
      for (const [options, param, code] of [
        [{ maxEventBytes: 0 }, "options.maxEventBytes", "OUT_OF_RANGE"],
        [{ maxLineBytes: 2.5 }, "options.maxLineBytes", "NOT_WHOLE"],
        [{ maxLineBytes: "1" }, "options.maxLineBytes", "INVALID_TYPE"],
      ]) {
        const e = await (async () => lib.relay(() => sseBody("data: a\n\n", { close: true }), { deadline: lib.Deadline.in(1_000), retry: true, ...options }))().then(
          () => undefined,
          (error) => error,
        );
        equal(e?.param, param, `${JSON.stringify(options)}: ${e}`);
        equal(e.code, code);
      }
    },
  },
  {
    name: "resume: an upstream that ignores Last-Event-ID: no duplicate reaches the reader; without a hook the stream ends with the error",
    needs: ["fixtureUrl"],
    run: async (lib, ctx) => {
      const key = uid();
      const res = await lib.relay(via(`${ctx.fixtureUrl}/resume/sse?key=${key}&events=40&stallAfter=20&ignore=1`), {
        deadline: lib.Deadline.in(10_000),
        retry: { attemptMinMs: 50 },
        stallMs: 200,
      });
      const got = events((await readAll(res)).text);
      checkEvents(got, 1, 20, "before the failure");
      const last = got[got.length - 1];
      equal(last.event, "error", "the stream ends with an error event");
      ok(/stalled/.test(JSON.parse(last.data).reason), last.data);
      equal((await seen(ctx, key)).connections.map((c) => c.lastEventId).join(","), ",20", "asked once by id, then not again");
    },
  },
  {
    name: "resume: past the remembered ids a resume by id cannot be checked: an upstream that replays from an older id delivers no duplicate; the hook decides, or the stream ends with the error",
    needs: ["fixtureUrl"],
    run: async (lib, ctx) => {
      // 2 500 events delivered, then a stall; asked with Last-Event-ID: 2500, the upstream replays from 1 000.
      const url = (key) => `${ctx.fixtureUrl}/resume/sse?key=${key}&events=2600&stallAfter=2500&ignore=1&replayFrom=1000`;
      let key = uid();
      let res = await lib.fetchWithDeadline(url(key), undefined, { deadline: lib.Deadline.in(20_000), retry: { attemptMinMs: 50 }, stallMs: 300 });
      let { text, error } = await readAll(res);
      let got = events(text).filter((e) => e.event === "token");
      const ids = new Set(got.map((e) => e.id));
      equal(got.length - ids.size, 0, "duplicates delivered");
      checkEvents(got, 1, 2500, "before the failure");
      ok(lib.isStreamStalled(error), `the stream ends with the failure: ${error}`);
      equal((await seen(ctx, key)).connections.length, 1, "no resume by id it could not check");
      // With a hook: the hook decides (here: a continuation that honours the id).
      key = uid();
      const calls = [];
      res = await lib.fetchWithDeadline(url(key), undefined, {
        deadline: lib.Deadline.in(20_000),
        retry: { attemptMinMs: 50 },
        stallMs: 300,
        resume: (d) => {
          calls.push(d.lastEventId);
          return fetch(`${ctx.fixtureUrl}/resume/sse?key=${key}-next&events=2600`, { signal: d.signal, headers: { "last-event-id": d.lastEventId } });
        },
      });
      ({ text, error } = await readAll(res));
      equal(error, undefined);
      checkEvents(events(text), 1, 2600, "continued by the hook");
      equal(calls.join(","), "2500", "the hook was asked, with the last id");
    },
  },
  {
    name: "resume: when the attempts run out after content, the reader's error is ours: RetryFailed with the upstream's error as its cause and the bytes delivered",
    needs: ["fixtureUrl"],
    run: async (lib, ctx) => {
      // The connection breaks after 5 events; every resume by id then fails before any byte.
      const key = uid();
      const res = await lib.fetchWithDeadline(`${ctx.fixtureUrl}/resume/sse?key=${key}&events=40&breakAfter=5&failResumes=1`, undefined, {
        deadline: lib.Deadline.in(10_000),
        retry: { attemptMinMs: 50, maxAttempts: 3, backoff: { baseMs: 1, maxMs: 5, jitter: 0 } },
        stallMs: 2_000,
      });
      const { text, error } = await readAll(res);
      checkEvents(events(text), 1, 5, "before the failure");
      ok(lib.isRetryFailed(error), `the reader's error: ${error?.name}: ${error?.message}`);
      equal(error.reason, "exhausted");
      equal(error.attempts.length, 3, "every attempt is reported");
      ok(error.cause instanceof Error && !lib.isRetryFailed(error.cause), `its cause is the upstream's error: ${error.cause}`);
      equal(error.deliveredBytes, new TextEncoder().encode(text).length, "deliveredBytes is what the reader got");
      equal((await seen(ctx, key)).connections.length, 3);
      // A body that cannot be resumed (not an event stream, and the hook gives nothing): "not-resumable".
      const r2 = await readAll(
        await lib.fetchWithDeadline(`${ctx.fixtureUrl}/resume/text?key=${uid()}&chunks=9&stallAfter=2&breakAfter=1`, undefined, {
          deadline: lib.Deadline.in(10_000),
          retry: { attemptMinMs: 50 },
          stallMs: 2_000,
          resume: () => undefined,
        }),
      );
      equal(r2.text, "1;2;3");
      ok(lib.isRetryFailed(r2.error), `${r2.error?.name}: ${r2.error?.message}`);
      equal(r2.error.reason, "not-resumable");
      ok(/after 5 bytes reached the reader/.test(r2.error.message), r2.error.message);
      ok(r2.error.cause instanceof Error, `${r2.error.cause}`);
      equal(r2.error.deliveredBytes, 5);
      // A stall stays a StreamStalled, with what was delivered.
      const r3 = await readAll(
        await lib.fetchWithDeadline(`${ctx.fixtureUrl}/resume/text?key=${uid()}&chunks=9&stallAfter=2`, undefined, { deadline: lib.Deadline.in(10_000), retry: true, stallMs: 200 }),
      );
      ok(lib.isStreamStalled(r3.error), `${r3.error}`);
      equal(r3.error.deliveredBytes, 5);
    },
  },
  {
    name: "resume: an upstream that ignores Last-Event-ID: the resume hook gets what was delivered and its continuation is read",
    needs: ["fixtureUrl"],
    run: async (lib, ctx) => {
      const key = uid();
      const calls = [];
      const res = await lib.relay(via(`${ctx.fixtureUrl}/resume/sse?key=${key}&events=40&stallAfter=20&ignore=1`), {
        deadline: lib.Deadline.in(10_000),
        retry: { attemptMinMs: 50 },
        stallMs: 200,
        // The continuation: another upstream that honours the id.
        resume: (delivered) => {
          calls.push(delivered);
          return fetch(`${ctx.fixtureUrl}/resume/sse?key=${key}-next&events=40`, { signal: delivered.signal, headers: { ...delivered.headers, "last-event-id": delivered.lastEventId } });
        },
      });
      const { text, error } = await readAll(res);
      equal(error, undefined);
      checkEvents(events(text), 1, 40, "continued by the hook");
      equal(calls.length, 1, "hook calls");
      const d = calls[0];
      equal(d.lastEventId, "20");
      equal(d.attempt, 3, "the hook makes the third attempt (after the stalled one and the one that replayed)");
      // The continuation carries what is left of the deadline, as the relay's own attempts do.
      const left = Number(d.headers?.["edge-deadline-remaining-ms"]);
      ok(left > 0 && left < 10_000, `the hook's budget header: ${JSON.stringify(d.headers)}`);
      equal(Number((await seen(ctx, `${key}-next`)).connections[0].budget), left, "the continuation sent it");
      ok(d.signal instanceof AbortSignal);
      const delivered = d.chunks.map((c) => dec.decode(c)).join("");
      equal(d.bytes, delivered.length, "bytes is what the chunks hold");
      checkEvents(events(delivered), 1, 20, "the hook's chunks");
      equal(text.slice(0, delivered.length), delivered, "the chunks are what the reader got");
    },
  },
  {
    name: "resume: a hook that gives no continuation ends the stream with the error; one that gives something else names options.resume",
    needs: ["fixtureUrl"],
    run: async (lib, ctx) => {
      for (const [made, pattern] of [
        [null, /stalled/],
        [42, /'options\.resume' must give a Response: it gave 42/],
      ]) {
        const key = uid();
        const res = await lib.relay(via(`${ctx.fixtureUrl}/resume/text?key=${key}&chunks=9&stallAfter=3`), {
          deadline: lib.Deadline.in(10_000),
          retry: { attemptMinMs: 50 },
          stallMs: 200,
          resume: () => made,
        });
        const { text, error } = await readAll(res);
        // Three pieces of two bytes and half of the fourth: a plain body is passed on as it comes.
        equal(text, "1;2;3;4", `what was delivered before the failure (${made})`);
        ok(pattern.test(error?.message), `${made}: ${error?.message}`);
      }
    },
  },
  {
    name: "resume: a plain-text body resumes through the hook with a Range request: the text arrives whole, once",
    needs: ["fixtureUrl"],
    run: async (lib, ctx) => {
      const key = uid();
      const url = `${ctx.fixtureUrl}/resume/text?key=${key}&chunks=12&stallAfter=4`;
      const seenBytes = [];
      const res = await lib.fetchWithDeadline(new Request(url), undefined, {
        deadline: lib.Deadline.in(10_000),
        stallMs: 200,
        resume: ({ bytes, signal }) => {
          seenBytes.push(bytes);
          return fetch(url, { signal, headers: { range: `bytes=${bytes}-` } });
        },
      });
      const { text, error } = await readAll(res);
      equal(error, undefined);
      equal(text, "1;2;3;4;5;6;7;8;9;10;11;12;");
      equal(seenBytes.join(","), "9", "the hook was told the 9 bytes delivered (4 pieces and half of the fifth)");
      equal((await seen(ctx, key)).connections.map((c) => c.range).join(","), ",bytes=9-");
    },
  },
  {
    name: "resume: after content, a body that is not an event stream and has no hook is never restarted: it errors",
    needs: ["fixtureUrl"],
    run: async (lib, ctx) => {
      const key = uid();
      const res = await lib.fetchWithDeadline(`${ctx.fixtureUrl}/resume/text?key=${key}&chunks=9&stallAfter=2`, undefined, {
        deadline: lib.Deadline.in(10_000),
        retry: true,
        stallMs: 200,
      });
      const { text, error } = await readAll(res);
      equal(text, "1;2;3");
      ok(lib.isStreamStalled(error), `the body errored with ${error}`);
      equal((await seen(ctx, key)).connections.length, 1, "no second request");
    },
  },
  {
    name: "resume: too little time left for another attempt: a 503 is handed back as it is, a failed connection gets the fallback",
    needs: ["fixtureUrl"],
    run: async (lib, ctx) => {
      let key = uid();
      // The server asks for 1 s; 300 ms are left, and an attempt needs 100.
      let res = await lib.relay(via(`${ctx.fixtureUrl}/resume/sse?key=${key}&fail=503&retryAfter=1`), { deadline: lib.Deadline.in(300), retry: { attemptMinMs: 100 } });
      equal(res.status, 503);
      equal((await res.json()).error, "busy");
      equal((await seen(ctx, key)).connections.length, 1);
      key = uid();
      // The first attempt fails at once; its 100 ms backoff would leave less than attemptMinMs.
      res = await lib.relay(via(`${ctx.fixtureUrl}/resume/sse?key=${key}&fail=close`), {
        deadline: lib.Deadline.in(150),
        retry: { attemptMinMs: 100, backoff: { baseMs: 100, maxMs: 100, jitter: 0 } },
      });
      equal(res.status, 502);
      equal((await res.json()).fallback, true);
      equal((await seen(ctx, key)).connections.length, 1);
      // Not even one attempt fits: the request is never made.
      key = uid();
      let called = 0;
      res = await lib.relay(
        (signal) => {
          called++;
          return fetch(`${ctx.fixtureUrl}/resume/sse?key=${key}`, { signal });
        },
        { deadline: lib.Deadline.in(50), retry: { attemptMinMs: 200 } },
      );
      equal(called, 0);
      equal(res.status, 504);
      ok(/not called/.test((await res.json()).reason));
      // fetchWithDeadline rejects with the failure, never a TypeError for the shortage.
      key = uid();
      const e = await rejects(() => lib.fetchWithDeadline(`${ctx.fixtureUrl}/resume/sse?key=${key}&fail=close`, undefined, { deadline: lib.Deadline.in(10_000), retry: { maxAttempts: 1 } }));
      ok(!(e instanceof RangeError) && e.param === undefined, `the failure, not an argument error: ${e}`);
    },
  },
  {
    name: "resume: a reader's cancel mid-stream aborts the attempt and no other is made",
    needs: ["fixtureUrl"],
    run: async (lib, ctx) => {
      const key = uid();
      const res = await lib.relay(via(`${ctx.fixtureUrl}/resume/sse?key=${key}&events=400&gap=5`), { deadline: lib.Deadline.in(10_000), retry: true, stallMs: 500 });
      const reader = res.body.getReader();
      await reader.read();
      await reader.cancel("done");
      await new Promise((r) => setTimeout(r, 100));
      equal((await seen(ctx, key)).connections.length, 1);
    },
  },
  {
    name: "resume: a backoff between resumes keeps a Node or Deno process alive while the reader waits",
    needs: ["spawnPackageScript"],
    run: async (lib, ctx) => {
      // Three bodies, each breaking after its piece; the second resume backs off 300 ms (the first waits for nothing).
      const { code, stdout } = await ctx.spawnPackageScript(
        `await init(await readBytes(wasmUrl));
const lib = await import(entryUrl);
const piece = (text, last) => {
  let sent = false;
  return new Response(new ReadableStream({
    pull(c) {
      if (!sent) return (sent = true), c.enqueue(new TextEncoder().encode(text));
      if (last) return c.close();
      return new Promise((r) => setTimeout(r, 20)).then(() => c.error(new Error("connection reset")));
    },
  }));
};
let n = 0;
// A continuation of bytes is a range from where the reader is (a 206 with its Content-Range).
const range = (r, at) => new Response(r.body, { status: 206, headers: { "content-range": \`bytes \${at}-*/*\` } });
const res = await lib.relay(() => piece("a", false), {
  deadline: lib.Deadline.in(5_000),
  retry: { attemptMinMs: 10, backoff: { baseMs: 300, maxMs: 300, jitter: 0 } },
  resume: ({ bytes }) => (++n === 1 ? range(piece("b", false), bytes) : range(piece("c", true), bytes)),
});
console.log(await res.text());`,
      );
      equal(code, 0, "child exit code");
      equal(stdout.trim(), "abc");
    },
  },
  {
    name: "resume: a read waiting on the resume hook, or on a resumed request, keeps a Node or Deno process alive until it settles or the deadline ends it",
    needs: ["spawnPackageScript"],
    run: async (lib, ctx) => {
      const script = (hook) => `await init(await readBytes(wasmUrl));
const lib = await import(entryUrl);
const piece = (text, last) => {
  let sent = false;
  return new Response(new ReadableStream({
    pull(c) {
      if (!sent) return (sent = true), c.enqueue(new TextEncoder().encode(text));
      if (last) return c.close();
      return new Promise((r) => setTimeout(r, 20)).then(() => c.error(new Error("connection reset")));
    },
  }), ${hook ? "{}" : `{ headers: { "content-type": "text/event-stream" } }`});
};
// Nothing of the host's is pending while the promise waits: an unref'd timer settles it.
const later = (ms, value) => new Promise((r) => { const t = setTimeout(() => r(value), ms); t.unref?.(); if (globalThis.Deno) Deno.unrefTimer(t); });
let n = 0;
const started = performance.now();
const res = await lib.relay((signal) => (++n === 1 ? piece(${hook ? `"a"` : `"id: 1\\ndata: a\\n\\n"`}, false) : later(300, piece("id: 2\\ndata: b\\n\\n", true))), {
  deadline: lib.Deadline.in(${hook ? 600 : 5_000}),
  retry: { attemptMinMs: 10, backoff: { baseMs: 1, maxMs: 1, jitter: 0 } },
  ${hook ? `resume: () => new Promise(() => {}), // never answers: the deadline ends the read` : ""}
});
const text = await res.text().catch((e) => \`error: \${e?.name}\`);
console.log(JSON.stringify({ text, ms: Math.round(performance.now() - started) }));`;
      for (const hook of [false, true]) {
        const { code, stdout } = await ctx.spawnPackageScript(script(hook));
        equal(code, 0, `hook ${hook}: child exit code (stdout ${stdout})`);
        const out = JSON.parse(stdout.trim());
        if (hook) {
          equal(out.text, "error: DeadlineExceeded", "the deadline ended the read");
          ok(out.ms >= 550, `the read ended at the deadline, not before: ${out.ms} ms`);
        } else equal(out.text, "id: 1\ndata: a\n\nid: 2\ndata: b\n\n");
      }
    },
  },
  {
    name: "resume: a resume by id answered by something that is not an event stream (a proxy's HTML page) is a failed attempt, never spliced",
    run: async (lib) => {
      let n = 0;
      const res = await lib.relay(
        () => {
          n++;
          if (n === 1) return sseBody("id: 1\ndata: a\n\n");
          if (n === 2) return new Response("<html>502 Bad Gateway (proxy)</html>", { headers: { "content-type": "text/html" } });
          return sseBody("id: 2\ndata: b\n\n", { close: true });
        },
        { deadline: lib.Deadline.in(5_000), retry: { backoff: { baseMs: 1, maxMs: 1, jitter: 0 } } },
      );
      const { text, error } = await readAll(res);
      equal(error, undefined, `${error}`);
      equal(text, "id: 1\ndata: a\n\nid: 2\ndata: b\n\n");
      equal(n, 3, "the HTML answer was a failed attempt, and the next one resumed");
    },
  },
  {
    name: "resume: a Range continuation needs a 206 from where the reader is: a 200 that ignored Range, or a 206 from elsewhere, is never appended",
    run: async (lib) => {
      const text = "0123456789abcdefghij";
      const plain = (body, init) => new Response(body, init);
      let asked = 0;
      const ranges = [];
      const res = await lib.relay(
        () => {
          let sent = false;
          return plain(new ReadableStream({ pull: (c) => (sent ? new Promise((r) => setTimeout(r, 5)).then(() => c.error(new Error("reset"))) : ((sent = true), c.enqueue(enc.encode(text.slice(0, 7))))) }));
        },
        {
          deadline: lib.Deadline.in(5_000),
          retry: { maxAttempts: 5, backoff: { baseMs: 1, maxMs: 1, jitter: 0 } },
          resume: ({ bytes }) => {
            asked++;
            ranges.push(bytes);
            if (asked === 1) return plain(text); // the server ignored Range: the whole body, 200
            if (asked === 2) return plain(text.slice(2), { status: 206, headers: { "content-range": "bytes 2-19/20" } });
            return plain(text.slice(bytes), { status: 206, headers: { "content-range": `bytes ${bytes}-19/20` } });
          },
        },
      );
      const got = await readAll(res);
      equal(got.error, undefined, `${got.error}`);
      equal(got.text, text, "each byte once, in order");
      equal(asked, 3);
      equal(ranges.join(), "7,7,7", "the refused answers added nothing");
    },
  },
  {
    name: "resume: Last-Event-ID carries the id's UTF-8 bytes, as EventSource sends it (é → c3 a9; € does not make the request throw)",
    run: async (lib) => {
      for (const [id, bytes] of [
        ["é", [0xc3, 0xa9]],
        ["€", [0xe2, 0x82, 0xac]],
      ]) {
        const sent = [];
        const res = await lib.relay(
          (signal, info) => {
            sent.push(info.headers["last-event-id"]);
            if (info.attempt === 1) return sseBody(`id: ${id}\ndata: a\n\n`);
            new Headers(info.headers); // what fetch does with them: a ByteString each
            return sseBody("id: next\ndata: b\n\n", { close: true });
          },
          { deadline: lib.Deadline.in(5_000), retry: { backoff: { baseMs: 1, maxMs: 1, jitter: 0 } } },
        );
        const { text, error } = await readAll(res);
        equal(error, undefined, `${id}: the stream ended cleanly`);
        equal(text, `id: ${id}\ndata: a\n\nid: next\ndata: b\n\n`, `${id}: both events once`);
        equal(sent.length, 2, `${id}: one resume`);
        // Where Headers take a ByteString only (Node, Deno, browsers) one character per byte goes out as that byte;
        // where they take any text (workerd) it goes out as UTF-8: the id as it is.
        let utf8Headers = true;
        try {
          new Headers({ "x-probe": "\u20ac" });
        } catch {
          utf8Headers = false;
        }
        const want = utf8Headers ? id : String.fromCharCode(...bytes);
        equal(sent[1], want, `${id}: the header (${[...sent[1]].map((c) => c.charCodeAt(0)).join()})`);
      }
    },
  },
  {
    name: "resume: over a real connection, a resumed relay's Last-Event-ID reaches the upstream as the id's UTF-8 bytes",
    needs: ["fixtureUrl"],
    run: async (lib, ctx) => {
      for (const [suffix, hex] of [
        ["é", "33c3a9"],
        ["€", "33e282ac"],
      ]) {
        const key = uid();
        const res = await lib.relay(via(`${ctx.fixtureUrl}/resume/sse?key=${key}&events=6&stallAfter=3&idSuffix=${encodeURIComponent(suffix)}`), {
          deadline: lib.Deadline.in(10_000),
          retry: { attemptMinMs: 50 },
          stallMs: 200,
        });
        const { text, error } = await readAll(res);
        equal(error, undefined, `${suffix}: ${error}`);
        equal(events(text).filter((e) => e.event === "token").length, 6, `${suffix}: ${text}`);
        const view = await seen(ctx, key);
        equal(view.connections.map((c) => c.lastEventIdHex ?? "").join(), `,${hex}`, `${suffix}: the Last-Event-ID bytes of each connection`);
        // fetchWithDeadline makes the request itself: the same bytes.
        const key2 = uid();
        const fetched = await lib.fetchWithDeadline(`${ctx.fixtureUrl}/resume/sse?key=${key2}&events=6&stallAfter=3&idSuffix=${encodeURIComponent(suffix)}`, undefined, {
          deadline: lib.Deadline.in(10_000),
          retry: { attemptMinMs: 50 },
          stallMs: 200,
        });
        const got = await readAll(fetched);
        equal(got.error, undefined, `fetchWithDeadline ${suffix}: ${got.error}`);
        const view2 = await seen(ctx, key2);
        equal(view2.connections.map((c) => c.lastEventIdHex ?? "").join(), `,${hex}`, `fetchWithDeadline ${suffix}: the Last-Event-ID bytes of each connection`);
      }
    },
  },
  {
    name: "resume: an id of 130 000 bytes (past the 1 024-byte cap) overflows nothing: the stream is no longer resumable by id and ends with the error",
    run: async (lib) => {
      const id = "x".repeat(130_000);
      const sent = [];
      const res = await lib.relay(
        (signal, info) => {
          sent.push(info.headers["last-event-id"]);
          return info.attempt === 1 ? sseBody(`id: ${id}\ndata: a\n\n`) : sseBody("id: 2\ndata: b\n\n", { close: true });
        },
        { deadline: lib.Deadline.in(5_000), retry: { backoff: { baseMs: 1, maxMs: 1, jitter: 0 } } },
      );
      const { text, error } = await readAll(res);
      equal(error, undefined, `the stream ended with an event, not a thrown error: ${error}`);
      equal(sent.length, 1, "no resume by id past the cap");
      ok(text.startsWith(`id: ${id}\ndata: a\n\n`) && /event: error\n/.test(text), text.slice(-200));
    },
  },
  {
    name: "resume: ids are compared exactly: a new id whose 32-bit hash equals a delivered one (\"liquid\" after \"costarring\") is not taken for a replay",
    run: async (lib) => {
      const res = await lib.relay(
        (signal, info) => (info.attempt === 1 ? sseBody("id: costarring\ndata: a\n\n") : sseBody("id: liquid\ndata: b\n\n", { close: true })),
        { deadline: lib.Deadline.in(5_000), retry: { backoff: { baseMs: 1, maxMs: 1, jitter: 0 } } },
      );
      const { text, error } = await readAll(res);
      equal(error, undefined, `${error}`);
      equal(text, "id: costarring\ndata: a\n\nid: liquid\ndata: b\n\n", "no event lost");
    },
  },
  {
    name: "resume: a body that starts with a byte-order mark behaves as the same body without it (a BOM-led keep-alive, then silence, is a 504 with or without retry)",
    run: async (lib) => {
      const BOM = "\uFEFF";
      const silent = (text) => () => new Response(new ReadableStream({ start: (c) => c.enqueue(enc.encode(text)) }), { headers: { "content-type": "text/event-stream" } });
      for (const lead of ["", BOM]) {
        for (const retry of [undefined, { maxAttempts: 1 }]) {
          const res = await lib.relay(silent(`${lead}: ping\n\n`), { deadline: lib.Deadline.in(2_000), firstChunkMs: 60, retry });
          equal(res.status, 504, `lead ${JSON.stringify(lead)}, retry ${!!retry}: ${await res.clone().text()}`);
          equal((await res.json()).code, "STREAM_STALLED");
        }
      }
      // A resumed body's mark never reaches the client; the first body's is relayed as it came.
      const res = await lib.relay(
        (signal, info) => (info.attempt === 1 ? sseBody(`${BOM}id: 1\ndata: a\n\n`) : sseBody(`${BOM}id: 2\ndata: b\n\n`, { close: true })),
        { deadline: lib.Deadline.in(5_000), retry: { backoff: { baseMs: 1, maxMs: 1, jitter: 0 } } },
      );
      const { chunks } = await readAll(res);
      const bytes = [];
      for (const c of chunks) bytes.push(...c);
      equal(new TextDecoder("utf-8", { ignoreBOM: true }).decode(new Uint8Array(bytes)), `${BOM}id: 1\ndata: a\n\nid: 2\ndata: b\n\n`);
    },
  },
  {
    name: "resume: bad options are TypeErrors and RangeErrors naming the parameter, before any request",
    run: async (lib) => {
      let called = 0;
      const up = () => {
        called++;
        return new Response("x");
      };
      const d = () => lib.Deadline.in(1_000);
      const cases = [
        [{ retry: {} }, "TypeError", "options.deadline"],
        [{ deadline: d(), retry: "yes" }, "TypeError", "options.retry"],
        [{ deadline: d(), retry: { attemptTimeoutMs: 5 } }, "TypeError", "options.retry.attemptTimeoutMs"],
        [{ deadline: d(), retry: { attemptMinMs: -1 } }, "RangeError", "options.retry.attemptMinMs"],
        [{ deadline: d(), retry: { backoff: { baseMs: 5, maxMs: 1, jitter: 0 } } }, "RangeError", "options.retry.backoff.maxMs"],
        [{ deadline: d(), retry: { maxAttempts: 0 } }, "RangeError", "options.retry.maxAttempts"],
        [{ deadline: d(), resume: "continue" }, "TypeError", "options.resume"],
      ];
      for (const [options, name, param] of cases) {
        equal((await rejects(() => lib.relay(up, options), globalThis[name], undefined, `relay ${param}`)).param, param);
        const e = await rejects(() => lib.fetchWithDeadline("http://127.0.0.1:9/", undefined, options), globalThis[name], undefined, `fetchWithDeadline ${param}`);
        equal(e.param, param);
      }
      const withController = { deadline: d(), retry: true, controller: new AbortController() };
      equal((await rejects(() => lib.relay(up, withController), TypeError)).param, "options.controller");
      equal((await rejects(() => lib.relay(new Response("x"), { deadline: d(), retry: true }), TypeError)).param, "upstream");
      equal(called, 0, "no request was made");
    },
  },
];
