// The fleet aggregator's HTTP fuzz at full size, beyond what the fleet suite sends in CI:
//   node scripts/fleet-fuzz.mjs [count = 100000] [seed = 1]
// `count` seeded mutated flushes (tests/fleet/support.js, mutatedFlushes) POSTed with the write token
// to each engine as an outsider reaches it: the TimeoutAggregator Durable Object in workerd (its storage
// on local disk, through the aggregator Worker's public route) and kvAggregator on a Deno KV file
// behind Deno.serve. Every answer must be 204, 200, 400, 413 or 429 with a code, never a 5xx; the table
// must read after every 1 000 flushes and at the end; then a restart (workerd restarted, the database
// reopened under a new server) must read back the same table. Prints one JSON report line per engine
// (with the Deno KV suite's other checks) and the time each run took on stderr. Needs pkg/ built.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

process.env.FLEET_FUZZ_COUNT = process.argv[2] ?? "100000";
process.env.FLEET_FUZZ_SEED = process.argv[3] ?? "1";
const { config, denoSuite, freePort, fuzzWorkerd, SECRETS, startWorkerd, stop } = await import("../tests/fleet/run.mjs");
const { assert, runner, sansDate, tableProblem } = await import("../tests/fleet/support.js");

const work = mkdtempSync(join(tmpdir(), "edge-deadline-fleet-fuzz-"));
let failed = 0;
try {
  const t = runner();
  const [port, publicPort] = [await freePort(), await freePort()];
  const disk = join(work, "do");
  mkdirSync(disk);
  const file = join(work, "fleet.capnp");
  writeFileSync(file, config(port, disk, work, undefined, publicPort));
  const base = `http://127.0.0.1:${publicPort}/fuzz`;
  let child = await startWorkerd(port, file);
  try {
    const table = await fuzzWorkerd(t, base);
    await t.check("after the HTTP fuzz, a restart of workerd reads back the same table, one every reader can use", async () => {
      assert(table, "the fuzz did not finish");
      await stop(child);
      child = await startWorkerd(port, file);
      const after = await (await fetch(`${base}/table`, { headers: { authorization: `Bearer ${SECRETS.read}` } })).json();
      assert(sansDate(after) === table, "the table differs after the restart");
      assert(tableProblem(after) === "", tableProblem(after));
    });
  } finally {
    await stop(child);
  }
  const version = JSON.parse(await import("node:fs").then((fs) => fs.readFileSync(new URL("../node_modules/workerd/package.json", import.meta.url), "utf8"))).version;
  for (const report of [t.report(`fleet fuzz: workerd ${version} (Durable Object, local disk)`), await denoSuite(work)]) {
    console.log(JSON.stringify(report));
    failed += report.failed;
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
process.exitCode = failed > 0 ? 1 : 0;
