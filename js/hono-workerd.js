// edge-deadline/hono for Cloudflare Workers: the middleware, after the main entry of this
// runtime (./workerd.js), which loads the WebAssembly core at the first request,
// so an application that imports only the middleware needs no init().
import "./workerd.js";

export { deadline } from "./hono.js";
