// `edge-deadline/derive` entry point for browsers and bundlers: `await init()` fetches the .wasm that
// sits next to this file (a browser compiles it asynchronously, off the main
// thread). Workers, Deno and Node have entries of their own that need no init().
import { initFrom } from "./derive-load.js";
import { compile, noWasmUrl } from "./loader.js";

export * from "./derive-api.js";

/**
 * Loads the derive WebAssembly core. Safe to call more than once.
 * @param {WebAssembly.Module | BufferSource | Response | URL | string} [source]
 */
export function init(source) {
  if (source == null) {
    // Written out as `new URL("./…", import.meta.url)`: bundlers find the .wasm by this pattern and ship it.
    // A bundle that keeps no module URL makes it throw: the rejection then says what to pass.
    try {
      source = new URL("./edge_deadline_derive_bg.wasm", import.meta.url);
    } catch (error) {
      return Promise.reject(noWasmUrl("edge_deadline_derive_bg.wasm", error));
    }
  }
  return initFrom(source, compile);
}
