// Platform cap cases: the built-in figures as data, and the deadline they
// give an invocation. The same file runs in Node, Deno, workerd and Chromium.
import { equal, near, ok, throws } from "../assert.js";
import { spin, badInputCases } from "../pipeline-support.js";

const cases = [

  // ---- platform caps --------------------------------------------------------------
  {
    name: "platform caps ship as data with their source and date; forPlatform folds wall-clock caps, never the CPU cap",
    run: (lib) => {
      const caps = lib.platformCaps();
      ok(caps.length >= 9);
      for (const c of caps) {
        ok(c.source.startsWith("https://") && /^\d{4}-\d{2}-\d{2}$/.test(c.retrieved), JSON.stringify(c));
        ok(c.ms === null || (c.ms > 0 && Number.isFinite(c.ms)));
      }
      const cpu = caps.filter((c) => c.platform === "cloudflare-workers" && c.kind === "cpu").map((c) => `${c.plan}:${c.ms}:${c.configurableMaxMs}`);
      equal(cpu.join(), "free:10:null,paid:30000:300000");
      const waitUntil = caps.find((c) => c.platform === "cloudflare-workers" && c.trigger === "wait-until");
      equal(waitUntil.ms, 30_000);
      equal(caps.find((c) => c.trigger === "cron").ms, 900_000);

      const free = lib.platformDeadline({ platform: "cloudflare-workers", plan: "free", productMs: 8_000, fallbackReserveMs: 500 });
      equal(free.bound, "product");
      equal(free.cpuMs, 10, "the CPU cap is reported");
      near(free.deadline.remaining(), 7_500, 50, "and not folded into the deadline");
      ok(free.sources.every((s) => s.startsWith("https://")));
      const after = lib.Deadline.forPlatform({ platform: "cloudflare-workers", trigger: "wait-until", productMs: 60_000, fallbackReserveMs: 1_000 });
      near(after.remaining(), 29_000, 50);
      const vercel = lib.platformDeadline({ platform: "vercel-edge", productMs: 60_000, fallbackReserveMs: 2_000 });
      equal(vercel.bound, "first-byte");
      near(vercel.deadline.remaining(), 23_000, 50);
      const over = lib.platformDeadline({ platform: "cloudflare-workers", productMs: 60_000, fallbackReserveMs: 100, caps: { wallMs: 5_000, cpuMs: 50 } });
      equal(over.bound, "wall");
      equal(over.cpuMs, 50);
      near(over.deadline.remaining(), 4_900, 50);
      const custom = lib.platformDeadline({ platform: "custom", productMs: 9_000, fallbackReserveMs: 0, caps: { firstByteMs: 3_000 } });
      equal(custom.bound, "first-byte");
      equal(custom.cpuMs, null);
      const deno = lib.platformDeadline({ platform: "deno-deploy", productMs: 4_000, fallbackReserveMs: 250 });
      equal(deno.bound, "product");
      near(deno.deadline.remaining(), 3_750, 50);
    },
  },
  {
    name: "platform caps: the server runtimes' hidden caps (Netlify Edge, AWS Lambda, Node's and Bun's fetch, Bun.serve) bound what they cut; the fetch caps are reported",
    run: (lib) => {
      const caps = lib.platformCaps();
      const of = (platform, kind) => caps.find((c) => c.platform === platform && c.kind === kind);
      equal(of("netlify-edge", "first-byte").ms, 40_000);
      equal(of("netlify-edge", "cpu").ms, 50);
      equal(of("aws-lambda", "wall").ms, 900_000);
      equal(of("node", "fetch-idle").ms, 300_000);
      equal(of("bun", "fetch-idle").ms, 300_000);
      equal(of("bun", "first-byte").configurableMaxMs, 255_000);
      const netlify = lib.platformDeadline({ platform: "netlify-edge", productMs: 60_000, fallbackReserveMs: 1_000 });
      equal(netlify.bound, "first-byte");
      near(netlify.deadline.remaining(), 39_000, 50);
      equal(netlify.cpuMs, 50);
      const node = lib.platformDeadline({ platform: "node", productMs: 630_000, fallbackReserveMs: 0 });
      equal(node.bound, "product", "no wall-clock cap on a Node handler");
      equal(node.fetchIdleMs, 300_000, "but its fetch gives up after 300 s without a byte: reported");
      const bun = lib.platformDeadline({ platform: "bun", productMs: 30_000, fallbackReserveMs: 500 });
      equal(bun.bound, "first-byte");
      near(bun.deadline.remaining(), 9_500, 50);
      const raised = lib.Deadline.forPlatform({ platform: "bun", productMs: 30_000, fallbackReserveMs: 500, caps: { firstByteMs: 60_000 } });
      near(raised.remaining(), 29_500, 50);
      for (const d of [netlify.deadline, node.deadline, bun.deadline, raised]) d.dispose();
    },
  },
  {
    name: "forLambda: an invocation's deadline is what its context says is left, less the reserve; spent is expired, not an error",
    run: (lib) => {
      let left = 6_000;
      const context = { getRemainingTimeInMillis: () => left };
      const d = lib.Deadline.forLambda(context, { fallbackReserveMs: 500 });
      near(d.remaining(), 5_500, 50);
      equal(d.limit, "platform");
      const product = lib.Deadline.forLambda(context, { productMs: 2_000, fallbackReserveMs: 500 });
      near(product.remaining(), 1_500, 50);
      equal(product.limit, "budget");
      for (const spent of [0, -20, 300]) {
        left = spent;
        const late = lib.Deadline.forLambda(context, { fallbackReserveMs: 500 });
        ok(late.expired(), `${spent} ms left`);
        late.dispose();
      }
      d.dispose();
      product.dispose();
    },
  },
  {
    name: "Workers clock: the real host clock across a CPU busy loop and across I/O; remaining() follows it exactly",
    needs: ["fixtureUrl"],
    run: async (lib, ctx) => {
      // Production Workers freeze Date.now()/performance.now() while JavaScript
      // runs (they move only across I/O). The workerd here (1.20261117.1) does
      // not: its WorkerTimerChannel reads the precise calendar clock, so time
      // advances during CPU work. Either way remaining() must be exactly
      // `at − performance.now()`: the package keeps no clock of its own.
      const d = lib.Deadline.in(10_000);
      await fetch(`${ctx.fixtureUrl}/ping`).then((r) => r.text());
      const t0 = performance.now();
      const r0 = d.remaining();
      let t1 = t0;
      for (let i = 0; i < 200 && t1 - t0 < 30; i++) spin(1_000_000), (t1 = performance.now());
      const r1 = d.remaining();
      const t1b = performance.now();
      ok(r1 <= d.at - t1 && r1 >= d.at - t1b, "remaining() is not at − performance.now()");
      if (t1 === t0) {
        // Frozen (production Workers): no progress during the loop, progress after I/O.
        equal(r1, r0, "remaining() moved while the clock did not");
        await fetch(`${ctx.fixtureUrl}/ping`).then((r) => r.text());
        ok(performance.now() > t0 && d.remaining() < r0, "time did not advance across I/O");
      } else {
        ok(t1 - t0 >= 30 && r1 <= r0 - 30, `the busy loop advanced the clock ${t1 - t0} ms and remaining() ${r0 - r1} ms`);
      }
      d.dispose();
    },
  },
  {
    name: "Workers clock, modelled: with time frozen during CPU work, a busy loop leaves remaining() unchanged and a plan step's cap cannot interrupt it",
    needs: ["fixtureUrl"],
    run: async (lib, ctx) => {
      // The production Workers clock, modelled in any runtime: performance.now()
      // returns the time of the last I/O. This shows what it means for the
      // package: remaining() does not fall during CPU work, so CPU-heavy steps
      // must be bounded by the CPU cap (platformDeadline().cpuMs), not by the
      // wall-clock deadline.
      const real = performance.now.bind(performance);
      let frozen = real();
      const io = async () => {
        await fetch(`${ctx.fixtureUrl}/ping`).then((r) => r.text());
        frozen = real();
      };
      const own = Object.getOwnPropertyDescriptor(performance, "now");
      Object.defineProperty(performance, "now", { value: () => frozen, configurable: true, writable: true });
      try {
        equal(performance.now(), frozen, "the modelled clock is in place");
        const d = lib.Deadline.in(5_000);
        const r0 = d.remaining();
        spin(3_000_000);
        equal(d.remaining(), r0, "remaining() fell during CPU work under a frozen clock");
        const p = lib.plan(d, [{ name: "cpu", minMs: 1, preferredMs: 20, kind: "optional" }, { name: "respond", minMs: 10, kind: "fallback" }]);
        let budget;
        const result = await p.run("cpu", (signal, budgetMs) => {
          budget = budgetMs;
          spin(3_000_000); // longer than 20 ms of real CPU, yet the clock says 0
          return signal.aborted ? "aborted" : "finished";
        });
        equal(result, "finished", "a synchronous step cannot be interrupted by its cap");
        equal(budget, 20);
        equal(p.records[0].elapsedMs, 0, "the trace shows no time spent: the clock did not move");
        await io();
        ok(d.remaining() < r0, "remaining() did not fall across I/O");
        d.dispose();
      } finally {
        if (own) Object.defineProperty(performance, "now", own);
        else delete performance.now;
      }
      ok(performance.now() >= frozen, "the real clock is back");
    },
  },
  ...badInputs(),
];

/** Bad input: the error class, the message, `.param` as the user wrote it and `.code`. */
function badInputs() {
  return badInputCases([
    ["forPlatform: unknown platform", (lib) => lib.Deadline.forPlatform({ platform: "lambda", productMs: 1_000, fallbackReserveMs: 0 }), RangeError, /'platform' must be one of cloudflare-workers, deno-deploy, vercel-edge, netlify-edge, aws-lambda, node, bun: current value is 'lambda'/, "options.platform", "UNKNOWN_PLATFORM"],
    ["forLambda: a context without getRemainingTimeInMillis", (lib) => lib.Deadline.forLambda({}, { fallbackReserveMs: 0 }), TypeError, /'context.getRemainingTimeInMillis' must be a function/, "context.getRemainingTimeInMillis", "INVALID_TYPE"],
    ["forLambda: a remaining time that is NaN", (lib) => lib.Deadline.forLambda({ getRemainingTimeInMillis: () => Number.NaN }, { fallbackReserveMs: 0 }), RangeError, /getRemainingTimeInMillis\(\)/, "context.getRemainingTimeInMillis()", "NOT_FINITE"],
    ["forLambda: fallbackReserveMs missing", (lib) => lib.Deadline.forLambda({ getRemainingTimeInMillis: () => 1_000 }, {}), TypeError, /'options.fallbackReserveMs' must be a number/, "options.fallbackReserveMs", "INVALID_TYPE"],
    ["forPlatform: unknown plan", (lib) => lib.Deadline.forPlatform({ platform: "cloudflare-workers", plan: "pro", productMs: 1_000, fallbackReserveMs: 0 }), RangeError, /'plan' must be one of free, paid/, "options.plan", "UNKNOWN_PLAN"],
    ["forPlatform: a trigger the platform lacks", (lib) => lib.Deadline.forPlatform({ platform: "vercel-edge", trigger: "cron", productMs: 1_000, fallbackReserveMs: 0 }), RangeError, /'trigger' cron is not an invocation vercel-edge has/, "options.trigger", "UNSUPPORTED_TRIGGER"],
    ["forPlatform: a zero cap", (lib) => lib.Deadline.forPlatform({ platform: "custom", productMs: 1_000, fallbackReserveMs: 0, caps: { wallMs: 0 } }), RangeError, /'wallMs' must be above 0/, "options.caps.wallMs", "ZERO_CAP"],
    ["forPlatform: productMs missing", (lib) => lib.Deadline.forPlatform({ platform: "deno-deploy", fallbackReserveMs: 0 }), TypeError, /'options.productMs' must be a number/, "options.productMs", "INVALID_TYPE"],
  ]);
}

// ---- messages: the core's templates, filled in JS ----------------------------------------------
cases.push({
  name: "platform caps: the core's messages read in full, numbers as JavaScript prints them (Infinity)",
  run: (lib) => {
    const max = Number.MAX_SAFE_INTEGER;
    const base = { productMs: 10, fallbackReserveMs: 0 };
    for (const [options, Type, message] of [
      [{ platform: "custom", caps: { wallMs: Infinity } }, RangeError, `'wallMs' must be a finite number of milliseconds between 0 and ${max}: current value is Infinity`],
      [{ platform: "custom", caps: { wallMs: 0 } }, RangeError, "'wallMs' must be above 0 milliseconds: current value is 0"],
      [{ platform: "vercel-edge", trigger: "cron" }, RangeError, "'trigger' cron is not an invocation vercel-edge has"],
      [{ platform: "vercel-edge", productMs: 1e300 }, RangeError, `'productMs' must be between 0 and ${max} milliseconds (2^53 - 1): current value is 1e+300`],
      [{ platform: "custom", plan: "paid", caps: { wallMs: 5 } }, TypeError, `'plan' applies to built-in platforms, not "custom": pass the caps in 'caps' instead`],
    ]) {
      equal(throws(() => lib.platformDeadline({ ...base, ...options }), Type).message, message);
    }
    // In range, but past the end of the timeline from now: named as given, with the bound that applies.
    const far = throws(() => lib.platformDeadline({ ...base, platform: "deno-deploy", productMs: max }), RangeError);
    equal(`${far.param} ${far.code}`, "options.productMs TOO_LARGE");
    ok(/^'productMs' must be at most \d+ milliseconds from now \(the timeline ends at 9007199254740991 ms, 2\^53 - 1\): current value is 9007199254740991$/.test(far.message), far.message);
  },
});

export default cases;
