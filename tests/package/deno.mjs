// The Deno example (examples/deno/server.js) in a fresh project with the
// tarball installed: Deno resolves `edge-deadline` from node_modules under the
// `deno` condition, which imports the .wasm as a module, so the server runs
// with no init() and no --allow-read, and proxies.
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { bin, freePort, isolatedEnv, project, start } from "./lib.mjs";
import { proxyCases } from "./proxy.mjs";

// The constants at the top of examples/deno/server.js.
const LIMITS = { PRODUCT_MS: 8_000, FALLBACK_RESERVE_MS: 300, FIRST_CHUNK_MS: 4_000, STALL_MS: 2_000 };

export async function checkDeno(g, packed, upstream) {
  const dir = await project("deno", packed.tarball, { copy: { "deno/server.js": "server.js" } });
  const port = await freePort();
  const env = { ...isolatedEnv(dir), DENO_DIR: join(dir, ".deno"), DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1" };
  const server = start(bin.deno, ["run", "--allow-net=127.0.0.1", "server.js", String(port), upstream.url], { cwd: dir, env });
  try {
    let ready = false;
    await g.check("deno run server.js, with no --allow-read and no init(), resolves the installed package and listens", async () => {
      const source = readFileSync(join(dir, "server.js"), "utf8");
      assert.doesNotMatch(source, /import\s*\{[^}]*\binit\b[^}]*\}\s*from\s*"edge-deadline"|await\s+init\(/, "the example calls no init()");
      await server.waitFor(/listening on http:\/\/127\.0\.0\.1:\d+/, 30_000);
      ready = true;
    });
    if (!ready) return;
    await g.check("Deno picked the package's `deno` condition (deno.js, derive-deno.js)", async () => {
      const probe = start(bin.deno, ["eval", "console.log(import.meta.resolve('edge-deadline'), import.meta.resolve('edge-deadline/derive'))"], { cwd: dir, env });
      const { stdout, code } = await probe.result;
      assert.equal(code, 0);
      assert.match(stdout.trim(), /\/node_modules\/edge-deadline\/deno\.js \S+\/node_modules\/edge-deadline\/derive-deno\.js$/);
    });
    await g.check("both entries together with no permission at all: a LatencySketch takes a plan's trace", async () => {
      const script = `import { Deadline, plan } from "edge-deadline";
import { LatencySketch } from "edge-deadline/derive";
const deadline = Deadline.in(1_000);
const p = plan(deadline, [{ name: "a", minMs: 1, kind: "mandatory" }]);
await p.run("a", () => "x");
deadline.dispose();
const sketch = new LatencySketch();
sketch.addAll(p.records.map((r) => r.elapsedMs));
console.log("ok", sketch.count);`;
      writeFileSync(join(dir, "both.js"), script);
      const probe = start(bin.deno, ["run", "both.js"], { cwd: dir, env }); // `deno eval` would allow everything
      const { stdout, stderr, code } = await probe.result;
      assert.equal(code, 0, stderr);
      assert.equal(stdout.trim(), "ok 1");
    });
    await proxyCases(g, "deno", `http://127.0.0.1:${port}`, upstream, LIMITS);
    await g.check("no errors in the server's output", () => assert.equal(server.stderr.trim(), ""));
  } finally {
    await server.kill();
  }
}
