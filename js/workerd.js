// Entry point for Cloudflare Workers (workerd, wrangler): the .wasm is
// imported as a compiled WebAssembly.Module, which is how Workers load Wasm
// (they forbid compiling bytes at run time). The first API call instantiates
// it synchronously, so no `await init()` is needed; `init()` still works.
import { autoload, initFrom } from "./load.js";
import { moduleOnly } from "./loader.js";
import wasmModule from "./edge_deadline_bg.wasm";

export * from "./api.js";

autoload(() => wasmModule);

/**
 * Loads the WebAssembly core. Optional in Workers; safe to call more than once.
 * @param {WebAssembly.Module | Promise<WebAssembly.Module>} [source] the imported .wasm
 *   (Workers cannot compile bytes, so nothing else loads here)
 */
export function init(source) {
  return initFrom(source ?? wasmModule, moduleOnly);
}
