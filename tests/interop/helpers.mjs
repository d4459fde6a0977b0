// Shared by the interop tests (Node only, run by `node tests/run.mjs interop`):
// the package, loaded once, and servers on 127.0.0.1 that capture what real
// gRPC and Connect clients send.
import { createServer as createHttp2Server } from "node:http2";
import { createServer as createHttpServer } from "node:http";
import * as lib from "../../pkg/node.js";

await lib.init();
export { lib };

/** The wall-clock instant a deadline on the performance.now() timeline stands for. */
export const wallAt = (deadline) => Date.now() + (deadline.at - performance.now());

function listen(server) {
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server.address().port)));
}

/**
 * An h2c server answering every gRPC call with a trailers-only status (so the
 * client finishes) after recording the request headers and when they arrived.
 */
export async function captureHttp2() {
  const seen = [];
  const server = createHttp2Server();
  server.on("stream", (stream, headers) => {
    seen.push({ headers: { ...headers }, at: performance.now() });
    stream.respond({ ":status": 200, "content-type": "application/grpc", "grpc-status": "12", "grpc-message": "capture only" }, { endStream: true });
  });
  const sessions = new Set();
  server.on("session", (s) => (sessions.add(s), s.on("close", () => sessions.delete(s))));
  const port = await listen(server);
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    seen,
    // Clients keep HTTP/2 sessions open for reuse: end them, or close() waits forever.
    close: () => new Promise((r) => (server.close(r), sessions.forEach((s) => s.destroy()))),
  };
}

/** An HTTP/1.1 server answering every request with a Connect error after recording its headers. */
export async function captureHttp1() {
  const seen = [];
  const server = createHttpServer((req, res) => {
    seen.push({ headers: { ...req.headers }, at: performance.now() });
    req.resume();
    req.on("end", () => {
      res.writeHead(501, { "content-type": "application/json" });
      res.end(JSON.stringify({ code: "unimplemented", message: "capture only" }));
    });
  });
  const port = await listen(server);
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () => new Promise((r) => (server.closeAllConnections(), server.close(r))),
  };
}
