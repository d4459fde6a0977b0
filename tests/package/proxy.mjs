// The proxy examples' cases (examples/worker and examples/deno behave the
// same): against examples/upstream.mjs, a steady stream passes through, a
// silent or header-less upstream gets the 504 fallback at the first-chunk
// limit (the wait for headers counts against it), within the deadline, a
// stall mid-stream ends with an SSE error event, and every stalled upstream
// connection is closed by the proxy (released, not abandoned).
import assert from "node:assert/strict";

/** Requests `path` and reads the whole body, timing both. */
export async function request(base, path) {
  const t0 = performance.now();
  const res = await fetch(new URL(path, base));
  const headersMs = performance.now() - t0;
  let body = "";
  let bodyError;
  try {
    body = await res.text();
  } catch (e) {
    bodyError = e;
  }
  return { status: res.status, type: res.headers.get("content-type") ?? "", body, bodyError, headersMs, totalMs: performance.now() - t0 };
}

/**
 * The proxy's four cases against `upstream`, shared by the Worker and the Deno
 * server. `limits` are the proxy's PRODUCT_MS, FALLBACK_RESERVE_MS, FIRST_CHUNK_MS, STALL_MS.
 */
export async function proxyCases(g, label, base, upstream, limits) {
  const workMs = limits.PRODUCT_MS - limits.FALLBACK_RESERVE_MS;
  const [events, mid, silent, noHeaders] = await Promise.all(
    ["events", "mid", "silent", "no-headers"].map((p) => request(base, `/${p}?id=${label}-${p}`)),
  );
  await g.check("a steady upstream streams through unchanged", async () => {
    assert.equal(events.status, 200, events.body);
    assert.match(events.type, /^text\/event-stream/);
    assert.equal(events.body, [1, 2, 3, 4, 5].map((i) => `data: event ${i}\n\n`).join(""));
    const rec = upstream.requests.get(`${label}-events`);
    assert.ok(rec.remainingMs > 0 && rec.remainingMs <= workMs, `the upstream was told ${rec.remainingMs} ms remain (≤ ${workMs})`);
  });
  await g.check("a silent upstream gets the fallback (504, first-chunk stall) and is released", async () => {
    assert.equal(silent.status, 504, silent.body);
    const json = JSON.parse(silent.body);
    assert.equal(json.fallback, true);
    assert.match(json.reason, /stalled \(first-chunk\)/);
    assert.ok(silent.totalMs >= limits.FIRST_CHUNK_MS - 5 && silent.totalMs < limits.PRODUCT_MS, `answered after ${silent.totalMs.toFixed(0)} ms`);
    const rec = await upstream.closed(`${label}-silent`);
    assert.ok(rec?.closedAt !== undefined, "the upstream connection was closed (aborted), not abandoned");
  });
  await g.check("an upstream that never sends headers gets the fallback (504, first-chunk stall: the wait for headers counts) within the deadline", async () => {
    assert.equal(noHeaders.status, 504, noHeaders.body);
    assert.match(JSON.parse(noHeaders.body).reason, /stalled \(first-chunk\)/);
    assert.ok(noHeaders.totalMs >= limits.FIRST_CHUNK_MS - 5, `not before the first-chunk limit (${noHeaders.totalMs.toFixed(0)} ms)`);
    assert.ok(noHeaders.totalMs < limits.PRODUCT_MS, `the fallback came ${noHeaders.totalMs.toFixed(0)} ms after the request, inside the ${limits.PRODUCT_MS} ms budget`);
    const rec = await upstream.closed(`${label}-no-headers`);
    assert.ok(rec?.closedAt !== undefined, "the upstream connection was closed (aborted), not abandoned");
  });
  await g.check("a stall mid-stream ends it with an SSE error event naming the stall", async () => {
    assert.equal(mid.status, 200);
    assert.ok(mid.body.startsWith("data: event 1\n\ndata: event 2\n\ndata: event 3\n\n"), mid.body.slice(0, 200));
    const m = /\nevent: error\ndata: (.*)\n\n$/.exec(mid.body);
    assert.ok(m, `ends with an error event: …${mid.body.slice(-200)}`);
    assert.match(JSON.parse(m[1]).reason, /stalled \(stall\)/);
    const rec = await upstream.closed(`${label}-mid`);
    assert.ok(rec?.closedAt !== undefined, "the upstream connection was closed (aborted), not abandoned");
  });
}
