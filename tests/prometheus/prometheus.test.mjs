// Real Prometheus (Node only; `node tests/run.mjs prometheus`): Debian's
// /usr/bin/prometheus (installed by `./dev setup`) scrapes a local prom-client
// exporter that recorded known durations; the derivation from the scrape text,
// from the query API's JSON, from the raw samples, and from the CLI against the
// live server must agree within bucket resolution. The CLI also reaches the
// server through a local TLS endpoint (a self-signed certificate made here with
// openssl, passed as --ca-file) that checks a bearer token, as production
// Prometheus behind a proxy does.
//
// Everything listens on 127.0.0.1 (free ports); Prometheus gets a temporary
// storage directory and a 1 s scrape interval, and is stopped on every path
// (finally, and a process 'exit' hook). Waiting for the scrape is a poll of
// the query API with a deadline, never a fixed sleep. Prints a report line
// like the other runners: { runtime, passed, failed, skipped, failures }.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { createServer as createNetServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import client from "prom-client";
// The derivation API is the derive entry (`edge-deadline/derive`; pkg/derive-node.js in Node).
import * as lib from "../../pkg/derive-node.js";
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
  // Build the CLI first: a synchronous build later would stall the exporter
  // (same process), and Prometheus marks the series stale after a failed scrape.
  // Always (re)build: cargo is a no-op when nothing changed, and a stale binary would test old code.
  if (!process.env.EDGE_DEADLINE_BIN) {
    const build = spawnSync("cargo", ["build", "--release", "-p", "edge-deadline-cli"], { cwd: root, stdio: "inherit" });
    check("cargo build --release -p edge-deadline-cli", build.status === 0);
  }
  const bin = process.env.EDGE_DEADLINE_BIN ?? join(root, "target/release/edge-deadline");
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

    await throughTls(bin, promUrl, dir, fromApi);
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

/**
 * Prometheus behind HTTPS and a bearer token: a Node TLS endpoint with a
 * certificate made here (openssl, valid for IP 127.0.0.1, not a CA) forwards
 * GETs to the live server only when `Authorization: Bearer <token>` matches.
 */
async function throughTls(bin, promUrl, dir, fromApi) {
  const key = join(dir, "tls-key.pem");
  const cert = join(dir, "tls-cert.pem");
  const made = spawnSync(
    "openssl",
    ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=edge-deadline test", "-addext", "subjectAltName=IP:127.0.0.1", "-addext", "basicConstraints=critical,CA:FALSE"],
    { encoding: "utf8" },
  );
  check("openssl made a self-signed certificate for 127.0.0.1", made.status === 0, made.stderr);
  if (made.status !== 0) return;
  const token = `t-${process.pid}-${Date.now()}`;
  const seen = { authorized: 0, refused: 0 };
  const endpoint = createHttpsServer({ key: readFileSync(key), cert: readFileSync(cert) }, async (req, res) => {
    if (req.headers.authorization !== `Bearer ${token}`) {
      seen.refused++;
      res.writeHead(401, { "content-type": "application/json" });
      return res.end(JSON.stringify({ status: "error", error: "a valid bearer token is required" }));
    }
    seen.authorized++;
    const upstream = await fetch(`${promUrl}${req.url}`);
    res.writeHead(upstream.status, { "content-type": upstream.headers.get("content-type") ?? "application/json" });
    res.end(Buffer.from(await upstream.arrayBuffer()));
  });
  await new Promise((r) => endpoint.listen(0, "127.0.0.1", r));
  const httpsUrl = `https://127.0.0.1:${endpoint.address().port}`;
  // spawnSync would block the event loop that serves the endpoint: run the CLI asynchronously.
  const cli = (args, env = {}) =>
    new Promise((resolve) => {
      const child = spawn(bin, ["derive", "--prometheus", httpsUrl, "--metric", METRIC, ...args], { env: { ...process.env, ...env } });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (d) => (stdout += d));
      child.stderr.on("data", (d) => (stderr += d));
      const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
      child.on("close", (status) => (clearTimeout(timer), resolve({ status, stdout, stderr })));
    });
  try {
    const env = { EDGE_DEADLINE_TEST_TOKEN: token };
    const ok = await cli(["--by", "route", "--json", "--ca-file", cert, "--bearer-token-env", "EDGE_DEADLINE_TEST_TOKEN"], env);
    check("over https with --ca-file and --bearer-token-env the CLI exits 0", ok.status === 0, `${ok.status} ${ok.stderr}`);
    if (ok.status === 0) {
      const bucket = JSON.parse(ok.stdout).buckets?.[0] ?? {};
      check(
        `over https the CLI's p99 (${bucket.p99}) and timeout (${bucket.timeoutMs}) equal the JS API's (to 1 µs)`,
        Math.abs(bucket.p99 - fromApi.p99) < 1e-3 && Math.abs(bucket.timeoutMs - fromApi.timeoutMs) < 1e-3,
        ok.stdout.slice(0, 600),
      );
    }
    check("the TLS endpoint saw the bearer token", seen.authorized >= 1 && seen.refused === 0, JSON.stringify(seen));
    const noToken = await cli(["--ca-file", cert]);
    check("without the token the endpoint answers 401 and the CLI exits 1 saying so", noToken.status === 1 && /answered 401/.test(noToken.stderr) && seen.refused === 1, `${noToken.status} ${noToken.stderr}`);
    const wrong = await cli(["--ca-file", cert, "--bearer-token-env", "EDGE_DEADLINE_TEST_TOKEN"], { EDGE_DEADLINE_TEST_TOKEN: "wrong" });
    check("a wrong token is refused too", wrong.status === 1 && /answered 401/.test(wrong.stderr), `${wrong.status} ${wrong.stderr}`);
    const before = seen.authorized + seen.refused;
    const untrusted = await cli(["--bearer-token-env", "EDGE_DEADLINE_TEST_TOKEN"], env);
    check(
      "without --ca-file the self-signed certificate is not trusted (exit 1, no request reaches the endpoint)",
      untrusted.status === 1 && /certificate|UnknownIssuer/i.test(untrusted.stderr) && seen.authorized + seen.refused === before,
      `${untrusted.status} ${untrusted.stderr}`,
    );
  } finally {
    endpoint.closeAllConnections?.();
    await new Promise((r) => endpoint.close(r));
  }
}

try {
  await main();
} catch (error) {
  failures.push({ name: "prometheus test", error: String(error?.stack ?? error) });
}
console.log(JSON.stringify({ runtime: `prometheus ${PROMETHEUS} (node ${process.version})`, passed, failed: failures.length, skipped: 0, failures }));
process.exit(failures.length ? 1 : 0);
