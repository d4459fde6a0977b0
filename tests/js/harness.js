// Runs the case modules outside `node --test` (Deno, Bun, edge-runtime, workerd,
// Chromium) and returns a report (tests/js/case-runner.js `runCases`). A case is
// `{ name, run(lib, ctx), needs?, skip? }`: see case-runner.js `skipReason`.
import { cases } from "./cases/index.js";
import { runCases, skipReason } from "./case-runner.js";

export { skipReason };

export function runSuite(lib, ctx) {
  return runCases(cases, lib, ctx);
}

/**
 * Blocks the event loop for `ms` of real time (a long synchronous parse, a GC
 * pause): timers and I/O due meanwhile wait. The Node, Deno and Chromium
 * runners hand it to the cases as `ctx.blockLoop`; workerd's does not: its
 * clock stands still while code runs (it only advances across I/O).
 */
export function blockLoop(ms) {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

/**
 * What every runner records before the first successful `init()`: the error
 * `init` gives a wrong-typed source, then what an API does before init (it
 * throws where the entry needs `init()`: `beforeInitError`; it loads the core
 * itself where the runtime's entry can: `loadedWithoutInit`). Then loads the
 * core from `source` (or the entry point's default).
 */
export async function prepare(lib, source) {
  const ctx = { wasmSource: source };
  try {
    await lib.init(42);
  } catch (e) {
    ctx.badInitError = `${e.name}: ${e.message}`;
  }
  try {
    ctx.loadedWithoutInit = lib.Deadline.in(1).remaining() >= 0;
  } catch (e) {
    ctx.beforeInitError = e.message;
  }
  await lib.init(source);
  return ctx;
}

/**
 * The suite's `lib`: the main entry and `edge-deadline/derive` as one
 * namespace (`init` is the main entry's; the derive entry's is `initDerive`).
 */
export function combine(main, derive) {
  return { ...derive, ...main, initDerive: derive.init };
}
