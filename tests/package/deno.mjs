// The Deno example (examples/deno/server.js) in a fresh project with the
// tarball installed: Deno resolves `edge-deadline` from node_modules under the
// `deno` condition, loads the .wasm with --allow-read, and proxies.
import assert from "node:assert/strict";
import { join } from "node:path";
import { bin, freePort, isolatedEnv, project, start } from "./lib.mjs";
import { proxyCases } from "./proxy.mjs";

// The constants at the top of examples/deno/server.js.
const LIMITS = { PRODUCT_MS: 8_000, FALLBACK_RESERVE_MS: 300, FIRST_CHUNK_MS: 4_000, STALL_MS: 2_000 };

export async function checkDeno(g, packed, upstream) {
  const dir = await project("deno", packed.tarball, { copy: { "deno/server.js": "server.js" } });
  const port = await freePort();
  const env = { ...isolatedEnv(dir), DENO_DIR: join(dir, ".deno"), DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1" };
  const server = start(bin.deno, ["run", "--allow-net=127.0.0.1", "--allow-read", "server.js", String(port), upstream.url], { cwd: dir, env });
  try {
    let ready = false;
    await g.check("deno run server.js resolves the installed package and listens", async () => {
      await server.waitFor(/listening on http:\/\/127\.0\.0\.1:\d+/, 30_000);
      ready = true;
    });
    if (!ready) return;
    await g.check("Deno picked the package's `deno` condition (index.js)", async () => {
      const probe = start(bin.deno, ["eval", "console.log(import.meta.resolve('edge-deadline'))"], { cwd: dir, env });
      const { stdout, code } = await probe.result;
      assert.equal(code, 0);
      assert.match(stdout.trim(), /\/node_modules\/edge-deadline\/index\.js$/);
    });
    await proxyCases(g, "deno", `http://127.0.0.1:${port}`, upstream, LIMITS);
    await g.check("no errors in the server's output", () => assert.equal(server.stderr.trim(), ""));
  } finally {
    await server.kill();
  }
}
