// Types for `edge-deadline/derive` (every entry point of the subpath shares them).
// The data types that cross into its WebAssembly core are declared once, in
// Rust, and generated into edge_deadline_derive.d.ts (its own glue's types).
import type {} from "./edge_deadline_derive.js";

// `Disposable` and `Symbol.dispose` (TypeScript's lib "esnext.disposable"), declared here too so the
// types load in a project with `lib: ["es2022", "dom"]` and no `@types/node` (a browser or a Worker).
// Identical declarations merge with TypeScript's lib and with @types/node.
declare global {
  interface SymbolConstructor {
    readonly dispose: unique symbol;
  }
  interface Disposable {
    [Symbol.dispose](): void;
  }
}
export * from "./sketch.js";
export * from "./derive.js";
export * from "./prom.js";
export * from "./tail.js";
export * from "./simulate.js";
export * from "./little.js";
export * from "./breaker.js";
export * from "./limiter.js";
export * from "./book.js";

/**
 * Loads the derive WebAssembly core (its own `.wasm`, apart from the main
 * entry's). Optional in Workers, Deno and Node, where the first call loads it;
 * browsers and bundled pages call it once first. Safe to call more than once.
 *
 * @throws {TypeError} when `source` is none of the accepted kinds
 */
export function init(source?: WebAssembly.Module | BufferSource | Response | Promise<Response> | URL | string): Promise<void>;
