// The Rust Worker example (examples/rust-worker: workers-rs + the `web`
// feature) under workerd, proxying the stalling fixture upstream
// (tests/fixtures/stall.mjs) with a deadline, a stall guard and a fallback.
// The example's /resume route streams the fixture's resumable event stream
// (tests/fixtures/resume.mjs) back through a read that recovers.
// Run by `node tests/run.mjs web-workerd` (FIXTURE_URL is the fixture server);
// prints one JSON report line like the other suites.
//
// Each case checks both ends: the client gets its answer inside the Worker's
// deadline (BUDGET_MS, from src/lib.rs), and the fixture server saw the
// upstream connection closed (aborted, not abandoned). The time-out cases run
// concurrently: in workerd a timer belongs to the request that made it, so one
// request ending must not cancel another's deadlines. Everything runs twice: at the default
// configuration and with no_global_navigator (workerd without `navigator`).
//
// A second Rust Worker (tests/web/workerd-quota: plain wasm-bindgen) derives
// 20 000 deadlines in one request: in workerd a request may hold a limited
// number of pending timers, and the Rust API's per-turn wake-up queues
// (src/web/timers.rs, "Which queue") must keep it far from that quota.
//
// A third Rust Worker (tests/web/workerd-book: workers-rs) records calls into a
// `TimeoutBook`, flushes them to the package's `TimeoutAggregator` Durable
// Object (a JavaScript Worker in the same workerd, its storage on local disk,
// reached through a service binding) and reads the fleet's timeout back.
import { spawn } from "node:child_process";
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { BUCKETS, exact, rng } from "../fleet/support.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const example = join(root, "examples/rust-worker");
const out = join(root, "test-output/rust-worker");
const fixture = process.env.FIXTURE_URL;
const workerd = join(root, "node_modules/@cloudflare/workerd-linux-64/bin/workerd");
const source = readFileSync(join(example, "src/lib.rs"), "utf8");
const constant = (name) => Number(new RegExp(`const ${name}: f64 = ([\\d_.]+);`).exec(source)[1].replaceAll("_", ""));
const BUDGET_MS = constant("BUDGET_MS");
const STALL_MS = constant("STALL_MS");
const FIRST_CHUNK_MS = constant("FIRST_CHUNK_MS");
const FALLBACK_RESERVE_MS = constant("FALLBACK_RESERVE_MS");
const variants = [[], ["no_global_navigator"]];
const report = { runtime: `web-workerd (rust worker, workerd ${JSON.parse(readFileSync(join(root, "node_modules/workerd/package.json"), "utf8")).version})`, passed: 0, failed: 0, skipped: 0, failures: [] };

function ok(cond, message) {
  if (!cond) throw new Error(message);
}

const uid = () => `rw-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`;

async function proxied(path) {
  const t0 = performance.now();
  const res = await fetch(`${base}/?upstream=${encodeURIComponent(`${fixture}${path}`)}`, { signal: AbortSignal.timeout(5_000) });
  const body = await res.text();
  return { res, body, elapsed: performance.now() - t0 };
}

async function closed(id) {
  const view = await (await fetch(`${fixture}/stall/closed?id=${id}`)).json();
  ok(view.known, `the fixture never saw request ${id}`);
  ok(view.closed, `the fixture did not see the upstream connection close (abandoned, not aborted): ${JSON.stringify(view)}`);
  return view;
}

function fallback({ res, body, elapsed }, reason) {
  ok(res.status === 200, `status ${res.status}: ${body}`);
  ok(res.headers.get("x-edge-deadline") === "fallback", `answered by ${res.headers.get("x-edge-deadline")}: ${body}`);
  ok(res.headers.get("x-edge-deadline-reason") === reason, `fallback reason ${res.headers.get("x-edge-deadline-reason")}, expected ${reason}: ${body}`);
  ok(elapsed < BUDGET_MS, `the fallback answered after ${elapsed.toFixed(1)} ms, past the ${BUDGET_MS} ms deadline`);
  ok(Number(res.headers.get("x-edge-deadline-remaining-ms")) > 0, "no time was left for the fallback");
}

/** Builds the quota Worker into `dir` (cargo → wasm-bindgen --target web) with a workerd config for `port`. */
function buildQuota(dir, port, flags) {
  const crate = join(root, "tests/web/workerd-quota");
  const target = join(root, "target/rust-worker");
  execFileSync("cargo", ["build", "--release", "--target", "wasm32-unknown-unknown"], { cwd: crate, stdio: ["ignore", "inherit", "inherit"], env: { ...process.env, CARGO_TARGET_DIR: target } });
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  execFileSync(join(root, ".tools/bin/wasm-bindgen"), ["--target", "web", "--out-dir", dir, "--out-name", "worker", "--no-typescript", join(target, "wasm32-unknown-unknown/release/edge_deadline_workerd_quota.wasm")], { stdio: ["ignore", "inherit", "inherit"] });
  copyFileSync(join(crate, "shim.mjs"), join(dir, "shim.mjs"));
  const modules = readdirSync(dir, { recursive: true })
    .filter((f) => /\.(m?js|wasm)$/.test(f))
    .sort((a, b) => (a === "shim.mjs" ? -1 : b === "shim.mjs" ? 1 : a.localeCompare(b)))
    .map((f) => `(name = "${f}", ${f.endsWith(".wasm") ? "wasm" : "esModule"} = embed "${f}")`);
  writeFileSync(
    join(dir, "config.capnp"),
    `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [ (name = "main", worker = .worker) ],
  sockets = [ (name = "http", address = "127.0.0.1:${port}", http = (), service = "main") ],
);
const worker :Workerd.Worker = (
  modules = [ ${modules.join(", ")} ],
  compatibilityDate = "2026-11-24",
  compatibilityFlags = [${flags.map((f) => JSON.stringify(f)).join(", ")}],
);
`,
  );
}

/**
 * Builds the book Worker into `dir` with a workerd config for `port`: the Rust
 * Worker ("main", the binding AGG to "agg-rpc", tests/web/workerd-book-agg.js,
 * which reaches the object by RPC as the fleet recipe does) and the
 * aggregator's Worker (tests/fleet/agg-worker.js over pkg/, its Durable Object
 * storage in `disk`).
 */
function buildBook(dir, port, flags, disk) {
  const crate = join(root, "tests/web/workerd-book");
  const target = join(root, "target/rust-worker");
  execFileSync("cargo", ["build", "--release", "--target", "wasm32-unknown-unknown"], { cwd: crate, stdio: ["ignore", "inherit", "inherit"], env: { ...process.env, CARGO_TARGET_DIR: target } });
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  execFileSync(join(root, ".tools/bin/wasm-bindgen"), ["--target", "web", "--out-dir", dir, "--out-name", "worker", "--no-typescript", join(target, "wasm32-unknown-unknown/release/edge_deadline_workerd_book.wasm")], { stdio: ["ignore", "inherit", "inherit"] });
  copyFileSync(join(crate, "shim.mjs"), join(dir, "shim.mjs"));
  const module = (name, file) => `(name = "${name}", ${name.endsWith(".wasm") ? "wasm" : "esModule"} = embed "${file}")`;
  const modules = readdirSync(dir, { recursive: true })
    .filter((f) => /\.(m?js|wasm)$/.test(f))
    .sort((a, b) => (a === "shim.mjs" ? -1 : b === "shim.mjs" ? 1 : a.localeCompare(b)))
    .map((f) => module(f, f));
  const pkg = readdirSync(join(root, "pkg")).filter((f) => /\.(js|wasm)$/.test(f) && !/deno\.js$/.test(f)).map((f) => `pkg/${f}`);
  const aggModules = ["tests/fleet/agg-worker.js", ...pkg].map((f) => module(f, relative(dir, join(root, f))));
  const rpcModules = ["tests/web/workerd-book-agg.js", ...pkg].map((f) => module(f, relative(dir, join(root, f))));
  writeFileSync(
    join(dir, "config.capnp"),
    `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [
    (name = "main", worker = .worker),
    (name = "agg", worker = .agg),
    (name = "agg-rpc", worker = .aggRpc),
    (name = "do-disk", disk = (path = "${disk}", writable = true)),
  ],
  sockets = [ (name = "http", address = "127.0.0.1:${port}", http = (), service = "main") ],
);
const worker :Workerd.Worker = (
  modules = [ ${modules.join(", ")} ],
  compatibilityDate = "2026-11-24",
  compatibilityFlags = [${flags.map((f) => JSON.stringify(f)).join(", ")}],
  bindings = [ (name = "AGG", service = "agg-rpc") ],
);
const aggRpc :Workerd.Worker = (
  modules = [ ${rpcModules.join(",\n    ")} ],
  compatibilityDate = "2026-11-24",
  bindings = [ (name = "TIMEOUTS", durableObjectNamespace = (className = "TimeoutAggregator", serviceName = "agg")) ],
);
const agg :Workerd.Worker = (
  modules = [ ${aggModules.join(",\n    ")} ],
  compatibilityDate = "2026-11-24",
  durableObjectNamespaces = [ (className = "TimeoutAggregator", uniqueKey = "edge-deadline-rust-book-test") ],
  durableObjectStorage = (localDisk = "do-disk"),
  bindings = [ (name = "AGG", durableObjectNamespace = "TimeoutAggregator") ],
);
`,
  );
}

let quotaBase;
let bookBase;

const cases = {
  async "one request deriving 20 000 deadlines from one root never meets the timer quota"() {
    const n = 20_000;
    const res = await fetch(`${quotaBase}/?n=${n}`, { signal: AbortSignal.timeout(10_000) });
    const text = await res.text();
    ok(res.status === 200, `status ${res.status}: ${text}`);
    const r = JSON.parse(text);
    ok(r.error === undefined, `stopped by: ${r.error}`);
    ok(r.reserves === n / 2 && r.mins === n / 2, `armed ${r.reserves} reserves and ${r.mins} mins of ${n / 2} each`);
    ok(r.aborted === 0, `${r.aborted} deadlines aborted early`);
  },
  async "one request making and dropping a deadline and a stall wrapper in each of 10 500 turns never meets the timer quota"() {
    const n = 10_500;
    const res = await fetch(`${quotaBase}/turns?n=${n}`, { signal: AbortSignal.timeout(30_000) });
    const text = await res.text();
    ok(res.status === 200, `status ${res.status}: ${text}`);
    const r = JSON.parse(text);
    ok(r.error === undefined, `stopped by: ${r.error}`);
    ok(r.turns === n, `${r.turns} turns of ${n}`);
  },
  async "a Rust Worker records into a TimeoutBook, flushes to the TimeoutAggregator Durable Object and serves the fleet's p99 × safety"() {
    const u = rng(27);
    const samples = Array.from({ length: 3_000 }, () => BUCKETS.search(u));
    const errors = 40;
    const lines = [...samples.map((ms) => String(ms)), ...Array.from({ length: errors }, (_, i) => `error ${5 + i}`)];
    // Within maxStepFactor (2) of the fleet's value: a bucket's first value is bounded around its fallback.
    const fallbackMs = 1_000;
    const res = await fetch(`${bookBase}/book?bucket=GET%20%2Fsearch&fallback=${fallbackMs}`, { method: "POST", body: lines.join("\n"), signal: AbortSignal.timeout(10_000) });
    const text = await res.text();
    ok(res.status === 200, `status ${res.status}: ${text}`);
    const r = JSON.parse(text);
    ok(r.sent === 1 && r.kept === 0 && r.dropped === 0 && r.left === 0, `flush: ${text}`);
    // The flush's own refresh read the table before its bytes arrived: the fallback, with a warning.
    ok(r.before === fallbackMs, `before the refresh: ${r.before}`);
    ok(JSON.stringify(r.warnings) === '["FEW_SAMPLES"]', `warnings ${JSON.stringify(r.warnings)}`);
    const table = await (await fetch(`${bookBase}/table`)).json();
    const row = table.buckets["GET /search"];
    ok(row && row.n === samples.length && row.errors === errors, `the aggregator's row: ${JSON.stringify(row)}`);
    const want = exact(samples.sort((a, b) => a - b), table.q) * table.safety;
    ok(table.q === 0.99 && Math.ceil(row.timeoutMs) === r.after, `served ${r.after}, the table's ${row.timeoutMs} in whole ms (q ${table.q})`);
    ok(Math.abs(r.after - want) <= 0.01 * want, `served ${r.after}, exact p99 × safety ${want}`);
  },
  async "a stalled upstream body: upstream aborted, the fallback answers inside the deadline"() {
    const id = uid();
    const r = await proxied(`/stall/mid?n=2&gap=10&id=${id}`);
    fallback(r, "StreamStalled");
    ok(/stream stalled: no progress for \d+(\.\d)? ms after \d+ chunks \(32 bytes\)/.test(r.body), r.body);
    ok(r.elapsed >= STALL_MS, `answered after ${r.elapsed} ms, before the stall limit`);
    await closed(id);
  },
  async "headers, then silence before any chunk: cut at FIRST_CHUNK_MS, not at the end of the proxy's share"() {
    const id = uid();
    const r = await proxied(`/stall/before?id=${id}`);
    fallback(r, "StreamStalled");
    ok(/first/.test(r.body), `a first-chunk stall: ${r.body}`);
    ok(r.elapsed >= FIRST_CHUNK_MS && r.elapsed < BUDGET_MS - FALLBACK_RESERVE_MS, `answered after ${r.elapsed} ms (first chunk ${FIRST_CHUNK_MS}, share ${BUDGET_MS - FALLBACK_RESERVE_MS})`);
    await closed(id);
  },
  async "three requests time out concurrently, each by its own timers"() {
    // The stall request arrives first and ends first (at STALL_MS). Had it
    // armed a timer shared with the others, workerd would cancel that timer
    // when it ended, and the request waiting for headers (bounded by nothing
    // but its deadline's signal) would never be answered.
    const ids = [uid(), uid(), uid()];
    const stalling = proxied(`/stall/mid?n=1&gap=10&id=${ids[0]}`);
    await new Promise((r) => setTimeout(r, 50));
    const [stall, noHeaders, slow] = await Promise.all([
      stalling,
      proxied(`/stall/no-headers?id=${ids[1]}`),
      // Chunks keep coming (no stall), but not all within the proxy's share of the deadline.
      proxied(`/stall/steady?n=200&gap=50&id=${ids[2]}`),
    ]);
    fallback(stall, "StreamStalled");
    fallback(noHeaders, "DeadlineExceeded");
    fallback(slow, "DeadlineExceeded");
    for (const id of ids) await closed(id);
  },
  async "a healthy upstream is proxied whole"() {
    const r = await proxied(`/stall/steady?n=3&gap=5&id=${uid()}`);
    ok(r.res.status === 200 && r.res.headers.get("x-edge-deadline") === "upstream", `${r.res.status} ${r.body}`);
    ok(r.body === "0123456789abcdef".repeat(3), r.body);
  },
  async "a resumable read: an event stream that stalls mid-event reaches the client whole, each event once, resumed with Last-Event-ID"() {
    const key = uid();
    const upstream = `${fixture}/resume/sse?key=${key}&events=40&stallAfter=20`;
    const res = await fetch(`${base}/resume?upstream=${encodeURIComponent(upstream)}`, { signal: AbortSignal.timeout(5_000) });
    const body = await res.text();
    ok(res.status === 200 && res.headers.get("content-type") === "text/event-stream", `${res.status} ${res.headers.get("content-type")}: ${body}`);
    const ids = [...body.matchAll(/data: \{"i":(\d+)\}/g)].map((m) => Number(m[1]));
    ok(ids.length === 40 && ids.every((id, i) => id === i + 1), `events ${ids.join(",")}`);
    // Whole events only: the half of event 21 the first connection sent never reached the client.
    const partial = body.split("\n\n").filter(Boolean).find((e) => !/^(: connected|id: (\d+)\nevent: token\ndata: \{"i":\2\})$/.test(e));
    ok(partial === undefined, `part of an event reached the client: ${JSON.stringify(partial)}`);
    const seen = await (await fetch(`${fixture}/resume/seen?key=${key}`)).json();
    ok(seen.connections.length === 2, `connections ${JSON.stringify(seen.connections)}`);
    ok(seen.connections[0].lastEventId === null && seen.connections[1].lastEventId === "20", `Last-Event-ID sent: ${JSON.stringify(seen.connections.map((c) => c.lastEventId))}`);
  },
  async "a resumable read: a connection that fails before the first byte is made again, unseen"() {
    const key = uid();
    const upstream = `${fixture}/resume/sse?key=${key}&events=5&fail=close`;
    const res = await fetch(`${base}/resume?upstream=${encodeURIComponent(upstream)}`, { signal: AbortSignal.timeout(5_000) });
    const body = await res.text();
    const ids = [...body.matchAll(/data: \{"i":(\d+)\}/g)].map((m) => Number(m[1]));
    ok(res.status === 200 && ids.join(",") === "1,2,3,4,5", `${res.status}: ${body}`);
    const seen = await (await fetch(`${fixture}/resume/seen?key=${key}`)).json();
    ok(seen.connections.length === 2 && seen.connections[0].status === 0, `connections ${JSON.stringify(seen.connections)}`);
  },
  async "a resumable read that fails after the 200 ends the event stream with event: error, our words and a code"() {
    const key = uid();
    // 100 events 30 ms apart: the Worker's deadline passes in the middle of the answer.
    const upstream = `${fixture}/resume/sse?key=${key}&events=100&gap=30`;
    const res = await fetch(`${base}/resume?upstream=${encodeURIComponent(upstream)}`, { signal: AbortSignal.timeout(5_000) });
    ok(res.status === 200, `status ${res.status}`);
    let body;
    try {
      body = await res.text();
    } catch (error) {
      throw new Error(`the body broke instead of ending with event: error (${error?.cause?.message ?? error})`);
    }
    const ids = [...body.matchAll(/data: \{"i":(\d+)\}/g)].map((m) => Number(m[1]));
    ok(ids.length > 0 && ids.length < 100 && ids.every((id, i) => id === i + 1), `events ${ids.join(",")}`);
    const last = /\n\nevent: error\ndata: (\{.*\})\n\n$/.exec(body);
    ok(last, `the body does not end with an error event: ${JSON.stringify(body.slice(-200))}`);
    const data = JSON.parse(last[1]);
    ok(data.fallback === true && data.code === "DEADLINE_EXCEEDED", `error event ${last[1]}`);
    ok(/^upstream did not finish within the deadline/.test(data.reason) && !data.reason.includes("127.0.0.1"), `reason ${data.reason}`);
  },
  async "a request without an upstream is a 400 naming the parameter"() {
    const res = await fetch(base);
    ok(res.status === 400 && /upstream/.test(await res.text()), `status ${res.status}`);
  },
  async "no expected failure is logged by workerd as an uncaught exception (stalls, deadlines, fallbacks)"() {
    // Every case above ran in this workerd: stalls and deadlines answered by the fallback or an error event.
    await new Promise((r) => setTimeout(r, 200)); // the last request's log lines reach the pipe
    const uncaught = workerdLog.split("\n").filter((line) => /uncaught/i.test(line));
    ok(uncaught.length === 0, `workerd logged:\n${uncaught.slice(0, 5).join("\n")}`);
  },
};

/** What the example's workerd printed (stdout and stderr), for the case above; also passed through to stderr. */
let workerdLog = "";

// Each variant: build with its flags, serve, run every case. With
// no_global_navigator there is no `navigator`, and workerd must still be
// recognised (the concurrent case fails if deadlines then share a timer).
let base;
for (const flags of variants) {
  const suffix = flags.length ? ` [${flags.join(", ")}]` : "";
  const port = await new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
  execFileSync(process.execPath, [join(example, "build.mjs"), out], {
    stdio: ["ignore", "inherit", "inherit"],
    env: { ...process.env, PORT: String(port), COMPATIBILITY_FLAGS: flags.join(","), CARGO_TARGET_DIR: join(root, "target/rust-worker") },
  });
  const quotaPort = await new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
  const quotaOut = join(root, "test-output/workerd-quota");
  buildQuota(quotaOut, quotaPort, flags);
  const bookPort = await new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
  const bookOut = join(root, "test-output/workerd-book");
  const bookDisk = mkdtempSync(join(tmpdir(), "edge-deadline-rust-book-"));
  buildBook(bookOut, bookPort, flags, bookDisk);
  workerdLog = "";
  const child = spawn(workerd, ["serve", join(out, "config.capnp")], { stdio: ["ignore", "pipe", "pipe"] });
  for (const pipe of [child.stdout, child.stderr]) {
    pipe.on("data", (d) => {
      workerdLog += d;
      process.stderr.write(d);
    });
  }
  const quota = spawn(workerd, ["serve", join(quotaOut, "config.capnp")], { stdio: ["ignore", "inherit", "inherit"] });
  const book = spawn(workerd, ["serve", join(bookOut, "config.capnp")], { stdio: ["ignore", "inherit", "inherit"] });
  base = `http://127.0.0.1:${port}`;
  quotaBase = `http://127.0.0.1:${quotaPort}`;
  bookBase = `http://127.0.0.1:${bookPort}`;
  for (const url of [base, quotaBase, bookBase]) {
    for (let i = 0; i < 100; i++) {
      try {
        await fetch(`${url}/?n=1`, { signal: AbortSignal.timeout(2_000) });
        break;
      } catch {
        await new Promise((r) => setTimeout(r, 100)); // waiting for workerd to listen: no event to wait on
      }
    }
  }
  try {
    for (const [name, run] of Object.entries(cases)) {
      let timer;
      try {
        // A case that hangs (a request nobody answers) fails instead of stalling the suite.
        const limit = new Promise((_, reject) => (timer = setTimeout(() => reject(new Error("no answer within 20 s")), 20_000)));
        await Promise.race([run(), limit]);
        report.passed++;
        console.log(`ok  ${name}${suffix}`);
      } catch (error) {
        report.failed++;
        report.failures.push({ name: `${name}${suffix}`, error: String(error?.stack ?? error) });
        console.log(`FAIL ${name}${suffix}: ${error?.message}`);
      } finally {
        clearTimeout(timer);
      }
    }
  } finally {
    child.kill();
    quota.kill();
    book.kill();
    rmSync(bookDisk, { recursive: true, force: true });
  }
}
console.log(JSON.stringify(report));
process.exit(0); // a hung case may leave a fetch pending
