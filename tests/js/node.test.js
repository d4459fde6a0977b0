// Node runner: `node --test tests/js/node.test.js`. Same cases as every runtime.
import { after, test } from "node:test";
import * as main from "../../pkg/node.js";
import * as derive from "../../pkg/derive-node.js";
import { cases } from "./cases/index.js";
import { blockLoop, combine, prepare, skipReason } from "./harness.js";
import { runCase } from "./case-runner.js";
import { packageScriptSpawner } from "./spawn-package.js";

const lib = combine(main, derive);

const entry = new URL("../../pkg/node.js", import.meta.url).href;

const spawnPackageScript = packageScriptSpawner(entry, ["--input-type=module", "-e"]);

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
  test(c.name, { skip: skipReason(c, ctx) ?? false }, () => runCase(c, lib, ctx));
}
