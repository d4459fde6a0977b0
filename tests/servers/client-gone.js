// The client-gone check, the same in every server runtime (tests/servers/<runtime>.mjs hands it that
// runtime's way to serve): a handler takes its deadline from `Deadline.forRequest(request, ctx, …)` and
// streams an event, then waits; the client reads that event and disconnects. The deadline must abort
// with limit "client" (through `request.signal`, where the runtime aborts it) within `withinMs`.
// `serverReport` runs a runtime's checks and prints the one JSON report line tests/run.mjs reads.
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

/**
 * Runs `checks` (name → a function that throws on failure; what it resolves to, if anything, is merged
 * into the report: e.g. `clientGoneMs`), all at once, and prints the report line tests/run.mjs reads.
 * @param {string} runtime
 * @param {Record<string, () => Promise<object | void>>} checks
 * @returns {Promise<boolean>} whether every check passed (the caller exits with it)
 */
export async function serverReport(runtime, checks) {
  const report = { runtime, passed: 0, failed: 0, skipped: 0, failures: [] };
  await Promise.all(
    Object.entries(checks).map(async ([name, check]) => {
      try {
        const extra = await check();
        if (extra) mergeInto(report, extra);
        report.passed++;
      } catch (error) {
        report.failed++;
        report.failures.push({ name, error: String(error?.stack ?? error) });
      }
    }),
  );
  console.log(JSON.stringify(report));
  return report.failed === 0;
}

/** Merges a check's figures into the report (objects merged one level deep: two checks may each add a key of `clientGoneMs`). */
function mergeInto(report, extra) {
  for (const [k, v] of Object.entries(extra)) report[k] = v !== null && typeof v === "object" && typeof report[k] === "object" ? { ...report[k], ...v } : v;
}
