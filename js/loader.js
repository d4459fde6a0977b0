// Instantiating a Wasm core, once, from whatever the runtime can hand us.
//
// The package has two cores (one .wasm each, wasm-pack.toml's outputs): the
// main one (js/load.js) and the derive one (js/derive-load.js). Each gets one
// loader from `loader()` below, with its own state.
//
// Every runtime gets the .wasm differently: Workers import it as a compiled
// `WebAssembly.Module`, Deno imports it as a module source, browsers fetch a
// URL, Node reads a file, and a bundler may hand over bytes. `initFrom`
// takes the entry's way of turning a source into a module: `compile` accepts
// all of them; `moduleOnly`, the Workers entries', only the imported module
// (Workers cannot compile bytes, and a Worker then uploads none of
// `compile`'s fetching). Where the runtime's entry can produce the module
// synchronously (workerd, Deno, Node: `autoload`), the first API call loads it
// without any `init()`. A loader guarantees:
//   1. at most one instantiation per copy of the package: a second call (or a
//      concurrent one) returns the first call's promise;
//   2. a failed instantiation can be retried (the failed promise is forgotten;
//      a failed autoload is tried again at the next call);
//   3. until it is loaded, `notReady()` (called by every API before it
//      touches the core) loads it synchronously where the entry can, and
//      otherwise throws a plain-words error instead of the glue's "cannot
//      read properties of undefined";
//   4. a failed call leaves nothing behind. The glue keeps the first instance
//      it finishes, even one of a wrong module (it would then answer every
//      later call with that instance), so a module is checked before the
//      glue sees it: its exports must be the ones this build produced
//      (wasm_exports.js, written by scripts/build.mjs with js/digest.js).
//   5. a .wasm URL that answers with something else (a dev server's HTML
//      fallback page) is an error that says so and how to fix it, never the
//      engine's "expected magic word" CompileError.
//
// # Dev servers that move the module away from its .wasm
// The browser entry finds its .wasm with `new URL("./edge_deadline_bg.wasm",
// import.meta.url)`. Bundlers (esbuild, Rollup, Vite 8's pre-bundling) copy
// or rewrite that URL; Vite 5–7 pre-bundled dependencies with esbuild into
// `node_modules/.vite/deps/` and left the URL pointing there, where the dev
// server answers with index.html. For that one layout the package's own copy
// (`node_modules/edge-deadline/`) is tried once before giving up; anything
// else gets the error of invariant 5, naming Vite's `optimizeDeps.exclude`.

import { argumentError, CODES } from "./errors.js";
import { exportsDigest } from "./digest.js";

function isResponse(x) {
  return typeof Response !== "undefined" && x instanceof Response;
}

/** A Vite 5–7 pre-bundle's .wasm URL → the package's own copy beside it; else null. */
const VITE_DEPS = /\/node_modules\/\.vite\/deps(?:_temp_[^/]*)?\/(edge_deadline\w*_bg\.wasm)$/;
function packageCopy(url) {
  const m = VITE_DEPS.exec(url.pathname);
  return m ? new URL(`../../edge-deadline/${m[1]}`, url) : null;
}

/** A page (HTML) answered where the .wasm was asked for: the dev-server fallback (invariant 5). */
function isPage(response) {
  return /^text\/html/i.test(response.headers.get("content-type") ?? "");
}

function notWasm(url) {
  return new Error(
    `edge-deadline: the .wasm URL answered with an HTML page, not WebAssembly (${url}). ` +
      "A dev server or bundler moved this module away from its .wasm: with Vite, add " +
      '`optimizeDeps: { exclude: ["edge-deadline"] }` to vite.config; elsewhere pass the .wasm to init() ' +
      "yourself (its URL, a Response or its bytes).",
  );
}

/** WebAssembly.compile, naming the package when the bytes are not a module. */
async function compileBytes(bytes) {
  try {
    return await WebAssembly.compile(bytes);
  } catch (error) {
    throw new Error(`edge-deadline: init() could not compile the .wasm it was given: ${error?.message ?? error}`, { cause: error });
  }
}

/**
 * A compiled WebAssembly.Module, also one made in another realm: Next.js runs edge code in a
 * sandbox (a `node:vm` context) and hands it a module compiled outside, which fails `instanceof`
 * but which the engine instantiates (it checks the brand, not the prototype).
 * @param {unknown} value
 * @returns {value is WebAssembly.Module}
 */
export function isWasmModule(value) {
  return value instanceof WebAssembly.Module || Object.prototype.toString.call(value) === "[object WebAssembly.Module]";
}

/**
 * The error of `init()` with no argument where the entry's `new URL(file, import.meta.url)` fails: a
 * bundle that keeps no module URL (an IIFE or a script) has nothing to look beside, and the error
 * says what to pass instead of a bare "Invalid URL".
 * @param {string} file
 * @param {unknown} cause
 */
export function noWasmUrl(file, cause) {
  const error = argumentError(
    "type",
    CODES.NO_WASM_URL,
    "source",
    `edge-deadline: init() cannot find ${file}: this bundle keeps no module URL to look beside. Pass the .wasm instead: init(bytes) with its bytes (an ArrayBuffer or Uint8Array), init(module) with a compiled WebAssembly.Module, or init(url) with the URL it is served from`,
  );
  error.cause = cause;
  return error;
}

/**
 * Any source `init(source)` takes, as a compiled module: what the browser,
 * Node and Deno entries hand to `initFrom`. `readFile` reads a `file:` URL
 * (Node); elsewhere URLs are fetched.
 * @param {any} source
 * @param {(url: URL) => Promise<BufferSource>} [readFile]
 * @returns {Promise<WebAssembly.Module>}
 */
export async function compile(source, readFile) {
  source = await source;
  if (isWasmModule(source)) return source;
  if (source instanceof ArrayBuffer || ArrayBuffer.isView(source)) return compileBytes(source);
  if (typeof source === "string" || source instanceof URL) {
    const url = new URL(source, import.meta.url);
    if (url.protocol === "file:" && readFile) return compileBytes(await readFile(url));
    source = await fetch(url);
    const home = source.ok && isPage(source) ? packageCopy(url) : null;
    if (home) {
      const retry = await fetch(home);
      if (retry.ok && !isPage(retry)) source = retry;
    }
  }
  if (isResponse(source)) {
    if (!source.ok) throw new Error(`edge-deadline: fetching the .wasm failed with HTTP ${source.status} (${source.url})`);
    if (isPage(source)) throw notWasm(source.url);
    const wasmType = source.headers.get("content-type")?.startsWith("application/wasm");
    if (wasmType && WebAssembly.compileStreaming) return WebAssembly.compileStreaming(source);
    const bytes = new Uint8Array(await source.arrayBuffer());
    // "<": markup served with a type other than text/html (Wasm starts with "\0asm").
    if (bytes[0] === 0x3c) throw notWasm(source.url);
    return compileBytes(bytes);
  }
  throw argumentError(
    "type",
    CODES.INVALID_TYPE,
    "source",
    "edge-deadline: init(source) accepts a WebAssembly.Module, an ArrayBuffer or typed array of the .wasm bytes, " +
      `a Response, a URL or URL string, or nothing; got ${source === null ? "null" : typeof source}`,
  );
}

/**
 * The Workers entries' `init(source)`: only a compiled module, which is what
 * importing the .wasm gives a Worker (Workers refuse to compile Wasm bytes at
 * run time, so bytes, URLs and responses could never load there). Keeping
 * `compile` out of these entries keeps its fetching and dev-server fallbacks
 * out of every Worker's upload.
 * @param {any} source
 * @returns {Promise<WebAssembly.Module>}
 */
export async function moduleOnly(source) {
  source = await source;
  if (isWasmModule(source)) return source;
  throw argumentError(
    "type",
    CODES.INVALID_TYPE,
    "source",
    "edge-deadline: in Workers, init(source) accepts a WebAssembly.Module (what importing the .wasm gives; " +
      `Workers cannot compile Wasm bytes at run time) or nothing; got ${source === null ? "null" : typeof source}`,
  );
}

/**
 * One core's loader.
 * @param {{ initSync: (o: { module: WebAssembly.Module }) => unknown, file: string,
 *   exports: number[], init: string }} core the glue's
 *   `initSync`, the .wasm's file name, what wasm_exports.js says of it, and how
 *   the user loads it ("`await init()`", for the error text)
 */
export function loader({ initSync, file, exports: [count, digest], init }) {
  let pending = null;
  let ready = false;
  let autoload = null;

  /** Refuses a module that is not this copy's core (invariant 4). */
  function check(module) {
    const names = WebAssembly.Module.exports(module).map((e) => e.name).sort();
    if (names.length !== count || exportsDigest(names) !== digest) {
      throw new Error(
        `edge-deadline: init() was given a WebAssembly module that is not this package's core ` +
          `(${names.length} exports, expected ${count} with other names); pass the ${file} ` +
          "that ships with this copy of the package",
      );
    }
    return module;
  }

  function instantiate(module) {
    initSync({ module });
    ready = true;
  }

  return {
    /** True once the core is loaded. */
    isReady: () => ready,

    /**
     * Loads the core synchronously where the runtime's entry can (invariant
     * 3), else throws the not-loaded error; kept out of line so callers stay
     * small. Callers run `if (!isReady()) notReady("name")` and go on.
     */
    notReady(what) {
      let cause;
      if (autoload) {
        try {
          return instantiate(check(autoload()));
        } catch (error) {
          cause = error;
        }
      }
      throw new Error(`edge-deadline: ${what} was used before the WebAssembly core was loaded; call ${init} first`, {
        cause,
      });
    },

    /**
     * Registers how this runtime produces the compiled module synchronously
     * (an imported `WebAssembly.Module`, or a file read and compiled): then
     * the first API call loads the core and `init()` is optional.
     * @param {() => WebAssembly.Module} load
     */
    autoload(load) {
      autoload = load;
    },

    /**
     * @param {unknown} source what the caller passed, or the entry point's default
     * @param {(source: unknown) => Promise<WebAssembly.Module>} toModule how this
     *   entry turns a source into a module ({@link compile}, or {@link moduleOnly} in Workers)
     */
    initFrom(source, toModule) {
      if (ready) return Promise.resolve();
      if (pending) return pending;
      pending = (async () => {
        const module = check(await toModule(source));
        // An API call may have loaded the core (autoload) while this compiled.
        if (!ready) instantiate(module);
      })();
      pending.catch(() => {
        pending = null;
      });
      return pending;
    },
  };
}
