// Deadline cases: the same file runs in Node, Deno, workerd and Chromium.
//
// Timing: no sleeps. Tests wait on abort events and compare against
// performance.now(). TIMER_SLACK_MS bounds how late a host timer may fire on a
// loaded 2-core CI machine; "not before" is exact (no tolerance).
import { aborted, equal, near, ok, rejects, throws } from "../assert.js";
import { installFakeTime } from "../fake-time.js";
import { inProcess } from "../requests.js";

const TIMER_SLACK_MS = 250;
const BRAND = "edgeDeadlineError";

/** An AbortSignal whose add/removeEventListener calls are counted. */
export function countedParent() {
  const controller = new AbortController();
  const signal = controller.signal;
  const counts = { added: 0, removed: 0 };
  const add = signal.addEventListener.bind(signal);
  const remove = signal.removeEventListener.bind(signal);
  signal.addEventListener = (...args) => (counts.added++, add(...args));
  signal.removeEventListener = (...args) => (counts.removed++, remove(...args));
  return { controller, signal, counts };
}

const cases = [
  {
    name: "any API used before init throws a plain-words error (entries that need init: browsers, bundlers)",
    needs: ["beforeInitError"],
    run: (lib, ctx) => {
      ok(ctx.beforeInitError, "the runner records the pre-init error");
      ok(/before the WebAssembly core was loaded; call `await init\(\)` first/.test(ctx.beforeInitError), ctx.beforeInitError);
    },
  },
  {
    name: "a caller's budget below the reserve: the reserved deadline's signal says the budget was below the reserve, not that it passed long ago",
    run: (lib) => {
      // 250 ms: below the 300 ms reserve, and room enough that `roomy` below is not spent on a loaded machine.
      const caller = lib.Deadline.fromHeaders({ "grpc-timeout": "250m" }, { maxMs: 10_000 });
      const work = caller.reserve(300);
      const signal = work.signal();
      ok(signal.aborted, "nothing was left to start work in");
      const e = signal.reason;
      ok(lib.isDeadlineExceeded(e) && lib.isTimeout(e), `${e?.name}`);
      equal(e.reserveMs, 300);
      ok(e.budgetMs >= 0 && e.budgetMs <= 250, `budgetMs ${e.budgetMs}`);
      ok(/^deadline exceeded before any work started: the budget \([\d.]+ ms\) was below the 300 ms reserved for the fallback$/.test(e.message), e.message);
      ok(!/passed .* ago/.test(e.message), e.message);
      // A deadline with time left, or one that was not reserved, keeps the plain words.
      const roomy = caller.reserve(10);
      equal(roomy.signal().aborted, false);
      const plain = lib.Deadline.at(0).signal().reason;
      equal(plain.reserveMs, undefined);
      ok(/^deadline exceeded: it passed [\d.]+ ms ago$/.test(plain.message), plain.message);
      for (const d of [roomy, work, caller]) d.dispose();
    },
  },
  {
    name: "init is safe to call twice and concurrently",
    run: async (lib, ctx) => {
      const [a, b] = [lib.init(ctx.wasmSource), lib.init()];
      await Promise.all([a, b]);
      await lib.init();
      ok(lib.Deadline.in(10).remaining() > 0);
    },
  },
  {
    name: "init rejects a source of the wrong type with a TypeError saying what it accepts",
    run: (lib, ctx) => {
      // Recorded by the runner before the first successful init (afterwards
      // init is a no-op whatever it is given).
      ok(ctx.badInitError?.startsWith("TypeError: "), ctx.badInitError);
      ok(/accepts a WebAssembly.Module.*got number/.test(ctx.badInitError), ctx.badInitError);
      // Workers cannot compile bytes at all ("Wasm code generation disallowed
      // by embedder"): their entry takes only the imported module, and says why.
      if (ctx.runtime === "workerd") ok(/in Workers, .*cannot compile Wasm bytes at run time/.test(ctx.badInitError), ctx.badInitError);
    },
  },
  ...[
    ["the .wasm bytes (Uint8Array)", "await readBytes(wasmUrl)"],
    ["an ArrayBuffer", "(await readBytes(wasmUrl)).slice().buffer"],
    ["a compiled WebAssembly.Module", "await WebAssembly.compile(await readBytes(wasmUrl))"],
    ["a Response with application/wasm", 'new Response(await readBytes(wasmUrl), { headers: { "content-type": "application/wasm" } })'],
    ["a Response without a content type", "new Response(await readBytes(wasmUrl))"],
    ["a promise of a Response", "Promise.resolve(new Response(await readBytes(wasmUrl)))"],
    ["a file: URL", "wasmUrl"],
    ["a URL string", "wasmUrl.href"],
    ["nothing (the entry point's default)", "undefined"],
  ].map(([kind, expr]) => ({
    name: `init accepts ${kind}`,
    needs: ["spawnPackageScript"],
    run: async (lib, ctx) => {
      const { code, stdout } = await ctx.spawnPackageScript(
        `await init(${expr}); await init(); console.log("budget", Deadline.in(1_000).budget(10));`,
      );
      equal(code, 0, "child exit code");
      equal(stdout.trim(), "budget 10");
    },
  })),
  {
    name: "an uncaught error of the package prints its message, not the package's code: the modules shipped are readable, no line of them is long",
    needs: ["spawnPackageScript"],
    run: async (lib, ctx) => {
      // Node prints the source line of an uncaught error's throw site before its message: a
      // minified bundle's line is the whole module.
      const { code, stderr } = await ctx.spawnPackageScript(`Deadline.in(-1);`, { captureStderr: true });
      ok(code !== 0, "the child failed");
      ok(stderr.includes("RangeError") && stderr.includes("-1"), `the error's message is printed: ${stderr.slice(0, 500)}`);
      const longest = Math.max(...stderr.split("\n").map((l) => l.length));
      ok(longest <= 400, `the longest line printed is ${longest} characters`);
      ok(stderr.length <= 4_000, `${stderr.length} characters printed for one error`);
    },
  },
  {
    name: "init given an HTML page instead of the .wasm says so and names the Vite option; a retry with the .wasm works",
    needs: ["spawnPackageScript"],
    run: async (lib, ctx) => {
      const { code, stdout } = await ctx.spawnPackageScript(
        `const page = "<!doctype html><html><body>app</body></html>";
        for (const headers of [{ "content-type": "text/html; charset=utf-8" }, {}]) {
          await init(new Response(page, { headers })).then(() => console.log("loaded?!"), (e) => console.log(e.name, e.message));
        }
        await init(await readBytes(wasmUrl));
        console.log("budget", Deadline.in(1_000).budget(10));`,
      );
      equal(code, 0, "child exit code");
      const lines = stdout.trim().split("\n");
      equal(lines.length, 3, stdout);
      for (const line of lines.slice(0, 2)) {
        ok(line.startsWith("Error edge-deadline: the .wasm URL answered with an HTML page, not WebAssembly"), line);
        ok(line.includes('`optimizeDeps: { exclude: ["edge-deadline"] }` to vite.config'), line);
        ok(!/magic word/.test(line), line);
      }
      equal(lines[2], "budget 10");
    },
  },
  {
    name: "signal aborts after the instant, not before, with DeadlineExceeded",
    run: async (lib) => {
      const d = lib.Deadline.in(40);
      const signal = d.signal();
      equal(signal.aborted, false, "aborted too early");
      const firedAt = await aborted(signal);
      ok(firedAt >= d.at, `fired ${d.at - firedAt} ms before the instant`);
      ok(firedAt - d.at <= TIMER_SLACK_MS, `fired ${firedAt - d.at} ms late`);
      const reason = signal.reason;
      ok(lib.isDeadlineExceeded(reason), "reason is DeadlineExceeded");
      ok(reason instanceof lib.DeadlineExceeded && reason instanceof Error);
      equal(reason.name, "DeadlineExceeded");
      equal(reason.at, d.at);
      ok(reason.lateByMs >= 0 && reason.lateByMs <= TIMER_SLACK_MS, `lateByMs ${reason.lateByMs}`);
      ok(/deadline exceeded/.test(reason.message));
      ok(d.expired());
      equal(d.remaining(), 0);
    },
  },
  {
    name: "repeated signal() returns the same signal",
    run: (lib) => {
      const d = lib.Deadline.in(1000);
      equal(d.signal(), d.signal());
      d.dispose();
    },
  },
  {
    name: "a parent abort propagates with the parent's reason",
    run: async (lib) => {
      const parent = new AbortController();
      const d = lib.Deadline.in(60_000, { signal: parent.signal });
      const signal = d.signal();
      const reason = new Error("client went away");
      parent.abort(reason);
      await aborted(signal);
      equal(signal.reason, reason);
      ok(!d.expired(), "the instant itself has not passed");
    },
  },
  {
    name: "an already-aborted parent aborts the signal at once",
    run: (lib) => {
      const parent = new AbortController();
      parent.abort("gone");
      const signal = lib.Deadline.in(60_000, { signal: parent.signal }).signal();
      equal(signal.aborted, true);
      equal(signal.reason, "gone");
    },
  },
  {
    name: "an instant already passed gives an aborted signal",
    run: (lib) => {
      const d = lib.Deadline.at(0);
      ok(d.expired());
      equal(d.remaining(), 0);
      const signal = d.signal();
      equal(signal.aborted, true);
      ok(lib.isDeadlineExceeded(signal.reason));
      ok(signal.reason.lateByMs >= 0);
    },
  },
  {
    name: "min: the earlier wins, commutes, and links both parents",
    run: async (lib) => {
      const p1 = new AbortController();
      const p2 = new AbortController();
      const a = lib.Deadline.in(1_000, { signal: p1.signal });
      const b = lib.Deadline.in(2_000, { signal: p2.signal });
      equal(lib.Deadline.min(a, b).at, a.at);
      equal(lib.Deadline.min(b, a).at, a.at);
      equal(b.min(a).at, a.at);
      equal(a.min(b).at, a.at);
      equal(lib.Deadline.min(b).at, b.at);
      const c = lib.Deadline.in(3_000);
      equal(lib.Deadline.min(c, b, a).at, a.at, "variadic min");
      const m = a.min(b);
      const signal = m.signal();
      p2.abort("second parent");
      await aborted(signal);
      equal(signal.reason, "second parent");
    },
  },
  {
    name: "reserve gives an earlier deadline with the same parents and never a later one",
    run: async (lib) => {
      const parent = new AbortController();
      const d = lib.Deadline.in(5_000, { signal: parent.signal });
      const r = d.reserve(500);
      equal(r.at, d.at - 500);
      equal(d.reserve(0).at, d.at);
      equal(d.reserve(-0).at, d.at);
      const all = d.reserve(d.at + 1);
      equal(all.at, 0);
      ok(all.expired());
      const signal = r.signal();
      parent.abort("cancelled");
      await aborted(signal);
      equal(signal.reason, "cancelled");
    },
  },
  {
    name: "budget is min(preferred, remaining) and throws DeadlineExceeded when nothing is left",
    run: (lib) => {
      const d = lib.Deadline.in(1_000);
      equal(d.budget(100), 100);
      const b = d.budget(5_000);
      ok(b <= 1_000 && b > 900, `budget ${b}`);
      equal(d.budget(0), 0);
      const past = lib.Deadline.at(1);
      const e = throws(() => past.budget(100), lib.DeadlineExceeded, /deadline exceeded: it passed/);
      equal(e.at, 1);
      ok(e.lateByMs > 0);
    },
  },
  {
    name: "step refuses without calling run when less than minMs is left",
    run: async (lib) => {
      const d = lib.Deadline.in(100);
      let called = false;
      const e = await rejects(
        d.step(5_000, () => {
          called = true;
        }),
        lib.InsufficientBudget,
        /the step needs at least 5000 ms, so it was not started/,
      );
      equal(called, false, "run was called");
      ok(lib.isInsufficientBudget(e));
      equal(e.name, "InsufficientBudget");
      equal(e.minMs, 5_000);
      ok(e.remainingMs > 0 && e.remainingMs <= 100, `remainingMs ${e.remainingMs}`);
      await rejects(lib.Deadline.at(0).step(0, () => (called = true)), lib.InsufficientBudget);
      equal(called, false, "run was called on an expired deadline");
    },
  },
  {
    name: "step runs with the deadline's signal and a budget within what remains",
    run: async (lib) => {
      const d = lib.Deadline.in(2_000);
      const result = await d.step(10, async (signal, budgetMs) => {
        equal(signal, d.signal());
        ok(budgetMs > 1_900 && budgetMs <= 2_000, `budget ${budgetMs}`);
        return "done";
      });
      equal(result, "done");
      d.dispose();
    },
  },
  {
    name: "dispose clears the timer and every parent listener",
    run: async (lib, ctx) => {
      const timersBefore = ctx.pendingTimers?.();
      const parent = countedParent();
      const d = lib.Deadline.in(30, { signal: parent.signal });
      const signal = d.signal();
      equal(parent.counts.added, 1);
      d.dispose();
      // A parent signal's one listener is shared by every deadline linked to
      // it and removed by the end of the turn in which the last one left.
      await null;
      equal(parent.counts.removed, parent.counts.added, "listeners left on the parent");
      if (Symbol.dispose) {
        const e = lib.Deadline.in(30);
        e.signal();
        e[Symbol.dispose]();
      }
      // A later deadline firing proves the disposed one's instant has passed.
      const later = lib.Deadline.in(80);
      await aborted(later.signal());
      equal(signal.aborted, false, "a disposed deadline's timer still fired");
      parent.controller.abort("late");
      equal(signal.aborted, false, "a disposed deadline still listens to its parent");
      equal(d.signal(), signal, "signal() after dispose returns the existing signal");
      const unused = lib.Deadline.in(10);
      unused.dispose();
      throws(() => unused.signal(), Error, /disposed/);
      // Deadlines share one lazily-armed host timer (js/timers.js), so the
      // count may drop below the baseline; disposing must never add one.
      if (ctx.pendingTimers) ok(ctx.pendingTimers() <= timersBefore, `host timers pending after dispose: ${ctx.pendingTimers()} > ${timersBefore}`);
    },
  },
  {
    name: "many deadlines: each fires at or after its instant, in order, and disposed ones never fire",
    run: async (lib) => {
      // Deadlines share one host timer through a heap (js/timers.js); this
      // exercises its ordering and removal from the middle.
      let seed = 7;
      const rand = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);
      const fired = [];
      // Each signal (and its listener) is made with its deadline: on a loaded
      // machine a later loop could reach a 5 ms deadline after its instant,
      // and its signal would then be aborted before the listener existed.
      const all = Array.from({ length: 60 }, () => {
        const d = lib.Deadline.in(5 + rand() * 60);
        d.signal().addEventListener("abort", () => fired.push({ d, t: performance.now() }));
        return d;
      });
      const kept = all.filter((d, i) => {
        if (i % 3 === 1) {
          d.dispose();
          return false;
        }
        return true;
      });
      await Promise.all(kept.map((d) => aborted(d.signal())));
      // One more timer round: a disposed deadline that was going to fire would have by now.
      await aborted(lib.Deadline.in(70).signal());
      equal(fired.length, kept.length, "fired count (disposed deadlines must not fire)");
      for (const { d, t } of fired) ok(t >= d.at, `fired ${d.at - t} ms early`);
      for (let i = 1; i < fired.length; i++) ok(fired[i - 1].d.at <= fired[i].d.at + 1, "fired out of order");
    },
  },
  {
    name: "deadlines linked to one parent signal share one listener on it, and all abort with its reason",
    run: async (lib) => {
      const parent = countedParent();
      const root = lib.Deadline.in(60_000, { signal: parent.signal });
      const family = [root, ...Array.from({ length: 10 }, (_, i) => root.reserve(i * 10)), lib.Deadline.in(30_000, { signal: parent.signal })];
      const signals = family.map((d) => d.signal());
      equal(parent.counts.added, 1, "listeners added to the parent");
      family[3].dispose();
      parent.controller.abort("client left");
      signals.forEach((s, i) => equal(s.aborted, i !== 3, `deadline ${i} aborted`));
      for (const s of signals) if (s.aborted) equal(s.reason, "client left");
      await null;
      equal(parent.counts.removed, parent.counts.added, "listeners left on the parent");
    },
  },
  {
    name: "deadlines linked to one parent abort in the order they were linked, and one disposed by an earlier one's abort listener is left alone",
    run: (lib) => {
      const parent = new AbortController();
      const make = () => lib.Deadline.in(60_000, { signal: parent.signal });
      const [a, b, c] = [make(), make(), make()];
      b.dispose();
      const d = make();
      const order = [];
      const signals = { a: a.signal(), c: c.signal(), d: d.signal() };
      for (const [name, signal] of Object.entries(signals)) {
        signal.addEventListener("abort", () => {
          order.push(name);
          if (name === "a") c.dispose(); // a's abort disposes c before c's turn
        });
      }
      parent.abort("client left");
      equal(order.join(), "a,d");
      equal(signals.c.aborted, false, "the disposed deadline's signal");
      a.dispose();
      d.dispose();
    },
  },
  {
    name: "a loop of linked deadlines made and disposed leaves no listener on the parent by the end of the turn",
    run: async (lib) => {
      const parent = countedParent();
      for (let i = 0; i < 100; i++) {
        const d = lib.Deadline.in(60_000, { signal: parent.signal });
        d.signal();
        const r = d.reserve(5);
        r.signal();
        d.dispose();
        r.dispose();
      }
      const last = lib.Deadline.in(60_000, { signal: parent.signal });
      last.signal();
      ok(parent.counts.added >= 1 && parent.counts.added <= 2, `listeners added: ${parent.counts.added}`);
      last.dispose();
      await null;
      equal(parent.counts.removed, parent.counts.added, "listeners left on the parent");
      parent.controller.abort("late");
      equal(last.signal().aborted, false, "a disposed deadline heard its parent");
    },
  },
  {
    name: "concurrent plan steps and retry attempts on one deadline: those still running end with the parent's reason, the finished ones are untouched",
    run: async (lib) => {
      const parent = new AbortController();
      const d = lib.Deadline.in(60_000, { signal: parent.signal });
      const p = lib.plan(d, [{ name: "call", minMs: 1, preferredMs: 30_000, kind: "optional" }]);
      const hang = (signal) => aborted(signal).then(() => Promise.reject(signal.reason));
      const running = [0, 1, 2, 3, 4].map(() => p.run("call", hang));
      const finished = await Promise.all([p.run("call", () => "a"), p.run("call", () => "b")]);
      const attempt = lib.retry(hang, { deadline: d, attemptMinMs: 1, attemptTimeoutMs: 30_000, backoff: { baseMs: 1, maxMs: 1, jitter: 0 }, idempotent: true });
      running.splice(2, 0, p.run("call", hang));
      parent.abort("client left");
      for (const r of running) equal(await rejects(r), "client left");
      const e = await rejects(attempt);
      ok(lib.isRetryFailed(e) && e.reason === "aborted", `retry ended with ${e?.reason}`);
      equal(finished.join(), "a,b");
      equal(p.records.filter((r) => r.outcome === "aborted").length, 6, "aborted records");
    },
  },
  {
    name: "firing releases the parent listener too",
    run: async (lib) => {
      const parent = countedParent();
      const d = lib.Deadline.in(20, { signal: parent.signal });
      await aborted(d.signal());
      equal(parent.counts.removed, 1, "the listener stayed on the parent after the deadline fired");
    },
  },
  {
    name: "seed 002 worked example: 8 s, 0.5 s auth, 1.5 s retrieval, 0.5 s reserve",
    run: (lib) => {
      equal(lib.generationBudget(8_000, 2_000, 500), 5_500);
      equal(lib.generationBudget(8_000, 7_500, 500), 0);
      equal(lib.generationBudget(8_000, 9_000, 500), 0);
      // The same arithmetic through a Deadline: 2 s already spent of 8.
      const start = performance.now() - 2_000;
      const d = lib.Deadline.at(start + 8_000);
      const gen = d.reserve(500).remaining();
      ok(gen <= 5_500 && gen > 5_400, `generation gets ${gen} ms`);
      // Clocks with a negative origin are fine for the pure function.
      equal(lib.generationBudget(-2_000, -10_000, 500), 7_500);
    },
  },
  {
    name: "a deadline past the 2^31-1 ms timer limit is re-armed, not fired at once",
    run: async (lib) => {
      const long = lib.Deadline.in(2 ** 31 + 5_000);
      const signal = long.signal();
      const short = lib.Deadline.in(30);
      await aborted(short.signal());
      equal(signal.aborted, false, "a long deadline fired immediately (timer overflow)");
      ok(long.remaining() > 2 ** 31, "remaining is exact");
      long.dispose();
      const huge = lib.Deadline.in(2 ** 52);
      ok(huge.remaining() > 2 ** 51);
      huge.signal();
      huge.dispose();
    },
  },
  {
    name: "-0 is handled as 0",
    run: (lib) => {
      const d = lib.Deadline.in(-0);
      ok(d.at <= performance.now());
      ok(d.expired());
      equal(lib.generationBudget(-0, -0, -0), 0);
      ok(Object.is(lib.generationBudget(1, 1, 0), 0), "never -0");
    },
  },
  {
    name: "errors carry a brand that works across copies of the package",
    run: (lib) => {
      const foreign = Object.assign(new Error("from another copy"), { name: "DeadlineExceeded" });
      equal(lib.isDeadlineExceeded(foreign), false, "a name alone is not the brand");
      foreign[BRAND] = "DeadlineExceeded";
      equal(lib.isDeadlineExceeded(foreign), true);
      equal(lib.isInsufficientBudget(foreign), false);
      equal(lib.isDeadlineExceeded(null), false);
      equal(lib.isDeadlineExceeded(undefined), false);
      const e = new lib.InsufficientBudget(12.25, 100);
      ok(lib.isInsufficientBudget(e) && e instanceof Error);
      equal(e.remainingMs, 12.25);
      ok(/12\.3 ms left/.test(e.message), e.message);
    },
  },
  {
    name: "an undisposed 10 s deadline does not keep the process alive",
    needs: ["spawnPackageScript"],
    run: async (lib, ctx) => {
      const { code, ms } = await ctx.spawnPackageScript(
        "await init(); const d = Deadline.in(10_000); d.signal(); d.reserve(5).signal();",
      );
      equal(code, 0, "child exit code");
      ok(ms < 1_000, `child took ${ms} ms to exit`);
    },
  },
  {
    name: "a deadline's signal cancels a real fetch to the fixture server",
    needs: ["fixtureUrl"],
    run: async (lib, ctx) => {
      equal(await (await fetch(`${ctx.fixtureUrl}/ping`)).text(), "pong", "fixture server reachable");
      const d = lib.Deadline.in(50);
      const e = await rejects(fetch(`${ctx.fixtureUrl}/hang`, { signal: d.signal() }));
      if (ctx.quirks?.includes("lossy-abort-reasons")) {
        // An old workerd compatibility date: a plain fetch rejects with an
        // unbranded copy carrying the reason's text (fetchWithDeadline gives
        // the reason itself back); the signal still holds the branded reason.
        ok(/^DeadlineExceeded: deadline exceeded/.test(e?.message), `fetch rejected with ${e?.name}: ${e?.message}`);
        ok(lib.isDeadlineExceeded(d.signal().reason));
        return;
      }
      // workerd rejects with a clone of the reason, so check the brand, not identity.
      ok(lib.isDeadlineExceeded(e), `fetch rejected with ${e?.name}: ${e?.message}`);
      equal(e.at, d.at);
    },
  },
  {
    name: "concurrent requests: each one's deadlines fire at their own instants, and one ending early stops none of another's",
    run: async (lib, ctx) => {
      // In workerd each scenario is a request of its own (tests/js/requests.js):
      // the first answers at once, leaving its timers to die with it.
      const request = ctx.request ?? inProcess(lib);
      const [, a, b] = await Promise.all([
        request("family", { ms: 30, early: true }),
        request("family", { ms: 90 }),
        request("family", { ms: 150 }),
      ]);
      for (const [name, r] of [["90 ms request", a], ["150 ms request", b]]) {
        equal(r.fired?.length, 3, `${name}: signals that fired`);
        ok(r.stepCapMs > 0 && r.fired[2].at - r.fired[0].at <= -r.stepCapMs + TIMER_SLACK_MS, `${name}: the step's cap is its own`);
        for (const f of r.fired) {
          ok(f.lateByMs >= 0, `${name}: fired ${-f.lateByMs} ms before its instant (woken by another request's timer)`);
          ok(f.lateByMs <= TIMER_SLACK_MS, `${name}: fired ${f.lateByMs} ms late`);
          ok(f.own, `${name}: reason is the package's for its own instant (DeadlineExceeded, or the step's StepTimeout)`);
        }
      }
    },
  },
  {
    name: "a deadline armed in one request and read in a later one, after its instant, is aborted with DeadlineExceeded",
    run: async (lib, ctx) => {
      const request = ctx.request ?? inProcess(lib);
      const key = `kept-${Math.random()}`;
      const { at } = await request("keep", { ms: 20, key });
      await new Promise((r) => setTimeout(r, 60));
      const r = await request("read", { key });
      ok(r.now >= at, "read before the instant");
      equal(r.aborted, true, "the kept deadline's signal after its instant");
      ok(r.own, "reason is DeadlineExceeded at the kept deadline's instant");
      ok(r.lateByMs >= 0);
    },
  },
  {
    name: "one request deriving 20 000 deadlines, plan steps, retry attempts and stall timers from one root never meets a timer quota",
    run: async (lib, ctx) => {
      const request = ctx.request ?? inProcess(lib);
      const n = 20_000;
      const r = await request("many", { n });
      equal(r.error, undefined, "error");
      equal(r.reserves, n);
      equal(r.steps, n);
      equal(r.attempts, n);
      equal(r.streams, n);
      equal(r.called, 2 * n, "steps and attempts started");
    },
  },
  {
    name: "checkpoint() returns before the instant and throws the signal's DeadlineExceeded from the instant on, in a loop no timer interrupts (fake time)",
    run: (lib) => {
      const clock = installFakeTime();
      try {
        const d = lib.Deadline.in(40);
        const parent = new AbortController();
        const linked = lib.Deadline.in(40, { signal: parent.signal });
        parent.abort(new Error("client left"));
        clock.jump(39.5);
        equal(d.checkpoint(), undefined, "0.5 ms left: returns");
        equal(linked.checkpoint(), undefined, "a parent's abort does not count, as for expired()");
        // A CPU-bound loop: the clock moves inside it, no timer can run.
        let i = 0;
        const e = throws(() => {
          for (;; i++) {
            if (i === 3) clock.jump(d.at - clock.now());
            d.checkpoint();
          }
        }, lib.DeadlineExceeded);
        equal(i, 3, "thrown at the first check at the instant, not before");
        ok(lib.isDeadlineExceeded(e), "branded");
        equal(e.name, "DeadlineExceeded");
        equal(e.at, d.at);
        equal(e.lateByMs, 0);
        clock.jump(12.5);
        const late = throws(() => d.checkpoint(), lib.DeadlineExceeded);
        equal(late.lateByMs, 12.5, "lateByMs");
        // The same error the signal aborts with.
        const signal = lib.Deadline.at(d.at).signal();
        ok(signal.reason instanceof lib.DeadlineExceeded && signal.reason.message === late.message, signal.reason?.message);
        // A reserved deadline's check says what was left of its parent.
        const caller = lib.Deadline.in(50);
        const r = throws(() => caller.reserve(300).checkpoint(), lib.DeadlineExceeded);
        equal(r.reserveMs, 300);
        d.dispose();
        linked.dispose();
      } finally {
        clock.restore();
      }
    },
  },
  ...badInputCases(),
];

/** ≥ 60 generated bad-input cases: each names the parameter and the range. */
function badInputCases() {
  const values = [
    ["NaN", NaN, RangeError, "NOT_FINITE"],
    ["Infinity", Infinity, RangeError, "NOT_FINITE"],
    ["-Infinity", -Infinity, RangeError, "NOT_FINITE"],
    ["a negative number", -1, RangeError, "NEGATIVE"],
    ["a string", "5", TypeError, "INVALID_TYPE"],
    ["null", null, TypeError, "INVALID_TYPE"],
    ["undefined", undefined, TypeError, "INVALID_TYPE"],
    ["a BigInt", 10n, TypeError, "INVALID_TYPE"],
    ["an object", { valueOf: () => 5 }, TypeError, "INVALID_TYPE"],
    ["an array", [5], TypeError, "INVALID_TYPE"],
    ["a boolean", true, TypeError, "INVALID_TYPE"],
    ["2^53 (past the exact-integer range)", 2 ** 53, RangeError, "TOO_LARGE"],
    ["2^60", 2 ** 60, RangeError, "TOO_LARGE"],
  ];
  const targets = [
    ["Deadline.in", "ms", (lib, v) => lib.Deadline.in(v)],
    ["Deadline.at", "instantMs", (lib, v) => lib.Deadline.at(v)],
    ["reserve", "ms", (lib, v) => lib.Deadline.in(1_000).reserve(v)],
    ["budget", "preferredMs", (lib, v) => lib.Deadline.in(1_000).budget(v)],
    ["step", "minMs", (lib, v) => lib.Deadline.in(1_000).step(v, () => "ran")],
    ["generationBudget", "deadlineMs", (lib, v) => lib.generationBudget(v, 0, 0), { negativeOk: true }],
    ["generationBudget", "nowMs", (lib, v) => lib.generationBudget(0, v, 0), { negativeOk: true }],
    ["generationBudget", "reserveMs", (lib, v) => lib.generationBudget(0, 0, v)],
  ];
  const out = [];
  for (const [fn, param, call, opts = {}] of targets) {
    for (const [label, value, Type, code] of values) {
      if (opts.negativeOk && value === -1) continue;
      out.push({
        name: `bad input: ${fn}(${param} = ${label}) → ${Type.name} naming '${param}'`,
        run: async (lib) => {
          const e = await rejects(async () => call(lib, value), Type, new RegExp(`'${param}'`));
          ok(Type === TypeError || /between 0 and/.test(e.message) || /finite/.test(e.message), `no range in: ${e.message}`);
          equal(e.param, param, ".param");
          equal(e.code, code, ".code");
          // Nothing trapped the instance: the API still works afterwards.
          ok(lib.Deadline.in(5).remaining() >= 0);
        },
      });
    }
  }
  const T = "INVALID_TYPE";
  // [label, call, class, message pattern, .param, .code]
  const structural = [
    ["Deadline.in options = null", (lib) => lib.Deadline.in(10, null), TypeError, /^Deadline.in: 'options' must be an object like \{ signal \} or an AbortSignal/, "options", T],
    ["Deadline.in options = 5", (lib) => lib.Deadline.in(10, 5), TypeError, /'options'/, "options", T],
    ["Deadline.in signal = a string", (lib) => lib.Deadline.in(10, { signal: "x" }), TypeError, /'options.signal'.*AbortSignal/, "options.signal", T],
    ["Deadline.in signal = {}", (lib) => lib.Deadline.in(10, { signal: {} }), TypeError, /'options.signal'/, "options.signal", T],
    ["Deadline.at signal = 1", (lib) => lib.Deadline.at(10, { signal: 1 }), TypeError, /^Deadline.at: 'options.signal'/, "options.signal", T],
    ["Deadline.min()", (lib) => lib.Deadline.min(), TypeError, /at least one Deadline/, "deadlines", T],
    ["Deadline.min(d, 5)", (lib) => lib.Deadline.min(lib.Deadline.in(1), 5), TypeError, /^Deadline.min: 'deadlines\[1\]' must be a Deadline/, "deadlines[1]", T],
    ["d.min(null)", (lib) => lib.Deadline.in(1).min(null), TypeError, /'other' must be a Deadline/, "other", T],
    ["Deadline.min(a look-alike without the brand)", (lib) => lib.Deadline.min({ at: 1, signal: () => new AbortController().signal }), TypeError, /'deadlines\[0\]' must be a Deadline/, "deadlines[0]", T],
    ["step(run = undefined)", (lib) => lib.Deadline.in(100).step(0), TypeError, /'run' must be a function \(signal, budgetMs\)/, "run", T],
    ["step(run = 'f')", (lib) => lib.Deadline.in(100).step(0, "f"), TypeError, /'run'/, "run", T],
    ["new Deadline()", (lib) => new lib.Deadline(), TypeError, /Deadline\.in/, undefined, "NOT_CONSTRUCTIBLE"],
    ["Deadline.in(2^53 - 1) overflows the timeline", (lib) => lib.Deadline.in(2 ** 53 - 1), RangeError, /'ms'/, "ms", "TOO_LARGE"],
    // A value inside 0 … 2^53 − 1 that only overflows once added to now: the message says the bound that applies.
    ["Deadline.in(2^53 - 1) says how far from now the timeline reaches", (lib) => lib.Deadline.in(Number.MAX_SAFE_INTEGER), RangeError, /^'ms' must be at most \d+ milliseconds from now \(the timeline ends at 9007199254740991 ms, 2\^53 - 1\): current value is 9007199254740991$/, "ms", "TOO_LARGE"],
  ];
  for (const [label, call, Type, pattern, param, code] of structural) {
    out.push({
      name: `bad input: ${label} → ${Type.name}`,
      run: async (lib) => {
        const e = await rejects(async () => call(lib), Type, pattern);
        equal(e.param, param, ".param");
        equal(e.code, code, ".code");
      },
    });
  }
  return out;
}

export default cases;
