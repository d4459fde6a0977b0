// A Deno server proxying a streaming (Server-Sent Events) upstream inside one
// edge deadline: the Worker example (../worker/src/index.js) with Deno.serve.
//
//   npm install edge-deadline         # Deno resolves it from package.json + node_modules
//   node ../upstream.mjs &            # a local upstream on 127.0.0.1:8788
//   deno run --allow-net=127.0.0.1 server.js [port] [upstream]
//
// No `--allow-read` and no `init()`: the package's Deno entry imports its .wasm
// as a module, and the first call instantiates it.
import { Deadline, relay, toHeaders } from "edge-deadline";

const PRODUCT_MS = 8_000; // the product's budget for one request
const FALLBACK_RESERVE_MS = 300; // held back for the fallback response
const FIRST_CHUNK_MS = 4_000; // stall limit before the first event (queueing, prefill)
const STALL_MS = 2_000; // stall limit between events

const port = Number(Deno.args[0] ?? 8000);
const upstreamUrl = Deno.args[1] ?? "http://127.0.0.1:8788";

Deno.serve({ hostname: "127.0.0.1", port, onListen: ({ port }) => console.log(`listening on http://127.0.0.1:${port}/`) }, (request) => {
  const deadline = Deadline.forPlatform({ platform: "deno-deploy", productMs: PRODUCT_MS, fallbackReserveMs: FALLBACK_RESERVE_MS });
  const { pathname, search } = new URL(request.url);
  // Headers only after the upstream's first event; a stall, the deadline or the client leaving
  // mid-stream (it cancels the body) aborts the upstream; the fallback (504 + reason) or an SSE
  // `event: error` says what happened. `request.signal` is not linked: Deno.serve also aborts it
  // on every successful response (its legacy behaviour), which says nothing about the client.
  return relay(
    (signal) => fetch(new URL(pathname + search, upstreamUrl), { headers: { accept: "text/event-stream", ...toHeaders(deadline) }, signal }),
    { deadline, firstChunkMs: FIRST_CHUNK_MS, stallMs: STALL_MS },
  );
});
