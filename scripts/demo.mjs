// The demo page's server: www/ on 127.0.0.1, with the built package (pkg/)
// mounted at /pkg/ and the chart library (uPlot, a dev-dependency) at
// /vendor/uplot/. Every response carries the strict Content-Security-Policy
// the browser tests check, so what a visitor sees is what is tested.
//
//   node scripts/demo.mjs [--port 8080]      (./dev demo installs and builds first)
//
// A budget trace in the terminal, without a browser: examples/node/budget-trace.mjs.
import { existsSync } from "node:fs";
import { createServer } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { serveStatic } from "./static-server.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

/** No inline scripts, no eval; WebAssembly compilation allowed. Nothing looser. */
export const CSP = "script-src 'self' 'wasm-unsafe-eval'";

/**
 * Serves the demo page. `port` 0 picks a free one.
 * @param {{ port?: number, csp?: string }} [options]
 * @returns {Promise<{ url: string, close: () => Promise<void> }>}
 */
export async function startDemo({ port = 0, csp = CSP } = {}) {
  const pkg = join(root, "pkg");
  if (!existsSync(join(pkg, "edge_deadline_bg.wasm"))) {
    throw new Error("pkg/ is not built: run `node scripts/build.mjs` (or `./dev demo`, which installs and builds)");
  }
  return serveStatic(join(root, "www"), {
    port,
    headers: { "content-security-policy": csp, "x-content-type-options": "nosniff" },
    mounts: { "/pkg/": pkg, "/vendor/uplot/": join(root, "node_modules/uplot/dist") },
  });
}

function portArg(argv) {
  const i = argv.findIndex((a) => a === "--port" || a.startsWith("--port="));
  if (i < 0) return undefined;
  const raw = argv[i].includes("=") ? argv[i].slice("--port=".length) : argv[i + 1];
  const port = Number(raw);
  if (raw === undefined || !Number.isInteger(port) || port < 0 || port > 65_535) {
    console.error(`--port must be a whole number from 0 to 65535: current value is ${raw === undefined ? "missing" : JSON.stringify(raw)}`);
    process.exit(2);
  }
  return port;
}

/** Whether 127.0.0.1:`port` can be bound (serveStatic does not report a taken port). */
function portFree(port) {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once("error", () => resolve(false));
    probe.listen(port, "127.0.0.1", () => probe.close(() => resolve(true)));
  });
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const asked = portArg(process.argv.slice(2));
  let port = asked ?? 8080;
  if (port !== 0 && !(await portFree(port))) {
    // An explicit --port is a promise, so fail; the default may move to any free port.
    if (asked !== undefined) {
      console.error(`port ${port} is in use: pick another with --port (0: any free port)`);
      process.exit(1);
    }
    console.log(`port ${port} is in use: serving on a free port instead (choose one with --port)`);
    port = 0;
  }
  let server;
  try {
    server = await startDemo({ port });
  } catch (error) {
    console.error(error.message);
    process.exit(1);
  }
  console.log(`edge-deadline demo: ${server.url}`);
  console.log("serving www/ with pkg/ at /pkg/ (Content-Security-Policy: " + CSP + "); Ctrl-C stops");
  const stop = () => server.close().then(() => process.exit(0));
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
}
