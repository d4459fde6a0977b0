// Deadlines in real Node servers (run by each Node of the suite; tests/run.mjs `servers`): Hono's
// node-server, which makes a `Request` whose signal it aborts when the connection closes early, and
// Node's own `http`, which has no `Request`: there the handler makes one whose signal follows the
// response's `close` (the pattern docs/api.md shows). Prints one JSON report line.
import { createServer } from "node:http";
import { serve } from "@hono/node-server";
import { Deadline } from "../../pkg/node.js";
import { clientGone } from "./client-gone.js";

const report = { runtime: `servers (node ${process.version})`, passed: 0, failed: 0, skipped: 0, failures: [], clientGoneMs: {} };

/** Stops a Node server, its open connections too (a client that left may leave a socket half-open). */
function closer(server) {
  return () =>
    new Promise((resolve) => {
      server.closeAllConnections?.();
      server.close(() => resolve());
    });
}

const checks = [
  [
    "Hono's node-server: a client that leaves mid-stream aborts the request's deadline with limit client (request.signal)",
    "hono-node-server",
    (handler) =>
      new Promise((resolve) => {
        const server = serve({ fetch: handler, port: 0, hostname: "127.0.0.1" }, (info) => resolve({ url: `http://127.0.0.1:${info.port}/`, close: closer(server) }));
      }),
  ],
  [
    "Node's http: a Request whose signal follows the response's close gives the deadline limit client when the client leaves mid-stream",
    "http",
    (handler) =>
      new Promise((resolve) => {
        const server = createServer(async (req, res) => {
          const left = new AbortController();
          res.on("close", () => res.writableFinished || left.abort(new Error("the client left")));
          const request = new Request(`http://${req.headers.host}${req.url}`, { method: req.method, headers: /** @type {any} */ (req.headers), signal: left.signal });
          const response = handler(request, undefined);
          res.writeHead(response.status, Object.fromEntries(response.headers));
          res.flushHeaders();
          const reader = response.body.getReader();
          left.signal.addEventListener("abort", () => reader.cancel(left.signal.reason).catch(() => {}), { once: true });
          for (;;) {
            const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }));
            if (done) break;
            res.write(value);
          }
          res.end();
        });
        server.listen(0, "127.0.0.1", () => resolve({ url: `http://127.0.0.1:${/** @type {any} */ (server.address()).port}/`, close: closer(server) }));
      }),
  ],
];

for (const [name, key, serveWith] of checks) {
  try {
    const { afterMs } = await clientGone({ Deadline }, serveWith, 2_000);
    report.clientGoneMs[key] = afterMs;
    report.passed++;
  } catch (error) {
    report.failed++;
    report.failures.push({ name, error: String(error?.stack ?? error) });
  }
}
console.log(JSON.stringify(report));
process.exit(report.failed ? 1 : 0);
