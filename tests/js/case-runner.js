// Runs cases one after another, each bounded: a case that has not settled
// within `caseMs` fails by its name (with the ref'd host timers still pending,
// where the runner counts them) and the run goes on. The slowest case takes a
// few seconds; a hang must name its case instead of stalling CI. Every runner
// uses it (node.test.js one case at a time, the others through harness.js).

/** How long one case may take before it fails as hung. */
export const CASE_MS = 60_000;

/** Runs `test` with a bound of `caseMs`; rejects with what hung when it passes. */
export async function runCase(test, lib, ctx, caseMs = CASE_MS) {
  let timer;
  const hung = new Promise((_, reject) => {
    timer = setTimeout(() => {
      const pending = ctx.pendingTimers?.();
      const timers = pending === undefined ? "" : ` (${pending} ref'd host timers pending)`;
      reject(new Error(`"${test.name}" did not settle within ${caseMs} ms${timers}`));
    }, caseMs);
  });
  try {
    return await Promise.race([(async () => test.run(lib, ctx))(), hung]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * When `test` does not run here: its `skip` reason (a known divergence, named in
 * tests/js/cases/conformance.js), or the capabilities in `needs` (e.g. "spawn")
 * this runtime's `ctx` lacks; `null` when it runs.
 */
export function skipReason(test, ctx) {
  if (typeof test.skip === "string") return test.skip;
  const missing = (test.needs ?? []).filter((n) => ctx[n] === undefined);
  return missing.length ? `this runtime's runner has no ${missing.join(", ")}` : null;
}

/** Runs `list` in order: `{ runtime, passed, failed, skipped, failures: [{ name, error }], skips: [{ name, reason }] }`. */
export async function runCases(list, lib, ctx, caseMs = CASE_MS) {
  const report = { runtime: ctx.runtime, passed: 0, failed: 0, skipped: 0, failures: [], skips: [] };
  for (const test of list) {
    const reason = skipReason(test, ctx);
    if (reason) {
      report.skipped++;
      report.skips.push({ name: test.name, reason });
      continue;
    }
    try {
      await runCase(test, lib, ctx, caseMs);
      report.passed++;
    } catch (error) {
      report.failed++;
      report.failures.push({ name: test.name, error: `${error?.name}: ${error?.message}\n${error?.stack ?? ""}` });
    }
  }
  return report;
}
