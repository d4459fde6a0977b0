// Builds the package directory pkg/ from the crate and js/, as wasm-pack.toml
// says: for each [[output]] (one .wasm per capability),
//   cargo (wasm32, the profile, the output's features) → wasm-bindgen → wasm-opt
// then bundle js/ and the glue (scripts/bundle.mjs) and write package.json.
// Plain cargo + wasm-bindgen: wasm-pack would try to download its tools, which
// this project's CI cannot do (see docs/design.md, "Build").
//
// WASM_NAMES=1 keeps the function names in each .wasm (for a size profile:
// `twiggy top --retained pkg/edge_deadline_bg.wasm`); never for a release.
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { readWasmConfig, root } from "./wasm-config.mjs";
import { bundle } from "./bundle.mjs";
import { entrySize } from "./sizes.mjs";

const { build, output } = readWasmConfig();
const names = process.env.WASM_NAMES === "1";
const pkg = join(root, build["out-dir"]);
// Build beside pkg/ and swap it in at the end, so a test run reading pkg/
// never sees a half-built package.
const out = join(root, `.pkg-build-${process.pid}`);
// The generated JavaScript (each .wasm's glue, wasm_exports.js): bundled into
// pkg/ with js/, kept here for tsc (jsconfig.json) and for a look at the source.
const glue = join(root, "target/pkg-js");
const run = (cmd, args) => execFileSync(cmd, args, { cwd: root, stdio: ["ignore", "inherit", "inherit"] });

rmSync(out, { recursive: true, force: true });
rmSync(glue, { recursive: true, force: true });
mkdirSync(glue, { recursive: true });
process.on("exit", () => rmSync(out, { recursive: true, force: true }));

// What js/loader.js checks before instantiating a module it was given, so a
// wrong .wasm is refused before it can leave the glue half-initialised: the
// number of exports and a digest of their sorted names (the function is
// written into the file, so the build and the check share one definition).
function exportsDigest(names) {
  let h = 0x811c9dc5; // FNV-1a, 32 bits
  for (const name of names) {
    for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193) >>> 0;
    h = Math.imul(h ^ 0x2c, 0x01000193) >>> 0; // a separator: ["ab"] ≠ ["a", "b"]
  }
  return h;
}

// wasm-bindgen hands a JS module whose functions the .wasm imports directly
// (no shim: `readFields` takes and returns externrefs) to the instance as a
// whole namespace (`import * as import1 from "./validate.js"`). Bundled, that
// namespace is shared.js's, so a bundler had to keep every export of it (the
// Worker example uploaded all 16 KB of shared.js). The glue imports, by name,
// exactly what the .wasm imports from each such module instead.
function namedImports(file, imports) {
  let source = readFileSync(file, "utf8");
  for (const [line, local, spec] of source.matchAll(/^import \* as (\w+) from "([^"]+)";?$/gm)) {
    const names = [...new Set(imports.filter((i) => i.module === spec).map((i) => i.name))];
    if (!names.length || names.some((n) => !/^[A-Za-z_$][\w$]*$/.test(n))) throw new Error(`scripts/build.mjs: ${file}: cannot name the imports of ${spec}: ${names}`);
    const alias = (n) => `${local}_${n}`;
    source = source.replace(line, `import { ${names.map((n) => `${n} as ${alias(n)}`).join(", ")} } from "${spec}";`);
    const use = `${JSON.stringify(spec)}: ${local},`;
    if (!source.includes(use)) throw new Error(`scripts/build.mjs: ${file}: ${local} is not used as the imports of ${spec}`);
    source = source.replace(use, `${JSON.stringify(spec)}: { ${names.map((n) => `${n}: ${alias(n)}`).join(", ")} },`);
  }
  writeFileSync(file, source);
}

// The names the .wasm and its glue use for each other (wasm-pack.toml
// `minify-names`): wasm-bindgen's import names carry a hash each
// (`__wbg_coreError_397b30d33bd18a65`, 45 of them in the main .wasm, once in
// the .wasm and once in the glue), and gzip cannot shorten hashes. wasm-opt
// renames the imports, their modules and the exports to one or two letters
// and prints the mapping, which is applied to the glue here: its import
// object's keys and its `wasm.<export>` uses. Nothing else sees these names
// (the API calls the glue's functions, whose names stay).
function minifyNames(wasm, file) {
  const features = build["wasm-opt"].filter((f) => f.startsWith("--enable-"));
  const out = execFileSync(join(root, "node_modules/.bin/wasm-opt"), [...features, "--minify-imports-and-exports-and-modules", wasm, "-o", wasm], { cwd: root });
  const map = JSON.parse(out.toString().slice(out.indexOf("{")));
  let source = readFileSync(file, "utf8");
  const fail = (why) => {
    throw new Error(`scripts/build.mjs: ${file}: ${why}`);
  };
  const literal = (text) => text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
  // Imports: each function's key in its module's object (`__wbg_…: function`
  // in import0, `readFields: import1_readFields` for a module imported by name).
  for (const [, name, short] of map.imports) {
    const key = new RegExp(`(^|[\\s{,])${literal(name)}:`, "gm");
    const hits = source.match(key)?.length ?? 0;
    if (hits !== 1) fail(`the import ${name} is a key ${hits} times, not once`);
    source = source.replace(key, `$1${short}:`);
  }
  // Modules: wasm-opt puts every import in one module with a short name (the
  // imports' new names are distinct), so the import object's entries, one per
  // module ("./edge_deadline_bg.js": import0, …), become one.
  const [module, ...others] = new Set(WebAssembly.Module.imports(new WebAssembly.Module(readFileSync(wasm))).map((i) => i.module));
  if (others.length) fail(`wasm-opt left imports in ${others.length + 1} modules`);
  const entries = [...new Set(map.imports.map(([m]) => m))].map((m) => {
    const found = new RegExp(`^\\s*${literal(JSON.stringify(m))}: (.+),\\n`, "m").exec(source);
    if (!found) fail(`the module ${m} is not an entry of the import object`);
    source = source.replace(found[0], "");
    return found[1];
  });
  const objectEnd = /(return \{\n(\s*)__proto__: null,\n)(\s*\};\n\}\n)/;
  if (!objectEnd.test(source)) fail("the import object has no place for its one module");
  source = source.replace(objectEnd, (all, head, indent, tail) => `${head}${indent}${JSON.stringify(module)}: Object.assign({}, ${entries.join(", ")}),\n${tail}`);
  // Exports: every `wasm.<name>`.
  const exports = new Map(map.exports);
  source = source.replace(/\bwasm\.([A-Za-z_$][\w$]*)/g, (use, name) => {
    if (!exports.has(name)) fail(`uses wasm.${name}, which the .wasm does not export`);
    return `wasm.${exports.get(name)}`;
  });
  writeFileSync(file, source);
}

const expected = {};
for (const { name, features } of output) {
  run("cargo", [
    "build", "--lib", "--profile", build.profile, "--target", "wasm32-unknown-unknown",
    "--no-default-features", "--features", features.join(","),
  ]);
  run(join(root, ".tools/bin/wasm-bindgen"), [
    "--target", build.targets[0],
    "--out-dir", out,
    "--out-name", name,
    ...(build["remove-name-section"] && !names ? ["--remove-name-section"] : []),
    join(root, "target/wasm32-unknown-unknown", build.profile, "edge_deadline.wasm"),
  ]);
  // The glue's types are published (the .d.ts files of js/ import the data types
  // generated from the Rust types); the raw exports' types are not.
  rmSync(join(out, `${name}_bg.wasm.d.ts`), { force: true });
  renameSync(join(out, `${name}.js`), join(glue, `${name}.js`));
  const wasm = join(out, `${name}_bg.wasm`);
  run(join(root, "node_modules/.bin/wasm-opt"), [...build["wasm-opt"], ...(names ? ["-g"] : []), wasm, "-o", wasm]);
  namedImports(join(glue, `${name}.js`), WebAssembly.Module.imports(new WebAssembly.Module(readFileSync(wasm))));
  if (build["minify-names"] && !names) minifyNames(wasm, join(glue, `${name}.js`));
  const compiled = new WebAssembly.Module(readFileSync(wasm));
  const exported = WebAssembly.Module.exports(compiled).map((e) => e.name).sort();
  expected[name] = [exported.length, exportsDigest(exported)];
}
writeFileSync(
  join(glue, "wasm_exports.js"),
  `// Generated by scripts/build.mjs: what js/loader.js expects of each .wasm ([exports, digest of their names]).
export const EXPORTS = ${JSON.stringify(expected)};
export ${exportsDigest.toString()}
`,
);

// Minified, with source maps: measured smaller and faster to import in Node
// (BENCHMARKS.md, "Size and start-up"). EDGE_DEADLINE_MINIFY=0 builds it readable.
const minify = process.env.EDGE_DEADLINE_MINIFY !== "0";
const units = await bundle({ dirs: [join(root, "js"), glue], out, minify });
for (const unit of ["main.js", "derive-main.js", "shared.js"]) console.log(`pkg/${unit}: ${units[unit].filter((m) => m.endsWith(".js")).length} modules`);
for (const f of readdirSync(join(root, "js"))) if (!f.endsWith(".js")) copyFileSync(join(root, "js", f), join(out, f));
copyFileSync(join(root, "LICENSE"), join(out, "LICENSE"));
// The API reference and the SDK recipes travel with the package: its README links to them.
mkdirSync(join(out, "docs"));
for (const f of ["api.md", "recipes.md"]) copyFileSync(join(root, "docs", f), join(out, "docs", f));

const crate = readFileSync(join(root, "Cargo.toml"), "utf8");
const version = /^version = "([^"]+)"/m.exec(crate)[1];
// One set of conditions per entry point: the runtime's own loader (workerd,
// Deno and Node load the .wasm synchronously at the first call; browsers and
// bundlers call init()). The entries with an autoload register it at import,
// so they are the package's side effects. The Hono middleware has the same
// conditions: its Node, Deno and workerd files import that runtime's main
// entry first, so it loads the core by itself too.
const conditions = (types, file) => {
  const entry = (runtime) => ({ types, default: `./${file(runtime)}` });
  return {
    types,
    workerd: entry("workerd"),
    // `worker` is also set by bundlers for browser Web Workers, which
    // cannot import a bare .wasm; wrangler matches `workerd` first.
    worker: entry("index"),
    deno: entry("deno"),
    browser: entry("index"),
    node: entry("node"),
    default: entry("index"),
  };
};
const sideEffects = ["", "derive-", "hono-"].flatMap((p) => ["node.js", "workerd.js", "deno.js"].map((f) => `./${p}${f}`));
writeFileSync(
  join(out, "package.json"),
  JSON.stringify(
    {
      name: "edge-deadline",
      version,
      description: "Real deadlines for edge runtimes: one instant, budgets, stall detection, derived timeouts",
      license: "MIT",
      type: "module",
      sideEffects,
      types: "./index.d.ts",
      main: "./node.js",
      exports: {
        ".": conditions("./index.d.ts", (r) => `${r}.js`),
        // Latency data and the timeouts derived from it: its own .wasm.
        "./derive": conditions("./derive-index.d.ts", (r) => `derive-${r}.js`),
        // The Hono middleware (in browsers, after the main entry's init()).
        "./hono": conditions("./hono.d.ts", (r) => (r === "index" ? "hono.js" : `hono-${r}.js`)),
        ...Object.fromEntries(output.map(({ name }) => [`./${name}_bg.wasm`, `./${name}_bg.wasm`])),
        "./package.json": "./package.json",
      },
      files: readdirSync(out).filter((f) => f !== "package.json"),
    },
    null,
    2,
  ) + "\n",
);

rmSync(pkg, { recursive: true, force: true });
renameSync(out, pkg);

for (const [label, entry] of [["edge-deadline", "index.js"], ["edge-deadline/derive", "derive-index.js"]]) {
  const { wasm, js, files } = entrySize(pkg, entry);
  console.log(`pkg/ ${label}: .wasm ${wasm} B gzip + JS ${js} B gzip (${files.length} files) = ${((wasm + js) / 1024).toFixed(1)} KB gzip`);
}
