// edge-deadline/hono for Node: the middleware, after the main entry of this
// runtime (./node.js), which loads the WebAssembly core at the first request,
// so an application that imports only the middleware needs no init().
import "./node.js";

export { deadline } from "./hono.js";
