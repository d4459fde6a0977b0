// Ambient deadline cases: `runWithDeadline` / `currentDeadline`. Runs in Node,
// Deno, workerd (AsyncLocalStorage: the deadline crosses awaits) and Chromium
// (no AsyncLocalStorage: the documented synchronous fallback).
import { setClock } from "../../../pkg/main.js";
import { equal, ok, throws } from "../assert.js";

const tick = (ms = 0) => new Promise((r) => setTimeout(r, ms));

/**
 * The package's clock held still over the host's own timers: `now()` moves only when the case calls
 * `advance(ms)`, while each wake-up still waits on a host `setTimeout`, which runs in the async
 * context of the code that armed it (the subject of the case below). `clear()` clears the host
 * timers still armed (a queue may keep one armed after its last entry left).
 */
function heldClock() {
  let t = Math.ceil(performance.now());
  const armed = new Set();
  return {
    clock: {
      now: () => t,
      setTimeout(fn, ms) {
        const id = setTimeout(() => {
          armed.delete(id);
          fn();
        }, ms);
        armed.add(id);
        return id;
      },
      clearTimeout(id) {
        armed.delete(id);
        clearTimeout(id);
      },
    },
    advance(ms) {
      t += ms;
    },
    clear() {
      for (const id of armed) clearTimeout(id);
      armed.clear();
    },
  };
}

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
    name: "context: callbacks run from the shared wake-up see their own request's deadline (hedge attempts, onStep at a cap, abort listeners on derived signals)",
    run: async (lib, ctx) => {
      // 40 concurrent requests whose wake-ups share the package's host timer, armed by whichever
      // request came first: each callback must see the deadline of the request that scheduled it.
      // The clock is held (`heldClock`): no instant passes while the requests are set up. On the
      // host's clock, a pause there longer than a derived deadline's few ms (a GC, the process
      // preempted) made its signal() aborted already, and the listener added to it never ran.
      const held = heldClock();
      const previous = setClock(held.clock);
      try {
        const N = 40;
        const seen = [];
        const request = (i) => {
          const d = lib.Deadline.in(60_000);
          const own = (where) => (value) => seen.push({ where, i, ok: value === d, value });
          return lib.runWithDeadline(d, async () => {
            // A hedge's second attempt starts from the wake-up.
            const hedged = lib.hedge(
              (signal, { attempt }) => {
                own(`hedge attempt ${attempt}`)(lib.currentDeadline());
                return attempt >= 2 ? "won" : new Promise((resolve) => signal.addEventListener("abort", () => resolve("lost")));
              },
              { deadline: d, delayMs: 2 + (i % 7), maxAttempts: 2 },
            );
            // A plan step cut at its cap: onStep is called from the wake-up.
            const p = lib.plan(d, [{ name: "slow", kind: "optional", minMs: 1, preferredMs: 3 + (i % 5) }], { onStep: () => own("onStep")(lib.currentDeadline()) });
            const step = p.run("slow", (signal) => new Promise((resolve) => signal.addEventListener("abort", () => resolve("cut")))).catch(() => "cut");
            // An abort listener on a derived deadline's signal, aborted by its own wake-up.
            const near = lib.Deadline.in(4 + (i % 6));
            // A pause of the event loop here (a GC, the process preempted) must change nothing.
            if (i === 0) ctx.blockLoop?.(10);
            const derived = near.reserve(1);
            const aborted = new Promise((resolve) =>
              derived.signal().addEventListener("abort", () => {
                own("abort listener")(lib.currentDeadline());
                resolve();
              }),
            );
            await Promise.all([hedged, step, aborted]);
            near.dispose();
            d.dispose();
          });
        };
        const all = Promise.all(Array.from({ length: N }, (_, i) => request(i)));
        // Every instant above is within 10 ms: move past them a millisecond at a time, each step
        // waiting on a host timer, so wake-ups armed by different requests fire along the way.
        for (let ms = 0; ms < 12; ms++) {
          held.advance(1);
          await tick(1);
        }
        await all;
        equal(seen.length, 4 * N, "hedge ×2, onStep, abort listener per request");
        const async = expectedMode(ctx) === "async";
        // The fallback (no AsyncLocalStorage) sees its request's deadline synchronously and nothing
        // later, never a foreign one; with AsyncLocalStorage every callback sees its own.
        const wrong = seen.filter((s) => !(s.ok || (!async && s.value === undefined && s.where !== "hedge attempt 1")));
        equal(wrong.length, 0, `callbacks that saw another request's deadline (or none): ${wrong.slice(0, 5).map((s) => `${s.where} of request ${s.i}`).join(", ")}`);
      } finally {
        setClock(previous);
        held.clear();
      }
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
