// Bun runner: `bun tests/js/bun-runner.js`. Same cases as every runtime; prints the report as one
// JSON line and exits 1 on any failure. Bun resolves the package's `node` export condition, so the
// cases load pkg/node.js as a Bun user's import does.
import { spawn } from "node:child_process";
import * as main from "../../pkg/node.js";
import * as derive from "../../pkg/derive-node.js";
import { blockLoop, combine, prepare, runSuite } from "./harness.js";

const lib = combine(main, derive);

const entry = new URL("../../pkg/node.js", import.meta.url).href;

/** As the Node runner's: `init`, `Deadline`, `entryUrl`, `wasmUrl`, `readBytes` in scope; { code, ms, stdout, stderr }. */
function spawnPackageScript(code, { captureStderr = false } = {}) {
  const source = `import { init, Deadline } from ${JSON.stringify(entry)};
const entryUrl = ${JSON.stringify(entry)};
const wasmUrl = new URL("./edge_deadline_bg.wasm", ${JSON.stringify(entry)});
const deriveUrl = new URL("./derive-node.js", ${JSON.stringify(entry)});
const readBytes = async (url) => (await import("node:fs/promises")).readFile(url);
${code}`;
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, ["-e", source], { stdio: ["ignore", "pipe", captureStderr ? "pipe" : "inherit"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr?.on("data", (d) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, ms: performance.now() - started, stdout, stderr }));
  });
}

// Ref'd host timers counted as Node counts them, where this Bun lists them (a probe timer must show).
const timers = () => process.getActiveResourcesInfo?.().filter((r) => r === "Timeout").length ?? 0;
const probe = setTimeout(() => {}, 60_000);
const listsTimers = timers() > 0;
clearTimeout(probe);
const ctx = {
  runtime: `bun ${Bun.version}`,
  fixtureUrl: process.env.FIXTURE_URL,
  ...(await prepare(lib)),
  spawnPackageScript,
  freshPackageScript: spawnPackageScript,
  blockLoop,
  pendingTimers: listsTimers ? timers : undefined,
  otel: (await import("./otel-support.js")).loadOtel(),
};
// The package's timers are unref'd: while cases await them, this ref'd one keeps Bun running.
const keepAlive = setInterval(() => {}, 60_000);
const report = await runSuite(lib, ctx);
clearInterval(keepAlive);
console.log(JSON.stringify(report));
process.exit(report.failed ? 1 : 0);
