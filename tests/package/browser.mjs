// The browser examples in fresh projects with the tarball installed: one
// bundled by esbuild (the `browser` condition, the .wasm as a `file` asset),
// one with no bundler (an import map onto the package's files). Both pages run
// in headless Chromium against the example upstream on the same origin.
import assert from "node:assert/strict";
import { readFileSync, readdirSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { serveStatic } from "../../scripts/static-server.mjs";
import { openChromium } from "../chromium.mjs";
import { bin, project, root, runOk } from "./lib.mjs";

export async function checkBrowser(g, packed, upstream) {
  const bundled = await project("browser-esbuild", packed.tarball, { copy: { "browser-esbuild": "." } });
  const plain = await project("browser-plain", packed.tarball, { copy: { "browser-plain": "." } });

  await g.check("esbuild bundles the browser example (browser condition, .wasm as an asset)", async () => {
    // As if `npm install -D esbuild`: the dev toolchain's esbuild, linked in.
    for (const name of ["esbuild", "@esbuild"]) symlinkSync(join(root, "node_modules", name), join(bundled, "node_modules", name), "dir");
    const { stdout } = await runOk(bin.node, ["build.mjs"], { cwd: bundled, timeoutMs: 60_000 });
    const out = readdirSync(join(bundled, "dist"));
    assert.ok(out.includes("main.js"), out.join(", "));
    assert.equal(out.filter((f) => /^edge_deadline_bg-.*\.wasm$/.test(f)).length, 1, `the .wasm asset in dist/: ${out.join(", ")}`);
    assert.match(stdout, /node_modules\/edge-deadline\/index\.js/, "resolved to the package's browser entry");
    assert.doesNotMatch(stdout, /workerd\.js|node\.js/, "no other entry was bundled");
    // The ambient deadline finds AsyncLocalStorage at run time: no Node module is imported.
    const bundle = readFileSync(join(bundled, "dist/main.js"), "utf8");
    assert.doesNotMatch(bundle, /\bfrom\s*["']node:|\bimport\s*\(\s*["']node:|\brequire\s*\(\s*["']node:/, "the browser bundle imports no node: module");
    const main = /node_modules\/edge-deadline\/main\.js\s+([\d.]+\w+)/.exec(stdout);
    g.fact(`esbuild browser bundle: ${(bundle.length / 1024).toFixed(1)} KB minified; of it main.js ${main ? main[1] : "not included"}`);
  });

  await g.check("a browser bundle that uses the ambient deadline imports no node: module and keeps its fallback", async () => {
    const { build } = await import("esbuild");
    const result = await build({
      stdin: { contents: 'import { ambientDeadline, currentDeadline, runWithDeadline } from "edge-deadline"; export { ambientDeadline, currentDeadline, runWithDeadline };', resolveDir: bundled, loader: "js" },
      bundle: true,
      format: "esm",
      platform: "browser",
      minify: true,
      write: false,
      metafile: true,
      logLevel: "silent",
      loader: { ".wasm": "file" },
      outdir: join(bundled, "ambient"),
    });
    const bundle = result.outputFiles.find((f) => f.path.endsWith(".js")).text;
    assert.doesNotMatch(bundle, /\bfrom\s*["']node:|\bimport\s*\(\s*["']node:|\brequire\s*\(/, "no node: import, no require");
    assert.match(bundle, /getBuiltinModule/, "AsyncLocalStorage is looked up at run time");
    // The package's code (js/context.js among it) is pre-bundled into main.js.
    const input = Object.entries(result.metafile.outputs).flatMap(([, o]) => Object.entries(o.inputs)).find(([path]) => path.endsWith("edge-deadline/main.js"));
    assert.ok(input, "main.js is in the bundle");
    // The core's classes it does not use (a hedge, a retry, a read) are left out (scripts/bundle.mjs `shakeableGlue`).
    for (const unused of ["hedgerun", "retryrun", "readmachine"]) assert.doesNotMatch(bundle, new RegExp(`__wbg_${unused}_free`), `the glue of ${unused}`);
    g.fact(`ambient deadline in a minified browser bundle: ${input[1].bytesInOutput} B of main.js`);
  });

  const routes = Object.fromEntries(["/events", "/mid", "/silent"].map((p) => [p, upstream.handle]));
  const servers = [await serveStatic(bundled, { routes }), await serveStatic(plain, { routes })];
  let context;
  try {
    context = await openChromium();
    const pages = [
      ["esbuild bundle", servers[0].url],
      ["no-bundler page", servers[1].url],
    ];
    for (const [label, base] of pages) {
      for (const [src, outcome, events] of [["events", "complete", 5], ["mid", "stalled", 3]]) {
        await g.check(`${label} in Chromium: /${src} → ${outcome}`, async () => {
          const page = await context.newPage();
          const problems = [];
          const wasm = [];
          page.on("pageerror", (e) => problems.push(`page error: ${e}`));
          page.on("console", (m) => m.type() === "error" && problems.push(`console: ${m.text()}`));
          page.on("response", (r) => r.url().endsWith(".wasm") && wasm.push(`${r.status()} ${r.headers()["content-type"]}`));
          try {
            await page.goto(`${base}index.html?src=${encodeURIComponent(`/${src}?id=${label}-${src}`)}`);
            await page.waitForFunction(() => document.documentElement.dataset.outcome, null, { timeout: 15_000 });
            const got = await page.evaluate(() => ({
              outcome: document.documentElement.dataset.outcome,
              status: document.querySelector("#status").textContent,
              out: document.querySelector("#out").textContent,
            }));
            assert.deepEqual(problems, []);
            assert.deepEqual(wasm, ["200 application/wasm"], "the .wasm was fetched once, as application/wasm");
            assert.equal(got.outcome, outcome, got.status);
            assert.equal(got.out.match(/data: event \d/g)?.length, events, got.out);
            if (outcome === "stalled") assert.match(got.status, /^interrupted: stream stalled: no progress/);
          } finally {
            await page.close();
          }
        });
      }
    }
  } finally {
    await context?.close();
    for (const s of servers) await s.close();
  }
}
