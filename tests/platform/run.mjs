// Deadlines and the Workers platform, in real workerd services (the JS suite's
// request cases cover the same API in every runtime; these need what only a
// Workers runtime has): the incoming request's signal with enable_request_signal
// on and off, a fetch through a service binding carrying the propagation
// headers, a deadline passed over JS RPC to a WorkerEntrypoint, and work after
// the response cut by its background deadline. Two services, "caller" (on a
// socket) and "callee" (bound to it twice), one module (tests/platform/worker.js,
// bundled with the package by esbuild), per configuration. Prints one JSON
// report line.
import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { createServer } from "node:http";
import { freePort } from "../package/lib.mjs";
import { jsBlockUnder } from "../support/markdown.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const out = join(root, "test-output/platform");
mkdirSync(out, { recursive: true });
const workerd = join(root, "node_modules/@cloudflare/workerd-linux-64/bin/workerd");
const version = JSON.parse(readFileSync(join(root, "node_modules/workerd/package.json"), "utf8")).version;

// enable_request_signal became the default at 2026-11-17 (this workerd says so when it is set explicitly then).
const variants = [
  { label: "2026-11-24 (request signal on by default)", date: "2026-11-24", flags: [], signal: true },
  { label: "2026-11-24 + disable_request_signal", date: "2026-11-24", flags: ["disable_request_signal"], signal: false },
  { label: "2026-04-01 (request signal off by default)", date: "2026-04-01", flags: [], signal: false },
  { label: "2026-04-01 + enable_request_signal", date: "2026-04-01", flags: ["enable_request_signal"], signal: true },
];

function config({ port, date, flags }) {
  const worker = (bindings) => `(
  modules = [ (name = "worker.js", esModule = embed "worker.js"), (name = "edge_deadline_bg.wasm", wasm = embed "../../pkg/edge_deadline_bg.wasm") ],
  compatibilityDate = "${date}",
  compatibilityFlags = [${flags.map((f) => JSON.stringify(f)).join(", ")}],${bindings}
)`;
  return `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [ (name = "caller", worker = .caller), (name = "callee", worker = .callee) ],
  sockets = [ (name = "http", address = "127.0.0.1:${port}", http = (), service = "caller") ],
);
const caller :Workerd.Worker = ${worker(`
  bindings = [
    (name = "CALLEE", service = "callee"),
    (name = "RPC", service = (name = "callee", entrypoint = "Callee")),
  ],`)};
const callee :Workerd.Worker = ${worker("")};
`;
}

const report = { runtime: `platform (workerd ${version}, two services)`, passed: 0, failed: 0, skipped: 0, failures: [] };
async function check(name, fn) {
  try {
    await fn();
    report.passed++;
  } catch (error) {
    report.failed++;
    report.failures.push({ name, error: String(error?.stack ?? error) });
  }
}
function assert(value, message) {
  if (!value) throw new Error(message);
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

await build({
  entryPoints: [join(root, "tests/platform/worker.js")],
  bundle: true,
  format: "esm",
  platform: "neutral",
  outfile: join(out, "worker.js"),
  external: ["*.wasm", "cloudflare:workers"],
  logLevel: "error", // wasm-bindgen's glue repeats an import key: harmless, and not ours to fix
});

for (const v of variants) {
  const port = await freePort();
  const file = join(out, "workerd.capnp");
  writeFileSync(file, config({ port, ...v }));
  const child = spawn(workerd, ["serve", file], { cwd: out, stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  const base = `http://127.0.0.1:${port}`;
  try {
    for (let i = 0; i < 100; i++) {
      try {
        await (await fetch(`${base}/log`)).text();
        break;
      } catch {
        await sleep(100); // waiting for workerd to listen: no event to wait on
      }
    }
    const get = async (path, init) => (await fetch(base + path, init)).json();

    await check(`${v.label}: the client leaves mid-stream: ${v.signal ? "the deadline aborts with the client's reason, limit client" : "no request signal, so the deadline stays quiet"}`, async () => {
      const client = new AbortController();
      const res = await fetch(`${base}/client-left`, { signal: client.signal });
      const reader = res.body.getReader();
      await reader.read();
      client.abort();
      await reader.read().catch(() => {});
      await sleep(400);
      const log = await get("/log");
      const aborted = log.find((e) => e.event === "aborted");
      if (v.signal) {
        assert(aborted, `the deadline's signal aborted: ${JSON.stringify(log)}`);
        assert(aborted.limit === "client" && aborted.reason === "AbortError", `with the client's reason: ${JSON.stringify(aborted)}`);
      } else {
        assert(!aborted, `no abort without the flag: ${JSON.stringify(log)}`);
        assert(log.some((e) => e.event === "write failed" && e.limit === "budget"), `the stream's writes failed, the deadline untouched: ${JSON.stringify(log)}`);
      }
    });

    await check(`${v.label}: a fetch through a service binding carries the caller's remaining budget`, async () => {
      const { caller, callee } = await get("/binding", { headers: { "edge-deadline-remaining-ms": "1200" } });
      assert(caller.limit === "caller" && caller.remaining <= 1_200, `the caller's own caller set it: ${JSON.stringify(caller)}`);
      assert(callee.limit === "caller", `the callee's deadline came from the header: ${JSON.stringify(callee)}`);
      assert(callee.remaining <= 1_200 && callee.remaining > 1_000, `the callee read what was left (≤ 1200 ms, not its own 10 s): ${JSON.stringify(callee)}`);
      assert(callee.remaining >= caller.remaining, `read before the caller's answer: ${JSON.stringify({ caller, callee })}`);
    });

    await check(`${v.label}: JS RPC: the deadline crosses as toWire(), capped, validated, and ends the callee's work`, async () => {
      const { wire, seen, waited, refused, spent } = await get("/rpc?budget=800");
      assert(wire.limit === "budget" && wire.reserveMs === 100 && wire.remainingMs <= 700 && wire.remainingMs > 500, `the wire: ${JSON.stringify(wire)}`);
      assert(seen.limit === "budget" && seen.remaining <= wire.remainingMs && seen.remaining > 500, `the callee read it: ${JSON.stringify(seen)}`);
      assert(waited.branded && waited.limit === "budget" && waited.afterMs <= 750, `the callee's work ended at the caller's deadline: ${JSON.stringify(waited)}`);
      assert(refused && /wire\.limit/.test(refused.message), `a bad wire is refused, naming the field: ${JSON.stringify(refused)}`);
      assert(spent.expired && !("error" in spent), `a spent wire is a shortage, not an error: ${JSON.stringify(spent)}`);
    });

    await check(`${v.label}: afterResponse: the work starts after the response and is cut by its deadline (limit background), marginMs before the cap`, async () => {
      const res = await fetch(`${base}/background`);
      assert((await res.text()) === "answered", "the response is the handler's");
      await sleep(700);
      const log = await get("/log");
      const started = log.find((e) => e.event === "background started");
      const cut = log.find((e) => e.event === "background cut");
      assert(started && started.limit === "background" && started.remaining <= 300 && started.remaining > 250, `started with 400 − 100 ms: ${JSON.stringify(log)}`);
      assert(cut && cut.branded && cut.limit === "background", `cut by its own deadline, with its reason: ${JSON.stringify(log)}`);
      assert(cut.at - started.at >= 299 && cut.at - started.at < 450, `cut 300 ms after it started: ${JSON.stringify(log)}`);
    });
  } finally {
    child.kill();
  }
  if (/Uncaught|Error/.test(stderr) && !/disconnected/.test(stderr)) {
    await check(`${v.label}: no uncaught errors in workerd's log`, () => assert(false, stderr));
  }
}
// ---- docs/recipes.md's Workers recipes, as printed, each a Worker of its own -------------------
const recipes = readFileSync(join(root, "docs/recipes.md"), "utf8");
const bundled = {};
for (const [name, heading] of [["forRequest", "A deadline for each request in a Worker"], ["afterResponse", "Work after the response in a Worker"], ["callee", "The callee"], ["caller", "The caller"]]) {
  writeFileSync(join(out, `recipe-${name}.src.js`), jsBlockUnder(recipes, heading));
  await build({
    entryPoints: [join(out, `recipe-${name}.src.js`)],
    bundle: true,
    format: "esm",
    platform: "neutral",
    outfile: join(out, `recipe-${name}.js`),
    external: ["*.wasm", "cloudflare:workers"],
    alias: { "edge-deadline": join(root, "pkg/workerd.js") },
    logLevel: "error",
  });
  bundled[name] = `recipe-${name}.js`;
}
// A local upstream: /slow answers after 500 ms; /collect records what it is sent.
const collected = [];
const upstream = createServer((req, res) => {
  let body = "";
  req.on("data", (d) => (body += d));
  req.on("end", () => {
    if (req.url === "/collect") collected.push(body);
    setTimeout(() => res.end("upstream says hi"), req.url === "/slow" ? 500 : 0);
  });
});
await new Promise((r) => upstream.listen(0, "127.0.0.1", r));
const up = `http://127.0.0.1:${upstream.address().port}`;
{
  const ports = { forRequest: await freePort(), afterResponse: await freePort(), caller: await freePort() };
  const worker = (module, bindings = "") => `(
  modules = [ (name = "worker.js", esModule = embed "${module}"), (name = "edge_deadline_bg.wasm", wasm = embed "../../pkg/edge_deadline_bg.wasm") ],
  compatibilityDate = "2026-11-24",
  globalOutbound = "loopback",
  bindings = [ ${bindings} ],
)`;
  writeFileSync(join(out, "recipes.capnp"), `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [
    (name = "forRequest", worker = ${worker(bundled.forRequest, `(name = "UPSTREAM", text = "${up}/slow")`)}),
    (name = "afterResponse", worker = ${worker(bundled.afterResponse, `(name = "TELEMETRY", text = "${up}/collect")`)}),
    (name = "callee", worker = ${worker(bundled.callee)}),
    (name = "caller", worker = ${worker(bundled.caller, `(name = "CALLEE", service = (name = "callee", entrypoint = "Answers"))`)}),
    (name = "loopback", network = (allow = ["public", "private", "local"])),
  ],
  sockets = [
    (name = "a", address = "127.0.0.1:${ports.forRequest}", http = (), service = "forRequest"),
    (name = "b", address = "127.0.0.1:${ports.afterResponse}", http = (), service = "afterResponse"),
    (name = "c", address = "127.0.0.1:${ports.caller}", http = (), service = "caller"),
  ],
);
`);
  const child = spawn(workerd, ["serve", join(out, "recipes.capnp")], { cwd: out, stdio: ["ignore", "ignore", "inherit"] });
  const at = (name) => `http://127.0.0.1:${ports[name]}`;
  try {
    for (let i = 0; i < 100; i++) {
      try {
        await fetch(`${at("caller")}/?q=ping`);
        break;
      } catch {
        await sleep(100); // waiting for workerd to listen: no event to wait on
      }
    }
    await check("recipe (docs/recipes.md): forRequest in a Worker: the answer in time, and a 504 naming the caller's deadline when its header is shorter than the upstream", async () => {
      const ok = await fetch(at("forRequest"));
      assert(ok.status === 200 && (await ok.text()) === "upstream says hi" && ok.headers.get("x-deadline-limit") === "budget", `in time: ${ok.status}`);
      const late = await fetch(at("forRequest"), { headers: { "edge-deadline-remaining-ms": "300" } });
      const text = await late.text();
      assert(late.status === 504 && text === "no answer in time (caller)", `${late.status} ${text}`);
    });
    await check("recipe (docs/recipes.md): afterResponse: the telemetry is sent after the response, by the waitUntil work", async () => {
      const res = await fetch(`${at("afterResponse")}/page`);
      assert((await res.text()) === "hello", "the response");
      for (let i = 0; i < 30 && collected.length === 0; i++) await sleep(50);
      assert(collected.length === 1 && JSON.parse(collected[0])[0].path === "/page", `collected ${JSON.stringify(collected)}`);
    });
    await check("recipe (docs/recipes.md): two Workers over RPC: the callee answers inside the caller's deadline; a spent one does no work", async () => {
      const ok = await (await fetch(`${at("caller")}/?q=hi`)).json();
      assert(ok.why === null && /^hi: answered with \d+ ms to spare$/.test(ok.text), JSON.stringify(ok));
      const spare = Number(/with (\d+) ms/.exec(ok.text)[1]);
      assert(spare <= 1_500 && spare > 1_000, `the caller's 1.5 s crossed over RPC: ${spare}`);
      const spent = await (await fetch(`${at("caller")}/?q=hi`, { headers: { "edge-deadline-remaining-ms": "0" } })).json();
      assert(spent.text === null && spent.why === "caller", JSON.stringify(spent));
    });
  } finally {
    child.kill();
    upstream.close();
  }
}
console.log(JSON.stringify(report));
