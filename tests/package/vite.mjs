// The package in a Vite project (the browser dev server most users run),
// installed from the tarball, with no Vite configuration: `vite dev` (which
// pre-bundles dependencies into node_modules/.vite/deps/, away from their
// .wasm) and `vite build` + `vite preview`, each loaded in Chromium.
// Vite 8 rewrites the package's `new URL("./edge_deadline_bg.wasm",
// import.meta.url)` when it pre-bundles; Vite 5–7 pre-bundled with esbuild,
// which leaves it pointing into node_modules/.vite/deps/, where the dev
// server answers with index.html. That layout is rebuilt here with the same
// esbuild call and a server that answers the same way: init() must find the
// package's own .wasm, or say which Vite option fixes it.
import assert from "node:assert/strict";
import { readFileSync, readdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { serveStatic } from "../../scripts/static-server.mjs";
import { openChromium } from "../chromium.mjs";
import { bin, freePort, isolatedEnv, project, root, runOk, start } from "./lib.mjs";

const vite = (dir) => join(dir, "node_modules/vite/bin/vite.js");

export async function checkVite(g, packed) {
  const dir = await project("vite", packed.tarball, { copy: { vite: "." } });
  // As if `npm install -D vite`: the dev toolchain's vite, linked in (its
  // own dependencies resolve from the real path).
  symlinkSync(join(root, "node_modules/vite"), join(dir, "node_modules/vite"), "dir");
  const env = isolatedEnv(dir);

  const context = await openChromium();

  /** Loads `url`; resolves the page's outcome, status text and every .wasm response. */
  async function load(url) {
    const page = await context.newPage();
    const problems = [];
    const wasm = [];
    page.on("pageerror", (e) => problems.push(`page error: ${e}`));
    page.on("response", (r) => /\.wasm(\?|$)/.test(r.url()) && wasm.push(`${r.status()} ${r.headers()["content-type"]} ${new URL(r.url()).pathname}`));
    try {
      await page.goto(url);
      await page.waitForFunction(() => document.documentElement.dataset.outcome, null, { timeout: 30_000 });
      const got = await page.evaluate(() => ({ outcome: document.documentElement.dataset.outcome, status: document.querySelector("#status").textContent }));
      return { ...got, problems, wasm };
    } finally {
      await page.close();
    }
  }

  async function serve(args, label) {
    const port = await freePort();
    const server = start(bin.node, [vite(dir), ...args, "--host", "127.0.0.1", "--port", String(port), "--strictPort"], { cwd: dir, env });
    await server.waitFor(new RegExp(`http://127\\.0\\.0\\.1:${port}/`), 60_000).catch((e) => {
      throw new Error(`${label} did not start: ${e.message}`);
    });
    return { server, url: `http://127.0.0.1:${port}/` };
  }

  try {
    await g.check("vite dev (dependency pre-bundling): init() loads the .wasm with no configuration", async () => {
      const { server, url } = await serve([], "vite dev");
      try {
        const got = await load(url);
        assert.deepEqual(got.problems, []);
        assert.equal(got.outcome, "ok", got.status);
        assert.equal(got.status, "p99 99 ms; deadline running");
        assert.ok(got.wasm.some((w) => w.startsWith("200 application/wasm")), got.wasm.join("; "));
        assert.ok(readdirSync(join(dir, "node_modules/.vite/deps")).some((f) => f.startsWith("edge-deadline")), "the package was pre-bundled");
      } finally {
        await server.kill();
      }
    });

    await g.check("vite build + vite preview: the .wasm is an asset and init() loads it", async () => {
      await runOk(bin.node, [vite(dir), "build"], { cwd: dir, env, timeoutMs: 90_000 });
      const assets = readdirSync(join(dir, "dist/assets"));
      assert.equal(assets.filter((f) => /^edge_deadline_bg-.*\.wasm$/.test(f)).length, 1, assets.join(", "));
      const { server, url } = await serve(["preview"], "vite preview");
      try {
        const got = await load(url);
        assert.deepEqual(got.problems, []);
        assert.equal(got.outcome, "ok", got.status);
        assert.equal(got.status, "p99 99 ms; deadline running");
        assert.deepEqual(got.wasm.map((w) => w.split(" ").slice(0, 2).join(" ")), ["200 application/wasm", "200 application/wasm"], "the main and the derive .wasm");
      } finally {
        await server.kill();
      }
    });

    // What Vite 5–7's dependency optimizer produced: esbuild's ESM bundle of
    // the package in node_modules/.vite/deps/, its .wasm URL left as written.
    const esbuild = await import(join(root, "node_modules/esbuild/lib/main.js"));
    await esbuild.build({
      absWorkingDir: dir,
      stdin: { contents: 'export * from "edge-deadline";', resolveDir: dir },
      bundle: true,
      format: "esm",
      platform: "browser",
      outfile: join(dir, "node_modules/.vite/deps/edge-deadline.js"),
      logLevel: "silent",
    });
    assert.match(readFileSync(join(dir, "node_modules/.vite/deps/edge-deadline.js"), "utf8"), /new URL\("\.\/edge_deadline_bg\.wasm", import\.meta\.url\)/);
    writeFileSync(join(dir, "prebundled.html"), readFileSync(join(dir, "index.html"), "utf8").replace("./main.js", "./prebundled.js"));
    writeFileSync(
      join(dir, "prebundled.js"),
      `import { Deadline, init } from "/node_modules/.vite/deps/edge-deadline.js";
const status = document.querySelector("#status");
try {
  await init();
  status.textContent = Deadline.in(1_000).remaining() > 0 ? "deadline running" : "expired";
  document.documentElement.dataset.outcome = "ok";
} catch (error) {
  status.textContent = \`\${error.name}: \${error.message}\`;
  document.documentElement.dataset.outcome = "error";
}
`,
    );
    // A dev server's fallback: an unknown path answers with the app's page.
    const page = (req, res) => res.writeHead(200, { "content-type": "text/html" }).end(readFileSync(join(dir, "index.html")));
    const elsewhere = "/node_modules/edge-deadline/edge_deadline_bg.wasm";

    await g.check("a pre-bundle that left the .wasm behind (Vite 5–7 layout): init() loads the package's own .wasm", async () => {
      const server = await serveStatic(dir, { routes: { "/node_modules/.vite/deps/edge_deadline_bg.wasm": page } });
      try {
        const got = await load(`${server.url}prebundled.html`);
        assert.deepEqual(got.problems, []);
        assert.equal(got.outcome, "ok", got.status);
        assert.equal(got.status, "deadline running");
        assert.ok(got.wasm.includes(`200 application/wasm ${elsewhere}`), got.wasm.join("; "));
      } finally {
        await server.close();
      }
    });

    await g.check("…and where that .wasm is not served either: init() names the Vite option, not a CompileError", async () => {
      const server = await serveStatic(dir, { routes: { "/node_modules/.vite/deps/edge_deadline_bg.wasm": page, [elsewhere]: page } });
      try {
        const got = await load(`${server.url}prebundled.html`);
        assert.equal(got.outcome, "error");
        assert.match(got.status, /^Error: edge-deadline: the \.wasm URL answered with an HTML page, not WebAssembly \(http:\/\/127\.0\.0\.1:\d+\/node_modules\/\.vite\/deps\/edge_deadline_bg\.wasm\)/);
        assert.match(got.status, /optimizeDeps: \{ exclude: \["edge-deadline"\] \}/);
      } finally {
        await server.close();
      }
    });
  } finally {
    await context.close();
  }
}
