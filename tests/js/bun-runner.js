// Bun runner: `bun tests/js/bun-runner.js`. Same cases as every runtime; prints the report as one
// JSON line and exits 1 on any failure. Bun resolves the package's `node` export condition, so the
// cases load pkg/node.js as a Bun user's import does.
import * as main from "../../pkg/node.js";
import * as derive from "../../pkg/derive-node.js";
import { blockLoop, combine, prepare, runSuite } from "./harness.js";
import { packageScriptSpawner } from "./spawn-package.js";

const lib = combine(main, derive);

const entry = new URL("../../pkg/node.js", import.meta.url).href;

const spawnPackageScript = packageScriptSpawner(entry, ["-e"]);

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
