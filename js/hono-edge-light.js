// edge-deadline/hono for Vercel's Edge Runtime: the middleware, after the main entry of this
// runtime (./edge-light.js), which loads the WebAssembly core at the first request,
// so an application that imports only the middleware needs no init().
import "./edge-light.js";

export { deadline } from "./hono.js";
