// Entry point for browsers, Deno and bundlers: `init()` with no argument
// fetches the .wasm that sits next to this file.
import { initFrom } from "./load.js";

export * from "./api.js";

/**
 * Loads the WebAssembly core. Safe to call more than once.
 * @param {WebAssembly.Module | BufferSource | Response | URL | string} [source]
 */
export function init(source) {
  return initFrom(source ?? new URL("./edge_deadline_bg.wasm", import.meta.url));
}
