// What an entry point costs a user: the .wasm it loads and every JS module in
// its static import graph, each gzipped on its own (level 9), the way the
// package's size targets are stated (BENCHMARKS.md, tests/package).
import { existsSync, readFileSync } from "node:fs";
import { join, posix } from "node:path";
import { gzipSync } from "node:zlib";

/** Relative specifiers a module imports or re-exports (static and dynamic), and `new URL("./x", import.meta.url)`. */
export function relativeImports(source) {
  const out = new Set();
  const patterns = [
    // Minified code drops the spaces: `import{a as b}from"./main.js"`, `export*from"./x.js"`.
    /\b(?:import|export)\s*(?:type\s+)?(?:[\w*${}\s,]+?\s*from\s*)?["'](\.{1,2}\/[^"']+)["']/g,
    /\bimport\(\s*["'](\.{1,2}\/[^"']+)["']\s*\)/g,
    /\bnew URL\(\s*["'](\.{1,2}\/[^"']+)["']\s*,\s*import\.meta\.url\s*\)/g,
  ];
  // Comments are not imports: the readable bundles keep JSDoc such as `@type {import("./timers.js").Child}`.
  const code = source.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
  for (const re of patterns) for (const m of code.matchAll(re)) out.add(m[1]);
  return [...out];
}

export const gzipSize = (path) => gzipSync(readFileSync(path), { level: 9 }).length;

/**
 * The files `entry` (a path inside `dir`) reaches, itself included, and their
 * gzip sizes: `{ wasm, js, files }` (bytes; .wasm files and JS modules apart).
 */
export function entrySize(dir, entry) {
  const seen = new Set();
  const queue = [entry];
  while (queue.length) {
    const f = posix.normalize(queue.pop());
    if (seen.has(f) || !existsSync(join(dir, f))) continue;
    seen.add(f);
    if (f.endsWith(".js")) queue.push(...relativeImports(readFileSync(join(dir, f), "utf8")).map((s) => posix.join(posix.dirname(f), s)));
  }
  const files = [...seen].sort();
  const sum = (list) => list.reduce((s, f) => s + gzipSize(join(dir, f)), 0);
  return { wasm: sum(files.filter((f) => f.endsWith(".wasm"))), js: sum(files.filter((f) => f.endsWith(".js"))), files };
}

/**
 * gzip (level 9) of `entry`'s JS bundled and minified by esbuild, the .wasm
 * and node: modules left out: what a bundler or `wrangler deploy --minify` ships.
 */
export async function bundledGzip(dir, entry) {
  const esbuild = await import(new URL("../node_modules/esbuild/lib/main.js", import.meta.url));
  const { outputFiles } = await esbuild.build({
    entryPoints: [join(dir, entry)],
    bundle: true,
    minify: true,
    format: "esm",
    platform: "neutral",
    write: false,
    external: ["*.wasm", "node:*"],
    logLevel: "silent",
  });
  return gzipSync(outputFiles[0].contents, { level: 9 }).length;
}
