// edge-deadline/hono for Deno: the middleware, after the main entry of this
// runtime (./deno.js), which loads the WebAssembly core at the first request,
// so an application that imports only the middleware needs no init().
import "./deno.js";

export { deadline } from "./hono.js";
