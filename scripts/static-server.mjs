// A static file server on 127.0.0.1 for the browser tests and the demo.
// Serves .wasm as application/wasm (required by compileStreaming) and can add
// headers (the demo's Content-Security-Policy test uses that).
import { createReadStream, statSync } from "node:fs";
import { createServer } from "node:http";
import { extname, join, normalize, sep } from "node:path";

const TYPES = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json",
  ".wasm": "application/wasm",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".csv": "text/csv; charset=utf-8",
  ".txt": "text/plain; charset=utf-8",
};

/**
 * @param {string} root directory to serve
 * `mounts` maps URL prefixes to other directories (e.g. { "/pkg/": "/abs/pkg" }).
 * @param {{ port?: number, headers?: Record<string,string>, routes?: Record<string, (req, res) => void>, mounts?: Record<string,string> }} [options]
 * @returns {Promise<{ url: string, close: () => Promise<void> }>}
 */
export async function serveStatic(root, { port = 0, headers = {}, routes = {}, mounts = {} } = {}) {
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url, "http://x").pathname);
    if (routes[path]) return routes[path](req, res);
    const prefix = Object.keys(mounts).find((m) => path.startsWith(m));
    const base = normalize((prefix ? mounts[prefix] : root) + sep);
    let file = normalize(join(base, prefix ? path.slice(prefix.length) : path));
    if (!file.startsWith(base)) return res.writeHead(403).end();
    try {
      if (statSync(file).isDirectory()) file = join(file, "index.html");
      statSync(file);
    } catch {
      return res.writeHead(404, { "content-type": "text/plain" }).end("not found");
    }
    res.writeHead(200, { "content-type": TYPES[extname(file)] ?? "application/octet-stream", "cache-control": "no-store", ...headers });
    createReadStream(file).pipe(res);
  });
  await new Promise((resolve) => server.listen(port, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}/`,
    close: () => new Promise((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}
