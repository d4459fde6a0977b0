// Runs the case modules outside `node --test` (Deno, workerd, Chromium) and
// returns a report: { runtime, passed, failed, skipped, failures: [{ name, error }] }.
// A case is `{ name, run(lib, ctx), needs?, skip? }`; when the runtime's ctx lacks a
// capability listed in `needs` (e.g. "spawn"), or `skip` gives a reason, the case
// is counted as skipped.
import { cases } from "./cases/index.js";

export function skipReason(test, ctx) {
  if (typeof test.skip === "string") return test.skip; // a known divergence, named (tests/js/cases/conformance.js)
  const missing = (test.needs ?? []).filter((n) => ctx[n] === undefined);
  return missing.length ? `this runtime's runner has no ${missing.join(", ")}` : null;
}

export async function runSuite(lib, ctx) {
  const report = { runtime: ctx.runtime, passed: 0, failed: 0, skipped: 0, failures: [], skips: [] };
  for (const test of cases) {
    const reason = skipReason(test, ctx);
    if (reason) {
      report.skipped++;
      report.skips.push({ name: test.name, reason });
      continue;
    }
    try {
      await test.run(lib, ctx);
      report.passed++;
    } catch (error) {
      report.failed++;
      report.failures.push({ name: test.name, error: `${error?.name}: ${error?.message}\n${error?.stack ?? ""}` });
    }
  }
  return report;
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
