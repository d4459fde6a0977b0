// The fleet aggregator's throughput on this machine's workerd: the fleet
// test's two Workers (tests/fleet: simulated isolates, and the
// TimeoutAggregator Durable Object with its storage on local disk). The
// isolates' Worker sends N flushes of 20 buckets (100 successes each, the
// seeds' mixture), C at a time, through its service binding; every flush is
// answered 204 only once stored. Prints one JSON line per concurrency, with
// the CPU workerd spent per flush (its user + system time over the run: the
// sender, the hop and the object share workerd's one thread) and the load
// average, then the same for the baseline ("echo": the flushes sent the same
// way and answered by the aggregator's Worker without reaching the object):
//   node bench/fleet-workerd.mjs [N=4000] [concurrencies=1,10,50,200]
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { config, freePort, startWorkerd, stop } from "../tests/fleet/run.mjs";

const n = Number(process.argv[2] ?? 4000);
const work = mkdtempSync(join(tmpdir(), "edge-deadline-fleet-bench-"));
mkdirSync(join(work, "do"));
const port = await freePort();
const file = join(work, "fleet.capnp");
writeFileSync(file, config(port, join(work, "do"), work));
const child = await startWorkerd(port, file);
/** workerd's CPU time so far (user + system), in ms: fields 14 and 15 of /proc/<pid>/stat, in ticks of 10 ms. */
const cpuMs = () => {
  const fields = readFileSync(`/proc/${child.pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
};
try {
  for (const to of ["aggregator", "echo"]) {
    for (const c of (process.argv[3] ?? "1,10,50,200").split(",").map(Number)) {
      // A warm-up round, then the measured one.
      await (await fetch(`http://127.0.0.1:${port}/load?n=200&c=${c}&to=${to}`)).json();
      const cpu0 = cpuMs();
      const r = await (await fetch(`http://127.0.0.1:${port}/load?n=${n}&c=${c}&to=${to}`)).json();
      const cpu = cpuMs() - cpu0;
      console.log(
        JSON.stringify({
          runtime: "workerd (Durable Object, local disk)",
          to,
          concurrency: c,
          flushes: r.n,
          bytesPerFlush: r.bytes,
          failed: r.failed,
          ms: r.ms,
          flushesPerSec: Math.round((r.n / r.ms) * 1000),
          workerdCpuMsPerFlush: Number((cpu / r.n).toFixed(3)),
          load1: Number(loadavg()[0].toFixed(2)),
        }),
      );
    }
  }
} finally {
  await stop(child);
  rmSync(work, { recursive: true, force: true });
}
