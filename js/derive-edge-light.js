// `edge-deadline/derive` entry point for Vercel's Edge Runtime (`edge-light`): the .wasm is imported
// with `?module` as a compiled WebAssembly.Module (the runtime forbids compiling bytes at run time).
// The first API call instantiates it synchronously, so no `await init()` is needed; `init()` still works.
import { autoload, initFrom } from "./derive-load.js";
import { moduleOnly } from "./loader.js";
import wasmModule from "./edge_deadline_derive_bg.wasm?module";

export * from "./derive-api.js";

autoload(() => wasmModule);

/**
 * Loads the derive WebAssembly core. Optional in the Edge Runtime; safe to call more than once.
 * @param {WebAssembly.Module | Promise<WebAssembly.Module>} [source] the imported .wasm
 */
export function init(source) {
  return initFrom(source ?? wasmModule, moduleOnly);
}
