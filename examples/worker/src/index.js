// A Cloudflare Worker proxying a streaming (Server-Sent Events) upstream inside
// one edge deadline. No `init()`: the package's Workers entry imports the .wasm
// as a module and instantiates it at the first call.
//
// - The deadline is set once, at the edge, from the product's budget and the
//   platform's caps (`Deadline.forPlatform`), less a reserve for the fallback.
// - The upstream is told what is left (`edge-deadline-remaining-ms`), and its
//   body is watched for stalls (`: ping` comments are not progress). A stall,
//   the deadline or the client leaving aborts the upstream request: it is
//   released, not abandoned.
// - `relay` commits nothing before the first event (a `: ping` is not one), so
//   a silent, slow or only-pinging upstream gets a fallback that says what happened (504 + the reason), never
//   an empty 200. Once events are flowing, a stall ends the stream with an SSE
//   `event: error` naming it: a client can tell an interrupted answer from a
//   complete one, whatever the HTTP layers in between do with a broken stream.
import { Deadline, relay, toHeaders } from "edge-deadline";

export default {
  async fetch(request, env) {
    // In the handler, not at module scope: Workers forbid timers in the global scope.
    const deadline = Deadline.forPlatform({
      platform: "cloudflare-workers",
      plan: env.PLAN,
      productMs: Number(env.PRODUCT_MS),
      fallbackReserveMs: Number(env.FALLBACK_RESERVE_MS),
    });
    const { pathname, search } = new URL(request.url);
    return relay(
      (signal) => fetch(new URL(pathname + search, env.UPSTREAM), { headers: { accept: "text/event-stream", ...toHeaders(deadline) }, signal }),
      { deadline, signal: request.signal, firstChunkMs: Number(env.FIRST_CHUNK_MS), stallMs: Number(env.STALL_MS) },
    );
  },
};
