// Entry point for Vercel's Edge Runtime (the `edge-light` condition: Next.js edge routes and
// middleware, Vercel Edge Functions): the .wasm is imported with `?module`, which is how that
// runtime hands a compiled WebAssembly.Module to the code (it forbids compiling bytes at run time).
// The first API call instantiates it synchronously, so no `await init()` is needed; `init()` still works.
import { autoload, initFrom } from "./load.js";
import { moduleOnly } from "./loader.js";
import wasmModule from "./edge_deadline_bg.wasm?module";

export * from "./api.js";

autoload(() => wasmModule);

/**
 * Loads the WebAssembly core. Optional in the Edge Runtime; safe to call more than once.
 * @param {WebAssembly.Module | Promise<WebAssembly.Module>} [source] the imported .wasm
 *   (the Edge Runtime cannot compile bytes, so nothing else loads here)
 */
export function init(source) {
  return initFrom(source ?? wasmModule, moduleOnly);
}
