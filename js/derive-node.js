// `edge-deadline/derive` entry point for Node: the first API call reads the .wasm next to this file
// and compiles it synchronously, so no `await init()` is needed; `init()`
// still works (with no argument it reads the same file). `node:fs` comes from
// `process.getBuiltinModule`, as in node.js (which says why).
import { autoload, initFrom } from "./derive-load.js";
import { compile } from "./loader.js";

export * from "./derive-api.js";

const wasm = new URL("./edge_deadline_derive_bg.wasm", import.meta.url);
/** @type {typeof import("node:fs") | undefined} */
const fs = globalThis.process?.getBuiltinModule?.("node:fs");
if (fs) autoload(() => new WebAssembly.Module(fs.readFileSync(wasm)));

/**
 * Loads the derive WebAssembly core. Optional in Node; safe to call more than once.
 * @param {WebAssembly.Module | BufferSource | Response | URL | string} [source]
 */
export function init(source) {
  return initFrom(source ?? wasm, (s) => compile(s, async (url) => (fs ?? (await import("node:fs"))).readFileSync(url)));
}
