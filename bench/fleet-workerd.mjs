// The fleet aggregator's throughput on this machine's workerd: the fleet
// test's two Workers (tests/fleet: simulated isolates, and the
// TimeoutAggregator Durable Object with its storage on local disk). The
// isolates' Worker sends N flushes of 20 buckets (100 successes each, the
// seeds' mixture), C at a time, through its service binding; every flush is
// answered 204 only once stored. Prints one JSON line per concurrency:
//   node bench/fleet-workerd.mjs [N=4000] [concurrencies=1,10,50,200]
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { config, freePort, startWorkerd, stop } from "../tests/fleet/run.mjs";

const n = Number(process.argv[2] ?? 4000);
const work = mkdtempSync(join(tmpdir(), "edge-deadline-fleet-bench-"));
mkdirSync(join(work, "do"));
const port = await freePort();
const file = join(work, "fleet.capnp");
writeFileSync(file, config(port, join(work, "do"), work));
const child = await startWorkerd(port, file);
try {
  for (const c of (process.argv[3] ?? "1,10,50,200").split(",").map(Number)) {
    // A warm-up round, then the measured one.
    await (await fetch(`http://127.0.0.1:${port}/load?n=200&c=${c}`)).json();
    const r = await (await fetch(`http://127.0.0.1:${port}/load?n=${n}&c=${c}`)).json();
    console.log(JSON.stringify({ runtime: "workerd (Durable Object, local disk)", concurrency: c, flushes: r.n, bytesPerFlush: r.bytes, failed: r.failed, ms: r.ms, flushesPerSec: Math.round((r.n / r.ms) * 1000) }));
  }
} finally {
  await stop(child);
  rmSync(work, { recursive: true, force: true });
}
