// Real Prometheus (Node only; `node tests/run.mjs prometheus`): Debian's
// /usr/bin/prometheus (installed by `./dev setup`) scrapes a local prom-client
// exporter that recorded known durations; the derivation from the scrape text,
// from the query API's JSON, from the raw samples, and from the CLI against the
// live server must agree within bucket resolution.
//
// Everything listens on 127.0.0.1 (free ports); Prometheus gets a temporary
// storage directory and a 1 s scrape interval, and is stopped on every path
// (finally, and a process 'exit' hook). Waiting for the scrape is a poll of
// the query API with a deadline, never a fixed sleep. Prints a report line
// like the other runners: { runtime, passed, failed, skipped, failures }.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { createServer as createNetServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import client from "prom-client";
import * as lib from "../../pkg/node.js";
import { seed003Samples } from "../support/seed003.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const PROMETHEUS = process.env.PROMETHEUS_BIN ?? "/usr/bin/prometheus";
const METRIC = "edge_scraped_latency_seconds";
const N = 20_000;
const TIMEOUTS = 150;
const SCRAPE_DEADLINE_MS = 60_000;
// Several bounds around the expected p99 (~100 ms) and p99.9 (~1.2 s).
const BUCKETS = [0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09, 0.1, 0.11, 0.12, 0.14, 0.17, 0.2, 0.3, 0.5, 0.75, 1, 1.1, 1.2, 1.3, 1.5, 2];

const failures = [];
let passed = 0;
function check(name, condition, detail = "") {
  if (condition) passed++;
  else failures.push({ name, error: detail });
  console.log(`${condition ? "✓" : "✗"} ${name}${condition || !detail ? "" : `\n  ${detail}`}`);
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createNetServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
    s.on("error", reject);
  });
}


/** The bucket (lo, hi] in ms that holds `ms`. */
function bucketOf(ms) {
  let lo = 0;
  for (const b of BUCKETS.map((x) => x * 1000)) {
    if (ms <= b) return [lo, b];
    lo = b;
  }
  return [lo, Infinity];
}

async function main() {
  await lib.init();
  const raw = seed003Samples(N, 0x2545f491);

  // The exporter: one histogram, outcome-labelled, the raw samples observed in seconds.
  const registry = new client.Registry();
  const histogram = new client.Histogram({ name: METRIC, help: "latency with a known distribution", labelNames: ["route", "outcome"], buckets: BUCKETS, registers: [registry] });
  for (const ms of raw) histogram.observe({ route: "/api", outcome: "ok" }, ms / 1000);
  for (let i = 0; i < TIMEOUTS; i++) histogram.observe({ route: "/api", outcome: "timeout" }, 2.5);
  const exporter = createServer(async (req, res) => {
    res.setHeader("content-type", registry.contentType);
    res.end(await registry.metrics());
  });
  await new Promise((r) => exporter.listen(0, "127.0.0.1", r));
  const exporterUrl = `http://127.0.0.1:${exporter.address().port}/metrics`;

  const dir = mkdtempSync(join(tmpdir(), "edge-deadline-prometheus-"));
  const promPort = await freePort();
  const promUrl = `http://127.0.0.1:${promPort}`;
  writeFileSync(
    join(dir, "prometheus.yml"),
    `global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: edge\n    static_configs:\n      - targets: ["127.0.0.1:${exporter.address().port}"]\n`,
  );
  const log = openSync(join(dir, "prometheus.log"), "w");
  const prometheus = spawn(
    PROMETHEUS,
    [`--config.file=${join(dir, "prometheus.yml")}`, `--storage.tsdb.path=${join(dir, "data")}`, `--web.listen-address=127.0.0.1:${promPort}`, "--log.level=warn"],
    { stdio: ["ignore", log, log] },
  );
  const exited = new Promise((r) => prometheus.on("exit", (code, signal) => r({ code, signal })));
  let spawnError = null;
  prometheus.on("error", (e) => (spawnError = e));
  const kill = () => prometheus.exitCode === null && prometheus.signalCode === null && prometheus.kill("SIGTERM");
  process.on("exit", kill);

  try {
    // Poll the query API until the scrape of every observation has landed.
    const query = (q) => fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(q)}`).then((r) => r.json());
    const started = performance.now();
    let landedAfterMs = null;
    while (performance.now() - started < SCRAPE_DEADLINE_MS) {
      if (spawnError || prometheus.exitCode !== null) break;
      try {
        const r = await query(`${METRIC}_count{outcome="ok"}`);
        if (r.data?.result?.[0]?.value?.[1] === String(N)) {
          landedAfterMs = performance.now() - started;
          break;
        }
      } catch {
        // not listening yet
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    check(
      `Prometheus ${promUrl} scraped the exporter within ${SCRAPE_DEADLINE_MS / 1000} s`,
      landedAfterMs !== null,
      `${spawnError ?? `exit ${prometheus.exitCode}`}; log: ${readFileSync(join(dir, "prometheus.log"), "utf8").slice(-800)}`,
    );
    if (landedAfterMs === null) return;
    console.log(`  scrape landed after ${landedAfterMs.toFixed(0)} ms`);

    const opts = { by: ["route"] };
    const scrapeText = await (await fetch(exporterUrl)).text();
    const [fromScrape] = lib.deriveTimeouts(lib.parsePrometheus(scrapeText, { metric: METRIC }), opts);
    const apiJson = await query(`${METRIC}_bucket`);
    const [fromApi] = lib.deriveTimeouts(lib.parsePrometheus(apiJson, { metric: METRIC }), opts);
    const rawRows = [...raw].map((ms) => ({ ms, route: "/api" }));
    for (let i = 0; i < TIMEOUTS; i++) rawRows.push({ route: "/api", outcome: "timeout" });
    const [fromRaw] = lib.deriveTimeouts(rawRows, opts);

    const strip = (r) => JSON.stringify({ ...r, derivedAt: 0 });
    check("the query API's JSON derives exactly what the scrape text derives", strip(fromApi) === strip(fromScrape), `${strip(fromApi)}\n  vs ${strip(fromScrape)}`);
    check("successes and excluded timeouts counted alike", fromScrape.n === N && fromRaw.n === N && fromScrape.excluded.timeouts === TIMEOUTS && fromRaw.excluded.timeouts === TIMEOUTS, `${fromScrape.n}/${fromRaw.n}, ${fromScrape.excluded.timeouts}/${fromRaw.excluded.timeouts}`);

    const sorted = raw.slice().sort();
    for (const [key, q] of [["p50", 0.5], ["p90", 0.9], ["p99", 0.99], ["p999", 0.999]]) {
      const exact = sorted[Math.floor(q * (N - 1))];
      const [lo, hi] = bucketOf(exact);
      const h = fromScrape[key];
      check(`${key}: from buckets ${h.toFixed(2)} ms lies in the raw data's bucket ${lo}..${hi} ms (exact ${exact.toFixed(2)})`, h >= lo && h <= hi);
      check(`${key}: from raw samples ${fromRaw[key].toFixed(2)} ms is within 1% of exact`, Math.abs(fromRaw[key] - exact) <= 0.01 * exact + 1e-9);
      const width = hi - lo;
      check(`${key}: scrape and raw agree within bucket resolution (|Δ| = ${Math.abs(h - fromRaw[key]).toFixed(2)} ≤ ${width} ms)`, Math.abs(h - fromRaw[key]) <= width);
    }
    check(
      "timeoutMs agrees within bucket resolution × safety",
      Math.abs(fromScrape.timeoutMs - fromRaw.timeoutMs) <= 2 * (bucketOf(fromRaw.p99)[1] - bucketOf(fromRaw.p99)[0]),
      `${fromScrape.timeoutMs} vs ${fromRaw.timeoutMs}`,
    );

    // The CLI against the live server: the same core, the same answer.
    let bin = process.env.EDGE_DEADLINE_BIN ?? join(root, "target/release/edge-deadline");
    if (!existsSync(bin)) {
      const build = spawnSync("cargo", ["build", "--release", "--bin", "edge-deadline"], { cwd: root, stdio: "inherit" });
      check("cargo build --release --bin edge-deadline", build.status === 0);
    }
    const cli = spawnSync(bin, ["derive", "--prometheus", promUrl, "--metric", METRIC, "--by", "route", "--json"], { encoding: "utf8", timeout: 30_000 });
    check("edge-deadline derive --prometheus URL --metric NAME exits 0", cli.status === 0, `${cli.status} ${cli.error ?? ""} ${cli.stderr}`);
    if (cli.status === 0) {
      const config = JSON.parse(cli.stdout);
      const text = JSON.stringify(config);
      const bucket = config.buckets?.[0] ?? {};
      const p99 = bucket.p99;
      const timeout = bucket.timeoutMs;
      check(`the CLI's p99 (${p99}) and timeout (${timeout}) equal the JS API's (to 1 µs)`, Math.abs(p99 - fromApi.p99) < 1e-3 && Math.abs(timeout - fromApi.timeoutMs) < 1e-3, text.slice(0, 600));
    }
    const table = spawnSync(bin, ["derive", "--prometheus", promUrl, "--metric", METRIC], { encoding: "utf8", timeout: 30_000 });
    check("the CLI prints a table from the live server", table.status === 0 && table.stdout.includes(METRIC), `${table.status} ${table.stderr}`);
    const missing = spawnSync(bin, ["derive", "--prometheus", promUrl, "--metric", "no_such_metric"], { encoding: "utf8", timeout: 30_000 });
    check("an unknown metric is exit 1 with a message", missing.status === 1 && /no histogram|no_such_metric/.test(missing.stderr), `${missing.status} ${missing.stderr}`);
  } finally {
    kill();
    const stopped = await Promise.race([exited, new Promise((r) => setTimeout(() => r(null), 10_000))]);
    if (stopped === null) {
      prometheus.kill("SIGKILL");
      await exited;
    }
    check("Prometheus stopped", prometheus.exitCode !== null || prometheus.signalCode !== null);
    await new Promise((r) => exporter.close(r));
    rmSync(dir, { recursive: true, force: true });
  }
}

try {
  await main();
} catch (error) {
  failures.push({ name: "prometheus test", error: String(error?.stack ?? error) });
}
console.log(JSON.stringify({ runtime: `prometheus ${PROMETHEUS} (node ${process.version})`, passed, failed: failures.length, skipped: 0, failures }));
process.exit(failures.length ? 1 : 0);
