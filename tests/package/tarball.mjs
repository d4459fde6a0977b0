// What `npm pack` puts in the tarball: only what users need, a package.json
// that every runtime and bundler resolves correctly, and nothing that runs at
// install time.
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join, posix } from "node:path";
import { runOk, tempDir } from "./lib.mjs";

// Every file users get. A new module in js/ lands here on purpose: add it when
// users need it (the reachability check below says whether they do).
export const ALLOWED = [
  "package.json",
  "README.md",
  "LICENSE",
  // the API reference and the SDK recipes, linked from README.md
  "docs/api.md",
  "docs/recipes.md",
  // entry points: index.js (browsers, Deno, bundlers), node.js, workerd.js (Workers)
  "index.js",
  "node.js",
  "workerd.js",
  // the Wasm core and its wasm-bindgen glue
  "edge_deadline_bg.wasm",
  "edge_deadline.js",
  // The types wasm-bindgen generates from the Rust types (tsify), imported by the .d.ts below.
  "edge_deadline.d.ts",
  "wasm_exports.js", // what load.js checks a given module against (written by the build)
  // modules the entry points import
  "api.js",
  "load.js",
  "errors.js",
  "deadline.js",
  "stall.js",
  "sse.js",
  "pipeline.js",
  "validate.js",
  "timers.js",
  "keepalive.js",
  "plan.js",
  "retry.js",
  "propagation.js",
  "sketch.js",
  "derive.js",
  "prom.js",
  "tail.js",
  "simulate.js",
  "little.js",
  "context.js",
  "servertiming.js",
  "relay.js",
  // the Hono middleware (subpath edge-deadline/hono)
  "hono.js",
  // types
  "index.d.ts",
  "stall.d.ts",
  "pipeline.d.ts",
  "sketch.d.ts",
  "derive.d.ts",
  "prom.d.ts",
  "tail.d.ts",
  "simulate.d.ts",
  "little.d.ts",
  "context.d.ts",
  "relay.d.ts",
  "hono.d.ts",
].sort();

const CONDITIONS = ["types", "workerd", "worker", "deno", "browser", "node", "default"];
const INSTALL_SCRIPTS = ["preinstall", "install", "postinstall", "prepare", "preprepare", "postprepare"];

/** Relative specifiers a module imports or re-exports (static and dynamic), and `new URL("./x", import.meta.url)`. */
export function relativeImports(source) {
  const out = new Set();
  const patterns = [
    /\b(?:import|export)\s+(?:type\s+)?(?:[\w*${}\s,]+?\s+from\s+)?["'](\.{1,2}\/[^"']+)["']/g,
    /\bimport\(\s*["'](\.{1,2}\/[^"']+)["']\s*\)/g,
    /\bnew URL\(\s*["'](\.{1,2}\/[^"']+)["']\s*,\s*import\.meta\.url\s*\)/g,
  ];
  for (const re of patterns) for (const m of source.matchAll(re)) out.add(m[1]);
  return [...out];
}

export async function checkTarball(g, packed) {
  const dir = tempDir("tarball");
  await runOk("tar", ["-xzf", packed.tarball, "-C", dir]);
  const pkgDir = join(dir, "package");
  const manifest = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8"));
  const files = packed.files.map((f) => f.path).sort();

  await g.check("the file list equals the allow-list", () => {
    const extra = files.filter((f) => !ALLOWED.includes(f));
    const missing = ALLOWED.filter((f) => !files.includes(f));
    assert.deepEqual({ extra, missing }, { extra: [], missing: [] }, "tarball files differ from the allow-list in tests/package/tarball.mjs");
  });

  await g.check("every file is reachable from an entry point (nothing users do not need)", () => {
    const entries = new Set(["package.json"]);
    const addTarget = (t) => typeof t === "string" && entries.add(posix.normalize(t));
    const walkExports = (x) => (typeof x === "string" ? addTarget(x) : x && Object.values(x).forEach(walkExports));
    walkExports(manifest.exports);
    addTarget(manifest.main);
    addTarget(manifest.types);
    const seen = new Set();
    const queue = [...entries];
    while (queue.length) {
      const f = queue.pop();
      if (seen.has(f)) continue;
      seen.add(f);
      if (!/\.(js|ts)$/.test(f)) continue;
      assert.ok(existsSync(join(pkgDir, f)), `${f} is referenced but not in the tarball`);
      for (const spec of relativeImports(readFileSync(join(pkgDir, f), "utf8"))) {
        let target = posix.normalize(posix.join(posix.dirname(f), spec));
        // TypeScript: "./stall.js" in a .d.ts means stall.d.ts.
        if (f.endsWith(".d.ts") && target.endsWith(".js")) target = target.replace(/\.js$/, ".d.ts");
        assert.ok(existsSync(join(pkgDir, target)), `${f} imports ${spec}, which is not in the tarball`);
        queue.push(target);
      }
    }
    // Documents are for people, not for module resolution.
    const unreachable = files.filter((f) => !seen.has(f) && !f.endsWith(".md") && f !== "LICENSE");
    assert.deepEqual(unreachable, [], "files no entry point reaches");
  });

  await g.check("package.json: ESM, sideEffects false, exports map with every condition in order", () => {
    assert.equal(manifest.name, "edge-deadline");
    assert.equal(manifest.type, "module");
    assert.equal(manifest.sideEffects, false);
    assert.equal(manifest.types, "./index.d.ts");
    const dot = manifest.exports?.["."];
    assert.ok(dot && typeof dot === "object", "exports['.'] is an object of conditions");
    // Resolution takes the first matching key, so the order is part of the contract:
    // types first, the specific runtimes next, default last.
    assert.deepEqual(Object.keys(dot), CONDITIONS);
    const expect = { workerd: "./workerd.js", worker: "./index.js", deno: "./index.js", browser: "./index.js", node: "./node.js", default: "./index.js" };
    for (const [cond, file] of Object.entries(expect)) {
      assert.deepEqual(dot[cond], { types: "./index.d.ts", default: file }, `exports['.'].${cond}`);
    }
    assert.equal(dot.types, "./index.d.ts");
    assert.equal(manifest.exports["./edge_deadline_bg.wasm"], "./edge_deadline_bg.wasm", "the .wasm is importable by bundlers");
    assert.equal(manifest.exports["./package.json"], "./package.json");
    assert.deepEqual(manifest.exports["./hono"], { types: "./hono.d.ts", default: "./hono.js" }, "the Hono middleware's subpath");
  });

  await g.check("no runtime dependencies and no install scripts", () => {
    for (const k of ["dependencies", "peerDependencies", "optionalDependencies", "bundleDependencies", "bundledDependencies"]) {
      assert.ok(manifest[k] === undefined || Object.keys(manifest[k]).length === 0, `${k}: ${JSON.stringify(manifest[k])}`);
    }
    const scripts = Object.keys(manifest.scripts ?? {}).filter((s) => INSTALL_SCRIPTS.includes(s));
    assert.deepEqual(scripts, [], "install-time scripts");
    // npm runs `node-gyp rebuild` for any package with a binding.gyp, scripts or not.
    assert.ok(!files.includes("binding.gyp"), "binding.gyp would make npm run node-gyp");
    assert.ok(!("gypfile" in manifest));
  });

  await g.check("the .wasm in the tarball is a valid WebAssembly module", () => {
    const a = readFileSync(join(pkgDir, "edge_deadline_bg.wasm"));
    assert.equal(a.subarray(0, 4).toString("latin1"), "\0asm");
    assert.ok(WebAssembly.validate(a), "a valid WebAssembly module");
  });

  g.fact(
    `tarball ${packed.size} B (${(packed.size / 1024).toFixed(1)} KB), ${files.length} files, ${(packed.unpackedSize / 1024).toFixed(1)} KB unpacked`,
    `tarball ${(packed.size / 1024).toFixed(1)} KB`,
  );
  return { manifest, pkgDir };
}
