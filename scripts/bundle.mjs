// Bundles the package's JavaScript (js/ and the generated glue) into the few
// files pkg/ ships, with esbuild.
//
// Why: Node and Deno read a package module by module, and the main entry used
// to load some 22 of them (import took about three times as long as one
// bundled file). Bundled, an entry loads three files: its own few lines, the
// code of its capability and the code both capabilities share.
//
// # Units
// Every module goes into exactly one output file (a "unit"), so an
// application that imports several entries (`edge-deadline`,
// `edge-deadline/derive`, `edge-deadline/hono`) gets one copy of each module:
// one set of error classes, one clock, one timer queue, one ambient deadline,
// one loaded core per .wasm.
//   main.js         js/main.js and every module only it reaches (deadlines, plans,
//                   stall detection…, the main glue)
//   derive-main.js  js/derive-main.js and every module only it reaches
//   shared.js       the modules both reach (errors, validation, the loader)
//   hono.js         the Hono middleware (and any module only it uses)
//   one file per entry point (index.js, node.js, deno.js, workerd.js, derive-*.js,
//   hono-*.js): its own lines; it imports the units above.
// An import of a module of another unit becomes an import of that unit's
// file, which exports the module's names (the build checks they do not clash).
// The entries re-export the public API (api.js, derive-api.js) by name, so
// the internals main.js exports for the middleware and the tests stay private.
//
// esbuild's own code splitting would chunk by which entries reach each
// statement: with the middleware and four runtimes, Node's main entry loaded
// itself and four chunks, named by hashes that change with every edit.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import * as esbuild from "esbuild";
import { relativeImports } from "./sizes.mjs";

const relativeImportsOf = (file) => relativeImports(readFileSync(file, "utf8"));

/** The entry points: published (package.json exports) or internal (main.js, derive-main.js). */
export const ENTRIES = {
  main: ["index.js", "node.js", "deno.js", "workerd.js", "edge-light.js"],
  derive: ["derive-index.js", "derive-node.js", "derive-deno.js", "derive-workerd.js", "derive-edge-light.js"],
  hono: ["hono.js", "hono-node.js", "hono-deno.js", "hono-workerd.js", "hono-edge-light.js"],
  durable: ["durable.js", "durable-index.js", "durable-node.js", "durable-deno.js", "durable-workerd.js"],
};
const ROOTS = ["main.js", "derive-main.js"];
const PUBLIC_API = { "api.js": "main.js", "derive-api.js": "derive-main.js" };

/**
 * @param {{ dirs: string[], out: string, minify: boolean }} o `dirs`: where
 *   modules are found by file name (js/, then the generated glue); `out`: pkg/ being built
 * @returns {Promise<Record<string, string[]>>} which source modules each output file holds
 */
export async function bundle({ dirs, out, minify }) {
  dirs = dirs.map((d) => resolve(d));
  const find = (name) => {
    for (const d of dirs) if (existsSync(join(d, name))) return join(d, name);
    throw new Error(`scripts/bundle.mjs: no module ${name} in ${dirs.join(", ")}`);
  };
  // Module graph: one flat directory of names (js/ and the glue import each other as "./x.js").
  const resolver = (redirect) => ({
    name: "edge-deadline-modules",
    setup(build) {
      build.onResolve({ filter: /^\.\/[\w-]+\.js$/ }, (args) => {
        const name = args.path.slice(2);
        const to = redirect?.(name, basename(args.importer));
        return to ? { path: `./${to}`, external: true } : { path: find(name) };
      });
      build.onResolve({ filter: /\.wasm(\?module)?$|^node:|^cloudflare:/ }, (args) => ({ path: args.path, external: true }));
    },
  });
  const analyse = async (entry) => {
    const r = await esbuild.build({ entryPoints: [find(entry)], bundle: true, write: false, format: "esm", metafile: true, plugins: [resolver()], logLevel: "silent" });
    const [output] = Object.values(r.metafile.outputs);
    return { modules: Object.keys(output.inputs).map((p) => basename(p)), exports: output.exports };
  };

  // Which unit owns each module.
  const owner = new Map();
  const reach = {};
  for (const root of ROOTS) reach[root] = (await analyse(root)).modules;
  for (const [root, modules] of Object.entries(reach)) {
    for (const m of modules) owner.set(m, owner.has(m) && owner.get(m) !== root ? "shared.js" : root);
  }
  for (const entries of Object.values(ENTRIES)) for (const e of entries) owner.set(e, e);
  // A module only the middleware uses goes with it.
  for (const m of (await analyse("hono.js")).modules) if (!owner.has(m)) owner.set(m, "hono.js");
  // The fleet aggregator (edge-deadline/durable) likewise: its own file on top of derive-main.js
  // alone; a module it shares with main.js goes to shared.js, so it never loads main.js.
  for (const m of (await analyse("durable.js")).modules) {
    if (!owner.has(m)) owner.set(m, "durable.js");
    else if (owner.get(m) === "main.js") owner.set(m, "shared.js");
  }
  const publicNames = {};
  for (const api of Object.keys(PUBLIC_API)) publicNames[api] = (await analyse(api)).exports;

  // shared.js is `export *` of its modules: two of them exporting one name would hide both.
  const sharedModules = [...owner].filter(([, u]) => u === "shared.js").map(([m]) => m).sort();
  const seen = new Map();
  for (const m of sharedModules) {
    const r = await esbuild.build({ entryPoints: [find(m)], write: false, format: "esm", metafile: true, logLevel: "silent" });
    for (const name of Object.values(r.metafile.outputs)[0].exports) {
      if (seen.has(name)) throw new Error(`scripts/bundle.mjs: ${m} and ${seen.get(name)} both export ${name}, which shared.js would then not export`);
      seen.set(name, m);
    }
  }
  const sharedSource = sharedModules.map((m) => `export * from "./${m}";`).join("\n") + "\n";
  const exportsOf = async (m) => Object.values((await esbuild.build({ entryPoints: [find(m)], write: false, format: "esm", metafile: true, logLevel: "silent" })).metafile.outputs)[0].exports;
  // wasm-bindgen's glue imports a JS module the Rust code calls as a namespace
  // (`import * as import1 from "./validate.js"`) and hands that object to the
  // instance. When the module lives in another unit, the namespace would be the
  // whole unit's (every export of shared.js, kept alive in any application's
  // bundle); a facade in the glue's own unit re-exports only that module's names.
  const facades = {};
  for (const glue of ["edge_deadline.js", "edge_deadline_derive.js"]) {
    for (const [, spec] of readFileSync(find(glue), "utf8").matchAll(/import \* as \w+ from "\.\/([\w-]+\.js)"/g)) {
      if (owner.get(spec) && owner.get(spec) !== owner.get(glue)) facades[spec] ??= `export { ${(await exportsOf(spec)).join(", ")} } from "unit:${owner.get(spec)}";\n`;
    }
  }

  const entryPoints = [...Object.values(ENTRIES).flat(), ...ROOTS].map((e) => ({ in: find(e), out: e.replace(/\.js$/, "") }));
  entryPoints.push({ in: "virtual:shared.js", out: "shared" });
  const unitOf = (file) => (file === "virtual:shared.js" ? "shared.js" : owner.get(file));
  const result = await esbuild.build({
    entryPoints,
    outdir: out,
    bundle: true,
    format: "esm",
    platform: "neutral",
    minify,
    sourcemap: "linked",
    sourcesContent: true,
    metafile: true,
    legalComments: "none",
    logLevel: "warning",
    // wasm-bindgen's glue repeats an import key: harmless, and not ours to fix.
    logOverride: { "duplicate-object-key": "silent" },
    plugins: [
      {
        name: "edge-deadline-shared",
        setup(build) {
          build.onResolve({ filter: /^virtual:shared\.js$/ }, () => ({ path: "shared.js", namespace: "shared" }));
          build.onLoad({ filter: /.*/, namespace: "shared" }, () => ({ contents: sharedSource, resolveDir: dirs[0], loader: "js" }));
          build.onResolve({ filter: /^\.\/[\w-]+\.js$/ }, (args) => {
            const name = args.path.slice(2);
            const glue = basename(args.importer);
            if (!facades[name] || !/^edge_deadline(_derive)?\.js$/.test(glue)) return undefined;
            return { path: `${name} (for ${glue})`, namespace: "facade", pluginData: name };
          });
          build.onLoad({ filter: /.*/, namespace: "facade" }, (args) => ({ contents: facades[args.pluginData], loader: "js" }));
          build.onResolve({ filter: /^cloudflare:/ }, (args) => ({ path: args.path, external: true }));
          build.onResolve({ filter: /^unit:/ }, (args) => ({ path: `./${args.path.slice(5)}`, external: true }));
          // An entry re-exports the public API by name (not `export *`: main.js exports internals too).
          build.onLoad({ filter: /\.js$/ }, (args) => {
            const name = basename(args.path);
            if (/^edge_deadline(_derive)?\.js$/.test(name)) return { contents: shakeableGlue(readFileSync(args.path, "utf8"), name), loader: "js" };
            if (!Object.values(ENTRIES).flat().includes(name)) return undefined;
            let source = readFileSync(args.path, "utf8");
            for (const [api, names] of Object.entries(publicNames)) {
              source = source.replace(`export * from "./${api}";`, `export { ${names.join(", ")} } from "./${api}";`);
            }
            if (/\bexport\s*\*/.test(source)) throw new Error(`scripts/bundle.mjs: ${name} re-exports with \`export *\`, which would publish main.js's internals; export * from "./api.js" (or derive-api.js) is the one form it rewrites`);
            return { contents: source, loader: "js" };
          });
        },
      },
      resolver((name, importer) => {
        const from = importer === "shared.js" ? "shared.js" : unitOf(importer);
        const to = PUBLIC_API[name] ?? owner.get(name);
        if (!to) throw new Error(`scripts/bundle.mjs: ${importer} imports ./${name}, which no unit owns`);
        return to === from ? null : to;
      }),
    ],
  });

  // The maps name each source as a module of the package (`js/deadline.js`),
  // not by where this build found it; its text is in the map.
  for (const file of Object.keys(result.metafile.outputs).filter((f) => f.endsWith(".map"))) {
    const map = JSON.parse(readFileSync(file, "utf8"));
    map.sources = map.sources.map((s) => `js/${basename(s)}`);
    writeFileSync(file, JSON.stringify(map));
  }

  // Each module in exactly one file.
  const units = {};
  const where = new Map();
  for (const [file, o] of Object.entries(result.metafile.outputs)) {
    if (!file.endsWith(".js")) continue;
    const modules = Object.keys(o.inputs)
      .filter((p) => !p.startsWith("facade:"))
      .map((p) => (p.startsWith("shared:") ? "(shared.js exports)" : basename(p)));
    units[basename(file)] = modules;
    for (const m of modules) {
      if (where.has(m)) throw new Error(`scripts/bundle.mjs: ${m} is in both ${where.get(m)} and ${basename(file)}`);
      where.set(m, basename(file));
    }
  }
  // The fleet aggregator's entry loads derive-main.js and shared.js, never the deadlines' main.js.
  for (const file of ENTRIES.durable) {
    if (relativeImportsOf(join(out, file)).includes("./main.js")) throw new Error(`scripts/bundle.mjs: ${file} imports main.js`);
  }
  return units;
}

/**
 * wasm-bindgen's glue defines each exported class, then sets its `Symbol.dispose` and makes its
 * `FinalizationRegistry` in top-level statements, which a bundler must keep: every class (and the
 * Wasm exports its methods call) stayed in an application that never uses it (a Worker that relays
 * carried the hedge's). Here each class becomes a pure expression that sets its dispose inside, and
 * each registry a pure `new`, so a bundler drops what is not used. The build fails if the glue's
 * shape is not the one this expects.
 */
export function shakeableGlue(source, file) {
  const classes = [...source.matchAll(/^export class (\w+) \{$/gm)].map((m) => m[1]);
  let out = source;
  for (const c of classes) {
    const at = new RegExp(`^export class ${c} \\{\\n([\\s\\S]*?)^\\}\\nif \\(Symbol\\.dispose\\) ${c}\\.prototype\\[Symbol\\.dispose\\] = ${c}\\.prototype\\.free;\\n`, "m");
    if (!at.test(out)) throw new Error(`scripts/bundle.mjs: ${file}'s class ${c} is not followed by its Symbol.dispose line`);
    out = out.replace(at, (_, body) => `export const ${c} = /* @__PURE__ */ (() => {\nclass ${c} {\n${body}}\nif (Symbol.dispose) ${c}.prototype[Symbol.dispose] = ${c}.prototype.free;\nreturn ${c};\n})();\n`);
  }
  const registry = /: new FinalizationRegistry\(/g;
  const registries = out.match(registry)?.length ?? 0;
  if (registries !== classes.length) throw new Error(`scripts/bundle.mjs: ${file} has ${classes.length} classes and ${registries} FinalizationRegistry`);
  return out.replace(registry, ": /* @__PURE__ */ new FinalizationRegistry(");
}
