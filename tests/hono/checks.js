// The Hono middleware (`edge-deadline/hono`) with the real `hono` package: the
// same checks run in Node, Deno and workerd (tests/hono/run.mjs). Each runner
// passes in its own `Hono`, the package entry (`lib`) and the middleware
// (`deadline`), so this file imports no bare specifier.
//
// Requests go through `app.fetch(new Request(…))`: the runtime's own Request,
// Response and streams, Hono's routing and context, our middleware. Disposal
// is observed through the deadline's signal: a disposed deadline's signal
// never aborts, an undisposed one aborts at its instant.
import { equal, ok, throws } from "../js/assert.js";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const SLACK_MS = 60; // how much a loaded 2-core machine may add between "now" readings here

function parseMetrics(value) {
  return (value ?? "").match(/(?:[^,"]|"(?:[^"\\]|\\.)*")+/g)?.map((s) => s.trim()) ?? [];
}

/** A handler that records what it saw of the deadline. */
function probe(lib, seen) {
  return async (c) => {
    const d = c.get("deadline");
    seen.deadline = d;
    seen.remaining = d.remaining();
    seen.isDeadline = d instanceof lib.Deadline;
    await sleep(1);
    seen.ambient = lib.currentDeadline();
    seen.signal = d.signal();
    return c.text("ok");
  };
}

export function honoChecks({ Hono, lib, deadline }) {
  const app = (options, handler, setup) => {
    const a = new Hono();
    a.use(deadline(options));
    if (setup) setup(a);
    a.all("*", handler);
    return a;
  };

  return [
    {
      name: "hono: the deadline is on the context and ambient inside the handler; the budget bounds it",
      run: async () => {
        const seen = {};
        // The deadline is set between these two readings, 2000 ms after: exact, whatever the machine's load.
        const before = performance.now();
        const res = await app({ budgetMs: 2_000 }, probe(lib, seen)).fetch(new Request("http://x/"));
        const after = performance.now();
        equal(await res.text(), "ok");
        ok(seen.isDeadline, "c.get('deadline') is a Deadline of the package");
        const at = seen.deadline.at;
        ok(at >= before + 2_000 && at <= after + 2_000, `deadline at ${at - before} ms after the request began, of a 2000 ms budget`);
        ok(seen.remaining <= 2_000, `remaining ${seen.remaining} of a 2000 ms budget`);
        if (lib.ambientDeadline === "async") equal(seen.ambient, seen.deadline, "currentDeadline() after an await is the request's deadline");
      },
    },
    {
      name: "hono: the smallest wins: incoming headers, the platform cap, the budget, less the fallback reserve",
      run: async () => {
        const remainingWith = async (options, headers) => {
          const seen = {};
          const res = await app(options, probe(lib, seen)).fetch(new Request("http://x/", { headers }));
          equal(res.status, 200);
          await res.text();
          return seen.remaining;
        };
        let r = await remainingWith({ budgetMs: 5_000 }, { "edge-deadline-remaining-ms": "300" });
        ok(r <= 300 && r > 300 - SLACK_MS, `our own header (300 ms) wins over a 5 s budget: ${r}`);
        r = await remainingWith({ budgetMs: 5_000 }, { "grpc-timeout": "200m" });
        ok(r <= 200 && r > 200 - SLACK_MS, `grpc-timeout 200m wins: ${r}`);
        r = await remainingWith({ budgetMs: 400 }, { "edge-deadline-remaining-ms": "60000" });
        ok(r <= 400 && r > 400 - SLACK_MS, `a caller cannot extend our 400 ms budget: ${r}`);
        r = await remainingWith({ budgetMs: 5_000, platform: "custom", caps: { wallMs: 700 } }, {});
        ok(r <= 700 && r > 700 - SLACK_MS, `the platform's 700 ms wall cap wins: ${r}`);
        r = await remainingWith({ budgetMs: 1_000, fallbackReserveMs: 250 }, {});
        ok(r <= 750 && r > 750 - SLACK_MS, `the reserve is held back from the budget: ${r}`);
        r = await remainingWith({ budgetMs: 5_000, fallbackReserveMs: 100 }, { "edge-deadline-remaining-ms": "300" });
        ok(r <= 200 && r > 200 - SLACK_MS, `the reserve is held back from an incoming deadline too: ${r}`);
        r = await remainingWith({ budgetMs: 5_000, formats: "Grpc-Timeout" }, { "edge-deadline-remaining-ms": "100", "grpc-timeout": "300m" });
        ok(r <= 300 && r > 300 - SLACK_MS, `only the formats asked for are read: ${r}`);
        r = await remainingWith({ budgetMs: 500 }, { "edge-deadline-remaining-ms": "soon", "grpc-timeout": "1x" });
        ok(r <= 500 && r > 500 - SLACK_MS, `malformed headers are skipped, the request still served: ${r}`);
        r = await remainingWith({ budgetMs: 5_000, fallbackReserveMs: 100 }, { "edge-deadline-remaining-ms": "50" });
        equal(r, 0, "a caller with less than our reserve left: an expired deadline, not an error");
      },
    },
    {
      name: "hono: the request's abort signal is linked: the client leaving aborts the deadline's signal with its reason",
      run: async () => {
        const client = new AbortController();
        let signal;
        let reached;
        const reachedHandler = new Promise((r) => (reached = r));
        const a = app({ budgetMs: 5_000 }, async (c) => {
          signal = c.get("deadline").signal();
          reached();
          await new Promise((r) => signal.addEventListener("abort", r, { once: true }));
          return c.text("gone");
        });
        const pending = a.fetch(new Request("http://x/", { signal: client.signal }));
        await reachedHandler;
        const reason = new Error("client left");
        client.abort(reason);
        await pending;
        ok(signal.aborted, "the deadline's signal aborted");
        equal(signal.reason, reason, "with the request signal's reason");

        // requestSignal: false: the request's signal is not read at all.
        let read = 0;
        const request = new Request("http://x/");
        const counted = new Proxy(request, {
          get(target, key) {
            if (key === "signal") read++;
            const value = Reflect.get(target, key, target);
            return typeof value === "function" ? value.bind(target) : value;
          },
        });
        const unlinked = app({ budgetMs: 5_000, requestSignal: false }, (c) => c.text(String(c.get("deadline").remaining() > 0)));
        const res = await unlinked.fetch(counted);
        equal(await res.text(), "true");
        equal(read, 0, "request.signal was never read");
      },
    },
    {
      name: "hono: disposed once the response is done: a bodyless or plain response at once, a streamed one when its body ends",
      run: async () => {
        // Plain body: disposed when the middleware returns, so the signal never fires at the instant.
        const seen = {};
        const res = await app({ budgetMs: 40 }, probe(lib, seen)).fetch(new Request("http://x/"));
        await res.text();
        await sleep(40 + SLACK_MS);
        equal(seen.signal.aborted, false, "a disposed deadline's signal does not fire at its instant");

        // Streamed body, still open at the instant: not disposed early (the signal fires).
        let streamSignal;
        const slow = app({ budgetMs: 40 }, (c) => {
          streamSignal = c.get("deadline").signal();
          let timer;
          return new Response(new ReadableStream({
            start(ctl) {
              ctl.enqueue(new TextEncoder().encode("a"));
              timer = setTimeout(() => ctl.close(), 40 + SLACK_MS);
            },
            cancel() {
              clearTimeout(timer);
            },
          }));
        });
        const slowRes = await slow.fetch(new Request("http://x/"));
        const text = await slowRes.text();
        equal(text, "a");
        ok(streamSignal.aborted, "the deadline was alive while the body streamed past its instant");

        // Streamed body that ends before the instant: disposed at its end.
        let endedSignal;
        const quick = app({ budgetMs: 60 }, (c) => {
          endedSignal = c.get("deadline").signal();
          return new Response(new ReadableStream({
            start(ctl) {
              ctl.enqueue(new TextEncoder().encode("b"));
              setTimeout(() => ctl.close(), 5);
            },
          }));
        });
        equal(await (await quick.fetch(new Request("http://x/"))).text(), "b");
        await sleep(60 + SLACK_MS);
        equal(endedSignal.aborted, false, "disposed when the streamed body ended");
      },
    },
    {
      name: "hono: a HEAD request (Hono runs the GET route and drops its body unread) disposes the deadline when the handler is done",
      run: async () => {
        const signals = [];
        const a = new Hono();
        a.use(deadline({ budgetMs: 40 }));
        a.get("/text", (c) => {
          signals.push(c.get("deadline").signal());
          return c.text("ok");
        });
        a.get("/stream", (c) => {
          signals.push(c.get("deadline").signal());
          return new Response(new ReadableStream({ start: (ctl) => ctl.enqueue(new TextEncoder().encode("never read")) }));
        });
        for (const path of ["/text", "/stream"]) {
          const res = await a.fetch(new Request(`http://x${path}`, { method: "HEAD" }));
          equal(res.status, 200, `HEAD ${path}`);
          equal(res.body, null, `HEAD ${path} has no body`);
        }
        equal(signals.length, 2);
        await sleep(40 + SLACK_MS);
        equal(signals.map((s) => s.aborted).join(), "false,false", "disposed: the signals did not fire at the instant");
      },
    },
    {
      name: "hono: a cancelled streamed body disposes the deadline and cancels the handler's stream",
      run: async () => {
        let signal;
        let cancelled;
        const a = app({ budgetMs: 60 }, (c) => {
          signal = c.get("deadline").signal();
          return new Response(new ReadableStream({
            pull(ctl) {
              ctl.enqueue(new TextEncoder().encode("x"));
              return sleep(5);
            },
            cancel(reason) {
              cancelled = reason;
            },
          }));
        });
        const res = await a.fetch(new Request("http://x/"));
        const reader = res.body.getReader();
        await reader.read();
        await reader.cancel("client went away");
        equal(cancelled, "client went away", "the handler's stream saw the cancel");
        await sleep(60 + SLACK_MS);
        equal(signal.aborted, false, "disposed at the cancel");
      },
    },
    {
      name: "hono: serverTiming writes the deadline's metric and the plan's steps, appended to the handler's own",
      run: async () => {
        const a = app({ budgetMs: 2_000, serverTiming: true }, async (c) => {
          const p = lib.plan(c.get("deadline"), [{ name: "retrieve", kind: "mandatory", minMs: 1, preferredMs: 100 }]);
          c.set("plan", p);
          await p.run("retrieve", () => sleep(10));
          c.header("Server-Timing", "db;dur=3", { append: true });
          return c.text("ok");
        });
        const res = await a.fetch(new Request("http://x/", { headers: { "edge-deadline-remaining-ms": "900" } }));
        await res.text();
        const metrics = parseMetrics(res.headers.get("server-timing"));
        ok(metrics.includes("db;dur=3"), `the handler's metric is kept: ${metrics}`);
        const own = metrics.find((m) => m.startsWith("edge-deadline;"));
        ok(own && /;dur=[\d.]+;desc="budget (8\d\d|900) ms from edge-deadline-remaining-ms, \d+ ms left"$/.test(own), `the deadline's metric: ${own}`);
        ok(metrics.some((m) => /^retrieve;dur=\d+(\.\d)?;desc="ok, cap/.test(m)), `the plan's step: ${metrics}`);

        const plain = await app({ budgetMs: 2_000 }, (c) => c.text("ok")).fetch(new Request("http://x/"));
        equal(plain.headers.get("server-timing"), null, "no Server-Timing unless asked");
      },
    },
    {
      name: "hono: a handler that relays a stalling SSE upstream: the stream ends with event: error and the deadline is released",
      run: async () => {
        let signal;
        let upstreamCancelled = false;
        const t0 = performance.now();
        const a = app({ budgetMs: 150 }, (c) => {
          const d = c.get("deadline");
          signal = d.signal();
          const upstream = new Response(
            new ReadableStream({
              start: (ctl) => ctl.enqueue(new TextEncoder().encode("data: 1\n\n")),
              cancel: () => void (upstreamCancelled = true),
            }),
            { headers: { "content-type": "text/event-stream" } },
          );
          return lib.relay(upstream, { deadline: d, stallMs: 40 });
        });
        const res = await a.fetch(new Request("http://x/"));
        equal(res.headers.get("content-type"), "text/event-stream");
        const text = await res.text();
        ok(/^data: 1\n\nevent: error\ndata: .*stalled \(stall\).*\n\n$/.test(text), JSON.stringify(text));
        ok(upstreamCancelled, "the upstream was cancelled");
        await sleep(Math.max(0, t0 + 150 + SLACK_MS - performance.now()));
        equal(signal.aborted, false, "the deadline was disposed, not left to fire");
      },
    },
    {
      name: "hono: a caller's budget (grpc-timeout 50m) below the fallback reserve (300 ms): the relay makes no request and the fallback says why",
      run: async () => {
        let called = 0;
        const a = app({ budgetMs: 5_000, fallbackReserveMs: 300 }, (c) =>
          lib.relay(
            (signal) => {
              called++;
              return fetch("http://127.0.0.1:9/never", { signal });
            },
            { deadline: c.get("deadline"), firstChunkMs: 1_000, stallMs: 1_000 },
          ),
        );
        const res = await a.fetch(new Request("http://x/", { headers: { "grpc-timeout": "50m" } }));
        equal(res.status, 504);
        const body = await res.json();
        equal(called, 0, "a request was made with no time left");
        ok(/not called and the fallback answered: .*the budget \([\d.]+ ms\) was below the 300 ms reserved for the fallback$/.test(body.reason), body.reason);
      },
    },
    {
      name: "hono: a repeated propagation header: a copy too long to read is refused alone and the valid 50m copy still bounds the deadline",
      run: async () => {
        const seen = {};
        const headers = new Headers();
        headers.append("grpc-timeout", "9".repeat(300));
        headers.append("grpc-timeout", "50m");
        const res = await app({ budgetMs: 10_000 }, probe(lib, seen)).fetch(new Request("http://x/", { headers }));
        equal(res.status, 200);
        ok(seen.remaining <= 50, `the deadline is ${seen.remaining} ms, not the caller's 50 ms`);
      },
    },
    {
      name: "hono: a handler that throws gets Hono's error response and the deadline is disposed",
      run: async () => {
        let signal;
        const a = app({ budgetMs: 40 }, (c) => {
          signal = c.get("deadline").signal();
          throw new Error("handler bug");
        });
        a.onError((e, c) => c.text(`caught: ${e.message}`, 500));
        const res = await a.fetch(new Request("http://x/"));
        equal(res.status, 500);
        equal(await res.text(), "caught: handler bug");
        await sleep(40 + SLACK_MS);
        equal(signal.aborted, false, "disposed");
      },
    },
    {
      name: "hono: concurrent requests: a handler's second hedge attempt sees its own request's deadline",
      run: async () => {
        const seen = [];
        const a = app({ budgetMs: 5_000 }, async (c) => {
          const own = c.get("deadline");
          const delayMs = Number(new URL(c.req.url).searchParams.get("delay"));
          const answer = await lib.hedge(
            (signal, { attempt }) => {
              seen.push({ attempt, ok: lib.currentDeadline() === own });
              return attempt >= 2 ? "second" : new Promise((resolve) => signal.addEventListener("abort", () => resolve("first")));
            },
            { deadline: own, delayMs, maxAttempts: 2 },
          );
          return c.text(answer);
        });
        const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => a.fetch(new Request(`http://x/?delay=${2 + (i % 7)}`)).then((r) => r.text())));
        equal(answers.join(), Array(20).fill("second").join());
        equal(seen.length, 40);
        if (lib.ambientDeadline === "async") equal(seen.filter((s) => !s.ok).map((s) => `attempt ${s.attempt}`).join(", "), "", "attempts that saw another request's deadline");
      },
    },
    {
      name: "hono: with no budgetMs, the platform alone bounds the deadline: its wall-clock or first-byte cap, or, where it has none, the caller's headers and the client",
      run: async () => {
        const served = async (options, expectMs, headers) => {
          const seen = {};
          const res = await app(options, probe(lib, seen)).fetch(new Request("http://x/", { headers }));
          equal(res.status, 200, `status for ${JSON.stringify(options)}`);
          equal(await res.text(), "ok");
          ok(seen.remaining <= expectMs && seen.remaining > expectMs - SLACK_MS, `${JSON.stringify(options)}: remaining ${seen.remaining}, expected ${expectMs}`);
          return res;
        };
        await served({ platform: "vercel-edge" }, 25_000); // its 25 s first-byte cap
        await served({ platform: "vercel-edge", fallbackReserveMs: 500 }, 24_500);
        await served({ caps: { wallMs: 700 } }, 700);
        await served({ caps: { firstByteMs: 900, cpuMs: 50 } }, 900);
        await served({ platform: "cloudflare-workers", caps: { wallMs: 800 } }, 800);
        // A header still shortens a platform-bound deadline.
        await served({ platform: "vercel-edge" }, 300, { "edge-deadline-remaining-ms": "300" });
        // No wall-clock limit (Workers' fetch, Deno Deploy, a CPU cap alone): the caller's header bounds it ...
        const unbounded = [{ platform: "cloudflare-workers" }, { platform: "cloudflare-workers", plan: "free" }, { platform: "deno-deploy" }, { caps: { cpuMs: 50 } }, { platform: "custom", caps: { cpuMs: 50 } }];
        for (const options of unbounded) await served(options, 400, { "grpc-timeout": "400m" });
        // ... and without one, no timer can fire: the deadline is far away, and Server-Timing says why.
        for (const options of unbounded) {
          const seen = {};
          const res = await app({ ...options, serverTiming: true }, probe(lib, seen)).fetch(new Request("http://x/"));
          equal(res.status, 200, `status for ${JSON.stringify(options)}`);
          await res.text();
          ok(seen.remaining > 1e12, `${JSON.stringify(options)}: remaining ${seen.remaining}`);
          ok(/desc="no time bound: no budgetMs, no header, and the platform has no wall-clock limit"/.test(res.headers.get("server-timing")), res.headers.get("server-timing"));
        }
      },
    },
    {
      name: "hono: the server's own bad options throw at app set-up, naming the option",
      run: () => {
        const cases = [
          [{ budgetMs: "8s" }, TypeError, /'options\.budgetMs'/, "options.budgetMs", "INVALID_TYPE"],
          [{ budgetMs: -1 }, RangeError, /'options\.budgetMs'/, "options.budgetMs", "NEGATIVE"],
          [{ budgetMs: NaN }, RangeError, /'options\.budgetMs'/, "options.budgetMs", "NOT_FINITE"],
          [{ budgetMs: 2 ** 53 }, RangeError, /'options\.budgetMs'/, "options.budgetMs", "TOO_LARGE"],
          [{ budgetMs: 10, fallbackReserveMs: -5 }, RangeError, /'options\.fallbackReserveMs'/, "options.fallbackReserveMs", "NEGATIVE"],
          [{ budgetMs: 10, transitMs: Infinity }, RangeError, /'options\.transitMs'/, "options.transitMs", "NOT_FINITE"],
          [{}, TypeError, /budgetMs/, "options", "MISSING_OPTION"],
          [5, TypeError, /'options'/, "options", "INVALID_TYPE"],
          [{ budgetMs: 10, platform: "aws" }, RangeError, /'options\.platform'/, "options.platform", "UNKNOWN_VALUE"],
          [{ budgetMs: 10, serverTiming: "yes" }, TypeError, /'options\.serverTiming'/, "options.serverTiming", "INVALID_TYPE"],
          [{ budgetMs: 10, requestSignal: 1 }, TypeError, /'options\.requestSignal'/, "options.requestSignal", "INVALID_TYPE"],
          [{ budgetMs: 10, formats: 5 }, TypeError, /'options\.formats'/, "options.formats", "INVALID_TYPE"],
          [{ budgetMs: 10, formats: ["grpc-timeout", "x-deadline"] }, RangeError, /x-deadline/, "options.formats[1]", "UNKNOWN_VALUE"],
        ];
        for (const [options, Type, pattern, param, code] of cases) {
          const e = throws(() => deadline(options), Type, pattern);
          equal(e.param, param, `param for ${JSON.stringify(options)}`);
          equal(e.code, code, `code for ${JSON.stringify(options)}`);
        }
      },
    },
  ];
}

/** Runs the checks; resolves `{ runtime, passed, failed, failures }`. */
export async function runHonoChecks(runtime, deps) {
  const report = { runtime, passed: 0, failed: 0, skipped: 0, failures: [] };
  for (const check of honoChecks(deps)) {
    try {
      await check.run();
      report.passed++;
    } catch (error) {
      report.failed++;
      report.failures.push({ name: check.name, error: `${error?.name}: ${error?.message}\n${error?.stack ?? ""}` });
    }
  }
  return report;
}
