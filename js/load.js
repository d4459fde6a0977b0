// The main core's loader (deadlines, plans, retries, hedging, propagation,
// caps, stall detection): edge_deadline_bg.wasm through its glue. What a
// loader guarantees is in js/loader.js.
import { attemptTimeoutText, exceededText, initSync, insufficientText, stalledText, stepTimeoutText } from "./edge_deadline.js";
import { coreTexts } from "./errors.js";
import { loader } from "./loader.js";
import { EXPORTS } from "./wasm_exports.js";

export const { isReady, notReady, initFrom, autoload } = loader({
  initSync,
  file: "edge_deadline_bg.wasm",
  exports: EXPORTS.edge_deadline,
  init: "`await init()`",
});

// The errors JavaScript makes take their messages from this core.
// Named, not the glue's namespace: that would keep its fetch-a-URL `init` in
// every bundle, the Workers entry's too.
coreTexts({ attemptTimeoutText, exceededText, insufficientText, stalledText, stepTimeoutText }, isReady);
