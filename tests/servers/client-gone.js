// The client-gone check, the same in every server runtime (tests/servers/<runtime>.mjs hands it that
// runtime's way to serve): a handler takes its deadline from `Deadline.forRequest(request, ctx, …)` and
// streams an event, then waits; the client reads that event and disconnects. The deadline must abort
// with limit "client" (through `request.signal`, where the runtime aborts it) within `withinMs`.
import assert from "node:assert/strict";

/**
 * @param {any} lib the package (Deadline)
 * @param {(handler: (request: Request, ctx: unknown) => Response) => Promise<{ url: string, close(): Promise<void> | void }>} serve
 * @param {number} withinMs
 */
export async function clientGone(lib, serve, withinMs) {
  let seen;
  const gone = new Promise((resolve) => (seen = resolve));
  const server = await serve((request, ctx) => {
    const deadline = lib.Deadline.forRequest(request, ctx, { budgetMs: 10_000, fallbackReserveMs: 0 });
    deadline.signal().addEventListener("abort", () => seen({ at: performance.now(), limit: deadline.limit, reason: deadline.signal().reason }), { once: true });
    const body = new ReadableStream({
      start(c) {
        c.enqueue(new TextEncoder().encode("data: 1\n\n"));
      },
      // Nothing more: the deadline (or the client) ends it.
    });
    return new Response(body, { headers: { "content-type": "text/event-stream" } });
  });
  try {
    const client = new AbortController();
    const res = await fetch(server.url, { signal: client.signal });
    const reader = res.body.getReader();
    await reader.read(); // the first event
    const left = performance.now();
    client.abort(new Error("the client left"));
    const got = await Promise.race([gone, new Promise((resolve) => setTimeout(() => resolve(undefined), withinMs))]);
    assert.ok(got, `the deadline did not notice the client leave within ${withinMs} ms`);
    assert.equal(got.limit, "client");
    return { afterMs: Math.round(got.at - left) };
  } finally {
    await server.close();
  }
}
