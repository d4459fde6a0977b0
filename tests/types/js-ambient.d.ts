// What js/*.js import from outside the package, for `tsc -p jsconfig.json`
// (the published .d.ts files do not need these). Declared by hand, only as
// far as js/ uses them, rather than through @types/node, which only arrives
// in node_modules as some other package's dependency.

declare module "node:fs" {
  export function readFileSync(path: URL | string): Uint8Array<ArrayBuffer>;
}

declare module "node:fs/promises" {
  export function readFile(path: URL | string): Promise<Uint8Array<ArrayBuffer>>;
}

// workerd.js imports the .wasm as Workers do: a compiled module.
declare module "*.wasm" {
  const module: WebAssembly.Module;
  export default module;
}
// edge-light.js imports it as Vercel's Edge Runtime does: `?module`, a compiled module.
declare module "*.wasm?module" {
  const module: WebAssembly.Module;
  export default module;
}

// workerd's built-in module (js/durable-workerd.js): the base class of an RPC-capable Durable Object.
declare module "cloudflare:workers" {
  export class DurableObject {
    constructor(ctx: unknown, env: unknown);
  }
}
