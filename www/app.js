// The demo page: loads the package's WebAssembly core, then mounts the four
// sections. `data-ready` on <html> (with the time it took) is what the
// browser tests wait for.
import { init } from "./pkg/index.js";
import { init as initDerive } from "./pkg/derive-index.js";
import { mountBudget } from "./budget.js";
import { mountDerive } from "./derive.js";
import { mountOverload } from "./overload.js";
import { mountStall } from "./stall.js";

const status = document.querySelector("#load-status");
try {
  // Each fetches its .wasm next to its module: the main core and the derive core, in parallel.
  await Promise.all([init(), initDerive()]);
  performance.mark("core-loaded");
  mountBudget();
  mountStall();
  mountOverload();
  // Let the other sections paint before the derivation's heavier first run.
  await new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
  performance.mark("derive-start");
  mountDerive();
  performance.mark("derive-done");
  const readyMs = Math.round(performance.now());
  status.textContent = `Core loaded; page ready in ${readyMs} ms.`;
  document.documentElement.dataset.readyMs = String(readyMs);
  document.documentElement.dataset.ready = "true";
  // Section 5 runs nothing until Start: its module (and the aggregator's) loads after the page is ready.
  const { mountFleet } = await import("./fleet.js");
  mountFleet();
} catch (error) {
  status.textContent = `The page could not start: ${error?.message ?? error}`;
  status.classList.add("error");
  document.documentElement.dataset.ready = "failed";
  throw error;
}
