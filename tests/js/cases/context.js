// Ambient deadline cases: `runWithDeadline` / `currentDeadline`. Runs in Node,
// Deno, workerd (AsyncLocalStorage: the deadline crosses awaits) and Chromium
// (no AsyncLocalStorage: the documented synchronous fallback).
import { equal, ok, throws } from "../assert.js";

const tick = (ms = 0) => new Promise((r) => setTimeout(r, ms));

/**
 * What each runtime must offer: Chrome has no AsyncLocalStorage; the server runtimes do, except
 * workerd configurations without nodejs_compat (ctx.quirks "no-async-context").
 */
const expectedMode = (ctx) => (/chrom/i.test(ctx.runtime) || ctx.quirks?.includes("no-async-context") ? "sync" : "async");

export default [
  {
    name: "context: the host's mode is the expected one (async where AsyncLocalStorage exists, sync in browsers)",
    run: (lib, ctx) => {
      equal(lib.ambientDeadline, expectedMode(ctx), `ambientDeadline in ${ctx.runtime}`);
    },
  },
  {
    name: "context: currentDeadline() is undefined outside, the deadline inside (synchronously), the innermost wins",
    run: (lib) => {
      equal(lib.currentDeadline(), undefined, "outside any runWithDeadline");
      const outer = lib.Deadline.in(1_000);
      const inner = outer.reserve(100);
      const result = lib.runWithDeadline(outer, () => {
        equal(lib.currentDeadline(), outer);
        const nested = lib.runWithDeadline(inner, () => lib.currentDeadline());
        equal(nested, inner, "the innermost wins");
        equal(lib.currentDeadline(), outer, "restored after the inner one returns");
        return 42;
      });
      equal(result, 42, "fn's result is returned");
      equal(lib.currentDeadline(), undefined, "restored after the outer one returns");
      throws(() => lib.runWithDeadline(outer, () => {
        throw new Error("boom");
      }), Error, /boom/);
      equal(lib.currentDeadline(), undefined, "restored after fn throws");
      outer.dispose();
      inner.dispose();
    },
  },
  {
    name: "context: across awaits with AsyncLocalStorage; never another request's deadline in either mode",
    run: async (lib, ctx) => {
      const a = lib.Deadline.in(1_000);
      const b = lib.Deadline.in(2_000);
      const seen = { a: [], b: [] };
      const handler = (name) => async () => {
        seen[name].push(lib.currentDeadline());
        await tick(5);
        seen[name].push(lib.currentDeadline());
        await tick(1);
        seen[name].push(lib.currentDeadline());
      };
      // Two "requests" interleaved: each must only ever see its own deadline (or, in the fallback, none).
      await Promise.all([lib.runWithDeadline(a, handler("a")), lib.runWithDeadline(b, handler("b"))]);
      equal(seen.a[0], a, "a before its first await");
      equal(seen.b[0], b, "b before its first await");
      const after = expectedMode(ctx) === "async" ? [a, b] : [undefined, undefined];
      for (const i of [1, 2]) {
        equal(seen.a[i], after[0], `a after await ${i}`);
        equal(seen.b[i], after[1], `b after await ${i}`);
      }
      equal(lib.currentDeadline(), undefined);
      a.dispose();
      b.dispose();
    },
  },
  {
    name: "context: bad input → TypeError naming the parameter (.param, .code)",
    run: (lib) => {
      const a = throws(() => lib.runWithDeadline(1000, () => {}), TypeError, /'deadline'/);
      equal(a.param, "deadline");
      equal(a.code, "INVALID_TYPE");
      const d = lib.Deadline.in(10);
      const b = throws(() => lib.runWithDeadline(d, "fn"), TypeError, /'fn'/);
      equal(b.param, "fn");
      equal(b.code, "INVALID_TYPE");
      d.dispose();
    },
  },
];
