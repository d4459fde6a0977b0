// Instantiating the Wasm core, once, from whatever the runtime can hand us.
//
// Every runtime gets the .wasm differently: Workers import it as a compiled
// `WebAssembly.Module`, browsers and Deno fetch a URL, Node reads a file, and a
// bundler may hand over bytes. `initFrom` accepts all of them and guarantees:
//   1. at most one instantiation per copy of the package: a second call (or a
//      concurrent one) returns the first call's promise;
//   2. a failed instantiation can be retried (the failed promise is forgotten);
//   3. until it resolves, `core()` throws a plain-words error instead of the
//      glue's "cannot read properties of undefined";
//   4. a failed call leaves nothing behind. The glue keeps the first instance
//      it finishes, even one of a wrong module (it would then answer every
//      later call with that instance), so a module is checked before the
//      glue sees it: its exports must be the ones this build produced
//      (wasm_exports.js, written by scripts/build.mjs).

import { initSync } from "./edge_deadline.js";
import { EXPORTS, EXPORTS_DIGEST, exportsDigest } from "./wasm_exports.js";

let pending = null;
let ready = false;

/** True once `init()` has finished. */
export function isReady() {
  return ready;
}

/** Throws the not-initialised error; kept out of line so callers stay small. */
export function notReady(what) {
  throw new Error(
    `edge-deadline: ${what} was used before the WebAssembly core was loaded; call \`await init()\` first`,
  );
}

function isResponse(x) {
  return typeof Response !== "undefined" && x instanceof Response;
}

/** Refuses a module that is not this copy's core (invariant 4). */
function checkCore(module) {
  const names = WebAssembly.Module.exports(module).map((e) => e.name).sort();
  if (names.length !== EXPORTS || exportsDigest(names) !== EXPORTS_DIGEST) {
    throw new Error(
      `edge-deadline: init() was given a WebAssembly module that is not this package's core ` +
        `(${names.length} exports, expected ${EXPORTS} with other names); pass the edge_deadline_bg.wasm ` +
        "that ships with this copy of the package",
    );
  }
  return module;
}

/** WebAssembly.compile, naming the package when the bytes are not a module. */
async function compileBytes(bytes) {
  try {
    return await WebAssembly.compile(bytes);
  } catch (error) {
    throw new Error(`edge-deadline: init() could not compile the .wasm it was given: ${error?.message ?? error}`, { cause: error });
  }
}

async function compile(source, readFile) {
  source = await source;
  if (source instanceof WebAssembly.Module) return source;
  if (source instanceof ArrayBuffer || ArrayBuffer.isView(source)) return compileBytes(source);
  if (typeof source === "string" || source instanceof URL) {
    const url = new URL(source, import.meta.url);
    if (url.protocol === "file:" && readFile) return compileBytes(await readFile(url));
    source = await fetch(url);
  }
  if (isResponse(source)) {
    if (!source.ok) throw new Error(`edge-deadline: fetching the .wasm failed with HTTP ${source.status} (${source.url})`);
    const wasmType = source.headers.get("content-type")?.startsWith("application/wasm");
    if (wasmType && WebAssembly.compileStreaming) return WebAssembly.compileStreaming(source);
    return compileBytes(await source.arrayBuffer());
  }
  throw new TypeError(
    "edge-deadline: init(source) accepts a WebAssembly.Module, an ArrayBuffer or typed array of the .wasm bytes, " +
      `a Response, a URL or URL string, or nothing; got ${source === null ? "null" : typeof source}`,
  );
}

/**
 * @param {unknown} source what the caller passed, or the entry point's default
 * @param {(url: URL) => Promise<Uint8Array>} [readFile] how this runtime reads file: URLs
 */
export function initFrom(source, readFile) {
  if (ready) return Promise.resolve();
  if (pending) return pending;
  pending = (async () => {
    const module = checkCore(await compile(source, readFile));
    initSync({ module });
    ready = true;
  })();
  pending.catch(() => {
    pending = null;
  });
  return pending;
}
