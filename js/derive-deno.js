// `edge-deadline/derive` entry point for Deno: the .wasm is imported as a module source (compiled by
// Deno's module loader, which needs no --allow-read), and the first API call
// instantiates it synchronously, so no `await init()` is needed; `init()`
// still works.
import { autoload, initFrom } from "./derive-load.js";
import { compile } from "./loader.js";
import source wasmModule from "./edge_deadline_derive_bg.wasm";

export * from "./derive-api.js";

autoload(() => wasmModule);

/**
 * Loads the derive WebAssembly core. Optional in Deno; safe to call more than once.
 * @param {WebAssembly.Module | BufferSource | Response | URL | string} [source]
 */
export function init(source) {
  return initFrom(source ?? wasmModule, compile);
}
