// What `npm pack` puts in the tarball: only what users need, a package.json
// that every runtime and bundler resolves correctly, and nothing that runs at
// install time.
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join, posix } from "node:path";
import { bundledGzip, entrySize, relativeImports } from "../../scripts/sizes.mjs";
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
  // entry points: index.js (browsers, bundlers), node.js, deno.js, workerd.js (Workers); the same for
  // edge-deadline/derive, and the public surface each set shares
  "index.js",
  "node.js",
  "deno.js",
  "workerd.js",
  "api.js",
  "derive-index.js",
  "derive-node.js",
  "derive-deno.js",
  "derive-workerd.js",
  "derive-api.js",
  // the two Wasm cores and their wasm-bindgen glue
  "edge_deadline_bg.wasm",
  "edge_deadline.js",
  "edge_deadline_derive_bg.wasm",
  "edge_deadline_derive.js",
  // The types wasm-bindgen generates from the Rust types (tsify), imported by the .d.ts below.
  "edge_deadline.d.ts",
  "edge_deadline_derive.d.ts",
  "wasm_exports.js", // what the loaders check a given module against (written by the build)
  // the loaders: one per core, one shared implementation
  "loader.js",
  "load.js",
  "derive-load.js",
  // modules the entry points import
  "errors.js",
  "messages.js", // the core's message templates (generated), and the derive core's
  "derive-messages.js",
  "deadline.js",
  "stall.js",
  "sse.js",
  "validate.js",
  "timers.js",
  "keepalive.js",
  "plan.js",
  "retry.js",
  "hedge.js",
  "budget.js",
  "headers.js",
  "caps.js",
  "derive.js",
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
  "derive-index.d.ts",
  "stall.d.ts",
  "plan.d.ts",
  "retry.d.ts",
  "budget.d.ts",
  "hedge.d.ts",
  "headers.d.ts",
  "caps.d.ts",
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

/** The main entry's .wasm + JS, gzip (KB of 1024 bytes): the package's size target. */
export const MAIN_TARGET_KB = 50;
const kb = (b) => `${(b / 1024).toFixed(1)} KB`;

const CONDITIONS = ["types", "workerd", "worker", "deno", "browser", "node", "default"];
const INSTALL_SCRIPTS = ["preinstall", "install", "postinstall", "prepare", "preprepare", "postprepare"];


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

  await g.check("package.json: ESM, side effects only in the self-loading entries, exports map with every condition in order", () => {
    assert.equal(manifest.name, "edge-deadline");
    assert.equal(manifest.type, "module");
    // The Node, Deno and workerd entries register how their .wasm loads at the
    // first call; a bundler that dropped that statement would leave init() mandatory.
    const selfLoading = ["", "derive-"].flatMap((p) => ["node.js", "workerd.js", "deno.js"].map((f) => `./${p}${f}`));
    assert.deepEqual(manifest.sideEffects, selfLoading);
    assert.equal(manifest.types, "./index.d.ts");
    for (const [subpath, prefix, types] of [[".", "", "./index.d.ts"], ["./derive", "derive-", "./derive-index.d.ts"]]) {
      const dot = manifest.exports?.[subpath];
      assert.ok(dot && typeof dot === "object", `exports['${subpath}'] is an object of conditions`);
      // Resolution takes the first matching key, so the order is part of the contract:
      // types first, the specific runtimes next, default last.
      assert.deepEqual(Object.keys(dot), CONDITIONS);
      const expect = { workerd: "workerd.js", worker: "index.js", deno: "deno.js", browser: "index.js", node: "node.js", default: "index.js" };
      for (const [cond, file] of Object.entries(expect)) {
        assert.deepEqual(dot[cond], { types, default: `./${prefix}${file}` }, `exports['${subpath}'].${cond}`);
      }
      assert.equal(dot.types, types);
    }
    for (const wasm of ["edge_deadline_bg.wasm", "edge_deadline_derive_bg.wasm"]) {
      assert.equal(manifest.exports[`./${wasm}`], `./${wasm}`, "the .wasm is importable by bundlers");
    }
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

  await g.check("each .wasm in the tarball is a valid WebAssembly module", () => {
    for (const wasm of ["edge_deadline_bg.wasm", "edge_deadline_derive_bg.wasm"]) {
      const a = readFileSync(join(pkgDir, wasm));
      assert.equal(a.subarray(0, 4).toString("latin1"), "\0asm");
      assert.ok(WebAssembly.validate(a), `${wasm}: a valid WebAssembly module`);
    }
  });

  // The size targets (BENCHMARKS.md, "Size and start-up", has the figures of
  // bench/startup.mjs): what an application that imports only the main entry
  // ships, .wasm + the JS it loads, bundled and minified as a bundler or
  // `wrangler deploy --minify` ships it. File by file, unminified, as Node and
  // Deno read it from node_modules, is a fact for the log.
  const entries = { main: "index.js", derive: "derive-index.js" };
  const measured = {};
  for (const [name, entry] of Object.entries(entries)) {
    const { wasm, js, files } = entrySize(pkgDir, entry);
    measured[name] = { wasm, js, bundled: await bundledGzip(pkgDir, entry), files: files.length };
    g.fact(
      `${name} entry: .wasm ${kb(wasm)} gzip; its JS ${kb(measured[name].bundled)} gzip bundled + minified (${kb(js)} gzip file by file, ${files.length - 1} files); ` +
        `total ${kb(wasm + measured[name].bundled)} (${kb(wasm + js)} file by file)`,
      `${name} ${kb(wasm + measured[name].bundled)}`,
    );
  }

  await g.target(`the main entry's .wasm + the JS it loads (bundled, minified) ≤ ${MAIN_TARGET_KB} KB gzip`, () => {
    const { wasm, bundled } = measured.main;
    assert.ok(
      wasm + bundled <= MAIN_TARGET_KB * 1024,
      `${kb(wasm + bundled)} gzip (.wasm ${kb(wasm)} + JS ${kb(bundled)}), over the ${MAIN_TARGET_KB} KB target`,
    );
  });

  await g.check("the main entry loads none of edge-deadline/derive (its .wasm, glue or modules)", () => {
    const { files } = entrySize(pkgDir, entries.main);
    const derive = files.filter((f) => /derive|sketch|prom|tail|simulate|little|limiter/.test(f));
    assert.deepEqual(derive, [], "derive files in the main entry's graph");
  });

  g.fact(
    `tarball ${packed.size} B (${(packed.size / 1024).toFixed(1)} KB), ${files.length} files, ${(packed.unpackedSize / 1024).toFixed(1)} KB unpacked`,
    `tarball ${(packed.size / 1024).toFixed(1)} KB`,
  );
  return { manifest, pkgDir };
}
