// Streams that recover: `relay` and `fetchWithDeadline` with `retry` and
// `resume`, against the fixture server's resumable upstreams
// (tests/fixtures/resume.mjs), over real connections, in Node, Deno, workerd
// and Chromium. Each case uses its own fixture key, and asks the fixture what
// it saw (how many connections, the `Last-Event-ID` each carried).
//
// Events are checked one by one: the reader must get every event exactly
// once, whole, in order.
import { equal, ok, rejects } from "../assert.js";

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
          return fetch(`${ctx.fixtureUrl}/resume/sse?key=${key}-next&events=40`, { signal: delivered.signal, headers: { "last-event-id": delivered.lastEventId } });
        },
      });
      const { text, error } = await readAll(res);
      equal(error, undefined);
      checkEvents(events(text), 1, 40, "continued by the hook");
      equal(calls.length, 1, "hook calls");
      const d = calls[0];
      equal(d.lastEventId, "20");
      equal(d.attempt, 3, "the hook makes the third attempt (after the stalled one and the one that replayed)");
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
const res = await lib.relay(() => piece("a", false), {
  deadline: lib.Deadline.in(5_000),
  retry: { attemptMinMs: 10, backoff: { baseMs: 300, maxMs: 300, jitter: 0 } },
  resume: () => (++n === 1 ? piece("b", false) : piece("c", true)),
});
console.log(await res.text());`,
      );
      equal(code, 0, "child exit code");
      equal(stdout.trim(), "abc");
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
