// The Worker's entry module: loads the Rust Worker (wasm-bindgen glue built by
// build.mjs) and hands it each request. workerd imports the .wasm as a
// compiled WebAssembly.Module, so instantiation is synchronous, at startup
// (no timers here: timers belong to requests).
import { initSync, fetch as handle } from "./worker.js";
import module from "./worker_bg.wasm";

initSync({ module });

export default {
  fetch: (request, env, ctx) => handle(request, env, ctx),
};
