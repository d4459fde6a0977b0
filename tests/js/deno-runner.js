// Deno runner: `deno run --allow-read --allow-run tests/js/deno-runner.js`.
// Prints the report as one JSON line and exits 1 on any failure.
import * as main from "../../pkg/deno.js";
import * as derive from "../../pkg/derive-deno.js";
import { blockLoop, combine, prepare, runSuite } from "./harness.js";

const lib = combine(main, derive);

const entry = new URL("../../pkg/deno.js", import.meta.url).href;

/** Like the Node runner's: `init`, `Deadline`, `entryUrl`, `wasmUrl`, `readBytes` in scope; { code, ms, stdout, stderr }. */
async function spawnPackageScript(code, { captureStderr = false } = {}) {
  const source = `import { init, Deadline } from ${JSON.stringify(entry)};
const entryUrl = ${JSON.stringify(entry)};
const wasmUrl = new URL("./edge_deadline_bg.wasm", ${JSON.stringify(entry)});
const deriveUrl = new URL("./derive-deno.js", ${JSON.stringify(entry)});
const readBytes = (url) => Deno.readFile(url);
${code}`;
  const started = performance.now();
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", source],
    stdout: "piped",
    stderr: captureStderr ? "piped" : "inherit",
  }).output();
  // `out.stderr` throws when it was not piped.
  const text = (bytes) => new TextDecoder().decode(bytes);
  return { code: out.code, ms: performance.now() - started, stdout: text(out.stdout), stderr: captureStderr ? text(out.stderr) : "" };
}

// Deno counts ref'd host timers as Node does (its process.getActiveResourcesInfo).
const pendingTimers = () => globalThis.process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;
const ctx = { runtime: `deno ${Deno.version.deno}`, fixtureUrl: Deno.env.get("FIXTURE_URL"), ...(await prepare(lib)), spawnPackageScript, freshPackageScript: spawnPackageScript, blockLoop, pendingTimers, otel: (await import("./otel-support.js")).loadOtel() };
const report = await runSuite(lib, ctx);
console.log(JSON.stringify(report));
Deno.exit(report.failed ? 1 : 0);
