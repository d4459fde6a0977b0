// Node runner: `node --test tests/js/node.test.js`. Same cases as every runtime.
import { spawn } from "node:child_process";
import { after, test } from "node:test";
import * as lib from "../../pkg/node.js";
import { cases } from "./cases/index.js";
import { prepare, skipReason } from "./harness.js";

const entry = new URL("../../pkg/node.js", import.meta.url).href;

/** Runs `code` (with `init` and `Deadline` in scope) in a fresh Node; resolves { code, ms }. */
function spawnPackageScript(code) {
  const source = `import { init, Deadline } from ${JSON.stringify(entry)};\n${code}`;
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, ["--input-type=module", "-e", source], { stdio: ["ignore", "inherit", "inherit"] });
    child.on("error", reject);
    child.on("exit", (code) => resolve({ code, ms: performance.now() - started }));
  });
}

const ctx = {
  runtime: `node ${process.version}`,
  fixtureUrl: process.env.FIXTURE_URL,
  ...(await prepare(lib)),
  spawnPackageScript,
  pendingTimers: () => process.getActiveResourcesInfo().filter((r) => r === "Timeout").length,
};

// The package's timers are unref'd (they must not keep a process alive), so
// while cases await them something must: this ref'd timer, cleared at the end.
const keepAlive = setInterval(() => {}, 60_000);
after(() => clearInterval(keepAlive));

for (const c of cases) {
  test(c.name, { skip: skipReason(c, ctx) ?? false }, () => c.run(lib, ctx));
}
