// What `npm pack` puts in the tarball: only what users need, a package.json
// that every runtime and bundler resolves correctly, and nothing that runs at
// install time.
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join, posix } from "node:path";
import { bundledGzip, entrySize, relativeImports } from "../../scripts/sizes.mjs";
import { runOk, tempDir } from "./lib.mjs";

// Every file users get. A new module in js/ is bundled into one of the files
// below (scripts/bundle.mjs); a new file here is added on purpose, when users
// need it (the reachability check below says whether they do).
// Each bundled file ships with its source map (the build keeps the code readable).
const BUNDLED = [
  // entry points: index.js (browsers, bundlers), node.js, deno.js, workerd.js (Workers), edge-light.js
  // (Vercel's Edge Runtime); the same for edge-deadline/derive and edge-deadline/hono (whose browser entry is hono.js)
  "index.js",
  "node.js",
  "deno.js",
  "workerd.js",
  "edge-light.js",
  "derive-index.js",
  "derive-node.js",
  "derive-deno.js",
  "derive-workerd.js",
  "derive-edge-light.js",
  "hono.js",
  "hono-node.js",
  "hono-deno.js",
  "hono-workerd.js",
  "hono-edge-light.js",
  // edge-deadline/durable (the fleet's aggregator): its entries and its code, on top of derive-main.js
  "durable-index.js",
  "durable-node.js",
  "durable-deno.js",
  "durable-workerd.js",
  "durable.js",
  // what the entries import: each capability's code (its modules and its glue), and what both share
  "main.js",
  "derive-main.js",
  "shared.js",
];
export const ALLOWED = [
  "package.json",
  "README.md",
  "LICENSE",
  // the API reference and the SDK recipes, linked from README.md
  "docs/api.md",
  "docs/recipes.md",
  ...BUNDLED.flatMap((f) => [f, `${f}.map`]),
  // the two Wasm cores
  "edge_deadline_bg.wasm",
  "edge_deadline_derive_bg.wasm",
  // The types wasm-bindgen generates from the Rust types (tsify), imported by the .d.ts below.
  "edge_deadline.d.ts",
  "edge_deadline_derive.d.ts",
  // types
  "index.d.ts",
  "derive-index.d.ts",
  "stall.d.ts",
  "fetch.d.ts",
  "plan.d.ts",
  "retry.d.ts",
  "retry_budget.d.ts",
  "hedge.d.ts",
  "headers.d.ts",
  "caps.d.ts",
  "sketch.d.ts",
  "derive.d.ts",
  "prom.d.ts",
  "tail.d.ts",
  "simulate.d.ts",
  "little.d.ts",
  "limiter.d.ts",
  "book.d.ts",
  "breaker.d.ts",
  "otel.d.ts",
  "context.d.ts",
  "relay.d.ts",
  "resume.d.ts",
  "request.d.ts",
  "hono.d.ts",
  "durable.d.ts",
].sort();

const kb = (b) => `${(b / 1024).toFixed(1)} KB`;

const CONDITIONS = ["types", "edge-light", "workerd", "worker", "deno", "browser", "node", "default"];
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
      const source = readFileSync(join(pkgDir, f), "utf8");
      const map = /\n\/\/# sourceMappingURL=(\S+)\s*$/.exec(source)?.[1];
      for (const spec of [...relativeImports(source), ...(map ? [`./${map}`] : [])]) {
        let target = posix.normalize(posix.join(posix.dirname(f), spec));
        // TypeScript: "./stall.js" in a .d.ts means stall.d.ts.
        if (f.endsWith(".d.ts") && target.endsWith(".js")) target = target.replace(/\.js$/, ".d.ts");
        // Vercel's Edge Runtime takes the .wasm as `./x.wasm?module`: the file is ./x.wasm.
        target = target.replace(/\.wasm\?module$/, ".wasm");
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
    const selfLoading = ["", "derive-", "hono-", "durable-"].flatMap((p) => ["node.js", "workerd.js", "deno.js", ...(p === "durable-" ? [] : ["edge-light.js"])].map((f) => `./${p}${f}`));
    assert.deepEqual(manifest.sideEffects, selfLoading);
    assert.equal(manifest.types, "./index.d.ts");
    for (const [subpath, prefix, types, browser] of [
      [".", "", "./index.d.ts", "index.js"],
      ["./derive", "derive-", "./derive-index.d.ts", "derive-index.js"],
      ["./hono", "hono-", "./hono.d.ts", "hono.js"],
      ["./durable", "durable-", "./durable.d.ts", "durable-index.js"],
    ]) {
      const dot = manifest.exports?.[subpath];
      assert.ok(dot && typeof dot === "object", `exports['${subpath}'] is an object of conditions`);
      // Resolution takes the first matching key, so the order is part of the contract:
      // types first, the specific runtimes next, default last.
      // (edge-deadline/durable has no edge-light entry: a Durable Object or Deno KV does not run there.)
      const edgeLight = subpath !== "./durable";
      assert.deepEqual(Object.keys(dot), CONDITIONS.filter((c) => edgeLight || c !== "edge-light"));
      const expect = { ...(edgeLight ? { "edge-light": "edge-light.js" } : {}), workerd: "workerd.js", worker: browser, deno: "deno.js", browser, node: "node.js", default: browser };
      for (const [cond, file] of Object.entries(expect)) {
        const path = file === browser ? file : `${prefix}${file}`;
        assert.deepEqual(dot[cond], { types, default: `./${path}` }, `exports['${subpath}'].${cond}`);
      }
      assert.equal(dot.types, types);
    }
    for (const wasm of ["edge_deadline_bg.wasm", "edge_deadline_derive_bg.wasm"]) {
      assert.equal(manifest.exports[`./${wasm}`], `./${wasm}`, "the .wasm is importable by bundlers");
    }
    assert.equal(manifest.exports["./package.json"], "./package.json");
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

  // The sizes, reported (BENCHMARKS.md has the figures of bench/startup.mjs;
  // the size budget is the Worker upload's, a check in worker.mjs): what an
  // application that imports only the main entry loads, .wasm + JS, gzip. Both as the runtimes load the package from
  // node_modules (each runtime's entry and the files it imports, file by
  // file: Node, Deno, workerd and browsers read them so) and as a bundler or
  // `wrangler deploy --minify` ships it (bundled and minified by esbuild).
  const entries = { main: "index.js", derive: "derive-index.js" };
  const runtimes = { node: "node.js", deno: "deno.js", workerd: "workerd.js", browser: "index.js" };
  const measured = {};
  for (const [name, entry] of Object.entries(entries)) {
    const prefix = name === "main" ? "" : `${name}-`;
    const loads = Object.entries(runtimes).map(([runtime, file]) => ({ runtime, ...entrySize(pkgDir, `${prefix}${file}`) }));
    const largest = loads.reduce((a, b) => (b.wasm + b.js > a.wasm + a.js ? b : a));
    measured[name] = { ...largest, bundled: await bundledGzip(pkgDir, entry) };
    const { wasm, js, files, runtime, bundled } = measured[name];
    g.fact(
      `${name} entry: .wasm ${kb(wasm)} gzip + JS ${kb(js)} as ${runtime} loads it (${files.length - 1} files: ${files.filter((f) => f.endsWith(".js")).join(", ")}), ` +
        `total ${kb(wasm + js)}; JS bundled + minified ${kb(bundled)}, total ${kb(wasm + bundled)}`,
      `${name} ${kb(wasm + Math.max(js, bundled))}`,
    );
  }

  await g.check("each runtime's main entry loads three JS files (its own, main.js, shared.js)", () => {
    for (const file of Object.values(runtimes)) {
      const js = entrySize(pkgDir, file).files.filter((f) => f.endsWith(".js"));
      assert.deepEqual(js, [file, "main.js", "shared.js"].sort(), `${file} loads`);
    }
  });

  await g.check("one copy of every module: no source is in two of the shipped files (their source maps)", () => {
    const where = new Map();
    for (const f of files.filter((f) => f.endsWith(".js.map"))) {
      for (const source of JSON.parse(readFileSync(join(pkgDir, f), "utf8")).sources) {
        assert.ok(!where.has(source), `${source} is in both ${where.get(source)} and ${f.replace(/\.map$/, "")}`);
        where.set(source, f.replace(/\.map$/, ""));
      }
    }
    assert.ok(where.size > 30, `the source maps name ${where.size} sources`);
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
