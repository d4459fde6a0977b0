// Chromium runner: loaded by browser.html; publishes the report on
// `globalThis.__report` for the Playwright driver in tests/run.mjs.
import * as main from "../../pkg/index.js";
import * as derive from "../../pkg/derive-index.js";
import { blockLoop, combine, prepare, runSuite } from "./harness.js";

const lib = combine(main, derive);

const entry = new URL("../../pkg/index.js", import.meta.url).href;

/**
 * Runs `code` against a fresh copy of the package in a module Worker (its own
 * module graph, so its own Wasm instance) with `init`, `Deadline`, `entryUrl` (the entry itself), `wasmUrl`
 * and `readBytes(url)` in scope, like the Node and Deno runners' child
 * processes; `console.log` lines come back as stdout. Resolves { code, ms, stdout }.
 */
function freshPackageScript(code) {
  const source = `import { init, Deadline } from ${JSON.stringify(entry)};
const entryUrl = ${JSON.stringify(entry)};
const wasmUrl = new URL("./edge_deadline_bg.wasm", ${JSON.stringify(entry)});
const deriveUrl = new URL("./derive-index.js", ${JSON.stringify(entry)});
const readBytes = async (url) => new Uint8Array(await (await fetch(url)).arrayBuffer());
const lines = [];
console.log = (...args) => lines.push(args.join(" "));
try {
${code}
  postMessage({ code: 0, stdout: lines.join("\\n") });
} catch (error) {
  postMessage({ code: 1, stdout: lines.join("\\n"), error: String(error?.stack ?? error) });
}`;
  const url = URL.createObjectURL(new Blob([source], { type: "text/javascript" }));
  const started = performance.now();
  return new Promise((resolve) => {
    const worker = new Worker(url, { type: "module" });
    const done = (result) => {
      worker.terminate();
      URL.revokeObjectURL(url);
      resolve({ ...result, ms: performance.now() - started });
    };
    worker.onmessage = (event) => done(event.data);
    worker.onerror = (event) => done({ code: 1, stdout: "", error: String(event.message) });
  });
}

try {
  const fixtureUrl = new URL(location.href).searchParams.get("fixture") ?? undefined;
  const ctx = {
    fixtureUrl,
    runtime: navigator.userAgent.match(/(Headless)?Chrome\/[\d.]+/)?.[0] ?? "chromium",
    freshPackageScript,
    blockLoop,
    ...(await prepare(lib)),
  };
  await lib.initDerive(); // browsers load each core with init()
  globalThis.__report = await runSuite(lib, ctx);
} catch (error) {
  globalThis.__report = { runtime: "chromium", passed: 0, failed: 1, skipped: 0, failures: [{ name: "runner", error: String(error?.stack ?? error) }] };
}
