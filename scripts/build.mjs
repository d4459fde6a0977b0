// Builds the package directory pkg/ from the crate and js/, as wasm-pack.toml
// says: for each [[output]] (one .wasm per capability),
//   cargo (wasm32, the profile, the output's features) → wasm-bindgen → wasm-opt
// then bundle js/ and the glue (scripts/bundle.mjs) and write package.json.
// wasm-bindgen's generated glue is bundled as it is generated: never edited.
// Plain cargo + wasm-bindgen + wasm-opt, one run per output (docs/design.md,
// "Build", has the measured comparison with `wasm-pack build --mode no-install`).
//
// WASM_NAMES=1 keeps the function names in each .wasm (for a size profile:
// `node scripts/wasm-sizes.mjs pkg/edge_deadline_bg.wasm`); never for a release.
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { readWasmConfig, root } from "./wasm-config.mjs";
import { bundle } from "./bundle.mjs";
import { entrySize } from "./sizes.mjs";
// What js/loader.js checks before instantiating a module it was given, so a
// wrong .wasm is refused before it can leave the glue half-initialised: the
// number of exports and a digest of their sorted names.
import { exportsDigest } from "../js/digest.js";

const { build, output } = readWasmConfig();
const names = process.env.WASM_NAMES === "1";
const pkg = join(root, build["out-dir"]);
// Build beside pkg/ and swap it in at the end, so a test run reading pkg/
// never sees a half-built package.
const out = join(root, `.pkg-build-${process.pid}`);
// The generated JavaScript (each .wasm's glue, wasm_exports.js): bundled into
// pkg/ with js/, kept here for tsc (jsconfig.json) and for a look at the source.
const glue = join(root, "target/pkg-js");
const run = (cmd, args, env) => execFileSync(cmd, args, { cwd: root, env: env && { ...process.env, ...env }, stdio: ["ignore", "inherit", "inherit"] });
// wasm-pack.toml's `rustflags`, for the wasm32 compile only (the host build and
// the CLI keep theirs). Set in the environment, they replace its own.
// The paths the .wasm's panic messages name are made the same on every machine:
// the crates' sources as `crates/<name>-<version>/…`, this crate's as `src/…`.
const cargoHome = process.env.CARGO_HOME ?? join(homedir(), ".cargo");
const registries = join(cargoHome, "registry/src");
// (A path with a space is left as it is: the flags are one space-separated variable.)
const remap = [
  ...(existsSync(registries) ? readdirSync(registries).map((d) => [join(registries, d), "crates"]) : []),
  [root, "."],
]
  .filter(([from]) => !/\s/.test(from))
  .map(([from, to]) => `--remap-path-prefix=${from}=${to}`);
const rustflags = process.env.CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS ?? [...(build.rustflags ?? []), ...remap].join(" ");

rmSync(out, { recursive: true, force: true });
rmSync(glue, { recursive: true, force: true });
mkdirSync(glue, { recursive: true });
process.on("exit", () => rmSync(out, { recursive: true, force: true }));

const expected = {};
for (const { name, features } of output) {
  run("cargo", [
    "build", "--lib", "--profile", build.profile, "--target", "wasm32-unknown-unknown",
    "--no-default-features", "--features", features.join(","),
  ], { CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS: rustflags });
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
  // The glue takes a module made in another realm too (Next.js's edge sandbox hands one in): the
  // engine instantiates it (a brand check), the glue's `instanceof` alone would refuse it (js/loader.js, isWasmModule).
  const glueCode = readFileSync(join(out, `${name}.js`), "utf8");
  const moduleCheck = "if (!(module instanceof WebAssembly.Module)) {";
  if (glueCode.split(moduleCheck).length !== 2) throw new Error(`the ${name}.js glue no longer has one \`${moduleCheck}\`: see scripts/build.mjs`);
  writeFileSync(join(glue, `${name}.js`), glueCode.replace(moduleCheck, 'if (!(module instanceof WebAssembly.Module || Object.prototype.toString.call(module) === "[object WebAssembly.Module]")) {'));
  rmSync(join(out, `${name}.js`));
  const wasm = join(out, `${name}_bg.wasm`);
  run(join(root, "node_modules/.bin/wasm-opt"), [...build["wasm-opt"], ...(names ? ["-g"] : []), wasm, "-o", wasm]);
  const compiled = new WebAssembly.Module(readFileSync(wasm));
  const exported = WebAssembly.Module.exports(compiled).map((e) => e.name).sort();
  expected[name] = [exported.length, exportsDigest(exported)];
}
writeFileSync(
  join(glue, "wasm_exports.js"),
  `// Generated by scripts/build.mjs: what js/loader.js expects of each .wasm ([exports, digest of their names: js/digest.js]).
export const EXPORTS = ${JSON.stringify(expected)};
`,
);

// Readable, with source maps: an application's bundler (wrangler, Vite,
// esbuild) minifies what it ships, and an uncaught error in Node prints the
// source line it was thrown from, which in a minified module is the whole
// module (BENCHMARKS.md, "Size and start-up", for what it costs to import).
// EDGE_DEADLINE_MINIFY=1 builds it minified.
const minify = process.env.EDGE_DEADLINE_MINIFY === "1";
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
const conditions = (types, file, edgeLight = true) => {
  const entry = (runtime) => ({ types, default: `./${file(runtime)}` });
  return {
    types,
    // Vercel's Edge Runtime (Next.js edge routes and middleware): the .wasm imported with `?module`.
    ...(edgeLight ? { "edge-light": entry("edge-light") } : {}),
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
const sideEffects = ["", "derive-", "hono-", "durable-"].flatMap((p) => ["node.js", "workerd.js", "deno.js", ...(p === "durable-" ? [] : ["edge-light.js"])].map((f) => `./${p}${f}`));
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
        // The fleet's aggregator: a Durable Object class and the same on Deno KV.
        // (No edge-light file: a Durable Object or Deno KV does not run there; the default entry answers.)
        "./durable": conditions("./durable.d.ts", (r) => `durable-${r}.js`, false),
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
