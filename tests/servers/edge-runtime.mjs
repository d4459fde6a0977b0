// Vercel's edge-runtime server (its own `runServer`, run by Node; tests/run.mjs `servers`): what a
// handler can learn of a client that leaves mid-stream. Measured, not assumed: here neither the
// request's signal nor the response body's cancel fires, so a request's deadline cannot follow the
// client (docs/design.md, the client-gone table). Prints one JSON report line.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { EdgeRuntime, runServer } from "edge-runtime";
import { serverReport } from "./client-gone.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const version = JSON.parse(readFileSync(join(root, "node_modules/edge-runtime/package.json"), "utf8")).version;
const name = "a client that leaves mid-stream: the edge-runtime server gives the handler no sign of it (no request.signal abort, no body cancel), so the deadline runs on";
async function check() {
  const bundled = await build({
    stdin: {
      contents: `import { Deadline } from "edge-deadline";
addEventListener("fetch", (event) => {
  const deadline = Deadline.forRequest(event.request, undefined, { budgetMs: 10_000, fallbackReserveMs: 0 });
  deadline.signal().addEventListener("abort", () => (globalThis.gone = deadline.limit), { once: true });
  const body = new ReadableStream({
    start: (c) => c.enqueue(new TextEncoder().encode("data: 1\\n\\n")),
    cancel: () => (globalThis.cancelled = true),
  });
  event.respondWith(new Response(body, { headers: { "content-type": "text/event-stream" } }));
});`,
      resolveDir: root,
    },
    bundle: true,
    format: "iife",
    conditions: ["edge-light"],
    target: "es2022",
    write: false,
    logLevel: "error",
    alias: { "edge-deadline": join(root, "pkg/edge-light.js") },
    plugins: [
      {
        name: "wasm-module-binding",
        setup(b) {
          b.onResolve({ filter: /\.wasm\?module$/ }, (a) => ({ path: a.path, namespace: "wasm-binding" }));
          b.onLoad({ filter: /.*/, namespace: "wasm-binding" }, () => ({ contents: "export default globalThis.wasmModule;", loader: "js" }));
        },
      },
    ],
  });
  const wasmModule = new WebAssembly.Module(readFileSync(join(root, "pkg/edge_deadline_bg.wasm")));
  const runtime = new EdgeRuntime({ initialCode: bundled.outputFiles[0].text, extend: (context) => Object.assign(context, { wasmModule }) });
  const server = await runServer({ runtime, port: 0, host: "127.0.0.1" });
  try {
    const client = new AbortController();
    const res = await fetch(server.url, { signal: client.signal });
    const reader = res.body.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    if (first !== "data: 1\n\n") throw new Error(`first event ${JSON.stringify(first)}`);
    client.abort();
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const seen = { gone: await runtime.evaluate("globalThis.gone ?? null"), cancelled: await runtime.evaluate("globalThis.cancelled ?? null") };
    if (seen.gone !== null || seen.cancelled !== null) throw new Error(`the handler learned the client left (${JSON.stringify(seen)}): update docs/design.md's client-gone table and this check`);
  } finally {
    await server.close();
  }
}
process.exit((await serverReport(`servers (edge-runtime ${version})`, { [name]: check })) ? 0 : 1);
