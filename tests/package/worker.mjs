// The Worker example (examples/worker) in a fresh project with the tarball
// installed: it calls no init(); wrangler's upload bundle must hold the main
// .wasm only, within the size target (UPLOAD_GZIP_KIB), and under
// `wrangler dev --local` the proxy must stream a steady upstream and answer a
// stalled or silent one with its fallback, within the deadline.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { bin, freePort, isolatedEnv, project, runOk, start } from "./lib.mjs";
import { proxyCases } from "./proxy.mjs";

// Short limits so the suite stays quick; the example's wrangler.toml has production-like ones.
const VARS = { PRODUCT_MS: 2_500, FALLBACK_RESERVE_MS: 300, FIRST_CHUNK_MS: 800, STALL_MS: 400 };

export function wranglerEnv(dir) {
  return {
    ...isolatedEnv(dir),
    WRANGLER_SEND_METRICS: "false",
    CI: "true",
    CLOUDFLARE_CF_FETCH_ENABLED: "false",
    WRANGLER_HIDE_BANNER: "true", // the banner's update check would ask the registry
    NO_COLOR: "1",
    FORCE_COLOR: "0",
  };
}

// A Worker that imports only the main entry, and relays, uploads at most this
// much (gzip, as wrangler reports it): the example Worker relays, so it carries
// `retry`, `resume` and the streamed read's machine. BENCHMARKS.md, "Size and
// start-up", has the measured figure and scripts/wasm-sizes.mjs the profile
// that finds what to cut.
export const UPLOAD_GZIP_KIB = 100;

const sha256 = (buf) => createHash("sha256").update(buf).digest("hex");

export async function checkWorker(g, packed, upstream) {
  const dir = await project("worker", packed.tarball, { copy: { "worker/wrangler.toml": "wrangler.toml", "worker/src": "src" } });
  const env = wranglerEnv(dir);
  const wasm = readFileSync(join(dir, "node_modules/edge-deadline/edge_deadline_bg.wasm"));

  await g.check("the example calls no init(): the Workers entry loads its .wasm at the first call", () => {
    const source = readFileSync(join(dir, "src/index.js"), "utf8");
    assert.doesNotMatch(source, /import\s*\{[^}]*\binit\b[^}]*\}\s*from\s*"edge-deadline"|\binit\(\s*\w/, "no init imported or called");
    assert.doesNotMatch(source, /await\s+init\(/);
  });

  // The example's wrangler.toml sets `minify = true`; `--minify false` shows what it saves.
  let uploadKib;
  for (const minify of [false, true]) {
    await g.check(`wrangler deploy --dry-run${minify ? "" : " --minify false"}: the upload bundle holds the .wasm`, async () => {
      const outdir = join(dir, minify ? "upload-min" : "upload");
      const { stdout, stderr } = await runOk(bin.node, [bin.wrangler, "deploy", "--dry-run", "--outdir", outdir, ...(minify ? [] : ["--minify", "false"])], { cwd: dir, env, timeoutMs: 60_000 });
      const files = readdirSync(outdir);
      const wasmFiles = files.filter((f) => f.endsWith(".wasm"));
      assert.equal(wasmFiles.length, 1, `one .wasm module (the main entry's, not the derive one) in ${files.join(", ")}`);
      assert.equal(sha256(readFileSync(join(outdir, wasmFiles[0]))), sha256(wasm), "the uploaded .wasm is the package's");
      const script = readFileSync(join(outdir, "index.js"), "utf8");
      assert.ok(script.includes(wasmFiles[0]), "the script imports the uploaded .wasm module");
      assert.ok(!/edge_deadline_bg\.wasm["'],\s*import\.meta\.url/.test(script), "the Workers entry was used, not the fetch-a-URL one");
      const total = /Total Upload: ([\d.]+ KiB) \/ gzip: ([\d.]+ KiB)/.exec(stdout + stderr);
      assert.ok(total, `wrangler printed its upload size:\n${stdout}`);
      const ours = [wasmFiles[0], "index.js"].reduce((s, f) => s + gzipSync(readFileSync(join(outdir, f))).length, 0);
      g.fact(
        `Worker upload${minify ? " (as configured: minify)" : " (not minified)"}: wrangler says ${total[1]}, gzip ${total[2]}; gzip of index.js + .wasm here ${(ours / 1024).toFixed(1)} KB`,
        minify ? `Worker upload ${total[2]} gzip` : undefined,
      );
      // The target is for the Worker as the example configures it.
      if (minify) uploadKib = parseFloat(total[2]);
    });
  }
  // Met: a check, so that it cannot regress.
  await g.check(`the Worker as configured uploads ≤ ${UPLOAD_GZIP_KIB} KiB gzip`, () => {
    assert.ok(uploadKib !== undefined, "wrangler's upload size was measured");
    assert.ok(uploadKib <= UPLOAD_GZIP_KIB, `the upload is ${uploadKib} KiB gzip, over the ${UPLOAD_GZIP_KIB} KiB target`);
  });

  const port = await freePort();
  const inspector = await freePort();
  const vars = Object.entries({ ...VARS, UPSTREAM: upstream.url }).flatMap(([k, v]) => ["--var", `${k}:${v}`]);
  const dev = start(bin.node, [bin.wrangler, "dev", "--local", "--ip", "127.0.0.1", "--port", String(port), "--inspector-port", String(inspector), "--show-interactive-dev-session=false", ...vars], { cwd: dir, env });
  try {
    let ready = false;
    await g.check("wrangler dev --local starts the Worker", async () => {
      await dev.waitFor(/Ready on http:\/\/127\.0\.0\.1:\d+/, 60_000);
      ready = true;
    });
    if (!ready) return;
    await proxyCases(g, "worker", `http://127.0.0.1:${port}`, upstream, VARS);
    await g.check("no global-scope or uncaught errors in wrangler's log", () => {
      const log = dev.stdout + dev.stderr;
      assert.doesNotMatch(log, /Disallowed operation called within global scope|Uncaught|\bERROR\b/, log.slice(-3000));
    });
  } finally {
    await dev.kill();
  }
}
