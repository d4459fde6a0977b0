// Edge Runtime runner (Vercel's `edge-runtime` package, tests/run.mjs `edge-runtime`): this module is
// bundled by esbuild into one script with the `edge-light` condition, as Next.js bundles an edge route,
// and evaluated in an EdgeRuntime sandbox. The package's `.wasm?module` imports become the sandbox's
// Wasm bindings, compiled outside it, which is how Next.js hands them over. The report is published
// as `globalThis.__report` (a promise) for the driver.
import * as main from "../../pkg/edge-light.js";
import * as derive from "../../pkg/derive-edge-light.js";
import { blockLoop, combine, prepare, runSuite } from "./harness.js";

const lib = combine(main, derive);

globalThis.__report = (async () => {
  // The `edge-runtime` sandbox has no AsyncLocalStorage (Next.js's edge sandbox has a global one:
  // tests/package/next.mjs): the ambient deadline's documented synchronous fallback applies.
  const quirks = typeof globalThis.AsyncLocalStorage === "function" ? [] : ["no-async-context"];
  const ctx = { runtime: `edge-runtime ${globalThis.EDGE_RUNTIME_VERSION}`, fixtureUrl: globalThis.FIXTURE_URL, quirks, blockLoop, ...(await prepare(lib)) };
  // The package's timers are the sandbox's own; this one holds nothing open (the driver awaits the report).
  return runSuite(lib, ctx);
})();
