// A Deno server proxying a streaming (Server-Sent Events) upstream inside one
// edge deadline: the Worker example (../worker/src/index.js) with Deno.serve.
//
//   npm install edge-deadline         # Deno resolves it from package.json + node_modules
//   node ../upstream.mjs &            # a local upstream on 127.0.0.1:8788
//   deno run --allow-net=127.0.0.1 --allow-read server.js [port] [upstream]
//
// `--allow-read`: `init()` reads the .wasm next to the package's entry point.
import { Deadline, init, isDeadlineExceeded, isStreamStalled, sseProgress, toHeaders, withStallTimeout } from "edge-deadline";

const PRODUCT_MS = 8_000; // the product's budget for one request
const FALLBACK_RESERVE_MS = 300; // held back for the fallback response
const FIRST_CHUNK_MS = 4_000; // stall limit before the first event (queueing, prefill)
const STALL_MS = 2_000; // stall limit between events

const port = Number(Deno.args[0] ?? 8000);
const upstreamUrl = Deno.args[1] ?? "http://127.0.0.1:8788";

await init(); // once, before serving (Deno allows top-level await and timers at module scope)

Deno.serve({ hostname: "127.0.0.1", port, onListen: ({ port }) => console.log(`listening on http://127.0.0.1:${port}/`) }, async (request) => {
  const started = performance.now();
  const deadline = Deadline.forPlatform({
    platform: "deno-deploy",
    productMs: PRODUCT_MS,
    fallbackReserveMs: FALLBACK_RESERVE_MS,
  });
  const { pathname, search } = new URL(request.url);
  const controller = new AbortController(); // aborted by a stall or the client leaving
  const signal = AbortSignal.any([controller.signal, deadline.signal()]);
  let upstream;
  let reader;
  let first;
  try {
    upstream = await fetch(new URL(pathname + search, upstreamUrl), {
      headers: { accept: "text/event-stream", ...toHeaders(deadline) },
      signal,
    });
    if (!upstream.ok || upstream.body === null) {
      deadline.dispose();
      return upstream;
    }
    reader = withStallTimeout(upstream.body, { firstChunkMs: FIRST_CHUNK_MS, stallMs: STALL_MS, deadline, controller, isProgress: sseProgress }).getReader();
    first = await reader.read(); // nothing is committed before the upstream says something
  } catch (error) {
    deadline.dispose();
    return fallback(signal.aborted ? signal.reason : error, performance.now() - started); // the reason, not a runtime's AbortError
  }
  return new Response(relay(first, reader, () => deadline.dispose()), {
    headers: { "content-type": upstream.headers.get("content-type") ?? "text/event-stream", "cache-control": "no-store" },
  });
});

/** The rest of the upstream body; a stall or the deadline ends it with an `event: error`. */
function relay(first, reader, done) {
  let lastByte = 10;
  const forward = (c, { done: end, value }) => {
    if (end) return c.close(), done();
    if (value.byteLength) lastByte = value[value.byteLength - 1];
    c.enqueue(value);
  };
  return new ReadableStream({
    start(c) {
      forward(c, first);
    },
    async pull(c) {
      let next;
      try {
        next = await reader.read();
      } catch (error) {
        const lineOpen = lastByte !== 10 && lastByte !== 13;
        const data = JSON.stringify({ fallback: true, reason: describe(error) });
        c.enqueue(new TextEncoder().encode(`${lineOpen ? "\n" : ""}event: error\ndata: ${data}\n\n`));
        return c.close(), done();
      }
      forward(c, next);
    },
    cancel(reason) {
      done();
      return reader.cancel(reason);
    },
  });
}

function describe(error) {
  if (isStreamStalled(error)) return `upstream stalled (${error.phase}): ${error.message}`;
  if (isDeadlineExceeded(error)) return `upstream did not finish within the deadline: ${error.message}`;
  return `upstream failed: ${error?.message ?? error}`;
}

function fallback(error, elapsedMs) {
  const timedOut = isStreamStalled(error) || isDeadlineExceeded(error);
  return Response.json(
    { fallback: true, reason: describe(error), elapsedMs: Math.round(elapsedMs) },
    { status: timedOut ? 504 : 502, headers: { "cache-control": "no-store" } },
  );
}
