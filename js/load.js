// The main core's loader (deadlines, plans, retries, hedging, propagation,
// caps, stall detection): edge_deadline_bg.wasm through its glue. What a
// loader guarantees is in js/loader.js.
import { initSync } from "./edge_deadline.js";
import { loader } from "./loader.js";
import { EXPORTS } from "./wasm_exports.js";

export const { isReady, notReady, initFrom, autoload } = loader({
  initSync,
  file: "edge_deadline_bg.wasm",
  exports: EXPORTS.edge_deadline,
  init: "`await init()`",
});
