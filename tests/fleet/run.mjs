// The fleet suite (`node tests/run.mjs fleet`): the aggregator with real
// parts. In workerd: two Worker services (simulated isolates, and the
// aggregator's Durable Object namespace with its storage on local disk),
// flushes through a service binding, a restart of workerd, hostile bytes.
// Then the same on Deno KV (tests/fleet/deno-kv.js, a real Deno.openKv on a
// temporary file). Prints one JSON report line per runtime.
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { LatencySketch } from "../../pkg/derive-node.js";
import { assert, hostileFlushes, runner, sansDate } from "./support.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const bin = {
  deno: join(root, "node_modules/@deno/linux-x64-glibc/deno"),
  workerd: join(root, "node_modules/@cloudflare/workerd-linux-64/bin/workerd"),
};
const main = process.argv[1] === fileURLToPath(import.meta.url);
const work = main ? mkdtempSync(join(tmpdir(), "edge-deadline-fleet-")) : "";

export function freePort() {
  return new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** The two workers and the Durable Object namespace on local disk (`disk`); also bench/fleet-workerd.mjs's. */
export function config(port, disk, work) {
  const pkg = readdirSync(join(root, "pkg")).filter((f) => /\.(js|wasm)$/.test(f) && !/deno\.js$/.test(f)).map((f) => `pkg/${f}`);
  const mods = (main) =>
    [main, "tests/fleet/support.js", ...pkg]
      .map((f) => `(name = "${f}", ${f.endsWith(".wasm") ? "wasm" : "esModule"} = embed "${relative(work, join(root, f))}")`)
      .join(",\n    ");
  return `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [
    (name = "isolates", worker = .isolates),
    (name = "agg", worker = .agg),
    (name = "do-disk", disk = (path = "${disk}", writable = true)),
  ],
  sockets = [ (name = "http", address = "127.0.0.1:${port}", http = (), service = "isolates") ],
);
const agg :Workerd.Worker = (
  modules = [ ${mods("tests/fleet/agg-worker.js")} ],
  compatibilityDate = "2026-11-24",
  durableObjectNamespaces = [
    (className = "TimeoutAggregator", uniqueKey = "edge-deadline-fleet-test"),
    (className = "CountingAggregator", uniqueKey = "edge-deadline-fleet-counted"),
  ],
  durableObjectStorage = (localDisk = "do-disk"),
  bindings = [
    (name = "AGG", durableObjectNamespace = "TimeoutAggregator"),
    (name = "COUNTED", durableObjectNamespace = "CountingAggregator"),
  ],
);
const isolates :Workerd.Worker = (
  modules = [ ${mods("tests/fleet/isolates-worker.js")} ],
  compatibilityDate = "2026-11-24",
  bindings = [ (name = "AGG", service = "agg") ],
);
`;
}

export async function startWorkerd(port, file) {
  const child = spawn(bin.workerd, ["serve", file], { cwd: root, stdio: ["ignore", "inherit", "inherit"] });
  for (let i = 0; i < 200; i++) {
    try {
      await fetch(`http://127.0.0.1:${port}/nothing`);
      return child;
    } catch {
      await new Promise((r) => setTimeout(r, 100)); // waiting for workerd to listen: no event to wait on
    }
  }
  child.kill();
  throw new Error("workerd did not listen");
}

export function stop(child) {
  return new Promise((resolve) => {
    child.once("exit", resolve);
    child.kill("SIGTERM");
  });
}

/** The checks both engines share: the table against the exact values, hostile bytes. */
export function tableMatches(table, expected) {
  for (const [name, e] of Object.entries(expected)) {
    const row = table.buckets[name];
    assert(row, `no row for ${name}`);
    assert(row.n === e.n, `${name}: n ${row.n}, expected ${e.n}`);
    assert(row.errors === e.errors, `${name}: errors ${row.errors}, expected ${e.errors}`);
    const want = e.p99 * table.safety;
    assert(Math.abs(row.timeoutMs - want) <= 0.01 * want, `${name}: timeoutMs ${row.timeoutMs}, exact p99 × safety ${want}`);
    assert(row.floorMs === null, `${name}: floorMs ${row.floorMs}`);
    assert(typeof row.falseTimeoutRate === "number" && row.falseTimeoutRate < 0.01, `${name}: falseTimeoutRate ${row.falseTimeoutRate}`);
  }
}

async function workerdSuite() {
  const t = runner();
  const port = await freePort();
  const disk = join(work, "do");
  const { mkdirSync } = await import("node:fs");
  mkdirSync(disk);
  const file = join(work, "fleet.capnp");
  writeFileSync(file, config(port, disk, work));
  const base = `http://127.0.0.1:${port}`;
  // The CLI is built before workerd starts (the release build `cargo test --release --workspace` made), so
  // no check waits on a compiler while the server sits idle.
  execFileSync("cargo", ["build", "--release", "-q", "-p", "edge-deadline-cli"], { cwd: root, stdio: "inherit" });
  const cliBin = join(root, "target/release/edge-deadline");
  let child = await startWorkerd(port, file);
  try {
    let sim;
    let table;
    await t.check("50 isolates × 2 000 requests flush through a service binding; the table matches all samples in one place", async () => {
      sim = await (await fetch(`${base}/simulate?isolates=50&requests=2000`)).json();
      assert(sim.statuses.length === 200 && sim.statuses.every((s) => s === 204), `statuses ${[...new Set(sim.statuses)]}`);
      table = await (await fetch(`${base}/table`)).json();
      assert(table.v === 1 && table.windows === 24 && table.windowMs === 3_600_000, JSON.stringify(table).slice(0, 200));
      tableMatches(table, sim.expected);
    });
    await t.check("group commit: 50 flushes in flight cost at most 10 storage writes, each answered 204 once stored", async () => {
      const before = await (await fetch(`${base}/counted/writes`)).json();
      const burst = await (await fetch(`${base}/burst?n=50`)).json();
      assert(burst.statuses.length === 50 && burst.statuses.every((s) => s === 204), `statuses ${[...new Set(burst.statuses)]}`);
      const after = await (await fetch(`${base}/counted/writes`)).json();
      const writes = after.put - before.put;
      assert(writes >= 1 && writes <= 10, `${writes} storage writes for 50 flushes in flight (${JSON.stringify({ before, after })})`);
      assert(after.delete === before.delete, `deletes ${JSON.stringify({ before, after })}`);
      // Every flush is in the table: 50 × 100 successes in each of the burst's 20 buckets.
      const table = await (await fetch(`${base}/counted/table`)).json();
      for (let b = 0; b < 20; b++) assert(table.buckets[`route-${b}`]?.n === 50 * 100, `route-${b}: n ${table.buckets[`route-${b}`]?.n}`);
      console.error(`fleet: 50 flushes in flight, ${writes} storage writes, ${after.sync - before.sync} syncs`);
    });
    await t.check("hostile bytes are refused (400/413 with a code) and nothing merged changes", async () => {
      const before = sansDate(await (await fetch(`${base}/table`)).json());
      for (const [what, bytes] of hostileFlushes(LatencySketch)) {
        const r = await fetch(`${base}/raw`, { method: "POST", body: bytes });
        const body = await r.json();
        assert(r.status === 400 || r.status === 413, `${what}: status ${r.status}`);
        assert(typeof body.code === "string" && typeof body.message === "string", `${what}: ${JSON.stringify(body)}`);
        if (what === "too big") assert(r.status === 413, "too big: 413");
        if (what === "another relative error") assert(body.code === "WRONG_PARAMETERS", body.code);
      }
      assert(sansDate(await (await fetch(`${base}/table`)).json()) === before, "the table changed");
    });
    await t.check("the CLI's derive --aggregator URL reads and prints the same table", async () => {
      const served = await (await fetch(`${base}/table`)).json();
      const cli = (...args) => execFileSync(cliBin, ["derive", "--aggregator", base, ...args], { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
      const out = JSON.parse(cli("--json"));
      assert(out.q === served.q && out.safety === served.safety, `q ${out.q}, safety ${out.safety}`);
      assert(out.buckets.length === Object.keys(served.buckets).length, `${out.buckets.length} buckets`);
      for (const b of out.buckets) {
        const row = served.buckets[b.bucket.bucket];
        assert(row && b.n === row.n && b.excluded.errors === row.errors, `${JSON.stringify(b.bucket)}: n ${b.n}`);
        assert(Math.abs(b.timeoutMs - row.timeoutMs) <= 0.0005 + 1e-9 * row.timeoutMs, `${b.bucket.bucket}: ${b.timeoutMs} vs ${row.timeoutMs}`);
      }
      const text = cli();
      assert(/bucket=chat/.test(text) && /bucket=search/.test(text) && text.includes("p99 x 2"), text);
    });
    await t.check("a restart of workerd loses nothing that was flushed", async () => {
      const before = sansDate(await (await fetch(`${base}/table`)).json());
      await stop(child);
      child = await startWorkerd(port, file);
      const after = await (await fetch(`${base}/table`)).json();
      assert(sansDate(after) === before, "the table differs after the restart");
      tableMatches(after, sim.expected);
    });
  } finally {
    await stop(child);
  }
  const version = JSON.parse(readFileSync(join(root, "node_modules/workerd/package.json"), "utf8")).version;
  return t.report(`fleet: workerd ${version} (Durable Object, local disk)`);
}

function denoSuite() {
  return new Promise((resolve) => {
    const child = spawn(bin.deno, ["run", "--unstable-kv", `--allow-read=${root},${work}`, `--allow-write=${work}`, "tests/fleet/deno-kv.js", work], {
      cwd: root,
      env: { ...process.env, DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1", DENO_DIR: join(root, "test-output/deno-cache") },
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.on("exit", (code) => {
      const line = out.trim().split("\n").reverse().find((l) => l.startsWith("{"));
      resolve(line ? JSON.parse(line) : { runtime: "fleet: deno", passed: 0, failed: 1, skipped: 0, failures: [{ name: "runner", error: `exit ${code}, no report:\n${out}` }] });
    });
  });
}

if (main) try {
  for (const suite of [workerdSuite, denoSuite]) {
    const report = await suite();
    console.log(JSON.stringify(report));
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
