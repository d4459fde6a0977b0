// A bounded load bench of the gradient2 limiter on 127.0.0.1 (Node only):
//   node bench/limiter-load.mjs [--connections 64] [--phase-ms 3000] [--rounds 3] [--slow-rounds 3]
//
// Three processes: an upstream (Node http) that answers after `delay` ms (20,
// then 200 for the slow phase), an app server with one route per mode, and
// this process, which holds `connections` keep-alive connections to the app,
// each sending its next request as soon as the last one answered (a closed
// loop: the connections bound what is in flight). The modes:
//   plain     the app calls the upstream for every request (unprotected);
//   default   `limiter.run(call)` with `new ConcurrencyLimiter({ limit: "gradient2" })`;
//   old       the same with the options the defaults were before
//             (initialLimit 20, minLimit 20, windowMs 1000, smoothing 0.2);
// a shed call (`Overloaded`) answers 503 at once, and that connection waits
// `--shed-pause-ms` (20) before its next request, as a client that backs off.
// Phases of `--phase-ms` run each mode in turn, in a rotating order, round
// after round, so load from other processes on the machine hits every mode
// alike; each limiter lives across its rounds (the first round of a limited
// mode includes its start). The upstream counts its calls in flight (peak and
// time-weighted mean) per phase. Everything is bounded: the phases, then the
// children are killed; a run that overruns its budget (`--max-ms`) exits 1.
// Prints a table and one JSON line.
import { spawn } from "node:child_process";
import http from "node:http";
import { fileURLToPath } from "node:url";

const args = Object.fromEntries(
  process.argv
    .slice(2)
    .join(" ")
    .split("--")
    .filter(Boolean)
    .map((kv) => kv.trim().split(/\s+/))
    .map(([k, v]) => [k, v ?? "1"]),
);
const role = args.role;

function listen(server) {
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server.address().port)));
}

// ─── upstream ────────────────────────────────────────────────────────────────
if (role === "upstream") {
  let delay = 20;
  let inFlight = 0;
  let peak = 0;
  let area = 0;
  let since = performance.now();
  let last = since;
  const account = () => {
    const t = performance.now();
    area += inFlight * (t - last);
    last = t;
  };
  const server = http.createServer((req, res) => {
    if (req.url.startsWith("/delay/")) {
      delay = Number(req.url.slice(7));
      return res.end("ok");
    }
    if (req.url === "/stats") {
      account();
      const body = JSON.stringify({ peak, mean: area / (last - since) });
      peak = inFlight;
      area = 0;
      since = last;
      return res.end(body);
    }
    account();
    inFlight++;
    if (inFlight > peak) peak = inFlight;
    setTimeout(() => {
      account();
      inFlight--;
      res.end("upstream answer");
    }, delay);
  });
  server.keepAliveTimeout = 60_000;
  console.log(JSON.stringify({ port: await listen(server) }));
}

// ─── app ─────────────────────────────────────────────────────────────────────
if (role === "app") {
  const derive = await import(new URL("../pkg/derive-node.js", import.meta.url).href);
  if (typeof derive.init === "function") await derive.init();
  const { ConcurrencyLimiter, isOverloaded } = derive;
  const upstream = Number(args.upstream);
  const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
  const call = () =>
    new Promise((resolve, reject) => {
      const req = http.get({ host: "127.0.0.1", port: upstream, path: "/", agent }, (res) => {
        res.resume();
        res.on("end", () => (res.statusCode === 200 ? resolve() : reject(new Error(`upstream ${res.statusCode}`))));
      });
      req.on("error", reject);
    });
  const limiters = {
    default: new ConcurrencyLimiter({ limit: "gradient2" }),
    old: new ConcurrencyLimiter({ limit: "gradient2", initialLimit: 20, minLimit: 20, maxLimit: 200, windowMs: 1000, smoothing: 0.2, queueSize: 4, tolerance: 1.5, probeSamples: 50 }),
  };
  const server = http.createServer((req, res) => {
    const mode = req.url.slice(1);
    if (mode === "limits") return res.end(JSON.stringify(Object.fromEntries(Object.entries(limiters).map(([k, l]) => [k, l.limit]))));
    const limiter = limiters[mode];
    const done = () => res.end("ok");
    const failed = (e) => {
      res.statusCode = isOverloaded(e) ? 503 : 502;
      res.end();
    };
    if (limiter === undefined) call().then(done, failed);
    else limiter.run(call).then(done, failed);
  });
  server.keepAliveTimeout = 60_000;
  console.log(JSON.stringify({ port: await listen(server) }));
}

// ─── driver ──────────────────────────────────────────────────────────────────
if (role === undefined) {
  const connections = Number(args.connections ?? 64);
  const phaseMs = Number(args["phase-ms"] ?? 3000);
  const rounds = Number(args.rounds ?? 3);
  const slowRounds = Number(args["slow-rounds"] ?? 3);
  const shedPauseMs = Number(args["shed-pause-ms"] ?? 20);
  const modes = ["plain", "default", "old"];
  const maxMs = Number(args["max-ms"] ?? (rounds + slowRounds) * modes.length * (phaseMs + 1500) + 10_000);
  const started = performance.now();
  const self = fileURLToPath(import.meta.url);
  const children = [];
  const child = (extra) =>
    new Promise((resolve, reject) => {
      const c = spawn(process.execPath, [self, ...extra], { stdio: ["ignore", "pipe", "inherit"] });
      children.push(c);
      c.stdout.once("data", (d) => resolve(JSON.parse(String(d).split("\n")[0]).port));
      c.on("error", reject);
    });
  const stop = (code) => {
    for (const c of children) c.kill();
    process.exit(code);
  };
  const overrun = setTimeout(() => {
    console.error(`limiter-load: over its ${maxMs} ms budget, stopped`);
    stop(1);
  }, maxMs);
  const upstream = await child(["--role", "upstream"]);
  const app = await child(["--role", "app", "--upstream", String(upstream)]);
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const get = (port, path) =>
    new Promise((resolve, reject) => {
      const req = http.get({ host: "127.0.0.1", port, path, agent }, (res) => {
        let body = "";
        res.on("data", (d) => (body += d));
        res.on("end", () => resolve({ status: res.statusCode, body }));
      });
      req.on("error", reject);
    });
  const control = (path) => new Promise((resolve, reject) => http.get({ host: "127.0.0.1", port: upstream, path }, (res) => {
    let body = "";
    res.on("data", (d) => (body += d));
    res.on("end", () => resolve(body));
  }).on("error", reject));

  async function phase(mode) {
    await control("/stats"); // resets the upstream's counters
    const end = performance.now() + phaseMs;
    let ok = 0;
    let shed = 0;
    let failed = 0;
    const latencies = [];
    const loop = async () => {
      while (performance.now() < end) {
        const t0 = performance.now();
        const r = await get(app, `/${mode}`);
        if (r.status === 200) {
          ok++;
          latencies.push(performance.now() - t0);
        } else if (r.status === 503) {
          shed++;
          await new Promise((resolve) => setTimeout(resolve, shedPauseMs));
        } else failed++;
      }
    };
    const t0 = performance.now();
    await Promise.all(Array.from({ length: connections }, loop));
    const seconds = (performance.now() - t0) / 1000;
    const upstreamStats = JSON.parse(await control("/stats"));
    const limits = JSON.parse((await get(app, "/limits")).body);
    latencies.sort((a, b) => a - b);
    const p = (q) => (latencies.length ? latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] : NaN);
    return { mode, okPerS: ok / seconds, shedPerS: shed / seconds, failed, p50: p(0.5), p99: p(0.99), peakInFlight: upstreamStats.peak, meanInFlight: upstreamStats.mean, limit: limits[mode] };
  }

  const results = [];
  const run = async (delay, n, label) => {
    await control(`/delay/${delay}`);
    for (let r = 0; r < n; r++) {
      const order = modes.map((_, i) => modes[(i + r) % modes.length]);
      for (const mode of order) results.push({ phase: label, round: r + 1, upstreamMs: delay, ...(await phase(mode)) });
    }
  };
  await run(20, rounds, "healthy");
  await run(200, slowRounds, "slow");
  clearTimeout(overrun);

  const f = (x, d = 0) => (Number.isFinite(x) ? x.toFixed(d) : "-");
  console.log(`connections ${connections}, phases of ${phaseMs} ms, shed pause ${shedPauseMs} ms, ${((performance.now() - started) / 1000).toFixed(1)} s`);
  console.log("phase    round mode     ok/s   shed/s  p50 ms  p99 ms  upstream in flight (peak / mean)  limit after");
  for (const r of results) {
    console.log(`${r.phase.padEnd(8)} ${String(r.round).padEnd(5)} ${r.mode.padEnd(8)} ${f(r.okPerS).padStart(5)} ${f(r.shedPerS).padStart(7)} ${f(r.p50, 1).padStart(7)} ${f(r.p99, 1).padStart(7)}  ${String(r.peakInFlight).padStart(4)} / ${f(r.meanInFlight, 1).padStart(5)}${" ".repeat(22)}${r.limit ?? "-"}`);
  }
  const sum = (phaseName, mode, from = 1) => {
    const rs = results.filter((r) => r.phase === phaseName && r.mode === mode && r.round >= from);
    return { okPerS: rs.reduce((a, r) => a + r.okPerS, 0) / rs.length, peakInFlight: Math.max(...rs.map((r) => r.peakInFlight)), meanInFlight: rs.reduce((a, r) => a + r.meanInFlight, 0) / rs.length };
  };
  const summary = {};
  for (const mode of modes) summary[mode] = { healthy: sum("healthy", mode), healthyAfterFirst: sum("healthy", mode, 2), slow: sum("slow", mode), lastSlow: sum("slow", mode, slowRounds) };
  console.log("summary (ok/s averaged over rounds; in flight at the upstream):");
  for (const [mode, s] of Object.entries(summary)) {
    const rel = (x) => f((100 * x) / summary.plain.healthy.okPerS, 0);
    console.log(
      `  ${mode.padEnd(8)} healthy ${f(s.healthy.okPerS)} ok/s (${rel(s.healthy.okPerS)} % of plain; rounds 2+: ${f(s.healthyAfterFirst.okPerS)}, ${f((100 * s.healthyAfterFirst.okPerS) / summary.plain.healthyAfterFirst.okPerS)} %); slow: ${f(s.slow.okPerS)} ok/s, in flight peak ${s.slow.peakInFlight}, mean ${f(s.slow.meanInFlight, 1)}; last slow round: peak ${s.lastSlow.peakInFlight}, mean ${f(s.lastSlow.meanInFlight, 1)}`,
    );
  }
  console.log(JSON.stringify({ connections, phaseMs, shedPauseMs, results, summary }));
  stop(0);
}
