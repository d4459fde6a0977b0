// simulate cases: the same file runs in Node, Deno, workerd and Chromium.
import { equal, near, ok, throwsArg } from "../assert.js";
import { SEED_003 } from "../latency-data.js";

const cases = [
  {
    name: "simulate: simulate reproduces the seed 003 table (200 000 calls)",
    run: (lib) => {
      const started = performance.now();
      const own = lib.simulate(SEED_003).scenario;
      near(own.p50Ms, 40, 0.5, "p50");
      near(own.p90Ms, 63, 1, "p90");
      near(own.p99Ms, 98, 1.5, "p99");
      near(own.p999Ms, 1262, 45, "p99.9");
      const [atP99, at2xP99, atP999] = lib.simulate(SEED_003, [{ timeoutMs: 98 }, { timeoutMs: 196 }, { timeoutMs: 1262 }]).policies;
      near(atP99.failureRate, 0.01, 0.0008, "false timeouts at p99");
      near(at2xP99.failureRate, 0.005, 0.0004, "false timeouts at 2 × p99: the slow tail");
      near(atP999.failureRate, 0.001, 0.0002, "false timeouts at p99.9");
      const [retry, wait] = lib.simulate(SEED_003, [
        { timeoutMs: own.p99Ms, retries: 1 },
        { timeoutMs: own.p999Ms, retries: 0 },
      ]).policies;
      near(retry.p99Ms, 97, 2, "retry: e2e p99");
      near(retry.p999Ms, 160, 6, "retry: e2e p99.9");
      near(retry.failureRate, 0.00007, 0.0001, "retry: failures");
      near(retry.extraLoad, 0.01, 0.0005, "retry: extra load");
      near(wait.p99Ms, 98, 1.5, "wait: e2e p99");
      near(wait.failureRate, 0.00095, 0.0002, "wait: failures");
      // The seed's 1 188 ms is not reproducible (src/core/simulate.rs): failed
      // calls count at the timeout, so p99.9 sits just below it.
      ok(wait.p999Ms > 1188 && wait.p999Ms <= own.p999Ms, `wait p99.9 ${wait.p999Ms}`);
      ok(wait.p999Ms > 7 * retry.p999Ms, "retrying beats waiting at p99.9");
      const again = lib.simulate(SEED_003, [{ timeoutMs: own.p99Ms, retries: 1 }]).policies[0];
      equal(JSON.stringify(again), JSON.stringify(retry), "deterministic per seed");
      ok(performance.now() - started < 20_000, "fast enough for every runtime");
    },
  },  {
    name: "simulate: bad scenarios and policies are TypeErrors or RangeErrors with .param and .code; defaults are the core's",
    run: (lib) => {
      throwsArg(() => lib.simulate({ body: { medianMs: 0, sigma: 0.3 } }), RangeError, "scenario.body.medianMs", "OUT_OF_RANGE", /^'medianMs' must be greater than 0/);
      throwsArg(() => lib.simulate({ ...SEED_003, body: { medianMs: 40, sigma: 5 } }), RangeError, "scenario.body.sigma", "OUT_OF_RANGE", /^'sigma' must be between 0 and 4/);
      throwsArg(() => lib.simulate({ ...SEED_003, tail: { share: 0.1, loMs: 50, hiMs: 10 } }), RangeError, "scenario.tail.loMs", "TAIL_ORDER", /must not exceed/);
      throwsArg(() => lib.simulate({ ...SEED_003, n: 1.5 }), RangeError, "scenario.n", "NOT_WHOLE", /^'n' must be a whole number between 1 and 2000000: current value is 1.5$/);
      throwsArg(() => lib.simulate(SEED_003, [{ timeoutMs: 10, retries: 11 }]), RangeError, "policies[0].retries", "OUT_OF_RANGE", /^policy 0: 'retries' must be a whole number between 0 and 10/);
      throwsArg(() => lib.simulate(SEED_003, [{ timeoutMs: -1 }]), RangeError, "policies[0].timeoutMs", "NEGATIVE", /^policy 0: 'timeoutMs'/);
      throwsArg(() => lib.simulate(SEED_003, [{ retries: 1 }]), TypeError, "policies[0].timeoutMs", "INVALID_TYPE", /'policies\[0\]\.timeoutMs' must be a number of milliseconds or a percentile/);
      throwsArg(() => lib.simulate(SEED_003, [{ timeoutMs: 10 }, { timeoutMs: "p98" }]), RangeError, "policies[1].timeoutMs", "UNKNOWN_TIMEOUT", /^policy 1: 'timeoutMs' must be milliseconds or one of p50, p90, p99, p99.9, optionally multiplied \(2xp99\): current value is "p98"$/);
      throwsArg(() => lib.simulate({ body: { medianMs: 40 } }), TypeError, "scenario.body.sigma", "INVALID_TYPE", /'scenario.body.sigma' must be a number/);
      throwsArg(() => lib.simulate(), TypeError, "scenario", "INVALID_TYPE", /'scenario' must be an object/);
      const small = { body: { medianMs: 40, sigma: 0.3 }, n: 1_000 };
      const [p] = lib.simulate(small, [{ timeoutMs: 60 }]).policies;
      equal(p.retries, 0, "retries default to 0");
      equal(JSON.stringify(lib.simulate(small, [{ timeoutMs: 60 }])), JSON.stringify(lib.simulate({ ...small, seed: 1 }, [{ timeoutMs: 60, retries: 0 }])), "seed defaults to 1");
    },
  },
  {
    name: "simulate: a timeout may be a percentile of the scenario, as the CLI's --policy p99:1",
    run: (lib) => {
      const small = { body: { medianMs: 40, sigma: 0.3 }, tail: { share: 0.01, loMs: 300, hiMs: 1_500 }, n: 5_000 };
      const sim = lib.simulate(small, [{ timeoutMs: "p99", retries: 1 }, { timeoutMs: "2xp99" }, { timeoutMs: "1.5*p99.9" }, { timeoutMs: "p50" }, { timeoutMs: "250" }]);
      const { p50Ms, p99Ms, p999Ms } = sim.scenario;
      equal(JSON.stringify(sim.policies.map((p) => p.timeoutMs)), JSON.stringify([p99Ms, 2 * p99Ms, 1.5 * p999Ms, p50Ms, 250]));
      const byNumber = lib.simulate(small, [{ timeoutMs: p99Ms, retries: 1 }]).policies[0];
      equal(JSON.stringify(sim.policies[0]), JSON.stringify(byNumber), "the same as the number it names");
    },
  },
];

export default cases;
