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
import { jsBlockUnder } from "../support/markdown.mjs";
import { assert, benchFlush, encodeFlush, fuzzEndpoint, hostileFlushes, runner, sansDate, tableProblem } from "./support.js";

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

/**
 * The two workers and the Durable Object namespace on local disk (`disk`); also bench/fleet-workerd.mjs's.
 * With `recipe` (a file in `work`: the recipe's code as printed), two more: the recipe's Worker, its
 * `TIMEOUTS` bound to the aggregator's namespace and `PROFILE` to tests/fleet/profile-worker.js, both
 * reached through the isolates' Worker (`/recipe`, `/profile/…`). The recipe imports the package by its
 * name: `edge-deadline` and `edge-deadline/derive` are modules of that name that re-export pkg/'s workerd entries.
 */
/** The aggregator Worker's secrets in the suite (its HTTP endpoint's bearer tokens). */
export const SECRETS = { read: "read-0123456789abcdef", write: "write-fedcba9876543210" };

/**
 * Mutated flushes the HTTP fuzz sends to each engine (`FLEET_FUZZ_COUNT`; the suite's default fits CI,
 * scripts/fleet-fuzz.mjs runs 100 000), and its seed (`FLEET_FUZZ_SEED`).
 */
export const FUZZ = { count: Number(process.env.FLEET_FUZZ_COUNT ?? 3000), seed: Number(process.env.FLEET_FUZZ_SEED ?? 1) };

/**
 * The HTTP fuzz of the workerd aggregator, as an outsider with the write token reaches it (`base`: its public
 * route, an object of its own): `FUZZ.count` mutated flushes, then its table, as JSON without the date.
 */
export async function fuzzWorkerd(t, base) {
  let table;
  await t.check(`${FUZZ.count} seeded mutated flushes (seed ${FUZZ.seed}) POSTed through HTTP with the write token: each answered 204, 200, 400, 413 or 429 with a code, never a 5xx, and the table reads after every 1 000`, async () => {
    const bearer = (token) => ({ authorization: `Bearer ${token}` });
    // No answer within 30 s fails the check (with the flush that got none), rather than waiting forever.
    const read = async () => (await fetch(`${base}/table`, { headers: bearer(SECRETS.read), signal: AbortSignal.timeout(30_000) })).json();
    const t0 = Date.now();
    const statuses = await fuzzEndpoint({
      LatencySketch,
      seed: FUZZ.seed,
      count: FUZZ.count,
      post: async (body) => {
        const r = await fetch(`${base}/flush`, { method: "POST", headers: bearer(SECRETS.write), body, signal: AbortSignal.timeout(30_000) });
        return { status: r.status, body: await r.text() };
      },
      table: read,
      progress: process.env.FLEET_FUZZ_PROGRESS ? (n, statuses) => console.error(`workerd fuzz: ${n} flushes, ${Date.now() - t0} ms, ${JSON.stringify(statuses)}`) : undefined,
    });
    table = await read();
    console.error(`fleet fuzz (workerd, Durable Object): ${FUZZ.count} flushes in ${Date.now() - t0} ms, statuses ${JSON.stringify(statuses)}, ${Object.keys(table.buckets).length} rows`);
  });
  return table && sansDate(table);
}

export function config(port, disk, work, recipe, publicPort) {
  const pkg = readdirSync(join(root, "pkg")).filter((f) => /\.(js|wasm)$/.test(f) && !/deno\.js$/.test(f)).map((f) => `pkg/${f}`);
  const embed = (f) => `(name = "${f}", ${f.endsWith(".wasm") ? "wasm" : "esModule"} = embed "${relative(work, join(root, f))}")`;
  const mods = (main) => [main, "tests/fleet/support.js", ...pkg].map(embed).join(",\n    ");
  const recipeWorkers = !recipe
    ? ""
    : `
const recipe :Workerd.Worker = (
  modules = [
    (name = "recipe.js", esModule = embed "${recipe}"),
    (name = "edge-deadline", esModule = "export * from \\"./pkg/workerd.js\\";"),
    (name = "edge-deadline/derive", esModule = "export * from \\"../pkg/derive-workerd.js\\";"),
    (name = "edge-deadline/durable", esModule = "export * from \\"../pkg/durable-workerd.js\\";"),
    ${pkg.map(embed).join(",\n    ")}
  ],
  compatibilityDate = "2026-11-24",
  bindings = [
    (name = "TIMEOUTS", durableObjectNamespace = (className = "TimeoutAggregator", serviceName = "agg")),
    (name = "PROFILE", service = "profile"),
  ],
);
const profile :Workerd.Worker = (
  modules = [ ${mods("tests/fleet/profile-worker.js")} ],
  compatibilityDate = "2026-11-24",
);
`;
  return `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [
    (name = "isolates", worker = .isolates),
    (name = "agg", worker = .agg),
    (name = "do-disk", disk = (path = "${disk}", writable = true)),${recipe ? `\n    (name = "recipe", worker = .recipe),\n    (name = "profile", worker = .profile),` : ""}
  ],
  sockets = [
    (name = "http", address = "127.0.0.1:${port}", http = (), service = "isolates"),${publicPort ? `\n    (name = "public", address = "127.0.0.1:${publicPort}", http = (), service = "agg"),` : ""}
  ],
);
const agg :Workerd.Worker = (
  modules = [ ${mods("tests/fleet/agg-worker.js")} ],
  compatibilityDate = "2026-11-24",
  durableObjectNamespaces = [
    (className = "TimeoutAggregator", uniqueKey = "edge-deadline-fleet-test"),
    (className = "CountingAggregator", uniqueKey = "edge-deadline-fleet-counted"),
    (className = "FlakyAggregator", uniqueKey = "edge-deadline-fleet-flaky"),
    (className = "SmallAggregator", uniqueKey = "edge-deadline-fleet-small"),
  ],
  durableObjectStorage = (localDisk = "do-disk"),
  bindings = [
    (name = "AGG", durableObjectNamespace = "TimeoutAggregator"),
    (name = "TIMEOUTS_READ_TOKEN", text = "${SECRETS.read}"),
    (name = "TIMEOUTS_WRITE_TOKEN", text = "${SECRETS.write}"),
  ],
);
const isolates :Workerd.Worker = (
  modules = [ ${mods("tests/fleet/isolates-worker.js")} ],
  compatibilityDate = "2026-11-24",
  bindings = [
    (name = "AGG", service = "agg"),
    (name = "TIMEOUTS", durableObjectNamespace = (className = "TimeoutAggregator", serviceName = "agg")),
    (name = "COUNTED", durableObjectNamespace = (className = "CountingAggregator", serviceName = "agg")),
    (name = "FLAKY", durableObjectNamespace = (className = "FlakyAggregator", serviceName = "agg")),
    (name = "SMALL", durableObjectNamespace = (className = "SmallAggregator", serviceName = "agg")),${recipe ? `\n    (name = "RECIPE", service = "recipe"), (name = "PROFILE", service = "profile"),` : ""}
  ],
);
${recipeWorkers}`;
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

/** Stops workerd: SIGTERM, and SIGKILL when it has not exited 5 s later (a workerd that hangs ignores SIGTERM). */
export function stop(child) {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const kill = setTimeout(() => child.kill("SIGKILL"), 5_000);
    child.once("exit", () => {
      clearTimeout(kill);
      resolve();
    });
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

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

/**
 * The fleet recipe of docs/recipes.md ("Fleet-derived timeouts in one Worker"), its code block as
 * printed, as the main module of a Worker whose TIMEOUTS is the aggregator's namespace and whose
 * PROFILE answers in 4–12 ms (tests/fleet/profile-worker.js). Real time: the recipe's book flushes
 * at most every `flushEveryMs` and reads the table every 60 s (the book's default `refreshEveryMs`),
 * so `start` drives it and `finish`, about a minute later, checks what it serves; the other checks
 * run in between.
 */
function recipeChecks(t, base) {
  const code = readFileSync(join(work, "recipe.js"), "utf8");
  const number = (name) => Number(new RegExp(`${name}: ([\\d_]+)`).exec(code)?.[1].replaceAll("_", ""));
  const fallbackMs = number("fallbackMs");
  const flushEveryMs = number("flushEveryMs");
  const refreshEveryMs = 60_000;
  const bucket = /book\.timeout\("([^"]+)"/.exec(code)?.[1];
  const probeMs = 1_000;
  let t0 = 0;
  let requests = 0;
  const call = async () => {
    requests++;
    const r = await fetch(`${base}/recipe`);
    const body = await r.text();
    assert(r.status === 200 && JSON.parse(body).name === "Ada", `recipe: ${r.status} ${body}`);
  };
  /** One request whose first call to PROFILE takes `probeMs`: when PROFILE saw each attempt begin. */
  const probe = async () => {
    assert((await fetch(`${base}/profile/_arm?delayMs=${probeMs}`)).status === 204, "arming PROFILE");
    await call();
    return (await fetch(`${base}/profile/_calls`)).json();
  };
  const row = async () => (await (await fetch(`${base}/table`)).json()).buckets[bucket];
  /** Waits until every success the recipe recorded so far is in the fleet's row (its flush runs after the response). */
  const flushed = async () => {
    for (let i = 0; i < 100 && (await row())?.n !== requests; i++) await sleep(50); // the flush lands in ctx.waitUntil: no event to wait on
    const n = (await row())?.n;
    assert(n === requests, `the fleet's row holds ${n} successes, the recipe made ${requests} calls`);
  };
  return {
    start: () =>
      t.check("the fleet recipe (docs/recipes.md) as printed: its fallback while the fleet has too few samples", async () => {
        assert(fallbackMs > probeMs && flushEveryMs > 0 && bucket, `recipe: fallbackMs ${fallbackMs}, flushEveryMs ${flushEveryMs}, bucket ${bucket}`);
        t0 = Date.now();
        await call(); // the isolate's first request: its book reads the table and sends its first flush
        const calls = await probe();
        assert(calls.length === 1, `a ${probeMs} ms call under the fallback ${fallbackMs} ms: ${calls.length} attempts`);
        // p99 is served from 1 000 successes on (derive::samples_needed): 1 100 more calls, 20 at a time.
        let next = 0;
        await Promise.all(Array.from({ length: 20 }, async () => { while (next++ < 1_100) await call(); }));
      }),
    failure: () =>
      t.check("the fleet recipe as printed: a failing upstream (500 naming its host and key, or a throw) gets 503 in our words with a code, nothing of the upstream's answer", async () => {
        for (const how of ["status", "throw"]) {
          assert((await fetch(`${base}/profile/_fail?calls=100&how=${how}`)).status === 204, "making PROFILE fail");
          try {
            const r = await fetch(`${base}/recipe`);
            const text = await r.text();
            assert(r.status === 503, `${how}: the recipe answered ${r.status} ${text.slice(0, 300)}`);
            const body = JSON.parse(text);
            assert(body.code === "PROFILE_UNAVAILABLE" && typeof body.message === "string", `${how}: ${text}`);
            for (const leak of ["db-primary", "internal", "sk-live", "ECONNREFUSED", "5432", "https://"]) {
              assert(!text.includes(leak) && ![...r.headers.values()].some((v) => v.includes(leak)), `${how}: the answer carries "${leak}": ${text}`);
            }
          } finally {
            assert((await fetch(`${base}/profile/_arm?delayMs=0`)).status === 204, "PROFILE answers again");
          }
        }
      }),
    finish: () =>
      t.check("the fleet recipe as printed: the fleet value (its first, at most ÷ maxStepFactor from the fallback) once a flush carried 1 000 successes and the table was read again", async () => {
        assert(t0 > 0, "the recipe was not started");
        await sleep(t0 + flushEveryMs + 2_000 - Date.now());
        await call(); // a flush is due: it carries every call since the first
        await flushed();
        const { timeoutMs, n } = await row();
        assert(n >= 1_000 && timeoutMs > 0 && timeoutMs < probeMs / 2, `the fleet's row: n ${n}, timeoutMs ${timeoutMs}`);
        await sleep(t0 + refreshEveryMs + 2_000 - Date.now());
        await call(); // a refresh is due: started by timeout(), awaited with the flush in ctx.waitUntil
        await flushed();
        await sleep(1_000); // the refresh runs beside that flush; a local Durable Object answers it in milliseconds
        const calls = await probe();
        // The isolate's first fleet value: at most ÷ maxStepFactor (2) from its fallback, whole ms.
        const served = Math.ceil(Math.max(timeoutMs, fallbackMs / 2));
        assert(calls.length >= 2, `a ${probeMs} ms call under a served ${served} ms: ${calls.length} attempt(s), not cut`);
        // The first attempt is cut at the served timeout; the retry starts after a backoff of at most 100 ms (the default).
        const gap = calls[1].at - calls[0].at;
        assert(gap >= served - 5 && gap <= served + 100 + 250, `the second attempt began ${gap} ms after the first; served timeout ${served} ms expected`);
        console.error(`fleet recipe: fallback ${fallbackMs} ms, the fleet's ${timeoutMs.toFixed(1)} ms (n ${n}), served ${served} ms; attempt cut after ${gap} ms`);
      }),
  };
}

async function workerdSuite() {
  const t = runner();
  const port = await freePort();
  const disk = join(work, "do");
  const { mkdirSync } = await import("node:fs");
  mkdirSync(disk);
  const file = join(work, "fleet.capnp");
  writeFileSync(join(work, "recipe.js"), jsBlockUnder(readFileSync(join(root, "docs/recipes.md"), "utf8"), "Fleet-derived timeouts in one Worker"));
  const publicPort = await freePort();
  writeFileSync(file, config(port, disk, work, "recipe.js", publicPort));
  const base = `http://127.0.0.1:${port}`;
  // The aggregator Worker's own route, as an outsider reaches it: the object's HTTP endpoint.
  const pub = `http://127.0.0.1:${publicPort}/_timeouts`;
  const bearer = (token) => ({ authorization: `Bearer ${token}` });
  const recipe = recipeChecks(t, base);
  // The CLI is built before workerd starts (the release build `cargo test --release --workspace` made), so
  // no check waits on a compiler while the server sits idle.
  execFileSync("cargo", ["build", "--release", "-q", "-p", "edge-deadline-cli"], { cwd: root, stdio: "inherit" });
  const cliBin = join(root, "target/release/edge-deadline");
  let child = await startWorkerd(port, file);
  try {
    let sim;
    let table;
    await recipe.start();
    await recipe.failure();
    await t.check("50 isolates × 2 000 requests flush through a service binding; the table matches all samples in one place", async () => {
      sim = await (await fetch(`${base}/simulate?isolates=50&requests=2000`)).json();
      assert(sim.statuses.length === 200 && sim.statuses.every((s) => s === 204), `statuses ${[...new Set(sim.statuses)]}`);
      table = await (await fetch(`${base}/table`)).json();
      assert(table.v === 1 && table.windows === 24 && table.windowMs === 3_600_000, JSON.stringify(table).slice(0, 200));
      tableMatches(table, sim.expected);
    });
    await t.check("group commit: 50 flushes in flight cost at most 10 storage writes, and every one is merged", async () => {
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
    await t.check("a window past a storage value's 128 KiB is stored in chunks that each put at most 128 KiB, and reads back after a restart", async () => {
      // 30 flushes of 20 new buckets: a window of 600 buckets, past 128 KiB.
      for (let f = 0; f < 30; f++) {
        const r = await fetch(`${base}/counted/flush`, { method: "POST", body: benchFlush(LatencySketch, 20, 100, `wide${f}`), signal: AbortSignal.timeout(20_000) });
        assert(r.status === 204, `flush ${f}: ${r.status} ${await r.text()}`);
      }
      const { largestValue } = await (await fetch(`${base}/counted/writes`)).json();
      assert(largestValue > 0 && largestValue <= 128 * 1024, `a put value makes the serializer write ${largestValue} bytes; a value holds at most 131072`);
      const table = await (await fetch(`${base}/counted/table`, { signal: AbortSignal.timeout(20_000) })).json();
      assert(table.buckets["wide29-19"]?.n === 100, `the last bucket: ${JSON.stringify(table.buckets["wide29-19"])}`);
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
    await t.check("an outsider without the tokens: POST /flush and GET /table are 401 and change nothing; each token opens only its own route", async () => {
      const before = sansDate(await (await fetch(`${base}/table`)).json());
      const flush = encodeFlush(0.01, [{ name: "outsider", inForceMs: 1e300, timeouts: 50_000 }]);
      const tries = [
        ["no token", {}],
        ["a wrong token", bearer("guess")],
        ["a prefix of the write token", bearer(SECRETS.write.slice(0, -1))],
        ["the read token", bearer(SECRETS.read)],
        ["the write token as Basic", { authorization: `Basic ${SECRETS.write}` }],
      ];
      for (const [what, headers] of tries) {
        const r = await fetch(`${pub}/flush`, { method: "POST", headers, body: flush });
        const body = await r.json();
        assert(r.status === 401 && body.code === "UNAUTHORIZED", `POST /flush with ${what}: ${r.status} ${JSON.stringify(body)}`);
        assert(!JSON.stringify(body).includes(SECRETS.write.slice(0, 8)), `${what}: the answer names the token`);
      }
      for (const [what, headers] of [["no token", {}], ["a wrong token", bearer("guess")], ["the write token", bearer(SECRETS.write)]]) {
        const r = await fetch(`${pub}/table`, { headers });
        const text = await r.text();
        assert(r.status === 401 && !text.includes("chat"), `GET /table with ${what}: ${r.status} ${text.slice(0, 200)}`);
      }
      assert(sansDate(await (await fetch(`${base}/table`)).json()) === before, "the table changed");
      // With the right tokens, the same routes answer (a flush of a bucket of its own, read back through the endpoint).
      const ok = encodeFlush(0.01, [{ name: "with-token", timeouts: 1 }]);
      const w = await fetch(`${pub}/flush`, { method: "POST", headers: bearer(SECRETS.write), body: ok });
      assert(w.status === 204, `POST /flush with the write token: ${w.status}`);
      const r = await fetch(`${pub}/table`, { headers: bearer(SECRETS.read) });
      const table = await r.json();
      assert(r.status === 200 && table.buckets["with-token"]?.timeouts === 1 && table.buckets.chat, `GET /table with the read token: ${r.status}`);
    });
    const fuzzBase = `http://127.0.0.1:${publicPort}/fuzz`;
    const fuzzTable = await fuzzWorkerd(t, fuzzBase);
    await t.check("a storage write that fails (sync() rejects once) counts nothing: n equals the calls made, also after a restart", async () => {
      const flush = encodeFlush(0.01, [{ name: "flaky", timeouts: 1_000 }]);
      assert((await fetch(`${base}/flaky/arm`)).status === 204, "arming");
      const first = await fetch(`${base}/flaky/flush`, { method: "POST", body: flush });
      const body = await first.json();
      assert(first.status === 503 && body.code === "STORE_FAILED", `the flush whose write failed: ${first.status} ${JSON.stringify(body)}`);
      assert(!JSON.stringify(body).includes("/var/lib"), `the storage's error text reached the client: ${JSON.stringify(body)}`);
      const none = await (await fetch(`${base}/flaky/table`)).json();
      assert(none.buckets.flaky === undefined, `after the failed write the table holds ${JSON.stringify(none.buckets.flaky)}`);
      // The sender keeps what was refused and sends it again (the book does): now stored once.
      const again = await fetch(`${base}/flaky/flush`, { method: "POST", body: flush });
      assert(again.status === 204, `the flush sent again: ${again.status}`);
      const row = (await (await fetch(`${base}/flaky/table`)).json()).buckets.flaky;
      assert(row?.timeouts === 1_000, `1 000 timeouts recorded, the table says ${row?.timeouts}`);
    });
    await t.check("junk cannot lock out honest data: a full window (1 024 buckets) still merges the buckets it has and refuses only new names (200 naming them); a bucket past the per-flush count refuses only itself", async () => {
      const flush = (buckets) => fetch(`${base}/full/flush`, { method: "POST", body: encodeFlush(0.01, buckets) });
      // 1 022 junk names and two honest ones fill the window's 1 024.
      const junk = Array.from({ length: 1_022 }, (_, i) => ({ name: `junk-${i}`, timeouts: 1 }));
      const first = await flush([...junk, { name: "GET /a", timeouts: 1 }, { name: "GET /b", timeouts: 1 }]);
      assert(first.status === 204, `filling the window: ${first.status}`);
      const honest = await flush([{ name: "GET /a", timeouts: 2 }, { name: "GET /new", timeouts: 5 }, { name: "GET /b", timeouts: 50_000_000 }]);
      const body = await honest.json();
      assert(honest.status === 200, `a flush with one new name and one saturated bucket: ${honest.status} ${JSON.stringify(body)}`);
      const codes = Object.fromEntries(body.refused.map((r) => [r.bucket, r.code]));
      assert(codes["GET /new"] === "TOO_MANY_BUCKETS" && codes["GET /b"] === "TOO_MANY_CALLS" && !("GET /a" in codes), JSON.stringify(body.refused));
      const table = await (await fetch(`${base}/full/table`)).json();
      assert(table.buckets["GET /a"]?.timeouts === 3, `the bucket the window has was merged: ${JSON.stringify(table.buckets["GET /a"])}`);
      assert(table.buckets["GET /new"] === undefined, "the refused name is not in the table");
      assert(table.buckets["GET /b"]?.timeouts === 1, `the bucket past the count kept what it had: ${JSON.stringify(table.buckets["GET /b"])}`);
    });
    await t.check("a window at its byte budget (maxWindowBytes) refuses further flushes with 429 WINDOW_FULL, never a 5xx, and changes nothing", async () => {
      const answers = [];
      for (let f = 0; f < 12; f++) {
        const r = await fetch(`${base}/small/flush`, { method: "POST", body: benchFlush(LatencySketch, 20, 100, `b${f}`) });
        answers.push([r.status, r.status === 204 ? null : await r.json(), r.headers.get("retry-after")]);
      }
      const taken = answers.filter(([s]) => s === 204).length;
      const refused = answers.filter(([s]) => s !== 204);
      assert(taken >= 2 && refused.length >= 1, `taken ${taken}, refused ${refused.length}`);
      for (const [s, body, retryAfter] of refused) assert(s === 429 && body.code === "WINDOW_FULL" && Number(retryAfter) >= 1, `refused: ${s} ${JSON.stringify(body)} retry-after ${retryAfter}`);
      const table = await (await fetch(`${base}/small/table`)).json();
      assert(Object.keys(table.buckets).length === taken * 20, `${Object.keys(table.buckets).length} rows for ${taken} flushes taken`);
    });
    await t.check("the CLI's derive --aggregator URL --bearer-token-env VAR reads and prints the same table from the endpoint", async () => {
      const served = await (await fetch(`${base}/table`)).json();
      const env = { ...process.env, FLEET_READ_TOKEN: SECRETS.read, FLEET_WRITE_TOKEN: SECRETS.write };
      const cli = (...args) => execFileSync(cliBin, ["derive", "--aggregator", pub, "--bearer-token-env", "FLEET_READ_TOKEN", ...args], { cwd: root, env, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
      let refused = "";
      try {
        execFileSync(cliBin, ["derive", "--aggregator", pub, "--bearer-token-env", "FLEET_WRITE_TOKEN"], { cwd: root, env, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
      } catch (e) {
        refused = String(e.stderr);
      }
      assert(/401/.test(refused), `the CLI with the write token: ${refused || "not refused"}`);
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
    await recipe.finish();
    const damagedFlush = (name) => {
      const sketch = new LatencySketch();
      for (let i = 1; i <= 40; i++) sketch.add(i * 5);
      return fetch(`${base}/damaged/flush`, { method: "POST", body: encodeFlush(0.01, [{ name, sketch }]) });
    };
    const damagedBefore = (await damagedFlush("before")).status;
    const aged = await (await fetch(`${base}/damaged/plant?hoursAgo=30`)).json();
    const damage = await (await fetch(`${base}/damaged/damage`)).json();
    await t.check("a restart of workerd loses nothing that was flushed", async () => {
      const before = sansDate(await (await fetch(`${base}/table`)).json());
      await stop(child);
      child = await startWorkerd(port, file);
      const after = await (await fetch(`${base}/table`)).json();
      assert(sansDate(after) === before, "the table differs after the restart");
      tableMatches(after, sim.expected);
      const counted = await (await fetch(`${base}/counted/table`)).json();
      assert(Object.keys(counted.buckets).filter((b) => b.startsWith("wide")).length === 600, "the wide window read back after the restart");
      const fuzzAfter = await (await fetch(`${fuzzBase}/table`, { headers: bearer(SECRETS.read) })).json();
      assert(fuzzTable === undefined || sansDate(fuzzAfter) === fuzzTable, "the fuzzed object's table differs after the restart");
      assert(tableProblem(fuzzAfter) === "", `the fuzzed object's table after the restart: ${tableProblem(fuzzAfter)}`);
      // The derivation of a reader: the CLI reads the fuzzed table and derives from it.
      const out = JSON.parse(execFileSync(cliBin, ["derive", "--aggregator", fuzzBase, "--bearer-token-env", "FLEET_READ_TOKEN", "--json"], { cwd: root, env: { ...process.env, FLEET_READ_TOKEN: SECRETS.read }, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] }));
      assert(out.buckets.length === Object.keys(fuzzAfter.buckets).length, `the CLI derived ${out.buckets.length} buckets of ${Object.keys(fuzzAfter.buckets).length}`);
      const flaky = (await (await fetch(`${base}/flaky/table`)).json()).buckets.flaky;
      assert(flaky?.timeouts === 1_000, `after the restart the flaky object holds ${flaky?.timeouts} timeouts, 1 000 were recorded`);
    });
    await t.check("a stored window that does not read back is never erased: after a restart a flush to its hour starts afresh, the damaged chunks are kept aside (q:), and the table serves the new flush", async () => {
      assert(damagedBefore === 204, `the first flush: ${damagedBefore}`);
      const index = damage.key.split(":")[1];
      const stored = Object.fromEntries(await (await fetch(`${base}/damaged/keys?prefix=w:${index}`)).json());
      assert((await damagedFlush("after")).status === 204, "a flush to the damaged window's hour is taken");
      const aside = Object.fromEntries(await (await fetch(`${base}/damaged/keys?prefix=q:${index}`)).json());
      assert(aside[`q:${index}`] === stored[`w:${index}`] && aside[`q:${index}:0`] === damage.bytes, `set aside: ${JSON.stringify(aside).slice(0, 300)}`);
      for (let i = 1; i < stored[`w:${index}`]; i++) assert(aside[`q:${index}:${i}`] === stored[`w:${index}:${i}`], `chunk ${i} set aside unchanged`);
      const table = await (await fetch(`${base}/damaged/table`)).json();
      assert(table.buckets.after?.n === 40 && !table.buckets.before, `the table: ${JSON.stringify(Object.keys(table.buckets))}`);
    });
    await t.check("a window that aged out while the object was not running has its keys deleted by the next write (storage stays within the windows kept)", async () => {
      const left = await (await fetch(`${base}/damaged/keys?prefix=w:${aged}`)).json();
      assert(left.length === 0, `${left.length} keys of the window ${aged} (30 hours old) are still stored`);
    });
  } finally {
    await stop(child);
  }
  const version = JSON.parse(readFileSync(join(root, "node_modules/workerd/package.json"), "utf8")).version;
  return t.report(`fleet: workerd ${version} (Durable Object, local disk)`);
}

/** tests/fleet/deno-kv.js in Deno, its databases in `dir`; also scripts/fleet-fuzz.mjs's. */
export function denoSuite(dir = work) {
  return new Promise((resolve) => {
    const child = spawn(bin.deno, ["run", "--unstable-kv", `--allow-read=${root},${dir}`, `--allow-write=${dir}`, "--allow-net=127.0.0.1", "tests/fleet/deno-kv.js", dir, String(FUZZ.count), String(FUZZ.seed)], {
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

/**
 * The Deno recipe of docs/recipes.md ("Deno: Deno KV"), its code block as printed, in a directory of its
 * own with the flags the recipe names (`--unstable-kv --allow-read=./timeouts.kv --allow-write=./timeouts.kv`,
 * nothing else), the package's names mapped to pkg/ by an import map; a driver appended to the block records
 * 1 000 calls into its book, flushes, and reads the table back from the same database.
 */
async function denoRecipeSuite() {
  const t = runner();
  await t.check("the Deno KV recipe (docs/recipes.md) as printed, with its permissions: the book's flush reaches the table in process", async () => {
    const dir = join(work, "deno-recipe");
    const { mkdirSync, cpSync } = await import("node:fs");
    mkdirSync(dir);
    // The package as a user's project holds it: pkg/ inside the project, readable with --allow-read of the project.
    cpSync(join(root, "pkg"), join(dir, "pkg"), { recursive: true });
    const code = jsBlockUnder(readFileSync(join(root, "docs/recipes.md"), "utf8"), "Deno: Deno KV");
    const driver = `
for (let i = 0; i < 1000; i++) book.record("GET /profile", 20 + (i % 50), "ok");
const sent = await book.flush();
const row = (await agg.table()).buckets["GET /profile"];
console.log(JSON.stringify({ sent, n: row?.n }));
`;
    writeFileSync(join(dir, "main.js"), code + driver);
    writeFileSync(join(dir, "import_map.json"), JSON.stringify({ imports: { "edge-deadline/durable": "./pkg/durable-deno.js", "edge-deadline/derive": "./pkg/derive-deno.js" } }));
    const flags = /--unstable-kv --allow-read=\.\/timeouts\.kv --allow-write=\.\/timeouts\.kv/.exec(readFileSync(join(root, "docs/recipes.md"), "utf8"));
    assert(flags, "the recipe names its flags: deno run --unstable-kv --allow-read=./timeouts.kv --allow-write=./timeouts.kv");
    const out = execFileSync(bin.deno, ["run", "--unstable-kv", "--allow-read=./timeouts.kv", "--allow-write=./timeouts.kv", "--import-map=import_map.json", "main.js"], {
      cwd: dir,
      env: { ...process.env, DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1", DENO_DIR: join(root, "test-output/deno-cache") },
      encoding: "utf8",
      stdio: ["ignore", "pipe", "inherit"],
    });
    const last = JSON.parse(out.trim().split("\n").pop());
    assert(last.sent.sent === 1 && last.n === 1000, `the recipe's book flushed ${JSON.stringify(last.sent)}, the table's n ${last.n}`);
  });
  return t.report(`fleet: the Deno KV recipe as printed`);
}

if (main) try {
  for (const suite of [workerdSuite, denoSuite, denoRecipeSuite]) {
    const report = await suite(work);
    console.log(JSON.stringify(report));
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
