// Relay cases: `relay(upstream, options)` against in-process upstreams (a
// Response over a ReadableStream the case controls). Runs in Node, Deno,
// workerd and Chromium. Timing: limits of tens of ms; "not before" checks are
// exact, "not much after" allows SLACK_MS for a loaded machine.
import { equal, ok, rejects } from "../assert.js";

const SLACK_MS = 250;
const enc = new TextEncoder();
const dec = new TextDecoder();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * An upstream whose body the case scripts: `steps` are [delayMs, text] pairs
 * (text `null` closes); after the last step it stays silent. Records cancels.
 */
function upstream(steps, { type = "text/event-stream", status = 200 } = {}) {
  const log = { cancelled: false, reason: undefined, sentAt: [] };
  const timers = [];
  const stream = new ReadableStream({
    start(c) {
      let at = 0;
      for (const [delay, text] of steps) {
        at += delay;
        timers.push(
          setTimeout(() => {
            if (text === null) return c.close();
            log.sentAt.push(performance.now());
            c.enqueue(enc.encode(text));
          }, at),
        );
      }
    },
    cancel(reason) {
      log.cancelled = true;
      log.reason = reason;
      timers.forEach(clearTimeout);
    },
  });
  const response = new Response(stream, { status, headers: { "content-type": type, "x-upstream": "yes" } });
  return { response, log, stop: () => timers.forEach(clearTimeout) };
}

async function readAll(res) {
  const reader = res.body.getReader();
  let text = "";
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { text };
      text += dec.decode(value, { stream: true });
    }
  } catch (error) {
    return { text, error };
  }
}

export default [
  {
    name: "relay: a caller's budget below the fallback reserve: no request is made, and the fallback says the budget was below the reserve",
    run: async (lib) => {
      const caller = lib.Deadline.fromHeaders({ "grpc-timeout": "50m" }, { maxMs: 10_000 });
      let called = 0;
      const res = await lib.relay(
        (signal) => {
          called++;
          return fetch("http://127.0.0.1:9/never", { signal });
        },
        { deadline: caller.reserve(300), firstChunkMs: 1_000, stallMs: 1_000 },
      );
      equal(called, 0, "the request was made");
      equal(res.status, 504);
      const body = await res.json();
      equal(body.fallback, true);
      ok(/^the upstream was not called and the fallback answered: deadline exceeded before any work started: the budget \([\d.]+ ms\) was below the 300 ms reserved for the fallback$/.test(body.reason), body.reason);
      ok(!/did not finish|passed .* ago/.test(body.reason), body.reason);
      caller.dispose();
    },
  },
  {
    name: "relay: headers only after the first chunk; the body passes through unchanged; the deadline is disposed at its end",
    run: async (lib) => {
      const d = lib.Deadline.in(150);
      const up = upstream([[60, "data: 1\n\n"], [10, "data: 2\n\n"], [5, null]]);
      const res = await lib.relay(up.response, { deadline: d, firstChunkMs: 1_000, stallMs: 1_000 });
      const answeredAt = performance.now();
      // The upstream's own record of when it sent the first chunk: a timer armed with a stale
      // loop time (Node, under load) may send it a few ms before its nominal 60 ms.
      ok(up.log.sentAt.length > 0 && answeredAt >= up.log.sentAt[0], `the response came at ${answeredAt}, before the first chunk (sent at ${up.log.sentAt[0]})`);
      equal(res.status, 200);
      equal(res.headers.get("content-type"), "text/event-stream");
      equal(res.headers.get("cache-control"), "no-store");
      equal((await readAll(res)).text, "data: 1\n\ndata: 2\n\n");
      const signal = d.signal(); // created by the relay; the relay disposed it at the body's end
      await sleep(150 + 50);
      equal(signal.aborted, false, "a disposed deadline's signal does not fire at its instant");
    },
  },
  {
    name: "relay: a silent upstream gets the 504 fallback naming the first-chunk stall, and the upstream is cancelled",
    run: async (lib) => {
      const up = upstream([]);
      const controller = new AbortController();
      const t0 = performance.now();
      const res = await lib.relay(up.response, { firstChunkMs: 60, stallMs: 1_000, controller });
      const took = performance.now() - t0;
      ok(took >= 60 && took < 60 + SLACK_MS, `the fallback came after ${took} ms`);
      equal(res.status, 504);
      const json = await res.json();
      equal(json.fallback, true);
      ok(/stalled \(first-chunk\)/.test(json.reason), json.reason);
      ok(up.log.cancelled, "the upstream body was cancelled");
      ok(controller.signal.aborted && lib.isStreamStalled(controller.signal.reason), "the upstream request was aborted with the stall");
    },
  },
  {
    name: "relay: a stall mid-stream ends an SSE body with an event: error on a fresh line",
    run: async (lib) => {
      const up = upstream([[0, "data: 1\n\n"], [5, "data: par"]]);
      const res = await lib.relay(up.response, { firstChunkMs: 500, stallMs: 60 });
      const { text, error } = await readAll(res);
      equal(error, undefined, "the SSE body ends normally");
      const m = /^data: 1\n\ndata: par\nevent: error\ndata: (.*)\n\n$/.exec(text);
      ok(m, `ends with an error event: ${JSON.stringify(text)}`);
      ok(/stalled \(stall\)/.test(JSON.parse(m[1]).reason), m[1]);
      ok(up.log.cancelled && lib.isStreamStalled(up.log.reason), "the upstream was cancelled with the stall");
    },
  },
  {
    name: "relay: the deadline passing mid-stream ends the SSE body with an event: error naming the deadline",
    run: async (lib) => {
      const d = lib.Deadline.in(80);
      const up = upstream([[0, "data: 1\n\n"], [20, ": ping\n\n"], [20, ": ping\n\n"], [20, ": ping\n\n"], [20, ": ping\n\n"], [20, ": ping\n\n"]]);
      const res = await lib.relay(up.response, { deadline: d, stallMs: 1_000 });
      const { text } = await readAll(res);
      const t = performance.now();
      ok(t >= d.at, "not before the deadline");
      const m = /\nevent: error\ndata: (.*)\n\n$/.exec(text);
      ok(m && /within the deadline/.test(JSON.parse(m[1]).reason), JSON.stringify(text));
      up.stop();
    },
  },
  {
    name: "relay: an upstream that never sends headers gets the 504 at firstChunkMs (the wait for headers counts against it), or at its own firstByteMs",
    run: async (lib) => {
      const never = () => new Promise(() => {}); // not even the signal ends it
      const noAnswer = sleep(2_000).then(() => "no answer within 2 s");
      // A function upstream, and a bare promise: the relay must answer either way.
      for (const [kind, options, phase, limit] of [
        ["function", { firstChunkMs: 100, stallMs: 1_000 }, "first-chunk", 100],
        ["promise", { firstChunkMs: 100 }, "first-chunk", 100],
        ["function", { firstByteMs: 80, firstChunkMs: 1_000 }, "first-byte", 80],
      ]) {
        let seen;
        const upstream = kind === "function" ? (signal) => ((seen = signal), never()) : never();
        const t0 = performance.now();
        const res = await Promise.race([lib.relay(upstream, options), noAnswer]);
        const took = performance.now() - t0;
        ok(res !== "no answer within 2 s", `no fallback within 2 s (${phase}, limit ${limit} ms)`);
        ok(took >= limit - 1 && took < limit + SLACK_MS, `the fallback came after ${took} ms (limit ${limit})`);
        equal(res.status, 504);
        const json = await res.json();
        ok(new RegExp(`stalled \\(${phase}\\)`).test(json.reason), json.reason);
        if (kind === "function") ok(seen.aborted && lib.isStreamStalled(seen.reason), "the upstream request was aborted with the stall");
      }
    },
  },
  {
    name: "relay: without firstByteMs the first-chunk limit runs from the call: slow headers leave the body only what is left of it",
    run: async (lib) => {
      const up = upstream([[0, ": ping\n\n"], [200, "data: 1\n\n"]]);
      const t0 = performance.now();
      const res = await lib.relay(sleep(70).then(() => up.response), { firstChunkMs: 120, stallMs: 1_000 });
      const took = performance.now() - t0;
      equal(res.status, 504);
      ok(took >= 119 && took < 120 + SLACK_MS, `the fallback came after ${took} ms: 70 ms of headers + 50 left, not 70 + 120`);
      ok(/stalled \(first-chunk\)/.test((await res.json()).reason));
      ok(up.log.cancelled, "the upstream body was cancelled");
    },
  },
  {
    name: "relay: keep-alive comments do not commit a 200: an SSE upstream that only pings gets the 504 (first-chunk limit or deadline)",
    run: async (lib) => {
      const pings = () => upstream([[0, ": ping\n\n"], [20, ": ping\n\n"], [20, ": ping\n\n"], [20, ": ping\n\n"], [20, ": ping\n\n"], [20, ": ping\n\n"], [20, ": ping\n\n"], [20, ": ping\n\n"]]);
      const up = pings();
      const t0 = performance.now();
      const res = await lib.relay(up.response, { firstChunkMs: 100, stallMs: 1_000 });
      const took = performance.now() - t0;
      equal(res.status, 504, "a ping is not an answer: nothing was committed");
      ok(took >= 99 && took < 100 + SLACK_MS, `the fallback came after ${took} ms`);
      ok(/stalled \(first-chunk\)/.test((await res.json()).reason));
      ok(up.log.cancelled, "the upstream body was cancelled");
      // No first-chunk limit: the deadline gives the honest 504.
      const up2 = pings();
      const res2 = await lib.relay(up2.response, { deadline: lib.Deadline.in(120) });
      equal(res2.status, 504);
      ok(/within the deadline/.test((await res2.json()).reason));
      ok(up2.log.cancelled, "the upstream body was cancelled");
    },
  },
  {
    name: "relay: the response commits on the first event; the keep-alives before it are relayed first",
    run: async (lib) => {
      const up = upstream([[0, ": ping\n\n"], [30, ": ping\n\n"], [30, "data: 1\n\n"], [5, null]]);
      const t0 = performance.now();
      const res = await lib.relay(up.response, { firstChunkMs: 1_000, stallMs: 1_000 });
      const took = performance.now() - t0;
      ok(took >= 59, `the response came ${took} ms in, before the first event`);
      equal(res.status, 200);
      equal((await readAll(res)).text, ": ping\n\n: ping\n\ndata: 1\n\n");
      // A body that ends before any progress is relayed as it is.
      const quiet = upstream([[0, ": ping\n\n"], [5, null]]);
      const res2 = await lib.relay(quiet.response, { firstChunkMs: 1_000 });
      equal(res2.status, 200);
      equal((await readAll(res2)).text, ": ping\n\n");
    },
  },
  {
    name: "relay: (signal) => fetch(…) to a server that never sends headers → 504 at firstChunkMs, and the server sees the close",
    needs: ["fixtureUrl"],
    run: async (lib, ctx) => {
      const id = `relay-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
      const t0 = performance.now();
      const noAnswer = sleep(2_000).then(() => "no answer within 2 s");
      const res = await Promise.race([lib.relay((signal) => fetch(`${ctx.fixtureUrl}/stall/no-headers?id=${id}`, { signal }), { firstChunkMs: 100 }), noAnswer]);
      const took = performance.now() - t0;
      ok(res !== "no answer within 2 s", "no fallback within 2 s");
      equal(res.status, 504);
      ok(took >= 99 && took < 100 + SLACK_MS, `the fallback came after ${took} ms`);
      const view = await (await fetch(`${ctx.fixtureUrl}/stall/closed?id=${id}`)).json();
      ok(view.known && view.closed, `the server did not see the connection close: ${JSON.stringify(view)}`);
    },
  },
  {
    name: "relay: a body that is not SSE errors with the reason when it stalls",
    run: async (lib) => {
      const up = upstream([[0, "abc"]], { type: "application/octet-stream" });
      const res = await lib.relay(up.response, { stallMs: 50 });
      equal(res.headers.get("content-type"), "application/octet-stream");
      const { text, error } = await readAll(res);
      equal(text, "abc");
      ok(lib.isStreamStalled(error), `the body errored with StreamStalled: ${error}`);
    },
  },
  {
    name: "relay: the client cancelling the body cancels the upstream, aborts its request and disposes the deadline",
    run: async (lib) => {
      const d = lib.Deadline.in(120);
      const controller = new AbortController();
      const up = upstream([[0, "data: 1\n\n"], [500, "data: 2\n\n"]]);
      const res = await lib.relay(up.response, { deadline: d, controller });
      const reader = res.body.getReader();
      await reader.read();
      await reader.cancel("client left");
      equal(up.log.reason, "client left", "the upstream saw the client's reason");
      ok(controller.signal.aborted, "the upstream request was aborted");
      const signal = d.signal();
      await sleep(120 + 50);
      equal(signal.aborted, false, "disposed at the cancel");
    },
  },
  {
    name: "relay: with (signal) => fetch(…) the relay owns the request: the deadline aborts it and the fallback names the deadline",
    run: async (lib) => {
      const d = lib.Deadline.in(60);
      let seen;
      const t0 = performance.now();
      const res = await lib.relay(
        (signal) =>
          new Promise((_, reject) => {
            seen = signal;
            signal.addEventListener("abort", () => reject(new Error("a runtime's own AbortError")), { once: true });
          }),
        { deadline: d },
      );
      const took = performance.now() - t0;
      ok(took >= 59 && took < 60 + SLACK_MS, `answered after ${took} ms`);
      ok(seen.aborted, "the request's signal was aborted");
      equal(res.status, 504);
      ok(/within the deadline/.test((await res.json()).reason), "the reason is the deadline, not the runtime's AbortError");
    },
  },
  {
    name: "relay: an upstream that is not ok is returned as it is; a failed one gets a 502; a custom fallback is used",
    run: async (lib) => {
      const notOk = new Response("nope", { status: 503 });
      equal(await lib.relay(notOk), notOk);
      const res = await lib.relay(Promise.reject(new TypeError("fetch failed")));
      equal(res.status, 502);
      equal((await res.json()).reason, "upstream failed", "the upstream's own words stay out of the public answer");
      const custom = await lib.relay(Promise.reject(new Error("x")), { fallback: (reason, ms) => new Response(`sorry: ${reason.message} ${ms >= 0}`, { status: 503 }) });
      equal(await custom.text(), "sorry: x true");
    },
  },
  {
    name: "relay: the default fallback and the event: error carry our words and a code, never the upstream's error (URL credentials, internal hosts, keys); onError gets it",
    run: async (lib) => {
      const SECRET = "request to http://user:s3cret@10.0.3.7:8443/v1/chat failed: 401 for key sk-live-abc123";
      const leaks = (text) => /s3cret|10\.0\.3\.7|sk-live|user:/.test(text);
      const seen = [];
      const onError = (error) => seen.push(error);
      // Before content: the fallback.
      const res = await lib.relay(Promise.reject(new TypeError(SECRET)), { onError });
      equal(res.status, 502);
      const text = await res.text();
      ok(!leaks(text), text);
      const body = JSON.parse(text);
      equal(body.code, "UPSTREAM_FAILED");
      equal(body.reason, "upstream failed");
      equal(seen.length, 1, "onError was called once");
      equal(seen[0].message, SECRET, "onError gets the upstream's error as it is");
      // After content: the event: error.
      let n = 0;
      const broken = new ReadableStream({
        pull: (c) => (n++ === 0 ? c.enqueue(enc.encode("data: a\n\n")) : sleep(5).then(() => c.error(new Error(SECRET)))),
      });
      const mid = await lib.relay(new Response(broken, { headers: { "content-type": "text/event-stream" } }), { onError });
      equal(mid.status, 200);
      const { text: streamed } = await readAll(mid);
      ok(!leaks(streamed), streamed);
      const m = /event: error\ndata: (.*)\n\n$/.exec(streamed);
      ok(m, streamed);
      equal(JSON.parse(m[1]).code, "UPSTREAM_FAILED");
      equal(seen.length, 2, "onError saw the mid-stream failure");
      // With retry: every attempt failed; the public answer still names none of them.
      const retried = await lib.relay(() => Promise.reject(new TypeError(SECRET)), {
        deadline: lib.Deadline.in(5_000),
        retry: { maxAttempts: 2, backoff: { baseMs: 1, maxMs: 1, jitter: 0 } },
        onError,
      });
      const rtext = await retried.text();
      ok(!leaks(rtext), rtext);
      ok(/^[A-Z_]+$/.test(JSON.parse(rtext).code), rtext);
      equal(seen.length, 3, "onError saw the retried relay's failure");
    },
  },
  {
    name: "relay: an upstream that only sends retry: events is silent: the 504 at firstChunkMs, with and without retry",
    run: async (lib) => {
      const only = () => new Response(new ReadableStream({ start: (c) => c.enqueue(enc.encode("retry: 3000\n\n: ping\n\nretry: 10\n\n")) }), { headers: { "content-type": "text/event-stream" } });
      for (const retry of [undefined, { maxAttempts: 1 }]) {
        const res = await lib.relay(only, { deadline: lib.Deadline.in(2_000), firstChunkMs: 60, retry });
        equal(res.status, 504, `retry ${!!retry}: ${await res.clone().text()}`);
        equal((await res.json()).code, "STREAM_STALLED");
      }
      equal(lib.sseProgress(enc.encode("retry: 3000\n\n")), false, "sseProgress agrees");
    },
  },
  {
    name: "relay: with retry, nothing of a failed attempt that is not content (its keep-alives) reaches the client; the committing attempt's own keep-alives do",
    run: async (lib) => {
      let n = 0;
      const res = await lib.relay(
        () => {
          n++;
          let step = 0;
          const script = n === 1 ? [": ping 1\n\n", ": ping 2\n\n", null] : [": ok\n\n", "data: a\n\n", "done"];
          return new Response(
            new ReadableStream({
              pull: async (c) => {
                const next = script[step++];
                await sleep(5);
                if (next === null) return c.error(new Error("connection reset"));
                if (next === "done") return c.close();
                c.enqueue(enc.encode(next));
              },
            }),
            { headers: { "content-type": "text/event-stream" } },
          );
        },
        { deadline: lib.Deadline.in(5_000), retry: { backoff: { baseMs: 1, maxMs: 1, jitter: 0 } } },
      );
      equal(res.status, 200);
      const { text } = await readAll(res);
      equal(text, ": ok\n\ndata: a\n\n", "the failed attempt's pings are gone");
      equal(n, 2);
    },
  },
  {
    name: "relay: awaiting it keeps the process alive until the deadline's fallback (Node, Deno)",
    needs: ["spawnPackageScript"],
    run: async (lib, ctx) => {
      const child = await ctx.spawnPackageScript(`await init();
const { relay } = await import(entryUrl);
const never = (signal) => new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason), { once: true }));
const res = await relay(never, { deadline: Deadline.in(150) });
console.log("status", res.status);`);
      equal(child.code, 0, `child exit code (stdout ${JSON.stringify(child.stdout)})`);
      equal(child.stdout.trim(), "status 504", "the fallback came: the process did not exit first");
    },
  },
  {
    name: "relay: awaiting it with an upstream that never answers still ends, at firstChunkMs: the process exits (Node, Deno)",
    needs: ["spawnPackageScript"],
    run: async (lib, ctx) => {
      const child = await ctx.spawnPackageScript(`await init();
const { relay } = await import(entryUrl);
const exit = globalThis.Deno?.exit ?? ((code) => process.exit(code));
const guard = setTimeout(() => (console.log("no answer within 3 s"), exit(3)), 3_000);
const res = await relay(() => new Promise(() => {}), { firstChunkMs: 100 });
clearTimeout(guard);
console.log("status", res.status);`);
      equal(child.stdout.trim(), "status 504", "the fallback came at the first-chunk limit");
      equal(child.code, 0, "child exit code");
      ok(child.ms < 2_500, `the child took ${Math.round(child.ms)} ms`);
    },
  },
  {
    name: "relay: bad input → TypeError naming the parameter (.param, .code)",
    run: async (lib) => {
      for (const [args, param] of [
        [["http://x"], "upstream"],
        [[new Response("x"), 5], "options"],
        [[new Response("x"), { deadline: 5 }], "options.deadline"],
        [[new Response("x"), { signal: {} }], "options.signal"],
        [[new Response("x"), { stallMs: "1s" }], "options.stallMs"],
        [[new Response("x"), { firstChunkMs: null }], "options.firstChunkMs"],
        [[new Response("x"), { firstByteMs: "1s" }], "options.firstByteMs"],
        [[new Response("x"), { isProgress: 1 }], "options.isProgress"],
        [[new Response("x"), { fallback: 1 }], "options.fallback"],
      ]) {
        const e = await rejects(() => lib.relay(...args), TypeError, new RegExp(`'${param.replace(".", "\\.")}'`));
        equal(e.param, param, "param");
        equal(e.code, "INVALID_TYPE", `code of ${param}`);
      }
    },
  },
  {
    name: "relay: an upstream function that gives no Response → the fallback, its reason a TypeError (.param 'upstream', .code INVALID_RETURN)",
    run: async (lib) => {
      let reason;
      const res = await lib.relay(async () => "text", { fallback: (r) => ((reason = r), new Response("fb", { status: 502 })) });
      equal(res.status, 502);
      ok(reason instanceof TypeError, `reason ${reason}`);
      equal(reason.param, "upstream");
      equal(reason.code, "INVALID_RETURN");
    },
  },
];
