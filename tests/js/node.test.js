// Node runner: `node --test tests/js/node.test.js`. Same cases as every runtime.
import { spawn } from "node:child_process";
import { after, test } from "node:test";
import * as main from "../../pkg/node.js";
import * as derive from "../../pkg/derive-node.js";
import { cases } from "./cases/index.js";
import { blockLoop, combine, prepare, skipReason } from "./harness.js";

const lib = combine(main, derive);

const entry = new URL("../../pkg/node.js", import.meta.url).href;

/**
 * Runs `code` in a fresh Node with `init`, `Deadline`, `entryUrl` (the entry itself), `wasmUrl` (the .wasm's
 * file: URL) and `readBytes(url)` in scope; resolves { code, ms, stdout, stderr }. Its stderr is
 * passed through unless `captureStderr` (then it is only returned).
 */
function spawnPackageScript(code, { captureStderr = false } = {}) {
  const source = `import { init, Deadline } from ${JSON.stringify(entry)};
const entryUrl = ${JSON.stringify(entry)};
const wasmUrl = new URL("./edge_deadline_bg.wasm", ${JSON.stringify(entry)});
const deriveUrl = new URL("./derive-node.js", ${JSON.stringify(entry)});
const readBytes = async (url) => (await import("node:fs/promises")).readFile(url);
${code}`;
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, ["--input-type=module", "-e", source], { stdio: ["ignore", "pipe", captureStderr ? "pipe" : "inherit"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr?.on("data", (d) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, ms: performance.now() - started, stdout, stderr }));
  });
}

const ctx = {
  runtime: `node ${process.version}`,
  fixtureUrl: process.env.FIXTURE_URL,
  ...(await prepare(lib)),
  spawnPackageScript,
  blockLoop,
  freshPackageScript: spawnPackageScript,
  pendingTimers: () => process.getActiveResourcesInfo().filter((r) => r === "Timeout").length,
  otel: (await import("./otel-support.js")).loadOtel(),
};

// The package's timers are unref'd (they must not keep a process alive), so
// while cases await them something must: this ref'd timer, cleared at the end.
const keepAlive = setInterval(() => {}, 60_000);
after(() => clearInterval(keepAlive));

for (const c of cases) {
  test(c.name, { skip: skipReason(c, ctx) ?? false }, () => c.run(lib, ctx));
}
