// simulate: per-attempt timeouts with retries on a lognormal body plus a
// uniform slow tail (src/core/simulate.rs, bound in src/wasm/simulate.rs).
// The scenario, the policies and the result cross as objects whose types
// are generated from the Rust ones; the defaults (n 200 000, seed 1,
// retries 0) and every range check are the core's. This file checks JS types.

import * as core from "./edge_deadline_derive.js";
import { isReady, notReady } from "./derive-load.js";
import { number, obj, optNumber, typeError } from "./validate.js";

/**
 * Simulates per-attempt timeouts with retries. Every policy sees the same calls.
 * @param {{ body: { medianMs: number, sigma: number }, tail?: { share: number, loMs: number, hiMs: number }, n?: number, seed?: number }} scenario
 * @param {{ timeoutMs: number | string, retries?: number }[]} [policies]
 */
export function simulate(scenario, policies = []) {
  if (!isReady()) notReady("simulate");
  const s = obj("scenario", scenario, "an object like { body: { medianMs, sigma }, tail: { share, loMs, hiMs }, n, seed }");
  const b = obj("scenario.body", s.body, "an object like { medianMs, sigma }");
  const body = {
    medianMs: number("scenario.body.medianMs", b.medianMs, "a number of milliseconds"),
    sigma: number("scenario.body.sigma", b.sigma, "a number between 0 and 4"),
  };
  let tail;
  if (s.tail !== undefined) {
    const t = obj("scenario.tail", s.tail, "an object like { share, loMs, hiMs }");
    tail = {
      share: number("scenario.tail.share", t.share, "a number between 0 and 1"),
      loMs: number("scenario.tail.loMs", t.loMs, "a number of milliseconds"),
      hiMs: number("scenario.tail.hiMs", t.hiMs, "a number of milliseconds"),
    };
  }
  const n = optNumber("scenario.n", s.n, "a whole number of calls");
  const seed = optNumber("scenario.seed", s.seed, "a whole number");
  if (!Array.isArray(policies)) throw typeError("policies", "an array of { timeoutMs, retries }", policies);
  const specs = policies.map((p, i) => {
    obj(`policies[${i}]`, p, "an object like { timeoutMs, retries }");
    const retries = optNumber(`policies[${i}].retries`, p.retries, "a whole number");
    // A string names a percentile of the scenario ("p99", "2xp99"): the core reads it.
    if (typeof p.timeoutMs === "string") return { timeoutMs: NaN, timeoutName: p.timeoutMs, retries };
    return { timeoutMs: number(`policies[${i}].timeoutMs`, p.timeoutMs, 'a number of milliseconds or a percentile of the scenario ("p99", "2xp99")'), retries };
  });
  return core.simulate({ body, tail, n, seed }, specs);
}
