// The derive core's loader (sketch, derivation, Prometheus, tail shape,
// simulate, Little's law): edge_deadline_derive_bg.wasm through its own glue,
// so an application that imports only `edge-deadline` never loads it. What a
// loader guarantees is in js/loader.js.
import { initSync } from "./edge_deadline_derive.js";
import { loader } from "./loader.js";
import { EXPORTS } from "./wasm_exports.js";

export const { isReady, notReady, initFrom, autoload } = loader({
  initSync,
  file: "edge_deadline_derive_bg.wasm",
  exports: EXPORTS.edge_deadline_derive,
  init: "`await init()` from edge-deadline/derive",
});
