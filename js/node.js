// Entry point for Node: `init()` with no argument reads the .wasm next to this
// file from disk (Node's fetch cannot load file: URLs).
import { initFrom } from "./load.js";

export * from "./api.js";

const readFile = async (url) => (await import("node:fs/promises")).readFile(url);

/**
 * Loads the WebAssembly core. Safe to call more than once.
 * @param {WebAssembly.Module | BufferSource | Response | URL | string} [source]
 */
export function init(source) {
  return initFrom(source ?? new URL("./edge_deadline_bg.wasm", import.meta.url), readFile);
}
