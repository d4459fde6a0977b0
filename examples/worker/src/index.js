// A Cloudflare Worker proxying a streaming (Server-Sent Events) upstream inside
// one edge deadline.
//
// - The deadline is set once, at the edge, from the product's budget and the
//   platform's caps (`Deadline.forPlatform`), less a reserve for the fallback.
// - The upstream is told what is left (`edge-deadline-remaining-ms`), and its
//   body is watched for stalls (`withStallTimeout`; `: ping` comments are not
//   progress). A stall or the deadline aborts the upstream request: it is
//   released, not abandoned.
// - Nothing is committed before the first chunk, so a silent or slow upstream
//   gets a fallback that says what happened (504 + the reason), never an empty
//   200. Once events are flowing, a stall ends the stream with an SSE
//   `event: error` naming it: a client can tell an interrupted answer from a
//   complete one, whatever the HTTP layers in between do with a broken stream.
import { Deadline, init, isDeadlineExceeded, isStreamStalled, sseProgress, toHeaders, withStallTimeout } from "edge-deadline";

export default {
  async fetch(request, env) {
    await init(); // the Workers entry imports the .wasm as a module; instant after the first request
    const started = performance.now();
    // In the handler, not at module scope: Workers forbid timers in the global scope.
    const deadline = Deadline.forPlatform({
      platform: "cloudflare-workers",
      plan: env.PLAN,
      productMs: Number(env.PRODUCT_MS),
      fallbackReserveMs: Number(env.FALLBACK_RESERVE_MS),
    });
    const { pathname, search } = new URL(request.url);
    const controller = new AbortController(); // aborted by a stall or the client leaving
    const signal = AbortSignal.any([controller.signal, deadline.signal()]);
    let upstream;
    let reader;
    let first;
    try {
      upstream = await fetch(new URL(pathname + search, env.UPSTREAM), {
        headers: { accept: "text/event-stream", ...toHeaders(deadline) },
        signal,
      });
      if (!upstream.ok || upstream.body === null) {
        deadline.dispose();
        return upstream; // the upstream's own answer, as it is
      }
      reader = withStallTimeout(upstream.body, {
        firstChunkMs: Number(env.FIRST_CHUNK_MS),
        stallMs: Number(env.STALL_MS),
        deadline,
        controller,
        isProgress: sseProgress,
      }).getReader();
      first = await reader.read(); // headers are sent only once the upstream has said something
    } catch (error) {
      deadline.dispose();
      // Before compatibility date 2026-04-21 (flag `enhanced_error_serialization`), a fetch
      // aborted by a signal rejects with a plain Error that lost the reason's fields, so the
      // reason is read from the signal itself.
      return fallback(signal.aborted ? signal.reason : error, performance.now() - started);
    }
    return new Response(relay(first, reader, () => deadline.dispose()), {
      headers: { "content-type": upstream.headers.get("content-type") ?? "text/event-stream", "cache-control": "no-store" },
    });
  },
};

/** The rest of the upstream body; a stall or the deadline ends it with an `event: error`. */
function relay(first, reader, done) {
  let lastByte = 10; // whether the last forwarded byte ended a line
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
        // A half-sent event becomes part of the error event instead of passing as a message.
        const lineOpen = lastByte !== 10 && lastByte !== 13;
        const data = JSON.stringify({ fallback: true, reason: describe(error) });
        c.enqueue(new TextEncoder().encode(`${lineOpen ? "\n" : ""}event: error\ndata: ${data}\n\n`));
        return c.close(), done();
      }
      forward(c, next);
    },
    cancel(reason) {
      done();
      return reader.cancel(reason); // the client left: the upstream request is aborted too
    },
  });
}

function describe(error) {
  if (isStreamStalled(error)) return `upstream stalled (${error.phase}): ${error.message}`;
  if (isDeadlineExceeded(error)) return `upstream did not finish within the deadline: ${error.message}`;
  return `upstream failed: ${error?.message ?? error}`;
}

/** A response that says it is a fallback, and why. */
function fallback(error, elapsedMs) {
  const timedOut = isStreamStalled(error) || isDeadlineExceeded(error);
  return Response.json(
    { fallback: true, reason: describe(error), elapsedMs: Math.round(elapsedMs) },
    { status: timedOut ? 504 : 502, headers: { "cache-control": "no-store" } },
  );
}
