// The Hono middleware as a Workers user gets it: the tarball and `hono`
// installed in a fresh project, `import { deadline } from "edge-deadline/hono"`
// bundled by wrangler (the `./hono` subpath beside the `workerd` entry, one
// copy of the package's modules), served by `wrangler dev --local`; and an
// app whose only import of the package is the middleware, in Node, Deno and
// under wrangler, with no init().
import assert from "node:assert/strict";
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { bin, freePort, isolatedEnv, project, root, run, start } from "./lib.mjs";
import { wranglerEnv } from "./worker.mjs";

const APP = `import { Hono } from "hono";
import { currentDeadline, init, plan } from "edge-deadline";
import { deadline } from "edge-deadline/hono";

await init();
const app = new Hono();
app.use(deadline({ budgetMs: 3_000, platform: "cloudflare-workers", fallbackReserveMs: 100, serverTiming: true }));
app.get("/", async (c) => {
  const d = c.get("deadline");
  const p = plan(d, [{ name: "lookup", kind: "mandatory", minMs: 1, preferredMs: 50 }]);
  c.set("plan", p);
  await p.run("lookup", () => new Promise((r) => setTimeout(r, 5)));
  return c.json({ remaining: d.remaining(), ambient: currentDeadline() === d });
});
export default app;
`;

const TOML = `name = "hono-deadline"
main = "src/index.js"
compatibility_date = "2026-05-01"
# AsyncLocalStorage (the ambient deadline across awaits) comes with nodejs_compat.
compatibility_flags = ["nodejs_compat"]
`;

// An app whose only import of the package is the middleware: `edge-deadline/hono`
// loads the core at the first request, like the main entry, with no init().
const ONLY_HONO = `import { Hono } from "hono";
import { deadline } from "edge-deadline/hono";

const app = new Hono();
app.use(deadline({ budgetMs: 2_000 }));
app.get("/", (c) => c.json({ remaining: c.get("deadline").remaining() }));
const res = await app.request("/", { headers: { "grpc-timeout": "900m" } });
console.log(res.status, JSON.stringify(await res.json()));
`;

// All three entries in one process: one copy of the package's modules, so the
// middleware's deadline is the main entry's class and the ambient one.
const ALL_THREE = `import { Hono } from "hono";
import { Deadline, currentDeadline } from "edge-deadline";
import { LatencySketch } from "edge-deadline/derive";
import { deadline } from "edge-deadline/hono";

const app = new Hono();
app.use(deadline({ budgetMs: 2_000 }));
app.get("/", async (c) => {
  await null;
  const d = c.get("deadline");
  const sketch = new LatencySketch();
  sketch.add(d.remaining());
  return c.json({ sameClass: d instanceof Deadline, ambient: currentDeadline() === d, count: sketch.count });
});
const res = await app.request("/");
console.log(JSON.stringify(await res.json()));
`;

// The same for Workers: the middleware alone, served by wrangler (the `workerd` condition).
const ONLY_HONO_WORKER = `import { Hono } from "hono";
import { deadline } from "edge-deadline/hono";

const app = new Hono();
app.use(deadline({ budgetMs: 2_000 }));
app.get("/", (c) => c.json({ remaining: c.get("deadline").remaining() }));
export default app;
`;

export async function checkHono(g, packed) {
  const dir = await project("hono", packed.tarball);
  // As if \`npm install hono\`: the dev toolchain's copy, linked in (the install is offline).
  symlinkSync(join(root, "node_modules/hono"), join(dir, "node_modules/hono"), "dir");
  writeFileSync(join(dir, "only-hono.js"), ONLY_HONO);
  const served = (stdout) => {
    const [status, body] = stdout.trim().split(" ");
    assert.equal(status, "200", stdout);
    const { remaining } = JSON.parse(body);
    assert.ok(remaining > 0 && remaining <= 900, `the caller's 900 ms: ${remaining}`);
  };
  await g.check("Node: an app importing only edge-deadline/hono serves a request with no init()", async () => {
    const r = await run(bin.node, ["only-hono.js"], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    served(r.stdout);
  });
  await g.check("Node: edge-deadline, /derive and /hono in one process share one copy (the Deadline class, the ambient deadline)", async () => {
    writeFileSync(join(dir, "all-three.js"), ALL_THREE);
    const r = await run(bin.node, ["all-three.js"], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout.trim()), { sameClass: true, ambient: true, count: 1 });
  });
  await g.check("Deno: an app importing only edge-deadline/hono, with no init() and no --allow-read", async () => {
    const env = { ...isolatedEnv(dir), DENO_DIR: join(dir, ".deno"), DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1" };
    const r = await run(bin.deno, ["run", "only-hono.js"], { cwd: dir, env });
    assert.equal(r.code, 0, r.stderr);
    served(r.stdout);
  });
  mkdirSync(join(dir, "src"));
  writeFileSync(join(dir, "src/index.js"), APP);
  writeFileSync(join(dir, "wrangler.toml"), TOML);
  const env = wranglerEnv(dir);
  const port = await freePort();
  const inspector = await freePort();
  const dev = start(bin.node, [bin.wrangler, "dev", "--local", "--ip", "127.0.0.1", "--port", String(port), "--inspector-port", String(inspector), "--show-interactive-dev-session=false"], { cwd: dir, env });
  try {
    let ready = false;
    await g.check("wrangler dev serves a Hono app using edge-deadline/hono", async () => {
      await dev.waitFor(/Ready on http:\/\/127\.0\.0\.1:\d+/, 60_000);
      ready = true;
    });
    if (!ready) return;
    await g.check("the caller's header wins, the deadline is ambient across awaits, Server-Timing lists the deadline and the plan", async () => {
      const res = await fetch(`http://127.0.0.1:${port}/`, { headers: { "edge-deadline-remaining-ms": "900" } });
      assert.equal(res.status, 200);
      const body = await res.json();
      // At most 800 (the reserve is taken); far below the 3 s budget of a request that tells nothing. The
      // lower bound leaves room for wrangler dev's first request (the app's awaits, the core's first load).
      assert.ok(body.remaining > 300 && body.remaining <= 800, `900 ms told, less the 100 ms reserve: ${body.remaining}`);
      assert.equal(body.ambient, true, "currentDeadline() after an await is the request's deadline");
      assert.match(res.headers.get("server-timing") ?? "", /^edge-deadline;dur=[\d.]+;desc="budget \d+ ms from edge-deadline-remaining-ms, \d+ ms left", lookup;dur=[\d.]+;desc="ok, cap [\d.]+ ms"$/);
      const plain = await (await fetch(`http://127.0.0.1:${port}/`)).json();
      assert.ok(plain.remaining > 2_000 && plain.remaining <= 2_900, `the 3 s budget less the reserve: ${plain.remaining}`);
    });
    await g.check("no errors in wrangler's log", () => {
      const log = dev.stdout + dev.stderr;
      assert.doesNotMatch(log, /Disallowed operation called within global scope|Uncaught|\bERROR\b/, log.slice(-3000));
    });
  } finally {
    await dev.kill();
  }

  writeFileSync(join(dir, "src/only-hono.js"), ONLY_HONO_WORKER);
  writeFileSync(join(dir, "only-hono.toml"), TOML.replace('name = "hono-deadline"\nmain = "src/index.js"', 'name = "only-hono"\nmain = "src/only-hono.js"'));
  const onlyPort = await freePort();
  const onlyInspector = await freePort();
  const only = start(bin.node, [bin.wrangler, "dev", "-c", "only-hono.toml", "--local", "--ip", "127.0.0.1", "--port", String(onlyPort), "--inspector-port", String(onlyInspector), "--show-interactive-dev-session=false"], { cwd: dir, env });
  try {
    await g.check("Workers: a Worker importing only edge-deadline/hono serves a request with no init()", async () => {
      await only.waitFor(/Ready on http:\/\/127\.0\.0\.1:\d+/, 60_000);
      const res = await fetch(`http://127.0.0.1:${onlyPort}/`, { headers: { "grpc-timeout": "900m" } });
      const text = await res.text();
      served(`${res.status} ${text}`);
    });
  } finally {
    await only.kill();
  }
}
