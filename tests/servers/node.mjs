// Deadlines in real Node servers (run by each Node of the suite; tests/run.mjs `servers`): Hono's
// node-server, which makes a `Request` whose signal it aborts when the connection closes early, and
// Node's own `http`, which has no `Request`: there the handler makes one whose signal follows the
// response's `close` (the pattern docs/api.md shows). Prints one JSON report line.
import { createServer } from "node:http";
import { serve } from "@hono/node-server";
import { Deadline } from "../../pkg/node.js";
import { clientGone, serverReport } from "./client-gone.js";

/** Stops a Node server, its open connections too (a client that left may leave a socket half-open). */
function closer(server) {
  return () =>
    new Promise((resolve) => {
      server.closeAllConnections?.();
      server.close(() => resolve());
    });
}

/** A client-gone check through `serveWith`; its time goes under `key` of the report's clientGoneMs. */
const gone = (key, serveWith) => async () => ({ clientGoneMs: { [key]: (await clientGone({ Deadline }, serveWith, 2_000)).afterMs } });

const checks = {
  "Hono's node-server: a client that leaves mid-stream aborts the request's deadline with limit client (request.signal)": gone("hono-node-server", (handler) =>
      new Promise((resolve) => {
        const server = serve({ fetch: handler, port: 0, hostname: "127.0.0.1" }, (info) => resolve({ url: `http://127.0.0.1:${info.port}/`, close: closer(server) }));
      })),
  "Node's http: a Request whose signal follows the response's close gives the deadline limit client when the client leaves mid-stream": gone("http", (handler) =>
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
      })),
};

process.exit((await serverReport(`servers (node ${process.version})`, checks)) ? 0 : 1);
