// A local Server-Sent Events upstream to try the examples against (and the
// one tests/package drives them with). Node, 127.0.0.1 only.
//
//   node examples/upstream.mjs [port]      (default 8788)
//
//   /events      `n` events (default 5), one every `gap` ms (default 50), then the end
//   /mid         3 events 50 ms apart, then only `: ping` keep-alive comments (a stall to
//                stall detection: comments are not progress)
//   /silent      headers, then nothing at all
//   /no-headers  nothing, not even headers
//
// Every response records what the client sent and when the connection closed,
// so a test can prove the proxy released the upstream instead of abandoning it.
import { createServer } from "node:http";
import { pathToFileURL } from "node:url";

const GAP_MS = 50;

/**
 * @param {{ port?: number }} [options]
 * @returns {Promise<{ url: string, requests: Map<string, Record>, closed(id: string, timeoutMs?: number): Promise<Record>, handle(req, res): void, close(): Promise<void> }>}
 * where Record is `{ path, remainingMs, startedAt, closedAt }` (ms on this process's performance.now()).
 */
export async function startUpstream({ port = 0 } = {}) {
  const requests = new Map(); // ?id= → record
  const waiters = new Map();

  function handle(req, res) {
    const url = new URL(req.url, "http://x");
    const id = url.searchParams.get("id") ?? url.pathname;
    const header = req.headers["edge-deadline-remaining-ms"];
    const record = { path: url.pathname, remainingMs: header === undefined ? undefined : Number(header), startedAt: performance.now(), closedAt: undefined };
    requests.set(id, record);
    const timers = [];
    res.on("close", () => {
      record.closedAt = performance.now();
      for (const t of timers) clearInterval(t);
      for (const wake of waiters.get(id) ?? []) wake(record);
      waiters.delete(id);
    });
    const route = url.pathname.replace(/^.*\//, "/"); // also served under a prefix (the browser pages)
    if (route === "/no-headers") return;
    res.writeHead(route in ROUTES ? 200 : 404, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-store",
      "access-control-allow-origin": "*",
    });
    res.flushHeaders();
    if (route === "/silent") return;
    if (route === "/events") {
      const n = Number(url.searchParams.get("n") ?? 5);
      const gap = Number(url.searchParams.get("gap") ?? GAP_MS);
      let i = 0;
      timers.push(setInterval(() => (res.write(`data: event ${++i}\n\n`), i === n && res.end()), gap));
    } else if (route === "/mid") {
      let i = 0;
      timers.push(setInterval(() => res.write(++i <= 3 ? `data: event ${i}\n\n` : ": ping\n\n"), GAP_MS));
    } else res.end("no such route\n");
  }

  const server = createServer(handle);
  await new Promise((resolve) => server.listen(port, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    requests,
    handle,
    /** Resolves with the record once the connection with `?id=` closed (or at the timeout, as it is). */
    closed(id, timeoutMs = 2_000) {
      const r = requests.get(id);
      if (r?.closedAt !== undefined) return Promise.resolve(r);
      return new Promise((resolve) => {
        const t = setTimeout(() => resolve(requests.get(id)), timeoutMs);
        const list = waiters.get(id) ?? [];
        list.push((rec) => (clearTimeout(t), resolve(rec)));
        waiters.set(id, list);
      });
    },
    close: () => new Promise((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

const ROUTES = { "/events": 1, "/mid": 1, "/silent": 1 };

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const up = await startUpstream({ port: Number(process.argv[2] ?? 8788) });
  console.log(`upstream on ${up.url}: /events /mid /silent /no-headers`);
}
