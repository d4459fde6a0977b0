// Entry point for Node: the first API call reads the .wasm next to this file
// and compiles it synchronously, so no `await init()` is needed; `init()`
// still works (with no argument it reads the same file).
//
// `node:fs` comes from `process.getBuiltinModule` (Node 20.16+), not from an
// `import`: the first import of a built-in module costs Node's module loader
// a measurable share of the time from import to the first deadline
// (BENCHMARKS.md, "Size and start-up"). Where it is missing (Node 20.0–20.15),
// the first call says to `await init()`, which imports `node:fs` itself.
import { autoload, initFrom } from "./load.js";
import { compile } from "./loader.js";

export * from "./api.js";

const wasm = new URL("./edge_deadline_bg.wasm", import.meta.url);
/** @type {typeof import("node:fs") | undefined} */
const fs = globalThis.process?.getBuiltinModule?.("node:fs");
if (fs) autoload(() => new WebAssembly.Module(fs.readFileSync(wasm)));

/**
 * Loads the WebAssembly core. Optional in Node; safe to call more than once.
 * @param {WebAssembly.Module | BufferSource | Response | URL | string} [source]
 */
export function init(source) {
  return initFrom(source ?? wasm, (s) => compile(s, async (url) => (fs ?? (await import("node:fs"))).readFileSync(url)));
}
